//! The public vocabulary of Love Letter: configuration, actions, events and views.

use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use super::cards::{CardId, Edition, Role};
use crate::{Seat, SeatSet, Viewer};

/// How a match is set up.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    pub edition: Edition,
    /// Who plays first in round 1; `None` draws the seat from the seed.
    pub first_player: Option<Seat>,
    /// A fixed order for the first round's deck, for tests, tutorials and puzzles; later rounds
    /// shuffle from the seed. It stands for the shuffle's output and is dealt exactly so:
    /// the first card is set aside face down; with 2 players the next three are set aside face
    /// up; then one card goes to each seat, starting with the first player and going clockwise;
    /// the remaining cards are the deck, its top first (the next card drawn is the one that
    /// follows the last dealt card). It must hold every card of the edition exactly once.
    pub deck: Option<Vec<CardId>>,
}

/// The cards a Chancellor puts on the bottom of the deck, in the order of
/// [`Action::ChancellorKeep`]: inline up to the two a Chancellor returns, so listing and
/// replaying the choice does not allocate; more (never legal, but a client may send them)
/// spill to the heap and are refused by the rules. Reads and writes as a list.
pub type Bottom = SmallVec<[CardId; 2]>;

/// What a seat does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "type")]
pub enum Action {
    /// Play one of the two cards in hand. `target` is the chosen player (Guard, Priest, Baron,
    /// King: another player; Prince: any player) and is `None` when the card chooses no one,
    /// including when every other player is protected. `guess` is the Guard's named role.
    Play {
        card: CardId,
        #[serde(default)]
        target: Option<Seat>,
        #[serde(default)]
        guess: Option<Role>,
    },
    /// The second step of a Chancellor: keep one of the cards held and put the others on the
    /// bottom of the deck. `bottom` lists them in the order they end up, from the one nearer
    /// the top to the very bottom: its last element becomes the deck's bottom card.
    ChancellorKeep { keep: CardId, bottom: Bottom },
}

/// Why a token was gained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TokenReason {
    /// Won the round.
    RoundWin,
    /// The only player still in who played or discarded a Spy.
    SpyBonus,
}

/// How a round ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RoundEnd {
    /// Everyone else was out.
    LastStanding,
    /// The deck ran out at the end of a turn; the highest hand won.
    DeckEmpty,
}

/// The public result of a finished round.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundResult {
    pub round: u32,
    pub reason: RoundEnd,
    /// Each seat's final hand when the deck ran out (`None` for a player who was out, and for
    /// every seat when the round ended by elimination: those hands stay secret).
    pub hands: Vec<Option<CardId>>,
    /// The card set aside face down, revealed now (`None` if a Prince drew it).
    pub set_aside: Option<CardId>,
    pub winners: SeatSet,
    pub spy_bonus: Option<Seat>,
    /// Tokens of every seat after this round.
    pub tokens: Vec<u8>,
}

/// Something that happened. Each comes in an [`Observation`](crate::Observation) whose
/// audience is exactly who may learn it; the comment on each variant says who that is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "type")]
pub enum Event {
    /// A round was dealt (everyone). `face_up` holds the 2-player round's three open cards.
    RoundStarted {
        round: u32,
        first_player: Seat,
        face_up: Vec<CardId>,
    },
    /// The card a seat was dealt at the start of a round (that seat only).
    Dealt { seat: Seat, card: CardId },
    /// A seat's turn began: protection ended and it drew a card (everyone).
    TurnStarted { seat: Seat },
    /// The card a seat drew (that seat only).
    Drew { seat: Seat, card: CardId },
    /// A card was played (everyone), with its target and guess as chosen.
    Played {
        seat: Seat,
        card: CardId,
        target: Option<Seat>,
        guess: Option<Role>,
    },
    /// The played card chose no one because every other player is protected (everyone).
    NoEffect { seat: Seat, card: CardId },
    /// A Guard's guess and whether it hit (everyone).
    GuardGuess {
        seat: Seat,
        target: Seat,
        guess: Role,
        hit: bool,
    },
    /// What a Priest saw (the Priest's player only).
    PriestSaw {
        seat: Seat,
        target: Seat,
        card: CardId,
    },
    /// A Baron's comparison (the two players involved). `loser` is `None` on a tie.
    BaronCompared {
        seat: Seat,
        target: Seat,
        seat_card: CardId,
        target_card: CardId,
        loser: Option<Seat>,
    },
    /// The cards a King traded (the two players involved).
    KingTraded {
        seat: Seat,
        target: Seat,
        seat_gave: CardId,
        target_gave: CardId,
    },
    /// The hand a Prince made its target discard, without effect (everyone).
    PrinceDiscarded {
        seat: Seat,
        target: Seat,
        card: CardId,
    },
    /// The card a Prince's target drew instead (that target only). `from_set_aside` says it was
    /// the set-aside card because the deck was empty.
    PrinceDrew {
        target: Seat,
        card: CardId,
        from_set_aside: bool,
    },
    /// The cards a Chancellor drew (its player only).
    ChancellorDrew { seat: Seat, cards: Vec<CardId> },
    /// A Chancellor put this many cards on the bottom of the deck (everyone).
    ChancellorReturned { seat: Seat, count: u8 },
    /// Which card a Chancellor kept and the order returned (its player only).
    ChancellorKept {
        seat: Seat,
        kept: CardId,
        bottom: Vec<CardId>,
    },
    /// A player is out; their hand is discarded face up without effect (everyone).
    PlayerOut { seat: Seat, discarded: Vec<CardId> },
    /// A round ended; remaining hands and the set-aside card are revealed (everyone).
    RoundEnded(RoundResult),
    /// A seat gained a token (everyone). `total` is its count afterwards.
    TokenGained {
        seat: Seat,
        reason: TokenReason,
        total: u8,
    },
    /// The match is over (everyone).
    MatchEnded { winners: SeatSet, tokens: Vec<u8> },
}

/// What one player (or a spectator) may see of a seat.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlayerView {
    pub seat: Seat,
    /// Played and discarded cards this round, in order.
    pub played: Vec<CardId>,
    pub out: bool,
    pub protected: bool,
    pub tokens: u8,
    pub hand_count: u8,
}

/// What one viewer may see of the match.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct View {
    pub viewer: Viewer,
    pub edition: Edition,
    /// The viewer's own hand (empty for a spectator). During the viewer's Chancellor choice,
    /// the card held before playing it; the drawn cards are in `chancellor_choice`.
    pub hand: Vec<CardId>,
    pub players: Vec<PlayerView>,
    pub deck_count: u8,
    /// The three open cards of a 2-player round.
    pub face_up: Vec<CardId>,
    pub round: u32,
    /// The seat whose turn it is (`None` once the match is over).
    pub turn: Option<Seat>,
    /// The Chancellor's drawn cards, only in the view of the seat choosing.
    pub chancellor_choice: Option<Vec<CardId>>,
    pub tokens_to_win: u8,
    pub last_round: Option<RoundResult>,
    /// Set once the match is over.
    pub winners: Option<SeatSet>,
}
