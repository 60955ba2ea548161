//! What one viewer may see of a Lopti session.
//!
//! A seat sees its own hand, every seat's face-up cards, how many face-down and hand cards each
//! seat holds, the pile, the chain of passes, the draw pile's size, the rules, and the vote or
//! Roshambo in progress. Face-down cards are shown to nobody, their owner included, until they
//! are turned; a ballot or a committed throw is shown only to the seat that cast it until the
//! count or the reveal. A spectator sees what every seat sees, without any own hand.

use serde::{Deserialize, Serialize};

use super::card::{Card, Rank};
use super::catalogue::{BaseRules, Change, Rule};
use super::protocol::{Ballot, Proposal, Throw};
use crate::core::{Seat, SeatSet, Viewer};

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
