//! Helpers shared by the Lopti test binaries: fixed short decks, driving a session to its first
//! play, and acting with readable failures.
#![allow(dead_code)]

use missive_rules::lopti::{
    Action, Card, CarriedRule, Config, Event, Lopti, PhaseView, RuleBody, RuleSpec, View,
};
use missive_rules::{Game, GameError, Seat, Seed, Viewer};

/// One seat's dealt cards, by id.
pub(crate) struct Deal<'a> {
    pub(crate) down: [&'a str; 3],
    pub(crate) up: [&'a str; 3],
    pub(crate) hand: &'a [&'a str],
}

/// A fixed short deck: each seat's block in seat order, then the draw pile, top first.
pub(crate) fn deck(seats: &[Deal<'_>], draw: &[&str]) -> Vec<Card> {
    let mut cards = Vec::new();
    for seat in seats {
        cards.extend(seat.down.iter().map(|c| Card::of(c)));
        cards.extend(seat.up.iter().map(|c| Card::of(c)));
        cards.extend(seat.hand.iter().map(|c| Card::of(c)));
    }
    cards.extend(draw.iter().map(|c| Card::of(c)));
    cards
}

pub(crate) fn cards(ids: &[&str]) -> Vec<Card> {
    ids.iter().map(|c| Card::of(c)).collect()
}

/// A play of the cards `ids` from hand.
pub(crate) fn play_of(ids: &[&str]) -> Action {
    Action::Play {
        cards: ids.iter().map(|c| Card::of(c)).collect(),
    }
}

/// A session on a fixed first deck with some carried rules, before any action.
pub(crate) fn session(
    seats: &[Deal<'_>],
    draw: &[&str],
    hands: u8,
    rules: &[(Seat, RuleSpec)],
) -> Lopti {
    let config = Config {
        hands,
        fixed_deck: Some(deck(seats, draw)),
        carried_rules: rules
            .iter()
            .map(|(creator, spec)| CarriedRule {
                creator: *creator,
                body: RuleBody::Enforced { spec: *spec },
            })
            .collect(),
    };
    Lopti::setup(&config, seats.len() as u8, Seed::from_u64(1)).expect("setup")
}

/// Every seat declines the Rule Vote and keeps its cards: the first play is next.
pub(crate) fn skip_to_play(game: &mut Lopti) {
    for seat in 0..game.seats() {
        act(game, seat, Action::DeclineProposal);
    }
    for seat in 0..game.seats() {
        act(game, seat, Action::KeepCards);
    }
    assert!(matches!(
        game.view(Viewer::Seat(0)).phase,
        PhaseView::Play { .. }
    ));
}

/// A one-hand session ready for its first play.
pub(crate) fn table(seats: &[Deal<'_>], draw: &[&str]) -> Lopti {
    let mut game = session(seats, draw, 1, &[]);
    skip_to_play(&mut game);
    game
}

/// Applies an action that must be legal; returns its events.
pub(crate) fn act(game: &mut Lopti, seat: Seat, action: Action) -> Vec<Event> {
    match game.apply(seat, &action) {
        Ok(obs) => obs.into_iter().map(|o| o.event).collect(),
        Err(e) => panic!("seat {seat} {action:?} refused: {} ({e})", e.code()),
    }
}

pub(crate) fn play(game: &mut Lopti, seat: Seat, ids: &[&str]) -> Vec<Event> {
    act(game, seat, play_of(ids))
}

/// Applies an action that must be refused; checks the state is unchanged and returns the code.
pub(crate) fn refused(game: &mut Lopti, seat: Seat, action: Action) -> &'static str {
    let before = game.clone();
    let code = match game.apply(seat, &action) {
        Ok(_) => panic!("seat {seat} {action:?} was accepted"),
        Err(e) => e.code(),
    };
    assert_eq!(*game, before, "a refused action changed the state");
    code
}

pub(crate) fn view(game: &Lopti, seat: Seat) -> View {
    game.view(Viewer::Seat(seat))
}

/// The seat on turn, in the play phase.
pub(crate) fn on_turn(game: &Lopti) -> Seat {
    match game.view(Viewer::Spectator).phase {
        PhaseView::Play { seat, .. } => seat,
        other => panic!("not in play: {other:?}"),
    }
}

pub(crate) fn plays_left(game: &Lopti) -> u8 {
    match game.view(Viewer::Spectator).phase {
        PhaseView::Play { plays_left, .. } => plays_left,
        other => panic!("not in play: {other:?}"),
    }
}

pub(crate) fn hand(game: &Lopti, seat: Seat) -> Vec<Card> {
    view(game, seat).your_hand.expect("a seat sees its hand")
}

/// A two-seat deck where seat 0 can go out in five turns while seat 1 picks up: 4s in hand,
/// 5s face up, and `down` face down; the draw pile is empty.
pub(crate) fn quick_out(down: [&'static str; 3]) -> [Deal<'static>; 2] {
    [
        Deal {
            down,
            up: ["5♠", "5♥", "5♦"],
            hand: &["4♠", "4♥", "4♦"],
        },
        Deal {
            down: ["J♠", "J♥", "J♦"],
            up: ["Q♠", "Q♥", "Q♦"],
            hand: &["9♠", "9♥", "9♦"],
        },
    ]
}

/// Plays a `quick_out` hand to its end: seat 0 sheds everything, seat 1 always picks up.
pub(crate) fn win_quick_out(game: &mut Lopti) -> Vec<Event> {
    let mut events = Vec::new();
    events.extend(play(game, 0, &["4♠", "4♥", "4♦"]));
    events.extend(act(game, 1, Action::PickUp));
    events.extend(play(game, 0, &["5♠", "5♥", "5♦"]));
    events.extend(act(game, 1, Action::PickUp));
    for _ in 0..3 {
        events.extend(act(game, 0, Action::PlayFaceDown { index: 0 }));
        if matches!(
            game.view(Viewer::Spectator).phase,
            PhaseView::Play { seat: 1, .. }
        ) {
            events.extend(act(game, 1, Action::PickUp));
        }
    }
    events
}
