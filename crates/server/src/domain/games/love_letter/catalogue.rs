//! What ListGames tells of Love Letter: its two editions and their decks. The cards, their
//! roles, values and counts come from the rules' card table; only the texts live here.

use missive_proto::v1 as pb;
use missive_rules::Game;
use missive_rules::love_letter::{Config, Edition, LoveLetter, Role};

use super::proto::{edition_to_proto, role_to_proto};
use crate::bots;
use crate::games::Catalogue;

/// Both editions, the default first.
const EDITIONS: [Edition; 2] = [Edition::V2019, Edition::Classic];

/// A role's name for people.
pub(super) fn role_name(role: Role) -> &'static str {
    match role {
        Role::Spy => "Spy",
        Role::Guard => "Guard",
        Role::Priest => "Priest",
        Role::Baron => "Baron",
        Role::Handmaid => "Handmaid",
        Role::Prince => "Prince",
        Role::Chancellor => "Chancellor",
        Role::King => "King",
        Role::Countess => "Countess",
        Role::Princess => "Princess",
    }
}

/// What a role's card does (docs/games/love-letter.md, "Cards").
fn effect(role: Role) -> &'static str {
    match role {
        Role::Spy => {
            "No effect when played. At the end of the round, a player still in who is the only \
             one still in to have played or discarded a Spy gains a favour token."
        }
        Role::Guard => {
            "Choose another player and name a role other than Guard: if that player holds it, \
             they are out of the round."
        }
        Role::Priest => "Look at another player's hand in secret.",
        Role::Baron => {
            "Compare hands in secret with another player: the lower value is out of the round; \
             a tie does nothing."
        }
        Role::Handmaid => {
            "Until the start of your next turn, no other player's card can choose you."
        }
        Role::Prince => {
            "Choose any player, yourself included: they discard their hand without its effect \
             and draw a new card (the set-aside card if the deck is empty). A discarded \
             Princess puts them out."
        }
        Role::Chancellor => {
            "Draw 2 cards, keep 1 of the 3 in hand and put the other 2 on the bottom of the \
             deck in the order you choose."
        }
        Role::King => "Trade hands with another player.",
        Role::Countess => {
            "No effect. If your other card is the King or a Prince, you must play the Countess."
        }
        Role::Princess => "If you play or discard her, for any reason, you are out of the round.",
    }
}

fn edition_name(edition: Edition) -> &'static str {
    match edition {
        Edition::V2019 => "2019",
        Edition::Classic => "classic",
    }
}

fn edition_description(edition: Edition) -> &'static str {
    match edition {
        Edition::V2019 => "The 2019 rules: 21 cards with Spies and Chancellors.",
        Edition::Classic => {
            "The original game: 16 cards, without Spies, Chancellors and the Guard J♣."
        }
    }
}

fn seats(edition: Edition) -> (u32, u32) {
    let range = LoveLetter::seat_range(&Config {
        edition,
        ..Config::default()
    });
    ((*range.start()).into(), (*range.end()).into())
}

/// The roles of one edition's deck, by value, with their cards.
fn deck(edition: Edition) -> pb::LoveLetterEditionCards {
    let cards = edition.cards();
    let roles = Role::ALL
        .into_iter()
        .filter(|role| edition.has_role(*role))
        .map(|role| {
            let ids: Vec<String> = cards
                .iter()
                .filter(|c| c.role() == role)
                .map(|c| c.as_str().to_owned())
                .collect();
            pb::LoveLetterRoleCard {
                role: role_to_proto(role) as i32,
                name: role_name(role).to_owned(),
                value: role.value().into(),
                count: ids.len() as u32,
                cards: ids,
                effect: effect(role).to_owned(),
            }
        })
        .collect();
    pb::LoveLetterEditionCards {
        edition: edition_to_proto(edition) as i32,
        card_count: cards.len() as u32,
        roles,
    }
}

impl Catalogue for LoveLetter {
    fn info() -> pb::GameInfo {
        let edition_values: Vec<String> = EDITIONS
            .iter()
            .map(|e| edition_to_proto(*e).as_str_name().to_owned())
            .collect();
        pb::GameInfo {
            name: "Love Letter".into(),
            summary: "A round-based deduction card game: hold the highest card at the end of a \
                      round, or be the last player in, to win the Princess's favour tokens."
                .into(),
            options_field: "loveLetter".into(),
            editions: EDITIONS
                .iter()
                .map(|edition| {
                    let (min_seats, max_seats) = seats(*edition);
                    pb::GameEdition {
                        name: edition_name(*edition).into(),
                        option_value: edition_to_proto(*edition).as_str_name().into(),
                        description: edition_description(*edition).into(),
                        min_seats,
                        max_seats,
                        is_default: *edition == Edition::default(),
                    }
                })
                .collect(),
            options: vec![
                pb::GameOption {
                    name: "edition".into(),
                    r#type: "enum".into(),
                    description: "The edition: its deck and how many may play.".into(),
                    default_value: edition_to_proto(Edition::default()).as_str_name().into(),
                    values: edition_values,
                    ..Default::default()
                },
                pb::GameOption {
                    name: "firstPlayer".into(),
                    r#type: "seat".into(),
                    description: "The seat that starts the first round; drawn from the seed when \
                                  left out."
                        .into(),
                    min: Some(0),
                    max: Some(i32::from(Edition::V2019.max_players()) - 1),
                    ..Default::default()
                },
                pb::GameOption {
                    name: "deck".into(),
                    r#type: "cards".into(),
                    description:
                        "A fixed first-round deck order, for tests and tutorials; refused \
                                  unless the server allows fixed decks, and shown in every view."
                            .into(),
                    ..Default::default()
                },
            ],
            bot_strategies: vec![
                pb::BotStrategy {
                    name: bots::RANDOM.into(),
                    description: "Plays a uniformly random legal action.".into(),
                },
                pb::BotStrategy {
                    name: bots::COUNTING.into(),
                    description: "Counts the cards its seat has seen and plays the legal action \
                                  that scores best against the unseen ones."
                        .into(),
                },
            ],
            catalogue: Some(pb::GameCatalogue {
                game: Some(pb::game_catalogue::Game::LoveLetter(
                    pb::LoveLetterCatalogue {
                        editions: EDITIONS.iter().map(|e| deck(*e)).collect(),
                    },
                )),
            }),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_editions_roles_count_up_to_its_deck() {
        let pb::GameInfo { catalogue, .. } = LoveLetter::info();
        let Some(pb::game_catalogue::Game::LoveLetter(catalogue)) = catalogue.and_then(|c| c.game)
        else {
            panic!("Love Letter's catalogue");
        };
        let sizes: Vec<(u32, u32, usize)> = catalogue
            .editions
            .iter()
            .map(|e| {
                let sum: u32 = e.roles.iter().map(|r| r.count).sum();
                (e.card_count, sum, e.roles.len())
            })
            .collect();
        assert_eq!(sizes, [(21, 21, 10), (16, 16, 8)]);
    }
}
