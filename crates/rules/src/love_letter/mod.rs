//! Love Letter (2019 and classic editions): a round-based deduction card game for 2–6 players.
//!
//! The rules are in `docs/games/love-letter.md`. [`LoveLetter`] is the whole match state, rounds
//! included: [`Game::apply`](crate::Game::apply) deals the next round itself when one ends, so
//! a stored action list replays a match from setup to its last token. Every hidden card stays
//! out of the views and observations of those who may not know it.

mod cards;
mod error;
mod game;
mod types;

pub use cards::{CardId, Edition, Role, UnknownCard, UnknownRole};
pub use error::Error;
pub use game::LoveLetter;
pub use types::{
    Action, Bottom, Config, Event, PlayerView, RoundEnd, RoundResult, TokenReason, View,
};
