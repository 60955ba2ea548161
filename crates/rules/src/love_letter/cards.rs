//! The 21 physical cards, their roles and the two editions' decks.
//!
//! A card is a `u8` index into one fixed table, so the state stays small and copying a hand is
//! free; on the wire it is always its stable id string (`"Q♥"`), which persisted logs rely on.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Which rules and deck a match uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Edition {
    /// The 2019 rules: 21 cards with Spies and Chancellors, 2 to 6 players.
    #[default]
    #[serde(rename = "2019")]
    V2019,
    /// The original 16-card game: no Spies, no Chancellors, no `J♣`; 2 to 4 players.
    #[serde(rename = "classic")]
    Classic,
}

impl Edition {
    /// Every card of the edition, in id order.
    pub fn cards(self) -> &'static [CardId] {
        match self {
            Edition::V2019 => &CardId::ALL,
            Edition::Classic => &CLASSIC,
        }
    }

    /// Whether the edition's deck contains cards of `role`.
    pub fn has_role(self, role: Role) -> bool {
        match self {
            Edition::V2019 => true,
            Edition::Classic => !matches!(role, Role::Spy | Role::Chancellor),
        }
    }

    /// Seat counts the edition supports.
    pub fn max_players(self) -> u8 {
        match self {
            Edition::V2019 => 6,
            Edition::Classic => 4,
        }
    }
}

const CLASSIC: [CardId; 16] = [
    CardId(2),
    CardId(3),
    CardId(4),
    CardId(5),
    CardId(6),
    CardId(8),
    CardId(9),
    CardId(10),
    CardId(11),
    CardId(12),
    CardId(13),
    CardId(14),
    CardId(15),
    CardId(18),
    CardId(19),
    CardId(20),
];

/// What a card does; its value decides Barons and round ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    Spy,
    Guard,
    Priest,
    Baron,
    Handmaid,
    Prince,
    Chancellor,
    King,
    Countess,
    Princess,
}

impl Role {
    /// Every role, by value.
    pub const ALL: [Role; 10] = [
        Role::Spy,
        Role::Guard,
        Role::Priest,
        Role::Baron,
        Role::Handmaid,
        Role::Prince,
        Role::Chancellor,
        Role::King,
        Role::Countess,
        Role::Princess,
    ];

    /// The number printed on the card (0 for the Spy, 9 for the Princess).
    pub fn value(self) -> u8 {
        self as u8
    }

    /// The stable lowercase name (`"handmaid"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Spy => "spy",
            Role::Guard => "guard",
            Role::Priest => "priest",
            Role::Baron => "baron",
            Role::Handmaid => "handmaid",
            Role::Prince => "prince",
            Role::Chancellor => "chancellor",
            Role::King => "king",
            Role::Countess => "countess",
            Role::Princess => "princess",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = UnknownRole;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| UnknownRole(s.to_owned()))
    }
}

/// A role name that is not one of the ten.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown Love Letter role {0:?}")]
pub struct UnknownRole(pub String);

/// One physical card. Serialises as its id string (`"★1"`, `"A♠"`, `"Q♥"`).
///
/// Internally an index into the id table, which is ordered by value, so comparing ids
/// compares values first.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CardId(u8);

const IDS: [&str; 21] = [
    "★1", "★2", "A♠", "A♥", "A♦", "A♣", "J♠", "J♣", "2♠", "2♣", "3♠", "3♣", "4♠", "4♣", "5♠", "5♣",
    "6♠", "6♣", "7♥", "8♥", "Q♥",
];

const ROLES: [Role; 21] = [
    Role::Spy,
    Role::Spy,
    Role::Guard,
    Role::Guard,
    Role::Guard,
    Role::Guard,
    Role::Guard,
    Role::Guard,
    Role::Priest,
    Role::Priest,
    Role::Baron,
    Role::Baron,
    Role::Handmaid,
    Role::Handmaid,
    Role::Prince,
    Role::Prince,
    Role::Chancellor,
    Role::Chancellor,
    Role::King,
    Role::Countess,
    Role::Princess,
];

impl CardId {
    /// All 21 cards of the 2019 edition, in id order.
    pub const ALL: [CardId; 21] = {
        let mut all = [CardId(0); 21];
        let mut i = 0;
        while i < 21 {
            all[i] = CardId(i as u8);
            i += 1;
        }
        all
    };

    /// The card's role.
    pub fn role(self) -> Role {
        ROLES[self.0 as usize]
    }

    /// The card's value (its role's value).
    pub fn value(self) -> u8 {
        self.role().value()
    }

    /// The stable id string.
    pub fn as_str(self) -> &'static str {
        IDS[self.0 as usize]
    }

    /// The position in the id table (0..21).
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The card at `index` in the id table, if there is one.
    pub fn from_index(index: usize) -> Option<CardId> {
        (index < IDS.len()).then_some(CardId(index as u8))
    }
}

impl fmt::Debug for CardId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for CardId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A card id that is not one of the 21.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown Love Letter card id {0:?}")]
pub struct UnknownCard(pub String);

impl FromStr for CardId {
    type Err = UnknownCard;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        IDS.iter()
            .position(|id| *id == s)
            .map(|i| CardId(i as u8))
            .ok_or_else(|| UnknownCard(s.to_owned()))
    }
}

impl Serialize for CardId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for CardId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = CardId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a Love Letter card id such as \"Q♥\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<CardId, E> {
                v.parse().map_err(E::custom)
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_card_id_round_trips_through_its_string() {
        for card in CardId::ALL {
            assert_eq!(card.as_str().parse::<CardId>(), Ok(card));
            let json = serde_json::to_string(&card).unwrap();
            assert_eq!(json, format!("\"{}\"", card.as_str()));
            assert_eq!(serde_json::from_str::<CardId>(&json).unwrap(), card);
        }
    }

    #[test]
    fn unknown_card_ids_are_errors_not_panics() {
        assert!("K♠".parse::<CardId>().is_err());
        assert!(serde_json::from_str::<CardId>("\"10♦\"").is_err());
        assert!(serde_json::from_str::<CardId>("7").is_err());
    }

    #[test]
    fn roles_serialise_lowercase_and_reject_unknown_names() {
        assert_eq!(
            serde_json::to_string(&Role::Handmaid).unwrap(),
            "\"handmaid\""
        );
        assert_eq!("chancellor".parse::<Role>(), Ok(Role::Chancellor));
        assert!(serde_json::from_str::<Role>("\"jester\"").is_err());
    }

    #[test]
    fn the_2019_deck_has_the_counts_of_the_card_table() {
        let count = |role| CardId::ALL.iter().filter(|c| c.role() == role).count();
        let counts: Vec<usize> = Role::ALL.iter().map(|r| count(*r)).collect();
        assert_eq!(counts, [2, 6, 2, 2, 2, 2, 2, 1, 1, 1]);
    }

    #[test]
    fn the_classic_deck_drops_spies_chancellors_and_the_jack_of_clubs() {
        let classic = Edition::Classic.cards();
        assert_eq!(classic.len(), 16);
        assert!(
            classic
                .iter()
                .all(|c| !matches!(c.role(), Role::Spy | Role::Chancellor))
        );
        assert!(!classic.contains(&"J♣".parse().unwrap()));
        assert_eq!(
            classic.iter().filter(|c| c.role() == Role::Guard).count(),
            5
        );
    }
}
