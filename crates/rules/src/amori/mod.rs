//! *Amori e Intrighi* (*Liebe und Intrige*, Ernst and Samol, 2007) for 2–4 players: mothers
//! marry off their three daughters to the best gentlemen they can.
//!
//! The rules follow `docs/games/amori-e-intrighi.md`; the printed values it fixes for our edition
//! (gentlemen, daughters, locations, dice, event cards) live in [`data`] and nowhere else.
//!
//! # Turn structure, as [`Phase`]s
//! - [`Phase::Visit`]: the current player moves the daughter to a location other than the one
//!   she stands at ([`Action::Visit`]), or stays and intrigues there at once
//!   ([`Action::Intrigue`] in this phase: the only case in which she need not move).
//! - [`Phase::ActionOrIntrigue`]: the location's action ([`Action::LocationAction`]: attribute
//!   boxes, then dice, then a gentleman card) or an intrigue against a daughter at the same
//!   location.
//! - [`Phase::ChooseGentleman`]: the chooser sees the location deck (in their view and a
//!   private [`Event::DeckShown`]) and takes one card; the main deck's top card refills the
//!   location deck. Before showing, cards of married gentlemen in that deck leave the game and
//!   are replaced from the main deck. An empty deck offers nothing and the step is skipped.
//! - [`Phase::IntrigueSpoils`]: after the Intrigue die, the winner of the roll picks one card
//!   from the other daughter (on a failure, the victim's player decides, out of turn).
//! - [`Phase::SuitorLimit`]: a card of a fourth gentleman is about to join a daughter; her
//!   player (maybe not the current one) gives up all the cards of one of the three.
//! - [`Phase::Reaction`]: a hostile event card aims at a daughter; her player may answer with
//!   a Chaperone or pass. The window opens whether or not she holds a Chaperone, so that
//!   waiting never reveals what is in her hand.
//! - [`Phase::Events`]: play event cards, or [`Action::EndTurn`], which draws one card.
//! - [`Phase::Discard`]: over the hand limit after the draw, discard one card.
//!
//! Event cards may be played in the visit, action-or-intrigue and event steps of one's own
//! turn (not while a nested decision is pending). A reaction card is never played that way.
//!
//! # Decisions this implementation makes
//! - Marriages are checked after every change, for every daughter. A daughter who qualifies
//!   for two gentlemen at once marries the one worth more VP (the earlier in the table on a
//!   tie). Any marriage ends the current player's turn at once: they draw and play passes on.
//! - Cards of a married gentleman are taken out of the game ("retired", a public pile), both
//!   those face up when he marries and those drawn or revealed later. They are not shuffled
//!   back into the main deck, which would otherwise cycle them forever.
//! - The main deck is rebuilt from the gentleman discards when a card is needed and it is
//!   empty; with no card anywhere, nothing is drawn.
//! - A player whose three daughters are married takes no more turns. The round in which the
//!   first player completes three marriages is finished, up to the seat before the starting
//!   player; then medals and scores.
//! - Intrigue by Letter aims at a daughter standing at any location that allows intrigues,
//!   and, as a location intrigue, needs both daughters to hold a gentleman card.
//!
//! # Who sees what
//! Public: attributes, pawns, gentleman cards under daughters, brides, kept VP cards, dice,
//! discard piles, deck and hand sizes. Private to a seat: its event hand and draws, and a
//! location deck while that seat chooses from it (shown sorted, so deck order never shows).
//! Hidden from all: deck order, face-down daughters, the unused daughter boards.

mod cards;
pub mod data;
mod error;
mod game;
#[cfg(test)]
mod tests;
mod types;

pub use self::cards::{CardId, DaughterId, EventCardId, EventKind, GentlemanId, ParseIdError};
pub use self::data::{Attribute, Attributes, Die, DieFace, Location};
pub use self::error::Error;
pub use self::game::Amori;
pub use self::types::{
    Action, ActiveDaughter, Bride, Config, DeckSize, Event, LocationDeckView, Medal, Phase,
    PlayerView, Scoring, SeatSetup, View,
};
