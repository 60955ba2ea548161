//! Pure game engines for Missive.
//!
//! Every game implements [`Game`]: set up from a config and a seed, say who may act, list
//! every legal action, apply one (or refuse it with a typed error, leaving the state as it
//! was), and show each seat only what that seat may know.
//!
//! **Architecture invariant:** this crate does no I/O, no async, reads no clock and draws
//! no OS randomness. The only randomness is the seeded [`GameRng`] that lives inside each
//! game state, so the same config, seed and actions give the same states, bit for bit.
//!
//! Every game module has the same shape: `mod.rs` (the rules as implemented, re-exports),
//! `types.rs` (config, actions, events, views), `error.rs` (the refusals and their stable
//! codes), `game.rs` (the [`Game`] impl: setup, legal actions, apply, views) and `cards.rs`
//! (the cards and their ids); game-specific modules sit beside them. Refusals every game
//! shares have one code (`match-over`, `no-such-seat`, `not-your-turn`), and every setup
//! checks the seat count with [`SetupError::check_seats`].
//!
//! With the `testing` feature, `missive_rules::testing` is the harness of the invariants
//! every game keeps, which each game's property tests run at every seat count.

pub mod amori;
mod core;
mod fixed;
pub mod lopti;
pub mod love_letter;
pub mod rng;
#[cfg(feature = "testing")]
pub mod testing;

pub use crate::core::{
    Audience, Discard, Game, GameError, Observation, Outcome, Record, Seat, SeatSet, SetupError,
    Viewer,
};
pub use crate::rng::{GameRng, Seed};
