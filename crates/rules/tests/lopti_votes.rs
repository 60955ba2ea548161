//! Lopti's Rule Vote and Roshambo: passing, failing, ties, defenders, timing, the one attempt
//! per hand, removed rules, and the secrecy of ballots and throws.

mod lopti_support;

use lopti_support::*;
use missive_rules::lopti::{
    Action, Ballot, Card, Change, Config, Effect, Event, Lopti, PhaseView, Rank, RuleSpec,
    RuleStatus, Special, Throw, Timing, Trigger, VoteResult,
};
use missive_rules::{Game, Seat, SeatSet, Seed, Viewer};

const SKIP_ON_NINES: RuleSpec = RuleSpec {
    trigger: Trigger::RankPlayed { rank: Rank::Nine },
    effect: Effect::NextPlayerSkips,
};

/// A session of `seats` on a shuffled deck, `SKIP_ON_NINES` carried by `creator`.
fn table_with_rule(seats: u8, creator: Seat) -> Lopti {
    let config = Config {
        carried_rules: vec![missive_rules::lopti::CarriedRule {
            creator,
            body: missive_rules::lopti::RuleBody::Enforced {
                spec: SKIP_ON_NINES,
            },
        }],
        ..Config::default()
    };
    Lopti::setup(&config, seats, Seed::from_u64(5)).unwrap()
}

fn propose(g: &mut Lopti, seat: Seat, change: Change, timing: Timing) -> Vec<Event> {
    act(g, seat, Action::Propose { change, timing })
}

fn vote(g: &mut Lopti, ballots: &[Ballot]) -> Vec<Event> {
    let mut events = Vec::new();
    for (seat, ballot) in ballots.iter().enumerate() {
        events.extend(act(g, seat as Seat, Action::Vote { ballot: *ballot }));
    }
    events
}

fn result(events: &[Event]) -> VoteResult {
    events
        .iter()
        .find_map(|e| match e {
            Event::VoteCounted { result, .. } => Some(*result),
            _ => None,
        })
        .expect("the vote was counted")
}

fn status(g: &Lopti) -> RuleStatus {
    view(g, 0).rules[0].status
}

const REMOVE: Change = Change::RemoveRule { rule: 0 };
use Ballot::{Abstain, No, Yes};

#[test]
fn a_vote_passes_when_more_than_half_of_all_seats_vote_yes() {
    let mut g = table_with_rule(3, 2);
    propose(&mut g, 0, REMOVE, Timing::Now);
    assert_eq!(
        g.awaiting(),
        SeatSet::first(3),
        "every seat votes, simultaneously"
    );
    act(&mut g, 0, Action::Vote { ballot: Yes });
    // The ballot stays hidden from the others until the count.
    match view(&g, 1).phase {
        PhaseView::Voting {
            voted, your_ballot, ..
        } => {
            assert_eq!(voted, SeatSet::single(0));
            assert_eq!(your_ballot, None);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        view(&g, 0).phase,
        PhaseView::Voting {
            your_ballot: Some(Yes),
            ..
        }
    ));
    assert_eq!(
        refused(&mut g, 0, Action::Vote { ballot: No }),
        "already-acted"
    );
    let events = [
        act(&mut g, 1, Action::Vote { ballot: Yes }),
        act(&mut g, 2, Action::Vote { ballot: No }),
    ]
    .concat();
    assert!(events.contains(&Event::VoteCounted {
        ballots: vec![Yes, Yes, No],
        yes: 2,
        result: VoteResult::Passed
    }));
    assert_eq!(status(&g), RuleStatus::Removed);
    assert!(
        matches!(view(&g, 0).phase, PhaseView::Swap { .. }),
        "then the deal"
    );
}

#[test]
fn a_vote_fails_without_a_majority_and_uses_the_hands_only_attempt() {
    let mut g = table_with_rule(3, 2);
    propose(&mut g, 0, REMOVE, Timing::Now);
    let events = vote(&mut g, &[Yes, No, Abstain]);
    assert_eq!(result(&events), VoteResult::Failed);
    assert_eq!(status(&g), RuleStatus::Active);
    for seat in 0..3 {
        act(&mut g, seat, Action::KeepCards);
    }
    let again = Action::Propose {
        change: REMOVE,
        timing: Timing::Now,
    };
    assert_eq!(refused(&mut g, 1, again), "vote-already-held");
}

#[test]
fn a_hand_without_a_proposal_lets_its_vote_lapse_and_the_next_hand_gets_a_new_one() {
    let mut g = session(
        &quick_out(["K♠", "K♥", "K♦"]),
        &[],
        2,
        &[(1, SKIP_ON_NINES)],
    );
    skip_to_play(&mut g);
    let again = Action::Propose {
        change: REMOVE,
        timing: Timing::Now,
    };
    assert_eq!(refused(&mut g, 1, again.clone()), "no-vote-now");
    win_quick_out(&mut g);
    act(&mut g, 0, Action::SkipRule);
    assert!(g.legal_actions(1).contains(&again));
    act(&mut g, 1, again);
    assert!(matches!(view(&g, 0).phase, PhaseView::Voting { .. }));
}

#[test]
fn a_tied_vote_goes_to_roshambo_between_the_proposer_and_the_rules_creator() {
    let mut g = table_with_rule(4, 3);
    propose(&mut g, 0, REMOVE, Timing::Now);
    let events = vote(&mut g, &[Yes, Yes, No, No]);
    assert_eq!(result(&events), VoteResult::Tied);
    assert!(events.contains(&Event::RoshamboStarted {
        challenger: 0,
        defender: 3
    }));
    assert_eq!(g.awaiting(), [0, 3].into_iter().collect());
    assert_eq!(
        refused(&mut g, 1, Action::Throw { throw: Throw::Rock }),
        "not-in-roshambo"
    );

    // Commit, then reveal: the first throw is hidden from everyone else until the second.
    act(
        &mut g,
        0,
        Action::Throw {
            throw: Throw::Paper,
        },
    );
    for viewer in [Viewer::Seat(3), Viewer::Seat(1), Viewer::Spectator] {
        let json = serde_json::to_string(&g.view(viewer)).unwrap();
        assert!(!json.contains("paper"), "{viewer:?} sees a committed throw");
        assert!(matches!(
            g.view(viewer).phase,
            PhaseView::Roshambo {
                your_throw: None,
                last_reveal: None,
                ..
            }
        ));
    }
    assert!(matches!(
        view(&g, 0).phase,
        PhaseView::Roshambo {
            your_throw: Some(Throw::Paper),
            ..
        }
    ));
    assert_eq!(
        refused(&mut g, 0, Action::Throw { throw: Throw::Rock }),
        "already-acted"
    );
    let events = act(
        &mut g,
        3,
        Action::Throw {
            throw: Throw::Paper,
        },
    );
    assert!(events.contains(&Event::ThrowsRevealed {
        challenger: Throw::Paper,
        defender: Throw::Paper,
        score: [0, 0],
        decisive: 0
    }));

    // Draws don't count: exactly 30 decisive throws, 16–14 for the challenger.
    for i in 0..30 {
        act(&mut g, 0, Action::Throw { throw: Throw::Rock });
        let defender = if i < 16 {
            Throw::Scissors
        } else {
            Throw::Paper
        };
        let events = act(&mut g, 3, Action::Throw { throw: defender });
        if i < 29 {
            assert!(
                matches!(view(&g, 0).phase, PhaseView::Roshambo { .. }),
                "throw {i}"
            );
        } else {
            assert!(events.contains(&Event::RoshamboWon { seat: 0 }));
        }
    }
    assert_eq!(
        status(&g),
        RuleStatus::Removed,
        "the challenger won: the change passes"
    );
}

#[test]
fn at_fifteen_all_the_next_decisive_throw_decides() {
    let mut g = table_with_rule(2, 1);
    propose(&mut g, 0, REMOVE, Timing::Now);
    assert_eq!(result(&vote(&mut g, &[Yes, No])), VoteResult::Tied);
    for i in 0..30 {
        act(&mut g, 0, Action::Throw { throw: Throw::Rock });
        let defender = if i % 2 == 0 {
            Throw::Scissors
        } else {
            Throw::Paper
        };
        act(&mut g, 1, Action::Throw { throw: defender });
    }
    match view(&g, 0).phase {
        PhaseView::Roshambo {
            score, decisive, ..
        } => assert_eq!((score, decisive), ([15, 15], 30)),
        other => panic!("15–15 is not over: {other:?}"),
    }
    act(&mut g, 0, Action::Throw { throw: Throw::Rock });
    act(&mut g, 1, Action::Throw { throw: Throw::Rock });
    assert!(
        matches!(view(&g, 0).phase, PhaseView::Roshambo { .. }),
        "a draw decides nothing"
    );
    act(
        &mut g,
        0,
        Action::Throw {
            throw: Throw::Scissors,
        },
    );
    let events = act(&mut g, 1, Action::Throw { throw: Throw::Rock });
    assert!(events.contains(&Event::RoshamboWon { seat: 1 }));
    assert_eq!(
        status(&g),
        RuleStatus::Active,
        "the defender won: the rule stays"
    );
}

#[test]
fn timed_out_throws_are_predictable_and_always_decisive() {
    let mut g = table_with_rule(2, 1);
    propose(&mut g, 0, REMOVE, Timing::Now);
    vote(&mut g, &[Yes, No]);
    let mut throws = 0;
    while matches!(view(&g, 0).phase, PhaseView::Roshambo { .. }) {
        for seat in g.awaiting().iter().collect::<Vec<_>>() {
            let action = g.default_action(seat).unwrap();
            act(&mut g, seat, action);
        }
        throws += 1;
    }
    assert_eq!(throws, 30, "every pair of default throws is decisive");
}

#[test]
fn a_tie_with_nobody_to_defend_the_change_passes() {
    // A base-rule change: the defender would be the first seat to vote no, and nobody did.
    let mut g = Lopti::setup(&Config::default(), 2, Seed::from_u64(3)).unwrap();
    propose(&mut g, 0, Change::SetHandSize { size: 4 }, Timing::Now);
    let events = vote(&mut g, &[Yes, Abstain]);
    assert_eq!(result(&events), VoteResult::Tied);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::RoshamboStarted { .. }))
    );
    assert_eq!(view(&g, 0).base.hand_size, 4);
    assert_eq!(
        hand(&g, 0).len(),
        4,
        "a change passed now governs this hand's deal"
    );
}

#[test]
fn a_base_rule_change_faces_the_first_seat_that_opposed_it() {
    let mut g = Lopti::setup(&Config::default(), 4, Seed::from_u64(3)).unwrap();
    propose(
        &mut g,
        1,
        Change::SetSpecial {
            special: Special::Burn,
            rank: None,
        },
        Timing::Now,
    );
    for (seat, ballot) in [(1, Yes), (3, No), (2, No), (0, Yes)] {
        act(&mut g, seat, Action::Vote { ballot });
    }
    match view(&g, 0).phase {
        PhaseView::Roshambo { sides, .. } => assert_eq!(sides, [1, 3]),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_base_rule_change_for_the_session_changes_the_special_ranks() {
    let deal = [
        Deal {
            down: ["J♠", "J♥", "J♦"],
            up: ["Q♠", "Q♥", "Q♦"],
            hand: &["9♠", "10♠", "4♥"],
        },
        Deal {
            down: ["K♠", "K♥", "K♦"],
            up: ["A♠", "A♥", "A♦"],
            hand: &["5♠", "5♥", "6♠"],
        },
    ];
    let mut g = session(&deal, &[], 1, &[]);
    let to_two = Change::SetSpecial {
        special: Special::Low,
        rank: Some(Rank::Two),
    };
    assert_eq!(
        refused(
            &mut g,
            0,
            Action::Propose {
                change: to_two,
                timing: Timing::Now
            }
        ),
        "rank-already-special"
    );
    propose(
        &mut g,
        0,
        Change::SetSpecial {
            special: Special::Burn,
            rank: None,
        },
        Timing::Now,
    );
    vote(&mut g, &[Yes, Yes]);
    act(&mut g, 0, Action::KeepCards);
    act(&mut g, 1, Action::KeepCards);
    play(&mut g, 0, &["9♠"]);
    act(&mut g, 1, Action::PickUp);
    let events = play(&mut g, 0, &["10♠"]);
    assert!(
        !events.iter().any(|e| matches!(e, Event::Burned { .. })),
        "10s no longer burn"
    );
    assert_eq!(view(&g, 1).pile, vec![Card::of("10♠")]);
}

#[test]
fn a_change_from_the_next_hand_waits_for_it() {
    let mut g = session(&quick_out(["K♠", "K♥", "K♦"]), &[], 2, &[]);
    let events = propose(&mut g, 1, Change::SetHandSize { size: 4 }, Timing::NextHand);
    assert!(events.iter().any(|e| matches!(e, Event::Proposed { .. })));
    let events = vote(&mut g, &[Yes, Yes]);
    assert!(events.contains(&Event::ChangeScheduled {
        change: Change::SetHandSize { size: 4 }
    }));
    assert_eq!(hand(&g, 0).len(), 3, "this hand keeps three");
    assert_eq!(view(&g, 0).scheduled.len(), 1);
    act(&mut g, 0, Action::KeepCards);
    act(&mut g, 1, Action::KeepCards);
    win_quick_out(&mut g);
    let events = act(&mut g, 0, Action::SkipRule);
    assert!(events.contains(&Event::ChangeApplied {
        change: Change::SetHandSize { size: 4 }
    }));
    act(&mut g, 0, Action::DeclineProposal);
    act(&mut g, 1, Action::DeclineProposal);
    assert_eq!(hand(&g, 0).len(), 4);
    assert_eq!(hand(&g, 1).len(), 4);
}

#[test]
fn a_removed_rule_stays_removed_until_a_later_vote_restores_it() {
    let mut g = session(
        &quick_out(["K♠", "K♥", "K♦"]),
        &[],
        3,
        &[(1, SKIP_ON_NINES)],
    );
    propose(&mut g, 0, REMOVE, Timing::Now);
    vote(&mut g, &[Yes, Yes]);
    assert_eq!(status(&g), RuleStatus::Removed);
    act(&mut g, 0, Action::KeepCards);
    act(&mut g, 1, Action::KeepCards);
    win_quick_out(&mut g);
    let recreate = Action::CreateRule {
        rule: Some(SKIP_ON_NINES),
        table_rule: None,
    };
    assert_eq!(refused(&mut g, 0, recreate), "rule-was-removed");
    act(&mut g, 0, Action::SkipRule);
    let restore = Change::RestoreRule { rule: 0 };
    propose(&mut g, 1, restore, Timing::Now);
    vote(&mut g, &[Yes, Yes]);
    assert_eq!(status(&g), RuleStatus::Active);
}

#[test]
fn a_modified_rule_keeps_its_id_and_creator() {
    let mut g = table_with_rule(3, 2);
    let to = missive_rules::lopti::RuleBody::Enforced {
        spec: RuleSpec {
            trigger: Trigger::RankPlayed { rank: Rank::Nine },
            effect: Effect::ReverseDirection,
        },
    };
    let change = Change::ModifyRule {
        rule: 0,
        to: to.clone(),
    };
    assert!(g.legal_actions(1).contains(&Action::Propose {
        change: change.clone(),
        timing: Timing::Now
    }));
    propose(&mut g, 1, change, Timing::Now);
    vote(&mut g, &[Yes, Yes, No]);
    let rule = &view(&g, 0).rules[0];
    assert_eq!((rule.id, rule.creator, &rule.body), (0, 2, &to));
    let looping = Change::ModifyRule {
        rule: 0,
        to: missive_rules::lopti::RuleBody::Enforced {
            spec: RuleSpec {
                trigger: Trigger::PileBurned,
                effect: Effect::BurnPile,
            },
        },
    };
    let mut g = table_with_rule(3, 2);
    assert_eq!(
        refused(
            &mut g,
            0,
            Action::Propose {
                change: looping,
                timing: Timing::Now
            }
        ),
        "rule-loops"
    );
}
