//! Why an action was refused. Messages name only what the acting seat already knows.

use super::cards::{CardId, Role};
use crate::{GameError, Seat};

/// A refused Love Letter action.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("the match is over")]
    MatchOver,
    #[error("seat {0} is not at this table")]
    NoSuchSeat(Seat),
    #[error("it is not your turn")]
    NotYourTurn,
    #[error("{0} is not in your hand")]
    CardNotInHand(CardId),
    #[error("with the King or a Prince in hand you must play the Countess")]
    CountessMustBePlayed,
    #[error("this card needs a target")]
    TargetRequired,
    #[error("this card takes no target now")]
    TargetNotAllowed,
    #[error("this card must choose another player")]
    CannotTargetSelf,
    #[error("every other player is protected: the Prince must choose you")]
    MustTargetSelf,
    #[error("seat {0} is protected by a Handmaid")]
    TargetProtected(Seat),
    #[error("seat {0} is out of the round")]
    TargetOut(Seat),
    #[error("the Guard must name a role")]
    GuessRequired,
    #[error("only a Guard names a role")]
    GuessNotAllowed,
    #[error("the Guard cannot name the Guard")]
    GuessGuard,
    #[error("{0} is not in this edition")]
    GuessNotInEdition(Role),
    #[error("finish the Chancellor's choice first")]
    ChancellorChoicePending,
    #[error("there is no Chancellor choice to make")]
    NoChancellorChoice,
    #[error("keep one card you hold and return each of the others exactly once")]
    BadChancellorChoice,
}

impl GameError for Error {
    fn code(&self) -> &'static str {
        match self {
            Error::MatchOver => "match-over",
            Error::NoSuchSeat(_) => "no-such-seat",
            Error::NotYourTurn => "not-your-turn",
            Error::CardNotInHand(_) => "card-not-in-hand",
            Error::CountessMustBePlayed => "countess-must-be-played",
            Error::TargetRequired => "target-required",
            Error::TargetNotAllowed => "target-not-allowed",
            Error::CannotTargetSelf => "cannot-target-self",
            Error::MustTargetSelf => "must-target-self",
            Error::TargetProtected(_) => "target-protected",
            Error::TargetOut(_) => "target-out",
            Error::GuessRequired => "guess-required",
            Error::GuessNotAllowed => "guess-not-allowed",
            Error::GuessGuard => "guess-guard",
            Error::GuessNotInEdition(_) => "guess-not-in-edition",
            Error::ChancellorChoicePending => "chancellor-choice-pending",
            Error::NoChancellorChoice => "no-chancellor-choice",
            Error::BadChancellorChoice => "bad-chancellor-choice",
        }
    }
}
