//! The Lopti state machine and its [`Game`] impl: setup, who is awaited, legal and default
//! actions, `apply` and the views. The steps between hands (rules, the Rule Vote, Roshambo,
//! the deal and swaps) are in `session`, and the turns of a hand in `play`.
//!
//! `apply` works on the state itself: every check that may refuse an action runs before the
//! first change to the state, so a refused action leaves the state exactly as it was, whatever
//! step refused it.

mod play;
mod session;

use std::ops::RangeInclusive;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use self::session::check_table_text;
use super::cards::{Card, Rank};
use super::catalogue::{
    BaseRules, Change, Effect, HAND_SIZE_RANGE, Rule, RuleBody, RuleId, RuleSpec, RuleStatus,
    Timing, Trigger, catalogue,
};
use super::error::Error;
use super::types::{
    Action, Ballot, BurnCause, Config, Event, MAX_HANDS, PhaseView, PlayedCards, Proposal,
    SeatView, Source, Throw, View, VoteResult,
};
use crate::core::{Game, Observation, Outcome, Record, Seat, SeatSet, SetupError, Viewer};
use crate::fixed::FixedVec;
use crate::rng::{GameRng, Seed};

type Obs = Vec<Observation<Event>>;

/// Decisive throws a Roshambo runs to.
pub const ROSHAMBO_THROWS: u8 = 30;
/// Cards dealt face down, and face up, to each seat.
const TABLE_CARDS: usize = 3;
/// Most custom effects one action may set off: a guard behind the loop check.
const EFFECT_BUDGET: u32 = 64;
/// Most seats at a table.
const MAX_SEATS: usize = 5;

/// Cards of one deck at most, in order: a hand, a pile. Inline, so that playing, drawing and
/// burning never allocate, and copying the state copies them in one go.
type Cards = FixedVec<Card, 52>;
/// The specifications of a session's active rules: inline for as many as its hands can create.
type Specs = SmallVec<[RuleSpec; MAX_HANDS as usize]>;
/// A session's rules: inline for as many as its hands can create (an enforced rule and a
/// table rule from each winner but the last's), so creating one never allocates; rules carried
/// over from earlier sessions may take it past that, to the heap.
type Rules = SmallVec<[Rule; 2 * (MAX_HANDS as usize - 1)]>;
/// A seat's face-down or face-up cards.
type TableCards = FixedVec<Card, TABLE_CARDS>;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Player {
    hand: Cards,
    face_up: TableCards,
    face_down: TableCards,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
enum Phase {
    RuleCreation {
        winner: Seat,
    },
    Proposal {
        declined: SeatSet,
    },
    Voting {
        proposal: Proposal,
        ballots: FixedVec<Option<Ballot>, MAX_SEATS>,
        /// Seats that voted no, in the order they voted.
        opposed: FixedVec<Seat, MAX_SEATS>,
    },
    Roshambo {
        proposal: Proposal,
        sides: [Seat; 2],
        throws: [Option<Throw>; 2],
        score: [u8; 2],
        decisive: u8,
        rounds: u32,
        last_reveal: Option<[Throw; 2]>,
    },
    Swap {
        done: SeatSet,
    },
    Play,
    Over,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Turn {
    seat: Seat,
    /// Plays the seat may still make this turn: 1 at the start, plus one per burn or bonus.
    plays_left: u8,
    /// Whether the first play (the one that may draw) has been made.
    played: bool,
    /// Turns started in this hand before this one.
    number: u32,
}

/// A base event custom rules may react to.
#[derive(Clone, Copy, Debug)]
enum Happened {
    Played { rank: Rank, count: u8 },
    Burned,
    PickedUp,
    FaceUpTaken,
}

impl crate::fixed::Blank for Happened {
    const BLANK: Happened = Happened::Burned;
}

/// The base events the custom rules are still to react to, oldest first: one or two to start
/// with, and one more for each pile an effect burns, which the effect budget bounds.
struct Happenings(FixedVec<Happened, { 2 + EFFECT_BUDGET as usize }>);

impl Happenings {
    fn one(happened: Happened) -> Happenings {
        let mut list = FixedVec::new();
        list.push(happened);
        Happenings(list)
    }

    fn push_back(&mut self, happened: Happened) {
        self.0.push(happened);
    }

    fn pop_front(&mut self) -> Option<Happened> {
        (!self.0.is_empty()).then(|| self.0.remove(0))
    }
}

impl Happened {
    fn sets_off(self, trigger: Trigger) -> bool {
        match (self, trigger) {
            (Happened::Played { rank, .. }, Trigger::RankPlayed { rank: r }) => rank == r,
            (Happened::Played { count, .. }, Trigger::CardsPlayed { at_least }) => {
                count >= at_least
            }
            (Happened::Burned, Trigger::PileBurned) => true,
            (Happened::PickedUp, Trigger::PilePickedUp) => true,
            (Happened::FaceUpTaken, Trigger::FaceUpTaken) => true,
            _ => false,
        }
    }
}

/// A Lopti session: several hands for 2 to 5 seats, with the rules the hands' winners add.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lopti {
    config: Config,
    seat_count: u8,
    rng: GameRng,
    /// The current hand, from 0.
    hand: u8,
    hands_won: Vec<u8>,
    last_winner: Option<Seat>,
    base: BaseRules,
    rules: Rules,
    /// The change a Rule Vote passed for the next hand: one vote a hand, so at most one.
    scheduled: SmallVec<[Change; 1]>,
    vote_held: bool,
    phase: Phase,
    players: Vec<Player>,
    /// The draw pile; its top is the last card. Before a deal it holds the undealt deck.
    draw: Cards,
    /// The play pile, bottom first.
    pile: Cards,
    top_play_count: u8,
    pass_chain: Cards,
    obligation: bool,
    /// Burned and discarded cards of this hand.
    gone: Cards,
    /// Cards a short fixed deck left out of the first hand.
    unused: Cards,
    turn: Turn,
    reversed: bool,
    skips: u8,
}

impl Lopti {
    fn new(config: &Config, seats: u8, seed: Seed) -> Result<Lopti, SetupError> {
        if !(1..=MAX_HANDS).contains(&config.hands) {
            return Err(SetupError::InvalidConfig(format!(
                "hands must be from 1 to {MAX_HANDS}"
            )));
        }
        let base = BaseRules::default();
        let (draw, unused) = match &config.fixed_deck {
            Some(deck) => {
                let mut sorted = deck.clone();
                sorted.sort();
                sorted.dedup();
                if sorted.len() != deck.len() {
                    return Err(SetupError::InvalidConfig(
                        "fixed deck repeats a card".into(),
                    ));
                }
                let needed = usize::from(seats) * (2 * TABLE_CARDS + usize::from(base.hand_size));
                if deck.len() < needed {
                    return Err(SetupError::InvalidConfig(format!(
                        "fixed deck needs at least {needed} cards for {seats} seats"
                    )));
                }
                let unused = Card::DECK
                    .into_iter()
                    .filter(|c| !deck.contains(c))
                    .collect();
                // The draw pile's top is its last card.
                (deck.iter().rev().copied().collect(), unused)
            }
            None => (Card::DECK.into_iter().collect(), Cards::new()),
        };
        let mut state = Lopti {
            config: config.clone(),
            seat_count: seats,
            rng: GameRng::new(seed),
            hand: 0,
            hands_won: vec![0; usize::from(seats)],
            last_winner: None,
            base,
            rules: Rules::new(),
            scheduled: SmallVec::new(),
            vote_held: false,
            phase: Phase::Over,
            players: vec![Player::default(); usize::from(seats)],
            draw,
            pile: Cards::new(),
            top_play_count: 0,
            pass_chain: Cards::new(),
            obligation: false,
            gone: Cards::new(),
            unused,
            turn: Turn::default(),
            reversed: false,
            skips: 0,
        };
        for carried in &config.carried_rules {
            if carried.creator >= seats {
                return Err(SetupError::InvalidConfig(
                    "a carried rule's creator has no seat".into(),
                ));
            }
            let checked = match carried.body.clone() {
                RuleBody::Enforced { spec } => state.check_new_rule(spec),
                RuleBody::Table { text } => check_table_text(&text),
            };
            if let Err(e) = checked {
                return Err(SetupError::InvalidConfig(format!(
                    "carried rule refused: {e}"
                )));
            }
            state.rules.push(Rule {
                id: state.rules.len() as RuleId,
                creator: carried.creator,
                won_in_hand: None,
                body: carried.body.clone(),
                status: RuleStatus::Active,
            });
        }
        let mut sink = Vec::new();
        state.begin_hand(&mut sink);
        Ok(state)
    }

    fn all_seats(&self) -> SeatSet {
        SeatSet::first(self.seat_count)
    }

    fn dealer(&self) -> Seat {
        self.hand % self.seat_count
    }

    fn opener(&self) -> Seat {
        match (self.hand, self.last_winner) {
            (0, _) | (_, None) => self.dealer(),
            (_, Some(winner)) => winner,
        }
    }

    fn next_seat(&self, from: Seat) -> Seat {
        let n = self.seat_count;
        if self.reversed {
            (from + n - 1) % n
        } else {
            (from + 1) % n
        }
    }

    fn player(&self, seat: Seat) -> &Player {
        &self.players[usize::from(seat)]
    }

    fn player_mut(&mut self, seat: Seat) -> &mut Player {
        &mut self.players[usize::from(seat)]
    }

    fn active_specs(&self) -> Specs {
        self.active_specs_except(None)
    }

    fn active_specs_except(&self, except: Option<RuleId>) -> Specs {
        self.rules
            .iter()
            .filter(|r| r.status == RuleStatus::Active && Some(r.id) != except)
            .filter_map(|r| match &r.body {
                RuleBody::Enforced { spec } => Some(*spec),
                RuleBody::Table { .. } => None,
            })
            .collect()
    }

    /// The seats that won the most hands.
    fn winners(&self) -> SeatSet {
        let best = self.hands_won.iter().copied().max().unwrap_or(0);
        (0..self.seat_count)
            .filter(|s| self.hands_won[usize::from(*s)] == best)
            .collect()
    }

    fn rule(&self, id: RuleId) -> Result<&Rule, Error> {
        self.rules
            .iter()
            .find(|r| r.id == id)
            .ok_or(Error::NoSuchRule(id))
    }
}

impl Game for Lopti {
    const KIND: &'static str = "lopti";
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
        Lopti::new(config, seats, seed)
    }

    /// What setup told the table: only that the first hand began. Setup opens the first
    /// hand's proposal window and deals nothing (the deal follows the Rule Vote), and a fresh
    /// session has no scheduled change, so this is exactly what `begin_hand` said at setup.
    /// Carried rules are part of the public options and every view, not news.
    fn setup_observations(&self) -> Obs {
        vec![Observation::public(Event::HandStarted {
            hand: self.hand,
            dealer: self.dealer(),
            opener: self.opener(),
        })]
    }

    fn seats(&self) -> u8 {
        self.seat_count
    }

    fn awaiting(&self) -> SeatSet {
        match &self.phase {
            Phase::RuleCreation { winner } => SeatSet::single(*winner),
            Phase::Proposal { declined } => self
                .all_seats()
                .iter()
                .filter(|s| !declined.contains(*s))
                .collect(),
            Phase::Voting { ballots, .. } => (0..self.seat_count)
                .filter(|s| ballots[usize::from(*s)].is_none())
                .collect(),
            Phase::Roshambo { sides, throws, .. } => (0..2)
                .filter(|i| throws[*i].is_none())
                .map(|i| sides[i])
                .collect(),
            Phase::Swap { done } => self
                .all_seats()
                .iter()
                .filter(|s| !done.contains(*s))
                .collect(),
            Phase::Play => SeatSet::single(self.turn.seat),
            Phase::Over => SeatSet::EMPTY,
        }
    }

    fn apply(&mut self, seat: Seat, action: &Action) -> Result<Obs, Error> {
        let mut out = Vec::new();
        self.apply_into(seat, action, &mut out)?;
        Ok(out)
    }

    fn apply_into<R: Record<Event>>(
        &mut self,
        seat: Seat,
        action: &Action,
        out: &mut R,
    ) -> Result<(), Error> {
        if seat >= self.seat_count {
            return Err(Error::NoSuchSeat(seat));
        }
        if self.phase == Phase::Over {
            return Err(Error::MatchOver);
        }
        // Every refusal in `act` happens before its first change to the state, so a refused
        // action leaves the state as it was without working on a copy.
        self.act(seat, action, out)
    }

    fn outcome(&self) -> Option<Outcome> {
        if self.phase != Phase::Over {
            return None;
        }
        Some(Outcome {
            winners: self.winners(),
            scores: self.hands_won.iter().map(|w| i32::from(*w)).collect(),
        })
    }

    fn legal_actions(&self, seat: Seat) -> Vec<Action> {
        let mut actions = Vec::new();
        self.legal_actions_into(seat, &mut actions);
        actions
    }

    fn legal_actions_into(&self, seat: Seat, actions: &mut Vec<Action>) {
        if seat >= self.seat_count || self.phase == Phase::Over {
            return;
        }
        if self.awaiting().contains(seat) {
            match &self.phase {
                Phase::RuleCreation { .. } => {
                    actions.push(Action::SkipRule);
                    for &spec in catalogue() {
                        if self.check_new_rule(spec).is_ok() {
                            actions.push(Action::CreateRule {
                                rule: Some(spec),
                                table_rule: None,
                            });
                        }
                    }
                }
                Phase::Proposal { .. } => {
                    actions.push(Action::DeclineProposal);
                    self.candidate_changes(|change| {
                        for timing in [Timing::Now, Timing::NextHand] {
                            actions.push(Action::Propose {
                                change: change.clone(),
                                timing,
                            });
                        }
                    });
                }
                Phase::Voting { .. } => {
                    for ballot in [Ballot::Yes, Ballot::No, Ballot::Abstain] {
                        actions.push(Action::Vote { ballot });
                    }
                }
                Phase::Roshambo { .. } => {
                    for throw in Throw::ALL {
                        actions.push(Action::Throw { throw });
                    }
                }
                Phase::Swap { .. } => {
                    actions.push(Action::KeepCards);
                    let p = self.player(seat);
                    for h in &p.hand {
                        for u in &p.face_up {
                            actions.push(Action::Swap {
                                hand: *h,
                                face_up: *u,
                            });
                        }
                    }
                }
                Phase::Play => self.play_actions(seat, actions),
                Phase::Over => {}
            }
        }
        for rule in &self.rules {
            if rule.creator == seat && rule.status == RuleStatus::Active {
                actions.push(Action::CancelRule { rule: rule.id });
            }
        }
    }

    fn default_action(&self, seat: Seat) -> Option<Action> {
        if !self.awaiting().contains(seat) {
            return None;
        }
        Some(match &self.phase {
            Phase::RuleCreation { .. } => Action::SkipRule,
            Phase::Proposal { .. } => Action::DeclineProposal,
            Phase::Voting { .. } => Action::Vote {
                ballot: Ballot::Abstain,
            },
            Phase::Roshambo { sides, rounds, .. } => {
                // Predictable on purpose: the challenger cycles rock, paper, scissors and the
                // defender plays one step ahead, so two timed-out sides always decide a throw.
                let side = if sides[0] == seat { 0 } else { 1 };
                Action::Throw {
                    throw: Throw::ALL[((*rounds as usize) + side) % 3],
                }
            }
            Phase::Swap { .. } => Action::KeepCards,
            Phase::Play => {
                let p = self.player(seat);
                let mut hand = p.hand;
                hand.sort_unstable();
                // A playable rank, with every card of it held: shedding whole ranks keeps
                // timed-out hands moving. Usually the lowest; every fourth round another one,
                // chosen by the round number, so that seats which all time out don't repeat one
                // cycle of pickups forever.
                let runs: Vec<&[Card]> = hand
                    .chunk_by(|a, b| a.rank() == b.rank())
                    .filter(|run| self.check_play(run[0].rank(), run.len() as u8).is_ok())
                    .collect();
                let round = self.turn.number / u32::from(self.seat_count);
                let pick = if round % 4 == 3 {
                    (round as usize / 4) % runs.len().max(1)
                } else {
                    0
                };
                if let Some(run) = runs.get(pick) {
                    Action::Play {
                        cards: PlayedCards::from_slice(run),
                    }
                } else if hand.is_empty() && !p.face_down.is_empty() {
                    Action::PlayFaceDown { index: 0 }
                } else {
                    Action::PickUp
                }
            }
            Phase::Over => return None,
        })
    }

    fn view(&self, viewer: Viewer) -> View {
        let me = match viewer {
            Viewer::Seat(s) if s < self.seat_count => Some(s),
            _ => None,
        };
        let phase = match &self.phase {
            Phase::RuleCreation { winner } => PhaseView::RuleCreation { winner: *winner },
            Phase::Proposal { declined } => PhaseView::Proposal {
                declined: *declined,
            },
            Phase::Voting {
                proposal, ballots, ..
            } => PhaseView::Voting {
                proposal: proposal.clone(),
                voted: (0..self.seat_count)
                    .filter(|s| ballots[usize::from(*s)].is_some())
                    .collect(),
                your_ballot: me.and_then(|s| ballots[usize::from(s)]),
            },
            Phase::Roshambo {
                proposal,
                sides,
                throws,
                score,
                decisive,
                last_reveal,
                ..
            } => PhaseView::Roshambo {
                proposal: proposal.clone(),
                sides: *sides,
                score: *score,
                decisive: *decisive,
                committed: (0..2)
                    .filter(|i| throws[*i].is_some())
                    .map(|i| sides[i])
                    .collect(),
                your_throw: me
                    .and_then(|s| sides.iter().position(|x| *x == s))
                    .and_then(|i| throws[i]),
                last_reveal: *last_reveal,
            },
            Phase::Swap { done } => PhaseView::Swap { done: *done },
            Phase::Play => PhaseView::Play {
                seat: self.turn.seat,
                plays_left: self.turn.plays_left,
                played: self.turn.played,
            },
            Phase::Over => PhaseView::Over,
        };
        let top = self.pile.last().map(|c| c.rank());
        View {
            viewer,
            hand: self.hand,
            hands: self.config.hands,
            dealer: self.dealer(),
            phase,
            awaiting: self.awaiting(),
            your_hand: me.map(|s| {
                let mut hand = self.player(s).hand.to_vec();
                hand.sort_unstable();
                hand
            }),
            seats: (0..self.seat_count)
                .map(|s| {
                    let p = self.player(s);
                    SeatView {
                        face_up: p.face_up.to_vec(),
                        face_down: p.face_down.len() as u8,
                        in_hand: p.hand.len() as u8,
                        hands_won: self.hands_won[usize::from(s)],
                    }
                })
                .collect(),
            pile: self.pile.to_vec(),
            top_play_count: self.top_play_count,
            pass_chain: self.pass_chain.to_vec(),
            pass_obligation: self.obligation,
            play_at_most: top.filter(|t| self.base.low == Some(*t)),
            draw_pile: self.draw.len() as u8,
            out_of_hand: self.gone.len() as u8,
            clockwise: !self.reversed,
            pending_skips: self.skips,
            base: self.base.clone(),
            rules: self.rules.to_vec(),
            scheduled: self.scheduled.to_vec(),
            vote_held: self.vote_held,
        }
    }
}

impl Lopti {
    fn play_actions(&self, seat: Seat, actions: &mut Vec<Action>) {
        let p = self.player(seat);
        if p.hand.is_empty() {
            for i in 0..p.face_down.len() {
                actions.push(Action::PlayFaceDown { index: i as u8 });
            }
        } else {
            let mut hand = p.hand;
            hand.sort_unstable();
            // Sorted by rank, so each rank's cards form one run.
            for run in hand.chunk_by(|a, b| a.rank() == b.rank()) {
                for k in 1..=run.len() {
                    if self.check_play(run[0].rank(), k as u8).is_ok() {
                        actions.push(Action::Play {
                            cards: PlayedCards::from_slice(&run[..k]),
                        });
                    }
                }
            }
        }
        if !self.pile.is_empty() {
            actions.push(Action::PickUp);
        }
    }

    // ---- acting -------------------------------------------------------------------------

    fn act(
        &mut self,
        seat: Seat,
        action: &Action,
        out: &mut impl Record<Event>,
    ) -> Result<(), Error> {
        if let Action::CancelRule { rule } = action {
            return self.cancel_rule(seat, *rule, out);
        }
        let phase_fits = matches!(
            (&self.phase, action),
            (
                Phase::RuleCreation { .. },
                Action::CreateRule { .. } | Action::SkipRule
            ) | (
                Phase::Proposal { .. },
                Action::Propose { .. } | Action::DeclineProposal
            ) | (Phase::Voting { .. }, Action::Vote { .. })
                | (Phase::Roshambo { .. }, Action::Throw { .. })
                | (Phase::Swap { .. }, Action::Swap { .. } | Action::KeepCards)
                | (
                    Phase::Play,
                    Action::Play { .. } | Action::PlayFaceDown { .. } | Action::PickUp
                )
        );
        if !phase_fits {
            return Err(match action {
                Action::Propose { .. } if self.vote_held => Error::VoteAlreadyHeld,
                Action::Propose { .. } => Error::NoVoteNow,
                _ => Error::WrongPhase,
            });
        }
        if !self.awaiting().contains(seat) {
            return Err(match &self.phase {
                Phase::Roshambo { sides, .. } if !sides.contains(&seat) => Error::NotInRoshambo,
                Phase::Swap { .. } if matches!(action, Action::Swap { .. }) => {
                    Error::AlreadySwapped
                }
                Phase::Proposal { .. } | Phase::Voting { .. } | Phase::Roshambo { .. } => {
                    Error::AlreadyActed
                }
                Phase::Swap { .. } => Error::AlreadyActed,
                _ => Error::NotYourTurn,
            });
        }
        match action {
            Action::Swap { hand, face_up } => self.swap(seat, *hand, *face_up, out),
            Action::KeepCards => {
                out.push(Observation::public(Event::KeptCards { seat }));
                self.swap_done(seat, out);
                Ok(())
            }
            Action::CreateRule { rule, table_rule } => {
                self.create_rule(seat, *rule, table_rule.as_ref(), out)
            }
            Action::SkipRule => {
                out.push(Observation::public(Event::RuleSkipped { seat }));
                self.begin_hand(out);
                Ok(())
            }
            Action::Propose { change, timing } => self.propose(seat, change, *timing, out),
            Action::DeclineProposal => {
                out.push(Observation::public(Event::ProposalDeclined { seat }));
                if let Phase::Proposal { declined } = &mut self.phase {
                    declined.insert(seat);
                    if *declined == SeatSet::first(self.seat_count) {
                        self.deal(out);
                    }
                }
                Ok(())
            }
            Action::Vote { ballot } => {
                self.vote(seat, *ballot, out);
                Ok(())
            }
            Action::Throw { throw } => {
                self.throw(seat, *throw, out);
                Ok(())
            }
            Action::Play { cards } => self.play_from_hand(seat, cards, out),
            Action::PlayFaceDown { index } => self.play_face_down(seat, *index, out),
            Action::PickUp => {
                if self.pile.is_empty() {
                    return Err(Error::NothingToPickUp);
                }
                self.pick_up(seat, out);
                self.end_turn(out);
                Ok(())
            }
            Action::CancelRule { .. } => Ok(()),
        }
    }
}
