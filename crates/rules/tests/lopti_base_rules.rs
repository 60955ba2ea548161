//! Lopti's base rules and the seed's clarifications, one named scenario each, on fixed decks.

mod lopti_support;

use lopti_support::*;
use missive_rules::lopti::{Action, BurnCause, Card, Event, Rank, Source};
use missive_rules::{Audience, Game, Viewer};

/// Two seats, no draw pile, seat 0 holding `hand0`, seat 1 holding `hand1`.
fn duel<'a>(hand0: &'a [&'a str], hand1: &'a [&'a str]) -> [Deal<'a>; 2] {
    [
        Deal {
            down: ["J♠", "J♥", "J♦"],
            up: ["Q♠", "Q♥", "Q♦"],
            hand: hand0,
        },
        Deal {
            down: ["K♠", "K♥", "K♦"],
            up: ["A♠", "A♥", "A♦"],
            hand: hand1,
        },
    ]
}

fn burned(events: &[Event]) -> Vec<BurnCause> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Burned { cause, .. } => Some(*cause),
            _ => None,
        })
        .collect()
}

#[test]
fn a_three_on_an_empty_pile_is_discarded_and_the_next_player_opens() {
    let mut g = table(&duel(&["3♠", "8♠", "9♠"], &["4♠", "5♠", "6♠"]), &[]);
    play(&mut g, 0, &["3♠"]);
    let v = view(&g, 1);
    assert!(v.pile.is_empty());
    assert_eq!(v.pass_chain, cards(&["3♠"]));
    assert!(
        !v.pass_obligation,
        "nothing to pick up, so nobody owes a pickup"
    );
    assert_eq!(on_turn(&g), 1, "nobody loses a turn");
    assert!(!g.legal_actions(1).contains(&Action::PickUp));
    play(&mut g, 1, &["4♠"]);
    assert!(
        view(&g, 0).pass_chain.is_empty(),
        "a non-pass ends the chain"
    );
}

#[test]
fn one_card_on_three_equal_cards_completes_four_and_burns() {
    let mut g = table(&duel(&["5♠", "5♣", "9♠"], &["5♥", "5♦", "6♠"]), &[]);
    play(&mut g, 0, &["5♠"]);
    assert_eq!(refused(&mut g, 1, play_of(&["5♥"])), "need-more-cards");
    play(&mut g, 1, &["5♥", "5♦"]);
    let events = play(&mut g, 0, &["5♣"]);
    assert_eq!(burned(&events), vec![BurnCause::FourOfARank]);
    assert!(view(&g, 0).pile.is_empty());
    assert_eq!(on_turn(&g), 0, "the burner gets a bonus play");
    assert_eq!(plays_left(&g), 1);
}

#[test]
fn four_sixes_on_a_seven_burn() {
    let mut g = table(&duel(&["6♣", "7♠", "9♠"], &["6♠", "6♥", "6♦"]), &[]);
    play(&mut g, 0, &["6♣"]);
    act(&mut g, 1, Action::PickUp);
    play(&mut g, 0, &["7♠"]);
    assert_eq!(view(&g, 1).play_at_most, Some(Rank::Seven));
    let events = play(&mut g, 1, &["6♠", "6♥", "6♦", "6♣"]);
    assert_eq!(burned(&events), vec![BurnCause::FourOfARank]);
    assert_eq!(on_turn(&g), 1);
}

#[test]
fn four_eights_on_a_seven_cannot_be_played() {
    let mut g = table(&duel(&["8♣", "7♠", "9♠"], &["8♠", "8♥", "8♦"]), &[]);
    play(&mut g, 0, &["8♣"]);
    act(&mut g, 1, Action::PickUp);
    play(&mut g, 0, &["7♠"]);
    let all_eights = play_of(&["8♠", "8♥", "8♦", "8♣"]);
    assert_eq!(refused(&mut g, 1, all_eights.clone()), "must-play-low");
    assert!(!g.legal_actions(1).contains(&all_eights));
}

#[test]
fn several_threes_pass_one_pickup_only_but_each_counts_toward_the_chain() {
    let seats = [
        Deal {
            down: ["J♠", "J♥", "J♦"],
            up: ["Q♠", "Q♥", "Q♦"],
            hand: &["9♠", "4♠", "4♥"],
        },
        Deal {
            down: ["K♠", "K♥", "K♦"],
            up: ["A♠", "A♥", "A♦"],
            hand: &["3♠", "3♥", "6♠"],
        },
        Deal {
            down: ["J♣", "Q♣", "K♣"],
            up: ["A♣", "2♠", "2♥"],
            hand: &["8♠", "8♥", "8♦"],
        },
    ];
    let mut g = table(&seats, &[]);
    play(&mut g, 0, &["9♠"]);
    let events = play(&mut g, 1, &["3♠", "3♥"]);
    assert!(events.contains(&Event::MustPickUpOrPass { seat: 2 }));
    assert_eq!(refused(&mut g, 2, play_of(&["8♠"])), "pass-obligation");
    act(&mut g, 2, Action::PickUp);
    assert_eq!(hand(&g, 2).len(), 4, "the 9 and nothing of the 3s");
    // The obligation went to seat 2 only: seat 0 opens freely on the empty table.
    assert_eq!(on_turn(&g), 0);
    assert!(!view(&g, 0).pass_obligation);
    play(&mut g, 0, &["4♠", "4♥"]);

    // Two 3s and two more make four chained passes: the pile burns.
    let seats = [
        Deal {
            down: ["J♠", "J♥", "J♦"],
            up: ["Q♠", "Q♥", "Q♦"],
            hand: &["9♠", "4♠", "4♥"],
        },
        Deal {
            down: ["K♠", "K♥", "K♦"],
            up: ["A♠", "A♥", "A♦"],
            hand: &["3♠", "3♥", "6♠"],
        },
        Deal {
            down: ["J♣", "Q♣", "K♣"],
            up: ["A♣", "2♠", "2♥"],
            hand: &["3♦", "3♣", "8♦"],
        },
    ];
    let mut g = table(&seats, &[]);
    play(&mut g, 0, &["9♠"]);
    play(&mut g, 1, &["3♠", "3♥"]);
    let events = play(&mut g, 2, &["3♦", "3♣"]);
    assert_eq!(burned(&events), vec![BurnCause::FourPasses]);
    assert_eq!(on_turn(&g), 2, "four chained passes give the bonus play");
    assert!(!view(&g, 0).pass_obligation);
}

#[test]
fn a_last_card_that_burns_gives_no_bonus_play() {
    let mut g = session(&quick_out(["K♠", "10♥", "10♠"]), &[], 1, &[]);
    skip_to_play(&mut g);
    play(&mut g, 0, &["4♠", "4♥", "4♦"]);
    act(&mut g, 1, Action::PickUp);
    play(&mut g, 0, &["5♠", "5♥", "5♦"]);
    act(&mut g, 1, Action::PickUp);
    act(&mut g, 0, Action::PlayFaceDown { index: 0 });
    act(&mut g, 1, Action::PickUp);
    // A face-down 10 that is not the last one burns and gives a bonus play...
    let events = act(&mut g, 0, Action::PlayFaceDown { index: 0 });
    assert!(events.contains(&Event::BonusPlayGranted { seat: 0 }));
    assert_eq!(on_turn(&g), 0);
    // ...the last one burns too, but its player is out: no bonus play, the hand is won.
    let events = act(&mut g, 0, Action::PlayFaceDown { index: 0 });
    assert_eq!(burned(&events), vec![BurnCause::BurnRank]);
    assert!(!events.contains(&Event::BonusPlayGranted { seat: 0 }));
    assert!(events.contains(&Event::HandWon { seat: 0, hand: 0 }));
    let outcome = g.outcome().expect("a one-hand session ends with its hand");
    assert_eq!(outcome.scores, vec![1, 0]);
}

#[test]
fn a_failed_blind_card_joins_the_pile_and_is_picked_up() {
    let seats = [
        Deal {
            down: ["4♣", "J♥", "J♦"],
            up: ["5♠", "5♥", "5♦"],
            hand: &["4♠", "4♥", "4♦"],
        },
        Deal {
            down: ["K♠", "K♥", "K♦"],
            up: ["A♠", "A♥", "A♦"],
            hand: &["9♠", "Q♥", "Q♦"],
        },
    ];
    let mut g = table(&seats, &[]);
    play(&mut g, 0, &["4♠", "4♥", "4♦"]);
    act(&mut g, 1, Action::PickUp);
    play(&mut g, 0, &["5♠", "5♥", "5♦"]);
    play(&mut g, 1, &["9♠"]);
    assert_eq!(
        refused(&mut g, 0, Action::PlayFaceDown { index: 3 }),
        "no-such-face-down"
    );
    let events = act(&mut g, 0, Action::PlayFaceDown { index: 0 });
    assert!(events.contains(&Event::FaceDownFailed {
        seat: 0,
        card: Card::of("4♣")
    }));
    let mut h = hand(&g, 0);
    h.sort();
    assert_eq!(h, cards(&["4♣", "5♠", "5♥", "5♦", "9♠"]));
    assert!(view(&g, 0).pile.is_empty());
    assert_eq!(view(&g, 1).seats[0].face_down, 2);
    assert_eq!(on_turn(&g), 1, "a failed blind card ends the turn");
}

#[test]
fn a_blind_card_during_a_pass_obligation_is_valid_only_as_a_pass() {
    let seats = [
        Deal {
            down: ["A♣", "3♣", "J♦"],
            up: ["5♠", "5♥", "5♦"],
            hand: &["4♠", "4♥", "4♦"],
        },
        Deal {
            down: ["K♠", "K♥", "K♦"],
            up: ["A♠", "A♥", "A♦"],
            hand: &["9♠", "3♠", "3♥"],
        },
    ];
    let mut g = table(&seats, &[]);
    play(&mut g, 0, &["4♠", "4♥", "4♦"]);
    act(&mut g, 1, Action::PickUp);
    play(&mut g, 0, &["5♠", "5♥", "5♦"]);
    play(&mut g, 1, &["9♠"]);
    // Seat 0 has only face-down cards and the 9 on the pile. Seat 1 passed with a 3...
    act(&mut g, 0, Action::PlayFaceDown { index: 2 }); // J♦ beats the 9
    play(&mut g, 1, &["3♠"]);
    assert!(view(&g, 0).pass_obligation);
    // ...so an ace, which would beat the pile otherwise, fails.
    let events = act(&mut g, 0, Action::PlayFaceDown { index: 0 });
    assert!(events.contains(&Event::FaceDownFailed {
        seat: 0,
        card: Card::of("A♣")
    }));
    assert!(hand(&g, 0).contains(&Card::of("A♣")));

    // With a face-down 3 under the obligation, the blind card passes it on.
    let seats = [
        Deal {
            down: ["3♣", "A♣", "J♦"],
            up: ["5♠", "5♥", "5♦"],
            hand: &["4♠", "4♥", "4♦"],
        },
        Deal {
            down: ["K♠", "K♥", "K♦"],
            up: ["A♠", "A♥", "A♦"],
            hand: &["9♠", "3♠", "3♥"],
        },
    ];
    let mut g = table(&seats, &[]);
    play(&mut g, 0, &["4♠", "4♥", "4♦"]);
    act(&mut g, 1, Action::PickUp);
    play(&mut g, 0, &["5♠", "5♥", "5♦"]);
    play(&mut g, 1, &["9♠"]);
    act(&mut g, 0, Action::PlayFaceDown { index: 2 });
    play(&mut g, 1, &["3♠"]);
    let events = act(&mut g, 0, Action::PlayFaceDown { index: 0 });
    assert!(events.iter().any(|e| matches!(
        e,
        Event::Played {
            seat: 0,
            source: Source::FaceDown,
            ..
        }
    )));
    assert!(events.contains(&Event::MustPickUpOrPass { seat: 1 }));
    assert_eq!(view(&g, 1).pass_chain, cards(&["3♠", "3♣"]));
}

#[test]
fn the_draw_comes_only_after_the_first_play_and_only_below_three_cards() {
    let seats = duel(&["10♠", "6♠", "6♥"], &["8♠", "8♥", "2♦"]);
    let mut g = table(&seats, &["A♣", "9♥", "9♦", "9♣", "4♣"]);
    assert_eq!(view(&g, 0).draw_pile, 5);
    // A burn as the first play: one draw, then the bonus play draws nothing.
    play(&mut g, 0, &["10♠"]);
    assert_eq!(view(&g, 0).draw_pile, 4);
    assert_eq!(hand(&g, 0).len(), 3);
    assert_eq!(on_turn(&g), 0);
    play(&mut g, 0, &["6♠", "6♥"]);
    assert_eq!(view(&g, 0).draw_pile, 4, "a bonus play never draws");
    assert_eq!(hand(&g, 0).len(), 1);
    act(&mut g, 1, Action::PickUp);
    play(&mut g, 0, &["A♣"]);
    assert_eq!(
        view(&g, 0).draw_pile,
        3,
        "one card in hand is under three: draw"
    );
    act(&mut g, 1, Action::PickUp);
    assert_eq!(hand(&g, 1).len(), 6);
    play(&mut g, 0, &["9♥"]);
    // Seat 1 plays one of six cards: five left is not under three, so no draw.
    play(&mut g, 1, &["2♦"]);
    assert_eq!(hand(&g, 1).len(), 5);
    assert_eq!(view(&g, 0).draw_pile, 2);
}

#[test]
fn a_reset_lets_any_rank_follow_and_a_reset_on_a_reset_needs_more() {
    let mut g = table(&duel(&["K♣", "2♠", "2♥"], &["2♦", "4♠", "9♠"]), &[]);
    play(&mut g, 0, &["K♣"]);
    play(&mut g, 1, &["2♦"]);
    assert_eq!(refused(&mut g, 0, play_of(&["2♠"])), "need-more-cards");
    play(&mut g, 0, &["2♠", "2♥"]);
    play(&mut g, 1, &["4♠"]);
    assert_eq!(view(&g, 0).pile.len(), 5, "the 2s stay in the pile");
}

#[test]
fn a_seven_makes_the_next_play_low_and_a_ten_cannot_follow_it() {
    let mut g = table(&duel(&["7♠", "7♥", "9♠"], &["10♦", "8♠", "5♠"]), &[]);
    play(&mut g, 0, &["7♠"]);
    assert_eq!(refused(&mut g, 1, play_of(&["10♦"])), "burn-on-low");
    assert_eq!(refused(&mut g, 1, play_of(&["8♠"])), "must-play-low");
    play(&mut g, 1, &["5♠"]);
    assert_eq!(view(&g, 0).play_at_most, None, "the low lasts for one play");
    play(&mut g, 0, &["7♥"]);
    assert_eq!(
        view(&g, 1).play_at_most,
        Some(Rank::Seven),
        "a new 7 renews the low"
    );
}

#[test]
fn a_seven_on_a_seven_needs_more_cards_and_renews_the_low() {
    let mut g = table(&duel(&["7♠", "J♣", "9♠"], &["7♥", "7♦", "8♠"]), &[]);
    play(&mut g, 0, &["7♠"]);
    play(&mut g, 1, &["7♥", "7♦"]);
    assert_eq!(view(&g, 0).play_at_most, Some(Rank::Seven));
    assert_eq!(refused(&mut g, 0, play_of(&["9♠"])), "must-play-low");
}

#[test]
fn a_ten_burns_the_pile_at_once_and_leaves_the_game_with_it() {
    let mut g = table(&duel(&["9♠", "10♠", "4♠"], &["J♣", "8♠", "5♠"]), &[]);
    play(&mut g, 0, &["9♠"]);
    play(&mut g, 1, &["J♣"]);
    let events = play(&mut g, 0, &["10♠"]);
    assert_eq!(burned(&events), vec![BurnCause::BurnRank]);
    let v = view(&g, 1);
    assert!(v.pile.is_empty());
    assert_eq!(v.out_of_hand, 3);
    assert_eq!(on_turn(&g), 0);
    assert!(
        !g.legal_actions(0).contains(&Action::PickUp),
        "the bonus play opens the table"
    );
    play(&mut g, 0, &["4♠"]);
    assert_eq!(on_turn(&g), 1);
}

#[test]
fn a_lower_card_is_refused_and_a_voluntary_pickup_ends_the_turn() {
    let mut g = table(&duel(&["9♠", "10♠", "4♠"], &["J♣", "8♠", "5♠"]), &[]);
    assert_eq!(refused(&mut g, 0, Action::PickUp), "nothing-to-pick-up");
    play(&mut g, 0, &["9♠"]);
    assert_eq!(refused(&mut g, 1, play_of(&["8♠"])), "too-low");
    assert_eq!(refused(&mut g, 0, Action::PickUp), "not-your-turn");
    act(&mut g, 1, Action::PickUp);
    assert_eq!(on_turn(&g), 0);
    assert_eq!(hand(&g, 1).len(), 4);
}

#[test]
fn malformed_plays_are_refused_with_their_codes() {
    let mut g = table(&duel(&["9♠", "9♥", "4♠"], &["J♣", "8♠", "5♠"]), &[]);
    let code = |g: &mut _, ids: &[&str]| refused(g, 0, play_of(ids));
    assert_eq!(code(&mut g, &[]), "empty-play");
    assert_eq!(code(&mut g, &["9♠", "4♠"]), "mixed-ranks");
    assert_eq!(code(&mut g, &["9♠", "9♠"]), "duplicate-card");
    assert_eq!(code(&mut g, &["J♣"]), "card-not-in-hand");
    assert_eq!(
        refused(&mut g, 0, Action::PlayFaceDown { index: 0 }),
        "face-down-not-yet"
    );
    assert_eq!(refused(&mut g, 0, Action::KeepCards), "wrong-phase");
    assert_eq!(refused(&mut g, 7, Action::PickUp), "no-such-seat");
}

#[test]
fn an_empty_hand_takes_the_face_up_cards_once_the_draw_has_passed() {
    let mut g = table(&duel(&["6♠", "6♥", "6♦"], &["J♣", "8♠", "5♠"]), &["2♣"]);
    play(&mut g, 0, &["6♠", "6♥", "6♦"]);
    // The draw came first, so the hand is not empty and the face-up cards stay.
    assert_eq!(hand(&g, 0), cards(&["2♣"]));
    assert_eq!(view(&g, 1).seats[0].face_up.len(), 3);
    act(&mut g, 1, Action::PickUp);
    let events = play(&mut g, 0, &["2♣"]);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::FaceUpTaken { seat: 0, .. }))
    );
    let mut h = hand(&g, 0);
    h.sort();
    assert_eq!(h, cards(&["Q♠", "Q♥", "Q♦"]));
    assert!(view(&g, 1).seats[0].face_up.is_empty());
}

#[test]
fn a_swap_exchanges_one_hand_card_with_one_face_up_card_once() {
    let mut g = session(&duel(&["6♠", "6♥", "6♦"], &["J♣", "8♠", "5♠"]), &[], 1, &[]);
    for seat in 0..2 {
        act(&mut g, seat, Action::DeclineProposal);
    }
    let swap = Action::Swap {
        hand: Card::of("6♠"),
        face_up: Card::of("Q♥"),
    };
    assert!(g.legal_actions(0).contains(&swap));
    act(&mut g, 0, swap.clone());
    assert!(hand(&g, 0).contains(&Card::of("Q♥")));
    assert!(view(&g, 1).seats[0].face_up.contains(&Card::of("6♠")));
    assert_eq!(refused(&mut g, 0, swap), "already-swapped");
    assert_eq!(
        refused(
            &mut g,
            1,
            Action::Swap {
                hand: Card::of("J♣"),
                face_up: Card::of("Q♠")
            }
        ),
        "card-not-face-up"
    );
    act(&mut g, 1, Action::KeepCards);
    assert_eq!(on_turn(&g), 0, "the first hand's dealer, seat 0, opens");
}

#[test]
fn nobody_sees_face_down_cards_until_they_are_turned() {
    let g = table(&duel(&["6♠", "6♥", "6♦"], &["J♣", "8♠", "5♠"]), &[]);
    for viewer in [Viewer::Seat(0), Viewer::Seat(1), Viewer::Spectator] {
        let json = serde_json::to_string(&g.view(viewer)).unwrap();
        for hidden in ["J♠", "J♥", "J♦", "K♠", "K♥", "K♦"] {
            assert!(!json.contains(hidden), "{viewer:?} sees {hidden}");
        }
    }
    let json = serde_json::to_string(&g.view(Viewer::Seat(1))).unwrap();
    assert!(!json.contains("6♠"), "seat 1 does not see seat 0's hand");
    assert!(json.contains("Q♠"), "face-up cards are public");
}

#[test]
fn dealt_and_drawn_cards_are_told_only_to_their_holder() {
    let mut g = session(
        &duel(&["6♠", "6♥", "8♦"], &["J♣", "8♠", "5♠"]),
        &["A♣"],
        1,
        &[],
    );
    g.apply(0, &Action::DeclineProposal).unwrap();
    let deal = g.apply(1, &Action::DeclineProposal).unwrap();
    let mut told = 0;
    for obs in &deal {
        match &obs.event {
            Event::YourHand { cards: hand } => {
                let holder = if hand.contains(&Card::of("6♠")) {
                    0
                } else {
                    1
                };
                assert_eq!(obs.audience, Audience::seat(holder));
                told += 1;
            }
            Event::Dealt { .. } => assert_eq!(obs.audience, Audience::Everyone),
            _ => {}
        }
    }
    assert_eq!(told, 2);
    act(&mut g, 0, Action::KeepCards);
    act(&mut g, 1, Action::KeepCards);
    let obs = g.apply(0, &play_of(&["6♠", "6♥"])).unwrap();
    for o in &obs {
        match &o.event {
            Event::YouDrew { cards: drawn } => {
                assert_eq!(drawn, &cards(&["A♣"]));
                assert_eq!(o.audience, Audience::seat(0));
            }
            Event::Drew { seat: 0, count: 1 } => assert_eq!(o.audience, Audience::Everyone),
            other => assert_eq!(o.audience, Audience::Everyone, "{other:?}"),
        }
    }
    assert!(obs.iter().any(|o| matches!(o.event, Event::YouDrew { .. })));
}

#[test]
fn during_a_pass_obligation_a_reset_a_low_and_a_burn_are_all_refused() {
    let seats = [
        Deal {
            down: ["J♠", "J♥", "J♦"],
            up: ["Q♠", "Q♥", "Q♦"],
            hand: &["9♠", "3♠", "4♥"],
        },
        Deal {
            down: ["K♠", "K♥", "K♦"],
            up: ["A♠", "A♥", "A♦"],
            hand: &["2♣", "7♣", "10♣"],
        },
    ];
    let mut g = table(&seats, &[]);
    play(&mut g, 0, &["9♠"]);
    act(&mut g, 1, Action::PickUp);
    play(&mut g, 0, &["4♥"]);
    play(&mut g, 1, &["9♠"]);
    play(&mut g, 0, &["3♠"]);
    for id in ["2♣", "7♣", "10♣"] {
        let code = refused(&mut g, 1, play_of(&[id]));
        assert_eq!(code, "pass-obligation", "{id}");
    }
    assert_eq!(g.legal_actions(1), vec![Action::PickUp]);
}

#[test]
fn four_sevens_burn_and_cancel_the_low() {
    let mut g = table(&duel(&["7♠", "7♣", "9♠"], &["7♥", "7♦", "8♠"]), &[]);
    play(&mut g, 0, &["7♠"]);
    play(&mut g, 1, &["7♥", "7♦"]);
    let events = play(&mut g, 0, &["7♣"]);
    assert_eq!(burned(&events), vec![BurnCause::FourOfARank]);
    assert_eq!(view(&g, 0).play_at_most, None);
    play(&mut g, 0, &["9♠"]);
}
