//! What setting up a Lopti session tells the table: that the first hand began, and nothing
//! any seat may not know. The first deal follows the first Rule Vote, so setup reveals no card.

mod lopti_support;

use lopti_support::*;
use missive_rules::lopti::{Action, Event, Lopti, PhaseView, Rank, RuleSpec, Trigger};
use missive_rules::{Audience, Game, Observation, Seat, SeatSet, Seed, Viewer};

fn seen_by(obs: &[Observation<Event>], viewer: Viewer) -> Vec<Event> {
    obs.iter()
        .filter(|o| o.audience.includes(viewer))
        .map(|o| o.event.clone())
        .collect()
}

#[test]
fn setup_tells_everyone_alike_that_the_first_hand_began_and_names_no_card() {
    for seats in 2..=5u8 {
        for seed in 0..5 {
            let game = Lopti::setup(&Default::default(), seats, Seed::from_u64(seed)).unwrap();
            let obs = game.setup_observations();
            let expected = vec![Event::HandStarted {
                hand: 0,
                dealer: 0,
                opener: 0,
            }];
            assert!(obs.iter().all(|o| o.audience == Audience::Everyone));
            assert_eq!(seen_by(&obs, Viewer::Spectator), expected);
            for seat in 0..seats {
                assert_eq!(seen_by(&obs, Viewer::Seat(seat)), expected);
                // Nothing is dealt yet: no seat holds or sees a card.
                let view = game.view(Viewer::Seat(seat));
                assert_eq!(view.your_hand, Some(vec![]));
                assert!(
                    view.seats
                        .iter()
                        .all(|s| s.face_up.is_empty() && s.face_down == 0 && s.in_hand == 0)
                );
                assert!(matches!(view.phase, PhaseView::Proposal { .. }));
            }
        }
    }
}

#[test]
fn a_fixed_deck_and_carried_rules_change_nothing_setup_says() {
    let rule = RuleSpec {
        trigger: Trigger::RankPlayed { rank: Rank::Nine },
        effect: missive_rules::lopti::Effect::NextPlayerSkips,
    };
    let game = session(
        &[
            Deal {
                down: ["2♠", "3♠", "4♠"],
                up: ["5♠", "6♠", "7♠"],
                hand: &["8♠", "9♠", "J♠"],
            },
            Deal {
                down: ["2♥", "3♥", "4♥"],
                up: ["5♥", "6♥", "7♥"],
                hand: &["8♥", "9♥", "J♥"],
            },
        ],
        &["K♣"],
        3,
        &[(1, rule)],
    );
    let obs = game.setup_observations();
    assert_eq!(
        obs,
        vec![Observation::public(Event::HandStarted {
            hand: 0,
            dealer: 0,
            opener: 0,
        })]
    );
}

#[test]
fn the_deal_after_setup_shows_each_hand_to_its_holder_alone() {
    let mut game = Lopti::setup(&Default::default(), 3, Seed::from_u64(7)).unwrap();
    let mut obs = game.setup_observations();
    for seat in 0..3 {
        obs.extend(game.apply(seat, &Action::DeclineProposal).unwrap());
    }
    for o in &obs {
        if let Event::YourHand { cards } = &o.event {
            let Audience::Seats(set) = o.audience else {
                panic!("a hand told to everyone: {o:?}");
            };
            assert_eq!(set.len(), 1);
            let holder: Seat = set.iter().next().unwrap();
            assert_eq!(set, SeatSet::single(holder));
            let mut mine = hand(&game, holder);
            let mut dealt = cards.clone();
            mine.sort();
            dealt.sort();
            assert_eq!(mine, dealt, "seat {holder} is told the hand it holds");
        }
    }
    for seat in 0..3 {
        assert_eq!(
            seen_by(&obs, Viewer::Seat(seat))
                .iter()
                .filter(|e| matches!(e, Event::YourHand { .. }))
                .count(),
            1,
            "seat {seat} learns its own hand and no other"
        );
    }
    assert!(
        !seen_by(&obs, Viewer::Spectator)
            .iter()
            .any(|e| matches!(e, Event::YourHand { .. })),
        "a spectator sees no hand"
    );
}
