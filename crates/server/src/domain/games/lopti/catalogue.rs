//! What ListGames tells of Lopti: its deck, its special ranks, the catalogue of custom rules
//! and the Rule Vote. The deck, the base rules, the ranges and the catalogue come from the
//! rules; only the texts live here.

use missive_proto::v1 as pb;
use missive_rules::Game;
use missive_rules::lopti::catalogue::{HAND_SIZE_RANGE, TABLE_RULE_MAX_CHARS, catalogue};
use missive_rules::lopti::{
    BaseRules, Card, Config, Effect, Lopti, MAX_HANDS, ROSHAMBO_THROWS, Rank, Special, Trigger,
};

use super::proto::{base_to_proto, ids, rank_to_proto, special_to_proto};
use crate::bots;
use crate::games::Catalogue;

/// A special role's name for people.
pub(super) fn special_name(special: Special) -> &'static str {
    match special {
        Special::Reset => "reset",
        Special::Pass => "pass",
        Special::Low => "play low",
        Special::Burn => "burn",
    }
}

/// What a card of a special rank does (docs/games/lopti.md, "Special ranks").
fn special_effect(special: Special) -> &'static str {
    match special {
        Special::Reset => {
            "Playable on any card outside a pass obligation; the next play may be of any rank. \
             It stays in the pile."
        }
        Special::Pass => {
            "Discarded at once and never picked up. If there is a pile, the next player must \
             pick it up or play a pass card, which hands the obligation on. Four chained pass \
             cards burn the pile."
        }
        Special::Low => {
            "Playable on any card outside a pass obligation; the next play must be of this \
             rank or lower. Four of them burn."
        }
        Special::Burn => {
            "Playable on any card but a play-low card, outside a pass obligation: burns the \
             pile at once, and its player plays again on the empty table."
        }
    }
}

/// The smallest and largest parameter the catalogue's rules take, over `values`.
fn range(values: impl Iterator<Item = u8>) -> (Option<u32>, Option<u32>) {
    let values: Vec<u32> = values.map(u32::from).collect();
    (values.iter().copied().min(), values.iter().copied().max())
}

fn part(name: &str, description: &str) -> pb::LoptiRulePart {
    pb::LoptiRulePart {
        name: name.into(),
        description: description.into(),
        ..Default::default()
    }
}

fn with_parameter(
    name: &str,
    description: &str,
    parameter: &str,
    (min, max): (Option<u32>, Option<u32>),
) -> pb::LoptiRulePart {
    pb::LoptiRulePart {
        parameter: parameter.into(),
        min,
        max,
        ..part(name, description)
    }
}

fn triggers() -> Vec<pb::LoptiRulePart> {
    let at_least = range(catalogue().iter().filter_map(|r| match r.trigger {
        Trigger::CardsPlayed { at_least } => Some(at_least),
        _ => None,
    }));
    vec![
        with_parameter(
            "rankPlayed",
            "A play of this rank resolves (a face-down card turned and played validly too).",
            "rank",
            (None, None),
        ),
        with_parameter(
            "cardsPlayed",
            "A play of at least this many cards resolves.",
            "atLeast",
            at_least,
        ),
        part("pileBurned", "The pile burns, by any cause."),
        part("pilePickedUp", "A player picks up the pile."),
        part(
            "faceUpTaken",
            "A player takes their face-up cards into hand.",
        ),
    ]
}

fn effects() -> Vec<pb::LoptiRulePart> {
    let count = range(catalogue().iter().filter_map(|r| match r.effect {
        Effect::PlayerDraws { count } => Some(count),
        _ => None,
    }));
    vec![
        part(
            "nextPlayerSkips",
            "The next player in turn order loses their next turn.",
        ),
        part("reverseDirection", "Turn order reverses."),
        with_parameter(
            "playerDraws",
            "The player draws this many cards from the draw pile, as far as it lasts.",
            "count",
            count,
        ),
        part(
            "othersDrawOne",
            "Every other player draws one card from the draw pile, in turn order.",
        ),
        part(
            "burnPile",
            "The pile burns (a custom burn rule), with the bonus play every burn gives.",
        ),
        part(
            "bonusPlay",
            "The player plays once more now, without a draw; dropped while a pass obligation \
             is pending.",
        ),
    ]
}

fn changes() -> Vec<pb::LoptiRulePart> {
    let sizes = (
        Some(u32::from(*HAND_SIZE_RANGE.start())),
        Some(u32::from(*HAND_SIZE_RANGE.end())),
    );
    vec![
        with_parameter(
            "removeRule",
            "Remove a custom rule for the rest of the session.",
            "rule",
            (None, None),
        ),
        with_parameter(
            "modifyRule",
            "Replace what a custom rule says.",
            "rule",
            (None, None),
        ),
        with_parameter(
            "restoreRule",
            "Bring back a removed or cancelled rule.",
            "rule",
            (None, None),
        ),
        with_parameter(
            "setHandSize",
            "Change the hand size: the cards dealt to each hand, and the size under which a \
             player draws after their first play.",
            "size",
            sizes,
        ),
        with_parameter(
            "setSpecial",
            "Move a special role to another rank, or switch it off.",
            "special",
            (None, None),
        ),
    ]
}

impl Catalogue for Lopti {
    fn info() -> pb::GameInfo {
        let base = BaseRules::default();
        let range = Lopti::seat_range(&Config::default());
        let deck: Vec<Card> = Card::deck();
        pb::GameInfo {
            name: "Lopti".into(),
            summary: "A shedding card game played in sessions of several hands: be the first to \
                      get rid of every card; each hand's winner adds a rule for the rest of the \
                      session, and the table may vote rules away."
                .into(),
            options_field: "lopti".into(),
            editions: vec![pb::GameEdition {
                name: "standard".into(),
                description: "One 52-card deck without jokers.".into(),
                min_seats: (*range.start()).into(),
                max_seats: (*range.end()).into(),
                is_default: true,
                ..Default::default()
            }],
            options: vec![
                pb::GameOption {
                    name: "hands".into(),
                    r#type: "integer".into(),
                    description: "Hands in the session; the match ends after the last one, won by \
                                  the most hands won."
                        .into(),
                    default_value: Config::default().hands.to_string(),
                    min: Some(1),
                    max: Some(MAX_HANDS.into()),
                    ..Default::default()
                },
                pb::GameOption {
                    name: "deck".into(),
                    r#type: "cards".into(),
                    description: "A fixed order for the first hand's deck, top card first; refused \
                                  unless the server allows fixed decks, and shown in every view."
                        .into(),
                    ..Default::default()
                },
                pb::GameOption {
                    name: "carriedRules".into(),
                    r#type: "rules".into(),
                    description: "Rules of an earlier session the table approved by majority \
                                  while setting this one up; a session starts from none."
                        .into(),
                    ..Default::default()
                },
            ],
            bot_strategies: vec![pb::BotStrategy {
                name: bots::RANDOM.into(),
                description: "Plays a uniformly random legal action.".into(),
            }],
            catalogue: Some(pb::GameCatalogue {
                game: Some(pb::game_catalogue::Game::Lopti(pb::LoptiCatalogue {
                    cards: ids(&deck),
                    ranks: Rank::ALL.iter().map(|r| r.label().to_owned()).collect(),
                    specials: Special::ALL
                        .into_iter()
                        .map(|special| pb::LoptiSpecialInfo {
                            special: special_to_proto(special) as i32,
                            name: special_name(special).into(),
                            rank: rank_to_proto(base.special(special)),
                            effect: special_effect(special).into(),
                        })
                        .collect(),
                    base_rules: Some(base_to_proto(&base)),
                    min_hand_size: (*HAND_SIZE_RANGE.start()).into(),
                    max_hand_size: (*HAND_SIZE_RANGE.end()).into(),
                    triggers: triggers(),
                    effects: effects(),
                    changes: changes(),
                    rule_creation: "From the second hand on, the last hand's winner creates a rule \
                                    for the rest of the session: an enforced rule (a trigger and an \
                                    effect from the catalogue), a free-text table rule the engine \
                                    shows but does not enforce, both, or none. A creator may cancel \
                                    their own rule at any time."
                        .into(),
                    rule_vote: "Before each deal the table has one Rule Vote: every seat proposes \
                                a change (remove, modify or restore a custom rule, change the hand \
                                size or a special rank) or declines, and the first proposal goes to \
                                the vote, taking effect now or from the next hand. Every seat votes \
                                yes, no or abstain, in secret until all are in; more than half of \
                                all seats voting yes passes it, exactly half is a tie settled by \
                                Roshambo, anything less fails. A failed or tied vote uses up the \
                                hand's one attempt."
                        .into(),
                    roshambo: "A tie is settled by rock-paper-scissors between the proposer and \
                               the rule's creator (or the first seat that voted no): throws are \
                               secret until both are in, draws don't count, and after the decisive \
                               throws the side with more wins; at a tie the next decisive throw \
                               decides."
                        .into(),
                    roshambo_throws: ROSHAMBO_THROWS.into(),
                    table_rule_max_chars: TABLE_RULE_MAX_CHARS as u32,
                    turn: "Play one or more cards of one rank, higher than the top play, or equal \
                           with more cards, or completing four of a rank; or pick up the pile, which \
                           ends the turn. After the turn's first play, draw up to the hand size. \
                           With hand and draw pile empty, take your face-up cards; then turn your \
                           face-down cards one at a time. The first player with no card left wins \
                           the hand."
                        .into(),
                })),
            }),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalogue_gives_the_parameters_the_rules_allow() {
        let by_name = |parts: Vec<pb::LoptiRulePart>, name: &str| {
            let part = parts.into_iter().find(|p| p.name == name).expect(name);
            (part.min, part.max)
        };
        assert_eq!(by_name(triggers(), "cardsPlayed"), (Some(1), Some(4)));
        assert_eq!(by_name(effects(), "playerDraws"), (Some(1), Some(3)));
        assert_eq!(by_name(changes(), "setHandSize"), (Some(1), Some(5)));
    }
}
