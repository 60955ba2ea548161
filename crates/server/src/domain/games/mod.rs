//! The per-game adapter: how the service drives any game through one object-safe interface,
//! and how each game maps its rules types to and from its proto messages.
//!
//! A game plugs in with a folder `games/<game>/`: `proto.rs` implements [`ProtoGame`] (the
//! hand-written proto mapping, kept at the edge so rules types never derive prost) and
//! `bot.rs` its bot strategies ([`Strategies`]); and one line in [`registered_games!`] below.
//! The service never names a game: it dispatches on the stable kind (`love-letter`) stored
//! with every match, or on the oneof field set in a request.
//!
//! Actions cross the object-safe interface typed, as [`AnyAction`] (one variant per game,
//! holding the rules' own action type): a request's action is parsed into it once, the rules
//! apply it as it is, and JSON appears only where an action is stored or read back from the
//! store.

mod amori;
mod lopti;
mod love_letter;

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;

use missive_proto::v1 as pb;
use missive_rules::{Game, GameError, Observation, Outcome, Seat, SeatSet, Seed, Viewer};
use missive_store::MatchId;
use serde::Deserialize;
use serde_json::Value;

use crate::bots::{self, Strategies};
use crate::error::{ApiError, ApiResult};

/// Every game this server plays: the [`AnyAction`] variant and the rules type of each. Adding
/// a game is one line here (and its folder).
macro_rules! registered_games {
    ($($variant:ident => $game:ty),+ $(,)?) => {
        /// An action of one of this server's games, as its rules type it.
        #[derive(Debug, Clone, PartialEq)]
        pub enum AnyAction {
            $($variant(<$game as Game>::Action)),+
        }

        $(impl Registered for $game {
            fn wrap(action: Self::Action) -> AnyAction {
                AnyAction::$variant(action)
            }

            fn unwrap(action: &AnyAction) -> Option<&Self::Action> {
                #[allow(unreachable_patterns)]
                match action {
                    AnyAction::$variant(action) => Some(action),
                    _ => None,
                }
            }
        })+

        fn registered() -> Vec<Arc<dyn GameKind>> {
            vec![$(Arc::new(Adapter::<$game>::default())),+]
        }
    };
}

registered_games! {
    LoveLetter => missive_rules::love_letter::LoveLetter,
    Lopti => missive_rules::lopti::Lopti,
    Amori => missive_rules::amori::Amori,
}

/// A game's place in [`AnyAction`], implemented by [`registered_games!`].
pub trait Registered: Game {
    fn wrap(action: Self::Action) -> AnyAction;
    /// `None` for another game's action.
    fn unwrap(action: &AnyAction) -> Option<&Self::Action>;
}

/// What ListGames tells of a game (`games/<game>/catalogue.rs`).
pub trait Catalogue {
    /// The game's names, editions with their seat counts, options, bot strategies and its
    /// cards with their texts, the tables taken from the rules so they cannot drift. The
    /// adapter fills in the kind, the rules versions and the seat counts over all editions.
    fn info() -> pb::GameInfo;
}

/// A game's proto mapping. Conversions from proto validate the shape only; the rules decide
/// legality.
pub trait ProtoGame: Registered + Strategies + Catalogue {
    /// The game's options, if `options` names this game.
    fn options_from_proto(options: &pb::GameOptions) -> Option<Result<Self::Config, String>>;
    /// The options as shown to clients. `reveal` is false while the match runs: secrets such
    /// as a fixed deck order stay out of what players see.
    fn options_to_proto(config: &Self::Config, reveal: bool) -> pb::GameOptions;
    /// Whether the creator fixed the deck (and so knows the cards).
    fn fixed_deck(config: &Self::Config) -> bool;
    fn action_from_proto(action: &pb::GameAction) -> Result<Self::Action, String>;
    fn action_to_proto(action: &Self::Action) -> pb::GameAction;
    fn view_to_proto(view: &Self::View) -> pb::GameView;
    fn event_to_proto(event: &Self::Event) -> pb::GameEvent;
    /// Whether everyone learns this action when it is played (the game's public observations
    /// show it). A history shows a timed-out seat's default action to other viewers only then.
    /// By default no action is assumed public.
    fn action_is_public(action: &Self::Action) -> bool {
        let _ = action;
        false
    }
}

/// A refused action: the rule's stable code and a message that reveals nothing hidden.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub rule: &'static str,
    pub message: String,
}

impl From<Refusal> for ApiError {
    fn from(refusal: Refusal) -> Self {
        ApiError::Rule {
            rule: refusal.rule.to_owned(),
            message: refusal.message,
        }
    }
}

/// Parsed creation options, ready to store.
#[derive(Debug, Clone)]
pub struct ParsedOptions {
    /// The rules' config as its serde JSON: what the "created" event stores.
    pub config: Value,
    pub fixed_deck: bool,
}

/// One game, object-safe. Actions cross this boundary typed ([`AnyAction`]); configs as the
/// rules' serde JSON, which is how the match row stores them.
pub trait GameKind: Send + Sync + Debug + 'static {
    fn kind(&self) -> &'static str;
    /// The rules version new matches are created under.
    fn rules_version(&self) -> u32;
    /// Whether this server runs rules `version` of the game.
    fn runs(&self, version: u32) -> bool;
    /// `None` when `options` names another game.
    fn parse_options(
        &self,
        options: &pb::GameOptions,
        seats: u8,
    ) -> Option<ApiResult<ParsedOptions>>;
    fn default_seats(&self, config: &Value) -> ApiResult<u8>;
    fn options_to_proto(&self, config: &Value, reveal: bool) -> ApiResult<pb::GameOptions>;
    fn fixed_deck(&self, config: &Value) -> bool;
    /// A new match under the newest rules.
    fn setup(&self, config: &Value, seats: u8, seed: [u8; 32]) -> ApiResult<Box<dyn MatchState>> {
        self.setup_under(config, seats, seed, self.rules_version())
    }
    /// A new match under rules `version`, which its state keeps.
    fn setup_under(
        &self,
        config: &Value,
        seats: u8,
        seed: [u8; 32],
        version: u32,
    ) -> ApiResult<Box<dyn MatchState>>;
    fn restore(&self, state: Value) -> ApiResult<Box<dyn MatchState>>;
    /// A request's action, parsed once into the rules' type (its shape checked, not its
    /// legality).
    fn parse_action(&self, action: &pb::GameAction) -> ApiResult<AnyAction>;
    /// A stored action (the rules' serde JSON, as events hold it).
    fn decode_action(&self, stored: &Value) -> ApiResult<AnyAction>;
    /// The action as events store it.
    fn encode_action(&self, action: &AnyAction) -> ApiResult<Value>;
    fn action_to_proto(&self, action: &AnyAction) -> ApiResult<pb::GameAction>;
    /// See [`ProtoGame::action_is_public`]; false for another game's action.
    fn action_is_public(&self, action: &AnyAction) -> bool;
    /// What ListGames tells of the game; see [`Catalogue::info`].
    fn info(&self) -> pb::GameInfo;
}

/// A running match's state, object-safe.
pub trait MatchState: Send + Sync + Debug {
    fn boxed_clone(&self) -> Box<dyn MatchState>;
    /// Apply an action. On `Err` the state is unchanged.
    fn apply(
        &mut self,
        seat: Seat,
        action: &AnyAction,
    ) -> Result<Vec<Observation<pb::GameEvent>>, Refusal>;
    /// [`MatchState::apply`] for a replay, which needs only the state: the same state and
    /// refusals, and no observation built (see [`missive_rules::Game::replay`]).
    fn replay(&mut self, seat: Seat, action: &AnyAction) -> Result<(), Refusal>;
    /// What setup told the table; see [`missive_rules::Game::setup_observations`].
    fn setup_observations(&self) -> Vec<Observation<pb::GameEvent>>;
    fn awaiting(&self) -> SeatSet;
    fn legal_actions(&self, seat: Seat) -> Vec<pb::GameAction>;
    fn view(&self, viewer: Viewer) -> pb::GameView;
    fn outcome(&self) -> Option<Outcome>;
    /// The action a turn timeout plays for `seat`; `None` if the seat is not awaited. See
    /// [`missive_rules::Game::default_action`].
    fn default_action(&self, seat: Seat) -> Option<AnyAction>;
    /// The action the bot with `strategy` playing `seat` chooses at `version`, from the seat's
    /// view and legal actions only (see `bots.rs`); `None` when it has none.
    fn bot_action(
        &self,
        strategy: &str,
        match_id: MatchId,
        version: u64,
        seat: Seat,
    ) -> Option<AnyAction>;
    fn to_json(&self) -> ApiResult<Value>;
}

/// [`GameKind`] for any [`ProtoGame`].
#[derive(Debug)]
pub struct Adapter<G>(std::marker::PhantomData<fn() -> G>);

impl<G> Default for Adapter<G> {
    fn default() -> Self {
        Adapter(std::marker::PhantomData)
    }
}

#[derive(Debug, Clone)]
struct State<G>(G);

fn config_of<G: ProtoGame>(config: &Value) -> ApiResult<G::Config> {
    G::Config::deserialize(config)
        .map_err(|e| ApiError::internal(format!("stored {} config unreadable: {e}", G::KIND)))
}

impl<G: ProtoGame> GameKind for Adapter<G> {
    fn kind(&self) -> &'static str {
        G::KIND
    }

    fn rules_version(&self) -> u32 {
        G::RULES_VERSION
    }

    fn runs(&self, version: u32) -> bool {
        G::runs(version)
    }

    fn parse_options(
        &self,
        options: &pb::GameOptions,
        seats: u8,
    ) -> Option<ApiResult<ParsedOptions>> {
        let config = match G::options_from_proto(options)? {
            Ok(config) => config,
            Err(message) => return Some(Err(ApiError::invalid(message))),
        };
        let range = G::seat_range(&config);
        if !range.contains(&seats) {
            return Some(Err(ApiError::invalid(format!(
                "{} takes {} to {} seats, not {seats}",
                G::KIND,
                range.start(),
                range.end()
            ))));
        }
        // Set up once to validate the whole config (a fixed deck, a first player) up front.
        if let Err(e) = G::setup(&config, seats, Seed([0; 32])) {
            return Some(Err(ApiError::invalid(e.to_string())));
        }
        let fixed_deck = G::fixed_deck(&config);
        Some(
            serde_json::to_value(&config)
                .map(|config| ParsedOptions { config, fixed_deck })
                .map_err(|e| ApiError::internal(e.to_string())),
        )
    }

    fn default_seats(&self, config: &Value) -> ApiResult<u8> {
        Ok(*G::seat_range(&config_of::<G>(config)?).start())
    }

    fn options_to_proto(&self, config: &Value, reveal: bool) -> ApiResult<pb::GameOptions> {
        Ok(G::options_to_proto(&config_of::<G>(config)?, reveal))
    }

    fn fixed_deck(&self, config: &Value) -> bool {
        config_of::<G>(config)
            .map(|c| G::fixed_deck(&c))
            .unwrap_or(false)
    }

    fn setup_under(
        &self,
        config: &Value,
        seats: u8,
        seed: [u8; 32],
        version: u32,
    ) -> ApiResult<Box<dyn MatchState>> {
        let game = G::setup_under(&config_of::<G>(config)?, seats, Seed(seed), version)
            .map_err(|e| ApiError::internal(format!("stored match no longer sets up: {e}")))?;
        Ok(Box::new(State(game)))
    }

    fn restore(&self, state: Value) -> ApiResult<Box<dyn MatchState>> {
        let game: G = serde_json::from_value(state)
            .map_err(|e| ApiError::internal(format!("snapshot unreadable: {e}")))?;
        Ok(Box::new(State(game)))
    }

    fn parse_action(&self, action: &pb::GameAction) -> ApiResult<AnyAction> {
        G::action_from_proto(action)
            .map(G::wrap)
            .map_err(ApiError::InvalidArgument)
    }

    fn decode_action(&self, stored: &Value) -> ApiResult<AnyAction> {
        G::Action::deserialize(stored)
            .map(G::wrap)
            .map_err(|e| ApiError::internal(format!("stored {} action unreadable: {e}", G::KIND)))
    }

    fn encode_action(&self, action: &AnyAction) -> ApiResult<Value> {
        serde_json::to_value(own::<G>(action)?).map_err(|e| ApiError::internal(e.to_string()))
    }

    fn action_to_proto(&self, action: &AnyAction) -> ApiResult<pb::GameAction> {
        Ok(G::action_to_proto(own::<G>(action)?))
    }

    fn action_is_public(&self, action: &AnyAction) -> bool {
        G::unwrap(action).is_some_and(G::action_is_public)
    }

    fn info(&self) -> pb::GameInfo {
        let mut info = G::info();
        info.kind = G::KIND.to_owned();
        info.rules_version = G::RULES_VERSION;
        info.rules_versions = (G::OLDEST_RULES_VERSION..=G::RULES_VERSION)
            .filter(|v| G::runs(*v))
            .collect();
        info.min_seats = info.editions.iter().map(|e| e.min_seats).min().unwrap_or(0);
        info.max_seats = info.editions.iter().map(|e| e.max_seats).max().unwrap_or(0);
        info
    }
}

/// `action` as `G`'s own; another game's action is a bug of the caller's.
fn own<G: ProtoGame>(action: &AnyAction) -> ApiResult<&G::Action> {
    G::unwrap(action)
        .ok_or_else(|| ApiError::internal(format!("not an action of {}: {action:?}", G::KIND)))
}

fn observations_to_proto<G: ProtoGame>(
    observations: &[Observation<G::Event>],
) -> Vec<Observation<pb::GameEvent>> {
    observations
        .iter()
        .map(|o| Observation {
            audience: o.audience,
            event: G::event_to_proto(&o.event),
        })
        .collect()
}

/// A game's own action in `action`, or the refusal of an action of another game.
fn own_action<G: ProtoGame>(action: &AnyAction) -> Result<&G::Action, Refusal> {
    G::unwrap(action).ok_or_else(|| Refusal {
        rule: "malformed-action",
        message: "this is not an action of this game".into(),
    })
}

/// The refusal the rules' error `e` makes.
fn refusal<E: GameError>(e: E) -> Refusal {
    Refusal {
        rule: e.code(),
        message: e.to_string(),
    }
}

/// The refusal of any action before the deal.
fn not_started() -> Refusal {
    Refusal {
        rule: "match-not-started",
        message: "the match starts when every seat is taken".into(),
    }
}

impl<G: ProtoGame> MatchState for State<G> {
    fn boxed_clone(&self) -> Box<dyn MatchState> {
        Box::new(self.clone())
    }

    fn apply(
        &mut self,
        seat: Seat,
        action: &AnyAction,
    ) -> Result<Vec<Observation<pb::GameEvent>>, Refusal> {
        let observations = self
            .0
            .apply(seat, own_action::<G>(action)?)
            .map_err(refusal)?;
        Ok(observations_to_proto::<G>(&observations))
    }

    fn replay(&mut self, seat: Seat, action: &AnyAction) -> Result<(), Refusal> {
        self.0
            .replay(seat, own_action::<G>(action)?)
            .map_err(refusal)
    }

    fn setup_observations(&self) -> Vec<Observation<pb::GameEvent>> {
        observations_to_proto::<G>(&self.0.setup_observations())
    }

    fn awaiting(&self) -> SeatSet {
        self.0.awaiting()
    }

    fn legal_actions(&self, seat: Seat) -> Vec<pb::GameAction> {
        self.0
            .legal_actions(seat)
            .iter()
            .map(G::action_to_proto)
            .collect()
    }

    fn view(&self, viewer: Viewer) -> pb::GameView {
        G::view_to_proto(&self.0.view(viewer))
    }

    fn outcome(&self) -> Option<Outcome> {
        self.0.outcome()
    }

    fn default_action(&self, seat: Seat) -> Option<AnyAction> {
        self.0.default_action(seat).map(G::wrap)
    }

    fn bot_action(
        &self,
        strategy: &str,
        match_id: MatchId,
        version: u64,
        seat: Seat,
    ) -> Option<AnyAction> {
        // The bot is handed the seat's view and legal actions, and nothing else of the state.
        let view = self.0.view(Viewer::Seat(seat));
        let legal = self.0.legal_actions(seat);
        bots::choose::<G>(strategy, match_id, version, seat, &view, &legal).map(G::wrap)
    }

    fn to_json(&self) -> ApiResult<Value> {
        serde_json::to_value(&self.0).map_err(|e| ApiError::internal(e.to_string()))
    }
}

/// The state of a match dealt at its start while it is open: nothing is dealt, nobody is
/// awaited, nothing may be played, and there is nothing to snapshot.
#[derive(Debug, Clone, Copy, Default)]
pub struct NotDealt;

impl MatchState for NotDealt {
    fn boxed_clone(&self) -> Box<dyn MatchState> {
        Box::new(*self)
    }

    fn apply(
        &mut self,
        _: Seat,
        _: &AnyAction,
    ) -> Result<Vec<Observation<pb::GameEvent>>, Refusal> {
        Err(not_started())
    }

    fn replay(&mut self, _: Seat, _: &AnyAction) -> Result<(), Refusal> {
        Err(not_started())
    }

    fn setup_observations(&self) -> Vec<Observation<pb::GameEvent>> {
        Vec::new()
    }

    fn awaiting(&self) -> SeatSet {
        SeatSet::EMPTY
    }

    fn legal_actions(&self, _: Seat) -> Vec<pb::GameAction> {
        Vec::new()
    }

    fn view(&self, _: Viewer) -> pb::GameView {
        pb::GameView::default()
    }

    fn outcome(&self) -> Option<Outcome> {
        None
    }

    fn default_action(&self, _: Seat) -> Option<AnyAction> {
        None
    }

    fn bot_action(&self, _: &str, _: MatchId, _: u64, _: Seat) -> Option<AnyAction> {
        None
    }

    fn to_json(&self) -> ApiResult<Value> {
        Err(ApiError::internal("an undealt match has no state to save"))
    }
}

/// Every game this server plays, by stable kind.
#[derive(Debug, Clone)]
pub struct Registry {
    games: HashMap<&'static str, Arc<dyn GameKind>>,
    /// ListGames's answer, built once: it never changes while the server runs.
    catalogue: Arc<pb::ListGamesResponse>,
}

impl Registry {
    pub fn new() -> Self {
        let games = registered()
            .into_iter()
            .map(|game| (game.kind(), game))
            .collect::<HashMap<_, _>>();
        let mut infos: Vec<pb::GameInfo> = games.values().map(|game| game.info()).collect();
        infos.sort_by(|a, b| a.kind.cmp(&b.kind));
        let catalogue = Arc::new(pb::ListGamesResponse { games: infos });
        Registry { games, catalogue }
    }

    /// Every game's [`GameKind::info`], by kind.
    pub fn catalogue(&self) -> &pb::ListGamesResponse {
        &self.catalogue
    }

    pub fn get(&self, kind: &str) -> ApiResult<&Arc<dyn GameKind>> {
        self.games
            .get(kind)
            .ok_or_else(|| ApiError::internal(format!("no game registered for kind {kind}")))
    }

    /// The game whose oneof field `options` sets, with the parsed options.
    pub fn parse_options(
        &self,
        options: &pb::GameOptions,
        seats: Option<u8>,
    ) -> ApiResult<(Arc<dyn GameKind>, ParsedOptions)> {
        for game in self.games.values() {
            let seats = seats.unwrap_or(2);
            if let Some(parsed) = game.parse_options(options, seats) {
                return Ok((game.clone(), parsed?));
            }
        }
        Err(ApiError::invalid(
            "options must name a game (e.g. loveLetter)",
        ))
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

/// The round trips every game's proto mapping keeps, walked over many random legal games
/// (each game's `proto.rs` runs it with configs of its own).
#[cfg(test)]
pub(crate) mod round_trip {
    use std::fmt::Debug;

    use missive_rules::{Seed, Viewer};
    use prost::Message;
    use serde::Serialize;
    use serde::de::DeserializeOwned;

    use super::ProtoGame;

    /// A proto message reads back unchanged from its wire bytes and from its canonical JSON.
    fn through_the_wire<M>(message: &M)
    where
        M: Message + Default + PartialEq + Debug + Serialize + DeserializeOwned,
    {
        let bytes = message.encode_to_vec();
        assert_eq!(&M::decode(bytes.as_slice()).expect("decodes"), message);
        let json = serde_json::to_string(message).expect("to JSON");
        let back: M = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
        assert_eq!(&back, message, "{json}");
    }

    /// What the walks saw: how many of each message they checked.
    #[derive(Debug, Default)]
    pub(crate) struct Checked {
        pub(crate) actions: usize,
        pub(crate) views: usize,
        pub(crate) events: usize,
    }

    /// For each config and seat count, `games` random games of up to `steps` actions: the
    /// options read back from their revealed proto form; every legal action reads back from
    /// its proto form; every view (each seat's and a spectator's) and every observation maps
    /// to a message that survives the wire and JSON.
    pub(crate) fn walk<G: ProtoGame>(configs: &[G::Config], games: u64, steps: u64) -> Checked {
        let mut checked = Checked::default();
        for config in configs {
            let options = G::options_to_proto(config, true);
            through_the_wire(&options);
            assert_eq!(
                G::options_from_proto(&options),
                Some(Ok(config.clone())),
                "{options:?}"
            );
            for seats in G::seat_range(config) {
                for seed in 0..games {
                    let mut game = G::setup(config, seats, Seed::from_u64(seed)).expect("setup");
                    let mut told = game.setup_observations();
                    let mut pick = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
                    for _ in 0..steps {
                        for observation in &told {
                            through_the_wire(&G::event_to_proto(&observation.event));
                            checked.events += 1;
                        }
                        let viewers = (0..seats).map(Viewer::Seat).chain([Viewer::Spectator]);
                        for viewer in viewers {
                            through_the_wire(&G::view_to_proto(&game.view(viewer)));
                            checked.views += 1;
                        }
                        let Some(seat) = game.awaiting().iter().next() else {
                            break;
                        };
                        let legal = game.legal_actions(seat);
                        for action in &legal {
                            let proto = G::action_to_proto(action);
                            through_the_wire(&proto);
                            assert_eq!(G::action_from_proto(&proto).as_ref(), Ok(action));
                            checked.actions += 1;
                        }
                        pick = pick.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                        let action = &legal[(pick >> 33) as usize % legal.len()];
                        told = game.apply(seat, action).expect("a legal action applies");
                    }
                }
            }
        }
        checked
    }

    /// [`walk`] over six games of up to 400 actions per config and seat count, which must
    /// reach a thousand actions and a hundred observations.
    pub(crate) fn check<G: ProtoGame>(configs: &[G::Config]) {
        let checked = walk::<G>(configs, 6, 400);
        assert!(checked.actions > 1_000, "{checked:?}");
        assert!(checked.events > 100, "{checked:?}");
    }
}
