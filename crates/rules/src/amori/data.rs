//! This edition's data: the gentlemen, daughters, locations, dice faces and event cards of
//! Missive's digital edition of *Amori e Intrighi*.
//!
//! The rulebook gives the rules but not the printed values, so the spec fixes them for our
//! edition (the parts it marks *our data*). Everything here is a table the rules code reads;
//! nothing in the rules hard-codes a name, a requirement, a deck size or a die face. Swapping
//! in the printed values means editing this file only. Renaming a slug, or reordering a table,
//! changes stored ids and must bump `RULES_VERSION`.

use serde::{Deserialize, Serialize};

/// One of a daughter's three attributes, each always within [`MIN_ATTRIBUTE`]..=[`MAX_ATTRIBUTE`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Attribute {
    Reputation,
    Beauty,
    Education,
}

impl Attribute {
    /// All three, in the order boards print them.
    pub const ALL: [Attribute; 3] = [
        Attribute::Reputation,
        Attribute::Beauty,
        Attribute::Education,
    ];
}

/// The lowest value an attribute may take; changes below it are clamped.
pub const MIN_ATTRIBUTE: u8 = 0;
/// The highest value an attribute may take; changes above it are clamped.
pub const MAX_ATTRIBUTE: u8 = 5;

/// A daughter's three attribute values (or a gentleman's three minimums).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Attributes {
    pub reputation: u8,
    pub beauty: u8,
    pub education: u8,
}

impl Attributes {
    pub const fn new(reputation: u8, beauty: u8, education: u8) -> Self {
        Attributes {
            reputation,
            beauty,
            education,
        }
    }

    /// The value of one attribute.
    pub fn get(&self, attribute: Attribute) -> u8 {
        match attribute {
            Attribute::Reputation => self.reputation,
            Attribute::Beauty => self.beauty,
            Attribute::Education => self.education,
        }
    }

    /// Change one attribute by `delta`, clamped to the allowed range.
    pub fn adjust(&mut self, attribute: Attribute, delta: i8) {
        let value = (i16::from(self.get(attribute)) + i16::from(delta))
            .clamp(i16::from(MIN_ATTRIBUTE), i16::from(MAX_ATTRIBUTE)) as u8;
        match attribute {
            Attribute::Reputation => self.reputation = value,
            Attribute::Beauty => self.beauty = value,
            Attribute::Education => self.education = value,
        }
    }

    /// Whether every value here is at least the matching one in `minimums`.
    pub fn meets(&self, minimums: &Attributes) -> bool {
        Attribute::ALL
            .iter()
            .all(|a| self.get(*a) >= minimums.get(*a))
    }
}

/// A gentleman: his stable slug (card ids are `slug-1` … `slug-6`), his minimums and his VP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GentlemanData {
    pub slug: &'static str,
    pub name: &'static str,
    pub minimums: Attributes,
    pub victory_points: u8,
    /// Brown-background cards are removed from two-player games.
    pub brown: bool,
}

/// How many cards each gentleman has.
pub const CARDS_PER_GENTLEMAN: u8 = 6;

/// How many cards of one gentleman a daughter needs (with his minimums) to marry him.
pub const CARDS_TO_MARRY: usize = 3;

/// How many different gentlemen a daughter may hold cards of.
pub const MAX_SUITORS: usize = 3;

const fn gentleman(
    slug: &'static str,
    name: &'static str,
    r: u8,
    b: u8,
    e: u8,
    victory_points: u8,
    brown: bool,
) -> GentlemanData {
    GentlemanData {
        slug,
        name,
        minimums: Attributes::new(r, b, e),
        victory_points,
        brown,
    }
}

/// The 14 gentlemen (our data; names from the rulebook where it gives them).
pub const GENTLEMEN: [GentlemanData; 14] = [
    gentleman("bodo", "Bodo", 1, 1, 0, 1, false),
    gentleman("cornelius", "Cornelius", 0, 2, 1, 1, false),
    gentleman("gustav", "Gustav", 1, 0, 2, 1, false),
    gentleman("konrad", "Konrad", 2, 2, 1, 2, false),
    gentleman("ludwig", "Ludwig", 1, 2, 2, 2, false),
    gentleman("heinrich", "Heinrich", 2, 1, 2, 2, true),
    gentleman("alexander", "Alexander", 3, 2, 2, 3, false),
    gentleman("giselbert", "Giselbert", 2, 3, 2, 3, false),
    gentleman("theobald", "Theobald", 3, 1, 4, 4, false),
    gentleman("ferdinand", "Ferdinand", 2, 4, 2, 4, true),
    gentleman("friedrich", "Friedrich", 4, 2, 3, 5, false),
    gentleman("maximilian", "Maximilian", 3, 4, 3, 6, false),
    gentleman("wilhelm", "Wilhelm", 4, 3, 4, 7, false),
    gentleman(
        "bertram-von-biedenfeld",
        "Bertram von Biedenfeld",
        5,
        4,
        4,
        8,
        false,
    ),
];

/// A daughter board: her slug and her printed starting values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DaughterData {
    pub slug: &'static str,
    pub name: &'static str,
    pub start: Attributes,
}

const fn daughter(slug: &'static str, name: &'static str, r: u8, b: u8, e: u8) -> DaughterData {
    DaughterData {
        slug,
        name,
        start: Attributes::new(r, b, e),
    }
}

/// The 12 daughter boards (our data).
pub const DAUGHTERS: [DaughterData; 12] = [
    daughter("henriette", "Henriette", 1, 1, 1),
    daughter("ludmilla", "Ludmilla", 0, 3, 0),
    daughter("otilie", "Otilie", 1, 0, 2),
    daughter("anna-maria", "Anna Maria", 2, 0, 1),
    daughter("wilhelmine", "Wilhelmine", 1, 2, 0),
    daughter("caecilia", "Cäcilia", 0, 1, 2),
    daughter("friederike", "Friederike", 2, 1, 0),
    daughter("luise", "Luise", 0, 2, 1),
    daughter("charlotte", "Charlotte", 1, 1, 1),
    daughter("mathilde", "Mathilde", 2, 0, 1),
    daughter("auguste", "Auguste", 0, 0, 3),
    daughter("sophie", "Sophie", 3, 0, 0),
];

/// How many daughter boards each player gets (one face up, the rest face down).
pub const DAUGHTERS_PER_PLAYER: usize = 3;

/// The six places a daughter may visit, in board order (the order `legal_actions` lists them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Location {
    Theater,
    Tavern,
    Boulevard,
    Poorhouse,
    Park,
    Tailor,
}

impl Location {
    /// All six, in board order.
    pub const ALL: [Location; 6] = [
        Location::Theater,
        Location::Tavern,
        Location::Boulevard,
        Location::Poorhouse,
        Location::Park,
        Location::Tailor,
    ];

    /// Position in [`Location::ALL`] and in [`LOCATIONS`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// This location's row of [`LOCATIONS`].
    pub fn data(self) -> &'static LocationData {
        &LOCATIONS[self.index()]
    }
}

/// One box of a location's action, carried out in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocationStep {
    /// Raise an attribute.
    Gain(Attribute, u8),
    /// Raise one of these attributes, the player's choice.
    GainOneOf(&'static [Attribute], u8),
    /// Roll a die for the daughter.
    Roll(Die),
}

/// A location: its gentleman deck size at setup and its action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocationData {
    pub location: Location,
    pub name: &'static str,
    /// Cards dealt face down at setup; 0 means the location has no gentleman deck.
    pub deck_size: usize,
    pub steps: &'static [LocationStep],
    /// Whether intrigues may take place here.
    pub intrigue_allowed: bool,
}

impl LocationData {
    /// Whether this location keeps a gentleman deck.
    pub fn has_gentlemen(&self) -> bool {
        self.deck_size > 0
    }
}

/// The six locations (our data, within what the box is known to show).
pub const LOCATIONS: [LocationData; 6] = [
    LocationData {
        location: Location::Theater,
        name: "Theater",
        deck_size: 3,
        steps: &[LocationStep::Gain(Attribute::Education, 1)],
        intrigue_allowed: true,
    },
    LocationData {
        location: Location::Tavern,
        name: "Tavern",
        deck_size: 7,
        steps: &[
            LocationStep::Roll(Die::Casanova),
            LocationStep::Roll(Die::Drink),
        ],
        intrigue_allowed: true,
    },
    LocationData {
        location: Location::Boulevard,
        name: "Boulevard",
        deck_size: 2,
        steps: &[LocationStep::GainOneOf(
            &[Attribute::Reputation, Attribute::Education],
            1,
        )],
        intrigue_allowed: true,
    },
    LocationData {
        location: Location::Poorhouse,
        name: "Poorhouse",
        deck_size: 3,
        steps: &[LocationStep::Gain(Attribute::Reputation, 1)],
        intrigue_allowed: true,
    },
    LocationData {
        location: Location::Park,
        name: "Park",
        deck_size: 5,
        steps: &[
            LocationStep::Gain(Attribute::Beauty, 1),
            LocationStep::Roll(Die::Casanova),
        ],
        intrigue_allowed: true,
    },
    LocationData {
        location: Location::Tailor,
        name: "Tailor",
        deck_size: 0,
        steps: &[LocationStep::Gain(Attribute::Beauty, 2)],
        intrigue_allowed: false,
    },
];

/// The three dice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Die {
    Casanova,
    Drink,
    Intrigue,
}

impl Die {
    /// This die's six faces.
    pub fn faces(self) -> &'static [DieFace; 6] {
        match self {
            Die::Casanova => &CASANOVA_FACES,
            Die::Drink => &DRINK_FACES,
            Die::Intrigue => &INTRIGUE_FACES,
        }
    }
}

/// A face of one of the dice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DieFace {
    /// Nothing happens (on the Intrigue die: the intrigue succeeds).
    Clover,
    /// Casanova's pink hat.
    PinkHat,
    /// Casanova's red hat.
    RedHat,
    /// Casanova's dark-red hat.
    DarkRedHat,
    /// The Drink die's bottle: the daughter loses Education.
    Bottle,
    /// The Intrigue die's exclamation mark: the intrigue fails.
    Exclamation,
}

impl DieFace {
    /// For a hat, the Beauty at which Casanova takes an interest (she loses Reputation when her
    /// Beauty is at least this). `None` for every other face.
    pub fn hat_beauty(self) -> Option<u8> {
        match self {
            DieFace::PinkHat => Some(0),
            DieFace::RedHat => Some(2),
            DieFace::DarkRedHat => Some(4),
            _ => None,
        }
    }
}

/// The Casanova die (our data).
pub const CASANOVA_FACES: [DieFace; 6] = [
    DieFace::Clover,
    DieFace::Clover,
    DieFace::Clover,
    DieFace::PinkHat,
    DieFace::RedHat,
    DieFace::DarkRedHat,
];
/// The Drink die (our data).
pub const DRINK_FACES: [DieFace; 6] = [
    DieFace::Clover,
    DieFace::Clover,
    DieFace::Clover,
    DieFace::Clover,
    DieFace::Bottle,
    DieFace::Bottle,
];
/// The Intrigue die (our data).
pub const INTRIGUE_FACES: [DieFace; 6] = [
    DieFace::Clover,
    DieFace::Clover,
    DieFace::Clover,
    DieFace::Clover,
    DieFace::Exclamation,
    DieFace::Exclamation,
];

/// Reputation lost to Casanova when his hat matches.
pub const CASANOVA_LOSS: u8 = 1;
/// Education lost to a bottle.
pub const DRINK_LOSS: u8 = 1;

/// What an event card does when played.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventEffect {
    /// Your daughter gains this much of an attribute.
    Raise(Attribute, u8),
    /// Take the top card of the main gentleman deck.
    LoveLetter,
    /// Look at one location deck and take a card from it.
    BallInvitation,
    /// Hostile: another daughter loses this much of an attribute.
    Lower(Attribute, u8),
    /// Hostile: another daughter rolls this die (Casanova or Drink).
    RollAgainst(Die),
    /// Hostile: an intrigue against a daughter at any location that allows intrigues.
    IntrigueByLetter,
    /// Kept in front of you for this many VP at the end.
    KeepForPoints(u8),
    /// Reaction: cancels a hostile card aimed at your daughter.
    Chaperone,
}

impl EventEffect {
    /// Hostile cards aim at another player's daughter and open a reaction window.
    pub fn is_hostile(self) -> bool {
        matches!(
            self,
            EventEffect::Lower(..) | EventEffect::RollAgainst(_) | EventEffect::IntrigueByLetter
        )
    }

    /// Reactions are played only in answer to a hostile card.
    pub fn is_reaction(self) -> bool {
        matches!(self, EventEffect::Chaperone)
    }
}

/// A kind of event card and how many copies the deck holds (ids are `slug-1` … `slug-count`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventKindData {
    pub slug: &'static str,
    pub name: &'static str,
    pub count: u8,
    pub effect: EventEffect,
}

const fn event(
    slug: &'static str,
    name: &'static str,
    count: u8,
    effect: EventEffect,
) -> EventKindData {
    EventKindData {
        slug,
        name,
        count,
        effect,
    }
}

/// The event cards (our data; 46 in all).
pub const EVENT_KINDS: [EventKindData; 12] = [
    event(
        "diadem",
        "The Diadem",
        5,
        EventEffect::Raise(Attribute::Beauty, 1),
    ),
    event(
        "private-tutor",
        "Private Tutor",
        5,
        EventEffect::Raise(Attribute::Education, 1),
    ),
    event(
        "charity-ball",
        "Charity Ball",
        5,
        EventEffect::Raise(Attribute::Reputation, 1),
    ),
    event("love-letter", "Love Letter", 4, EventEffect::LoveLetter),
    event(
        "ball-invitation",
        "Ball Invitation",
        3,
        EventEffect::BallInvitation,
    ),
    event(
        "slander",
        "Slander",
        4,
        EventEffect::Lower(Attribute::Reputation, 1),
    ),
    event(
        "casanova-calls",
        "Casanova Calls",
        3,
        EventEffect::RollAgainst(Die::Casanova),
    ),
    event(
        "drinking-party",
        "Drinking Party",
        3,
        EventEffect::RollAgainst(Die::Drink),
    ),
    event(
        "intrigue-by-letter",
        "Intrigue by Letter",
        3,
        EventEffect::IntrigueByLetter,
    ),
    event(
        "enlarge-the-property",
        "Enlarge the Property",
        2,
        EventEffect::KeepForPoints(2),
    ),
    event(
        "unexpected-inheritance",
        "An Unexpected Inheritance",
        2,
        EventEffect::KeepForPoints(3),
    ),
    event("chaperone", "Chaperone", 7, EventEffect::Chaperone),
];

/// Event cards dealt to each player at setup (our data).
pub const STARTING_EVENT_CARDS: usize = 2;

/// The most event cards a player may keep in hand after drawing.
pub const HAND_LIMIT: usize = 5;

/// VP for each family medal.
pub const MEDAL_POINTS: u8 = 2;

/// Total gentleman cards in the box.
pub const fn gentleman_card_count() -> usize {
    GENTLEMEN.len() * CARDS_PER_GENTLEMAN as usize
}

/// Total event cards in the box.
pub const fn event_card_count() -> usize {
    let mut total = 0;
    let mut i = 0;
    while i < EVENT_KINDS.len() {
        total += EVENT_KINDS[i].count as usize;
        i += 1;
    }
    total
}

/// The most cards a location deck is dealt at setup, and so the most it ever holds: a card
/// joins a location deck only in place of one that left it.
pub const fn largest_location_deck() -> usize {
    let mut largest = 0;
    let mut i = 0;
    while i < LOCATIONS.len() {
        if LOCATIONS[i].deck_size > largest {
            largest = LOCATIONS[i].deck_size;
        }
        i += 1;
    }
    largest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_box_holds_84_gentleman_cards_and_46_event_cards() {
        assert_eq!(gentleman_card_count(), 84);
        assert_eq!(event_card_count(), 46);
    }

    #[test]
    fn slugs_are_unique_and_kebab_case() {
        let slugs: Vec<&str> = GENTLEMEN
            .iter()
            .map(|g| g.slug)
            .chain(DAUGHTERS.iter().map(|d| d.slug))
            .chain(EVENT_KINDS.iter().map(|e| e.slug))
            .collect();
        let mut sorted = slugs.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), slugs.len());
        assert!(
            slugs
                .iter()
                .all(|s| s.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
        );
    }

    #[test]
    fn location_table_follows_board_order() {
        for (i, row) in LOCATIONS.iter().enumerate() {
            assert_eq!(row.location.index(), i);
        }
        let dealt: usize = LOCATIONS.iter().map(|l| l.deck_size).sum();
        assert_eq!(dealt, 20);
    }

    #[test]
    fn every_starting_value_is_within_range() {
        for d in DAUGHTERS {
            for a in Attribute::ALL {
                assert!(d.start.get(a) <= MAX_ATTRIBUTE);
            }
        }
    }

    #[test]
    fn attributes_clamp_at_both_ends() {
        let mut a = Attributes::new(0, 5, 2);
        a.adjust(Attribute::Reputation, -1);
        a.adjust(Attribute::Beauty, 2);
        a.adjust(Attribute::Education, 1);
        assert_eq!(a, Attributes::new(0, 5, 3));
    }
}
