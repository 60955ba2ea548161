//! The projection of a match's log: the cached match ([`Live`]), the one fold of a stored
//! event into its state, its match row and its deadlines, and the pending turns an append
//! writes (the same deadline rule, from the state after the event).

use super::*;

/// A match in memory, at `record.version`.
#[derive(Debug)]
pub(super) struct Live {
    /// The match row. Replaced through [`Live::replace_record`], which forgets the info built
    /// from the one before (a fold moves the version on, and a kept info of another version
    /// is never served).
    pub(super) record: MatchRecord,
    /// The rules state (see `table.rs`).
    pub(super) table: Table,
    /// Every request id the match holds, with the seq of its (first) event.
    pub(super) request_ids: HashMap<String, u64>,
    /// False when loaded from a snapshot: the events before it were not folded here.
    pub(super) whole_log: bool,
    /// The version the match was loaded at: every event folded into it since was told to
    /// watchers, so a watcher at this version or later needs no read of its own.
    pub(super) told_from: u64,
    /// The awaited human seats' deadlines (see [`advance`]).
    pub(super) deadlines: Deadlines,
    /// The seed, when this server created the match or replayed its whole log, or once read
    /// to be revealed; shown only when the match is over.
    pub(super) seed: Option<[u8; 32]>,
    /// Seats a player left (so a webhook of theirs may remain), among the events folded here.
    pub(super) vacated: Vec<u8>,
    /// The match's info, once built, with the version it was built at: an act's answer and
    /// every watcher's update of the version it made share it (see [`Live::info`]).
    info: Mutex<Option<Arc<pb::MatchInfo>>>,
}

/// The table after an event, computed by the command that wrote it (an action the rules
/// validated before the append, a join that deals), with what the event told whom: folded as
/// it is, so nothing is applied twice.
#[derive(Debug)]
pub(super) struct Applied {
    pub(super) table: Table,
    pub(super) observations: Observations,
}

impl Live {
    pub(super) fn new(
        record: MatchRecord,
        table: Table,
        whole_log: bool,
        request_ids: HashMap<String, u64>,
    ) -> Live {
        Live {
            told_from: record.version,
            record,
            table,
            request_ids,
            whole_log,
            deadlines: Vec::new(),
            seed: None,
            vacated: Vec::new(),
            info: Mutex::default(),
        }
    }

    /// The match row as the store has it now, at this version or a later one the events
    /// folded here reached.
    pub(super) fn replace_record(&mut self, record: MatchRecord) {
        self.record = record;
        *self.info.get_mut().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// The match's info at this version, built the first time it is asked for and shared
    /// after that; `None` when it cannot be built without a read: a match that is over, whose
    /// seed (which its info reveals) this server does not hold.
    pub(super) fn info(&self) -> ApiResult<Option<Arc<pb::MatchInfo>>> {
        let mut kept = self.info.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(info) = kept.as_ref().filter(|i| i.version == self.record.version) {
            return Ok(Some(Arc::clone(info)));
        }
        if is_over(self.record.status) && self.seed.is_none() {
            return Ok(None);
        }
        let info = Arc::new(Service::info_of(&self.record, self.game(), self.seed)?);
        *kept = Some(Arc::clone(&info));
        Ok(Some(info))
    }

    pub(super) fn game(&self) -> &dyn GameKind {
        self.table.game().as_ref()
    }

    pub(super) fn state(&self) -> &dyn MatchState {
        self.table.state()
    }

    /// The one fold of a stored event (`typed` is its [`Event`]) into the projection: the
    /// table, the match row, the deadlines and the request ids. `applied` is the table after
    /// it when the writer already computed it. Returns what the event told whom.
    pub(super) fn apply(
        &mut self,
        event: &StoredEvent,
        typed: &Event,
        applied: Option<Applied>,
    ) -> ApiResult<Observations> {
        let observations = match applied {
            Some(applied) => {
                self.table = applied.table;
                applied.observations
            }
            None => self.table.apply(event.seq, typed)?,
        };
        self.moved_on(event, typed);
        Ok(observations)
    }

    /// [`Live::apply`] when nobody needs to know what the event told whom (a load, a fold no
    /// watcher waits for): the rules' replay, which builds no observation.
    pub(super) fn fold(
        &mut self,
        event: &StoredEvent,
        typed: &Event,
        applied: Option<Applied>,
    ) -> ApiResult<()> {
        match applied {
            Some(applied) => self.table = applied.table,
            None => self.table.fold(event.seq, typed)?,
        }
        self.moved_on(event, typed);
        Ok(())
    }

    /// Everything but the table, past `event`.
    fn moved_on(&mut self, event: &StoredEvent, typed: &Event) {
        self.note(event, typed);
        advance(
            &mut self.record,
            &mut self.deadlines,
            typed,
            event.seq,
            event.at,
            self.table.state(),
        );
    }

    /// What the cache keeps of each event besides the state: its request id, and a seat a
    /// player left.
    fn note(&mut self, event: &StoredEvent, typed: &Event) {
        if let Some(request_id) = &event.request_id {
            self.request_ids
                .entry(request_id.clone())
                .or_insert(event.seq);
        }
        if let Event::Left { seat } = *typed
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

    /// What `event`, appended next at `at` and leaving the table in `state`, makes of this
    /// match: its status and its pending turns, decided by [`advance`] as the fold will
    /// decide them once the event is stored.
    pub(super) fn after(&self, event: &Event, state: &dyn MatchState, at: DateTime<Utc>) -> Next {
        let mut record = self.record.clone();
        let mut deadlines = self.deadlines.clone();
        advance(
            &mut record,
            &mut deadlines,
            event,
            self.record.version + 1,
            at,
            state,
        );
        Next {
            status: (record.status != self.record.status).then_some(record.status),
            turns: pending_turns(&record, &deadlines, state, at),
        }
    }
}

/// `(seat, due at)` for each awaited human seat of an active match with a turn timeout.
pub type Deadlines = Vec<(u8, DateTime<Utc>)>;

/// A match after an event a command is about to append (see [`Live::after`]).
#[derive(Debug)]
pub(super) struct Next {
    /// The new status, if the event changes it.
    pub(super) status: Option<MatchStatus>,
    /// The pending turns the append writes (see [`pending_turns`]).
    pub(super) turns: Option<Vec<PendingTurn>>,
}

impl Next {
    /// The changes to the match row that go with the event: the status and turns decided
    /// here, with the command's own `seats` (their credentials are not in the event) and
    /// `notify`.
    pub(super) fn update(self, seats: Vec<SeatRecord>, notify: Vec<Notification>) -> MatchUpdate {
        MatchUpdate {
            status: self.status,
            seats,
            turns: self.turns,
            notify,
        }
    }
}

/// The one decision of what an event makes of a match, the same when a command decides an
/// append, when a stored event is folded and when a log is replayed: `record` and
/// `deadlines` move on past `event` (its `seq`, made at `at`, leaving the table in `state`).
///
/// - Seats: a join fills its seat, a creation its bot seats, a leave frees its seat while
///   the match is open.
/// - Status: active once every seat is held, finished once the game has an outcome,
///   abandoned by a leave after the start or by a close.
/// - Deadlines: in an active match with a turn timeout, each awaited human seat keeps its
///   deadline if it was awaited before the event and did not act in it, and is otherwise due
///   `at` plus the timeout.
pub(super) fn advance(
    record: &mut MatchRecord,
    deadlines: &mut Deadlines,
    event: &Event,
    seq: u64,
    at: DateTime<Utc>,
    state: &dyn MatchState,
) {
    match event {
        Event::Joined { seat, player, .. } => {
            if let Some(s) = record.seats.get_mut(usize::from(*seat)) {
                s.player = Some(player.clone());
            }
            if record.seats.iter().all(|s| s.player.is_some()) {
                record.status = MatchStatus::Active;
            }
        }
        Event::Left { seat } => {
            if record.status == MatchStatus::Open {
                if let Some(s) = record.seats.get_mut(usize::from(*seat)) {
                    s.player = None;
                    s.token_hash = None;
                    s.account = None;
                }
            } else {
                record.status = MatchStatus::Abandoned;
            }
        }
        Event::Created(creation) => {
            for bot in &creation.bots {
                if let Some(s) = record.seats.get_mut(usize::from(bot.seat)) {
                    s.player = Some(bots::player_name(&bot.strategy));
                    s.bot = Some(bot.strategy.clone());
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
        // An open match cancelled or expired: over before it started.
        Event::Closed { .. } => record.status = MatchStatus::Abandoned,
    }
    record.version = seq;
    record.updated_at = at;
    let timeout = match record.turn_timeout_secs {
        Some(secs) if record.status == MatchStatus::Active => {
            chrono::Duration::seconds(i64::from(secs))
        }
        _ => {
            deadlines.clear();
            return;
        }
    };
    let acted = match event {
        Event::Action { seat, .. } | Event::Timeout { seat, .. } => Some(*seat),
        _ => None,
    };
    let before = std::mem::take(deadlines);
    *deadlines = state
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
            (seat, kept.unwrap_or(at + timeout))
        })
        .collect();
}

/// The pending turns of a match with this row and these deadlines (as [`advance`] left
/// them), its table in `state`, after an event at `at`: every awaited seat played by a bot,
/// due at once, and every human seat's deadline, reminded `turn_reminder_secs` earlier when
/// the match sets reminders. `None` for a match with neither deadlines nor bots, whose appends
/// then write no turns.
pub(super) fn pending_turns(
    record: &MatchRecord,
    deadlines: &Deadlines,
    state: &dyn MatchState,
    at: DateTime<Utc>,
) -> Option<Vec<PendingTurn>> {
    if record.turn_timeout_secs.is_none() && record.seats.iter().all(|s| s.bot.is_none()) {
        return None;
    }
    if record.status != MatchStatus::Active {
        return Some(Vec::new());
    }
    let reminder = record
        .turn_reminder_secs
        .map(|secs| chrono::Duration::seconds(i64::from(secs)));
    Some(
        state
            .awaiting()
            .iter()
            .filter_map(|seat| {
                let bot = record.seats.get(usize::from(seat))?.bot.clone();
                let (due_at, remind_at) = match &bot {
                    Some(_) => (at, None),
                    None => {
                        let (_, due) = deadlines.iter().find(|(s, _)| *s == seat)?;
                        (*due, reminder.map(|early| *due - early))
                    }
                };
                Some(PendingTurn {
                    seat,
                    due_at,
                    remind_at,
                    bot,
                })
            })
            .collect(),
    )
}

/// Whether `event` frees the watching seat after the watch was authorised at version `since`:
/// its holder left, and the seat may pass to someone else, so the stream ends with it.
pub(super) fn vacates(viewer: Viewer, since: u64, seq: u64, event: &Event) -> bool {
    matches!((viewer, event), (Viewer::Seat(seat), Event::Left { seat: left })
        if seq > since && *left == seat)
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
    /// The newest usable snapshot plus the events after it, or the whole log from setup.
    pub(super) async fn load(&self, id: MatchId) -> ApiResult<Live> {
        let record = self.store.get_match(id).await?;
        let game = self.games.get(&record.kind)?.clone();
        // The match is played under the rules it was created with, from a snapshot taken
        // under them if there is one.
        let version = record.rules_version;
        let loaded = self.store.load(id, version).await?;
        let seats = loaded.record.seat_count;
        let (table, seed) = match loaded.snapshot {
            Some(snapshot) if snapshot.rules_version == version => {
                (Table::restored(game, seats, version, snapshot.state)?, None)
            }
            _ => {
                let seed = self.store.seed(id).await?;
                let created = loaded.events.first();
                (
                    Table::of_match(game, &loaded.record, created, seed)?,
                    Some(seed),
                )
            }
        };
        let whole_log = seed.is_some();
        // The request ids of the events before the snapshot, then those after it.
        let requests = loaded.requests.into_iter().collect();
        let mut live = Live::new(loaded.record.clone(), table, whole_log, requests);
        live.seed = seed;
        for event in &loaded.events {
            live.fold(event, &Event::of(event)?, None)?;
        }
        // The store's row is authoritative for seats and status, its turns for deadlines (the
        // events that started them may be older than the snapshot).
        live.replace_record(loaded.record);
        live.told_from = live.record.version;
        live.deadlines = Vec::new();
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
