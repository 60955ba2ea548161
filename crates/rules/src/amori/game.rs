//! The Amori e Intrighi state machine: setup, the turn's steps, suitor limits, reactions,
//! marriages, the final round and scoring. Reads the edition's numbers from [`super::data`].

use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};

use crate::core::{Audience, Game, Observation, Outcome, Seat, SeatSet, SetupError, Viewer};
use crate::rng::{GameRng, Seed};

use super::data::{
    Attribute, Attributes, CARDS_TO_MARRY, CASANOVA_LOSS, DAUGHTERS_PER_PLAYER, DRINK_LOSS, Die,
    DieFace, EventEffect, HAND_LIMIT, Location, LocationStep, MAX_SUITORS, MEDAL_POINTS,
    STARTING_EVENT_CARDS,
};
use super::ids::{CardId, DaughterId, EventCardId, GentlemanId};
use super::types::{
    Action, ActiveDaughter, Bride, Config, DeckSize, Error, Event, LocationDeckView, Medal, Phase,
    PlayerView, Scoring, SeatSetup, View,
};

type Obs = Vec<Observation<Event>>;

/// One player's table: daughters, pawn, event cards.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Player {
    pub(super) active: Option<ActiveDaughter>,
    /// Face-down daughters, the next to turn up first.
    pub(super) face_down: Vec<DaughterId>,
    pub(super) brides: Vec<Bride>,
    pub(super) location: Option<Location>,
    pub(super) hand: Vec<EventCardId>,
    pub(super) kept: Vec<EventCardId>,
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
    pub(super) players: Vec<Player>,
    /// Face-down gentleman decks, by [`Location::index`]; the last card is the top.
    pub(super) location_decks: Vec<Vec<CardId>>,
    /// The last card is the top.
    pub(super) main_deck: Vec<CardId>,
    pub(super) gentleman_discard: Vec<CardId>,
    pub(super) retired: Vec<CardId>,
    pub(super) removed: Vec<CardId>,
    /// Daughter boards nobody was dealt: stay in the box, unseen.
    pub(super) unused_daughters: Vec<DaughterId>,
    pub(super) event_deck: Vec<EventCardId>,
    pub(super) event_discard: Vec<EventCardId>,
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
        && super::data::DAUGHTERS.len() >= 4 * DAUGHTERS_PER_PLAYER
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
        2..=4
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

        let mut players = Vec::with_capacity(usize::from(seats));
        for _ in 0..seats {
            let mut dealt: Vec<DaughterId> = daughters.drain(..DAUGHTERS_PER_PLAYER).collect();
            let first = dealt.remove(0);
            let mut hand = Vec::new();
            for _ in 0..STARTING_EVENT_CARDS {
                if let Some(card) = event_deck.pop() {
                    hand.push(card);
                }
            }
            players.push(Player {
                active: Some(ActiveDaughter {
                    daughter: first,
                    attributes: first.data().start,
                    suitors: Vec::new(),
                }),
                face_down: dealt,
                brides: Vec::new(),
                location: None,
                hand,
                kept: Vec::new(),
            });
        }

        let (mut main_deck, removed): (Vec<CardId>, Vec<CardId>) =
            CardId::all().partition(|c| seats > 2 || !c.gentleman().data().brown);
        rng.shuffle(&mut main_deck);
        let mut location_decks = Vec::with_capacity(Location::ALL.len());
        for location in Location::ALL {
            let take = location.data().deck_size.min(main_deck.len());
            let deck = main_deck.split_off(main_deck.len() - take);
            location_decks.push(deck);
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
            main_deck,
            gentleman_discard: Vec::new(),
            retired: Vec::new(),
            removed,
            unused_daughters: daughters,
            event_deck,
            event_discard: Vec::new(),
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
            removed: self.removed.clone(),
        })];
        for (i, p) in self.players.iter().enumerate() {
            let seat = i as Seat;
            obs.push(Observation::to_seat(
                seat,
                Event::HandDealt {
                    seat,
                    cards: p.hand.clone(),
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
        if self.decider() != Some(seat) {
            return Vec::new();
        }
        let mut actions = Vec::new();
        match &self.phase {
            Phase::Visit => {
                let here = self.players[usize::from(seat)].location;
                for location in Location::ALL {
                    if Some(location) != here {
                        actions.push(Action::Visit { location });
                    }
                }
                if let Some(here) = here {
                    for target in self.intrigue_targets(seat, here) {
                        actions.push(Action::Intrigue { target });
                    }
                }
                self.event_plays(seat, &mut actions);
            }
            Phase::ActionOrIntrigue { location } => {
                let choices = choice_options(*location);
                if choices.is_empty() {
                    actions.push(Action::LocationAction { choice: None });
                } else {
                    for choice in choices {
                        actions.push(Action::LocationAction {
                            choice: Some(choice),
                        });
                    }
                }
                for target in self.intrigue_targets(seat, *location) {
                    actions.push(Action::Intrigue { target });
                }
                self.event_plays(seat, &mut actions);
            }
            Phase::ChooseGentleman { location, .. } => {
                let mut cards = self.location_decks[location.index()].clone();
                cards.sort();
                actions.extend(cards.into_iter().map(|card| Action::Take { card }));
            }
            Phase::IntrigueSpoils { victim, .. } => {
                if let Some(d) = &self.players[usize::from(*victim)].active {
                    actions.extend(d.suitors.iter().map(|&card| Action::Take { card }));
                }
            }
            Phase::SuitorLimit { seat, .. } => {
                for gentleman in self.suitor_gentlemen(*seat) {
                    actions.push(Action::GiveUp { gentleman });
                }
            }
            Phase::Reaction { .. } => {
                actions.push(Action::Pass);
                for &card in &self.players[usize::from(seat)].hand {
                    if card.kind().data().effect.is_reaction() {
                        actions.push(Action::React { card });
                    }
                }
            }
            Phase::Events => {
                actions.push(Action::EndTurn);
                self.event_plays(seat, &mut actions);
            }
            Phase::Discard { .. } => {
                for &card in &self.players[usize::from(seat)].hand {
                    actions.push(Action::Discard { card });
                }
            }
            Phase::Over => {}
        }
        actions
    }

    fn apply(&mut self, seat: Seat, action: &Action) -> Result<Obs, Error> {
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
        let mut obs = Vec::new();
        self.act(seat, action, &mut obs)?;
        Ok(obs)
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
                    active: p.active.clone(),
                    location: p.location,
                    face_down: p.face_down.len(),
                    brides: p.brides.clone(),
                    hand_size: p.hand.len(),
                    hand: (viewer == Viewer::Seat(seat)).then(|| p.hand.clone()),
                    kept_for_points: p.kept.clone(),
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
            gentleman_discard: self.gentleman_discard.clone(),
            retired: self.retired.clone(),
            removed: self.removed.clone(),
            event_deck_size: self.event_deck.len(),
            event_discard: self.event_discard.clone(),
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

/// The attributes a location's choice box offers (empty when it has none).
fn choice_options(location: Location) -> Vec<Attribute> {
    location
        .data()
        .steps
        .iter()
        .find_map(|step| match step {
            LocationStep::GainOneOf(options, _) => Some(options.to_vec()),
            _ => None,
        })
        .unwrap_or_default()
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
    fn intrigue_targets(&self, seat: Seat, location: Location) -> Vec<Seat> {
        if !location.data().intrigue_allowed || !self.has_suitors(seat) {
            return Vec::new();
        }
        (0..self.seats)
            .filter(|&t| {
                t != seat && self.player(t).location == Some(location) && self.has_suitors(t)
            })
            .collect()
    }

    /// The distinct gentlemen whose cards `seat`'s daughter holds, in the order they came.
    fn suitor_gentlemen(&self, seat: Seat) -> Vec<GentlemanId> {
        let mut out = Vec::new();
        if let Some(d) = &self.player(seat).active {
            for card in &d.suitors {
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
        for &card in &self.player(seat).hand {
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

    fn act(&mut self, seat: Seat, action: &Action, obs: &mut Obs) -> Result<(), Error> {
        match (self.phase.clone(), action) {
            (Phase::Visit, Action::Visit { location }) => {
                if self.player(seat).location == Some(*location) {
                    return Err(Error::MustMove);
                }
                self.player_mut(seat).location = Some(*location);
                obs.push(Observation::public(Event::Visited {
                    seat,
                    location: *location,
                }));
                self.phase = Phase::ActionOrIntrigue {
                    location: *location,
                };
                Ok(())
            }
            (Phase::Visit, Action::Intrigue { target }) => {
                let here = self.player(seat).location.ok_or(Error::NoIntrigue)?;
                self.intrigue(seat, *target, here, obs)
            }
            (Phase::ActionOrIntrigue { location }, Action::Intrigue { target }) => {
                self.intrigue(seat, *target, location, obs)
            }
            (Phase::ActionOrIntrigue { location }, Action::LocationAction { choice }) => {
                self.location_action(seat, location, *choice, obs)
            }
            (Phase::ChooseGentleman { location, .. }, Action::Take { card }) => {
                let deck = &mut self.location_decks[location.index()];
                let at = deck
                    .iter()
                    .position(|c| c == card)
                    .ok_or(Error::CardNotOffered)?;
                deck.remove(at);
                obs.push(Observation::public(Event::TookFromLocation {
                    seat,
                    location,
                    card: *card,
                }));
                if let Some(top) = self.draw_main(obs) {
                    self.location_decks[location.index()].push(top);
                    obs.push(Observation::public(Event::LocationDeckRefilled {
                        location,
                    }));
                }
                self.card_joins(seat, *card, obs);
                Ok(())
            }
            (Phase::IntrigueSpoils { taker, victim }, Action::Take { card }) => {
                let from = self
                    .player_mut(victim)
                    .active
                    .as_mut()
                    .ok_or(Error::CardNotOffered)?;
                let at = from
                    .suitors
                    .iter()
                    .position(|c| c == card)
                    .ok_or(Error::CardNotOffered)?;
                from.suitors.remove(at);
                obs.push(Observation::public(Event::TookFromRival {
                    seat: taker,
                    from: victim,
                    card: *card,
                }));
                self.card_joins(taker, *card, obs);
                Ok(())
            }
            (Phase::SuitorLimit { seat, incoming }, Action::GiveUp { gentleman }) => {
                if !self.suitor_gentlemen(seat).contains(gentleman) {
                    return Err(Error::NotASuitor);
                }
                let daughter = self
                    .player_mut(seat)
                    .active
                    .as_mut()
                    .ok_or(Error::NoDaughter)?;
                let (given, kept): (Vec<CardId>, Vec<CardId>) = daughter
                    .suitors
                    .iter()
                    .partition(|c| c.gentleman() == *gentleman);
                daughter.suitors = kept;
                obs.push(Observation::public(Event::GaveUp {
                    seat,
                    gentleman: *gentleman,
                    cards: given.clone(),
                }));
                self.gentleman_discard.extend(given);
                self.card_joins(seat, incoming, obs);
                Ok(())
            }
            (
                Phase::Reaction {
                    target,
                    card: hostile,
                    ..
                },
                Action::React { card },
            ) => {
                let hand = &mut self.players[usize::from(target)].hand;
                let at = hand
                    .iter()
                    .position(|c| c == card)
                    .ok_or(Error::CardNotInHand)?;
                if !card.kind().data().effect.is_reaction() {
                    return Err(Error::NotAReaction);
                }
                hand.remove(at);
                self.event_discard.push(hostile);
                self.event_discard.push(*card);
                obs.push(Observation::public(Event::Reacted {
                    seat: target,
                    card: *card,
                }));
                self.settle(obs);
                Ok(())
            }
            (
                Phase::Reaction {
                    attacker,
                    target,
                    card,
                },
                Action::Pass,
            ) => {
                obs.push(Observation::public(Event::Passed { seat: target }));
                self.event_discard.push(card);
                self.resolve_hostile(attacker, target, card, obs);
                Ok(())
            }
            (Phase::Events, Action::EndTurn) => {
                self.end_turn(obs);
                Ok(())
            }
            (
                Phase::Visit | Phase::ActionOrIntrigue { .. } | Phase::Events,
                Action::PlayEvent {
                    card,
                    target,
                    location,
                },
            ) => self.play_event(seat, *card, *target, *location, obs),
            (Phase::Discard { seat }, Action::Discard { card }) => {
                let hand = &mut self.players[usize::from(seat)].hand;
                let at = hand
                    .iter()
                    .position(|c| c == card)
                    .ok_or(Error::CardNotInHand)?;
                hand.remove(at);
                self.event_discard.push(*card);
                obs.push(Observation::public(Event::EventDiscarded {
                    seat,
                    card: *card,
                }));
                if self.player(seat).hand.len() <= HAND_LIMIT {
                    self.next_turn(obs);
                }
                Ok(())
            }
            _ => Err(Error::WrongPhase),
        }
    }

    fn resume_step(&self) -> Resume {
        match self.phase {
            Phase::ActionOrIntrigue { location } => Resume::ActionOrIntrigue(location),
            Phase::Events => Resume::Events,
            _ => Resume::Visit,
        }
    }

    /// A nested decision is settled: end the turn if a marriage happened, else go back to the
    /// step the current player was in.
    fn settle(&mut self, obs: &mut Obs) {
        if self.married_this_turn {
            self.end_turn(obs);
        } else {
            self.phase = self.resume.phase();
        }
    }

    fn intrigue(
        &mut self,
        seat: Seat,
        target: Seat,
        at: Location,
        obs: &mut Obs,
    ) -> Result<(), Error> {
        if target >= self.seats || target == seat {
            return Err(Error::InvalidTarget);
        }
        if !self.intrigue_targets(seat, at).contains(&target) {
            return Err(Error::NoIntrigue);
        }
        obs.push(Observation::public(Event::Intrigued { seat, target }));
        self.resume = Resume::Events;
        self.roll_intrigue(seat, target, obs);
        Ok(())
    }

    /// Roll the Intrigue die: the winner of the roll picks a card from the other daughter.
    fn roll_intrigue(&mut self, seat: Seat, target: Seat, obs: &mut Obs) {
        let face = self.roll(seat, Die::Intrigue, obs);
        self.phase = if face == DieFace::Clover {
            Phase::IntrigueSpoils {
                taker: seat,
                victim: target,
            }
        } else {
            Phase::IntrigueSpoils {
                taker: target,
                victim: seat,
            }
        };
    }

    fn roll(&mut self, seat: Seat, die: Die, obs: &mut Obs) -> DieFace {
        let faces = die.faces();
        let face = faces[self.rng.below(faces.len() as u32) as usize];
        obs.push(Observation::public(Event::Rolled { seat, die, face }));
        face
    }

    /// Roll Casanova or Drink for `seat`'s daughter and apply the face.
    fn roll_for(&mut self, seat: Seat, die: Die, obs: &mut Obs) {
        let face = self.roll(seat, die, obs);
        let Some(beauty) = self
            .player(seat)
            .active
            .as_ref()
            .map(|d| d.attributes.beauty)
        else {
            return;
        };
        match (die, face) {
            (Die::Casanova, face) if face.hat_beauty().is_some_and(|needed| beauty >= needed) => {
                self.adjust(seat, Attribute::Reputation, -(CASANOVA_LOSS as i8), obs);
            }
            (Die::Drink, DieFace::Bottle) => {
                self.adjust(seat, Attribute::Education, -(DRINK_LOSS as i8), obs);
            }
            _ => {}
        }
    }

    fn adjust(&mut self, seat: Seat, attribute: Attribute, delta: i8, obs: &mut Obs) {
        if let Some(d) = self.player_mut(seat).active.as_mut() {
            d.attributes.adjust(attribute, delta);
            let value = d.attributes.get(attribute);
            obs.push(Observation::public(Event::AttributeChanged {
                seat,
                attribute,
                value,
            }));
        }
        self.check_marriages(obs);
    }

    fn location_action(
        &mut self,
        seat: Seat,
        location: Location,
        choice: Option<Attribute>,
        obs: &mut Obs,
    ) -> Result<(), Error> {
        let options = choice_options(location);
        match choice {
            None if !options.is_empty() => return Err(Error::InvalidChoice),
            Some(c) if !options.contains(&c) => return Err(Error::InvalidChoice),
            _ => {}
        }
        self.resume = Resume::Events;
        for step in location.data().steps {
            match *step {
                LocationStep::Gain(attribute, n) => self.adjust(seat, attribute, n as i8, obs),
                LocationStep::GainOneOf(_, n) => {
                    if let Some(attribute) = choice {
                        self.adjust(seat, attribute, n as i8, obs);
                    }
                }
                LocationStep::Roll(die) => self.roll_for(seat, die, obs),
            }
            if self.married_this_turn {
                // A marriage ends the turn at once: the rest of the action is forgone.
                self.end_turn(obs);
                return Ok(());
            }
        }
        self.offer_location_deck(seat, location, obs);
        Ok(())
    }

    /// Reveal `location`'s deck to `seat` and ask for a card, or go on if there is none.
    fn offer_location_deck(&mut self, seat: Seat, location: Location, obs: &mut Obs) {
        self.reveal(location, obs);
        let deck = &self.location_decks[location.index()];
        if deck.is_empty() {
            self.settle(obs);
        } else {
            obs.push(Observation::to_seat(
                seat,
                Event::DeckShown {
                    location,
                    cards: sorted(deck),
                },
            ));
            self.phase = Phase::ChooseGentleman { seat, location };
        }
    }

    /// Cards of married gentlemen found in a revealed deck leave the game and are replaced.
    fn reveal(&mut self, location: Location, obs: &mut Obs) {
        loop {
            let deck = &self.location_decks[location.index()];
            let stale: Vec<CardId> = deck
                .iter()
                .copied()
                .filter(|c| self.is_married(c.gentleman()))
                .collect();
            if stale.is_empty() {
                return;
            }
            self.location_decks[location.index()].retain(|c| !stale.contains(c));
            obs.push(Observation::public(Event::GentlemenRetired {
                cards: stale.clone(),
            }));
            self.retired.extend(&stale);
            for _ in 0..stale.len() {
                if let Some(card) = self.draw_main(obs) {
                    self.location_decks[location.index()].push(card);
                    obs.push(Observation::public(Event::LocationDeckRefilled {
                        location,
                    }));
                }
            }
        }
    }

    /// The top card of the main deck, reshuffling the discards when it is empty and setting
    /// aside cards of married gentlemen. `None` when no card is left anywhere.
    fn draw_main(&mut self, obs: &mut Obs) -> Option<CardId> {
        loop {
            if self.main_deck.is_empty() {
                if self.gentleman_discard.is_empty() {
                    return None;
                }
                self.main_deck = std::mem::take(&mut self.gentleman_discard);
                self.rng.shuffle(&mut self.main_deck);
                obs.push(Observation::public(Event::MainDeckReshuffled {
                    size: self.main_deck.len(),
                }));
            }
            let card = self.main_deck.pop()?;
            if self.is_married(card.gentleman()) {
                self.retired.push(card);
                obs.push(Observation::public(Event::GentlemenRetired {
                    cards: vec![card],
                }));
                continue;
            }
            return Some(card);
        }
    }

    /// `card` comes to `seat`'s daughter: through the suitor limit if it is a fourth
    /// gentleman, then marriages are checked and the current step resumes.
    fn card_joins(&mut self, seat: Seat, card: CardId, obs: &mut Obs) {
        let suitors = self.suitor_gentlemen(seat);
        let Some(daughter) = self.player_mut(seat).active.as_mut() else {
            // Nobody to receive it (every daughter married): it is discarded.
            self.gentleman_discard.push(card);
            obs.push(Observation::public(Event::GentlemenDiscarded {
                cards: vec![card],
            }));
            self.settle(obs);
            return;
        };
        if suitors.len() >= MAX_SUITORS && !suitors.contains(&card.gentleman()) {
            self.phase = Phase::SuitorLimit {
                seat,
                incoming: card,
            };
            return;
        }
        daughter.suitors.push(card);
        obs.push(Observation::public(Event::SuitorJoined { seat, card }));
        self.check_marriages(obs);
        self.settle(obs);
    }

    /// Marry every daughter who qualifies, for every seat. A daughter qualifying for several
    /// gentlemen at once marries the one worth the most VP (the first in the table on a tie).
    fn check_marriages(&mut self, obs: &mut Obs) {
        for seat in 0..self.seats {
            let Some(d) = &self.player(seat).active else {
                continue;
            };
            let mut best: Option<GentlemanId> = None;
            for gentleman in self.suitor_gentlemen(seat) {
                let count = d
                    .suitors
                    .iter()
                    .filter(|c| c.gentleman() == gentleman)
                    .count();
                if count >= CARDS_TO_MARRY
                    && d.attributes.meets(&gentleman.data().minimums)
                    && !self.is_married(gentleman)
                    && best.is_none_or(|b| {
                        gentleman.data().victory_points > b.data().victory_points
                            || (gentleman.data().victory_points == b.data().victory_points
                                && gentleman < b)
                    })
                {
                    best = Some(gentleman);
                }
            }
            if let Some(gentleman) = best {
                self.marry(seat, gentleman, obs);
            }
        }
    }

    fn marry(&mut self, seat: Seat, husband: GentlemanId, obs: &mut Obs) {
        let player = self.player_mut(seat);
        let Some(bride) = player.active.take() else {
            return;
        };
        let (his, others): (Vec<CardId>, Vec<CardId>) =
            bride.suitors.iter().partition(|c| c.gentleman() == husband);
        let kept = his[0];
        player.brides.push(Bride {
            daughter: bride.daughter,
            attributes: bride.attributes,
            husband,
            kept,
        });
        obs.push(Observation::public(Event::Married {
            seat,
            daughter: bride.daughter,
            gentleman: husband,
            kept,
        }));
        // His other cards leave the game, wherever they lie face up.
        let mut retired: Vec<CardId> = his[1..].to_vec();
        for p in &mut self.players {
            if let Some(d) = p.active.as_mut() {
                retired.extend(d.suitors.iter().filter(|c| c.gentleman() == husband));
                d.suitors.retain(|c| c.gentleman() != husband);
            }
        }
        retired.extend(
            self.gentleman_discard
                .iter()
                .filter(|c| c.gentleman() == husband),
        );
        self.gentleman_discard.retain(|c| c.gentleman() != husband);
        if !retired.is_empty() {
            obs.push(Observation::public(Event::GentlemenRetired {
                cards: retired.clone(),
            }));
            self.retired.extend(retired);
        }
        if !others.is_empty() {
            obs.push(Observation::public(Event::GentlemenDiscarded {
                cards: others.clone(),
            }));
            self.gentleman_discard.extend(others);
        }
        let player = self.player_mut(seat);
        if player.face_down.is_empty() {
            obs.push(Observation::public(Event::FinalRound { seat }));
            self.final_round = true;
        } else {
            let next = player.face_down.remove(0);
            let attributes = next.data().start;
            player.active = Some(ActiveDaughter {
                daughter: next,
                attributes,
                suitors: Vec::new(),
            });
            obs.push(Observation::public(Event::DaughterRevealed {
                seat,
                daughter: next,
                attributes,
            }));
        }
        self.married_this_turn = true;
    }

    fn play_event(
        &mut self,
        seat: Seat,
        card: EventCardId,
        target: Option<Seat>,
        location: Option<Location>,
        obs: &mut Obs,
    ) -> Result<(), Error> {
        let at = self
            .player(seat)
            .hand
            .iter()
            .position(|&c| c == card)
            .ok_or(Error::CardNotInHand)?;
        if self.player(seat).active.is_none() {
            return Err(Error::NoDaughter);
        }
        let effect = card.kind().data().effect;
        // Check the card's arguments before anything moves.
        let needs_target = effect.is_hostile();
        let needs_location = effect == EventEffect::BallInvitation;
        if target.is_some() != needs_target {
            return Err(Error::InvalidTarget);
        }
        if location.is_some() != needs_location {
            return Err(Error::InvalidChoice);
        }
        match effect {
            EventEffect::Chaperone => return Err(Error::ReactionOnly),
            EventEffect::LoveLetter if !self.main_deck_may_yield() => {
                return Err(Error::NothingToTake);
            }
            EventEffect::BallInvitation => {
                let l = location.ok_or(Error::InvalidChoice)?;
                if self.location_decks[l.index()].is_empty() {
                    return Err(Error::NothingToTake);
                }
            }
            EventEffect::Lower(..) | EventEffect::RollAgainst(_) => {
                let t = target.ok_or(Error::InvalidTarget)?;
                if t == seat || t >= self.seats || self.player(t).active.is_none() {
                    return Err(Error::InvalidTarget);
                }
            }
            EventEffect::IntrigueByLetter => {
                let t = target.ok_or(Error::InvalidTarget)?;
                if t == seat || t >= self.seats || self.player(t).active.is_none() {
                    return Err(Error::InvalidTarget);
                }
                if !self.letter_target_ok(seat, t) {
                    return Err(Error::NoIntrigue);
                }
            }
            _ => {}
        }
        self.player_mut(seat).hand.remove(at);
        obs.push(Observation::public(Event::EventPlayed {
            seat,
            card,
            target,
            location,
        }));
        self.resume = self.resume_step();
        match effect {
            EventEffect::Raise(attribute, n) => {
                self.event_discard.push(card);
                self.adjust(seat, attribute, n as i8, obs);
                if self.married_this_turn {
                    self.end_turn(obs);
                }
            }
            EventEffect::KeepForPoints(_) => self.player_mut(seat).kept.push(card),
            EventEffect::LoveLetter => {
                self.event_discard.push(card);
                match self.draw_main(obs) {
                    Some(drawn) => {
                        obs.push(Observation::public(Event::DrewFromMainDeck {
                            seat,
                            card: drawn,
                        }));
                        self.card_joins(seat, drawn, obs);
                    }
                    None => self.settle(obs),
                }
            }
            EventEffect::BallInvitation => {
                self.event_discard.push(card);
                if let Some(l) = location {
                    self.offer_location_deck(seat, l, obs);
                }
            }
            _ => {
                if let Some(t) = target {
                    // The card waits in the reaction window; it reaches the discard once settled.
                    self.phase = Phase::Reaction {
                        attacker: seat,
                        target: t,
                        card,
                    };
                }
            }
        }
        Ok(())
    }

    fn resolve_hostile(&mut self, attacker: Seat, target: Seat, card: EventCardId, obs: &mut Obs) {
        match card.kind().data().effect {
            EventEffect::Lower(attribute, n) => {
                self.adjust(target, attribute, -(n as i8), obs);
                self.settle(obs);
            }
            EventEffect::RollAgainst(die) => {
                self.roll_for(target, die, obs);
                self.settle(obs);
            }
            EventEffect::IntrigueByLetter => self.roll_intrigue(attacker, target, obs),
            _ => self.settle(obs),
        }
    }

    /// The current player draws an event card, which ends the turn (after a discard if over
    /// the hand limit).
    fn end_turn(&mut self, obs: &mut Obs) {
        let seat = self.current;
        if self.event_deck.is_empty() && !self.event_discard.is_empty() {
            self.event_deck = std::mem::take(&mut self.event_discard);
            self.rng.shuffle(&mut self.event_deck);
            obs.push(Observation::public(Event::EventDeckReshuffled {
                size: self.event_deck.len(),
            }));
        }
        if let Some(card) = self.event_deck.pop() {
            self.player_mut(seat).hand.push(card);
            obs.push(Observation::to_seat(seat, Event::EventDrawn { seat, card }));
            obs.push(Observation {
                audience: Audience::Everyone,
                event: Event::EventDrawnFaceDown { seat },
            });
        }
        if self.player(seat).hand.len() > HAND_LIMIT {
            self.phase = Phase::Discard { seat };
        } else {
            self.next_turn(obs);
        }
    }

    /// Pass the turn clockwise, skipping players with no daughter in play; after the final
    /// round (back at the starting player) the match is over.
    fn next_turn(&mut self, obs: &mut Obs) {
        self.married_this_turn = false;
        self.resume = Resume::Visit;
        for _ in 0..self.seats {
            self.current = (self.current + 1) % self.seats;
            if self.current == self.starting_player && self.final_round {
                break;
            }
            if self.player(self.current).active.is_some() {
                self.turn += 1;
                self.phase = Phase::Visit;
                obs.push(Observation::public(Event::TurnStarted {
                    seat: self.current,
                    turn: self.turn,
                }));
                return;
            }
        }
        self.phase = Phase::Over;
        obs.push(Observation::public(Event::GameOver {
            scoring: self.scoring(),
        }));
    }
}
