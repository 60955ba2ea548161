//! The write path every command shares: a pure decision from the match as cached, one append
//! with the expected version, and the retry of a race lost to another writer.
//!
//! A command ([`Command`]: a creation, an act, a join, a leave) decides from the cached match
//! what to append ([`Decision`]); a creation decides from the match before its first event.
//! [`Service::write`] appends it; a stale cache makes the append fail its version check, and
//! the command decides again from a fresh read. A refusal decided from
//! the cache is only returned once a fresh read confirms it. The committed event is folded
//! into the cache as the decision computed it (see [`Applied`]), then the command answers.

use super::*;

/// What a command decided from the match as it stands.
pub(super) enum Decision<P> {
    /// Append this; `P` is what the answer is made from once it is committed.
    Append(Box<Write>, P),
    /// The match already holds this request, as its event at this seq: answer it again.
    Again(u64, P),
    /// Decide again from a fresh read: what the command would do needs a current match.
    Recheck,
}

/// One event to append, and the changes to the match that come with it.
pub(super) struct Write {
    pub(super) event: Event,
    pub(super) request_id: Option<String>,
    pub(super) at: DateTime<Utc>,
    pub(super) update: MatchUpdate,
    /// The table after the event, if the decision computed it (an action, a deal).
    pub(super) applied: Option<Applied>,
    /// The event ends the match: its seed is read before the append, so the answer and every
    /// watcher can show it without reading it again.
    pub(super) ends: bool,
    /// A seat whose webhook, a previous holder's, is removed before the append (decided from
    /// a fresh read only).
    pub(super) remove_webhook: Option<u8>,
    /// The match the event creates, written with it (`update` becomes its start).
    pub(super) creates: Option<Box<NewMatch>>,
}

impl Write {
    /// `event`, appended under `request_id` at `at` with the match changes `update`, and
    /// nothing else: the rules apply it when it is folded.
    pub(super) fn of(
        event: Event,
        request_id: Option<String>,
        at: DateTime<Utc>,
        update: MatchUpdate,
    ) -> Write {
        Write {
            event,
            request_id,
            at,
            update,
            applied: None,
            ends: false,
            remove_webhook: None,
            creates: None,
        }
    }
}

/// What the store wrote for a decision.
struct Stored {
    appended: Appended,
    /// Pending turns were written, which the turn worker is woken for.
    wrote_turns: bool,
    /// The row of the match the write created.
    created: Option<MatchRecord>,
}

/// A request that appends one event to a match.
pub(super) trait Command {
    /// What the answer is made from, besides the match.
    type Plan;
    type Answer;

    /// Whether to decide from a fresh read from the start instead of trusting the cache.
    const FRESH: bool = false;

    /// For a command that creates its match: the match before its first event, which it
    /// decides from unless this server holds the match already (a retry).
    fn blank(&self, at: DateTime<Utc>) -> ApiResult<Option<Live>> {
        let _ = at;
        Ok(None)
    }

    /// The decision from `live`, at time `at`. Pure: reads nothing and writes nothing. `fresh`
    /// says whether `live` is known to be current; an `Err` from a match that is not is
    /// decided again from a fresh read before it is returned.
    fn decide(
        &self,
        live: &Live,
        fresh: bool,
        at: DateTime<Utc>,
    ) -> ApiResult<Decision<Self::Plan>>;

    /// The answer once the write is committed and folded into `live`.
    fn answer(
        &self,
        service: &Service,
        live: &mut Live,
        plan: Self::Plan,
    ) -> impl Future<Output = ApiResult<Self::Answer>> + Send;

    /// The answer to the request the match holds as its event at `seq`.
    fn again(
        &self,
        service: &Service,
        live: &Live,
        seq: u64,
        plan: Self::Plan,
    ) -> impl Future<Output = ApiResult<Self::Answer>> + Send;

    /// The error for an append that lost the race to version `actual`, if the command does
    /// not simply decide again.
    fn lost_race(&self, actual: u64) -> Option<ApiError> {
        let _ = actual;
        None
    }
}

impl Service {
    /// Runs `command` against match `id`: decide, append, fold, answer; see the module docs.
    pub(super) async fn write<C: Command + Sync>(
        &self,
        id: MatchId,
        command: &C,
    ) -> ApiResult<C::Answer>
    where
        C::Plan: Send,
    {
        let mut fresh = C::FRESH;
        for _ in 0..APPEND_ATTEMPTS {
            let at = self.settings.clock.now();
            // A match being created is decided from its blank until it is cached.
            let mut blank = None;
            let mut guard = match command.blank(at)? {
                Some(new) => {
                    let guard = self.slot(id).lock_owned().await;
                    if guard.is_none() {
                        blank = Some(new);
                        fresh = true;
                    }
                    guard
                }
                None => self.for_write(id, &mut fresh).await?,
            };
            let live = match blank.as_mut() {
                Some(live) => live,
                None => guard
                    .as_mut()
                    .ok_or_else(|| ApiError::internal("match not loaded"))?,
            };
            let (write, plan) = match command.decide(live, fresh, at) {
                Ok(Decision::Append(write, plan)) => (*write, plan),
                Ok(Decision::Again(seq, plan)) => {
                    let again = command.again(self, live, seq, plan).await;
                    match again {
                        Err(_) if !fresh => fresh = true,
                        again => return again,
                    }
                    continue;
                }
                Ok(Decision::Recheck) | Err(_) if !fresh => {
                    fresh = true;
                    continue;
                }
                Ok(Decision::Recheck) => {
                    return Err(ApiError::internal("a fresh match asked to be read again"));
                }
                Err(e) => return Err(e),
            };
            if let Some(seat) = write.remove_webhook {
                self.store.remove_webhook(id, seat).await?;
            }
            if write.ends && live.seed.is_none() {
                live.seed = Some(self.store.seed(id).await?);
            }
            let Write {
                event,
                request_id,
                at,
                update,
                applied,
                creates,
                ..
            } = write;
            let expected = live.record.version;
            let new = event.to_new(request_id, at);
            match self.store_write(id, expected, new, update, creates).await {
                Ok(Stored { appended, .. }) if appended.duplicate => {
                    // Another server applied this request first: answer as it did. The slot's
                    // lock is released first: `current` takes it again.
                    *guard = None;
                    drop(guard);
                    let guard = self.current(id).await?;
                    let live = guard
                        .as_ref()
                        .ok_or_else(|| ApiError::internal("match not loaded"))?;
                    let seq = appended.events.first().map_or(expected + 1, |e| e.seq);
                    return command.again(self, live, seq, plan).await;
                }
                Ok(Stored {
                    appended,
                    wrote_turns,
                    created,
                }) => {
                    let mut applied = applied;
                    for stored in appended.events {
                        self.after_append(live, stored, &event, applied.take())?;
                    }
                    if let Some(record) = created {
                        // The store's row of the new match, as every later read has it.
                        live.replace_record(record);
                    }
                    if let Some(new) = blank.take() {
                        *guard = Some(new);
                    }
                    let live = guard
                        .as_mut()
                        .ok_or_else(|| ApiError::internal("match not loaded"))?;
                    if wrote_turns {
                        self.turns_written.notify_one();
                    }
                    self.wake_webhooks(appended.webhooks_queued);
                    return command.answer(self, live, plan).await;
                }
                Err(StoreError::Conflict { actual, .. }) => {
                    if let Some(e) = command.lost_race(actual) {
                        return Err(e);
                    }
                    *guard = None;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(ApiError::Unavailable(
            "too much contention on this match".into(),
        ))
    }

    /// Writes one decided event: an append at version `expected`, or the creation of the match
    /// with its first event. A creation this request made before is told as a duplicate.
    async fn store_write(
        &self,
        id: MatchId,
        expected: u64,
        new: NewEvent,
        update: MatchUpdate,
        creates: Option<Box<NewMatch>>,
    ) -> Result<Stored, StoreError> {
        let wrote_turns = update.turns.as_ref().is_some_and(|t| !t.is_empty());
        let Some(creates) = creates else {
            let appended = self.store.append(id, expected, vec![new], update).await?;
            return Ok(Stored {
                appended,
                wrote_turns,
                created: None,
            });
        };
        let creates = NewMatch {
            start: update,
            ..*creates
        };
        let (appended, created) = match self.store.create_match(creates, vec![new]).await {
            Ok((record, events)) => (events, Some(record)),
            Err(StoreError::AlreadyExists(_)) => (Vec::new(), None),
            Err(e) => return Err(e),
        };
        Ok(Stored {
            appended: Appended {
                duplicate: created.is_none(),
                events: appended,
                webhooks_queued: false,
            },
            wrote_turns,
            created,
        })
    }

    /// Folds an event this server appended into the cache, writes a snapshot when one is due
    /// and tells watchers.
    pub(super) fn after_append(
        &self,
        live: &mut Live,
        stored: StoredEvent,
        event: &Event,
        applied: Option<Applied>,
    ) -> ApiResult<()> {
        let before = live.record.version;
        let seq = stored.seq;
        self.fold_and_tell(live, stored, event, applied)?;
        let every = self.store.snapshot_every();
        if every > 0 && before / every != seq / every {
            self.snapshot(live);
        }
        Ok(())
    }

    /// Folds a stored event into the cache and tells watchers of it: every event folded into
    /// a cached match after it was loaded is told, whichever replica appended it. With no
    /// watcher, the fold builds no observation.
    pub(super) fn fold_and_tell(
        &self,
        live: &mut Live,
        stored: StoredEvent,
        event: &Event,
        applied: Option<Applied>,
    ) -> ApiResult<()> {
        if !self.watched(stored.match_id) {
            return live.fold(&stored, event, applied);
        }
        let observations = live.apply(&stored, event, applied)?;
        // A failure to build the info is the watchers' to report, as they build it again.
        let info = live.info().ok().flatten();
        self.notify(Update {
            event: stored,
            typed: event.clone(),
            observations,
            state: live.state().boxed_clone(),
            record: live.record.clone(),
            deadlines: live.deadlines.clone(),
            info,
        });
        Ok(())
    }

    /// Writes a snapshot in the background: it only speeds up later loads, so a failure is
    /// logged and otherwise ignored.
    fn snapshot(&self, live: &Live) {
        let Some(Ok(state)) = live.table.snapshot() else {
            return;
        };
        let snapshot = Snapshot {
            seq: live.record.version,
            rules_version: live.table.version(),
            state,
        };
        let store = self.store.clone();
        let id = live.record.id;
        tokio::spawn(async move {
            if let Err(e) = store.put_snapshot(id, &snapshot).await {
                tracing::warn!(match_id = %id, error = %e, "snapshot not written");
            }
        });
    }
}
