//! Lopti: a shedding game in the Palace family, played in sessions of several hands, where
//! each hand's winner adds a rule for the rest of the session and the table may vote rules
//! away. The rules are in `docs/games/lopti.md` (from the Italian seed, which wins
//! where they differ); this module documents the choices a digital table had to make.
//!
//! # A session
//! [`Config::hands`] hands (default 3); the match ends after the last one, and the winners are
//! the seats with the most hands won (scores = hands won). Hand `h` is dealt by seat
//! `h mod seats`; the first hand's dealer opens it, later hands are opened by the previous
//! hand's winner. Each hand runs through explicit phases, and [`Game::awaiting`] names every
//! seat a phase waits for:
//!
//! 1. **Rule creation** (from the second hand): the last winner creates an enforced rule from
//!    the [`catalogue`], a free-text table rule, both, or skips.
//! 2. **Proposal** (simultaneous): this hand's one Rule Vote. Every seat either proposes a
//!    [`Change`] with a [`Timing`] or declines; the first proposal goes to the vote, and the
//!    window closes unused when every seat has declined. Proposing later in the hand is
//!    refused (`vote-already-held`, or `no-vote-now` when the window lapsed unused).
//! 3. **Voting** (simultaneous): every seat votes yes, no or abstain; ballots stay hidden
//!    until the last one is in, then all are published with the count. More than half of all
//!    seats voting yes passes; exactly half is a tie; anything less fails.
//! 4. **Roshambo** on a tie: the proposer faces the rule's creator (for removing or modifying
//!    a custom rule, unless the creator proposed it), otherwise the first seat that voted no.
//!    With nobody to defend, the change passes. Each side commits a throw, hidden in the state
//!    until both are in, then both are revealed. Draws don't count; after exactly 30 decisive
//!    throws the side with more wins, and at 15–15 the next decisive throw decides. The sides
//!    are fixed by the rules above, so the seed's knockout tournament for choosing a
//!    representative never arises.
//! 5. **Deal and swaps** (simultaneous): the deck is shuffled with the state's RNG (or taken
//!    from [`Config::fixed_deck`] for the first hand) and dealt in blocks per seat; each seat
//!    swaps one hand card with one face-up card, or keeps its cards.
//! 6. **Play** until the first player goes out (normally with their last face-down card).
//!    That player wins the hand. Settling the other places is optional at the table and changes no
//!    score, so the engine ends the hand there.
//!
//! The vote is held before the deal, so a change passed "now" (hand size, special ranks,
//! custom rules) already governs this hand's deal; "next hand" changes wait for the next
//! hand's start, and lapse if their rule changed meanwhile. A creator may cancel their own
//! rule at any moment, even out of turn ([`Action::CancelRule`]). Removed or cancelled rules
//! stay out: the winner can't create the same rule again; only a later vote may restore it.
//! Every session starts from zero, except for [`Config::carried_rules`]: old rules the table
//! approved by majority while setting the session up. Table rules are free text the engine
//! records and shows but neither enforces nor judges: keeping them fair (conditions, not
//! people) is the table's business.
//!
//! # A turn
//! A play is one or more cards of one rank from hand; [`Action::PlayFaceDown`] turns a
//! face-down card once hand and face-up cards are gone (the engine reveals it; if invalid it
//! joins the pile, which the player picks up, and the turn ends). In order, a valid play:
//! resolves its base effect (pass, burn, four of a rank); runs the custom rules it sets off;
//! draws one card if it was the turn's first play and the hand is under the hand size; takes
//! the face-up cards into hand if the hand is now empty. Each burn adds one bonus play to the
//! turn; the turn ends when no play is left or on a pickup. Edge cases decided here:
//!
//! - Passes (3s) always chain, on an empty table too, until a non-pass is played or the pile
//!   is picked up or burned; four chained passes burn even an empty table (and give the bonus
//!   play). A pass makes an obligation only when a pile lies under it.
//! - "Equal with more cards" compares with the top play's card count; "completing four" counts
//!   the run of that rank on top of the pile, across plays.
//! - A reset (2) is playable on a low card (7) whatever rank the reset role holds; a burn (10)
//!   never is.
//! - A player is out the moment a valid play leaves them no card anywhere: normally with the
//!   last face-down card; if their last face-down card failed, with the last card of the hand
//!   it sent them. Going out comes before the draw.
//! - A winning face-down card still resolves its base effect (a burn still burns) but its
//!   player gets no bonus play and no custom rule fires: the hand is over.
//!
//! # Legal actions and timeouts
//! [`Game::legal_actions`] lists plays as one action per (rank, count), taking the lowest
//! suits: any other choice of suits with the same rank and count is equally legal. Rule
//! creation and proposals list every catalogue rule and change that passes the checks, but not
//! free-text table rules, which can't be enumerated. [`Game::default_action`]: keep cards,
//! skip the rule, decline the proposal, abstain; in play, every held card of the lowest
//! playable rank (every fourth round of turns, another playable rank chosen by the round
//! number, so that a table where every seat times out does not repeat one cycle of pickups;
//! a test plays 2,000 sessions on defaults alone to their end),
//! else the first face-down card, else a pickup. A timed-out Roshambo throw is predictable by
//! design (it cycles with the round, the defender one step ahead of the challenger), so a
//! player who lets the clock run gives their opponent an edge.
//!
//! [`Game::awaiting`]: crate::Game::awaiting
//! [`Game::legal_actions`]: crate::Game::legal_actions
//! [`Game::default_action`]: crate::Game::default_action

mod cards;
pub mod catalogue;
mod error;
mod game;
mod types;

pub use cards::{Card, ParseCardError, Rank, Suit};
pub use catalogue::{
    BaseRules, Change, Effect, Rule, RuleBody, RuleId, RuleSpec, RuleStatus, Special, Timing,
    Trigger,
};
pub use error::Error;
pub use game::{Lopti, ROSHAMBO_THROWS};
pub use types::{
    Action, Ballot, BurnCause, CarriedRule, Config, Event, MAX_HANDS, PhaseView, PlayedCards,
    Proposal, SeatView, Source, Throw, View, VoteResult,
};
