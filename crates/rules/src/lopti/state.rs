//! The Lopti state machine: phases, turns, plays, burns, rules and votes.
//!
//! `apply` works on a copy and commits it only on success, so a refused action leaves the
//! state exactly as it was, whatever step refused it.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::card::{Card, Rank};
use super::catalogue::{
    BaseRules, Change, Effect, HAND_SIZE_RANGE, Rule, RuleBody, RuleId, RuleSpec, RuleStatus,
    Timing, Trigger, catalogue, check_rule, check_table_text,
};
use super::protocol::{
    Action, Ballot, BurnCause, Config, Error, Event, MAX_HANDS, Proposal, Source, Throw, VoteResult,
};
use super::view::{PhaseView, SeatView, View};
use crate::core::{Observation, Outcome, Seat, SeatSet, SetupError, Viewer};
use crate::rng::{GameRng, Seed};

type Obs = Vec<Observation<Event>>;

/// Decisive throws a Roshambo runs to.
pub const ROSHAMBO_THROWS: u8 = 30;
/// Cards dealt face down, and face up, to each seat.
const TABLE_CARDS: usize = 3;
/// Most custom effects one action may set off: a guard behind the loop check.
const EFFECT_BUDGET: u32 = 64;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Player {
    hand: Vec<Card>,
    face_up: Vec<Card>,
    face_down: Vec<Card>,
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
        ballots: Vec<Option<Ballot>>,
        /// Seats that voted no, in the order they voted.
        opposed: Vec<Seat>,
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
    rules: Vec<Rule>,
    scheduled: Vec<Change>,
    vote_held: bool,
    phase: Phase,
    players: Vec<Player>,
    /// The draw pile; its top is the last card. Before a deal it holds the undealt deck.
    draw: Vec<Card>,
    /// The play pile, bottom first.
    pile: Vec<Card>,
    top_play_count: u8,
    pass_chain: Vec<Card>,
    obligation: bool,
    /// Burned and discarded cards of this hand.
    gone: Vec<Card>,
    /// Cards a short fixed deck left out of the first hand.
    unused: Vec<Card>,
    turn: Turn,
    reversed: bool,
    skips: u8,
}

impl Lopti {
    pub(super) fn new(config: &Config, seats: u8, seed: Seed) -> Result<Lopti, SetupError> {
        SetupError::check_seats::<Lopti>(config, seats)?;
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
                let unused = Card::deck()
                    .into_iter()
                    .filter(|c| !deck.contains(c))
                    .collect();
                // The draw pile's top is its last card.
                (deck.iter().rev().copied().collect(), unused)
            }
            None => (Card::deck(), Vec::new()),
        };
        let mut state = Lopti {
            config: config.clone(),
            seat_count: seats,
            rng: GameRng::new(seed),
            hand: 0,
            hands_won: vec![0; usize::from(seats)],
            last_winner: None,
            base,
            rules: Vec::new(),
            scheduled: Vec::new(),
            vote_held: false,
            phase: Phase::Over,
            players: vec![Player::default(); usize::from(seats)],
            draw,
            pile: Vec::new(),
            top_play_count: 0,
            pass_chain: Vec::new(),
            obligation: false,
            gone: Vec::new(),
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

    /// What setup told the table: only that the first hand began. Setup opens the first
    /// hand's proposal window and deals nothing (the deal follows the Rule Vote), and a fresh
    /// session has no scheduled change, so this is exactly what `begin_hand` said at setup.
    /// Carried rules are part of the public options and every view, not news.
    pub(super) fn setup_observations(&self) -> Obs {
        vec![Observation::public(Event::HandStarted {
            hand: self.hand,
            dealer: self.dealer(),
            opener: self.opener(),
        })]
    }

    pub(super) fn seat_count(&self) -> u8 {
        self.seat_count
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

    fn active_specs(&self) -> Vec<RuleSpec> {
        self.active_specs_except(None)
    }

    fn active_specs_except(&self, except: Option<RuleId>) -> Vec<RuleSpec> {
        self.rules
            .iter()
            .filter(|r| r.status == RuleStatus::Active && Some(r.id) != except)
            .filter_map(|r| match &r.body {
                RuleBody::Enforced { spec } => Some(*spec),
                RuleBody::Table { .. } => None,
            })
            .collect()
    }

    fn rule(&self, id: RuleId) -> Result<&Rule, Error> {
        self.rules
            .iter()
            .find(|r| r.id == id)
            .ok_or(Error::NoSuchRule(id))
    }

    // ---- the Game interface -------------------------------------------------------------

    pub(super) fn awaiting(&self) -> SeatSet {
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

    pub(super) fn apply(&mut self, seat: Seat, action: &Action) -> Result<Obs, Error> {
        if seat >= self.seat_count {
            return Err(Error::NoSuchSeat(seat));
        }
        if self.phase == Phase::Over {
            return Err(Error::MatchOver);
        }
        // Every refusal in `act` happens before its first change to the state, so a refused
        // action leaves the state as it was without working on a copy.
        let mut out = Vec::new();
        self.act(seat, action, &mut out)?;
        Ok(out)
    }

    pub(super) fn outcome(&self) -> Option<Outcome> {
        if self.phase != Phase::Over {
            return None;
        }
        let best = self.hands_won.iter().copied().max().unwrap_or(0);
        Some(Outcome {
            winners: (0..self.seat_count)
                .filter(|s| self.hands_won[usize::from(*s)] == best)
                .collect(),
            scores: self.hands_won.iter().map(|w| i32::from(*w)).collect(),
        })
    }

    pub(super) fn legal_actions(&self, seat: Seat) -> Vec<Action> {
        let mut actions = Vec::new();
        if seat >= self.seat_count || self.phase == Phase::Over {
            return actions;
        }
        if self.awaiting().contains(seat) {
            match &self.phase {
                Phase::RuleCreation { .. } => {
                    actions.push(Action::SkipRule);
                    for spec in catalogue() {
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
                    for change in self.candidate_changes() {
                        for timing in [Timing::Now, Timing::NextHand] {
                            actions.push(Action::Propose {
                                change: change.clone(),
                                timing,
                            });
                        }
                    }
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
                Phase::Play => self.play_actions(seat, &mut actions),
                Phase::Over => {}
            }
        }
        for rule in &self.rules {
            if rule.creator == seat && rule.status == RuleStatus::Active {
                actions.push(Action::CancelRule { rule: rule.id });
            }
        }
        actions
    }

    fn play_actions(&self, seat: Seat, actions: &mut Vec<Action>) {
        let p = self.player(seat);
        if p.hand.is_empty() {
            for i in 0..p.face_down.len() {
                actions.push(Action::PlayFaceDown { index: i as u8 });
            }
        } else {
            let mut hand = p.hand.clone();
            hand.sort();
            // Sorted by rank, so each rank's cards form one run.
            for run in hand.chunk_by(|a, b| a.rank() == b.rank()) {
                for k in 1..=run.len() {
                    if self.check_play(run[0].rank(), k as u8).is_ok() {
                        actions.push(Action::Play {
                            cards: run[..k].to_vec(),
                        });
                    }
                }
            }
        }
        if !self.pile.is_empty() {
            actions.push(Action::PickUp);
        }
    }

    pub(super) fn default_action(&self, seat: Seat) -> Option<Action> {
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
                let mut hand = p.hand.clone();
                hand.sort();
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
                        cards: run.to_vec(),
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

    // ---- acting -------------------------------------------------------------------------

    fn act(&mut self, seat: Seat, action: &Action, out: &mut Obs) -> Result<(), Error> {
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
                self.create_rule(seat, *rule, table_rule.as_deref(), out)
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

    // ---- rules ----------------------------------------------------------------------------

    fn cancel_rule(&mut self, seat: Seat, id: RuleId, out: &mut Obs) -> Result<(), Error> {
        let rule = self.rule(id)?;
        if rule.creator != seat {
            return Err(Error::NotRuleCreator);
        }
        if rule.status != RuleStatus::Active {
            return Err(Error::RuleNotActive(id));
        }
        if let Some(rule) = self.rules.iter_mut().find(|r| r.id == id) {
            rule.status = RuleStatus::Cancelled;
        }
        out.push(Observation::public(Event::RuleCancelled {
            rule: id,
            by: seat,
        }));
        Ok(())
    }

    fn was_removed(&self, body: &RuleBody) -> bool {
        self.rules
            .iter()
            .any(|r| r.status != RuleStatus::Active && r.body == *body)
    }

    fn check_new_rule(&self, spec: RuleSpec) -> Result<(), Error> {
        check_rule(spec, &self.active_specs(), &self.base)?;
        if self.was_removed(&RuleBody::Enforced { spec }) {
            return Err(Error::RuleWasRemoved);
        }
        Ok(())
    }

    fn create_rule(
        &mut self,
        seat: Seat,
        spec: Option<RuleSpec>,
        text: Option<&str>,
        out: &mut Obs,
    ) -> Result<(), Error> {
        if spec.is_none() && text.is_none() {
            return Err(Error::EmptyRule);
        }
        let mut bodies = Vec::new();
        if let Some(spec) = spec {
            self.check_new_rule(spec)?;
            bodies.push(RuleBody::Enforced { spec });
        }
        if let Some(text) = text {
            check_table_text(text)?;
            let body = RuleBody::Table {
                text: text.to_owned(),
            };
            if self.was_removed(&body) {
                return Err(Error::RuleWasRemoved);
            }
            bodies.push(body);
        }
        for body in bodies {
            let rule = Rule {
                id: self.rules.len() as RuleId,
                creator: seat,
                won_in_hand: self.hand.checked_sub(1),
                body,
                status: RuleStatus::Active,
            };
            out.push(Observation::public(Event::RuleCreated {
                rule: rule.clone(),
            }));
            self.rules.push(rule);
        }
        self.begin_hand(out);
        Ok(())
    }

    /// Every change a proposal may make now, whatever its timing (only a hand-size change
    /// depends on it, and it is checked for the stricter "now"). Each rule's other active rules
    /// are gathered once, since the catalogue is checked against them many times.
    fn candidate_changes(&self) -> Vec<Change> {
        let mut changes = Vec::new();
        let specs = catalogue();
        for rule in &self.rules {
            if rule.status != RuleStatus::Active {
                let restore = Change::RestoreRule { rule: rule.id };
                if self.check_change(&restore, Timing::Now).is_ok() {
                    changes.push(restore);
                }
                continue;
            }
            changes.push(Change::RemoveRule { rule: rule.id });
            let others = self.active_specs_except(Some(rule.id));
            for spec in &specs {
                let to = RuleBody::Enforced { spec: *spec };
                if to != rule.body && check_rule(*spec, &others, &self.base).is_ok() {
                    changes.push(Change::ModifyRule { rule: rule.id, to });
                }
            }
        }
        let mut base_changes: Vec<Change> = HAND_SIZE_RANGE
            .map(|size| Change::SetHandSize { size })
            .collect();
        for special in super::catalogue::Special::ALL {
            base_changes.push(Change::SetSpecial {
                special,
                rank: None,
            });
            for rank in Rank::ALL {
                base_changes.push(Change::SetSpecial {
                    special,
                    rank: Some(rank),
                });
            }
        }
        changes.extend(
            base_changes
                .into_iter()
                .filter(|c| self.check_change(c, Timing::Now).is_ok()),
        );
        changes
    }

    /// The size of the next deck dealt: the fixed deck for the first hand, else 52.
    fn deck_size(&self, timing: Timing) -> usize {
        match (&self.config.fixed_deck, self.hand, timing) {
            (Some(deck), 0, Timing::Now) => deck.len(),
            _ => 52,
        }
    }

    fn check_change(&self, change: &Change, timing: Timing) -> Result<(), Error> {
        match change {
            Change::RemoveRule { rule } => {
                if self.rule(*rule)?.status != RuleStatus::Active {
                    return Err(Error::RuleNotActive(*rule));
                }
            }
            Change::ModifyRule { rule, to } => {
                let current = self.rule(*rule)?;
                if current.status != RuleStatus::Active {
                    return Err(Error::RuleNotActive(*rule));
                }
                if current.body == *to {
                    return Err(Error::NoChange);
                }
                match to {
                    RuleBody::Enforced { spec } => {
                        check_rule(*spec, &self.active_specs_except(Some(*rule)), &self.base)?
                    }
                    RuleBody::Table { text } => check_table_text(text)?,
                }
            }
            Change::RestoreRule { rule } => {
                let current = self.rule(*rule)?;
                if current.status == RuleStatus::Active {
                    return Err(Error::RuleIsActive(*rule));
                }
                if let RuleBody::Enforced { spec } = current.body {
                    check_rule(spec, &self.active_specs(), &self.base)?;
                }
            }
            Change::SetHandSize { size } => {
                if *size == self.base.hand_size {
                    return Err(Error::NoChange);
                }
                let per_seat = self.deck_size(timing) / usize::from(self.seat_count);
                let max =
                    (per_seat.saturating_sub(2 * TABLE_CARDS) as u8).min(*HAND_SIZE_RANGE.end());
                if *size < *HAND_SIZE_RANGE.start() || *size > max {
                    return Err(Error::HandSizeOutOfRange {
                        min: *HAND_SIZE_RANGE.start(),
                        max,
                    });
                }
            }
            Change::SetSpecial { special, rank } => {
                if self.base.special(*special) == *rank {
                    return Err(Error::NoChange);
                }
                if let Some(rank) = rank
                    && self.base.role_of(*rank).is_some_and(|r| r != *special)
                {
                    return Err(Error::RankAlreadySpecial { rank: *rank });
                }
            }
        }
        Ok(())
    }

    /// Applies a passed change, if it still applies.
    fn apply_change(&mut self, change: &Change, out: &mut Obs) {
        // Scheduled changes are checked again: a rule may have been cancelled meanwhile.
        if self.check_change(change, Timing::NextHand).is_err() {
            out.push(Observation::public(Event::ChangeLapsed {
                change: change.clone(),
            }));
            return;
        }
        match change {
            Change::RemoveRule { rule } => self.set_status(*rule, RuleStatus::Removed),
            Change::RestoreRule { rule } => self.set_status(*rule, RuleStatus::Active),
            Change::ModifyRule { rule, to } => {
                if let Some(r) = self.rules.iter_mut().find(|r| r.id == *rule) {
                    r.body = to.clone();
                }
            }
            Change::SetHandSize { size } => self.base.hand_size = *size,
            Change::SetSpecial { special, rank } => self.base.set_special(*special, *rank),
        }
        out.push(Observation::public(Event::ChangeApplied {
            change: change.clone(),
        }));
    }

    fn set_status(&mut self, id: RuleId, status: RuleStatus) {
        if let Some(r) = self.rules.iter_mut().find(|r| r.id == id) {
            r.status = status;
        }
    }

    // ---- hands, votes, Roshambo ----------------------------------------------------------

    /// Opens the current hand: scheduled changes take effect and the Rule Vote window opens.
    fn begin_hand(&mut self, out: &mut Obs) {
        for change in std::mem::take(&mut self.scheduled) {
            self.apply_change(&change, out);
        }
        self.vote_held = false;
        self.phase = Phase::Proposal {
            declined: SeatSet::EMPTY,
        };
        out.push(Observation::public(Event::HandStarted {
            hand: self.hand,
            dealer: self.dealer(),
            opener: self.opener(),
        }));
    }

    fn propose(
        &mut self,
        seat: Seat,
        change: &Change,
        timing: Timing,
        out: &mut Obs,
    ) -> Result<(), Error> {
        self.check_change(change, timing)?;
        let proposal = Proposal {
            by: seat,
            change: change.clone(),
            timing,
        };
        out.push(Observation::public(Event::Proposed {
            proposal: proposal.clone(),
        }));
        self.vote_held = true;
        self.phase = Phase::Voting {
            proposal,
            ballots: vec![None; usize::from(self.seat_count)],
            opposed: Vec::new(),
        };
        Ok(())
    }

    fn vote(&mut self, seat: Seat, ballot: Ballot, out: &mut Obs) {
        let Phase::Voting {
            proposal,
            ballots,
            opposed,
        } = &mut self.phase
        else {
            return;
        };
        ballots[usize::from(seat)] = Some(ballot);
        if ballot == Ballot::No {
            opposed.push(seat);
        }
        out.push(Observation::public(Event::Voted { seat }));
        if ballots.iter().any(Option::is_none) {
            return;
        }
        let proposal = proposal.clone();
        let opposed = opposed.clone();
        let ballots: Vec<Ballot> = ballots
            .iter()
            .map(|b| b.unwrap_or(Ballot::Abstain))
            .collect();
        let yes = ballots.iter().filter(|b| **b == Ballot::Yes).count() as u8;
        let n = self.seat_count;
        let result = if 2 * yes > n {
            VoteResult::Passed
        } else if 2 * yes == n {
            VoteResult::Tied
        } else {
            VoteResult::Failed
        };
        out.push(Observation::public(Event::VoteCounted {
            ballots,
            yes,
            result,
        }));
        match result {
            VoteResult::Passed => self.enact(&proposal, out),
            VoteResult::Failed => {}
            VoteResult::Tied => match self.defender(&proposal, &opposed) {
                None => self.enact(&proposal, out),
                Some(defender) => {
                    let challenger = proposal.by;
                    out.push(Observation::public(Event::RoshamboStarted {
                        challenger: proposal.by,
                        defender,
                    }));
                    self.phase = Phase::Roshambo {
                        proposal,
                        sides: [challenger, defender],
                        throws: [None, None],
                        score: [0, 0],
                        decisive: 0,
                        rounds: 0,
                        last_reveal: None,
                    };
                    return;
                }
            },
        }
        self.deal(out);
    }

    /// Who defends the rule in a tied vote: the rule's creator (for a custom rule removed or
    /// modified, unless they proposed it), else the first seat that voted no; `None` when
    /// nobody will defend it, so the change passes.
    fn defender(&self, proposal: &Proposal, opposed: &[Seat]) -> Option<Seat> {
        let creator = match &proposal.change {
            Change::RemoveRule { rule } | Change::ModifyRule { rule, .. } => {
                self.rule(*rule).ok().map(|r| r.creator)
            }
            _ => None,
        };
        creator
            .filter(|c| *c != proposal.by)
            .or_else(|| opposed.iter().copied().find(|s| *s != proposal.by))
    }

    fn throw(&mut self, seat: Seat, throw: Throw, out: &mut Obs) {
        let Phase::Roshambo {
            proposal,
            sides,
            throws,
            score,
            decisive,
            rounds,
            last_reveal,
        } = &mut self.phase
        else {
            return;
        };
        let side = if sides[0] == seat { 0 } else { 1 };
        throws[side] = Some(throw);
        out.push(Observation::public(Event::ThrowCommitted { seat }));
        let [Some(a), Some(b)] = *throws else {
            return;
        };
        *throws = [None, None];
        *rounds = rounds.wrapping_add(1);
        *last_reveal = Some([a, b]);
        if a.beats(b) {
            score[0] += 1;
            *decisive += 1;
        } else if b.beats(a) {
            score[1] += 1;
            *decisive += 1;
        }
        out.push(Observation::public(Event::ThrowsRevealed {
            challenger: a,
            defender: b,
            score: *score,
            decisive: *decisive,
        }));
        // Exactly 30 decisive throws; at 15–15 the next decisive throw wins.
        if *decisive < ROSHAMBO_THROWS || score[0] == score[1] {
            return;
        }
        let challenger_won = score[0] > score[1];
        let winner = if challenger_won { sides[0] } else { sides[1] };
        let proposal = proposal.clone();
        out.push(Observation::public(Event::RoshamboWon { seat: winner }));
        if challenger_won {
            self.enact(&proposal, out);
        }
        self.deal(out);
    }

    fn enact(&mut self, proposal: &Proposal, out: &mut Obs) {
        match proposal.timing {
            Timing::Now => self.apply_change(&proposal.change, out),
            Timing::NextHand => {
                out.push(Observation::public(Event::ChangeScheduled {
                    change: proposal.change.clone(),
                }));
                self.scheduled.push(proposal.change.clone());
            }
        }
    }

    /// Deals the current hand and opens the swaps.
    fn deal(&mut self, out: &mut Obs) {
        let mut deck: Vec<Card> = match (&self.config.fixed_deck, self.hand) {
            (Some(fixed), 0) => fixed.clone(),
            _ => {
                let mut deck = Card::deck();
                self.rng.shuffle(&mut deck);
                self.unused.clear();
                deck
            }
        };
        for p in &mut self.players {
            *p = Player::default();
        }
        self.pile.clear();
        self.pass_chain.clear();
        self.gone.clear();
        self.top_play_count = 0;
        self.obligation = false;
        self.reversed = false;
        self.skips = 0;
        self.turn = Turn::default();
        let hand_size = usize::from(self.base.hand_size);
        let mut cards = deck.drain(..);
        for seat in 0..self.seat_count {
            let p = &mut self.players[usize::from(seat)];
            p.face_down = cards.by_ref().take(TABLE_CARDS).collect();
            p.face_up = cards.by_ref().take(TABLE_CARDS).collect();
            p.hand = cards.by_ref().take(hand_size).collect();
        }
        let mut rest: Vec<Card> = cards.collect();
        rest.reverse();
        self.draw = rest;
        for seat in 0..self.seat_count {
            let p = self.player(seat);
            out.push(Observation::public(Event::Dealt {
                seat,
                face_up: p.face_up.clone(),
                face_down: p.face_down.len() as u8,
                in_hand: p.hand.len() as u8,
                draw_pile: self.draw.len() as u8,
            }));
            out.push(Observation::to_seat(
                seat,
                Event::YourHand {
                    cards: p.hand.clone(),
                },
            ));
        }
        self.phase = Phase::Swap {
            done: SeatSet::EMPTY,
        };
    }

    fn swap(&mut self, seat: Seat, hand: Card, face_up: Card, out: &mut Obs) -> Result<(), Error> {
        let p = self.player(seat);
        let h = p
            .hand
            .iter()
            .position(|c| *c == hand)
            .ok_or(Error::CardNotInHand(hand))?;
        let u = p
            .face_up
            .iter()
            .position(|c| *c == face_up)
            .ok_or(Error::CardNotFaceUp(face_up))?;
        let p = self.player_mut(seat);
        p.hand[h] = face_up;
        p.face_up[u] = hand;
        out.push(Observation::public(Event::Swapped {
            seat,
            to_hand: face_up,
            to_face_up: hand,
        }));
        self.swap_done(seat, out);
        Ok(())
    }

    fn swap_done(&mut self, seat: Seat, out: &mut Obs) {
        if let Phase::Swap { done } = &mut self.phase {
            done.insert(seat);
            if *done == SeatSet::first(self.seat_count) {
                self.phase = Phase::Play;
                self.start_turn(self.opener(), out);
            }
        }
    }

    // ---- play -----------------------------------------------------------------------------

    fn start_turn(&mut self, seat: Seat, out: &mut Obs) {
        let number = self.turn.number.wrapping_add(1);
        self.turn = Turn {
            seat,
            plays_left: 1,
            played: false,
            number,
        };
        out.push(Observation::public(Event::TurnStarted { seat }));
    }

    fn end_turn(&mut self, out: &mut Obs) {
        let mut next = self.next_seat(self.turn.seat);
        while self.skips > 0 {
            self.skips -= 1;
            out.push(Observation::public(Event::TurnSkipped { seat: next }));
            next = self.next_seat(next);
        }
        self.start_turn(next, out);
    }

    /// Whether a play of `count` cards of `rank` is valid on the table now.
    pub(super) fn check_play(&self, rank: Rank, count: u8) -> Result<(), Error> {
        let base = &self.base;
        let is = |special: Option<Rank>| special == Some(rank);
        if self.obligation {
            return match base.pass {
                Some(pass) if pass == rank => Ok(()),
                Some(pass) => Err(Error::PassObligation { pass }),
                None => Ok(()),
            };
        }
        if is(base.pass) {
            return Ok(());
        }
        let Some(top) = self.pile.last().map(|c| c.rank()) else {
            return Ok(());
        };
        let run = self
            .pile
            .iter()
            .rev()
            .take_while(|c| c.rank() == top)
            .count();
        let equal_ok = count > self.top_play_count || run + usize::from(count) >= 4;
        let need_more = Error::NeedMoreCards {
            rank,
            count: self.top_play_count,
        };
        if base.low == Some(top) {
            if is(base.burn) {
                return Err(Error::BurnOnLow {
                    burn: rank,
                    low: top,
                });
            }
            if is(base.reset) && rank != top {
                return Ok(());
            }
            return match rank.cmp(&top) {
                std::cmp::Ordering::Greater => Err(Error::MustPlayLow { low: top }),
                std::cmp::Ordering::Equal if !equal_ok => Err(need_more),
                _ => Ok(()),
            };
        }
        if rank == top {
            return if equal_ok { Ok(()) } else { Err(need_more) };
        }
        if is(base.burn) || is(base.reset) || base.reset == Some(top) || rank > top {
            return Ok(());
        }
        Err(Error::TooLow { rank, top })
    }

    fn play_from_hand(&mut self, seat: Seat, cards: &[Card], out: &mut Obs) -> Result<(), Error> {
        let Some(first) = cards.first() else {
            return Err(Error::EmptyPlay);
        };
        for (i, card) in cards.iter().enumerate() {
            if cards[..i].contains(card) {
                return Err(Error::DuplicateCard(*card));
            }
            if !self.player(seat).hand.contains(card) {
                return Err(Error::CardNotInHand(*card));
            }
            if card.rank() != first.rank() {
                return Err(Error::MixedRanks);
            }
        }
        self.check_play(first.rank(), cards.len() as u8)?;
        self.player_mut(seat).hand.retain(|c| !cards.contains(c));
        self.resolve_play(seat, cards.to_vec(), Source::Hand, out);
        Ok(())
    }

    fn play_face_down(&mut self, seat: Seat, index: u8, out: &mut Obs) -> Result<(), Error> {
        let p = self.player(seat);
        if !p.hand.is_empty() || !p.face_up.is_empty() {
            return Err(Error::FaceDownNotYet);
        }
        if usize::from(index) >= p.face_down.len() {
            return Err(Error::NoSuchFaceDown(index));
        }
        let card = self.player_mut(seat).face_down.remove(usize::from(index));
        if self.check_play(card.rank(), 1).is_ok() {
            self.resolve_play(seat, vec![card], Source::FaceDown, out);
        } else {
            out.push(Observation::public(Event::FaceDownFailed { seat, card }));
            self.pile.push(card);
            self.pick_up(seat, out);
            self.end_turn(out);
        }
        Ok(())
    }

    /// Resolves a valid play: the base effect, then custom rules, the draw, face-up cards, and
    /// the end of the turn once no play is left.
    fn resolve_play(&mut self, seat: Seat, cards: Vec<Card>, source: Source, out: &mut Obs) {
        let rank = cards[0].rank();
        let count = cards.len() as u8;
        let bonus = self.turn.played;
        self.turn.plays_left = self.turn.plays_left.saturating_sub(1);
        out.push(Observation::public(Event::Played {
            seat,
            cards: cards.clone(),
            source,
            bonus,
        }));
        let mut happened = vec![Happened::Played { rank, count }];
        let burned = if self.base.pass == Some(rank) {
            self.pass_chain.extend(cards);
            if self.pass_chain.len() >= 4 {
                Some(BurnCause::FourPasses)
            } else {
                // A pass on an empty table makes no pickup: the next player opens as normal.
                self.obligation = !self.pile.is_empty();
                None
            }
        } else {
            self.gone.append(&mut self.pass_chain);
            if self.base.burn == Some(rank) {
                self.gone.extend(cards);
                Some(BurnCause::BurnRank)
            } else {
                self.pile.extend(cards);
                self.top_play_count = count;
                let run = self
                    .pile
                    .iter()
                    .rev()
                    .take_while(|c| c.rank() == rank)
                    .count();
                (run >= 4).then_some(BurnCause::FourOfARank)
            }
        };
        // Out the moment the last card leaves: normally the last face-down card, or the last
        // card in hand when a failed blind card was the last face-down one.
        let p = self.player(seat);
        let won = p.hand.is_empty() && p.face_up.is_empty() && p.face_down.is_empty();
        if let Some(cause) = burned {
            // A player who just went out gets no bonus play.
            self.burn(seat, cause, !won, out);
            happened.push(Happened::Burned);
        }
        if won {
            self.finish_hand(seat, out);
            return;
        }
        self.fire(seat, happened, out);
        if self.obligation {
            let next = self.peek_next();
            out.push(Observation::public(Event::MustPickUpOrPass { seat: next }));
        }
        if !self.turn.played {
            self.turn.played = true;
            if self.player(seat).hand.len() < usize::from(self.base.hand_size) {
                self.draw_cards(seat, 1, out);
            }
        }
        self.take_face_up_if_due(seat, out);
        if self.turn.plays_left == 0 {
            self.end_turn(out);
        }
    }

    /// The seat that will play next, counting pending skips.
    fn peek_next(&self) -> Seat {
        let mut next = self.next_seat(self.turn.seat);
        for _ in 0..self.skips {
            next = self.next_seat(next);
        }
        next
    }

    fn burn(&mut self, seat: Seat, cause: BurnCause, bonus: bool, out: &mut Obs) {
        let mut cards = std::mem::take(&mut self.pile);
        cards.append(&mut self.pass_chain);
        // The burn rank itself already went to `gone`; report it with the burned cards.
        out.push(Observation::public(Event::Burned {
            seat,
            cause,
            cards: cards.clone(),
        }));
        self.gone.extend(cards);
        self.obligation = false;
        self.top_play_count = 0;
        if bonus {
            self.turn.plays_left = self.turn.plays_left.saturating_add(1);
            out.push(Observation::public(Event::BonusPlayGranted { seat }));
        }
    }

    fn pick_up(&mut self, seat: Seat, out: &mut Obs) {
        let cards = std::mem::take(&mut self.pile);
        self.gone.append(&mut self.pass_chain);
        self.obligation = false;
        self.top_play_count = 0;
        self.player_mut(seat).hand.extend(cards.iter().copied());
        out.push(Observation::public(Event::PickedUp { seat, cards }));
        self.fire(seat, vec![Happened::PickedUp], out);
        // A pickup ends the turn whatever a rule granted.
        self.turn.plays_left = 0;
    }

    fn draw_cards(&mut self, seat: Seat, count: u8, out: &mut Obs) {
        let mut drawn = Vec::new();
        for _ in 0..count {
            match self.draw.pop() {
                Some(card) => drawn.push(card),
                None => break,
            }
        }
        if drawn.is_empty() {
            return;
        }
        out.push(Observation::public(Event::Drew {
            seat,
            count: drawn.len() as u8,
        }));
        self.player_mut(seat).hand.extend(drawn.iter().copied());
        out.push(Observation::to_seat(seat, Event::YouDrew { cards: drawn }));
    }

    fn take_face_up_if_due(&mut self, seat: Seat, out: &mut Obs) {
        let p = self.player_mut(seat);
        if !p.hand.is_empty() || p.face_up.is_empty() {
            return;
        }
        let cards = std::mem::take(&mut p.face_up);
        p.hand = cards.clone();
        out.push(Observation::public(Event::FaceUpTaken { seat, cards }));
        self.fire(seat, vec![Happened::FaceUpTaken], out);
    }

    /// Runs the custom rules that `happened` sets off, in rule order, and whatever their
    /// effects set off in turn.
    fn fire(&mut self, seat: Seat, happened: Vec<Happened>, out: &mut Obs) {
        let mut queue: VecDeque<Happened> = happened.into();
        let mut budget = EFFECT_BUDGET;
        while let Some(event) = queue.pop_front() {
            let firing: Vec<(RuleId, Effect)> = self
                .rules
                .iter()
                .filter(|r| r.status == RuleStatus::Active)
                .filter_map(|r| match r.body {
                    RuleBody::Enforced { spec } if event.sets_off(spec.trigger) => {
                        Some((r.id, spec.effect))
                    }
                    _ => None,
                })
                .collect();
            for (rule, effect) in firing {
                if budget == 0 {
                    return;
                }
                budget -= 1;
                out.push(Observation::public(Event::RuleFired { rule, seat }));
                match effect {
                    Effect::NextPlayerSkips => self.skips = self.skips.saturating_add(1),
                    Effect::ReverseDirection => {
                        self.reversed = !self.reversed;
                        out.push(Observation::public(Event::DirectionReversed));
                    }
                    Effect::PlayerDraws { count } => self.draw_cards(seat, count, out),
                    Effect::OthersDrawOne => {
                        let mut other = self.next_seat(seat);
                        while other != seat {
                            self.draw_cards(other, 1, out);
                            other = self.next_seat(other);
                        }
                    }
                    Effect::BurnPile => {
                        if !self.pile.is_empty() {
                            self.burn(seat, BurnCause::CustomRule, true, out);
                            queue.push_back(Happened::Burned);
                        }
                    }
                    Effect::BonusPlay => {
                        if self.obligation {
                            out.push(Observation::public(Event::BonusPlayDropped { seat, rule }));
                        } else {
                            self.turn.plays_left = self.turn.plays_left.saturating_add(1);
                            out.push(Observation::public(Event::BonusPlayGranted { seat }));
                        }
                    }
                }
            }
        }
    }

    fn finish_hand(&mut self, winner: Seat, out: &mut Obs) {
        self.hands_won[usize::from(winner)] += 1;
        self.last_winner = Some(winner);
        out.push(Observation::public(Event::HandWon {
            seat: winner,
            hand: self.hand,
        }));
        self.hand += 1;
        if self.hand >= self.config.hands {
            self.phase = Phase::Over;
            let winners = self.outcome().map(|o| o.winners).unwrap_or_default();
            out.push(Observation::public(Event::MatchOver {
                hands_won: self.hands_won.clone(),
                winners,
            }));
        } else {
            self.phase = Phase::RuleCreation { winner };
        }
    }

    // ---- views ----------------------------------------------------------------------------

    pub(super) fn view(&self, viewer: Viewer) -> View {
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
                let mut hand = self.player(s).hand.clone();
                hand.sort();
                hand
            }),
            seats: (0..self.seat_count)
                .map(|s| {
                    let p = self.player(s);
                    SeatView {
                        face_up: p.face_up.clone(),
                        face_down: p.face_down.len() as u8,
                        in_hand: p.hand.len() as u8,
                        hands_won: self.hands_won[usize::from(s)],
                    }
                })
                .collect(),
            pile: self.pile.clone(),
            top_play_count: self.top_play_count,
            pass_chain: self.pass_chain.clone(),
            pass_obligation: self.obligation,
            play_at_most: top.filter(|t| self.base.low == Some(*t)),
            draw_pile: self.draw.len() as u8,
            out_of_hand: self.gone.len() as u8,
            clockwise: !self.reversed,
            pending_skips: self.skips,
            base: self.base.clone(),
            rules: self.rules.clone(),
            scheduled: self.scheduled.clone(),
            vote_held: self.vote_held,
        }
    }
}
