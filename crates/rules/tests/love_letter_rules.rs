//! Love Letter rules, one named test per rule, forced or impossible choice, FAQ answer of
//! seeds 000 and 001, and edge case of the spec. Tables are set up from fixed decks; a few
//! tests shorten the deck or set tokens by editing the serialised state, the way a puzzle or
//! a tutorial would start mid-round.

use missive_rules::love_letter::{
    Action, CardId, Config, Edition, Event, LoveLetter, Role, RoundEnd, TokenReason,
};
use missive_rules::{Game, GameError, Observation, Seat, SeatSet, Seed, SetupError, Viewer};
use serde_json::Value;

fn c(id: &str) -> CardId {
    id.parse().expect("a card id")
}

fn cards(ids: &str) -> Vec<CardId> {
    ids.split_whitespace().map(c).collect()
}

/// A first-round order that starts with `start` (set-aside card, face-up cards with 2 players,
/// hands from the first player, then the deck from the top) and goes on with every other card
/// of the edition in id order.
fn order(edition: Edition, start: &str) -> Vec<CardId> {
    let mut deck = cards(start);
    let rest: Vec<CardId> = edition
        .cards()
        .iter()
        .copied()
        .filter(|c| !deck.contains(c))
        .collect();
    deck.extend(rest);
    deck
}

fn table_of(edition: Edition, seats: u8, first: Seat, start: &str) -> LoveLetter {
    let config = Config {
        edition,
        first_player: Some(first),
        deck: Some(order(edition, start)),
    };
    LoveLetter::setup(&config, seats, Seed::from_u64(1)).expect("a valid table")
}

/// A 2019-edition table whose seat 0 plays first.
fn table(seats: u8, start: &str) -> LoveLetter {
    table_of(Edition::V2019, seats, 0, start)
}

fn play_action(card: &str, target: Option<Seat>, guess: Option<Role>) -> Action {
    Action::Play {
        card: c(card),
        target,
        guess,
    }
}

fn play(
    g: &mut LoveLetter,
    seat: Seat,
    card: &str,
    target: Option<Seat>,
    guess: Option<Role>,
) -> Vec<Observation<Event>> {
    let action = play_action(card, target, guess);
    assert!(
        g.legal_actions(seat).contains(&action),
        "{action:?} should be listed as legal"
    );
    g.apply(seat, &action)
        .unwrap_or_else(|e| panic!("{action:?} refused: {e}"))
}

/// Tries an action that must be refused with `code`, and checks nothing changed.
fn refused(g: &mut LoveLetter, seat: Seat, action: Action, code: &str) {
    let before = serde_json::to_vec(&*g).unwrap();
    assert!(
        !g.legal_actions(seat).contains(&action),
        "{action:?} listed as legal"
    );
    let err = g
        .apply(seat, &action)
        .expect_err("the action must be refused");
    assert_eq!(err.code(), code, "{action:?}: {err}");
    assert_eq!(
        serde_json::to_vec(&*g).unwrap(),
        before,
        "a refused action changed the state"
    );
}

fn seen_by(obs: &[Observation<Event>], viewer: Viewer) -> Vec<Event> {
    obs.iter()
        .filter(|o| o.audience.includes(viewer))
        .map(|o| o.event.clone())
        .collect()
}

fn hand(g: &LoveLetter, seat: Seat) -> Vec<CardId> {
    g.view(Viewer::Seat(seat)).hand
}

fn is_out(g: &LoveLetter, seat: Seat) -> bool {
    g.view(Viewer::Spectator).players[seat as usize].out
}

fn played(g: &LoveLetter, seat: Seat) -> Vec<CardId> {
    g.view(Viewer::Spectator).players[seat as usize]
        .played
        .clone()
}

fn edited(g: &LoveLetter, f: impl FnOnce(&mut Value)) -> LoveLetter {
    let mut v = serde_json::to_value(g).unwrap();
    f(&mut v);
    serde_json::from_value(v).expect("an edited state that still reads")
}

/// Moves the whole deck aside face up (where no rule looks at it outside a 2-player round),
/// so the current turn is the round's last.
fn empty_deck(g: &LoveLetter) -> LoveLetter {
    short_deck(g, 0)
}

/// Keeps only the top `n` cards of the deck; the rest is moved aside face up.
fn short_deck(g: &LoveLetter, n: usize) -> LoveLetter {
    edited(g, |v| {
        let deck = v["deck"].as_array_mut().unwrap();
        let rest: Vec<Value> = deck.drain(..deck.len() - n).collect();
        v["face_up"].as_array_mut().unwrap().extend(rest);
    })
}

fn set_tokens(g: &LoveLetter, tokens: &[u8]) -> LoveLetter {
    edited(g, |v| {
        for (seat, t) in tokens.iter().enumerate() {
            v["players"][seat]["tokens"] = Value::from(*t);
        }
    })
}

fn protect(g: &LoveLetter, seats: &[Seat]) -> LoveLetter {
    edited(g, |v| {
        for s in seats {
            v["players"][*s as usize]["protected"] = Value::Bool(true);
        }
    })
}

/// The deck in the serialised state, from the bottom up.
fn deck_bottom_up(g: &LoveLetter) -> Vec<CardId> {
    serde_json::from_value(serde_json::to_value(g).unwrap()["deck"].clone()).unwrap()
}

/// Moves `seat`'s Spy (the last card of its hand) to its played pile; it takes the deck's top
/// card instead.
fn move_spy_to_played(g: &LoveLetter, seat: Seat) -> LoveLetter {
    edited(g, |v| {
        let top = v["deck"].as_array_mut().unwrap().pop().unwrap();
        let p = &mut v["players"][seat as usize];
        let spy = p["hand"].as_array_mut().unwrap().pop().unwrap();
        assert_eq!(spy, Value::from("★2"));
        p["played"].as_array_mut().unwrap().push(spy);
        p["hand"].as_array_mut().unwrap().push(top);
    })
}

fn last_round(g: &LoveLetter) -> missive_rules::love_letter::RoundResult {
    g.view(Viewer::Spectator)
        .last_round
        .expect("a round has ended")
}

// ---------------------------------------------------------------- setup

#[test]
fn setup_deals_the_fixed_deck_from_the_first_player_who_then_draws() {
    let g = table_of(Edition::V2019, 3, 1, "Q♥ A♠ 2♠ 3♠ 4♠");
    assert_eq!(hand(&g, 1), cards("A♠ 4♠"));
    assert_eq!(hand(&g, 2), cards("2♠"));
    assert_eq!(hand(&g, 0), cards("3♠"));
    assert_eq!(g.awaiting(), SeatSet::single(1));
    let v = g.view(Viewer::Spectator);
    assert_eq!(v.deck_count, 21 - 1 - 3 - 1);
    assert!(v.face_up.is_empty());
    assert_eq!(v.round, 1);
    assert_eq!(v.tokens_to_win, 5);
}

#[test]
fn two_player_setup_sets_three_cards_aside_face_up() {
    let g = table(2, "Q♥ 8♥ 7♥ 6♠ A♠ A♥ 2♠");
    for viewer in [Viewer::Seat(0), Viewer::Seat(1), Viewer::Spectator] {
        assert_eq!(g.view(viewer).face_up, cards("8♥ 7♥ 6♠"));
    }
    assert_eq!(hand(&g, 0), cards("A♠ 2♠"));
    assert_eq!(hand(&g, 1), cards("A♥"));
    assert_eq!(g.view(Viewer::Spectator).deck_count, 21 - 1 - 3 - 2 - 1);
}

#[test]
fn setup_refuses_a_deck_that_is_not_the_editions_cards() {
    let setup = |edition, deck: Vec<CardId>| {
        let config = Config {
            edition,
            first_player: None,
            deck: Some(deck),
        };
        LoveLetter::setup(&config, 3, Seed::from_u64(0))
    };
    let mut missing = order(Edition::V2019, "");
    missing.pop();
    let mut doubled = order(Edition::V2019, "");
    doubled[0] = doubled[1];
    for deck in [missing, doubled] {
        assert!(matches!(
            setup(Edition::V2019, deck),
            Err(SetupError::InvalidConfig(_))
        ));
    }
    let with_spy = order(Edition::V2019, "")[..16].to_vec();
    assert!(matches!(
        setup(Edition::Classic, with_spy),
        Err(SetupError::InvalidConfig(_))
    ));
    assert!(setup(Edition::Classic, order(Edition::Classic, "")).is_ok());
}

#[test]
fn setup_refuses_a_first_player_outside_the_table() {
    let config = Config {
        first_player: Some(3),
        ..Config::default()
    };
    assert!(matches!(
        LoveLetter::setup(&config, 3, Seed::from_u64(0)),
        Err(SetupError::InvalidConfig(_))
    ));
}

#[test]
fn seat_counts_follow_the_edition() {
    let classic = Config {
        edition: Edition::Classic,
        ..Config::default()
    };
    let modern = Config::default();
    assert_eq!(LoveLetter::seat_range(&modern), 2..=6);
    assert_eq!(LoveLetter::seat_range(&classic), 2..=4);
    for (config, seats, ok) in [
        (&modern, 1, false),
        (&modern, 6, true),
        (&modern, 7, false),
        (&classic, 5, false),
    ] {
        let result = LoveLetter::setup(config, seats, Seed::from_u64(0));
        assert_eq!(result.is_ok(), ok, "{seats} seats");
        if !ok {
            assert!(matches!(result, Err(SetupError::SeatCount { .. })));
        }
    }
}

#[test]
fn the_first_player_is_drawn_from_the_seed_when_not_configured() {
    let mut firsts = SeatSet::EMPTY;
    for n in 0..64 {
        let g = LoveLetter::setup(&Config::default(), 4, Seed::from_u64(n)).unwrap();
        let again = LoveLetter::setup(&Config::default(), 4, Seed::from_u64(n)).unwrap();
        assert_eq!(g, again, "the same seed gives the same match");
        firsts.insert(g.awaiting().iter().next().unwrap());
    }
    assert_eq!(firsts, SeatSet::first(4), "every seat can start");
}

#[test]
fn faq_classic_edition_plays_with_sixteen_cards_and_no_spies_or_chancellors() {
    let g = LoveLetter::setup(
        &Config {
            edition: Edition::Classic,
            ..Config::default()
        },
        4,
        Seed::from_u64(5),
    )
    .unwrap();
    let v = g.view(Viewer::Spectator);
    // 1 set aside, 4 dealt, 1 drawn by the first player.
    assert_eq!(v.deck_count, 16 - 1 - 4 - 1);
    assert_eq!(v.tokens_to_win, 4);
    for seat in 0..4 {
        assert!(
            hand(&g, seat)
                .iter()
                .all(|c| Edition::Classic.cards().contains(c))
        );
    }
}

// ---------------------------------------------------------------- Guard

#[test]
fn guard_puts_out_a_player_holding_the_named_role() {
    let mut g = table(4, "Q♥ A♠ 5♠ 2♠ 3♠ 4♠");
    let obs = play(&mut g, 0, "A♠", Some(1), Some(Role::Prince));
    assert!(
        seen_by(&obs, Viewer::Spectator).contains(&Event::GuardGuess {
            seat: 0,
            target: 1,
            guess: Role::Prince,
            hit: true
        })
    );
    assert!(is_out(&g, 1));
    assert_eq!(
        played(&g, 1),
        cards("5♠"),
        "the out player's hand is discarded face up"
    );
    assert_eq!(
        g.awaiting(),
        SeatSet::single(2),
        "the out player is skipped"
    );
}

#[test]
fn guard_miss_leaves_the_target_in() {
    let mut g = table(4, "Q♥ A♠ 5♠ 2♠ 3♠ 4♠");
    play(&mut g, 0, "A♠", Some(1), Some(Role::King));
    assert!(!is_out(&g, 1));
    assert_eq!(hand(&g, 1)[0], c("5♠"));
}

#[test]
fn faq_guard_cannot_name_the_guard() {
    let mut g = table(4, "Q♥ A♠ J♠ 2♠ 3♠ 4♠");
    refused(
        &mut g,
        0,
        play_action("A♠", Some(1), Some(Role::Guard)),
        "guess-guard",
    );
    assert!(g.legal_actions(0).iter().all(|a| !matches!(
        a,
        Action::Play {
            guess: Some(Role::Guard),
            ..
        }
    )));
}

#[test]
fn faq_guard_may_name_the_spy() {
    let mut g = table(4, "Q♥ A♠ ★1 2♠ 3♠ 4♠");
    play(&mut g, 0, "A♠", Some(1), Some(Role::Spy));
    assert!(is_out(&g, 1));
}

#[test]
fn classic_guard_cannot_name_roles_missing_from_the_edition() {
    let mut g = table_of(Edition::Classic, 3, 0, "Q♥ A♠ 2♠ 3♠ 4♠");
    refused(
        &mut g,
        0,
        play_action("A♠", Some(1), Some(Role::Spy)),
        "guess-not-in-edition",
    );
    refused(
        &mut g,
        0,
        play_action("A♠", Some(1), Some(Role::Chancellor)),
        "guess-not-in-edition",
    );
    // Two other players times the seven roles a classic Guard may name, plus the Handmaid.
    assert_eq!(g.legal_actions(0).len(), 2 * 7 + 1);
}

#[test]
fn guard_needs_another_players_target_and_a_guess() {
    let mut g = table(4, "Q♥ A♠ 5♠ 2♠ 3♠ 4♠");
    refused(&mut g, 0, play_action("A♠", None, None), "target-required");
    refused(
        &mut g,
        0,
        play_action("A♠", Some(1), None),
        "guess-required",
    );
    refused(
        &mut g,
        0,
        play_action("A♠", Some(0), Some(Role::King)),
        "cannot-target-self",
    );
    refused(
        &mut g,
        0,
        play_action("A♠", Some(9), Some(Role::King)),
        "no-such-seat",
    );
    refused(
        &mut g,
        0,
        play_action("4♠", None, Some(Role::King)),
        "guess-not-allowed",
    );
    // Three targets times nine roles, plus the Handmaid.
    assert_eq!(g.legal_actions(0).len(), 3 * 9 + 1);
}

#[test]
fn faq_no_lying_the_guard_and_the_priest_use_the_real_hand() {
    let mut g = table(3, "Q♥ 2♠ 8♥ A♠ A♥");
    let obs = play(&mut g, 0, "2♠", Some(1), None);
    assert!(seen_by(&obs, Viewer::Seat(0)).contains(&Event::PriestSaw {
        seat: 0,
        target: 1,
        card: c("8♥")
    }));
    play(&mut g, 1, "8♥", None, None);
    // Seat 1 now holds the card it drew; a Guard naming it is a hit, whatever seat 1 would say.
    let held = hand(&g, 1)[0];
    play(&mut g, 2, "A♠", Some(1), Some(held.role()));
    assert!(is_out(&g, 1));
}

// ---------------------------------------------------------------- Priest, Baron

#[test]
fn priest_shows_the_target_card_to_its_player_only() {
    let mut g = table(3, "Q♥ 2♠ 7♥ A♠ A♥");
    let obs = play(&mut g, 0, "2♠", Some(1), None);
    let saw = Event::PriestSaw {
        seat: 0,
        target: 1,
        card: c("7♥"),
    };
    assert_eq!(
        obs.iter().find(|o| o.event == saw).unwrap().audience,
        missive_rules::Audience::seat(0)
    );
    for viewer in [Viewer::Seat(1), Viewer::Seat(2), Viewer::Spectator] {
        assert!(!seen_by(&obs, viewer).contains(&saw));
    }
}

#[test]
fn baron_puts_the_lower_hand_out_and_only_the_two_see_both_cards() {
    let mut g = table(3, "Q♥ 3♠ 2♠ A♠ 5♠");
    let obs = play(&mut g, 0, "3♠", Some(1), None);
    let compared = Event::BaronCompared {
        seat: 0,
        target: 1,
        seat_card: c("5♠"),
        target_card: c("2♠"),
        loser: Some(1),
    };
    assert!(seen_by(&obs, Viewer::Seat(0)).contains(&compared));
    assert!(seen_by(&obs, Viewer::Seat(1)).contains(&compared));
    assert!(!seen_by(&obs, Viewer::Seat(2)).contains(&compared));
    assert!(!seen_by(&obs, Viewer::Spectator).contains(&compared));
    assert!(is_out(&g, 1));
    assert_eq!(
        played(&g, 1),
        cards("2♠"),
        "the loser's card becomes public"
    );
    assert_eq!(hand(&g, 0), cards("5♠"), "the winner's card stays secret");
}

#[test]
fn baron_puts_its_own_player_out_when_lower() {
    let mut g = table(3, "Q♥ 3♠ 7♥ A♠ A♥");
    play(&mut g, 0, "3♠", Some(1), None);
    assert!(is_out(&g, 0));
    assert_eq!(played(&g, 0), cards("3♠ A♥"));
}

#[test]
fn baron_tie_puts_no_one_out() {
    let mut g = table(3, "Q♥ 3♠ A♥ A♠ A♦");
    play(&mut g, 0, "3♠", Some(1), None);
    assert!(!is_out(&g, 0) && !is_out(&g, 1));
}

// ---------------------------------------------------------------- Handmaid

#[test]
fn handmaid_protects_until_the_start_of_its_players_next_turn() {
    let mut g = table(3, "Q♥ 4♠ A♠ A♥ 2♠ J♠ A♦");
    play(&mut g, 0, "4♠", None, None);
    assert!(g.view(Viewer::Spectator).players[0].protected);
    refused(
        &mut g,
        1,
        play_action("A♠", Some(0), Some(Role::Priest)),
        "target-protected",
    );
    play(&mut g, 1, "A♠", Some(2), Some(Role::King));
    play(&mut g, 2, "A♥", Some(1), Some(Role::King));
    // Seat 0's turn has started: the protection is over.
    assert!(!g.view(Viewer::Spectator).players[0].protected);
}

#[test]
fn protection_ends_at_round_end() {
    let g = table(2, "Q♥ 8♥ 7♥ 6♠ 4♠ A♠ 4♣");
    let mut g = short_deck(&g, 0);
    play(&mut g, 0, "4♠", None, None);
    assert_eq!(last_round(&g).reason, RoundEnd::DeckEmpty);
    assert!(
        g.view(Viewer::Spectator)
            .players
            .iter()
            .all(|p| !p.protected)
    );
}

// ---------------------------------------------------------------- Prince

#[test]
fn prince_makes_the_target_discard_without_effect_and_draw() {
    let mut g = table(3, "Q♥ 5♠ 3♠ A♠ A♥ J♠");
    let obs = play(&mut g, 0, "5♠", Some(1), None);
    assert!(
        seen_by(&obs, Viewer::Spectator).contains(&Event::PrinceDiscarded {
            seat: 0,
            target: 1,
            card: c("3♠")
        })
    );
    let drew = Event::PrinceDrew {
        target: 1,
        card: c("J♠"),
        from_set_aside: false,
    };
    assert!(seen_by(&obs, Viewer::Seat(1)).contains(&drew));
    assert!(!seen_by(&obs, Viewer::Seat(0)).contains(&drew));
    assert_eq!(played(&g, 1), cards("3♠"));
    assert_eq!(
        hand(&g, 1),
        cards("J♠ ★1"),
        "seat 1 has drawn for its own turn too"
    );
    assert!(
        !is_out(&g, 0),
        "the Baron discarded by the Prince has no effect"
    );
}

#[test]
fn prince_may_choose_its_own_player() {
    let mut g = table(3, "Q♥ 5♠ 3♠ A♠ A♥ J♠");
    play(&mut g, 0, "5♠", Some(0), None);
    assert_eq!(played(&g, 0), cards("5♠ A♥"));
    assert_eq!(hand(&g, 0), cards("J♠"));
}

#[test]
fn prince_on_a_princess_holder_puts_them_out() {
    let mut g = table(3, "A♦ 5♠ Q♥ A♠ A♥ J♠");
    let obs = play(&mut g, 0, "5♠", Some(1), None);
    assert!(is_out(&g, 1));
    assert_eq!(played(&g, 1), cards("Q♥"));
    assert!(
        obs.iter()
            .all(|o| !matches!(o.event, Event::PrinceDrew { .. })),
        "no card is drawn"
    );
    assert_eq!(g.view(Viewer::Spectator).deck_count, 21 - 1 - 3 - 1 - 1);
}

#[test]
fn faq_prince_with_an_empty_deck_gives_the_set_aside_card() {
    let g = table(3, "7♥ 5♠ 3♠ A♠ A♥");
    let mut g = empty_deck(&g);
    let obs = play(&mut g, 0, "5♠", Some(1), None);
    assert!(seen_by(&obs, Viewer::Seat(1)).contains(&Event::PrinceDrew {
        target: 1,
        card: c("7♥"),
        from_set_aside: true
    }));
    // The deck was empty at the end of the turn: the round ends and seat 1's King wins it.
    let result = last_round(&g);
    assert_eq!(result.winners, SeatSet::single(1));
    assert_eq!(result.set_aside, None);
}

#[test]
fn faq_prince_on_a_princess_holder_with_an_empty_deck_leaves_the_set_aside_card() {
    let g = table(3, "7♥ 5♠ Q♥ A♠ A♥");
    let mut g = empty_deck(&g);
    play(&mut g, 0, "5♠", Some(1), None);
    let result = last_round(&g);
    assert_eq!(
        result.set_aside,
        Some(c("7♥")),
        "revealed at round end, never drawn"
    );
    assert_eq!(result.hands[1], None);
}

// ---------------------------------------------------------------- Chancellor

#[test]
fn chancellor_with_two_cards_in_the_deck_keeps_one_of_three() {
    let mut g = table(3, "Q♥ 6♠ A♠ A♥ 3♠ 7♥ 2♠");
    let obs = play(&mut g, 0, "6♠", None, None);
    assert!(
        seen_by(&obs, Viewer::Seat(0)).contains(&Event::ChancellorDrew {
            seat: 0,
            cards: cards("7♥ 2♠")
        })
    );
    let v = g.view(Viewer::Seat(0));
    assert_eq!(v.hand, cards("3♠"));
    assert_eq!(v.chancellor_choice, Some(cards("7♥ 2♠")));
    // Each of 3 cards kept, times the 2 orders of the other two.
    assert_eq!(g.legal_actions(0).len(), 6);
    let bottom_before = deck_bottom_up(&g);
    g.apply(
        0,
        &Action::ChancellorKeep {
            keep: c("7♥"),
            bottom: cards("3♠ 2♠").into(),
        },
    )
    .unwrap();
    assert_eq!(hand(&g, 0), cards("7♥"));
    // `bottom` ends with the very bottom card.
    let deck = deck_bottom_up(&g);
    assert_eq!(deck[..2], cards("2♠ 3♠")[..]);
    assert_eq!(
        deck.len(),
        bottom_before.len() + 2 - 1,
        "seat 1 has drawn since"
    );
}

#[test]
fn faq_chancellor_with_one_card_in_the_deck_keeps_one_of_two() {
    let g = table(3, "Q♥ 6♠ A♠ A♥ 3♠ 7♥");
    let mut g = short_deck(&g, 1);
    let top = *deck_bottom_up(&g).last().unwrap();
    play(&mut g, 0, "6♠", None, None);
    assert_eq!(g.view(Viewer::Seat(0)).chancellor_choice, Some(vec![top]));
    assert_eq!(g.legal_actions(0).len(), 2);
    refused(
        &mut g,
        0,
        Action::ChancellorKeep {
            keep: c("3♠"),
            bottom: [top, top].into_iter().collect(),
        },
        "bad-chancellor-choice",
    );
    g.apply(
        0,
        &Action::ChancellorKeep {
            keep: c("3♠"),
            bottom: [top].into_iter().collect(),
        },
    )
    .unwrap();
    assert_eq!(
        g.awaiting(),
        SeatSet::single(1),
        "one card went back: the round goes on"
    );
}

#[test]
fn faq_chancellor_with_an_empty_deck_has_no_effect() {
    let g = table(3, "Q♥ 6♠ A♠ A♥ 3♠ 7♥");
    let mut g = empty_deck(&g);
    let obs = play(&mut g, 0, "6♠", None, None);
    assert!(seen_by(&obs, Viewer::Spectator).contains(&Event::NoEffect {
        seat: 0,
        card: c("6♠")
    }));
    assert_eq!(last_round(&g).reason, RoundEnd::DeckEmpty);
}

#[test]
fn a_pending_chancellor_choice_allows_only_a_keep_by_its_player() {
    let mut g = table(3, "Q♥ 6♠ A♠ A♥ 3♠ 7♥ 2♠");
    play(&mut g, 0, "6♠", None, None);
    assert_eq!(g.awaiting(), SeatSet::single(0));
    assert!(g.legal_actions(1).is_empty());
    refused(
        &mut g,
        0,
        play_action("3♠", Some(1), None),
        "chancellor-choice-pending",
    );
    let keep = |k: &str, b: &str| Action::ChancellorKeep {
        keep: c(k),
        bottom: cards(b).into(),
    };
    refused(&mut g, 1, keep("A♠", ""), "not-your-turn");
    refused(&mut g, 0, keep("Q♥", "7♥ 2♠"), "card-not-in-hand");
    refused(&mut g, 0, keep("3♠", "7♥"), "bad-chancellor-choice");
    refused(&mut g, 0, keep("3♠", "7♥ 3♠"), "bad-chancellor-choice");
    refused(&mut g, 0, keep("3♠", "7♥ 7♥"), "bad-chancellor-choice");
    refused(&mut g, 0, keep("3♠", "7♥ 2♠ A♠"), "bad-chancellor-choice");
    assert_eq!(
        g.default_action(0),
        Some(keep("3♠", "7♥ 2♠")),
        "the default keeps the first card"
    );
}

#[test]
fn a_keep_without_a_chancellor_is_refused() {
    let mut g = table(3, "Q♥ 6♠ A♠ A♥ 3♠");
    let keep = Action::ChancellorKeep {
        keep: c("6♠"),
        bottom: cards("3♠").into(),
    };
    refused(&mut g, 0, keep, "no-chancellor-choice");
}

#[test]
fn countess_obligation_does_not_apply_to_the_chancellor_choice() {
    let mut g = table(3, "Q♥ 8♥ A♠ A♥ 6♠ 7♥ 5♠");
    play(&mut g, 0, "6♠", None, None);
    let keep = Action::ChancellorKeep {
        keep: c("7♥"),
        bottom: cards("8♥ 5♠").into(),
    };
    assert!(g.legal_actions(0).contains(&keep));
    g.apply(0, &keep).unwrap();
    assert_eq!(hand(&g, 0), cards("7♥"));
}

// ---------------------------------------------------------------- King, Countess, Princess

#[test]
fn king_trades_hands_and_only_the_two_players_see_the_cards() {
    let mut g = table(3, "Q♥ 7♥ 2♠ A♠ 4♠");
    let obs = play(&mut g, 0, "7♥", Some(1), None);
    let traded = Event::KingTraded {
        seat: 0,
        target: 1,
        seat_gave: c("4♠"),
        target_gave: c("2♠"),
    };
    assert!(seen_by(&obs, Viewer::Seat(0)).contains(&traded));
    assert!(seen_by(&obs, Viewer::Seat(1)).contains(&traded));
    assert!(!seen_by(&obs, Viewer::Seat(2)).contains(&traded));
    assert!(!seen_by(&obs, Viewer::Spectator).contains(&traded));
    assert_eq!(hand(&g, 0), cards("2♠"));
    assert_eq!(hand(&g, 1)[0], c("4♠"));
}

#[test]
fn countess_must_be_played_next_to_the_king() {
    let mut g = table(3, "Q♥ 8♥ A♠ A♥ 7♥");
    refused(
        &mut g,
        0,
        play_action("7♥", Some(1), None),
        "countess-must-be-played",
    );
    assert_eq!(g.legal_actions(0), vec![play_action("8♥", None, None)]);
}

#[test]
fn countess_must_be_played_next_to_a_prince() {
    let mut g = table(3, "Q♥ 5♠ A♠ A♥ 8♥");
    refused(
        &mut g,
        0,
        play_action("5♠", Some(1), None),
        "countess-must-be-played",
    );
    refused(
        &mut g,
        0,
        play_action("5♠", Some(0), None),
        "countess-must-be-played",
    );
    assert_eq!(g.default_action(0), Some(play_action("8♥", None, None)));
}

#[test]
fn faq_countess_may_be_played_freely() {
    let mut g = table(3, "Q♥ 8♥ A♠ A♥ 2♠");
    let obs = play(&mut g, 0, "8♥", None, None);
    // Nothing about the kept card is made public.
    assert!(
        !serde_json::to_string(&seen_by(&obs, Viewer::Spectator))
            .unwrap()
            .contains("2♠")
    );
    assert_eq!(hand(&g, 0), cards("2♠"));
}

#[test]
fn playing_the_princess_puts_its_player_out() {
    let mut g = table(3, "A♦ Q♥ A♠ A♥ 2♠");
    play(&mut g, 0, "Q♥", None, None);
    assert!(is_out(&g, 0));
    assert_eq!(
        played(&g, 0),
        cards("Q♥ 2♠"),
        "the other card is discarded face up"
    );
}

#[test]
fn cards_that_choose_no_one_refuse_a_target() {
    let mut g = table(3, "Q♥ 4♠ A♠ A♥ 8♥");
    refused(
        &mut g,
        0,
        play_action("4♠", Some(1), None),
        "target-not-allowed",
    );
    refused(
        &mut g,
        0,
        play_action("8♥", Some(0), None),
        "target-not-allowed",
    );
    refused(&mut g, 0, play_action("Q♥", None, None), "card-not-in-hand");
}

// ---------------------------------------------------------------- all others protected

#[test]
fn faq_with_all_others_protected_guard_priest_baron_and_king_have_no_effect() {
    for card in ["A♠", "2♠", "3♠", "7♥"] {
        let g = table(3, &format!("Q♥ 4♠ A♥ 4♣ {card}"));
        let mut g = protect(&g, &[1, 2]);
        refused(
            &mut g,
            0,
            play_action(card, Some(1), None),
            "target-protected",
        );
        let no_effect = play_action(card, None, None);
        assert!(g.legal_actions(0).contains(&no_effect), "{card}");
        let obs = g.apply(0, &no_effect).unwrap();
        assert!(seen_by(&obs, Viewer::Spectator).contains(&Event::NoEffect {
            seat: 0,
            card: c(card)
        }));
        assert!(!is_out(&g, 0) && !is_out(&g, 1) && !is_out(&g, 2), "{card}");
        assert_eq!(
            hand(&g, 0),
            cards("4♠"),
            "{card} traded or discarded nothing"
        );
    }
}

#[test]
fn faq_with_all_others_protected_the_prince_must_choose_its_own_player() {
    let g = table(3, "A♦ Q♥ A♥ 4♣ 5♠");
    let mut g = protect(&g, &[1, 2]);
    refused(
        &mut g,
        0,
        play_action("5♠", Some(1), None),
        "target-protected",
    );
    refused(&mut g, 0, play_action("5♠", None, None), "target-required");
    assert!(
        g.legal_actions(0)
            .contains(&play_action("5♠", Some(0), None))
    );
    // Discarding one's own Princess this way puts one out.
    play(&mut g, 0, "5♠", Some(0), None);
    assert!(is_out(&g, 0));
    assert_eq!(played(&g, 0), cards("5♠ Q♥"));
}

#[test]
fn an_out_player_is_skipped_and_cannot_be_chosen() {
    let mut g = table(3, "Q♥ A♠ 5♠ 2♠ J♠ A♥");
    play(&mut g, 0, "A♠", Some(1), Some(Role::Prince));
    assert!(is_out(&g, 1));
    assert_eq!(g.awaiting(), SeatSet::single(2));
    assert!(g.legal_actions(1).is_empty());
    refused(&mut g, 1, play_action("5♠", Some(0), None), "not-your-turn");
    let held = hand(&g, 2);
    let guard = held
        .iter()
        .find(|c| c.role() == Role::Guard)
        .unwrap()
        .to_string();
    refused(
        &mut g,
        2,
        play_action(&guard, Some(1), Some(Role::King)),
        "target-out",
    );
}

// ---------------------------------------------------------------- round end

#[test]
fn the_last_player_standing_wins_the_round_and_starts_the_next() {
    let mut g = table(2, "Q♥ 8♥ 7♥ 6♠ A♠ 5♠ 2♠");
    let obs = play(&mut g, 0, "A♠", Some(1), Some(Role::Prince));
    let result = last_round(&g);
    assert_eq!(result.reason, RoundEnd::LastStanding);
    assert_eq!(result.winners, SeatSet::single(0));
    assert_eq!(
        result.hands,
        vec![None, None],
        "the winner's hand stays secret"
    );
    assert_eq!(result.set_aside, Some(c("Q♥")));
    assert!(
        seen_by(&obs, Viewer::Spectator).contains(&Event::TokenGained {
            seat: 0,
            reason: TokenReason::RoundWin,
            total: 1
        })
    );
    let v = g.view(Viewer::Spectator);
    assert_eq!((v.round, v.turn), (2, Some(0)));
    assert!(v.players.iter().all(|p| !p.out && p.played.is_empty()));
    assert_eq!(v.players[0].tokens, 1);
}

#[test]
fn an_empty_deck_ends_the_round_and_the_highest_hand_wins() {
    let g = table(3, "Q♥ A♠ 7♥ 2♠ 4♠");
    let mut g = empty_deck(&g);
    let obs = play(&mut g, 0, "A♠", Some(2), Some(Role::Prince));
    let result = last_round(&g);
    assert_eq!(result.reason, RoundEnd::DeckEmpty);
    assert_eq!(
        result.hands,
        vec![Some(c("4♠")), Some(c("7♥")), Some(c("2♠"))]
    );
    assert_eq!(result.winners, SeatSet::single(1));
    assert!(
        seen_by(&obs, Viewer::Spectator)
            .iter()
            .any(|e| matches!(e, Event::RoundEnded(_)))
    );
    assert_eq!(
        g.awaiting(),
        SeatSet::single(1),
        "the winner starts the next round"
    );
}

#[test]
fn a_tied_round_end_gives_every_tied_player_a_token_and_one_of_them_starts() {
    let mut starters = SeatSet::EMPTY;
    for seed in 0..32 {
        let config = Config {
            first_player: Some(0),
            deck: Some(order(Edition::V2019, "Q♥ 4♠ 5♠ 2♠ 5♣ A♠")),
            ..Config::default()
        };
        let g = LoveLetter::setup(&config, 4, Seed::from_u64(seed)).unwrap();
        let mut g = empty_deck(&g);
        play(&mut g, 0, "A♠", Some(3), Some(Role::King));
        let result = last_round(&g);
        let tied: SeatSet = [1, 3].into_iter().collect();
        assert_eq!(result.winners, tied);
        assert_eq!(result.tokens, vec![0, 1, 0, 1]);
        let first = g.awaiting().iter().next().unwrap();
        assert!(tied.contains(first), "seat {first} did not tie");
        starters.insert(first);
    }
    assert_eq!(
        starters,
        [1, 3].into_iter().collect(),
        "the seed picks either tied player"
    );
}

#[test]
fn the_spy_bonus_goes_to_the_only_player_still_in_with_a_spy() {
    let g = table(3, "Q♥ ★1 7♥ 2♠ A♠");
    let mut g = empty_deck(&g);
    let obs = play(&mut g, 0, "★1", None, None);
    let result = last_round(&g);
    assert_eq!(result.winners, SeatSet::single(1));
    assert_eq!(result.spy_bonus, Some(0));
    assert_eq!(result.tokens, vec![1, 1, 0]);
    assert!(
        seen_by(&obs, Viewer::Spectator).contains(&Event::TokenGained {
            seat: 0,
            reason: TokenReason::SpyBonus,
            total: 1
        })
    );
}

#[test]
fn the_spy_bonus_is_gained_even_by_the_round_winner() {
    let g = table(3, "Q♥ ★1 2♠ A♠ 7♥");
    let mut g = empty_deck(&g);
    play(&mut g, 0, "★1", None, None);
    let result = last_round(&g);
    assert_eq!(result.winners, SeatSet::single(0));
    assert_eq!(result.spy_bonus, Some(0));
    assert_eq!(result.tokens, vec![2, 0, 0]);
}

#[test]
fn faq_two_spies_by_the_same_player_give_one_bonus() {
    let g = table(3, "Q♥ ★1 2♠ A♠ ★2");
    // Seat 0 played the other Spy earlier this round and drew again.
    let g = move_spy_to_played(&g, 0);
    let mut g = empty_deck(&g);
    play(&mut g, 0, "★1", None, None);
    let result = last_round(&g);
    assert_eq!(result.spy_bonus, Some(0));
    assert_eq!(
        result.tokens[0], 1,
        "one bonus, and seat 0 did not win the round"
    );
}

#[test]
fn the_spy_bonus_is_void_when_two_players_still_in_played_spies() {
    let g = table(3, "Q♥ ★1 ★2 A♠ 3♠ 2♣");
    let g = move_spy_to_played(&g, 1);
    let mut g = empty_deck(&g);
    play(&mut g, 0, "★1", None, None);
    assert_eq!(last_round(&g).spy_bonus, None);
}

#[test]
fn faq_an_eliminated_spy_player_gains_no_bonus_and_blocks_no_one() {
    // Seat 1 plays a Spy and is then put out; seat 0's Spy alone counts.
    let mut g = table(3, "Q♥ ★1 ★2 A♠ 3♠ 7♥");
    play(&mut g, 0, "★1", None, None);
    play(&mut g, 1, "★2", None, None);
    let mut g = empty_deck(&g);
    // Seat 2 holds the Guard and the card it drew; it names seat 1's 7♥.
    let obs = play(&mut g, 2, "A♠", Some(1), Some(Role::King));
    assert!(
        seen_by(&obs, Viewer::Spectator).contains(&Event::PlayerOut {
            seat: 1,
            discarded: cards("7♥")
        })
    );
    let result = last_round(&g);
    assert_eq!(result.spy_bonus, Some(0));
}

// ---------------------------------------------------------------- match end

#[test]
fn the_token_target_depends_on_the_number_of_players() {
    for (seats, goal) in [(2, 6), (3, 5), (4, 4), (5, 3), (6, 3)] {
        let g = LoveLetter::setup(&Config::default(), seats, Seed::from_u64(0)).unwrap();
        assert_eq!(g.view(Viewer::Spectator).tokens_to_win, goal);
        let classic = Config {
            edition: Edition::Classic,
            ..Config::default()
        };
        if seats <= 4 {
            let g = LoveLetter::setup(&classic, seats, Seed::from_u64(0)).unwrap();
            assert_eq!(g.view(Viewer::Spectator).tokens_to_win, goal);
        }
    }
}

#[test]
fn the_match_ends_after_the_round_in_which_a_player_reaches_the_target() {
    let g = table(4, "Q♥ A♠ 5♠ 2♠ 3♠ 4♠");
    let mut g = set_tokens(&g, &[3, 3, 0, 0]);
    // Not yet: a round without reaching the target goes on.
    let g2 = g.clone();
    play(&mut g, 0, "4♠", None, None);
    assert!(g.outcome().is_none());
    let mut g = empty_deck(&g2);
    let obs = play(&mut g, 0, "A♠", Some(1), Some(Role::Prince));
    // Seat 1 is out and the deck is empty: seat 0's Handmaid beats the Priest and the Baron,
    // and its fourth token ends the match.
    let outcome = g.outcome().expect("the match is over");
    assert_eq!(outcome.winners, SeatSet::single(0));
    assert_eq!(outcome.scores, vec![4, 3, 0, 0]);
    assert!(
        seen_by(&obs, Viewer::Spectator)
            .iter()
            .any(|e| matches!(e, Event::MatchEnded { .. }))
    );
    assert_eq!(g.awaiting(), SeatSet::EMPTY);
    assert_eq!(g.view(Viewer::Seat(0)).winners, Some(SeatSet::single(0)));
    assert_eq!(g.view(Viewer::Seat(0)).turn, None);
    assert!(g.legal_actions(0).is_empty());
    assert_eq!(g.default_action(0), None);
    refused(&mut g, 0, play_action("4♠", None, None), "match-over");
}

#[test]
fn several_players_reaching_the_target_together_all_win() {
    let g = table(3, "Q♥ ★1 7♥ 2♠ A♠");
    let g = set_tokens(&g, &[4, 4, 0]);
    let mut g = empty_deck(&g);
    // Seat 1 wins the round (King), seat 0 gets the Spy bonus: both reach 5.
    play(&mut g, 0, "★1", None, None);
    let outcome = g.outcome().expect("the match is over");
    assert_eq!(outcome.winners, [0, 1].into_iter().collect());
    assert_eq!(outcome.scores, vec![5, 5, 0]);
}

// ---------------------------------------------------------------- turn order and errors

#[test]
fn acting_out_of_turn_or_from_a_missing_seat_is_refused() {
    let mut g = table(3, "Q♥ 4♠ A♠ A♥ 8♥");
    refused(
        &mut g,
        1,
        play_action("A♠", Some(2), Some(Role::King)),
        "not-your-turn",
    );
    refused(
        &mut g,
        7,
        play_action("A♠", Some(2), Some(Role::King)),
        "no-such-seat",
    );
    refused(&mut g, 255, play_action("A♠", None, None), "no-such-seat");
    assert!(g.legal_actions(1).is_empty() && g.legal_actions(200).is_empty());
    assert_eq!(g.default_action(1), None);
}

#[test]
fn actions_read_from_json_reject_unknown_cards_and_roles() {
    let bad = [
        r#"{"type":"play","card":"K♠"}"#,
        r#"{"type":"play","card":"A♠","target":1,"guess":"jester"}"#,
        r#"{"type":"chancellor-keep","keep":"A♠","bottom":["Z"]}"#,
    ];
    for json in bad {
        assert!(serde_json::from_str::<Action>(json).is_err(), "{json}");
    }
    let ok: Action =
        serde_json::from_str(r#"{"type":"play","card":"A♠","target":1,"guess":"spy"}"#).unwrap();
    assert_eq!(ok, play_action("A♠", Some(1), Some(Role::Spy)));
}

#[test]
fn the_default_action_is_the_lowest_legal_play_with_its_first_target_and_guess() {
    let g = table(3, "Q♥ 2♠ A♠ A♥ A♦");
    assert_eq!(
        g.default_action(0),
        Some(play_action("A♦", Some(1), Some(Role::Spy)))
    );
}

// ---------------------------------------------------------------- seed 001's example round

#[test]
fn the_seed_001_example_round_plays_out_as_written() {
    let (ana, luis, marta) = (0, 1, 2);
    let mut g = table(3, "Q♥ 8♥ 5♠ 4♠ A♠ 2♠ 5♣ A♥");
    // Ana's Guard names Luis's Prince: he is out and shows it.
    play(&mut g, ana, "A♠", Some(luis), Some(Role::Prince));
    assert!(is_out(&g, luis));
    assert_eq!(played(&g, luis), cards("5♠"));
    // Marta plays the Handmaid.
    play(&mut g, marta, "4♠", None, None);
    assert!(g.view(Viewer::Spectator).players[marta as usize].protected);
    // Ana draws a Prince next to her Countess: she must play the Countess, and nothing shows
    // which card she kept.
    assert_eq!(g.legal_actions(ana), vec![play_action("8♥", None, None)]);
    let obs = play(&mut g, ana, "8♥", None, None);
    assert!(
        !serde_json::to_string(&seen_by(&obs, Viewer::Seat(marta)))
            .unwrap()
            .contains("5♣")
    );
    // Marta's turn: her protection is over. Then the deck runs out.
    assert!(!g.view(Viewer::Spectator).players[marta as usize].protected);
    let mut g = empty_deck(&g);
    play(&mut g, marta, "A♥", Some(ana), Some(Role::King));
    let result = last_round(&g);
    assert_eq!(result.hands, vec![Some(c("5♣")), None, Some(c("2♠"))]);
    assert_eq!(result.winners, SeatSet::single(ana));
    assert_eq!(
        g.awaiting(),
        SeatSet::single(ana),
        "Ana, the winner, starts the next round"
    );
}

#[test]
fn the_first_deal_is_told_to_each_seat_alone() {
    // Set aside 8♥; seat 1 plays first and is dealt 2♠, seat 2 gets 3♠, seat 0 gets 4♠; the
    // deck's top card, 5♠, is seat 1's first draw.
    let g = table_of(Edition::V2019, 3, 1, "8♥ 2♠ 3♠ 4♠ 5♠");
    let obs = g.setup_observations();
    assert_eq!(
        seen_by(&obs, Viewer::Spectator),
        vec![
            Event::RoundStarted {
                round: 1,
                first_player: 1,
                face_up: vec![],
            },
            Event::TurnStarted { seat: 1 },
        ]
    );
    assert_eq!(
        seen_by(&obs, Viewer::Seat(1)),
        vec![
            Event::RoundStarted {
                round: 1,
                first_player: 1,
                face_up: vec![],
            },
            Event::Dealt {
                seat: 1,
                card: c("2♠"),
            },
            Event::TurnStarted { seat: 1 },
            Event::Drew {
                seat: 1,
                card: c("5♠"),
            },
        ]
    );
    assert_eq!(
        seen_by(&obs, Viewer::Seat(0)),
        vec![
            Event::RoundStarted {
                round: 1,
                first_player: 1,
                face_up: vec![],
            },
            Event::Dealt {
                seat: 0,
                card: c("4♠"),
            },
            Event::TurnStarted { seat: 1 },
        ]
    );
}
