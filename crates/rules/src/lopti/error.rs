//! Why a Lopti action was refused: one variant per rule, each with a stable kebab-case code.
//! Messages name only what the acting seat may know.

use super::cards::{Card, Rank};
use super::catalogue::RuleId;
use crate::core::{GameError, Seat};

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
