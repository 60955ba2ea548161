//! The Amori e Intrighi state machine and its [`Game`] impl: setup, who decides, legal and
//! default actions, `apply`, views and scoring. The turn's steps (visits, location actions,
//! intrigues, gentleman decks, event cards, reactions) are in `steps`; marriages and the ends
//! of turns, of the final round and of the match in `marriage`. Reads the edition's numbers
//! from [`super::data`].

mod marriage;
mod steps;

use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};

use crate::core::{
    Audience, Game, Observation, Outcome, Record, Seat, SeatSet, SetupError, Viewer,
};
use crate::fixed::{Blank, FixedVec};
use crate::rng::{GameRng, Seed};

use super::cards::{CardId, DaughterId, EventCardId, GentlemanId};
use super::data::{
    Attribute, Attributes, CARDS_PER_GENTLEMAN, CARDS_TO_MARRY, CASANOVA_LOSS, DAUGHTERS,
    DAUGHTERS_PER_PLAYER, DRINK_LOSS, Die, DieFace, EventEffect, GENTLEMEN, HAND_LIMIT, Location,
    LocationStep, MAX_SUITORS, MEDAL_POINTS, STARTING_EVENT_CARDS, event_card_count,
    gentleman_card_count, largest_location_deck,
};
use super::error::Error;
use super::types::{
    Action, ActiveDaughter, Bride, Config, DeckSize, Event, LocationDeckView, Medal, Phase,
    PlayerView, Scoring, SeatSetup, View,
};

type Obs = Vec<Observation<Event>>;

/// The most seats at the table.
const MAX_SEATS: usize = 4;
/// Every card of one gentleman.
const PER_GENTLEMAN: usize = CARDS_PER_GENTLEMAN as usize;

// Every list of the state is kept inline, each within a bound the rules keep, so playing never
// allocates and neither does cloning a state.

/// A pile of gentleman cards: never more than the box holds.
type Cards = FixedVec<CardId, { gentleman_card_count() }>;
/// A location's gentleman deck: never more than the largest deals at setup.
type Deck = FixedVec<CardId, { largest_location_deck() }>;
/// A daughter's suitors: at most [`MAX_SUITORS`] gentlemen, each with at most all his cards.
type Suitors = FixedVec<CardId, { MAX_SUITORS * PER_GENTLEMAN }>;
/// Cards of one gentleman: never more than he has.
type HisCards = FixedVec<CardId, PER_GENTLEMAN>;
/// Distinct gentlemen: never more than the table lists.
type Gentlemen = FixedVec<GentlemanId, { GENTLEMEN.len() }>;
/// A pile of event cards: never more than the box holds.
type EventCards = FixedVec<EventCardId, { event_card_count() }>;
/// An event hand: the limit, and the card drawn before discarding down to it.
type Hand = FixedVec<EventCardId, { HAND_LIMIT + 1 }>;

/// The daughter in play: an [`ActiveDaughter`] with her suitors inline. Reads and writes as
/// one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Daughter {
    pub(super) daughter: DaughterId,
    pub(super) attributes: Attributes,
    /// Her gentleman cards, face up, in the order they came.
    pub(super) suitors: Suitors,
}

impl Daughter {
    /// `daughter` turned face up, at her starting values and with no suitor.
    fn revealed(daughter: DaughterId) -> Self {
        Daughter {
            daughter,
            attributes: daughter.data().start,
            suitors: Suitors::new(),
        }
    }

    /// Takes every card of `gentleman` from her suitors, in the order they came.
    fn part_with(&mut self, gentleman: GentlemanId) -> HisCards {
        take_his(&mut self.suitors, gentleman)
    }

    fn view(&self) -> ActiveDaughter {
        ActiveDaughter {
            daughter: self.daughter,
            attributes: self.attributes,
            suitors: self.suitors.to_vec(),
        }
    }
}

/// Takes every card of `gentleman` out of `pile`, in order.
fn take_his<const N: usize>(pile: &mut FixedVec<CardId, N>, gentleman: GentlemanId) -> HisCards {
    let his = pile
        .iter()
        .copied()
        .filter(|c| c.gentleman() == gentleman)
        .collect();
    pile.retain(|c| c.gentleman() != gentleman);
    his
}

/// One player's table: daughters, pawn, event cards.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Player {
    pub(super) active: Option<Daughter>,
    /// Face-down daughters, the next to turn up first.
    pub(super) face_down: FixedVec<DaughterId, { DAUGHTERS_PER_PLAYER - 1 }>,
    pub(super) brides: FixedVec<Bride, DAUGHTERS_PER_PLAYER>,
    pub(super) location: Option<Location>,
    pub(super) hand: Hand,
    pub(super) kept: EventCards,
}

impl Blank for Bride {
    const BLANK: Self = Bride {
        daughter: DaughterId::BLANK,
        attributes: Attributes::new(0, 0, 0),
        husband: GentlemanId::BLANK,
        kept: CardId::BLANK,
    };
}

impl Blank for Player {
    const BLANK: Self = Player {
        active: None,
        face_down: FixedVec::new(),
        brides: FixedVec::new(),
        location: None,
        hand: FixedVec::new(),
        kept: FixedVec::new(),
    };
}

/// The step of the current player's turn to return to once a nested decision (a gentleman
/// choice, a suitor limit, a reaction, intrigue spoils) is settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) enum Resume {
    Visit,
    ActionOrIntrigue(Location),
    Events,
}

impl Resume {
    fn phase(self) -> Phase {
        match self {
            Resume::Visit => Phase::Visit,
            Resume::ActionOrIntrigue(location) => Phase::ActionOrIntrigue { location },
            Resume::Events => Phase::Events,
        }
    }
}

/// A match of Amori e Intrighi. See the module documentation for the rules as implemented.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Amori {
    pub(super) seats: u8,
    pub(super) rng: GameRng,
    pub(super) starting_player: Seat,
    pub(super) current: Seat,
    pub(super) turn: u32,
    pub(super) players: FixedVec<Player, MAX_SEATS>,
    /// Face-down gentleman decks, by [`Location::index`]; the last card is the top.
    pub(super) location_decks: [Deck; Location::ALL.len()],
    /// The last card is the top.
    pub(super) main_deck: Cards,
    pub(super) gentleman_discard: Cards,
    pub(super) retired: Cards,
    pub(super) removed: Cards,
    /// Daughter boards nobody was dealt: stay in the box, unseen.
    pub(super) unused_daughters: FixedVec<DaughterId, { DAUGHTERS.len() }>,
    pub(super) event_deck: EventCards,
    pub(super) event_discard: EventCards,
    pub(super) phase: Phase,
    pub(super) resume: Resume,
    pub(super) married_this_turn: bool,
    pub(super) final_round: bool,
}

fn tables_ok() -> bool {
    // The rules rely on these shapes of the data; setup refuses a table that breaks them.
    super::data::LOCATIONS
        .iter()
        .enumerate()
        .all(|(i, l)| l.location.index() == i)
        && DAUGHTERS.len() >= MAX_SEATS * DAUGHTERS_PER_PLAYER
}

impl Game for Amori {
    const KIND: &'static str = "amori-e-intrighi";
    const RULES_VERSION: u32 = 1;

    type Config = Config;
    type Action = Action;
    type Event = Event;
    type View = View;
    type Error = Error;

    fn seat_range(_config: &Config) -> RangeInclusive<u8> {
        2..=MAX_SEATS as u8
    }

    fn setup(config: &Config, seats: u8, seed: Seed) -> Result<Self, SetupError> {
        SetupError::check_seats::<Self>(config, seats)?;
        if let Some(first) = config.starting_player
            && first >= seats
        {
            return Err(SetupError::InvalidConfig(format!(
                "starting player {first} is not one of the {seats} seats"
            )));
        }
        if !tables_ok() {
            return Err(SetupError::InvalidConfig(
                "the edition's tables are inconsistent".into(),
            ));
        }
        let mut rng = GameRng::new(seed);

        let mut event_deck: Vec<EventCardId> = EventCardId::all().collect();
        rng.shuffle(&mut event_deck);

        let mut daughters: Vec<DaughterId> = DaughterId::all().collect();
        rng.shuffle(&mut daughters);

        let mut players = FixedVec::new();
        for _ in 0..seats {
            let mut dealt: Vec<DaughterId> = daughters.drain(..DAUGHTERS_PER_PLAYER).collect();
            let first = dealt.remove(0);
            let mut hand = Hand::new();
            for _ in 0..STARTING_EVENT_CARDS {
                if let Some(card) = event_deck.pop() {
                    hand.push(card);
                }
            }
            players.push(Player {
                active: Some(Daughter::revealed(first)),
                face_down: dealt.into_iter().collect(),
                brides: FixedVec::new(),
                location: None,
                hand,
                kept: FixedVec::new(),
            });
        }

        let (mut main_deck, removed): (Vec<CardId>, Vec<CardId>) =
            CardId::all().partition(|c| seats > 2 || !c.gentleman().data().brown);
        rng.shuffle(&mut main_deck);
        let mut location_decks = [Deck::new(); Location::ALL.len()];
        for location in Location::ALL {
            let take = location.data().deck_size.min(main_deck.len());
            let deck = main_deck.split_off(main_deck.len() - take);
            location_decks[location.index()].extend_from_slice(&deck);
        }

        let starting_player = match config.starting_player {
            Some(seat) => seat,
            None => rng.below(u32::from(seats)) as Seat,
        };

        Ok(Amori {
            seats,
            rng,
            starting_player,
            current: starting_player,
            turn: 1,
            players,
            location_decks,
            main_deck: main_deck.into_iter().collect(),
            gentleman_discard: Cards::new(),
            retired: Cards::new(),
            removed: removed.into_iter().collect(),
            unused_daughters: daughters.into_iter().collect(),
            event_deck: event_deck.into_iter().collect(),
            event_discard: EventCards::new(),
            phase: Phase::Visit,
            resume: Resume::Visit,
            married_this_turn: false,
            final_round: false,
        })
    }

    /// The public layout of the table, then each seat's opening hand to that seat alone, then
    /// the first turn.
    fn setup_observations(&self) -> Obs {
        let seats = self
            .players
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                let d = p.active.as_ref()?;
                Some(SeatSetup {
                    seat: i as Seat,
                    daughter: d.daughter,
                    attributes: d.attributes,
                    face_down: p.face_down.len(),
                    hand_size: p.hand.len(),
                })
            })
            .collect();
        let location_decks = Location::ALL
            .iter()
            .map(|&location| DeckSize {
                location,
                size: self.location_decks[location.index()].len(),
            })
            .collect();
        let mut obs = vec![Observation::public(Event::SetUp {
            starting_player: self.starting_player,
            seats,
            location_decks,
            main_deck_size: self.main_deck.len(),
            event_deck_size: self.event_deck.len(),
            removed: self.removed.to_vec(),
        })];
        for (i, p) in self.players.iter().enumerate() {
            let seat = i as Seat;
            obs.push(Observation::to_seat(
                seat,
                Event::HandDealt {
                    seat,
                    cards: p.hand.to_vec(),
                },
            ));
        }
        obs.push(Observation::public(Event::TurnStarted {
            seat: self.current,
            turn: self.turn,
        }));
        obs
    }

    fn seats(&self) -> u8 {
        self.seats
    }

    fn awaiting(&self) -> SeatSet {
        match self.decider() {
            Some(seat) => SeatSet::single(seat),
            None => SeatSet::EMPTY,
        }
    }

    fn legal_actions(&self, seat: Seat) -> Vec<Action> {
        let mut actions = Vec::new();
        self.legal_actions_into(seat, &mut actions);
        actions
    }

    fn legal_actions_into(&self, seat: Seat, actions: &mut Vec<Action>) {
        if self.decider() != Some(seat) {
            return;
        }
        match &self.phase {
            Phase::Visit => {
                let here = self.players[usize::from(seat)].location;
                for location in Location::ALL {
                    if Some(location) != here {
                        actions.push(Action::Visit { location });
                    }
                }
                if let Some(here) = here {
                    for target in self.intrigue_targets(seat, here).iter() {
                        actions.push(Action::Intrigue { target });
                    }
                }
                self.event_plays(seat, actions);
            }
            Phase::ActionOrIntrigue { location } => {
                let choices = choice_options(*location);
                if choices.is_empty() {
                    actions.push(Action::LocationAction { choice: None });
                } else {
                    for &choice in choices {
                        actions.push(Action::LocationAction {
                            choice: Some(choice),
                        });
                    }
                }
                for target in self.intrigue_targets(seat, *location).iter() {
                    actions.push(Action::Intrigue { target });
                }
                self.event_plays(seat, actions);
            }
            Phase::ChooseGentleman { location, .. } => {
                let mut cards = self.location_decks[location.index()];
                cards.sort_unstable();
                actions.extend(cards.iter().map(|&card| Action::Take { card }));
            }
            Phase::IntrigueSpoils { victim, .. } => {
                if let Some(d) = &self.players[usize::from(*victim)].active {
                    actions.extend(d.suitors.iter().map(|&card| Action::Take { card }));
                }
            }
            Phase::SuitorLimit { seat, .. } => {
                for &gentleman in self.suitor_gentlemen(*seat).iter() {
                    actions.push(Action::GiveUp { gentleman });
                }
            }
            Phase::Reaction { .. } => {
                actions.push(Action::Pass);
                for &card in self.players[usize::from(seat)].hand.iter() {
                    if card.kind().data().effect.is_reaction() {
                        actions.push(Action::React { card });
                    }
                }
            }
            Phase::Events => {
                actions.push(Action::EndTurn);
                self.event_plays(seat, actions);
            }
            Phase::Discard { .. } => {
                for &card in self.players[usize::from(seat)].hand.iter() {
                    actions.push(Action::Discard { card });
                }
            }
            Phase::Over => {}
        }
    }

    fn apply(&mut self, seat: Seat, action: &Action) -> Result<Obs, Error> {
        let mut obs = Vec::new();
        self.apply_into(seat, action, &mut obs)?;
        Ok(obs)
    }

    fn apply_into<R: Record<Event>>(
        &mut self,
        seat: Seat,
        action: &Action,
        obs: &mut R,
    ) -> Result<(), Error> {
        if seat >= self.seats {
            return Err(Error::NoSuchSeat(seat));
        }
        if self.phase == Phase::Over {
            return Err(Error::MatchOver);
        }
        if self.decider() != Some(seat) {
            return Err(Error::NotYourTurn);
        }
        // Every arm of `act` finishes its checks before it changes anything, so a refusal
        // leaves the state untouched without the cost of working on a copy (the property
        // tests try refused actions throughout random games and compare states).
        self.act(seat, action, obs)
    }

    fn view(&self, viewer: Viewer) -> View {
        let players = self
            .players
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let seat = i as Seat;
                PlayerView {
                    seat,
                    active: p.active.as_ref().map(Daughter::view),
                    location: p.location,
                    face_down: p.face_down.len(),
                    brides: p.brides.to_vec(),
                    hand_size: p.hand.len(),
                    hand: (viewer == Viewer::Seat(seat)).then(|| p.hand.to_vec()),
                    kept_for_points: p.kept.to_vec(),
                }
            })
            .collect();
        let shown = match self.phase {
            Phase::ChooseGentleman { seat, location } if viewer == Viewer::Seat(seat) => {
                Some(location)
            }
            _ => None,
        };
        let location_decks = Location::ALL
            .iter()
            .map(|&location| {
                let deck = &self.location_decks[location.index()];
                LocationDeckView {
                    location,
                    size: deck.len(),
                    cards: (shown == Some(location)).then(|| sorted(deck)),
                }
            })
            .collect();
        let over = self.phase == Phase::Over;
        View {
            viewer,
            seats: self.seats,
            starting_player: self.starting_player,
            current: self.current,
            turn: self.turn,
            phase: self.phase.clone(),
            awaiting: self.awaiting(),
            players,
            location_decks,
            main_deck_size: self.main_deck.len(),
            gentleman_discard: self.gentleman_discard.to_vec(),
            retired: self.retired.to_vec(),
            removed: self.removed.to_vec(),
            event_deck_size: self.event_deck.len(),
            event_discard: self.event_discard.to_vec(),
            final_round: self.final_round,
            scoring: over.then(|| self.scoring()),
            outcome: self.outcome(),
        }
    }

    fn outcome(&self) -> Option<Outcome> {
        if self.phase != Phase::Over {
            return None;
        }
        let scoring = self.scoring();
        let best = scoring.totals.iter().copied().max().unwrap_or(0);
        let winners = (0..self.seats)
            .filter(|&s| scoring.totals[usize::from(s)] == best)
            .collect();
        Some(Outcome {
            winners,
            scores: scoring.totals,
        })
    }

    fn default_action(&self, seat: Seat) -> Option<Action> {
        // `legal_actions` lists the timeout's choice first in every phase: the first location
        // in board order, the location action (first choice), the first card, giving up the
        // first suitor, passing, ending the turn, discarding the first card.
        self.legal_actions(seat).into_iter().next()
    }
}

fn sorted(cards: &[CardId]) -> Vec<CardId> {
    let mut cards = cards.to_vec();
    cards.sort();
    cards
}

/// The attributes a location's choice box offers (none when it has no such box).
fn choice_options(location: Location) -> &'static [Attribute] {
    location
        .data()
        .steps
        .iter()
        .find_map(|step| match step {
            LocationStep::GainOneOf(options, _) => Some(*options),
            _ => None,
        })
        .unwrap_or(&[])
}

impl Amori {
    /// The seat whose decision the game waits for.
    fn decider(&self) -> Option<Seat> {
        match self.phase {
            Phase::Visit | Phase::ActionOrIntrigue { .. } | Phase::Events => Some(self.current),
            Phase::ChooseGentleman { seat, .. } => Some(seat),
            Phase::IntrigueSpoils { taker, .. } => Some(taker),
            Phase::SuitorLimit { seat, .. } => Some(seat),
            Phase::Reaction { target, .. } => Some(target),
            Phase::Discard { seat } => Some(seat),
            Phase::Over => None,
        }
    }

    /// The current scores and medals (final once the match is over).
    pub fn scoring(&self) -> Scoring {
        let families: Vec<Attributes> = self
            .players
            .iter()
            .map(|p| {
                let mut total = Attributes::default();
                let boards = p
                    .brides
                    .iter()
                    .map(|b| b.attributes)
                    .chain(p.active.iter().map(|d| d.attributes))
                    .chain(p.face_down.iter().map(|d| d.data().start));
                for board in boards {
                    total.reputation += board.reputation;
                    total.beauty += board.beauty;
                    total.education += board.education;
                }
                total
            })
            .collect();
        let medals: Vec<Medal> = Attribute::ALL
            .iter()
            .map(|&attribute| {
                let best = families.iter().map(|f| f.get(attribute)).max().unwrap_or(0);
                let leaders: Vec<usize> = (0..families.len())
                    .filter(|&i| families[i].get(attribute) == best)
                    .collect();
                Medal {
                    attribute,
                    winner: (leaders.len() == 1).then(|| leaders[0] as Seat),
                }
            })
            .collect();
        let marriage_points: Vec<u8> = self
            .players
            .iter()
            .map(|p| {
                p.brides
                    .iter()
                    .map(|b| b.husband.data().victory_points)
                    .sum()
            })
            .collect();
        let event_points: Vec<u8> = self
            .players
            .iter()
            .map(|p| {
                p.kept
                    .iter()
                    .map(|c| match c.kind().data().effect {
                        EventEffect::KeepForPoints(vp) => vp,
                        _ => 0,
                    })
                    .sum()
            })
            .collect();
        let totals = (0..self.players.len())
            .map(|i| {
                let medal_points = medals
                    .iter()
                    .filter(|m| m.winner == Some(i as Seat))
                    .count() as i32
                    * i32::from(MEDAL_POINTS);
                i32::from(marriage_points[i]) + i32::from(event_points[i]) + medal_points
            })
            .collect();
        Scoring {
            families,
            medals,
            marriage_points,
            event_points,
            totals,
        }
    }

    fn player(&self, seat: Seat) -> &Player {
        &self.players[usize::from(seat)]
    }

    fn player_mut(&mut self, seat: Seat) -> &mut Player {
        &mut self.players[usize::from(seat)]
    }

    fn has_suitors(&self, seat: Seat) -> bool {
        self.player(seat)
            .active
            .as_ref()
            .is_some_and(|d| !d.suitors.is_empty())
    }

    /// Seats whose daughter `seat` may intrigue against at `location`.
    fn intrigue_targets(&self, seat: Seat, location: Location) -> SeatSet {
        if !location.data().intrigue_allowed || !self.has_suitors(seat) {
            return SeatSet::EMPTY;
        }
        (0..self.seats)
            .filter(|&t| {
                t != seat && self.player(t).location == Some(location) && self.has_suitors(t)
            })
            .collect()
    }

    /// The distinct gentlemen whose cards `seat`'s daughter holds, in the order they came.
    fn suitor_gentlemen(&self, seat: Seat) -> Gentlemen {
        let mut out = Gentlemen::new();
        if let Some(d) = &self.player(seat).active {
            for card in d.suitors.iter() {
                if !out.contains(&card.gentleman()) {
                    out.push(card.gentleman());
                }
            }
        }
        out
    }

    fn is_married(&self, gentleman: GentlemanId) -> bool {
        self.players
            .iter()
            .any(|p| p.brides.iter().any(|b| b.husband == gentleman))
    }

    /// Whether the main deck (or the discards that would become it) can yield a card.
    fn main_deck_may_yield(&self) -> bool {
        !self.main_deck.is_empty() || !self.gentleman_discard.is_empty()
    }

    fn event_plays(&self, seat: Seat, actions: &mut Vec<Action>) {
        let Some(me) = &self.player(seat).active else {
            return;
        };
        for &card in self.player(seat).hand.iter() {
            let play = |target, location| Action::PlayEvent {
                card,
                target,
                location,
            };
            match card.kind().data().effect {
                EventEffect::Raise(..) | EventEffect::KeepForPoints(_) => {
                    actions.push(play(None, None));
                }
                EventEffect::LoveLetter => {
                    if self.main_deck_may_yield() {
                        actions.push(play(None, None));
                    }
                }
                EventEffect::BallInvitation => {
                    for location in Location::ALL {
                        if !self.location_decks[location.index()].is_empty() {
                            actions.push(play(None, Some(location)));
                        }
                    }
                }
                EventEffect::Lower(..) | EventEffect::RollAgainst(_) => {
                    for target in 0..self.seats {
                        if target != seat && self.player(target).active.is_some() {
                            actions.push(play(Some(target), None));
                        }
                    }
                }
                EventEffect::IntrigueByLetter => {
                    if me.suitors.is_empty() {
                        continue;
                    }
                    for target in 0..self.seats {
                        if self.letter_target_ok(seat, target) {
                            actions.push(play(Some(target), None));
                        }
                    }
                }
                EventEffect::Chaperone => {}
            }
        }
    }

    fn letter_target_ok(&self, seat: Seat, target: Seat) -> bool {
        target != seat
            && target < self.seats
            && self.has_suitors(seat)
            && self.has_suitors(target)
            && self
                .player(target)
                .location
                .is_some_and(|l| l.data().intrigue_allowed)
    }
}
