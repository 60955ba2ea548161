//! What crosses the engine's boundary: the config, the actions a seat may take, the events
//! it may observe, and the typed refusals. These map 1:1 to protobuf messages, so their
//! serde forms are part of the stored-match contract: change them only with a rules-version
//! bump.

use serde::{Deserialize, Serialize};

use super::card::{Card, Rank};
use super::catalogue::{Change, Rule, RuleBody, RuleId, RuleSpec, Timing};
use crate::core::{GameError, Seat, SeatSet};

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
        table_rule: Option<String>,
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
    Play { cards: Vec<Card> },
    /// With hand and face-up cards gone: turn face-down card `index` and play it blind.
    PlayFaceDown { index: u8 },
    /// Pick up the play pile; ends the turn.
    PickUp,
    /// Any time: the creator withdraws their own rule, without a vote.
    CancelRule { rule: RuleId },
}

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

/// A refused action. Messages name only what the acting seat may know.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("the match is over")]
    MatchOver,
    #[error("there is no seat {0}")]
    NoSuchSeat(Seat),
    #[error("it is not your turn to act")]
    NotYourTurn,
    #[error("that action doesn't belong to this phase of the game")]
    WrongPhase,
    #[error("a play needs at least one card")]
    EmptyPlay,
    #[error("a play is of one rank only")]
    MixedRanks,
    #[error("card {0} is named twice")]
    DuplicateCard(Card),
    #[error("card {0} is not in your hand")]
    CardNotInHand(Card),
    #[error("card {0} is not among your face-up cards")]
    CardNotFaceUp(Card),
    #[error("during a pass obligation, play {pass}s or pick up")]
    PassObligation { pass: Rank },
    #[error("a {burn} can't follow a {low}")]
    BurnOnLow { burn: Rank, low: Rank },
    #[error("after a {low} the play must be {low} or lower")]
    MustPlayLow { low: Rank },
    #[error("a {rank} is lower than the {top} on the pile")]
    TooLow { rank: Rank, top: Rank },
    #[error("on {count} × {rank}, play more of them or complete all four")]
    NeedMoreCards { rank: Rank, count: u8 },
    #[error("there is no pile to pick up")]
    NothingToPickUp,
    #[error("face-down cards are played only when hand and face-up cards are gone")]
    FaceDownNotYet,
    #[error("there is no face-down card at index {0}")]
    NoSuchFaceDown(u8),
    #[error("play from your hand first")]
    HandNotEmpty,
    #[error("you already swapped this hand")]
    AlreadySwapped,
    #[error("there is no rule {0}")]
    NoSuchRule(RuleId),
    #[error("rule {0} is not active")]
    RuleNotActive(RuleId),
    #[error("rule {0} is active")]
    RuleIsActive(RuleId),
    #[error("only a rule's creator may cancel it")]
    NotRuleCreator,
    #[error("create an enforced rule, a table rule, or skip")]
    EmptyRule,
    #[error("the rule loops without end")]
    RuleLoops,
    #[error("the rule contradicts a base rule: {reason}")]
    RuleContradictsBaseRule { reason: &'static str },
    #[error("the same rule is already active")]
    RuleDuplicate,
    #[error("that rule was removed this session; only a Rule Vote may bring it back")]
    RuleWasRemoved,
    #[error("{what} must be from {min} to {max}")]
    RuleOutOfRange {
        what: &'static str,
        min: u8,
        max: u8,
    },
    #[error("a table rule is 1 to {max} characters of text, without control characters")]
    TableRuleText { max: usize },
    #[error("this hand's Rule Vote was already held")]
    VoteAlreadyHeld,
    #[error("the Rule Vote is held only when the deal starts")]
    NoVoteNow,
    #[error("the change would change nothing")]
    NoChange,
    #[error("hand size must be from {min} to {max} and fit the deck for every seat")]
    HandSizeOutOfRange { min: u8, max: u8 },
    #[error("{rank} already has another special role")]
    RankAlreadySpecial { rank: Rank },
    #[error("you already acted in this phase")]
    AlreadyActed,
    #[error("you are not a side in this Roshambo")]
    NotInRoshambo,
}

impl GameError for Error {
    fn code(&self) -> &'static str {
        match self {
            Error::MatchOver => "match-over",
            Error::NoSuchSeat(_) => "no-such-seat",
            Error::NotYourTurn => "not-your-turn",
            Error::WrongPhase => "wrong-phase",
            Error::EmptyPlay => "empty-play",
            Error::MixedRanks => "mixed-ranks",
            Error::DuplicateCard(_) => "duplicate-card",
            Error::CardNotInHand(_) => "card-not-in-hand",
            Error::CardNotFaceUp(_) => "card-not-face-up",
            Error::PassObligation { .. } => "pass-obligation",
            Error::BurnOnLow { .. } => "burn-on-low",
            Error::MustPlayLow { .. } => "must-play-low",
            Error::TooLow { .. } => "too-low",
            Error::NeedMoreCards { .. } => "need-more-cards",
            Error::NothingToPickUp => "nothing-to-pick-up",
            Error::FaceDownNotYet => "face-down-not-yet",
            Error::NoSuchFaceDown(_) => "no-such-face-down",
            Error::HandNotEmpty => "hand-not-empty",
            Error::AlreadySwapped => "already-swapped",
            Error::NoSuchRule(_) => "no-such-rule",
            Error::RuleNotActive(_) => "rule-not-active",
            Error::RuleIsActive(_) => "rule-is-active",
            Error::NotRuleCreator => "not-rule-creator",
            Error::EmptyRule => "empty-rule",
            Error::RuleLoops => "rule-loops",
            Error::RuleContradictsBaseRule { .. } => "rule-contradicts-base-rule",
            Error::RuleDuplicate => "rule-duplicate",
            Error::RuleWasRemoved => "rule-was-removed",
            Error::RuleOutOfRange { .. } => "rule-out-of-range",
            Error::TableRuleText { .. } => "table-rule-text",
            Error::VoteAlreadyHeld => "vote-already-held",
            Error::NoVoteNow => "no-vote-now",
            Error::NoChange => "no-change",
            Error::HandSizeOutOfRange { .. } => "hand-size-out-of-range",
            Error::RankAlreadySpecial { .. } => "rank-already-special",
            Error::AlreadyActed => "already-acted",
            Error::NotInRoshambo => "not-in-roshambo",
        }
    }
}
