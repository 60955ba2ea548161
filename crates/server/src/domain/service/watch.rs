//! WatchMatch: a seat's (or a spectator's) live updates, from this server's appends and
//! the store.
//!
//! A watch is a stream polled by the response that carries it, not a task of its own: an
//! update reaches the connection without a hop through another task and a channel, and a
//! stream whose client went away is simply dropped with its response.

use std::collections::VecDeque;

use futures::Stream;
use tokio::time::{Interval, MissedTickBehavior};

use super::*;

/// A watch's read from the store, except that a store that cannot be reached now is not an
/// error but `None`: the stream stays open, and the next wake-up or tick tries again.
fn retry_later<T>(id: MatchId, result: ApiResult<T>) -> ApiResult<Option<T>> {
    match result {
        Err(ApiError::Unavailable(detail)) => {
            tracing::debug!(match_id = %id, %detail, "watch catch-up failed; will retry");
            Ok(None)
        }
        done => done.map(Some),
    }
}

/// What a watch stream yields.
type WatchItem = ApiResult<pb::WatchMatchResponse>;

impl Service {
    /// Every update after `after_version`, in order, as the caller may see it; the stream ends
    /// once the match is over and its last update sent, or, for a seat's token, with the update
    /// in which its holder leaves the seat (another may take it), or after an error. Updates
    /// this server appends are handed over directly; others are read from the store when
    /// [`Service::wake`] or [`Service::wake_all`] says so, and at the latest on the
    /// `watch_recheck` timer. While the store is unreachable the stream waits rather than fails.
    pub async fn watch(
        self: &Arc<Self>,
        caller: &Caller,
        req: pb::WatchMatchRequest,
    ) -> ApiResult<impl Stream<Item = WatchItem> + Send + 'static + use<>> {
        let id = match_named(&req.match_id)?;
        // Subscribed before the match is read, so that no event falls between the read (the
        // first catch-up starts from it) and the updates handed over after it.
        let updates = self.subscribe(id);
        let opened = async {
            let record = self.store.get_match(id).await?;
            let viewer = auth::viewer(&record, caller, req.seat, false)?;
            let game = self.games.get(&record.kind)?.clone();
            ApiResult::Ok((record, viewer, game))
        };
        let (record, viewer, game) = match opened.await {
            Ok(opened) => opened,
            Err(e) => {
                drop(updates);
                self.unsubscribed(id);
                return Err(e);
            }
        };
        let period = self.settings.watch_recheck;
        let mut recheck = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        recheck.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let watching = Box::new(Watching {
            service: Arc::clone(self),
            id,
            game,
            viewer,
            // The token held its seat at this version: a later leave of the seat ends the stream.
            since: record.version,
            last: req.after_version,
            updates,
            stopping: self.stopping.subscribe(),
            recheck,
            read: Some(record),
            caught: VecDeque::new(),
            ended: false,
            _watcher: crate::metrics::Watcher::open(),
        });
        Ok(futures::stream::unfold(
            watching,
            |mut watching| async move {
                let item = watching.next().await?;
                Some((item, watching))
            },
        ))
    }
}

/// One watch stream's state. Boxed, so the stream moves a pointer from one item to the next.
struct Watching {
    service: Arc<Service>,
    id: MatchId,
    game: Arc<dyn GameKind>,
    viewer: Viewer,
    since: u64,
    /// The version of the last update sent (or the one the watch starts after).
    last: u64,
    updates: broadcast::Receiver<Wake>,
    stopping: tokio::sync::watch::Receiver<bool>,
    recheck: Interval,
    /// The match as read when the watch began, until the first catch-up takes it.
    read: Option<MatchRecord>,
    /// Updates read from the store and not yet sent, oldest first.
    caught: VecDeque<Caught>,
    /// Whether the stream ends once `caught` is sent.
    ended: bool,
    _watcher: crate::metrics::Watcher,
}

/// An update read from the store, its view built only when it is sent.
struct Caught {
    seq: u64,
    entries: Vec<pb::HistoryEntry>,
    record: MatchRecord,
    state: Box<dyn MatchState>,
    deadlines: Vec<(u8, DateTime<Utc>)>,
    vacated: bool,
}

impl Watching {
    /// The stream's next item; `None` once it is done.
    async fn next(&mut self) -> Option<WatchItem> {
        let next = self.advance().await;
        if matches!(next, Some(Err(_))) {
            // An error ends the stream.
            self.ended = true;
            self.caught.clear();
        }
        next
    }

    async fn advance(&mut self) -> Option<WatchItem> {
        loop {
            if let Some(caught) = self.caught.pop_front() {
                match retry_later(self.id, self.fetched(caught).await) {
                    Ok(Some(update)) => return Some(Ok(update)),
                    // The store is out of reach: the rest is read again later.
                    Ok(None) => self.caught.clear(),
                    Err(e) => return Some(Err(e)),
                }
                continue;
            }
            if self.ended {
                return None;
            }
            if let Some(read) = self.read.take() {
                if let Err(e) = self.resync(Some(read)).await {
                    return Some(Err(e));
                }
                continue;
            }
            let wake = tokio::select! {
                wake = self.updates.recv() => wake,
                _ = self.recheck.tick() => Ok(Wake::Resync),
                _ = self.stopping.wait_for(|stop| *stop) => {
                    // Not the end of the match: say so, and where to pick up.
                    return Some(Err(ApiError::Draining(format!(
                        "the server is shutting down; watch again with afterVersion={}",
                        self.last
                    ))));
                }
            };
            match wake {
                Ok(Wake::Update(update)) if update.event.seq <= self.last => {}
                Ok(Wake::Moved(version)) if version <= self.last => {}
                Ok(Wake::Update(update)) if update.event.seq == self.last + 1 => {
                    return Some(self.handed(&update).await);
                }
                Ok(Wake::Moved(_) | Wake::Resync) => {
                    // Another replica's events, or perhaps some: the cached match folds them
                    // from the version it has and tells every watcher, this one included. Only
                    // a watch behind what the cache can tell reads the log itself.
                    match retry_later(self.id, self.service.follow(self.id).await) {
                        Ok(Some(told_from)) if told_from <= self.last => {}
                        Ok(None) => {}
                        Ok(Some(_)) => {
                            if let Err(e) = self.resync(None).await {
                                return Some(Err(e));
                            }
                        }
                        Err(e) => return Some(Err(e)),
                    }
                    self.recheck.reset();
                }
                Ok(Wake::Update(_)) | Err(broadcast::error::RecvError::Lagged(_)) => {
                    // Events this stream was not handed: read them from the store.
                    if let Err(e) = self.resync(None).await {
                        return Some(Err(e));
                    }
                    self.recheck.reset();
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    /// The message for an update this server appended, the next one after `last`.
    async fn handed(&mut self, update: &Update) -> WatchItem {
        let game = self.game.as_ref();
        let info = match &update.info {
            Some(info) => pb::MatchInfo::clone(info),
            // Boxed like `resync`: inline, it would size every idle stream.
            None => Box::pin(self.service.info(&update.record, game)).await?,
        };
        let message = pb::WatchMatchResponse {
            version: update.event.seq,
            entries: Service::entries(
                game,
                &Replayed {
                    event: &update.event,
                    typed: &update.typed,
                    observations: &update.observations,
                    state: update.state.as_ref(),
                    record: &update.record,
                    deadlines: &update.deadlines,
                },
                self.viewer,
            )?,
            view: Some(Service::view(
                info,
                &update.record,
                update.state.as_ref(),
                &update.deadlines,
                self.viewer,
            )),
        };
        self.last = update.event.seq;
        self.ended = is_over(update.record.status)
            || vacates(self.viewer, self.since, update.event.seq, &update.typed);
        Ok(message)
    }

    /// The message for an update read from the store, the next one after `last`.
    async fn fetched(&mut self, caught: Caught) -> WatchItem {
        // Boxed: inline, the match info's future would size every idle stream.
        let info = Box::pin(self.service.info(&caught.record, self.game.as_ref())).await?;
        let view = Service::view(
            info,
            &caught.record,
            caught.state.as_ref(),
            &caught.deadlines,
            self.viewer,
        );
        self.last = caught.seq;
        self.ended = caught.vacated || is_over(caught.record.status);
        if caught.vacated {
            // Nothing after the seat was left is its holder's to see.
            self.caught.clear();
        }
        Ok(pb::WatchMatchResponse {
            version: caught.seq,
            entries: caught.entries,
            view: Some(view),
        })
    }

    /// Reads every update after `last` from the store into `caught`, under [`retry_later`];
    /// boxed: it runs at a stream's start and after a missed update, and inline its future
    /// would size every idle stream. `read` is the match as just read from the store, if it
    /// was.
    fn resync(
        &mut self,
        read: Option<MatchRecord>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ApiResult<()>> + Send + '_>> {
        Box::pin(async move {
            let caught = self.catch_up(read).await;
            if let Some(caught) = retry_later(self.id, caught)? {
                self.caught = caught;
            }
            Ok(())
        })
    }

    /// Every update after `last` from the store, or `ended` set if there is none and the
    /// match is over.
    async fn catch_up(&mut self, read: Option<MatchRecord>) -> ApiResult<VecDeque<Caught>> {
        let record = match read {
            Some(record) => record,
            None => self.service.store.get_match(self.id).await?,
        };
        if record.version <= self.last {
            self.ended = is_over(record.status);
            return Ok(VecDeque::new());
        }
        crate::metrics::record_watch_replay();
        let (game, viewer, since) = (&self.game, self.viewer, self.since);
        let mut caught = VecDeque::new();
        self.service
            .replay(&record, game, self.last, |step| {
                caught.push_back(Caught {
                    seq: step.event.seq,
                    entries: Service::entries(game.as_ref(), &step, viewer)?,
                    record: step.record.clone(),
                    state: step.state.boxed_clone(),
                    deadlines: step.deadlines.to_vec(),
                    vacated: vacates(viewer, since, step.event.seq, step.typed),
                });
                Ok(())
            })
            .await?;
        Ok(caught)
    }
}
