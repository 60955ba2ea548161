//! Lopti's public types keep their serialised forms: stored matches and the protobuf mapping
//! depend on these strings, so a rename must fail here first.

use missive_rules::lopti::{
    Action, Ballot, Card, Change, Config, Effect, Event, Rank, RuleBody, RuleSpec, Source, Special,
    Throw, Timing, Trigger,
};
use serde_json::json;

fn pinned<T>(value: &T, expected: serde_json::Value)
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    assert_eq!(serde_json::to_value(value).unwrap(), expected);
    let back: T = serde_json::from_value(expected).unwrap();
    assert_eq!(&back, value);
}

#[test]
fn actions_keep_their_serialised_form() {
    pinned(
        &Action::Play {
            cards: [Card::of("10♠"), Card::of("10♥")].into_iter().collect(),
        },
        json!({"kind": "play", "cards": ["10♠", "10♥"]}),
    );
    pinned(
        &Action::PlayFaceDown { index: 2 },
        json!({"kind": "play-face-down", "index": 2}),
    );
    pinned(&Action::PickUp, json!({"kind": "pick-up"}));
    pinned(
        &Action::Vote {
            ballot: Ballot::Abstain,
        },
        json!({"kind": "vote", "ballot": "abstain"}),
    );
    pinned(
        &Action::Throw {
            throw: Throw::Scissors,
        },
        json!({"kind": "throw", "throw": "scissors"}),
    );
    pinned(
        &Action::CreateRule {
            rule: Some(RuleSpec {
                trigger: Trigger::RankPlayed { rank: Rank::Queen },
                effect: Effect::PlayerDraws { count: 2 },
            }),
            table_rule: None,
        },
        json!({"kind": "create-rule", "rule": {
            "trigger": {"kind": "rank-played", "rank": "Q"},
            "effect": {"kind": "player-draws", "count": 2}
        }, "table_rule": null}),
    );
    pinned(
        &Action::Propose {
            change: Change::SetSpecial {
                special: Special::Low,
                rank: Some(Rank::Eight),
            },
            timing: Timing::NextHand,
        },
        json!({"kind": "propose", "change": {"kind": "set-special", "special": "low", "rank": "8"},
               "timing": "next-hand"}),
    );
    pinned(
        &Change::ModifyRule {
            rule: 1,
            to: RuleBody::Table {
                text: "clap on aces".into(),
            },
        },
        json!({"kind": "modify-rule", "rule": 1, "to": {"kind": "table", "text": "clap on aces"}}),
    );
}

#[test]
fn events_and_config_keep_their_serialised_form() {
    pinned(
        &Event::Played {
            seat: 1,
            cards: vec![Card::of("A♣")],
            source: Source::FaceDown,
            bonus: true,
        },
        json!({"kind": "played", "seat": 1, "cards": ["A♣"], "source": "face-down", "bonus": true}),
    );
    pinned(
        &Config::default(),
        json!({"hands": 3, "fixed_deck": null, "carried_rules": []}),
    );
    let partial: Config = serde_json::from_value(json!({"hands": 5})).unwrap();
    assert_eq!(
        partial,
        Config {
            hands: 5,
            ..Config::default()
        }
    );
}

#[test]
fn a_bad_card_id_does_not_deserialise() {
    assert!(serde_json::from_value::<Action>(json!({"kind": "play", "cards": ["11♠"]})).is_err());
    assert!(serde_json::from_value::<Action>(json!({"kind": "play", "cards": ["10S"]})).is_err());
}
