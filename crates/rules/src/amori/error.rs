//! Why an Amori e Intrighi action was refused: one variant per rule, each with a stable
//! kebab-case code.

use crate::core::{GameError, Seat};

/// A refused action. None reveals anything hidden from the acting seat.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("the match is over")]
    MatchOver,
    #[error("there is no seat {0}")]
    NoSuchSeat(Seat),
    #[error("the game is not waiting for this seat")]
    NotYourTurn,
    #[error("that action does not fit this step of the turn")]
    WrongPhase,
    #[error("the daughter must move to a different location (or stay to intrigue)")]
    MustMove,
    #[error("an intrigue needs a rival daughter at an intrigue location, both holding gentlemen")]
    NoIntrigue,
    #[error("that is not a daughter this card may aim at")]
    InvalidTarget,
    #[error("that choice does not fit this card or location")]
    InvalidChoice,
    #[error("that gentleman card is not on offer")]
    CardNotOffered,
    #[error("the daughter holds no card of that gentleman")]
    NotASuitor,
    #[error("that event card is not in your hand")]
    CardNotInHand,
    #[error("a reaction card is played only in answer to a hostile card")]
    ReactionOnly,
    #[error("only a reaction card answers a hostile card")]
    NotAReaction,
    #[error("there is no gentleman card to take there")]
    NothingToTake,
    #[error("you have no daughter in play")]
    NoDaughter,
}

impl GameError for Error {
    fn code(&self) -> &'static str {
        match self {
            Error::MatchOver => "match-over",
            Error::NoSuchSeat(_) => "no-such-seat",
            Error::NotYourTurn => "not-your-turn",
            Error::WrongPhase => "wrong-phase",
            Error::MustMove => "must-move",
            Error::NoIntrigue => "no-intrigue",
            Error::InvalidTarget => "invalid-target",
            Error::InvalidChoice => "invalid-choice",
            Error::CardNotOffered => "card-not-offered",
            Error::NotASuitor => "not-a-suitor",
            Error::CardNotInHand => "card-not-in-hand",
            Error::ReactionOnly => "reaction-only",
            Error::NotAReaction => "not-a-reaction",
            Error::NothingToTake => "nothing-to-take",
            Error::NoDaughter => "no-daughter",
        }
    }
}
