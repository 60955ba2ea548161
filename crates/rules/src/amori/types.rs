//! The public vocabulary of Amori e Intrighi: configuration, actions, observations, phases
//! and views. These types are serde-stable (kebab-case tags, string ids) because the
//! service layer maps them one to one onto protobuf messages and stored logs keep them.

use serde::{Deserialize, Serialize};

use crate::core::{Outcome, Seat, SeatSet, Viewer};

use super::cards::{CardId, DaughterId, EventCardId, GentlemanId};
use super::data::{Attribute, Attributes, Die, DieFace, Location};

/// Match options.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Who plays first. In the box, whoever most recently married or attended a wedding;
    /// `None` draws the starting player from the match's seed.
    pub starting_player: Option<Seat>,
}

/// Everything a seat may do. Which ones are legal depends on the [`Phase`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "kebab-case"
)]
pub enum Action {
    /// Turn step 1: move the daughter to a location other than the one she stands at.
    Visit { location: Location },
    /// Turn step 2a: the location's action. `choice` answers a box that lets the player choose
    /// which attribute to raise (the Boulevard), and must be `None` elsewhere.
    LocationAction { choice: Option<Attribute> },
    /// Turn step 2b: intrigue against `target`'s daughter at the same location. Legal in the
    /// visit step too, meaning "stay where she stands and intrigue here" (the one case in which
    /// a daughter need not move), and after a visit.
    Intrigue { target: Seat },
    /// Take a gentleman card: from the location deck being chosen from, or from the rival
    /// daughter after an intrigue.
    Take { card: CardId },
    /// The suitor limit: give up every card of this gentleman to make room for a fourth.
    GiveUp { gentleman: GentlemanId },
    /// Play an event card from hand. `target` names the seat whose daughter a hostile card
    /// aims at; `location` names the deck a Ball Invitation looks at. Both are `None` for
    /// cards that need neither.
    PlayEvent {
        card: EventCardId,
        target: Option<Seat>,
        location: Option<Location>,
    },
    /// In a reaction window: answer the hostile card with this reaction card.
    React { card: EventCardId },
    /// In a reaction window: let the hostile card resolve.
    Pass,
    /// End the turn by drawing an event card.
    EndTurn,
    /// Over the hand limit after drawing: discard this card.
    Discard { card: EventCardId },
}

/// Where the match stands, and so who is awaited. Everything here is public.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "kebab-case"
)]
pub enum Phase {
    /// The current player chooses a location (or stays to intrigue).
    Visit,
    /// The current player's daughter has moved to `location`: location action or intrigue.
    ActionOrIntrigue { location: Location },
    /// `seat` looks at `location`'s gentleman deck and takes one card; only `seat` sees it.
    ChooseGentleman { seat: Seat, location: Location },
    /// After an intrigue, `taker` takes one card of their choice from `victim`'s daughter.
    IntrigueSpoils { taker: Seat, victim: Seat },
    /// `incoming` would be a fourth suitor of `seat`'s daughter: `seat` gives one up first.
    SuitorLimit { seat: Seat, incoming: CardId },
    /// `attacker` played the hostile `card` at `target`'s daughter; `target` may react.
    Reaction {
        attacker: Seat,
        target: Seat,
        card: EventCardId,
    },
    /// The current player may play event cards, or end the turn by drawing.
    Events,
    /// `seat` holds more than the hand limit and discards one card.
    Discard { seat: Seat },
    /// The match is over.
    Over,
}

/// One observation's payload. Each is sent with an audience; see the module documentation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "kebab-case"
)]
pub enum Event {
    /// The table as setup laid it out, told to everyone before the first move: who starts,
    /// each seat's face-up daughter, the size of every deck, and (with two players) the brown
    /// gentleman cards left in the box. Face-down daughters and every deck's order stay hidden.
    SetUp {
        starting_player: Seat,
        seats: Vec<SeatSetup>,
        location_decks: Vec<DeckSize>,
        main_deck_size: usize,
        event_deck_size: usize,
        removed: Vec<CardId>,
    },
    /// Private to `seat`: its opening event hand.
    HandDealt { seat: Seat, cards: Vec<EventCardId> },
    /// `seat`'s turn begins.
    TurnStarted { seat: Seat, turn: u32 },
    /// `seat`'s daughter moved to `location`.
    Visited { seat: Seat, location: Location },
    /// `seat`'s daughter's attribute changed (already clamped) to `value`.
    AttributeChanged {
        seat: Seat,
        attribute: Attribute,
        value: u8,
    },
    /// A die was rolled for `seat`'s daughter.
    Rolled { seat: Seat, die: Die, face: DieFace },
    /// Private to the chooser: the cards of `location`'s deck, in id order.
    DeckShown {
        location: Location,
        cards: Vec<CardId>,
    },
    /// `seat` took `card` from `location`'s deck.
    TookFromLocation {
        seat: Seat,
        location: Location,
        card: CardId,
    },
    /// A face-down card from the main deck joined `location`'s deck.
    LocationDeckRefilled { location: Location },
    /// `seat` intrigues against `target`.
    Intrigued { seat: Seat, target: Seat },
    /// `seat` took `card` from `from`'s daughter (the spoils of an intrigue).
    TookFromRival {
        seat: Seat,
        from: Seat,
        card: CardId,
    },
    /// `card` came from the top of the main deck to `seat`'s daughter (a Love Letter).
    DrewFromMainDeck { seat: Seat, card: CardId },
    /// `seat`'s daughter gave up every card of `gentleman` for a new suitor.
    GaveUp {
        seat: Seat,
        gentleman: GentlemanId,
        cards: Vec<CardId>,
    },
    /// `card` now lies under `seat`'s daughter.
    SuitorJoined { seat: Seat, card: CardId },
    /// `seat`'s daughter married `gentleman`; `kept` stays with her for scoring.
    Married {
        seat: Seat,
        daughter: DaughterId,
        gentleman: GentlemanId,
        kept: CardId,
    },
    /// Gentleman cards went to the discard pile.
    GentlemenDiscarded { cards: Vec<CardId> },
    /// Cards of married gentlemen left the game.
    GentlemenRetired { cards: Vec<CardId> },
    /// `seat`'s next daughter turned face up.
    DaughterRevealed {
        seat: Seat,
        daughter: DaughterId,
        attributes: Attributes,
    },
    /// The gentleman discards became the new main deck.
    MainDeckReshuffled { size: usize },
    /// `seat` played `card`.
    EventPlayed {
        seat: Seat,
        card: EventCardId,
        target: Option<Seat>,
        location: Option<Location>,
    },
    /// `seat` answered the hostile card with `card`; both are discarded.
    Reacted { seat: Seat, card: EventCardId },
    /// `seat` let the hostile card resolve.
    Passed { seat: Seat },
    /// The event discards became the new event deck.
    EventDeckReshuffled { size: usize },
    /// Private to the drawer: `card` was drawn.
    EventDrawn { seat: Seat, card: EventCardId },
    /// `seat` drew an event card (which one is theirs to know).
    EventDrawnFaceDown { seat: Seat },
    /// `seat` discarded `card` down to the hand limit.
    EventDiscarded { seat: Seat, card: EventCardId },
    /// `seat` has married all three daughters: this is the last round.
    FinalRound { seat: Seat },
    /// The match is over.
    GameOver { scoring: Scoring },
}

/// One seat's table as setup laid it out, as everyone sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SeatSetup {
    pub seat: Seat,
    /// The face-up daughter, at her starting values.
    pub daughter: DaughterId,
    pub attributes: Attributes,
    /// How many daughters wait face down.
    pub face_down: usize,
    /// How many event cards the seat was dealt.
    pub hand_size: usize,
}

/// How many cards one location's gentleman deck holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeckSize {
    pub location: Location,
    pub size: usize,
}

/// A daughter who is in play: face up, unmarried.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActiveDaughter {
    pub daughter: DaughterId,
    pub attributes: Attributes,
    /// Her gentleman cards, face up, in the order they came.
    pub suitors: Vec<CardId>,
}

/// A married daughter, as kept for scoring.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bride {
    pub daughter: DaughterId,
    pub attributes: Attributes,
    pub husband: GentlemanId,
    /// The one card of her husband kept with her board.
    pub kept: CardId,
}

/// The end-of-game reckoning.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scoring {
    /// Each family's attribute totals, by seat.
    pub families: Vec<Attributes>,
    /// One entry per medal (Reputation, Beauty, Education): its winner, `None` when tied.
    pub medals: Vec<Medal>,
    /// VP of married gentlemen, by seat.
    pub marriage_points: Vec<u8>,
    /// VP of event cards kept for points, by seat.
    pub event_points: Vec<u8>,
    /// Each seat's total.
    pub totals: Vec<i32>,
}

/// A family medal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Medal {
    pub attribute: Attribute,
    pub winner: Option<Seat>,
}

/// One player as a viewer sees them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PlayerView {
    pub seat: Seat,
    /// The daughter in play, if any (none once all three are married).
    pub active: Option<ActiveDaughter>,
    /// Where her pawn stands; `None` before her first visit.
    pub location: Option<Location>,
    /// How many daughters still wait face down.
    pub face_down: usize,
    pub brides: Vec<Bride>,
    pub hand_size: usize,
    /// The event cards in hand: only in this seat's own view.
    pub hand: Option<Vec<EventCardId>>,
    /// Event cards kept in front for points.
    pub kept_for_points: Vec<EventCardId>,
}

/// A location's gentleman deck as a viewer sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LocationDeckView {
    pub location: Location,
    pub size: usize,
    /// The cards, in id order: only for the seat choosing from this deck right now.
    pub cards: Option<Vec<CardId>>,
}

/// What one viewer may see of the match.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct View {
    pub viewer: Viewer,
    pub seats: u8,
    pub starting_player: Seat,
    pub current: Seat,
    pub turn: u32,
    pub phase: Phase,
    pub awaiting: SeatSet,
    pub players: Vec<PlayerView>,
    pub location_decks: Vec<LocationDeckView>,
    pub main_deck_size: usize,
    pub gentleman_discard: Vec<CardId>,
    /// Cards of married gentlemen, out of the game.
    pub retired: Vec<CardId>,
    /// Brown cards left in the box in a two-player match.
    pub removed: Vec<CardId>,
    pub event_deck_size: usize,
    pub event_discard: Vec<EventCardId>,
    pub final_round: bool,
    /// Once the match is over.
    pub scoring: Option<Scoring>,
    pub outcome: Option<Outcome>,
}
