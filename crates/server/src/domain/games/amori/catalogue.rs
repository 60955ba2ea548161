//! What ListGames tells of Amori e Intrighi: this edition's daughters, gentlemen, event cards,
//! locations and dice. Every value comes from the rules' data module; the texts are written
//! here from the same tables (an event card's effect from its `EventEffect`, a location's
//! action from its steps), so they cannot drift either.

use missive_proto::v1 as pb;
use missive_rules::Game;
use missive_rules::amori::data::{
    self, Attribute, DAUGHTERS, Die, DieFace, EVENT_KINDS, EventEffect, GENTLEMEN, LOCATIONS,
    LocationStep,
};
use missive_rules::amori::{Amori, Config};

use super::proto::{attributes, die_to_proto, face_to_proto, location_to_proto};
use crate::bots;
use crate::games::Catalogue;

pub(super) fn attribute_name(attribute: Attribute) -> &'static str {
    match attribute {
        Attribute::Reputation => "Reputation",
        Attribute::Beauty => "Beauty",
        Attribute::Education => "Education",
    }
}

pub(super) fn die_name(die: Die) -> &'static str {
    match die {
        Die::Casanova => "Casanova",
        Die::Drink => "Drink",
        Die::Intrigue => "Intrigue",
    }
}

/// What an event card does, from its effect.
fn event_effect(effect: EventEffect) -> String {
    match effect {
        EventEffect::Raise(attribute, n) => {
            format!("Your daughter gains {n} {}.", attribute_name(attribute))
        }
        EventEffect::LoveLetter => {
            "Take the top card of the main gentleman deck for your daughter.".into()
        }
        EventEffect::BallInvitation => "Look at any one location deck and take one card from \
                                        it for your daughter; the main deck refills it."
            .into(),
        EventEffect::Lower(attribute, n) => format!(
            "Hostile: another player's daughter loses {n} {}.",
            attribute_name(attribute)
        ),
        EventEffect::RollAgainst(die) => format!(
            "Hostile: another player's daughter rolls the {} die.",
            die_name(die)
        ),
        EventEffect::IntrigueByLetter => "Hostile: intrigue against a daughter at any location \
                                          where intrigues are allowed, with the Intrigue die."
            .into(),
        EventEffect::KeepForPoints(points) => {
            format!("Keep it in front of you: {points} victory points at the end.")
        }
        EventEffect::Chaperone => "Reaction: cancel a hostile event card aimed at your \
                                   daughter; both cards are discarded."
            .into(),
    }
}

/// A location's action, from its steps, then its gentlemen.
fn location_action(location: &data::LocationData) -> String {
    let mut parts: Vec<String> = location
        .steps
        .iter()
        .map(|step| match step {
            LocationStep::Gain(attribute, n) => format!("+{n} {}", attribute_name(*attribute)),
            LocationStep::GainOneOf(choices, n) => {
                let names: Vec<String> = choices
                    .iter()
                    .map(|a| format!("+{n} {}", attribute_name(*a)))
                    .collect();
                format!("{} (your choice)", names.join(" or "))
            }
            LocationStep::Roll(die) => format!("roll the {} die", die_name(*die)),
        })
        .collect();
    if location.has_gentlemen() {
        parts.push("then take one gentleman card of your choice from its deck".into());
    }
    let mut text = parts.join(", ");
    if let Some(first) = text.get(..1) {
        text = first.to_uppercase() + &text[1..];
    }
    text + "."
}

fn die_effect(die: Die) -> String {
    match die {
        Die::Casanova => {
            let hats: Vec<String> = die
                .faces()
                .iter()
                .filter_map(|f| Some(format!("{} {}", face_name(*f), f.hat_beauty()?)))
                .collect();
            format!(
                "A hat whose number ({}) is at most the daughter's Beauty costs her {} \
                 Reputation; a clover does nothing.",
                hats.join(", "),
                data::CASANOVA_LOSS
            )
        }
        Die::Drink => format!(
            "A bottle costs the daughter {} Education; a clover does nothing.",
            data::DRINK_LOSS
        ),
        Die::Intrigue => "A clover: the intrigue succeeds and its player takes a gentleman \
                          card of their choice from the other daughter. An exclamation: it \
                          fails and the other player takes one from the intriguer's."
            .into(),
    }
}

pub(super) fn face_name(face: DieFace) -> &'static str {
    match face {
        DieFace::Clover => "clover",
        DieFace::PinkHat => "pink hat",
        DieFace::RedHat => "red hat",
        DieFace::DarkRedHat => "dark-red hat",
        DieFace::Bottle => "bottle",
        DieFace::Exclamation => "exclamation",
    }
}

fn catalogue() -> pb::AmoriCatalogue {
    pb::AmoriCatalogue {
        daughters: DAUGHTERS
            .iter()
            .map(|d| pb::AmoriDaughterInfo {
                id: d.slug.into(),
                name: d.name.into(),
                start: Some(attributes(&d.start)),
            })
            .collect(),
        gentlemen: GENTLEMEN
            .iter()
            .map(|g| pb::AmoriGentlemanInfo {
                id: g.slug.into(),
                name: g.name.into(),
                minimums: Some(attributes(&g.minimums)),
                victory_points: g.victory_points.into(),
                brown: g.brown,
            })
            .collect(),
        event_cards: EVENT_KINDS
            .iter()
            .map(|e| pb::AmoriEventCardInfo {
                id: e.slug.into(),
                name: e.name.into(),
                count: e.count.into(),
                effect: event_effect(e.effect),
                hostile: e.effect.is_hostile(),
                reaction: e.effect.is_reaction(),
                needs_target: e.effect.is_hostile(),
                needs_location: matches!(e.effect, EventEffect::BallInvitation),
            })
            .collect(),
        locations: LOCATIONS
            .iter()
            .map(|l| pb::AmoriLocationInfo {
                location: location_to_proto(l.location) as i32,
                name: l.name.into(),
                deck_size: l.deck_size as u32,
                action: location_action(l),
                intrigue_allowed: l.intrigue_allowed,
            })
            .collect(),
        dice: [Die::Casanova, Die::Drink, Die::Intrigue]
            .into_iter()
            .map(|die| pb::AmoriDieInfo {
                die: die_to_proto(die) as i32,
                name: die_name(die).into(),
                faces: die
                    .faces()
                    .iter()
                    .map(|f| face_to_proto(*f) as i32)
                    .collect(),
                effect: die_effect(die),
            })
            .collect(),
        cards_per_gentleman: data::CARDS_PER_GENTLEMAN.into(),
        cards_to_marry: data::CARDS_TO_MARRY as u32,
        max_suitors: data::MAX_SUITORS as u32,
        daughters_per_player: data::DAUGHTERS_PER_PLAYER as u32,
        starting_event_cards: data::STARTING_EVENT_CARDS as u32,
        hand_limit: data::HAND_LIMIT as u32,
        medal_points: data::MEDAL_POINTS.into(),
        min_attribute: data::MIN_ATTRIBUTE.into(),
        max_attribute: data::MAX_ATTRIBUTE.into(),
        turn: "Move your daughter to another location (or stay and intrigue there), then take \
               the location's action or intrigue against a daughter standing there. Play event \
               cards at any moment of your turn; the turn ends when you draw one. A daughter \
               holding enough cards of one gentleman, and meeting his minimums, marries him at \
               once. The game ends after the round in which a player marries off all three \
               daughters: married gentlemen's points, kept event cards and family medals score."
            .into(),
    }
}

impl Catalogue for Amori {
    fn info() -> pb::GameInfo {
        let range = Amori::seat_range(&Config::default());
        pb::GameInfo {
            name: "Amori e Intrighi".into(),
            summary: "Mothers marry off their three daughters to the best gentlemen they can, \
                      raising their Reputation, Beauty and Education and intriguing against rivals."
                .into(),
            options_field: "amori".into(),
            editions: vec![pb::GameEdition {
                name: "standard".into(),
                description: "Missive's digital edition, with the data of docs/games/\
                              amori-e-intrighi.md; brown gentlemen are left out with two players."
                    .into(),
                min_seats: (*range.start()).into(),
                max_seats: (*range.end()).into(),
                is_default: true,
                ..Default::default()
            }],
            options: vec![pb::GameOption {
                name: "startingPlayer".into(),
                r#type: "seat".into(),
                description: "The seat that plays first; drawn from the seed when left out.".into(),
                min: Some(0),
                max: Some(i32::from(*range.end()) - 1),
                ..Default::default()
            }],
            bot_strategies: vec![pb::BotStrategy {
                name: bots::RANDOM.into(),
                description: "Plays a uniformly random legal action.".into(),
            }],
            catalogue: Some(pb::GameCatalogue {
                game: Some(pb::game_catalogue::Game::Amori(catalogue())),
            }),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_written_from_the_tables() {
        let catalogue = catalogue();
        let slander = catalogue.event_cards.iter().find(|e| e.id == "slander");
        assert_eq!(
            slander.map(|e| (e.effect.as_str(), e.hostile, e.count)),
            Some((
                "Hostile: another player's daughter loses 1 Reputation.",
                true,
                4
            ))
        );
        let park = &catalogue.locations[4];
        assert_eq!(
            park.action,
            "+1 Beauty, roll the Casanova die, then take one gentleman card of your choice \
             from its deck."
        );
        assert_eq!(
            catalogue.event_cards.iter().map(|e| e.count).sum::<u32>(),
            46
        );
    }
}
