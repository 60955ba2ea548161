//! The example round of seed 000 (Anna, Bruno, Carla, Dario), replayed move by move from a
//! fixed deck, checking at each step what every seat and a spectator may see.
//!
//! The seed skips the turns between Bruno's Chancellor and the end of the deck; they are filled
//! in here with harmless plays so that the deck runs out with Anna 4♣, Bruno 7♥, Carla Q♥.

use missive_rules::love_letter::{Action, CardId, Config, Event, LoveLetter, Role, View};
use missive_rules::{Game, Observation, Seat, Seed, Viewer};

const ANNA: Seat = 0;
const BRUNO: Seat = 1;
const CARLA: Seat = 2;
const DARIO: Seat = 3;

fn c(id: &str) -> CardId {
    id.parse().expect("a card id")
}

fn cards(ids: &str) -> Vec<CardId> {
    ids.split_whitespace().map(c).collect()
}

fn events_for(obs: &[Observation<Event>], viewer: Viewer) -> Vec<Event> {
    obs.iter()
        .filter(|o| o.audience.includes(viewer))
        .map(|o| o.event.clone())
        .collect()
}

const EVERYONE: [Viewer; 5] = [
    Viewer::Seat(ANNA),
    Viewer::Seat(BRUNO),
    Viewer::Seat(CARLA),
    Viewer::Seat(DARIO),
    Viewer::Spectator,
];

/// The example's table: 4♣ set aside (Anna takes it with a Prince at the very end), the four
/// hands of the seed, then the deck from the top.
fn example() -> LoveLetter {
    let mut deck = cards("4♣ 3♠ 4♠ Q♥ 2♠");
    deck.extend(cards("A♠ 5♠ 2♣ A♥ 5♣ 6♠ 7♥ A♦ ★1 3♣ J♣ 8♥ A♣ ★2 J♠ 6♣"));
    let config = Config {
        first_player: Some(ANNA),
        deck: Some(deck),
        ..Config::default()
    };
    LoveLetter::setup(&config, 4, Seed::from_u64(0)).expect("a valid example deck")
}

fn play(
    g: &mut LoveLetter,
    seat: Seat,
    card: &str,
    target: Option<Seat>,
    guess: Option<Role>,
) -> Vec<Observation<Event>> {
    let action = Action::Play {
        card: c(card),
        target,
        guess,
    };
    assert!(
        g.legal_actions(seat).contains(&action),
        "{action:?} should be legal"
    );
    g.apply(seat, &action)
        .unwrap_or_else(|e| panic!("{action:?} refused: {e}"))
}

fn view(g: &LoveLetter, seat: Seat) -> View {
    g.view(Viewer::Seat(seat))
}

fn mentions(events: &[Event], card: CardId) -> bool {
    events
        .iter()
        .any(|e| serde_json::to_string(e).unwrap().contains(card.as_str()))
}

#[test]
fn the_seed_000_example_round_plays_out_as_written() {
    let mut g = example();
    assert_eq!(
        view(&g, ANNA).hand,
        cards("3♠ A♠"),
        "Anna starts and has drawn A♠"
    );
    assert_eq!(view(&g, BRUNO).hand, cards("4♠"));
    assert_eq!(view(&g, CARLA).hand, cards("Q♥"));
    assert_eq!(view(&g, DARIO).hand, cards("2♠"));
    assert!(g.view(Viewer::Spectator).hand.is_empty());
    assert_eq!(g.view(Viewer::Spectator).deck_count, 15);

    // 1. Anna plays the Guard on Carla naming the Prince: a miss, public.
    let obs = play(&mut g, ANNA, "A♠", Some(CARLA), Some(Role::Prince));
    for viewer in EVERYONE {
        assert!(events_for(&obs, viewer).contains(&Event::GuardGuess {
            seat: ANNA,
            target: CARLA,
            guess: Role::Prince,
            hit: false
        }));
    }
    assert_eq!(view(&g, ANNA).hand, cards("3♠"));
    assert!(!view(&g, CARLA).players[CARLA as usize].out);

    // 2. Bruno draws 5♠ and plays the Handmaid: protected. Only Bruno saw the draw.
    let obs = play(&mut g, BRUNO, "4♠", None, None);
    assert!(view(&g, ANNA).players[BRUNO as usize].protected);
    assert_eq!(view(&g, BRUNO).hand, cards("5♠"));
    assert!(!mentions(&events_for(&obs, Viewer::Seat(ANNA)), c("5♠")));

    // 3. Carla draws 2♣, plays the Priest on Anna and sees 3♠; nobody else does.
    let obs = play(&mut g, CARLA, "2♣", Some(ANNA), None);
    let saw = Event::PriestSaw {
        seat: CARLA,
        target: ANNA,
        card: c("3♠"),
    };
    assert!(events_for(&obs, Viewer::Seat(CARLA)).contains(&saw));
    for viewer in [
        Viewer::Seat(ANNA),
        Viewer::Seat(BRUNO),
        Viewer::Seat(DARIO),
        Viewer::Spectator,
    ] {
        assert!(
            !mentions(&events_for(&obs, viewer), c("3♠")),
            "{viewer:?} must not see 3♠"
        );
    }
    let carla = view(&g, CARLA);
    assert_eq!(carla.hand, cards("Q♥"));
    assert_eq!(carla.players[CARLA as usize].played, cards("2♣"));
    assert_eq!(carla.players[ANNA as usize].played, cards("A♠"));
    assert_eq!(carla.players[BRUNO as usize].played, cards("4♠"));
    assert!(carla.players[BRUNO as usize].protected);
    assert_eq!(carla.turn, Some(DARIO));
    assert_eq!(carla.deck_count, 12);

    // 4. Dario draws A♥, plays the Priest on Carla and sees Q♥, in his observations only.
    let obs = play(&mut g, DARIO, "2♠", Some(CARLA), None);
    for viewer in EVERYONE {
        let seen = mentions(&events_for(&obs, viewer), c("Q♥"));
        assert_eq!(seen, viewer == Viewer::Seat(DARIO), "{viewer:?}");
    }

    // 5. Anna draws 5♣; Bruno is protected, so her Baron goes to Dario: 5 beats 1, Dario is out.
    let refused = g.apply(
        ANNA,
        &Action::Play {
            card: c("3♠"),
            target: Some(BRUNO),
            guess: None,
        },
    );
    assert_eq!(
        refused.map_err(|e| missive_rules::GameError::code(&e)),
        Err("target-protected")
    );
    let obs = play(&mut g, ANNA, "3♠", Some(DARIO), None);
    let compared = Event::BaronCompared {
        seat: ANNA,
        target: DARIO,
        seat_card: c("5♣"),
        target_card: c("A♥"),
        loser: Some(DARIO),
    };
    for viewer in EVERYONE {
        let events = events_for(&obs, viewer);
        let involved = viewer == Viewer::Seat(ANNA) || viewer == Viewer::Seat(DARIO);
        assert_eq!(events.contains(&compared), involved, "{viewer:?}");
        assert!(events.contains(&Event::PlayerOut {
            seat: DARIO,
            discarded: cards("A♥")
        }));
        assert!(
            !mentions(&events, c("5♣")) || involved,
            "Anna's 5♣ stays secret from {viewer:?}"
        );
    }
    let spectator = g.view(Viewer::Spectator);
    assert!(spectator.players[DARIO as usize].out);
    assert_eq!(spectator.players[DARIO as usize].played, cards("2♠ A♥"));
    assert_eq!(spectator.players[DARIO as usize].hand_count, 0);

    // 6. Bruno's protection ends as his turn starts; he draws 6♠ and plays the Chancellor.
    assert!(!view(&g, ANNA).players[BRUNO as usize].protected);
    let obs = play(&mut g, BRUNO, "6♠", None, None);
    assert!(
        events_for(&obs, Viewer::Seat(BRUNO)).contains(&Event::ChancellorDrew {
            seat: BRUNO,
            cards: cards("7♥ A♦")
        })
    );
    let bruno = view(&g, BRUNO);
    assert_eq!(bruno.hand, cards("5♠"));
    assert_eq!(bruno.chancellor_choice, Some(cards("7♥ A♦")));
    for viewer in [
        Viewer::Seat(ANNA),
        Viewer::Seat(CARLA),
        Viewer::Seat(DARIO),
        Viewer::Spectator,
    ] {
        let v = g.view(viewer);
        assert_eq!(v.chancellor_choice, None);
        assert!(!mentions(&events_for(&obs, viewer), c("7♥")));
        assert_eq!(v.players[BRUNO as usize].hand_count, 3);
    }
    assert_eq!(g.awaiting(), missive_rules::SeatSet::single(BRUNO));
    assert!(
        g.legal_actions(BRUNO)
            .iter()
            .all(|a| matches!(a, Action::ChancellorKeep { .. }))
    );
    let keep = Action::ChancellorKeep {
        keep: c("7♥"),
        bottom: cards("A♦ 5♠").into(),
    };
    let obs = g.apply(BRUNO, &keep).expect("a legal keep");
    assert!(
        events_for(&obs, Viewer::Seat(ANNA)).contains(&Event::ChancellorReturned {
            seat: BRUNO,
            count: 2
        })
    );
    assert!(!mentions(&events_for(&obs, Viewer::Seat(ANNA)), c("A♦")));
    assert_eq!(view(&g, BRUNO).hand, cards("7♥"));

    // The turns the seed skips, in which nobody else goes out.
    play(&mut g, CARLA, "★1", None, None);
    // Anna draws 3♣ and sends it away with her own Prince, drawing J♣.
    play(&mut g, ANNA, "5♣", Some(ANNA), None);
    assert_eq!(view(&g, ANNA).hand, cards("J♣"));
    // Bruno draws the Countess next to his King: the only legal play is the Countess.
    assert_eq!(
        g.legal_actions(BRUNO),
        vec![Action::Play {
            card: c("8♥"),
            target: None,
            guess: None
        }]
    );
    play(&mut g, BRUNO, "8♥", None, None);
    play(&mut g, CARLA, "A♣", Some(ANNA), Some(Role::King));
    play(&mut g, ANNA, "★2", None, None);
    play(&mut g, BRUNO, "J♠", Some(CARLA), Some(Role::Countess));
    // Carla's Chancellor draws the last two cards and puts them back in the same order.
    play(&mut g, CARLA, "6♣", None, None);
    assert_eq!(view(&g, CARLA).chancellor_choice, Some(cards("A♦ 5♠")));
    g.apply(
        CARLA,
        &Action::ChancellorKeep {
            keep: c("Q♥"),
            bottom: cards("A♦ 5♠").into(),
        },
    )
    .expect("a legal keep");
    play(&mut g, ANNA, "A♦", Some(BRUNO), Some(Role::Prince));
    assert_eq!(
        g.view(Viewer::Spectator).deck_count,
        0,
        "Bruno has drawn the last card"
    );
    assert_eq!(view(&g, BRUNO).hand, cards("7♥ 5♠"));
    // Bruno draws the last card, a Prince, and aims it at Anna: the deck is empty, so she takes
    // the set-aside 4♣. The deck is now empty at the end of a turn: the round ends.
    let obs = play(&mut g, BRUNO, "5♠", Some(ANNA), None);
    assert!(
        events_for(&obs, Viewer::Seat(ANNA)).contains(&Event::PrinceDrew {
            target: ANNA,
            card: c("4♣"),
            from_set_aside: true
        })
    );

    let result = g
        .view(Viewer::Spectator)
        .last_round
        .expect("the round is over");
    assert_eq!(result.round, 1);
    assert_eq!(
        result.hands,
        vec![Some(c("4♣")), Some(c("7♥")), Some(c("Q♥")), None]
    );
    assert_eq!(result.winners, missive_rules::SeatSet::single(CARLA));
    assert_eq!(result.spy_bonus, None, "Anna and Carla both played a Spy");
    assert_eq!(result.tokens, vec![0, 0, 1, 0]);
    assert_eq!(result.set_aside, None, "the Prince took the set-aside card");
    assert!(obs.iter().any(|o| matches!(o.event, Event::RoundEnded(_))));

    // Carla starts round 2, already holding two cards.
    let next = view(&g, CARLA);
    assert_eq!(next.round, 2);
    assert_eq!(next.turn, Some(CARLA));
    assert_eq!(next.hand.len(), 2);
    assert!(obs.iter().any(|o| o.event
        == Event::RoundStarted {
            round: 2,
            first_player: CARLA,
            face_up: vec![]
        }));
}
