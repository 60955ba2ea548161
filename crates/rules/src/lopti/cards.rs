//! Cards of the 52-card deck Lopti uses: ranks, suits and the stable card ids (`"10♠"`,
//! `"Q♥"`) that every log and view speaks in.
//!
//! Suits never matter to the rules; they exist so that every card is traceable from deal to
//! burn. A card serialises as its id string, a rank as its label (`"2"`..`"10"`, `"J"`, `"Q"`,
//! `"K"`, `"A"`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A rank, ordered low to high with aces high. Special ranks (reset, pass, low, burn) are a
/// matter of the session's [`BaseRules`](super::BaseRules), not of this type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rank {
    Two = 2,
    Three,
    Four,
    Five,
    Six,
    Seven,
    Eight,
    Nine,
    Ten,
    Jack,
    Queen,
    King,
    Ace,
}

impl Rank {
    /// Every rank, low to high.
    pub const ALL: [Rank; 13] = [
        Rank::Two,
        Rank::Three,
        Rank::Four,
        Rank::Five,
        Rank::Six,
        Rank::Seven,
        Rank::Eight,
        Rank::Nine,
        Rank::Ten,
        Rank::Jack,
        Rank::Queen,
        Rank::King,
        Rank::Ace,
    ];

    /// The label used in card ids and serialisation.
    pub fn label(self) -> &'static str {
        match self {
            Rank::Two => "2",
            Rank::Three => "3",
            Rank::Four => "4",
            Rank::Five => "5",
            Rank::Six => "6",
            Rank::Seven => "7",
            Rank::Eight => "8",
            Rank::Nine => "9",
            Rank::Ten => "10",
            Rank::Jack => "J",
            Rank::Queen => "Q",
            Rank::King => "K",
            Rank::Ace => "A",
        }
    }

    fn index(self) -> u8 {
        self as u8 - 2
    }

    fn from_index(i: u8) -> Rank {
        Rank::ALL[usize::from(i % 13)]
    }
}

impl fmt::Display for Rank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// A string that names no card or rank.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not a card or rank: {0:?}")]
pub struct ParseCardError(pub String);

impl FromStr for Rank {
    type Err = ParseCardError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Rank::ALL
            .into_iter()
            .find(|r| r.label() == s)
            .ok_or_else(|| ParseCardError(s.to_owned()))
    }
}

impl Serialize for Rank {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.label())
    }
}

impl<'de> Deserialize<'de> for Rank {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// A suit. It never affects the rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Suit {
    Spades,
    Hearts,
    Diamonds,
    Clubs,
}

impl Suit {
    /// Every suit, in id order.
    pub const ALL: [Suit; 4] = [Suit::Spades, Suit::Hearts, Suit::Diamonds, Suit::Clubs];

    /// The symbol used in card ids.
    pub fn symbol(self) -> char {
        match self {
            Suit::Spades => '♠',
            Suit::Hearts => '♥',
            Suit::Diamonds => '♦',
            Suit::Clubs => '♣',
        }
    }
}

/// One card, identified by rank and suit. Orders by rank, then suit.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Card(u8);

impl crate::fixed::Blank for Card {
    const BLANK: Card = Card(0);
}

impl Card {
    /// The card of this rank and suit.
    pub fn new(rank: Rank, suit: Suit) -> Card {
        Card(rank.index() * 4 + suit as u8)
    }

    pub fn rank(self) -> Rank {
        Rank::from_index(self.0 / 4)
    }

    pub fn suit(self) -> Suit {
        Suit::ALL[usize::from(self.0 % 4)]
    }

    /// The full 52-card deck, in id order (2♠ 2♥ 2♦ 2♣ 3♠ … A♣).
    pub const DECK: [Card; 52] = {
        let mut deck = [Card(0); 52];
        let mut id = 0;
        while id < 52 {
            deck[id] = Card(id as u8);
            id += 1;
        }
        deck
    };

    /// [`Card::DECK`] as a `Vec`.
    pub fn deck() -> Vec<Card> {
        Card::DECK.to_vec()
    }

    /// Parses an id such as `"10♠"`; panics on a bad id. For tests and examples.
    pub fn of(id: &str) -> Card {
        match id.parse() {
            Ok(card) => card,
            Err(e) => panic!("{e}"),
        }
    }
}

impl fmt::Display for Card {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.rank().label(), self.suit().symbol())
    }
}

impl fmt::Debug for Card {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl FromStr for Card {
    type Err = ParseCardError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || ParseCardError(s.to_owned());
        let suit_char = s.chars().last().ok_or_else(bad)?;
        let suit = Suit::ALL
            .into_iter()
            .find(|x| x.symbol() == suit_char)
            .ok_or_else(bad)?;
        let rank: Rank = s[..s.len() - suit_char.len_utf8()]
            .parse()
            .map_err(|_| bad())?;
        Ok(Card::new(rank, suit))
    }
}

impl Serialize for Card {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Card {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_card_id_round_trips_through_its_string() {
        for card in Card::deck() {
            let id = card.to_string();
            assert_eq!(id.parse::<Card>(), Ok(card));
            let json = serde_json::to_string(&card).unwrap();
            assert_eq!(json, format!("\"{id}\""));
        }
        assert_eq!(Card::new(Rank::Ten, Suit::Spades).to_string(), "10♠");
        assert_eq!(Card::new(Rank::Queen, Suit::Hearts).to_string(), "Q♥");
    }

    #[test]
    fn bad_ids_are_refused() {
        for bad in ["", "♠", "1♠", "10", "11♠", "Q♥♥", "q♥"] {
            assert!(bad.parse::<Card>().is_err(), "{bad}");
        }
    }
}
