//! The engine interface every game implements, and the small types it speaks in.

use std::fmt::Debug;
use std::ops::RangeInclusive;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::rng::Seed;

/// A seat at the table, numbered from 0 in clockwise order.
pub type Seat = u8;

/// Who is looking: a seated player, or a spectator who sees only what is public.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Viewer {
    Seat(Seat),
    Spectator,
}

/// A set of seats (a game has at most 8), as a bit mask.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SeatSet(u8);

impl SeatSet {
    pub const EMPTY: SeatSet = SeatSet(0);

    pub fn single(seat: Seat) -> Self {
        SeatSet(1 << seat)
    }

    /// Seats `0..n`.
    pub fn first(n: u8) -> Self {
        SeatSet(((1u16 << n) - 1) as u8)
    }

    pub fn contains(self, seat: Seat) -> bool {
        seat < 8 && self.0 & (1 << seat) != 0
    }

    pub fn insert(&mut self, seat: Seat) {
        self.0 |= 1 << seat;
    }

    pub fn remove(&mut self, seat: Seat) {
        self.0 &= !(1 << seat);
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    pub fn iter(self) -> impl Iterator<Item = Seat> {
        (0..8).filter(move |s| self.contains(*s))
    }

    pub fn bits(self) -> u8 {
        self.0
    }
}

impl FromIterator<Seat> for SeatSet {
    fn from_iter<I: IntoIterator<Item = Seat>>(iter: I) -> Self {
        let mut set = SeatSet::EMPTY;
        for seat in iter {
            set.insert(seat);
        }
        set
    }
}

impl Debug for SeatSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

/// Who may see an observation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Audience {
    /// Everyone, spectators included.
    Everyone,
    /// Only these seats.
    Seats(SeatSet),
}

impl Audience {
    pub fn seat(seat: Seat) -> Self {
        Audience::Seats(SeatSet::single(seat))
    }

    pub fn includes(self, viewer: Viewer) -> bool {
        match (self, viewer) {
            (Audience::Everyone, _) => true,
            (Audience::Seats(set), Viewer::Seat(seat)) => set.contains(seat),
            (Audience::Seats(_), Viewer::Spectator) => false,
        }
    }
}

/// Something that happened, tagged with who may learn of it. A seat's history is exactly the
/// observations whose audience includes it, in order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observation<E> {
    pub audience: Audience,
    pub event: E,
}

impl<E> Observation<E> {
    pub fn public(event: E) -> Self {
        Observation {
            audience: Audience::Everyone,
            event,
        }
    }

    pub fn to_seat(seat: Seat, event: E) -> Self {
        Observation {
            audience: Audience::seat(seat),
            event,
        }
    }

    pub fn to_seats(seats: SeatSet, event: E) -> Self {
        Observation {
            audience: Audience::Seats(seats),
            event,
        }
    }
}

/// How a finished match ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    /// Every winner; a tie gives several.
    pub winners: SeatSet,
    /// Each seat's final score in the game's own unit (tokens, points, hands won), by seat.
    pub scores: Vec<i32>,
}

/// A match could not be set up.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    #[error("{game} takes {min} to {max} players, not {got}")]
    SeatCount {
        game: &'static str,
        min: u8,
        max: u8,
        got: u8,
    },
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    #[error(
        "{game} rules version {version} is not run here (this engine runs {oldest} to {newest})"
    )]
    RulesVersion {
        game: &'static str,
        version: u32,
        oldest: u32,
        newest: u32,
    },
}

impl SetupError {
    /// The check every game's setup starts with: `seats` must lie in the game's
    /// [`Game::seat_range`] under `config`.
    pub fn check_seats<G: Game>(config: &G::Config, seats: u8) -> Result<(), SetupError> {
        let range = G::seat_range(config);
        if range.contains(&seats) {
            Ok(())
        } else {
            Err(SetupError::SeatCount {
                game: G::KIND,
                min: *range.start(),
                max: *range.end(),
                got: seats,
            })
        }
    }
}

/// A refused action. `code` is a stable kebab-case id of the rule that forbids it
/// (`countess-must-be-played`), for clients to branch on; `Display` explains it to a person.
/// Neither may reveal anything the acting seat may not know.
pub trait GameError: std::error::Error + Clone + PartialEq + Send + Sync + 'static {
    fn code(&self) -> &'static str;
}

/// Where [`Game::apply_into`] puts the observations of an action: a `Vec` keeps them, [`Discard`]
/// drops them. An engine asks [`Record::KEEPS`] (or calls [`Record::push_with`]) before building
/// an observation, so a replay that throws them away does not pay for building them.
pub trait Record<E> {
    /// Whether pushed observations are kept.
    const KEEPS: bool;

    fn push(&mut self, observation: Observation<E>);

    /// Room for `additional` more observations, where that means anything.
    #[inline]
    fn reserve(&mut self, _additional: usize) {}

    /// Pushes what `make` builds, calling it only if observations are kept.
    #[inline]
    fn push_with(&mut self, make: impl FnOnce() -> Observation<E>) {
        if Self::KEEPS {
            self.push(make());
        }
    }
}

impl<E> Record<E> for Vec<Observation<E>> {
    const KEEPS: bool = true;

    #[inline]
    fn push(&mut self, observation: Observation<E>) {
        Vec::push(self, observation);
    }

    #[inline]
    fn reserve(&mut self, additional: usize) {
        Vec::reserve(self, additional);
    }
}

/// A [`Record`] that keeps nothing: for replays, which need the state and not what the table
/// was told.
#[derive(Clone, Copy, Debug, Default)]
pub struct Discard;

impl<E> Record<E> for Discard {
    const KEEPS: bool = false;

    #[inline]
    fn push(&mut self, _: Observation<E>) {}
}

/// A game's rules. Implementations are pure: `apply` validates and applies in one step, and on
/// error leaves the state exactly as it was.
pub trait Game:
    Clone + Debug + PartialEq + Serialize + DeserializeOwned + Send + Sync + 'static
{
    /// Stable id of the game, persisted with every match (`love-letter`).
    const KIND: &'static str;
    /// The rules a new match is created under. A change that would make an old log replay
    /// differently, or an old serialised state read differently, ships as a new version: the
    /// engine keeps running the old ones (see [`Game::setup_under`]) and every match is
    /// replayed, viewed and played under the version it was created with.
    const RULES_VERSION: u32;
    /// The oldest rules version this engine still runs.
    const OLDEST_RULES_VERSION: u32 = Self::RULES_VERSION;

    type Config: Clone + Debug + Default + PartialEq + Serialize + DeserializeOwned + Send + Sync;
    type Action: Clone + Debug + PartialEq + Serialize + DeserializeOwned + Send + Sync;
    /// The payload of an observation.
    type Event: Clone + Debug + PartialEq + Serialize + DeserializeOwned + Send + Sync;
    /// What one viewer may see of the state.
    type View: Clone + Debug + PartialEq + Serialize + Send + Sync;
    type Error: GameError;

    /// How many seats the game takes under `config`.
    fn seat_range(config: &Self::Config) -> RangeInclusive<u8>;

    /// A new match for `seats` players, all randomness drawn from `seed`, under the newest
    /// rules, [`Game::RULES_VERSION`].
    fn setup(config: &Self::Config, seats: u8, seed: Seed) -> Result<Self, SetupError>;

    /// Whether this engine runs rules `version`.
    fn runs(version: u32) -> bool {
        (Self::OLDEST_RULES_VERSION..=Self::RULES_VERSION).contains(&version)
    }

    /// A new match under rules `version`, which the state keeps for the rest of the match: its
    /// `apply` follows that version's rules. An engine that runs more than one version
    /// overrides this; the default runs only [`Game::RULES_VERSION`].
    fn setup_under(
        config: &Self::Config,
        seats: u8,
        seed: Seed,
        version: u32,
    ) -> Result<Self, SetupError> {
        if version == Self::RULES_VERSION {
            Self::setup(config, seats, seed)
        } else {
            Err(SetupError::RulesVersion {
                game: Self::KIND,
                version,
                oldest: Self::OLDEST_RULES_VERSION,
                newest: Self::RULES_VERSION,
            })
        }
    }

    /// What setup itself told the table (a first deal, a first draw), as observations, for a
    /// state fresh from [`Game::setup`]. Histories start with these. Empty by default.
    fn setup_observations(&self) -> Vec<Observation<Self::Event>> {
        Vec::new()
    }

    /// The number of seats.
    fn seats(&self) -> u8;

    /// The seats whose action the game waits for now (one, or several at once, as in a vote).
    /// Empty once the match is over. A seat outside this set may still have optional legal
    /// actions where the rules allow acting out of turn.
    fn awaiting(&self) -> SeatSet;

    /// Every action `seat` may legally take now. Each one is accepted by `apply`.
    fn legal_actions(&self, seat: Seat) -> Vec<Self::Action>;

    /// Every action `seat` may legally take now, appended to `out`: the same actions in the
    /// same order as [`Game::legal_actions`], for callers that reuse one buffer.
    fn legal_actions_into(&self, seat: Seat, out: &mut Vec<Self::Action>) {
        out.extend(self.legal_actions(seat));
    }

    /// Validate and apply. On `Err` the state is unchanged.
    fn apply(
        &mut self,
        seat: Seat,
        action: &Self::Action,
    ) -> Result<Vec<Observation<Self::Event>>, Self::Error>;

    /// [`Game::apply`], with the observations pushed to `out` instead of returned: the same
    /// observations in the same order, and none on `Err`. An engine overrides this to build
    /// no observation when `out` keeps none.
    fn apply_into<R: Record<Self::Event>>(
        &mut self,
        seat: Seat,
        action: &Self::Action,
        out: &mut R,
    ) -> Result<(), Self::Error> {
        for observation in self.apply(seat, action)? {
            out.push(observation);
        }
        Ok(())
    }

    /// [`Game::apply`] for a replay, which needs only the state: the same state afterwards,
    /// the same refusals, no observations.
    fn replay(&mut self, seat: Seat, action: &Self::Action) -> Result<(), Self::Error> {
        self.apply_into(seat, action, &mut Discard)
    }

    /// What `viewer` may see now: a seat its own secrets and everything public; a spectator
    /// only what is public.
    fn view(&self, viewer: Viewer) -> Self::View;

    /// `Some` once the match is over.
    fn outcome(&self) -> Option<Outcome>;

    /// The action a turn timeout plays for an awaited seat (`None` if the seat is not awaited).
    fn default_action(&self, seat: Seat) -> Option<Self::Action>;
}
