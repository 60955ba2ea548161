//! The per-game adapter: how the service drives any game through one object-safe interface,
//! and how each game maps its rules types to and from its proto messages.
//!
//! A game plugs in by implementing [`ProtoGame`] (the hand-written proto mapping, kept at the
//! edge so rules types never derive prost) and adding one line to [`Registry::new`]. The
//! service never names a game: it dispatches on the stable kind (`love-letter`) stored with
//! every match, or on the oneof field set in a request.

pub mod amori;
pub mod lopti;
pub mod love_letter;

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;

use missive_proto::v1 as pb;
use missive_rules::{Game, GameError, Observation, Outcome, Seat, SeatSet, Seed, Viewer};
use serde_json::Value;

use crate::error::{ApiError, ApiResult};

/// A game's proto mapping. Conversions from proto validate the shape only; the rules decide
/// legality.
pub trait ProtoGame: Game {
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

/// One game, object-safe. Configs and actions cross this boundary as the rules' serde JSON,
/// which is also how they are stored.
pub trait GameKind: Send + Sync + Debug + 'static {
    fn kind(&self) -> &'static str;
    fn rules_version(&self) -> u32;
    /// `None` when `options` names another game.
    fn parse_options(
        &self,
        options: &pb::GameOptions,
        seats: u8,
    ) -> Option<ApiResult<ParsedOptions>>;
    fn default_seats(&self, config: &Value) -> ApiResult<u8>;
    fn options_to_proto(&self, config: &Value, reveal: bool) -> ApiResult<pb::GameOptions>;
    fn fixed_deck(&self, config: &Value) -> bool;
    fn setup(&self, config: &Value, seats: u8, seed: [u8; 32]) -> ApiResult<Box<dyn MatchState>>;
    fn restore(&self, state: Value) -> ApiResult<Box<dyn MatchState>>;
    fn parse_action(&self, action: &pb::GameAction) -> ApiResult<Value>;
    fn action_to_proto(&self, action: &Value) -> ApiResult<pb::GameAction>;
    /// See [`ProtoGame::action_is_public`]; false for an unreadable action.
    fn action_is_public(&self, action: &Value) -> bool;
}

/// A running match's state, object-safe.
pub trait MatchState: Send + Sync + Debug {
    fn boxed_clone(&self) -> Box<dyn MatchState>;
    /// Apply a stored or parsed action (rules serde JSON). On `Err` the state is unchanged.
    fn apply(
        &mut self,
        seat: Seat,
        action: &Value,
    ) -> Result<Vec<Observation<pb::GameEvent>>, Refusal>;
    /// What setup told the table; see [`missive_rules::Game::setup_observations`].
    fn setup_observations(&self) -> Vec<Observation<pb::GameEvent>>;
    fn awaiting(&self) -> SeatSet;
    fn legal_actions(&self, seat: Seat) -> Vec<pb::GameAction>;
    fn view(&self, viewer: Viewer) -> pb::GameView;
    fn outcome(&self) -> Option<Outcome>;
    /// The action a turn timeout plays for `seat` (rules serde JSON); `None` if the seat is
    /// not awaited. See [`missive_rules::Game::default_action`].
    fn default_action(&self, seat: Seat) -> Option<Value>;
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
    serde_json::from_value(config.clone())
        .map_err(|e| ApiError::internal(format!("stored {} config unreadable: {e}", G::KIND)))
}

impl<G: ProtoGame> GameKind for Adapter<G> {
    fn kind(&self) -> &'static str {
        G::KIND
    }

    fn rules_version(&self) -> u32 {
        G::RULES_VERSION
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

    fn setup(&self, config: &Value, seats: u8, seed: [u8; 32]) -> ApiResult<Box<dyn MatchState>> {
        let game = G::setup(&config_of::<G>(config)?, seats, Seed(seed))
            .map_err(|e| ApiError::internal(format!("stored match no longer sets up: {e}")))?;
        Ok(Box::new(State(game)))
    }

    fn restore(&self, state: Value) -> ApiResult<Box<dyn MatchState>> {
        let game: G = serde_json::from_value(state)
            .map_err(|e| ApiError::internal(format!("snapshot unreadable: {e}")))?;
        Ok(Box::new(State(game)))
    }

    fn parse_action(&self, action: &pb::GameAction) -> ApiResult<Value> {
        let action = G::action_from_proto(action).map_err(ApiError::InvalidArgument)?;
        serde_json::to_value(&action).map_err(|e| ApiError::internal(e.to_string()))
    }

    fn action_to_proto(&self, action: &Value) -> ApiResult<pb::GameAction> {
        let action: G::Action = serde_json::from_value(action.clone())
            .map_err(|e| ApiError::internal(format!("stored action unreadable: {e}")))?;
        Ok(G::action_to_proto(&action))
    }

    fn action_is_public(&self, action: &Value) -> bool {
        serde_json::from_value::<G::Action>(action.clone()).is_ok_and(|a| G::action_is_public(&a))
    }
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

impl<G: ProtoGame> MatchState for State<G> {
    fn boxed_clone(&self) -> Box<dyn MatchState> {
        Box::new(self.clone())
    }

    fn apply(
        &mut self,
        seat: Seat,
        action: &Value,
    ) -> Result<Vec<Observation<pb::GameEvent>>, Refusal> {
        let action: G::Action = serde_json::from_value(action.clone()).map_err(|_| Refusal {
            rule: "malformed-action",
            message: "this is not an action of this game".into(),
        })?;
        let observations = self.0.apply(seat, &action).map_err(|e| Refusal {
            rule: e.code(),
            message: e.to_string(),
        })?;
        Ok(observations_to_proto::<G>(&observations))
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

    fn default_action(&self, seat: Seat) -> Option<Value> {
        let action = self.0.default_action(seat)?;
        serde_json::to_value(&action).ok()
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

    fn apply(&mut self, _: Seat, _: &Value) -> Result<Vec<Observation<pb::GameEvent>>, Refusal> {
        Err(Refusal {
            rule: "match-not-started",
            message: "the match starts when every seat is taken".into(),
        })
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

    fn default_action(&self, _: Seat) -> Option<Value> {
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
}

impl Registry {
    pub fn new() -> Self {
        let mut games: HashMap<&'static str, Arc<dyn GameKind>> = HashMap::new();
        let love_letter: Arc<dyn GameKind> =
            Arc::new(Adapter::<missive_rules::love_letter::LoveLetter>::default());
        games.insert(love_letter.kind(), love_letter);
        let amori: Arc<dyn GameKind> = Arc::new(Adapter::<missive_rules::amori::Amori>::default());
        games.insert(amori.kind(), amori);
        let lopti: Arc<dyn GameKind> = Arc::new(Adapter::<missive_rules::lopti::Lopti>::default());
        games.insert(lopti.kind(), lopti);
        Registry { games }
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
