//! A match's game side: the rules state, and the one fold of an event into it.
//!
//! [`Table::apply`] is the only place an event reaches the rules, whoever folds a log: the
//! cache (live and when it catches up), a history's replay, the audit verifier and the tests.
//! An action or a timeout is applied by the rules; in a match dealt at its start (see
//! `deal.rs`) the event that fills the last seat deals, and what the deal told each seat
//! belongs to that event; in an older match, dealt at creation, that first deal belongs to the
//! `created` event.

use std::sync::Arc;

use missive_proto::v1 as pb;
use missive_rules::{Observation, Seat};
use missive_store::{MatchRecord, StoredEvent};
use serde_json::Value;

use crate::deal;
use crate::error::{ApiError, ApiResult, Rule};
use crate::events::Event;
use crate::games::{AnyAction, GameKind, MatchState, NotDealt, Refusal};

/// What a table's events produced: the observations of each, with their audiences.
pub type Observations = Vec<Observation<pb::GameEvent>>;

/// Why an event does not fold.
#[derive(Debug)]
pub enum Replay {
    /// The rules refuse the action.
    Refused(Refusal),
    /// The event (or the config, or a nonce) cannot be read, or the game no longer sets up.
    Unreadable(ApiError),
}

impl From<ApiError> for Replay {
    fn from(e: ApiError) -> Self {
        Replay::Unreadable(e)
    }
}

/// A match's rules state, with what it is dealt from until it is.
#[derive(Debug)]
pub struct Table {
    game: Arc<dyn GameKind>,
    seats: u8,
    /// The rules version the match was created under, which it is played under throughout.
    version: u32,
    state: Box<dyn MatchState>,
    /// Until a match dealt at its start starts: what it is dealt from. The state is
    /// [`NotDealt`] meanwhile.
    undealt: Option<Undealt>,
}

/// The committed seed, each seat holder's nonce, and the game's config (the rules' JSON, as
/// the match row holds it): kept only until the deal, so a dealt table copied for each act
/// copies no JSON.
#[derive(Debug, Clone)]
struct Undealt {
    seed: [u8; 32],
    holders: deal::Holders,
    config: Value,
}

impl Clone for Table {
    fn clone(&self) -> Self {
        Table {
            game: self.game.clone(),
            seats: self.seats,
            version: self.version,
            state: self.state.boxed_clone(),
            undealt: self.undealt.clone(),
        }
    }
}

impl Table {
    /// The table before its `created` event is folded, under rules `version`: dealt from
    /// `seed` at once for a match dealt at creation (older matches), else waiting for its
    /// seats' holders. A version this server does not run is refused: a match is never
    /// replayed under other rules than its own.
    pub fn new(
        game: Arc<dyn GameKind>,
        config: &Value,
        seats: u8,
        seed: [u8; 32],
        (version, deal_at_start): (u32, bool),
    ) -> ApiResult<Table> {
        check_version(game.as_ref(), version)?;
        let (state, undealt) = if deal_at_start {
            let undealt = Undealt {
                seed,
                holders: deal::Holders::new(seats),
                config: config.clone(),
            };
            (Box::new(NotDealt) as Box<dyn MatchState>, Some(undealt))
        } else {
            (game.setup_under(config, seats, seed, version)?, None)
        };
        Ok(Table {
            game,
            seats,
            version,
            state,
            undealt,
        })
    }

    /// The table of the stored match `record` before its first event, `created`, is folded:
    /// [`Table::new`] under the match's own rules, config and seats, dealt as `created` says.
    pub fn of_match(
        game: Arc<dyn GameKind>,
        record: &MatchRecord,
        created: Option<&StoredEvent>,
        seed: [u8; 32],
    ) -> ApiResult<Table> {
        let deal_at_start = created.is_some_and(|created| deal::deals_at_start(&created.payload));
        Table::new(
            game,
            &record.config,
            record.seat_count,
            seed,
            (record.rules_version, deal_at_start),
        )
    }

    /// A table restored from a snapshot of a dealt state taken under rules `version`.
    pub fn restored(
        game: Arc<dyn GameKind>,
        seats: u8,
        version: u32,
        state: Value,
    ) -> ApiResult<Table> {
        check_version(game.as_ref(), version)?;
        let state = game.restore(state)?;
        Ok(Table {
            game,
            seats,
            version,
            state,
            undealt: None,
        })
    }

    /// The rules version the match is played under.
    pub fn version(&self) -> u32 {
        self.version
    }

    pub fn game(&self) -> &Arc<dyn GameKind> {
        &self.game
    }

    pub fn state(&self) -> &dyn MatchState {
        self.state.as_ref()
    }

    /// Whether the match is dealt (it may still be waiting for its seats otherwise).
    pub fn dealt(&self) -> bool {
        self.undealt.is_none()
    }

    /// Folds the `seq`th event of the log, returning what it told whom. A stored action the
    /// rules refuse is corrupt data, not a refusal.
    pub fn apply(&mut self, seq: u64, event: &Event) -> ApiResult<Observations> {
        self.step(seq, event, true).map_err(corrupt(seq))
    }

    /// [`Table::apply`] for a load, which needs only the state: no observation is built.
    pub fn fold(&mut self, seq: u64, event: &Event) -> ApiResult<()> {
        self.step(seq, event, false).map(drop).map_err(corrupt(seq))
    }

    /// [`Table::fold`], telling a refused action from an event that cannot be read (for a
    /// verifier, which must say which).
    pub fn replay(&mut self, seq: u64, event: &Event) -> Result<(), Replay> {
        self.step(seq, event, false).map(drop)
    }

    /// The fold of one event; what it told whom only when `observe` (empty otherwise).
    fn step(&mut self, seq: u64, event: &Event, observe: bool) -> Result<Observations, Replay> {
        // A closed match is never dealt: its closure tells the rules nothing.
        if let Event::Closed { .. } = event {
            return Ok(Vec::new());
        }
        let told = |state: &dyn MatchState| {
            if observe {
                state.setup_observations()
            } else {
                Vec::new()
            }
        };
        if let Some(pending) = self.undealt.as_mut() {
            pending.holders.note(seq, event)?;
            if let Some(nonces) = pending.holders.all() {
                let seed = deal::seed(&pending.seed, &nonces);
                self.state =
                    self.game
                        .setup_under(&pending.config, self.seats, seed, self.version)?;
                self.undealt = None;
                return Ok(told(self.state.as_ref()));
            }
        }
        match event {
            Event::Action { seat, action } | Event::Timeout { seat, action } => {
                let action = self.game.decode_action(action)?;
                if observe {
                    self.play(*seat, &action).map_err(Replay::Refused)
                } else {
                    let replayed = self.state.replay(*seat, &action);
                    replayed.map(|()| Vec::new()).map_err(Replay::Refused)
                }
            }
            // Dealt at creation: the first deal is the creation's news.
            Event::Created(_) if self.dealt() => Ok(told(self.state.as_ref())),
            Event::Created(_)
            | Event::Joined { .. }
            | Event::Left { .. }
            | Event::Closed { .. } => Ok(Vec::new()),
        }
    }

    /// Lets the rules apply a seat's action. On `Err` nothing changed.
    pub fn play(&mut self, seat: Seat, action: &AnyAction) -> Result<Observations, Refusal> {
        self.state.apply(seat, action)
    }

    /// The state as a snapshot stores it; `None` before the deal, when there is nothing to
    /// save.
    pub fn snapshot(&self) -> Option<ApiResult<Value>> {
        self.dealt().then(|| self.state.to_json())
    }
}

/// A stored event the rules refuse is corrupt data, not a refusal.
fn corrupt(seq: u64) -> impl Fn(Replay) -> ApiError {
    move |e| match e {
        Replay::Refused(refusal) => ApiError::internal(format!(
            "stored event {seq} refused on replay: {}",
            refusal.rule
        )),
        Replay::Unreadable(e) => e,
    }
}

/// Refuses a rules version the server does not run.
fn check_version(game: &dyn GameKind, version: u32) -> ApiResult<()> {
    if game.runs(version) {
        return Ok(());
    }
    Err(ApiError::precondition(
        Rule::RulesVersionUnavailable,
        format!(
            "this match is played under {} rules version {version}, which this server does not \
             run (new matches get version {}); a server that runs it must serve it",
            game.kind(),
            game.rules_version()
        ),
    ))
}

/// A rule change shipped as a new version, made here and not shipped: `Demo` is Love Letter
/// whose version 2 retires a Guard's guess of the Priest. Matches created under version 1 keep
/// their rules (and outcomes) on a server that runs both; new matches get version 2; a server
/// that no longer runs version 1 refuses its matches.
#[cfg(test)]
mod tests {
    use missive_rules::love_letter::{self, LoveLetter, Role};
    use missive_rules::{Game, GameError, Observation, Outcome, SeatSet, Seed, SetupError, Viewer};
    use serde::{Deserialize, Serialize};

    use super::*;
    use crate::bots::Strategies;
    use crate::games::{Adapter, Catalogue, ProtoGame, Registered};

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    struct Demo<const OLDEST: u32, const NEWEST: u32> {
        game: LoveLetter,
        version: u32,
    }

    #[derive(Clone, Debug, PartialEq, thiserror::Error)]
    enum DemoError {
        #[error(transparent)]
        Game(#[from] love_letter::Error),
        #[error("since version 2 a Guard may not name the Priest")]
        PriestGuessRetired,
    }

    impl GameError for DemoError {
        fn code(&self) -> &'static str {
            match self {
                DemoError::Game(e) => e.code(),
                DemoError::PriestGuessRetired => "priest-guess-retired",
            }
        }
    }

    fn names_the_priest(action: &love_letter::Action) -> bool {
        matches!(action, love_letter::Action::Play { card, guess: Some(Role::Priest), .. }
            if card.role() == Role::Guard)
    }

    impl<const OLDEST: u32, const NEWEST: u32> Game for Demo<OLDEST, NEWEST> {
        const KIND: &'static str = "demo";
        const RULES_VERSION: u32 = NEWEST;
        const OLDEST_RULES_VERSION: u32 = OLDEST;
        type Config = love_letter::Config;
        type Action = love_letter::Action;
        type Event = love_letter::Event;
        type View = love_letter::View;
        type Error = DemoError;

        fn seat_range(config: &Self::Config) -> std::ops::RangeInclusive<u8> {
            LoveLetter::seat_range(config)
        }

        fn setup(config: &Self::Config, seats: u8, seed: Seed) -> Result<Self, SetupError> {
            Self::setup_under(config, seats, seed, NEWEST)
        }

        fn setup_under(
            config: &Self::Config,
            seats: u8,
            seed: Seed,
            version: u32,
        ) -> Result<Self, SetupError> {
            if !Self::runs(version) {
                return Err(SetupError::InvalidConfig(format!("version {version}")));
            }
            let game = LoveLetter::setup(config, seats, seed)?;
            Ok(Demo { game, version })
        }

        fn setup_observations(&self) -> Vec<Observation<Self::Event>> {
            self.game.setup_observations()
        }

        fn seats(&self) -> u8 {
            self.game.seats()
        }

        fn awaiting(&self) -> SeatSet {
            self.game.awaiting()
        }

        fn legal_actions(&self, seat: Seat) -> Vec<Self::Action> {
            let mut legal = self.game.legal_actions(seat);
            if self.version >= 2 {
                legal.retain(|a| !names_the_priest(a));
            }
            legal
        }

        fn apply(
            &mut self,
            seat: Seat,
            action: &Self::Action,
        ) -> Result<Vec<Observation<Self::Event>>, DemoError> {
            if self.version >= 2 && names_the_priest(action) {
                return Err(DemoError::PriestGuessRetired);
            }
            Ok(self.game.apply(seat, action)?)
        }

        fn view(&self, viewer: Viewer) -> Self::View {
            self.game.view(viewer)
        }

        fn outcome(&self) -> Option<Outcome> {
            self.game.outcome()
        }

        fn default_action(&self, seat: Seat) -> Option<Self::Action> {
            self.legal_actions(seat).into_iter().next()
        }
    }

    impl<const OLDEST: u32, const NEWEST: u32> Registered for Demo<OLDEST, NEWEST> {
        fn wrap(action: Self::Action) -> AnyAction {
            AnyAction::LoveLetter(action)
        }

        fn unwrap(action: &AnyAction) -> Option<&Self::Action> {
            LoveLetter::unwrap(action)
        }
    }

    impl<const OLDEST: u32, const NEWEST: u32> Strategies for Demo<OLDEST, NEWEST> {}

    impl<const OLDEST: u32, const NEWEST: u32> Catalogue for Demo<OLDEST, NEWEST> {
        fn info() -> pb::GameInfo {
            LoveLetter::info()
        }
    }

    impl<const OLDEST: u32, const NEWEST: u32> ProtoGame for Demo<OLDEST, NEWEST> {
        fn options_from_proto(options: &pb::GameOptions) -> Option<Result<Self::Config, String>> {
            LoveLetter::options_from_proto(options)
        }

        fn options_to_proto(config: &Self::Config, reveal: bool) -> pb::GameOptions {
            LoveLetter::options_to_proto(config, reveal)
        }

        fn fixed_deck(config: &Self::Config) -> bool {
            LoveLetter::fixed_deck(config)
        }

        fn action_from_proto(action: &pb::GameAction) -> Result<Self::Action, String> {
            LoveLetter::action_from_proto(action)
        }

        fn action_to_proto(action: &Self::Action) -> pb::GameAction {
            LoveLetter::action_to_proto(action)
        }

        fn view_to_proto(view: &Self::View) -> pb::GameView {
            LoveLetter::view_to_proto(view)
        }

        fn event_to_proto(event: &Self::Event) -> pb::GameEvent {
            LoveLetter::event_to_proto(event)
        }
    }

    fn game<const OLDEST: u32, const NEWEST: u32>() -> Arc<dyn GameKind> {
        Arc::new(Adapter::<Demo<OLDEST, NEWEST>>::default())
    }

    fn config() -> Value {
        serde_json::to_value(love_letter::Config::default()).expect("config")
    }

    /// The events that open a two-seat match dealt at the start.
    fn opening() -> Vec<Event> {
        let joined = |seat: u8| Event::Joined {
            seat,
            player: format!("p{seat}"),
            nonce: Some(format!("n{seat}")),
        };
        vec![
            Event::Created(crate::events::Creation {
                config: config(),
                seat_count: 2,
                fixed_deck: false,
                turn_timeout_secs: None,
                turn_reminder_secs: None,
                bots: Vec::new(),
                deal_at_start: true,
                invited: Vec::new(),
                rematch_of: None,
            }),
            joined(0),
            joined(1),
        ]
    }

    /// Plays a match on `table` to its end, naming the Priest with a Guard whenever the rules
    /// allow it, else the first legal action: the log, and the outcome.
    fn play(table: &mut Table) -> (Vec<Event>, Outcome) {
        let mut log = opening();
        for (i, event) in log.iter().enumerate() {
            table.apply(i as u64 + 1, event).expect("opens");
        }
        while table.state().outcome().is_none() {
            let seat = table.state().awaiting().iter().next().expect("awaited");
            let legal: Vec<AnyAction> = table
                .state()
                .legal_actions(seat)
                .iter()
                .map(|a| table.game().parse_action(a).expect("parses"))
                .collect();
            let action = legal
                .iter()
                .find(|a| matches!(a, AnyAction::LoveLetter(a) if names_the_priest(a)))
                .unwrap_or(&legal[0])
                .clone();
            table.play(seat, &action).expect("a legal action");
            let action = table.game().encode_action(&action).expect("encodes");
            log.push(Event::Action { seat, action });
        }
        (log, table.state().outcome().expect("over"))
    }

    fn replay(table: &mut Table, log: &[Event]) -> Result<Option<Outcome>, (u64, Replay)> {
        for (i, event) in log.iter().enumerate() {
            let seq = i as u64 + 1;
            table.replay(seq, event).map_err(|e| (seq, e))?;
        }
        Ok(table.state().outcome())
    }

    #[test]
    fn a_match_keeps_the_rules_it_was_created_with_and_new_matches_get_the_new_ones() {
        let seed = [5; 32];
        // Before the change: the server runs version 1 only.
        let mut before = Table::new(game::<1, 1>(), &config(), 2, seed, (1, true)).expect("v1");
        let (log, outcome) = play(&mut before);
        let guesses = log
            .iter()
            .filter(|e| {
                matches!(e, Event::Action { action, .. }
                if action.to_string().contains("\"guess\":\"priest\""))
            })
            .count();
        assert!(guesses > 0, "the match uses the rule that changes");

        // After: version 2 ships and version 1 stays. The old match replays to its outcome.
        let mut old = Table::new(game::<1, 2>(), &config(), 2, seed, (1, true)).expect("v1 runs");
        assert_eq!(replay(&mut old, &log).ok(), Some(Some(outcome.clone())));
        assert_eq!(
            old.snapshot().map(Result::ok),
            before.snapshot().map(Result::ok)
        );

        // A new match, created under version 2, from the same seed and nonces: the same log is
        // refused at its first Guard naming the Priest, and nobody is offered that play.
        let newest = game::<1, 2>().rules_version();
        assert_eq!(newest, 2);
        let mut new = Table::new(game::<1, 2>(), &config(), 2, seed, (newest, true)).expect("v2");
        let first = log
            .iter()
            .position(|e| {
                matches!(e, Event::Action { action, .. }
                if action.to_string().contains("\"guess\":\"priest\""))
            })
            .expect("a priest guess") as u64
            + 1;
        match replay(&mut new, &log) {
            Err((seq, Replay::Refused(refusal))) => {
                assert_eq!((seq, refusal.rule), (first, "priest-guess-retired"));
            }
            other => panic!("refused at {first}, not {other:?}"),
        }
        let (new_log, _) =
            play(&mut Table::new(game::<1, 2>(), &config(), 2, seed, (2, true)).expect("v2"));
        assert!(
            !new_log
                .iter()
                .any(|e| matches!(e, Event::Action { action, .. }
                if action.to_string().contains("\"guess\":\"priest\""))),
            "version 2 never offers the retired play"
        );

        // A server that has retired version 1 refuses the old match instead of replaying it.
        let refused =
            Table::new(game::<2, 2>(), &config(), 2, seed, (1, true)).expect_err("retired");
        assert!(
            matches!(&refused, ApiError::FailedPrecondition { rule, .. }
                if rule == Rule::RulesVersionUnavailable.code()),
            "{refused:?}"
        );
        assert!(refused.to_string().contains("version 1"), "{refused}");
    }
}
