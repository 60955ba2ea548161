//! Lopti's custom rules: each catalogue trigger and effect at work, refused rules, a creator's
//! cancellation, and a session whose later hands play differently because of a rule.

mod lopti_support;

use lopti_support::*;
use missive_rules::lopti::{
    Action, BurnCause, Config, Effect, Event, Lopti, PhaseView, Rank, RuleBody, RuleSpec,
    RuleStatus, Trigger,
};
use missive_rules::{Game, Seat, Seed, Viewer};

fn rule(trigger: Trigger, effect: Effect) -> RuleSpec {
    RuleSpec { trigger, effect }
}

/// Three seats with the given hands, `draw` as the draw pile, and `spec` carried by seat 0.
fn trio(hands: [&'static [&'static str]; 3], draw: &[&str], spec: RuleSpec) -> Lopti {
    let seats = [
        Deal {
            down: ["J♠", "J♥", "J♦"],
            up: ["Q♠", "Q♥", "Q♦"],
            hand: hands[0],
        },
        Deal {
            down: ["K♠", "K♥", "K♦"],
            up: ["A♠", "A♥", "A♦"],
            hand: hands[1],
        },
        Deal {
            down: ["J♣", "Q♣", "K♣"],
            up: ["A♣", "2♠", "2♥"],
            hand: hands[2],
        },
    ];
    let mut g = session(&seats, draw, 1, &[(0, spec)]);
    skip_to_play(&mut g);
    g
}

fn fired(events: &[Event]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, Event::RuleFired { .. }))
        .count()
}

#[test]
fn a_rank_played_trigger_makes_the_next_player_skip() {
    let spec = rule(
        Trigger::RankPlayed { rank: Rank::Nine },
        Effect::NextPlayerSkips,
    );
    let mut g = trio(
        [
            &["9♠", "4♠", "4♥"],
            &["5♠", "5♥", "6♠"],
            &["8♠", "8♥", "8♦"],
        ],
        &[],
        spec,
    );
    let events = play(&mut g, 0, &["9♠"]);
    assert_eq!(fired(&events), 1);
    assert!(events.contains(&Event::TurnSkipped { seat: 1 }));
    assert_eq!(on_turn(&g), 2);
    act(&mut g, 2, Action::PickUp);
    let events = play(&mut g, 0, &["4♠", "4♥"]);
    assert_eq!(fired(&events), 0, "another rank sets nothing off");
    assert_eq!(on_turn(&g), 1);
}

#[test]
fn a_cards_played_trigger_reverses_the_direction() {
    let spec = rule(
        Trigger::CardsPlayed { at_least: 2 },
        Effect::ReverseDirection,
    );
    let mut g = trio(
        [
            &["9♠", "4♠", "4♥"],
            &["5♠", "5♥", "6♠"],
            &["8♠", "8♥", "8♦"],
        ],
        &[],
        spec,
    );
    let events = play(&mut g, 0, &["4♠", "4♥"]);
    assert!(events.contains(&Event::DirectionReversed));
    assert_eq!(on_turn(&g), 2, "counter-clockwise now");
    assert!(!view(&g, 0).clockwise);
    let events = play(&mut g, 2, &["8♠"]);
    assert_eq!(fired(&events), 0, "a single card is under the threshold");
    assert_eq!(on_turn(&g), 1);
}

#[test]
fn a_pile_burned_trigger_makes_the_player_draw() {
    let spec = rule(Trigger::PileBurned, Effect::PlayerDraws { count: 2 });
    let mut g = trio(
        [
            &["10♠", "4♠", "4♥"],
            &["5♠", "5♥", "6♠"],
            &["8♠", "8♥", "8♦"],
        ],
        &["6♥", "6♦", "6♣", "7♠"],
        spec,
    );
    play(&mut g, 0, &["10♠"]);
    // Two cards from the rule; with four in hand the base draw does not apply.
    assert_eq!(hand(&g, 0), cards(&["4♠", "4♥", "6♥", "6♦"]));
    assert_eq!(view(&g, 1).draw_pile, 2);
    assert_eq!(on_turn(&g), 0, "the burn's bonus play still comes");
}

#[test]
fn a_pickup_trigger_makes_every_other_player_draw_one() {
    let spec = rule(Trigger::PilePickedUp, Effect::OthersDrawOne);
    let mut g = trio(
        [
            &["9♠", "4♠", "4♥"],
            &["5♠", "5♥", "6♠"],
            &["8♠", "8♥", "8♦"],
        ],
        &["6♥", "6♦", "6♣"],
        spec,
    );
    play(&mut g, 0, &["9♠"]);
    assert_eq!(hand(&g, 0).len(), 3, "the base draw after the first play");
    let events = act(&mut g, 1, Action::PickUp);
    assert_eq!(fired(&events), 1);
    assert_eq!(hand(&g, 2), cards(&["6♦", "8♠", "8♥", "8♦"]));
    assert_eq!(hand(&g, 0), cards(&["4♠", "4♥", "6♥", "6♣"]));
    assert_eq!(hand(&g, 1).len(), 4, "the picker draws nothing");
    assert_eq!(view(&g, 1).draw_pile, 0);
}

#[test]
fn a_face_up_taken_trigger_gives_a_bonus_play() {
    let spec = rule(Trigger::FaceUpTaken, Effect::BonusPlay);
    let mut g = trio(
        [
            &["4♠", "4♥", "4♦"],
            &["5♠", "5♥", "6♠"],
            &["8♠", "8♥", "8♦"],
        ],
        &[],
        spec,
    );
    let events = play(&mut g, 0, &["4♠", "4♥", "4♦"]);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::FaceUpTaken { seat: 0, .. }))
    );
    assert!(events.contains(&Event::BonusPlayGranted { seat: 0 }));
    assert_eq!((on_turn(&g), plays_left(&g)), (0, 1));
    play(&mut g, 0, &["Q♠"]);
    assert_eq!(on_turn(&g), 1);
}

#[test]
fn a_custom_burn_rule_burns_the_pile_and_gives_the_bonus_play() {
    let spec = rule(Trigger::RankPlayed { rank: Rank::Nine }, Effect::BurnPile);
    let mut g = trio(
        [
            &["5♣", "4♠", "4♥"],
            &["9♠", "5♥", "6♠"],
            &["8♠", "8♥", "8♦"],
        ],
        &[],
        spec,
    );
    play(&mut g, 0, &["5♣"]);
    let events = play(&mut g, 1, &["9♠"]);
    assert!(events.iter().any(|e| matches!(
        e,
        Event::Burned {
            seat: 1,
            cause: BurnCause::CustomRule,
            ..
        }
    )));
    assert!(view(&g, 0).pile.is_empty());
    assert_eq!((on_turn(&g), plays_left(&g)), (1, 1));
}

#[test]
fn a_bonus_play_from_a_rule_never_takes_a_pass_back() {
    let spec = rule(Trigger::CardsPlayed { at_least: 2 }, Effect::BonusPlay);
    let mut g = trio(
        [
            &["9♠", "4♠", "4♥"],
            &["3♠", "3♥", "6♠"],
            &["8♠", "8♥", "8♦"],
        ],
        &[],
        spec,
    );
    play(&mut g, 0, &["9♠"]);
    let events = play(&mut g, 1, &["3♠", "3♥"]);
    assert!(events.contains(&Event::BonusPlayDropped { seat: 1, rule: 0 }));
    assert_eq!(on_turn(&g), 2, "the obligation goes to the next player");
    assert!(view(&g, 2).pass_obligation);
}

#[test]
fn rules_that_loop_or_contradict_a_base_rule_are_refused() {
    let mut g = session(&quick_out(["K♠", "K♥", "K♦"]), &[], 2, &[]);
    skip_to_play(&mut g);
    win_quick_out(&mut g);
    assert_eq!(
        g.view(Viewer::Spectator).phase,
        PhaseView::RuleCreation { winner: 0 }
    );
    let create = |spec| Action::CreateRule {
        rule: Some(spec),
        table_rule: None,
    };
    let cases = [
        (rule(Trigger::PileBurned, Effect::BurnPile), "rule-loops"),
        (
            rule(Trigger::PilePickedUp, Effect::BonusPlay),
            "rule-contradicts-base-rule",
        ),
        (
            rule(Trigger::PilePickedUp, Effect::BurnPile),
            "rule-contradicts-base-rule",
        ),
        (
            rule(Trigger::RankPlayed { rank: Rank::Three }, Effect::BonusPlay),
            "rule-contradicts-base-rule",
        ),
        (
            rule(Trigger::CardsPlayed { at_least: 5 }, Effect::BonusPlay),
            "rule-out-of-range",
        ),
        (
            rule(Trigger::PileBurned, Effect::PlayerDraws { count: 4 }),
            "rule-out-of-range",
        ),
    ];
    for (spec, code) in cases {
        assert_eq!(refused(&mut g, 0, create(spec)), code, "{spec:?}");
        assert!(!g.legal_actions(0).contains(&create(spec)));
    }
    let blank = Action::CreateRule {
        rule: None,
        table_rule: Some("   ".into()),
    };
    assert_eq!(refused(&mut g, 0, blank), "table-rule-text");
    let nothing = Action::CreateRule {
        rule: None,
        table_rule: None,
    };
    assert_eq!(refused(&mut g, 0, nothing), "empty-rule");
    let fine = rule(Trigger::PileBurned, Effect::BonusPlay);
    assert_eq!(refused(&mut g, 1, create(fine)), "not-your-turn");
    assert!(g.legal_actions(0).contains(&create(fine)));
    // An enforced rule and a table rule at once: two rules, shown to everyone.
    let text = "Say «Lopti» when you play your last face-up card";
    act(
        &mut g,
        0,
        Action::CreateRule {
            rule: Some(fine),
            table_rule: Some(text.into()),
        },
    );
    let rules = view(&g, 1).rules;
    assert_eq!(rules.len(), 2);
    assert_eq!(rules[0].body, RuleBody::Enforced { spec: fine });
    assert_eq!(rules[1].body, RuleBody::Table { text: text.into() });
    assert!(
        rules
            .iter()
            .all(|r| r.creator == 0 && r.status == RuleStatus::Active)
    );
}

#[test]
fn a_carried_rule_is_checked_and_a_duplicate_rule_is_refused() {
    let config = Config {
        carried_rules: vec![missive_rules::lopti::CarriedRule {
            creator: 0,
            body: RuleBody::Enforced {
                spec: rule(Trigger::PileBurned, Effect::BurnPile),
            },
        }],
        ..Config::default()
    };
    assert!(Lopti::setup(&config, 2, Seed::from_u64(1)).is_err());
    let dup = rule(Trigger::FaceUpTaken, Effect::OthersDrawOne);
    let mut g = session(&quick_out(["K♠", "K♥", "K♦"]), &[], 2, &[(1, dup)]);
    skip_to_play(&mut g);
    win_quick_out(&mut g);
    let again = Action::CreateRule {
        rule: Some(dup),
        table_rule: None,
    };
    assert_eq!(refused(&mut g, 0, again), "rule-duplicate");
}

#[test]
fn a_creator_cancels_their_own_rule_at_any_time_and_it_stays_cancelled() {
    let spec = rule(
        Trigger::RankPlayed { rank: Rank::Nine },
        Effect::NextPlayerSkips,
    );
    let mut g = trio(
        [
            &["4♠", "4♥", "4♦"],
            &["9♠", "5♥", "6♠"],
            &["8♠", "8♥", "8♦"],
        ],
        &[],
        spec,
    );
    play(&mut g, 0, &["4♠", "4♥", "4♦"]);
    assert_eq!(
        refused(&mut g, 1, Action::CancelRule { rule: 0 }),
        "not-rule-creator"
    );
    assert_eq!(
        refused(&mut g, 0, Action::CancelRule { rule: 9 }),
        "no-such-rule"
    );
    // Out of turn: seat 1 is on turn.
    assert!(g.legal_actions(0).contains(&Action::CancelRule { rule: 0 }));
    let events = act(&mut g, 0, Action::CancelRule { rule: 0 });
    assert!(events.contains(&Event::RuleCancelled { rule: 0, by: 0 }));
    assert_eq!(view(&g, 2).rules[0].status, RuleStatus::Cancelled);
    let events = play(&mut g, 1, &["9♠"]);
    assert_eq!(fired(&events), 0);
    assert_eq!(on_turn(&g), 2, "nobody is skipped any more");
    assert_eq!(
        refused(&mut g, 0, Action::CancelRule { rule: 0 }),
        "rule-not-active"
    );

    // The same rule can't be created again by a winner: only a vote brings it back.
    let mut g = session(&quick_out(["K♠", "K♥", "K♦"]), &[], 2, &[(0, spec)]);
    act(&mut g, 0, Action::CancelRule { rule: 0 });
    skip_to_play(&mut g);
    win_quick_out(&mut g);
    let again = Action::CreateRule {
        rule: Some(spec),
        table_rule: None,
    };
    assert_eq!(refused(&mut g, 0, again), "rule-was-removed");
}

/// Plays default actions until the hand ends; returns every event.
fn play_out_hand(g: &mut Lopti) -> Vec<Event> {
    let mut events = Vec::new();
    let hand = g.view(Viewer::Spectator).hand;
    for _ in 0..20_000 {
        if g.view(Viewer::Spectator).hand != hand || g.outcome().is_some() {
            return events;
        }
        let seat: Seat = g.awaiting().iter().next().expect("someone is awaited");
        let action = g.default_action(seat).expect("a default");
        events.extend(act(g, seat, action));
    }
    panic!("the hand did not end under default play");
}

#[test]
fn a_session_of_several_hands_in_which_a_rule_changes_play() {
    let mut g = session(&quick_out(["K♠", "K♥", "K♦"]), &[], 3, &[]);
    skip_to_play(&mut g);
    let events = win_quick_out(&mut g);
    assert!(events.contains(&Event::HandWon { seat: 0, hand: 0 }));
    let skip_on_kings = rule(
        Trigger::RankPlayed { rank: Rank::King },
        Effect::NextPlayerSkips,
    );
    let events = act(
        &mut g,
        0,
        Action::CreateRule {
            rule: Some(skip_on_kings),
            table_rule: None,
        },
    );
    assert!(
        events.contains(&Event::HandStarted {
            hand: 1,
            dealer: 1,
            opener: 0
        }),
        "the dealer rotates and the last winner opens"
    );
    let without = {
        let mut g = session(&quick_out(["K♠", "K♥", "K♦"]), &[], 3, &[]);
        skip_to_play(&mut g);
        win_quick_out(&mut g);
        act(&mut g, 0, Action::SkipRule);
        g
    };
    let v = view(&g, 1);
    assert_eq!((v.hand, v.dealer), (1, 1), "the dealer rotates");

    let events = play_out_hand(&mut g);
    let first_turn = events
        .iter()
        .find(|e| matches!(e, Event::TurnStarted { .. }));
    assert_eq!(first_turn, Some(&Event::TurnStarted { seat: 0 }));
    let fired = events
        .iter()
        .filter(|e| matches!(e, Event::RuleFired { rule: 0, .. }))
        .count();
    let skipped = events
        .iter()
        .filter(|e| matches!(e, Event::TurnSkipped { .. }))
        .count();
    assert!(fired > 0, "kings were played in hand 1");
    assert!(skipped > 0 && skipped <= fired, "each king skips a turn");

    // The same session without the rule: the same deal, but nobody is skipped.
    let mut without = without;
    let events = play_out_hand(&mut without);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::TurnSkipped { .. }))
    );

    // The rule lasts for the session: it is still active after hand 1.
    assert_eq!(view(&g, 0).rules[0].status, RuleStatus::Active);
    while g.outcome().is_none() {
        play_out_hand(&mut g);
        if let PhaseView::RuleCreation { winner } = g.view(Viewer::Spectator).phase {
            act(&mut g, winner, Action::SkipRule);
        }
    }
    let outcome = g.outcome().unwrap();
    assert_eq!(outcome.scores.iter().sum::<i32>(), 3);
    assert!(outcome.scores[0] >= 1, "seat 0 won hand 0 and scored");
    let best = *outcome.scores.iter().max().unwrap();
    for seat in 0..2u8 {
        assert_eq!(
            outcome.winners.contains(seat),
            outcome.scores[usize::from(seat)] == best
        );
    }
}
