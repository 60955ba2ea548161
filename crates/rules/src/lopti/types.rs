//! What crosses the engine's boundary: the config, the actions a seat may take, the events
//! it may observe, and what a viewer sees. These map 1:1 to protobuf messages, so their
//! serde forms are part of the stored-match contract: change them only with a rules-version
//! bump.
//!
//! # Views
//! A seat sees its own hand, every seat's face-up cards, how many face-down and hand cards each
//! seat holds, the pile, the chain of passes, the draw pile's size, the rules, and the vote or
//! Roshambo in progress. Face-down cards are shown to nobody, their owner included, until they
//! are turned; a ballot or a committed throw is shown only to the seat that cast it until the
//! count or the reveal. A spectator sees what every seat sees, without any own hand.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use super::cards::{Card, Rank};
use super::catalogue::{BaseRules, Change, Rule, RuleBody, RuleId, RuleSpec, Timing};
use crate::core::{Seat, SeatSet, Viewer};

/// How a session is set up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    /// Hands in the session (1 to 15). The match ends after the last one.
    pub hands: u8,
    /// The first hand's deck, top card first, instead of a shuffle. It may hold fewer than 52
    /// distinct cards (a short deck for scenarios); cards left out stay out of the first hand.
    /// It is dealt in blocks: seat 0 gets 3 face-down, 3 face-up, then `hand_size` in hand;
    /// then seat 1, and so on; the rest is the draw pile, top first. Later hands shuffle the
    /// full deck.
    pub fixed_deck: Option<Vec<Card>>,
    /// Rules of an earlier session that the table approved by majority while setting this one
    /// up (that vote happens before the match is created and uses no hand's Rule Vote). They
    /// start active, in this order, and are checked like new rules.
    pub carried_rules: Vec<CarriedRule>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            hands: 3,
            fixed_deck: None,
            carried_rules: Vec::new(),
        }
    }
}

/// A rule brought back from an earlier session, with the seat now answering for it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CarriedRule {
    pub creator: Seat,
    pub body: RuleBody,
}

/// Most hands a session may have.
pub const MAX_HANDS: u8 = 15;

/// A rock-paper-scissors throw.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Throw {
    Rock,
    Paper,
    Scissors,
}

impl Throw {
    pub const ALL: [Throw; 3] = [Throw::Rock, Throw::Paper, Throw::Scissors];

    /// Whether this throw beats `other`.
    pub fn beats(self, other: Throw) -> bool {
        matches!(
            (self, other),
            (Throw::Rock, Throw::Scissors)
                | (Throw::Paper, Throw::Rock)
                | (Throw::Scissors, Throw::Paper)
        )
    }
}

/// A ballot in a Rule Vote. Only `yes` counts toward passing; `no` also formally opposes
/// (the first to oppose a base-rule change defends it in a Roshambo).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ballot {
    Yes,
    No,
    Abstain,
}

/// A change put to the vote.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    pub by: Seat,
    pub change: Change,
    pub timing: Timing,
}

/// Something a seat does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Action {
    /// Swap phase: exchange a card in hand with one of your face-up cards (once per hand).
    Swap { hand: Card, face_up: Card },
    /// Swap phase: keep the cards as dealt (or stop after a swap).
    KeepCards,
    /// Rule creation: the last hand's winner adds an enforced rule, a table rule, or both.
    CreateRule {
        rule: Option<RuleSpec>,
        table_rule: Option<Arc<str>>,
    },
    /// Rule creation: add nothing.
    SkipRule,
    /// Vote window: put a change to this hand's Rule Vote.
    Propose { change: Change, timing: Timing },
    /// Vote window: make no proposal.
    DeclineProposal,
    /// Voting: cast a ballot (hidden until every seat has voted).
    Vote { ballot: Ballot },
    /// Roshambo: commit a throw (hidden until both are in).
    Throw { throw: Throw },
    /// Play one or more cards of one rank from hand.
    Play { cards: PlayedCards },
    /// With hand and face-up cards gone: turn face-down card `index` and play it blind.
    PlayFaceDown { index: u8 },
    /// Pick up the play pile; ends the turn.
    PickUp,
    /// Any time: the creator withdraws their own rule, without a vote.
    CancelRule { rule: RuleId },
}

/// The cards of a [`Action::Play`]: kept inline up to the four a rank has in the deck, so
/// listing and replaying plays does not allocate; more (never a legal play) spill to the
/// heap and are refused by the rules, not by the type. Reads and writes as a list.
pub type PlayedCards = SmallVec<[Card; 4]>;

/// Where a play's cards came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    Hand,
    FaceDown,
}

/// What made the pile burn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BurnCause {
    BurnRank,
    FourOfARank,
    FourPasses,
    CustomRule,
}

/// How a Rule Vote ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VoteResult {
    Passed,
    Failed,
    /// Exactly half voted yes: a Roshambo decides, or the change passes undefended.
    Tied,
}

/// Something that happened. The audience of each observation says who may see it; events
/// carrying a private card go only to its holder.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Event {
    HandStarted {
        hand: u8,
        dealer: Seat,
        opener: Seat,
    },
    /// Public part of the deal.
    Dealt {
        seat: Seat,
        face_up: Vec<Card>,
        face_down: u8,
        in_hand: u8,
        draw_pile: u8,
    },
    /// Private: your cards in hand.
    YourHand {
        cards: Vec<Card>,
    },
    Swapped {
        seat: Seat,
        to_hand: Card,
        to_face_up: Card,
    },
    KeptCards {
        seat: Seat,
    },
    TurnStarted {
        seat: Seat,
    },
    Played {
        seat: Seat,
        cards: Vec<Card>,
        source: Source,
        bonus: bool,
    },
    /// A face-down card turned and found invalid: it joined the pile, which the player took.
    FaceDownFailed {
        seat: Seat,
        card: Card,
    },
    PickedUp {
        seat: Seat,
        cards: Vec<Card>,
    },
    /// Public: a seat drew this many cards.
    Drew {
        seat: Seat,
        count: u8,
    },
    /// Private: the cards you drew.
    YouDrew {
        cards: Vec<Card>,
    },
    Burned {
        seat: Seat,
        cause: BurnCause,
        cards: Vec<Card>,
    },
    /// A 3-obligation now lies on `seat`.
    MustPickUpOrPass {
        seat: Seat,
    },
    FaceUpTaken {
        seat: Seat,
        cards: Vec<Card>,
    },
    RuleFired {
        rule: RuleId,
        seat: Seat,
    },
    TurnSkipped {
        seat: Seat,
    },
    DirectionReversed,
    BonusPlayGranted {
        seat: Seat,
    },
    BonusPlayDropped {
        seat: Seat,
        rule: RuleId,
    },
    HandWon {
        seat: Seat,
        hand: u8,
    },
    RuleCreated {
        rule: Rule,
    },
    RuleSkipped {
        seat: Seat,
    },
    RuleCancelled {
        rule: RuleId,
        by: Seat,
    },
    Proposed {
        proposal: Proposal,
    },
    ProposalDeclined {
        seat: Seat,
    },
    /// Public: `seat` has voted (the ballot stays hidden until the count).
    Voted {
        seat: Seat,
    },
    VoteCounted {
        ballots: Vec<Ballot>,
        yes: u8,
        result: VoteResult,
    },
    RoshamboStarted {
        challenger: Seat,
        defender: Seat,
    },
    /// Public: `seat` has committed a throw (hidden until both are in).
    ThrowCommitted {
        seat: Seat,
    },
    ThrowsRevealed {
        challenger: Throw,
        defender: Throw,
        score: [u8; 2],
        decisive: u8,
    },
    RoshamboWon {
        seat: Seat,
    },
    ChangeApplied {
        change: Change,
    },
    ChangeScheduled {
        change: Change,
    },
    /// A scheduled change no longer applies (its rule changed meanwhile).
    ChangeLapsed {
        change: Change,
    },
    MatchOver {
        hands_won: Vec<u8>,
        winners: SeatSet,
    },
}

/// One seat's public side of the table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatView {
    pub face_up: Vec<Card>,
    pub face_down: u8,
    pub in_hand: u8,
    pub hands_won: u8,
}

/// The phase the session is in, as a viewer may see it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum PhaseView {
    /// The last hand's winner creates a rule (or skips) before the next deal.
    RuleCreation {
        winner: Seat,
    },
    /// Any seat may propose this hand's Rule Vote; `declined` have passed on it.
    Proposal {
        declined: SeatSet,
    },
    /// Every seat votes; `voted` have cast a ballot. `your_ballot` is the viewer's own.
    Voting {
        proposal: Proposal,
        voted: SeatSet,
        your_ballot: Option<Ballot>,
    },
    /// A tied vote is settled by rock-paper-scissors: `sides` are [challenger, defender].
    Roshambo {
        proposal: Proposal,
        sides: [Seat; 2],
        score: [u8; 2],
        decisive: u8,
        committed: SeatSet,
        your_throw: Option<Throw>,
        last_reveal: Option<[Throw; 2]>,
    },
    /// Each seat may swap once; `done` have finished.
    Swap {
        done: SeatSet,
    },
    /// `seat` is on turn with `plays_left` plays (more than one after a burn or bonus).
    Play {
        seat: Seat,
        plays_left: u8,
        played: bool,
    },
    Over,
}

/// A viewer's picture of the session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct View {
    pub viewer: Viewer,
    /// The current hand, from 0; equals `hands` once the match is over.
    pub hand: u8,
    pub hands: u8,
    pub dealer: Seat,
    pub phase: PhaseView,
    pub awaiting: SeatSet,
    /// The viewer's own cards in hand; `None` for a spectator.
    pub your_hand: Option<Vec<Card>>,
    pub seats: Vec<SeatView>,
    /// The play pile, bottom first.
    pub pile: Vec<Card>,
    /// How many cards the top play of the pile had.
    pub top_play_count: u8,
    /// The chain of passes beside the pile.
    pub pass_chain: Vec<Card>,
    /// Whether the next play must be a pass or a pickup.
    pub pass_obligation: bool,
    /// Set when a low card tops the pile: the next play must be this rank or lower.
    pub play_at_most: Option<Rank>,
    pub draw_pile: u8,
    /// Cards burned or discarded this hand.
    pub out_of_hand: u8,
    pub clockwise: bool,
    pub pending_skips: u8,
    pub base: BaseRules,
    /// Every rule of the session, active or not.
    pub rules: Vec<Rule>,
    /// Passed changes waiting for the next hand.
    pub scheduled: Vec<Change>,
    /// Whether this hand's Rule Vote has been held.
    pub vote_held: bool,
}
