//! Event cards and reactions, the end of a turn, the final round and scoring.

use super::*;

// ---- event cards -------------------------------------------------------------------------

#[test]
fn the_diadem_private_tutor_and_charity_ball_raise_her_attributes() {
    for (card, expected) in [
        ("diadem-1", attrs(1, 2, 1)),
        ("private-tutor-1", attrs(1, 1, 2)),
        ("charity-ball-1", attrs(2, 1, 1)),
    ] {
        let mut g = table(2);
        g.daughter(0, "henriette", attrs(1, 1, 1), &[], None);
        g.hand(0, &[card]);
        g.go(0, play(card, None, None));
        assert_eq!(g.active(0).attributes, expected, "{card}");
        assert!(g.event_discard.contains(&ev(card)));
        assert_eq!(
            g.phase,
            Phase::Visit,
            "playing before the visit keeps the step"
        );
    }
}

#[test]
fn a_love_letter_takes_the_top_card_of_the_main_deck() {
    let mut g = table(2);
    g.daughter(0, "henriette", attrs(1, 1, 1), &[], None);
    g.main_top(&["ludwig-2"]);
    g.hand(0, &["love-letter-2"]);
    let obs = g.go(0, play("love-letter-2", None, None));
    assert_eq!(g.suitors(0), ["ludwig-2"]);
    assert!(reached(
        &obs,
        &Event::DrewFromMainDeck {
            seat: 0,
            card: card("ludwig-2")
        }
    ));
}

#[test]
fn a_ball_invitation_shows_one_deck_to_its_player_and_takes_a_card() {
    let mut g = table(3);
    g.daughter(0, "henriette", attrs(1, 1, 1), &[], None);
    g.deck(Location::Tavern, &["konrad-2", "ludwig-5"]);
    g.hand(0, &["ball-invitation-1"]);
    assert_eq!(
        g.apply(0, &play("ball-invitation-1", None, Some(Location::Tailor)))
            .unwrap_err(),
        Error::NothingToTake
    );
    assert_eq!(
        g.apply(0, &play("ball-invitation-1", None, None))
            .unwrap_err(),
        Error::InvalidChoice
    );
    g.go(0, visit(Location::Park));
    g.go(0, play("ball-invitation-1", None, Some(Location::Tavern)));
    assert_eq!(
        g.phase,
        Phase::ChooseGentleman {
            seat: 0,
            location: Location::Tavern
        }
    );
    let tavern = Location::Tavern.index();
    assert!(
        g.view(Viewer::Seat(0)).location_decks[tavern]
            .cards
            .is_some()
    );
    assert!(
        g.view(Viewer::Seat(1)).location_decks[tavern]
            .cards
            .is_none()
    );
    g.go(
        0,
        Action::Take {
            card: card("ludwig-5"),
        },
    );
    assert_eq!(g.suitors(0), ["ludwig-5"]);
    assert_eq!(
        g.location_decks[tavern].len(),
        2,
        "refilled from the main deck"
    );
    // Back to the step she was in: the Park's action is still hers to take.
    assert_eq!(
        g.phase,
        Phase::ActionOrIntrigue {
            location: Location::Park
        }
    );
}

/// Seat 0 plays the hostile `card` at seat 1; seat 1 holds `reply`.
fn hostile(card: &str, reply: &[&str]) -> Amori {
    let mut g = table(2);
    g.daughter(
        0,
        "henriette",
        attrs(1, 1, 1),
        &["bodo-1"],
        Some(Location::Park),
    );
    g.daughter(
        1,
        "sophie",
        attrs(3, 2, 2),
        &["gustav-1"],
        Some(Location::Park),
    );
    g.hand(0, &[card]);
    g.hand(1, reply);
    g.go(0, play(card, Some(1), None));
    g
}

#[test]
fn slander_costs_another_daughter_reputation() {
    let mut g = hostile("slander-1", &[]);
    g.go(1, Action::Pass);
    assert_eq!(g.active(1).attributes, attrs(2, 2, 2));
    assert_eq!(g.phase, Phase::Visit);
}

#[test]
fn casanova_calls_rolls_the_casanova_die_for_another_daughter() {
    let g = hostile("casanova-calls-1", &[]);
    let (g, _) = with_rolls(&g, 1, Action::Pass, &[(Die::Casanova, DieFace::RedHat)]);
    assert_eq!(g.active(1).attributes, attrs(2, 2, 2));
}

#[test]
fn a_drinking_party_rolls_the_drink_die_for_another_daughter() {
    let g = hostile("drinking-party-1", &[]);
    let (g, _) = with_rolls(&g, 1, Action::Pass, &[(Die::Drink, DieFace::Bottle)]);
    assert_eq!(g.active(1).attributes, attrs(3, 2, 1));
}

#[test]
fn an_intrigue_by_letter_reaches_a_daughter_at_another_location() {
    let mut g = rivals(Location::Theater, Location::Tailor);
    g.hand(0, &["intrigue-by-letter-1"]);
    let refused = g
        .apply(0, &play("intrigue-by-letter-1", Some(1), None))
        .unwrap_err();
    assert_eq!(refused, Error::NoIntrigue, "not at the tailor");
    g.players[1].location = Some(Location::Tavern);
    g.go(0, play("intrigue-by-letter-1", Some(1), None));
    let (mut g, _) = with_rolls(&g, 1, Action::Pass, &[(Die::Intrigue, DieFace::Clover)]);
    assert_eq!(
        g.phase,
        Phase::IntrigueSpoils {
            taker: 0,
            victim: 1
        }
    );
    g.go(
        0,
        Action::Take {
            card: card("gustav-1"),
        },
    );
    assert_eq!(g.suitors(0), ["bodo-1", "gustav-1"]);
    assert_eq!(
        g.phase,
        Phase::Visit,
        "the letter does not use up the turn's action"
    );
}

#[test]
fn enlarging_the_property_and_an_inheritance_are_kept_for_points() {
    let mut g = table(2);
    g.daughter(0, "henriette", attrs(1, 1, 1), &[], None);
    g.hand(0, &["enlarge-the-property-1", "unexpected-inheritance-2"]);
    g.go(0, play("enlarge-the-property-1", None, None));
    g.go(0, play("unexpected-inheritance-2", None, None));
    assert_eq!(g.players[0].kept.len(), 2);
    assert_eq!(g.scoring().event_points[0], 5);
    assert_eq!(g.view(Viewer::Seat(1)).players[0].kept_for_points.len(), 2);
}

#[test]
fn a_chaperone_cancels_a_hostile_card() {
    let mut g = hostile("slander-1", &["chaperone-1"]);
    assert_eq!(g.awaiting().iter().collect::<Vec<_>>(), [1]);
    let obs = g.go(
        1,
        Action::React {
            card: ev("chaperone-1"),
        },
    );
    assert_eq!(g.active(1).attributes, attrs(3, 2, 2));
    assert!(g.event_discard.contains(&ev("slander-1")));
    assert!(g.event_discard.contains(&ev("chaperone-1")));
    assert!(reached(
        &obs,
        &Event::Reacted {
            seat: 1,
            card: ev("chaperone-1")
        }
    ));
    assert_eq!((g.current, g.phase.clone()), (0, Phase::Visit));
}

#[test]
fn a_chaperone_also_stops_an_intrigue_by_letter() {
    let mut g = rivals(Location::Theater, Location::Tavern);
    g.hand(0, &["intrigue-by-letter-2"]);
    g.hand(1, &["chaperone-3"]);
    g.go(0, play("intrigue-by-letter-2", Some(1), None));
    let obs = g.go(
        1,
        Action::React {
            card: ev("chaperone-3"),
        },
    );
    assert!(rolls(&obs).is_empty());
    assert_eq!(g.suitors(1), ["gustav-1"]);
}

#[test]
fn the_reaction_window_waits_for_the_target_even_without_a_chaperone() {
    let g = hostile("slander-2", &["diadem-1"]);
    assert_eq!(g.awaiting().iter().collect::<Vec<_>>(), [1]);
    assert_eq!(g.legal_actions(1), [Action::Pass]);
    assert_eq!(g.default_action(1), Some(Action::Pass));
    let mut g2 = g.clone();
    assert_eq!(
        g2.apply(
            1,
            &Action::React {
                card: ev("diadem-1")
            }
        )
        .unwrap_err(),
        Error::NotAReaction
    );
    assert_eq!(
        g2.apply(
            1,
            &Action::React {
                card: ev("chaperone-2")
            }
        )
        .unwrap_err(),
        Error::CardNotInHand
    );
    assert_eq!(g2, g);
}

#[test]
fn a_chaperone_is_not_played_in_ones_own_turn() {
    let mut g = table(2);
    g.hand(0, &["chaperone-1"]);
    assert!(
        !g.legal_actions(0)
            .iter()
            .any(|a| matches!(a, Action::PlayEvent { .. }))
    );
    assert_eq!(
        g.apply(0, &play("chaperone-1", None, None))
            .unwrap_err()
            .code(),
        "reaction-only"
    );
}

#[test]
fn hostile_cards_aim_only_at_another_players_daughter() {
    let mut g = table(2);
    g.hand(0, &["slander-1"]);
    assert_eq!(
        g.apply(0, &play("slander-1", Some(0), None)).unwrap_err(),
        Error::InvalidTarget
    );
    assert_eq!(
        g.apply(0, &play("slander-1", None, None)).unwrap_err(),
        Error::InvalidTarget
    );
    assert_eq!(
        g.apply(0, &play("slander-1", Some(9), None)).unwrap_err(),
        Error::InvalidTarget
    );
}

// ---- ending the turn ---------------------------------------------------------------------

#[test]
fn drawing_an_event_card_ends_the_turn() {
    let mut g = table(2);
    g.go(0, visit(Location::Tailor));
    g.go(0, act());
    let obs = g.go(0, Action::EndTurn);
    let private = obs
        .iter()
        .find(|o| matches!(o.event, Event::EventDrawn { .. }))
        .unwrap();
    assert_eq!(private.audience, Audience::seat(0));
    assert!(reached(&obs, &Event::EventDrawnFaceDown { seat: 0 }));
    assert_eq!(g.players[0].hand.len(), 3);
    assert_eq!((g.current, g.phase.clone()), (1, Phase::Visit));
}

#[test]
fn a_sixth_card_is_discarded_down_to_the_hand_limit() {
    let mut g = table(2);
    g.hand(
        0,
        &["diadem-1", "diadem-2", "diadem-3", "diadem-4", "diadem-5"],
    );
    g.phase = Phase::Events;
    g.go(0, Action::EndTurn);
    assert_eq!(g.phase, Phase::Discard { seat: 0 });
    assert_eq!(g.legal_actions(0).len(), 6);
    g.go(
        0,
        Action::Discard {
            card: ev("diadem-2"),
        },
    );
    assert_eq!(g.players[0].hand.len(), 5);
    assert!(g.event_discard.contains(&ev("diadem-2")));
    assert_eq!(g.current, 1);
}

#[test]
fn the_event_deck_is_reshuffled_from_the_discards_when_it_runs_out() {
    let mut g = table(2);
    let all = std::mem::take(&mut g.event_deck);
    g.event_discard = all;
    g.phase = Phase::Events;
    let size = g.event_discard.len();
    let obs = g.go(0, Action::EndTurn);
    assert!(reached(&obs, &Event::EventDeckReshuffled { size }));
    assert_eq!(g.event_deck.len(), size - 1);
}

#[test]
fn otilies_turn_at_the_theater() {
    // Rulebook example 3: Otilie visits the theater and gains Education, looks at its deck and
    // takes a second Alexander; the other two go back with a card from the main deck. Then she
    // plays The Diadem for Beauty and draws an event card to end her turn.
    let mut g = table(2);
    g.daughter(0, "otilie", attrs(1, 0, 2), &["alexander-1"], None);
    g.deck(Location::Theater, &["alexander-2", "bodo-1", "gustav-1"]);
    g.main_top(&["ludwig-1"]);
    g.hand(0, &["diadem-3"]);
    g.go(0, visit(Location::Theater));
    g.go(0, act());
    assert_eq!(g.active(0).attributes, attrs(1, 0, 3));
    g.go(
        0,
        Action::Take {
            card: card("alexander-2"),
        },
    );
    assert_eq!(g.suitors(0), ["alexander-1", "alexander-2"]);
    let mut deck = g.location_decks[Location::Theater.index()];
    deck.sort();
    assert_eq!(*deck, [card("bodo-1"), card("gustav-1"), card("ludwig-1")]);
    g.go(0, play("diadem-3", None, None));
    assert_eq!(g.active(0).attributes, attrs(1, 1, 3));
    g.go(0, Action::EndTurn);
    assert_eq!(g.players[0].hand.len(), 1);
    assert_eq!(g.current, 1);
}

// ---- the end -----------------------------------------------------------------------------

/// Seat `seat` has married two daughters and plays the third with three Bodo cards.
fn about_to_finish(g: &mut Amori, seat: Seat) {
    let p = &mut g.players[usize::from(seat)];
    let sisters = std::mem::take(&mut p.face_down);
    for (&d, husband) in sisters.iter().zip(["cornelius", "gustav"]) {
        let husband: crate::amori::GentlemanId = husband.parse().unwrap();
        let kept = husband.card(6).unwrap();
        g.pull_card(kept);
        g.players[usize::from(seat)]
            .brides
            .push(crate::amori::Bride {
                daughter: d,
                attributes: attrs(1, 2, 2),
                husband,
                kept,
            });
    }
    let name = g.active(seat).daughter.to_string();
    g.daughter(
        seat,
        &name,
        attrs(1, 1, 1),
        &["bodo-1", "bodo-2", "bodo-3"],
        None,
    );
}

#[test]
fn the_third_marriage_starts_the_last_round_which_is_played_out() {
    let mut g = table(3);
    g.starting_player = 0;
    g.current = 1;
    about_to_finish(&mut g, 1);
    g.go(1, visit(Location::Tailor));
    let obs = g.go(1, act());
    assert!(reached(&obs, &Event::FinalRound { seat: 1 }));
    assert!(g.final_round);
    assert!(g.players[1].active.is_none());
    // Seat 2 still plays; then the round is over at the starting player.
    assert_eq!((g.current, g.phase.clone()), (2, Phase::Visit));
    assert_eq!(g.outcome(), None);
    g.go(2, visit(Location::Tailor));
    g.go(2, act());
    let obs = g.go(2, Action::EndTurn);
    assert_eq!(g.phase, Phase::Over);
    assert!(g.awaiting().is_empty());
    assert!(
        obs.iter()
            .any(|o| matches!(o.event, Event::GameOver { .. }))
    );
    assert_eq!(g.apply(0, &Action::EndTurn).unwrap_err(), Error::MatchOver);
}

#[test]
fn a_player_with_every_daughter_married_takes_no_more_turns() {
    let mut g = table(3);
    g.starting_player = 1;
    g.current = 1;
    about_to_finish(&mut g, 2);
    // Seat 2's last daughter marries in seat 1's turn (a failed intrigue hands her a card).
    g.daughter(
        1,
        "sophie",
        attrs(3, 0, 0),
        &["gustav-1"],
        Some(Location::Theater),
    );
    g.players[2].active.as_mut().unwrap().suitors.pop();
    g.players[2].location = Some(Location::Park);
    g.go(1, visit(Location::Park));
    let (mut g, _) = with_rolls(
        &g,
        1,
        Action::Intrigue { target: 2 },
        &[(Die::Intrigue, DieFace::Exclamation)],
    );
    g.daughter(
        1,
        "sophie",
        attrs(3, 0, 0),
        &["bodo-3"],
        Some(Location::Park),
    );
    g.go(
        2,
        Action::Take {
            card: card("bodo-3"),
        },
    );
    assert!(g.final_round);
    // Seat 2 is skipped; seat 0 plays the round's last turn.
    assert_eq!(g.current, 0);
    g.go(0, visit(Location::Tailor));
    g.go(0, act());
    g.go(0, Action::EndTurn);
    assert_eq!(g.phase, Phase::Over);
}

#[test]
fn scoring_counts_marriages_kept_cards_and_medals() {
    let mut g = table(2);
    about_to_finish(&mut g, 0);
    g.players[0].active = None;
    g.hand(0, &["unexpected-inheritance-1"]);
    let c = g.players[0].hand.pop().unwrap();
    g.players[0].kept.push(c);
    g.daughter(1, "sophie", attrs(0, 0, 0), &[], None);
    let s = g.scoring();
    // Seat 0: Cornelius 1 + Gustav 1 VP, 3 from the inheritance.
    assert_eq!(s.marriage_points[0], 2);
    assert_eq!(s.event_points[0], 3);
    let medals = s.medals.iter().filter(|m| m.winner == Some(0)).count() as i32;
    assert_eq!(s.totals[0], 5 + 2 * medals);
    assert_eq!(s.families[0], attrs(2, 4, 4));
}

#[test]
fn a_tied_medal_is_not_awarded() {
    let mut g = table(2);
    // Both families total Reputation 5 (face-down sisters count at their starting values).
    let sisters: u8 = g.players[0]
        .face_down
        .iter()
        .map(|d| d.data().start.reputation)
        .sum();
    let others: u8 = g.players[1]
        .face_down
        .iter()
        .map(|d| d.data().start.reputation)
        .sum();
    let name0 = g.active(0).daughter.to_string();
    let name1 = g.active(1).daughter.to_string();
    g.daughter(0, &name0, attrs(10 - sisters - 5, 5, 0), &[], None);
    g.daughter(1, &name1, attrs(10 - others - 5, 0, 0), &[], None);
    let s = g.scoring();
    assert_eq!(s.families[0].reputation, s.families[1].reputation);
    assert_eq!(s.medals[0].winner, None);
    assert_eq!(
        s.medals[1].winner,
        Some(0),
        "beauty: 5 plus sisters beats 0 plus sisters"
    );
}

#[test]
fn equal_totals_give_several_winners() {
    let mut g = table(2);
    g.phase = Phase::Over;
    for seat in 0..2 {
        let name = g.active(seat).daughter.to_string();
        g.daughter(seat, &name, attrs(0, 0, 0), &[], None);
        g.players[seat as usize].face_down.clear();
    }
    // Nobody scores: every medal is tied at zero, so both win with 0 points.
    let out = g.outcome().unwrap();
    assert_eq!(out.scores, [0, 0]);
    assert_eq!(out.winners.len(), 2);
}
