//! The projection of a match's log: the cached match ([`Live`]), the one fold of a stored
//! event into its state, its match row and its deadlines, and the pending turns an append
//! writes (the same deadline rule, from the state after the event).

use super::*;

/// A match in memory, at `record.version`.
#[derive(Debug)]
pub(super) struct Live {
    pub(super) record: MatchRecord,
    pub(super) game: Arc<dyn GameKind>,
    pub(super) state: Box<dyn MatchState>,
    /// Every request id the match holds, with the seq of its (first) event.
    pub(super) request_ids: HashMap<String, u64>,
    /// False when loaded from a snapshot: the events before it were not folded here.
    pub(super) whole_log: bool,
    /// The awaited human seats' deadlines (see [`next_deadlines`]).
    pub(super) deadlines: Deadlines,
    /// The seed, once read to be revealed (the match is over).
    pub(super) seed: Option<[u8; 32]>,
    /// Seats a player left (so a webhook of theirs may remain), among the events folded here.
    pub(super) vacated: Vec<u8>,
    /// Until a match dealt at its start starts: what its deal will be made from.
    pub(super) undealt: Option<Undealt>,
}

/// What a match dealt at its start will be dealt from, until it starts: the committed seed and
/// the nonce of each seat's holder (see `deal.rs`). Its state is [`NotDealt`] meanwhile.
#[derive(Debug, Clone)]
pub(super) struct Undealt {
    pub(super) seed: [u8; 32],
    pub(super) holders: deal::Holders,
}

impl Undealt {
    pub(super) fn new(seed: [u8; 32], seats: u8) -> Self {
        Undealt {
            seed,
            holders: deal::Holders::new(seats),
        }
    }

    /// The dealt state, once every seat is held.
    pub(super) fn deal(
        &self,
        game: &dyn GameKind,
        config: &Value,
        seats: u8,
    ) -> ApiResult<Option<Box<dyn MatchState>>> {
        self.holders
            .all()
            .map(|nonces| game.setup(config, seats, deal::seed(&self.seed, &nonces)))
            .transpose()
    }
}

/// Folds one event into a state, returning the observations it produced: the rules apply
/// actions and timeouts, and in a match dealt at its start (`undealt` until then) the event
/// that fills the last seat deals, and what the deal told each seat belongs to that event.
pub(super) fn fold_event(
    game: &dyn GameKind,
    record: &MatchRecord,
    state: &mut Box<dyn MatchState>,
    undealt: &mut Option<Undealt>,
    event: &StoredEvent,
) -> ApiResult<Vec<Observation<pb::GameEvent>>> {
    let Some(pending) = undealt.as_mut() else {
        return fold(state.as_mut(), event);
    };
    pending.holders.note(event.seq, &Event::of(event)?)?;
    match pending.deal(game, &record.config, record.seat_count)? {
        Some(dealt) => {
            *state = dealt;
            *undealt = None;
            Ok(state.setup_observations())
        }
        None => fold(state.as_mut(), event),
    }
}

impl Live {
    /// What the cache keeps of each event besides the state: its request id, and a seat a
    /// player left.
    pub(super) fn note(&mut self, event: &StoredEvent) {
        if let Some(request_id) = &event.request_id {
            self.request_ids
                .entry(request_id.clone())
                .or_insert(event.seq);
        }
        if event.kind == kinds::LEFT
            && let Ok(Event::Left { seat }) = Event::of(event)
            && !self.vacated.contains(&seat)
        {
            self.vacated.push(seat);
        }
    }

    /// Whether `seat` may still have a webhook of a player who left it: a seat left in the
    /// events folded here, or any seat when the log was only folded from a snapshot on.
    pub(super) fn may_have_old_webhook(&self, seat: u8) -> bool {
        !self.whole_log || self.vacated.contains(&seat)
    }
}

/// `(seat, due at)` for each awaited human seat of an active match with a turn timeout.
pub type Deadlines = Vec<(u8, DateTime<Utc>)>;

/// The match row after `event`, computed the same way live and when replaying a log: seats
/// from joins and leaves, and the status each event leads to.
pub(super) fn advance_record(
    record: &mut MatchRecord,
    event: &StoredEvent,
    state: &dyn MatchState,
) -> ApiResult<()> {
    match Event::of(event)? {
        Event::Joined { seat, player, .. } => {
            if let Some(s) = record.seats.get_mut(usize::from(seat)) {
                s.player = Some(player);
            }
            if record.seats.iter().all(|s| s.player.is_some()) {
                record.status = MatchStatus::Active;
            }
        }
        Event::Left { seat } => {
            if record.status == MatchStatus::Open {
                if let Some(s) = record.seats.get_mut(usize::from(seat)) {
                    s.player = None;
                    s.token_hash = None;
                }
            } else {
                record.status = MatchStatus::Abandoned;
            }
        }
        Event::Created(creation) => {
            for bot in creation.bots {
                if let Some(s) = record.seats.get_mut(usize::from(bot.seat)) {
                    s.player = Some(bots::player_name(&bot.strategy));
                    s.bot = Some(bot.strategy);
                }
            }
            if record.seats.iter().all(|s| s.player.is_some()) {
                record.status = MatchStatus::Active;
            }
        }
        Event::Action { .. } | Event::Timeout { .. } if state.outcome().is_some() => {
            record.status = MatchStatus::Finished;
        }
        Event::Action { .. } | Event::Timeout { .. } => {}
    }
    record.version = event.seq;
    record.updated_at = event.at;
    Ok(())
}

/// Applies one stored event to a state, returning the observations it produced.
pub(super) fn fold(
    state: &mut dyn MatchState,
    event: &StoredEvent,
) -> ApiResult<Vec<Observation<pb::GameEvent>>> {
    if event.kind != kinds::ACTION && event.kind != kinds::TIMEOUT {
        return Ok(Vec::new());
    }
    let (Event::Action { seat, action } | Event::Timeout { seat, action }) = Event::of(event)?
    else {
        return Ok(Vec::new());
    };
    state.apply(seat, &action).map_err(|refusal| {
        ApiError::internal(format!(
            "stored event {} refused on replay: {}",
            event.seq, refusal.rule
        ))
    })
}

/// A match's turn clock: how long a seat has to act, and how long before the end its webhook
/// is reminded.
#[derive(Debug, Clone, Copy)]
pub(super) struct Timing {
    pub(super) timeout_secs: Option<u32>,
    pub(super) reminder_secs: Option<u32>,
}

impl Timing {
    pub(super) fn of(record: &MatchRecord) -> Timing {
        Timing {
            timeout_secs: record.turn_timeout_secs,
            reminder_secs: record.turn_reminder_secs,
        }
    }
}

/// The pending turns of a match with these seats and timing once it has `status` and `state`
/// after an event at `at`: every awaited seat played by a bot (due at once) or, when the match
/// has a turn timeout, by a human (due `at` + the timeout, reminded `turn_reminder_secs`
/// earlier). `before` is who was awaited before the event and `actor` the seat that acted in
/// it: a seat awaited before and after that did not act keeps its deadline (and reminder).
/// `None` for a match with neither deadlines nor bots, whose appends then write no turns.
pub(super) fn pending_turns(
    seats: &[SeatRecord],
    timing: Timing,
    status: MatchStatus,
    state: &dyn MatchState,
    before: SeatSet,
    actor: Option<u8>,
    at: DateTime<Utc>,
) -> Option<Vec<PendingTurn>> {
    if timing.timeout_secs.is_none() && seats.iter().all(|s| s.bot.is_none()) {
        return None;
    }
    if status != MatchStatus::Active {
        return Some(Vec::new());
    }
    let secs = |secs: u32| chrono::Duration::seconds(i64::from(secs));
    let timeout = timing.timeout_secs.map(secs);
    let reminder = timing.reminder_secs.map(secs);
    Some(
        state
            .awaiting()
            .iter()
            .filter_map(|seat| {
                let bot = seats.get(usize::from(seat))?.bot.clone();
                let (due_at, remind_at) = match (&bot, timeout) {
                    (Some(_), _) => (at, None),
                    (None, Some(timeout)) => {
                        (at + timeout, reminder.map(|early| at + timeout - early))
                    }
                    (None, None) => return None,
                };
                Some(PendingTurn {
                    seat,
                    due_at,
                    remind_at,
                    bot,
                    continues: before.contains(seat) && actor != Some(seat),
                })
            })
            .collect(),
    )
}

/// The deadlines after `event`, by the rule [`pending_turns`] writes the store's turns with:
/// in an active match with a turn timeout, an awaited human seat that was awaited before the
/// event and did not act in it keeps its deadline; any other gets the event's time plus the
/// timeout. `record` and `state` are as of after the event.
pub(super) fn next_deadlines(
    before: &[(u8, DateTime<Utc>)],
    record: &MatchRecord,
    state: &dyn MatchState,
    event: &StoredEvent,
) -> Deadlines {
    let Some(secs) = record.turn_timeout_secs else {
        return Vec::new();
    };
    if record.status != MatchStatus::Active {
        return Vec::new();
    }
    let acted = match Event::of(event) {
        Ok(Event::Action { seat, .. } | Event::Timeout { seat, .. }) => Some(seat),
        _ => None,
    };
    state
        .awaiting()
        .iter()
        .filter(|&seat| {
            record
                .seats
                .get(usize::from(seat))
                .is_some_and(|s| s.bot.is_none())
        })
        .map(|seat| {
            let kept = before
                .iter()
                .find(|(s, _)| *s == seat && acted != Some(seat))
                .map(|(_, due)| *due);
            (
                seat,
                kept.unwrap_or(event.at + chrono::Duration::seconds(i64::from(secs))),
            )
        })
        .collect()
}

/// Whether `event` frees the watching seat after the watch was authorised at version `since`:
/// its holder left, and the seat may pass to someone else, so the stream ends with it.
pub(super) fn vacates(viewer: Viewer, since: u64, event: &StoredEvent) -> bool {
    matches!(viewer, Viewer::Seat(seat)
        if event.kind == kinds::LEFT && event.seq > since
            && matches!(Event::of(event), Ok(Event::Left { seat: left }) if left == seat))
}

/// Who the game awaited in a match with this status: nobody until it starts.
pub(super) fn awaited(status: MatchStatus, state: &dyn MatchState) -> SeatSet {
    if status == MatchStatus::Active {
        state.awaiting()
    } else {
        SeatSet::EMPTY
    }
}

impl Service {
    pub(super) fn fold_live(
        live: &mut Live,
        event: &StoredEvent,
    ) -> ApiResult<Vec<Observation<pb::GameEvent>>> {
        let observations = fold_event(
            live.game.as_ref(),
            &live.record,
            &mut live.state,
            &mut live.undealt,
            event,
        )?;
        live.note(event);
        advance_record(&mut live.record, event, live.state.as_ref())?;
        live.deadlines = next_deadlines(&live.deadlines, &live.record, live.state.as_ref(), event);
        Ok(observations)
    }

    /// The newest usable snapshot plus the events after it, or the whole log from setup.
    pub(super) async fn load(&self, id: MatchId) -> ApiResult<Live> {
        let record = self.store.get_match(id).await?;
        let game = self.games.get(&record.kind)?.clone();
        let loaded = self.store.load(id, game.rules_version()).await?;
        let (state, whole_log, undealt) = match loaded.snapshot {
            Some(snapshot) if snapshot.rules_version == game.rules_version() => {
                (game.restore(snapshot.state)?, false, None)
            }
            _ => {
                let seed = self.store.seed(id).await?;
                let seats = loaded.record.seat_count;
                if loaded
                    .events
                    .first()
                    .is_some_and(|created| deal::deals_at_start(&created.payload))
                {
                    let undealt = Undealt::new(seed, seats);
                    (
                        Box::new(NotDealt) as Box<dyn MatchState>,
                        true,
                        Some(undealt),
                    )
                } else {
                    (game.setup(&loaded.record.config, seats, seed)?, true, None)
                }
            }
        };
        let mut live = Live {
            record: loaded.record.clone(),
            game,
            state,
            // The request ids of the events before the snapshot, then those after it.
            request_ids: loaded.requests.into_iter().collect(),
            whole_log,
            deadlines: Vec::new(),
            seed: None,
            vacated: Vec::new(),
            undealt,
        };
        for event in &loaded.events {
            let observations = fold_event(
                live.game.as_ref(),
                &live.record,
                &mut live.state,
                &mut live.undealt,
                event,
            )?;
            drop(observations);
            live.note(event);
        }
        // The store's row is authoritative for seats and status, its turns for deadlines (the
        // events that started them may be older than the snapshot).
        live.record = loaded.record;
        if live.record.turn_timeout_secs.is_some() && live.record.status == MatchStatus::Active {
            live.deadlines = self
                .store
                .turns(id)
                .await?
                .into_iter()
                .filter(|t| t.bot.is_none() && t.version == live.record.version)
                .map(|t| (t.seat, t.due_at))
                .collect();
        }
        Ok(live)
    }
}
