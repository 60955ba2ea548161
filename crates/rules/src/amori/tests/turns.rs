//! Moving, the locations, the dice, intrigues, the suitor limit and marriages.

use super::*;

// ---- moving ------------------------------------------------------------------------------

#[test]
fn a_daughter_must_move_to_a_different_location() {
    let mut g = table(2);
    g.daughter(0, "henriette", attrs(1, 1, 1), &[], Some(Location::Theater));
    let before = g.clone();
    let err = g.apply(0, &visit(Location::Theater)).unwrap_err();
    assert_eq!(err.code(), "must-move");
    assert_eq!(g, before);
    assert!(!g.legal_actions(0).contains(&visit(Location::Theater)));
    g.go(0, visit(Location::Park));
    assert_eq!(
        g.phase,
        Phase::ActionOrIntrigue {
            location: Location::Park
        }
    );
}

#[test]
fn she_may_stay_where_she_stands_to_intrigue_there() {
    let g = rivals(Location::Park, Location::Park);
    assert!(g.legal_actions(0).contains(&Action::Intrigue { target: 1 }));
    let (g, _) = with_rolls(
        &g,
        0,
        Action::Intrigue { target: 1 },
        &[(Die::Intrigue, DieFace::Clover)],
    );
    assert_eq!(g.players[0].location, Some(Location::Park));
    assert_eq!(
        g.phase,
        Phase::IntrigueSpoils {
            taker: 0,
            victim: 1
        }
    );
}

// ---- locations ---------------------------------------------------------------------------

#[test]
fn the_theater_raises_education_then_offers_its_deck() {
    let mut g = table(2);
    g.daughter(0, "otilie", attrs(1, 0, 2), &[], None);
    g.deck(Location::Theater, &["bodo-1", "gustav-2", "konrad-3"]);
    g.go(0, visit(Location::Theater));
    let obs = g.go(0, act());
    assert_eq!(g.active(0).attributes, attrs(1, 0, 3));
    assert!(rolls(&obs).is_empty());
    assert_eq!(
        g.phase,
        Phase::ChooseGentleman {
            seat: 0,
            location: Location::Theater
        }
    );
}

#[test]
fn the_tavern_rolls_casanova_then_drink() {
    let mut g = table(2);
    g.daughter(0, "ludmilla", attrs(2, 3, 2), &[], None);
    g.go(0, visit(Location::Tavern));
    let (g, obs) = with_rolls(
        &g,
        0,
        act(),
        &[
            (Die::Casanova, DieFace::RedHat),
            (Die::Drink, DieFace::Bottle),
        ],
    );
    assert_eq!(g.active(0).attributes, attrs(1, 3, 1));
    assert_eq!(rolls(&obs).len(), 2);
    assert_eq!(
        g.phase,
        Phase::ChooseGentleman {
            seat: 0,
            location: Location::Tavern
        }
    );
}

#[test]
fn the_boulevard_raises_the_attribute_of_the_players_choice() {
    let mut g = table(2);
    g.daughter(0, "henriette", attrs(1, 1, 1), &[], None);
    g.go(0, visit(Location::Boulevard));
    let legal = g.legal_actions(0);
    assert!(legal.contains(&Action::LocationAction {
        choice: Some(Attribute::Reputation)
    }));
    assert!(legal.contains(&Action::LocationAction {
        choice: Some(Attribute::Education)
    }));
    for refused in [None, Some(Attribute::Beauty)] {
        let err = g
            .apply(0, &Action::LocationAction { choice: refused })
            .unwrap_err();
        assert_eq!(err, Error::InvalidChoice);
    }
    let mut r = g.clone();
    r.go(
        0,
        Action::LocationAction {
            choice: Some(Attribute::Reputation),
        },
    );
    assert_eq!(r.active(0).attributes, attrs(2, 1, 1));
    g.go(
        0,
        Action::LocationAction {
            choice: Some(Attribute::Education),
        },
    );
    assert_eq!(g.active(0).attributes, attrs(1, 1, 2));
}

#[test]
fn the_poorhouse_raises_reputation() {
    let mut g = table(2);
    g.daughter(0, "henriette", attrs(1, 1, 1), &[], None);
    g.go(0, visit(Location::Poorhouse));
    g.go(0, act());
    assert_eq!(g.active(0).attributes, attrs(2, 1, 1));
    assert_eq!(
        g.phase,
        Phase::ChooseGentleman {
            seat: 0,
            location: Location::Poorhouse
        }
    );
}

#[test]
fn the_park_raises_beauty_then_rolls_casanova() {
    let mut g = table(2);
    g.daughter(0, "henriette", attrs(1, 1, 1), &[], None);
    g.go(0, visit(Location::Park));
    // Beauty is raised first, so the red hat (2) already finds her beautiful enough.
    let (g, _) = with_rolls(&g, 0, act(), &[(Die::Casanova, DieFace::RedHat)]);
    assert_eq!(g.active(0).attributes, attrs(0, 2, 1));
}

#[test]
fn the_tailor_adds_two_beauty_and_has_no_gentlemen_nor_intrigues() {
    let mut g = table(2);
    g.daughter(0, "henriette", attrs(1, 4, 1), &["bodo-1"], None);
    g.daughter(
        1,
        "sophie",
        attrs(3, 0, 0),
        &["gustav-1"],
        Some(Location::Tailor),
    );
    g.go(0, visit(Location::Tailor));
    assert!(
        !g.legal_actions(0)
            .iter()
            .any(|a| matches!(a, Action::Intrigue { .. }))
    );
    assert_eq!(
        g.apply(0, &Action::Intrigue { target: 1 })
            .unwrap_err()
            .code(),
        "no-intrigue"
    );
    g.go(0, act());
    assert_eq!(g.active(0).attributes, attrs(1, 5, 1), "clamped at 5");
    assert_eq!(g.phase, Phase::Events);
}

#[test]
fn taking_a_card_refills_the_location_deck_from_the_main_deck() {
    let mut g = table(2);
    g.daughter(0, "henriette", attrs(1, 1, 1), &[], None);
    g.deck(Location::Poorhouse, &["bodo-1", "gustav-2", "konrad-3"]);
    g.main_top(&["ludwig-4"]);
    g.go(0, visit(Location::Poorhouse));
    g.go(0, act());
    let main_before = g.main_deck.len();
    let obs = g.go(
        0,
        Action::Take {
            card: card("gustav-2"),
        },
    );
    assert_eq!(g.suitors(0), ["gustav-2"]);
    let mut deck = g.location_decks[Location::Poorhouse.index()];
    deck.sort();
    assert_eq!(*deck, [card("bodo-1"), card("konrad-3"), card("ludwig-4")]);
    assert_eq!(g.main_deck.len(), main_before - 1);
    assert!(reached(
        &obs,
        &Event::LocationDeckRefilled {
            location: Location::Poorhouse
        }
    ));
    assert_eq!(g.phase, Phase::Events);
}

#[test]
fn an_empty_location_deck_offers_nothing() {
    let mut g = table(2);
    g.daughter(0, "henriette", attrs(1, 1, 1), &[], None);
    g.deck(Location::Theater, &[]);
    g.go(0, visit(Location::Theater));
    g.go(0, act());
    assert_eq!(g.phase, Phase::Events);
    assert!(g.suitors(0).is_empty());
}

#[test]
fn the_main_deck_is_rebuilt_from_the_discards_when_it_runs_out() {
    let mut g = table(2);
    g.daughter(0, "henriette", attrs(1, 1, 1), &[], None);
    g.deck(Location::Theater, &["bodo-1"]);
    g.gentleman_discard = std::mem::take(&mut g.main_deck);
    g.go(0, visit(Location::Theater));
    g.go(0, act());
    let discards = g.gentleman_discard.len();
    let obs = g.go(
        0,
        Action::Take {
            card: card("bodo-1"),
        },
    );
    assert!(reached(&obs, &Event::MainDeckReshuffled { size: discards }));
    assert!(g.gentleman_discard.is_empty());
    assert_eq!(g.main_deck.len(), discards - 1);
    assert_eq!(g.location_decks[Location::Theater.index()].len(), 1);
}

#[test]
fn only_the_chooser_sees_the_location_deck_and_only_while_choosing() {
    let mut g = table(3);
    g.daughter(0, "henriette", attrs(1, 1, 1), &[], None);
    g.deck(Location::Park, &["konrad-3", "bodo-1"]);
    g.go(0, visit(Location::Park));
    let obs = g.go(0, act());
    let shown = obs
        .iter()
        .find(|o| matches!(o.event, Event::DeckShown { .. }))
        .unwrap();
    assert_eq!(shown.audience, Audience::seat(0));
    let deck_in = |viewer| {
        g.view(viewer).location_decks[Location::Park.index()]
            .cards
            .clone()
    };
    assert_eq!(
        deck_in(Viewer::Seat(0)),
        Some(vec![card("bodo-1"), card("konrad-3")])
    );
    assert_eq!(deck_in(Viewer::Seat(1)), None);
    assert_eq!(deck_in(Viewer::Spectator), None);
    assert_eq!(
        g.view(Viewer::Seat(1)).location_decks[Location::Park.index()].size,
        2
    );
    g.go(
        0,
        Action::Take {
            card: card("bodo-1"),
        },
    );
    assert_eq!(
        g.view(Viewer::Seat(0)).location_decks[Location::Park.index()].cards,
        None
    );
}

// ---- dice --------------------------------------------------------------------------------

#[test]
fn ludmilla_and_the_casanova_die() {
    // Rulebook example 1: Ludmilla has Beauty 3. The dark-red hat (4) spares her; the red (2)
    // or pink (0) hat costs her a point of Reputation; a clover does nothing.
    let mut g = table(2);
    g.daughter(0, "ludmilla", attrs(2, 3, 0), &[], None);
    g.daughter(1, "sophie", attrs(3, 0, 0), &[], None);
    g.hand(1, &["casanova-calls-1"]);
    g.current = 1;
    g.go(1, play("casanova-calls-1", Some(0), None));
    for (face, reputation) in [
        (DieFace::DarkRedHat, 2),
        (DieFace::RedHat, 1),
        (DieFace::PinkHat, 1),
        (DieFace::Clover, 2),
    ] {
        let (after, _) = with_rolls(&g, 0, Action::Pass, &[(Die::Casanova, face)]);
        assert_eq!(
            after.active(0).attributes.reputation,
            reputation,
            "{face:?}"
        );
    }
}

#[test]
fn the_drink_die_costs_education_on_a_bottle_only() {
    let mut g = table(2);
    g.daughter(0, "auguste", attrs(0, 0, 3), &[], None);
    g.daughter(1, "sophie", attrs(3, 0, 0), &[], None);
    g.hand(1, &["drinking-party-1"]);
    g.current = 1;
    g.go(1, play("drinking-party-1", Some(0), None));
    let (bottle, _) = with_rolls(&g, 0, Action::Pass, &[(Die::Drink, DieFace::Bottle)]);
    assert_eq!(bottle.active(0).attributes.education, 2);
    let (clover, _) = with_rolls(&g, 0, Action::Pass, &[(Die::Drink, DieFace::Clover)]);
    assert_eq!(clover.active(0).attributes.education, 3);
}

#[test]
fn dice_faces_follow_the_edition_table_and_are_public() {
    let mut g = table(2);
    g.daughter(0, "ludmilla", attrs(2, 3, 0), &[], None);
    g.go(0, visit(Location::Tavern));
    let obs = g.go(0, act());
    for o in obs
        .iter()
        .filter(|o| matches!(o.event, Event::Rolled { .. }))
    {
        assert_eq!(o.audience, Audience::Everyone);
    }
    // Over many streams every face of each die turns up, in its table proportion.
    let mut rng = GameRng::new(Seed::from_u64(5));
    for die in [Die::Casanova, Die::Drink, Die::Intrigue] {
        let faces = die.faces();
        let mut seen: std::collections::HashMap<DieFace, usize> = Default::default();
        for _ in 0..6000 {
            *seen.entry(faces[rng.below(6) as usize]).or_insert(0) += 1;
        }
        for face in faces {
            let expected = faces.iter().filter(|f| *f == face).count() * 1000;
            let got = seen[face];
            assert!(got.abs_diff(expected) < 250, "{die:?} {face:?}: {got}");
        }
    }
}

// ---- intrigue ----------------------------------------------------------------------------

fn intrigue_table() -> Amori {
    let mut g = table(2);
    g.daughter(
        0,
        "henriette",
        attrs(1, 1, 1),
        &["bodo-1"],
        Some(Location::Theater),
    );
    g.daughter(
        1,
        "sophie",
        attrs(3, 0, 0),
        &["gustav-1", "konrad-1"],
        Some(Location::Park),
    );
    g.go(0, visit(Location::Park));
    g
}

#[test]
fn a_successful_intrigue_takes_a_card_of_the_intriguers_choice() {
    let g = intrigue_table();
    let (mut g, _) = with_rolls(
        &g,
        0,
        Action::Intrigue { target: 1 },
        &[(Die::Intrigue, DieFace::Clover)],
    );
    assert_eq!(g.awaiting().iter().collect::<Vec<_>>(), [0]);
    g.go(
        0,
        Action::Take {
            card: card("konrad-1"),
        },
    );
    assert_eq!(g.suitors(0), ["bodo-1", "konrad-1"]);
    assert_eq!(g.suitors(1), ["gustav-1"]);
    // The intrigue forgoes the location action: no Park beauty.
    assert_eq!(g.active(0).attributes, attrs(1, 1, 1));
    assert_eq!(g.phase, Phase::Events);
}

#[test]
fn a_failed_intrigue_lets_the_victim_take_a_card_out_of_turn() {
    let g = intrigue_table();
    let (mut g, _) = with_rolls(
        &g,
        0,
        Action::Intrigue { target: 1 },
        &[(Die::Intrigue, DieFace::Exclamation)],
    );
    assert_eq!(g.awaiting().iter().collect::<Vec<_>>(), [1]);
    assert!(g.legal_actions(0).is_empty());
    assert_eq!(
        g.apply(
            0,
            &Action::Take {
                card: card("bodo-1")
            }
        )
        .unwrap_err()
        .code(),
        "not-your-turn"
    );
    g.go(
        1,
        Action::Take {
            card: card("bodo-1"),
        },
    );
    assert!(g.suitors(0).is_empty());
    assert_eq!(g.suitors(1), ["gustav-1", "konrad-1", "bodo-1"]);
    assert_eq!(g.phase, Phase::Events);
}

#[test]
fn an_intrigue_needs_both_daughters_to_hold_a_gentleman() {
    let mut g = table(2);
    g.daughter(0, "henriette", attrs(1, 1, 1), &[], Some(Location::Theater));
    g.daughter(
        1,
        "sophie",
        attrs(3, 0, 0),
        &["gustav-1"],
        Some(Location::Park),
    );
    g.go(0, visit(Location::Park));
    assert_eq!(
        g.apply(0, &Action::Intrigue { target: 1 }).unwrap_err(),
        Error::NoIntrigue
    );
    assert_eq!(
        g.apply(0, &Action::Intrigue { target: 0 }).unwrap_err(),
        Error::InvalidTarget
    );
}

// ---- three suitors -----------------------------------------------------------------------

#[test]
fn henriette_gives_up_giselbert_for_bodo() {
    // Rulebook example 2: the deck holds none of Alexander, Giselbert or Cornelius, so
    // Henriette gives up Giselbert's cards to take Bodo's.
    let mut g = table(2);
    g.daughter(
        0,
        "henriette",
        attrs(1, 1, 1),
        &["alexander-1", "giselbert-1", "giselbert-2", "cornelius-1"],
        None,
    );
    g.deck(Location::Theater, &["bodo-2", "gustav-2", "konrad-2"]);
    g.go(0, visit(Location::Theater));
    g.go(0, act());
    g.go(
        0,
        Action::Take {
            card: card("bodo-2"),
        },
    );
    assert_eq!(
        g.phase,
        Phase::SuitorLimit {
            seat: 0,
            incoming: card("bodo-2")
        }
    );
    let gentlemen: Vec<_> = g.legal_actions(0);
    assert_eq!(gentlemen.len(), 3);
    let err = g
        .apply(
            0,
            &Action::GiveUp {
                gentleman: "bodo".parse().unwrap(),
            },
        )
        .unwrap_err();
    assert_eq!(err, Error::NotASuitor);
    let obs = g.go(
        0,
        Action::GiveUp {
            gentleman: "giselbert".parse().unwrap(),
        },
    );
    assert_eq!(g.suitors(0), ["alexander-1", "cornelius-1", "bodo-2"]);
    assert!(g.gentleman_discard.contains(&card("giselbert-1")));
    assert!(g.gentleman_discard.contains(&card("giselbert-2")));
    assert!(reached(
        &obs,
        &Event::SuitorJoined {
            seat: 0,
            card: card("bodo-2")
        }
    ));
    assert_eq!(g.phase, Phase::Events);
}

#[test]
fn the_suitor_limit_is_asked_of_the_player_whose_daughter_receives() {
    let mut g = table(2);
    g.daughter(
        0,
        "henriette",
        attrs(1, 1, 1),
        &["bodo-1"],
        Some(Location::Theater),
    );
    g.daughter(
        1,
        "sophie",
        attrs(3, 0, 0),
        &["gustav-1", "konrad-1", "ludwig-1"],
        Some(Location::Park),
    );
    g.go(0, visit(Location::Park));
    let (mut g, _) = with_rolls(
        &g,
        0,
        Action::Intrigue { target: 1 },
        &[(Die::Intrigue, DieFace::Exclamation)],
    );
    g.go(
        1,
        Action::Take {
            card: card("bodo-1"),
        },
    );
    assert_eq!(
        g.phase,
        Phase::SuitorLimit {
            seat: 1,
            incoming: card("bodo-1")
        }
    );
    assert_eq!(g.awaiting().iter().collect::<Vec<_>>(), [1]);
    g.go(
        1,
        Action::GiveUp {
            gentleman: "konrad".parse().unwrap(),
        },
    );
    assert_eq!(g.suitors(1), ["gustav-1", "ludwig-1", "bodo-1"]);
}

// ---- marriage ----------------------------------------------------------------------------

#[test]
fn anna_maria_marries_theobald() {
    // Rulebook example 4: three Theobald cards, Reputation 3, Beauty 1, Education 4.
    let mut g = table(2);
    g.daughter(
        0,
        "anna-maria",
        attrs(3, 1, 3),
        &["theobald-1", "theobald-2", "theobald-3", "bodo-1"],
        None,
    );
    g.daughter(1, "sophie", attrs(3, 0, 0), &["theobald-4"], None);
    g.main_top(&["theobald-5"]);
    g.go(0, visit(Location::Theater));
    let obs = g.go(0, act());
    let bride = &g.players[0].brides[0];
    assert_eq!(bride.husband, "theobald".parse().unwrap());
    assert_eq!(bride.attributes, attrs(3, 1, 4));
    assert_eq!(bride.kept, card("theobald-1"));
    assert!(reached(
        &obs,
        &Event::Married {
            seat: 0,
            daughter: "anna-maria".parse().unwrap(),
            gentleman: "theobald".parse().unwrap(),
            kept: card("theobald-1"),
        }
    ));
    // His other cards leave the game, including Sophie's; her other suitors are discarded.
    for c in ["theobald-2", "theobald-3", "theobald-4"] {
        assert!(g.retired.contains(&card(c)), "{c}");
    }
    assert!(g.suitors(1).is_empty());
    assert!(g.gentleman_discard.contains(&card("bodo-1")));
    // Her sister turns up at her starting values where the bride stood.
    let next = g.players[1 - 1].active.as_ref().unwrap();
    assert_ne!(next.daughter, "anna-maria".parse().unwrap());
    assert_eq!(next.attributes, next.daughter.data().start);
    assert_eq!(g.players[0].location, Some(Location::Theater));
    // The marriage ended the turn: no gentleman choice, the card drawn, seat 1 to play.
    assert_eq!(g.players[0].hand.len(), 3);
    assert_eq!(g.phase, Phase::Visit);
    assert_eq!(g.current, 1);
}

#[test]
fn no_marriage_without_the_gentlemans_minimums() {
    let mut g = table(2);
    g.daughter(
        0,
        "anna-maria",
        attrs(3, 0, 4),
        &["theobald-1", "theobald-2", "theobald-3"],
        None,
    );
    g.go(0, visit(Location::Tailor));
    let mut short = g.clone();
    short.daughter(
        0,
        "anna-maria",
        attrs(3, 0, 3),
        &["theobald-1", "theobald-2", "theobald-3"],
        Some(Location::Tailor),
    );
    // Beauty 2 after the tailor, Education 3: Theobald needs Education 4.
    short.go(0, act());
    assert!(short.players[0].brides.is_empty());
    g.go(0, act());
    assert_eq!(g.players[0].brides.len(), 1);
}

#[test]
fn two_cards_are_not_enough_to_marry() {
    let mut g = table(2);
    g.daughter(0, "henriette", attrs(5, 5, 5), &["bodo-1", "bodo-2"], None);
    g.go(0, visit(Location::Tailor));
    g.go(0, act());
    assert!(g.players[0].brides.is_empty());
}

#[test]
fn a_marriage_can_happen_in_another_players_turn_and_ends_that_turn() {
    let mut g = table(3);
    g.daughter(
        0,
        "henriette",
        attrs(1, 1, 1),
        &["bodo-1"],
        Some(Location::Theater),
    );
    g.daughter(
        1,
        "sophie",
        attrs(3, 1, 0),
        &["bodo-2", "bodo-3"],
        Some(Location::Park),
    );
    g.go(0, visit(Location::Park));
    let (mut g, _) = with_rolls(
        &g,
        0,
        Action::Intrigue { target: 1 },
        &[(Die::Intrigue, DieFace::Exclamation)],
    );
    let obs = g.go(
        1,
        Action::Take {
            card: card("bodo-1"),
        },
    );
    assert_eq!(g.players[1].brides[0].husband, "bodo".parse().unwrap());
    assert!(
        obs.iter()
            .any(|o| matches!(o.event, Event::Married { seat: 1, .. }))
    );
    // Seat 0's turn is over: they drew, and seat 1 is next.
    assert!(reached(&obs, &Event::EventDrawnFaceDown { seat: 0 }));
    assert_eq!((g.current, g.phase.clone()), (1, Phase::Visit));
}

/// Seat 1's first sister has already married Bodo.
fn bodo_married_to_seat_1(g: &mut Amori) {
    let daughter = g.players[1].face_down.remove(0);
    g.pull_card(card("bodo-6"));
    g.players[1].brides.push(crate::amori::Bride {
        daughter,
        attributes: attrs(1, 1, 1),
        husband: "bodo".parse().unwrap(),
        kept: card("bodo-6"),
    });
}

#[test]
fn a_married_gentlemans_card_revealed_later_is_retired_and_replaced() {
    let mut g = table(2);
    g.daughter(0, "henriette", attrs(1, 1, 1), &[], None);
    bodo_married_to_seat_1(&mut g);
    g.deck(Location::Theater, &["bodo-1", "gustav-1"]);
    g.main_top(&["bodo-2", "konrad-1"]);
    g.go(0, visit(Location::Theater));
    g.go(0, act());
    // bodo-1 left the deck; its replacement konrad-1 came, then bodo-2 was found and set aside.
    let mut deck = g.location_decks[Location::Theater.index()];
    deck.sort();
    assert!(
        deck.iter()
            .all(|c| c.gentleman() != "bodo".parse().unwrap())
    );
    assert!(g.retired.contains(&card("bodo-1")));
    assert_eq!(deck.len(), 2);
}

#[test]
fn a_love_letter_skips_a_married_gentlemans_card() {
    let mut g = table(2);
    g.daughter(0, "henriette", attrs(1, 1, 1), &[], None);
    bodo_married_to_seat_1(&mut g);
    g.main_top(&["gustav-1", "bodo-1"]);
    g.hand(0, &["love-letter-1"]);
    g.go(0, play("love-letter-1", None, None));
    assert_eq!(g.suitors(0), ["gustav-1"]);
    assert!(g.retired.contains(&card("bodo-1")));
}
