//! WatchMatch: a seat's (or a spectator's) live updates, from this server's appends and
//! the store.

use super::*;

/// A watch's catch-up result, except that a store that cannot be reached now is not an error:
/// the stream stays open (not over), and the next wake-up or tick tries again.
pub(super) fn retry_later(id: MatchId, caught_up: ApiResult<bool>) -> ApiResult<bool> {
    match caught_up {
        Err(ApiError::Unavailable(detail)) => {
            tracing::debug!(match_id = %id, %detail, "watch catch-up failed; will retry");
            Ok(false)
        }
        done => done,
    }
}

/// What a watch stream's channel carries. Boxed: the channel allocates its slots in blocks of
/// 32 whether they are used or not, and an unboxed update (its view inline) made that block
/// most of an idle stream's memory.
pub(crate) type WatchItem = ApiResult<Box<pb::WatchMatchResponse>>;

impl Service {
    /// Every update after `after_version`, in order, as the caller may see it; the stream ends
    /// once the match is over and its last update sent, or, for a seat's token, with the update
    /// in which its holder leaves the seat (another may take it). Updates this server appends are handed
    /// over directly; others are read from the store when [`Service::wake`] or
    /// [`Service::wake_all`] says so, and at the latest on the `watch_recheck` timer. While the
    /// store is unreachable the stream waits rather than fails.
    pub async fn watch(
        self: &Arc<Self>,
        caller: &Caller,
        req: pb::WatchMatchRequest,
    ) -> ApiResult<mpsc::Receiver<WatchItem>> {
        let id = parse_id(&req.match_id)?;
        crate::telemetry::record_match(id);
        let record = self.store.get_match(id).await?;
        let viewer = auth::viewer(&record, caller, req.seat, false)?;
        let game = self.games.get(&record.kind)?.clone();
        // The token held its seat at this version: a later leave of the seat ends the stream.
        let since = record.version;
        // Subscribe before catching up, so nothing falls between the two.
        let mut updates = self.subscribe(id);
        let (tx, rx) = mpsc::channel(64);
        let service = Arc::clone(self);
        let mut stopping = self.stopping.subscribe();
        let period = self.settings.watch_recheck;
        let watcher = crate::metrics::Watcher::open();
        tokio::spawn(async move {
            let _watcher = watcher;
            let mut last = req.after_version;
            let result: ApiResult<()> = async {
                let mut over = service
                    .resync(id, &game, (viewer, since), &mut last, &tx, Some(record))
                    .await?;
                let mut recheck =
                    tokio::time::interval_at(tokio::time::Instant::now() + period, period);
                recheck.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                while !over {
                    let wake = tokio::select! {
                        wake = updates.recv() => wake,
                        _ = recheck.tick() => Ok(Wake::Resync),
                        () = tx.closed() => return Ok(()),
                        _ = stopping.wait_for(|stop| *stop) => {
                            // Not the end of the match: say so, and where to pick up.
                            return Err(ApiError::Draining(format!(
                                "the server is shutting down; watch again with afterVersion={last}"
                            )));
                        }
                    };
                    match wake {
                        Ok(Wake::Update(update)) if update.event.seq <= last => {}
                        Ok(Wake::Moved(version)) if version <= last => {}
                        Ok(Wake::Update(update)) if update.event.seq == last + 1 => {
                            let info = match &update.info {
                                Some(info) => pb::MatchInfo::clone(info),
                                // Boxed like `resync`: inline, it would size every idle stream.
                                None => {
                                    Box::pin(service.info(&update.record, game.as_ref())).await?
                                }
                            };
                            let message = Box::new(pb::WatchMatchResponse {
                                version: update.event.seq,
                                entries: Self::entries(
                                    game.as_ref(),
                                    &Replayed {
                                        event: &update.event,
                                        typed: &update.typed,
                                        observations: &update.observations,
                                        state: update.state.as_ref(),
                                        record: &update.record,
                                        deadlines: &update.deadlines,
                                    },
                                    viewer,
                                )?,
                                view: Some(Self::view(
                                    info,
                                    &update.record,
                                    update.state.as_ref(),
                                    &update.deadlines,
                                    viewer,
                                )),
                            });
                            if tx.send(Ok(message)).await.is_err()
                                || vacates(viewer, since, update.event.seq, &update.typed)
                            {
                                return Ok(());
                            }
                            last = update.event.seq;
                            over = is_over(update.record.status);
                        }
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {
                            // Events this stream was not handed: read them from the store.
                            over = service
                                .resync(id, &game, (viewer, since), &mut last, &tx, None)
                                .await?;
                            recheck.reset();
                        }
                        Err(broadcast::error::RecvError::Closed) => return Ok(()),
                    }
                }
                Ok(())
            }
            .await;
            if let Err(e) = result {
                let _ = tx.send(Err(e)).await;
            }
        });
        Ok(rx)
    }

    /// [`Service::catch_up`] under [`retry_later`], boxed: it runs at a stream's start and after
    /// a missed update, and inline its future would size the task every idle stream keeps.
    fn resync<'a>(
        &'a self,
        id: MatchId,
        game: &'a Arc<dyn GameKind>,
        seat: (Viewer, u64),
        last: &'a mut u64,
        tx: &'a mpsc::Sender<WatchItem>,
        read: Option<MatchRecord>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ApiResult<bool>> + Send + 'a>> {
        Box::pin(
            async move { retry_later(id, self.catch_up(id, game, seat, last, tx, read).await) },
        )
    }

    /// Sends every update after `last` from the store; returns whether the stream is done: the
    /// match is over, or the watching seat was left after version `since` (see [`vacates`]).
    /// `read` is the match as just read from the store, if it was.
    pub(super) async fn catch_up(
        &self,
        id: MatchId,
        game: &Arc<dyn GameKind>,
        (viewer, since): (Viewer, u64),
        last: &mut u64,
        tx: &mpsc::Sender<WatchItem>,
        read: Option<MatchRecord>,
    ) -> ApiResult<bool> {
        let record = match read {
            Some(record) => record,
            None => self.store.get_match(id).await?,
        };
        if record.version <= *last {
            return Ok(is_over(record.status));
        }
        let mut pending = Vec::new();
        self.replay(&record, game, *last, |step| {
            pending.push((
                step.event.seq,
                Self::entries(game.as_ref(), &step, viewer)?,
                step.record.clone(),
                step.state.boxed_clone(),
                step.deadlines.to_vec(),
                vacates(viewer, since, step.event.seq, step.typed),
            ));
            Ok(())
        })
        .await?;
        let mut over = false;
        for (seq, entries, past, state, deadlines, vacated) in pending {
            let info = self.info(&past, game.as_ref()).await?;
            let view = Self::view(info, &past, state.as_ref(), &deadlines, viewer);
            if tx
                .send(Ok(Box::new(pb::WatchMatchResponse {
                    version: seq,
                    entries,
                    view: Some(view),
                })))
                .await
                .is_err()
            {
                return Ok(true);
            }
            *last = seq;
            over = is_over(past.status);
            if vacated {
                return Ok(true);
            }
        }
        Ok(over)
    }
}
