//! Stable ids for gentlemen, daughters, gentleman cards and event cards.
//!
//! Each id is a small index into a table of [`super::data`], serialised as a kebab-case
//! string (`"theobald"`, `"anna-maria"`, `"theobald-3"`, `"chaperone-1"`), so stored matches
//! and the API speak in names rather than table positions.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::fixed::Blank;

use super::data::{
    CARDS_PER_GENTLEMAN, DAUGHTERS, DaughterData, EVENT_KINDS, EventKindData, GENTLEMEN,
    GentlemanData, event_card_count, gentleman_card_count,
};

/// A string could not be read as an id.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} id `{text}`")]
pub struct ParseIdError {
    kind: &'static str,
    text: String,
}

fn unknown(kind: &'static str, text: &str) -> ParseIdError {
    ParseIdError {
        kind,
        text: text.to_owned(),
    }
}

/// Splits `"slug-3"` into `("slug", 3)`.
fn split_copy(text: &str) -> Option<(&str, u8)> {
    let (slug, copy) = text.rsplit_once('-')?;
    let copy: u8 = copy.parse().ok()?;
    // Reject "-03" and "+3": one id, one spelling.
    if copy.to_string() != text[slug.len() + 1..] {
        return None;
    }
    Some((slug, copy))
}

macro_rules! string_serde {
    ($ty:ty) => {
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

/// A gentleman, by his row in [`GENTLEMEN`]; written as his slug (`"theobald"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GentlemanId(u8);

impl GentlemanId {
    /// Every gentleman, in table order.
    pub fn all() -> impl Iterator<Item = GentlemanId> {
        (0..GENTLEMEN.len() as u8).map(GentlemanId)
    }

    /// His row of the edition's data.
    pub fn data(self) -> &'static GentlemanData {
        &GENTLEMEN[usize::from(self.0)]
    }

    /// Position in [`GENTLEMEN`].
    pub fn index(self) -> usize {
        usize::from(self.0)
    }

    /// His card number `copy` (1-based), if he has one.
    pub fn card(self, copy: u8) -> Option<CardId> {
        (1..=CARDS_PER_GENTLEMAN)
            .contains(&copy)
            .then(|| CardId(self.0 * CARDS_PER_GENTLEMAN + copy - 1))
    }

    /// All his cards.
    pub fn cards(self) -> impl Iterator<Item = CardId> {
        let first = self.0 * CARDS_PER_GENTLEMAN;
        (first..first + CARDS_PER_GENTLEMAN).map(CardId)
    }
}

impl fmt::Display for GentlemanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.data().slug)
    }
}

impl FromStr for GentlemanId {
    type Err = ParseIdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        GENTLEMEN
            .iter()
            .position(|g| g.slug == s)
            .map(|i| GentlemanId(i as u8))
            .ok_or_else(|| unknown("gentleman", s))
    }
}

string_serde!(GentlemanId);

/// A gentleman card; written `"theobald-3"` (the gentleman's slug and the copy, 1 to 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CardId(u8);

impl CardId {
    /// Every gentleman card in the box.
    pub fn all() -> impl Iterator<Item = CardId> {
        (0..gentleman_card_count() as u8).map(CardId)
    }

    /// Whose card this is.
    pub fn gentleman(self) -> GentlemanId {
        GentlemanId(self.0 / CARDS_PER_GENTLEMAN)
    }

    /// Which of his cards (1-based).
    pub fn copy(self) -> u8 {
        self.0 % CARDS_PER_GENTLEMAN + 1
    }

    /// Position among all gentleman cards.
    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}

impl fmt::Display for CardId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.gentleman(), self.copy())
    }
}

impl FromStr for CardId {
    type Err = ParseIdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (slug, copy) = split_copy(s).ok_or_else(|| unknown("gentleman card", s))?;
        let gentleman: GentlemanId = slug.parse().map_err(|_| unknown("gentleman card", s))?;
        gentleman
            .card(copy)
            .ok_or_else(|| unknown("gentleman card", s))
    }
}

string_serde!(CardId);

/// A daughter board, by its row in [`DAUGHTERS`]; written as her slug (`"anna-maria"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DaughterId(u8);

impl DaughterId {
    /// Every daughter board, in table order.
    pub fn all() -> impl Iterator<Item = DaughterId> {
        (0..DAUGHTERS.len() as u8).map(DaughterId)
    }

    /// Her row of the edition's data.
    pub fn data(self) -> &'static DaughterData {
        &DAUGHTERS[usize::from(self.0)]
    }
}

impl fmt::Display for DaughterId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.data().slug)
    }
}

impl FromStr for DaughterId {
    type Err = ParseIdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DAUGHTERS
            .iter()
            .position(|d| d.slug == s)
            .map(|i| DaughterId(i as u8))
            .ok_or_else(|| unknown("daughter", s))
    }
}

string_serde!(DaughterId);

/// A kind of event card, by its row in [`EVENT_KINDS`]; written as its slug (`"chaperone"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventKind(u8);

impl EventKind {
    /// Every kind, in table order.
    pub fn all() -> impl Iterator<Item = EventKind> {
        (0..EVENT_KINDS.len() as u8).map(EventKind)
    }

    /// Its row of the edition's data.
    pub fn data(self) -> &'static EventKindData {
        &EVENT_KINDS[usize::from(self.0)]
    }

    /// Index of this kind's first card among all event cards.
    fn first_card(self) -> u8 {
        EVENT_KINDS[..usize::from(self.0)]
            .iter()
            .map(|k| k.count)
            .sum()
    }

    /// Copy `copy` (1-based) of this kind, if the deck has it.
    pub fn card(self, copy: u8) -> Option<EventCardId> {
        (1..=self.data().count)
            .contains(&copy)
            .then(|| EventCardId(self.first_card() + copy - 1))
    }

    /// Every card of this kind.
    pub fn cards(self) -> impl Iterator<Item = EventCardId> {
        let first = self.first_card();
        (first..first + self.data().count).map(EventCardId)
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.data().slug)
    }
}

impl FromStr for EventKind {
    type Err = ParseIdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        EVENT_KINDS
            .iter()
            .position(|k| k.slug == s)
            .map(|i| EventKind(i as u8))
            .ok_or_else(|| unknown("event kind", s))
    }
}

string_serde!(EventKind);

/// An event card; written `"chaperone-1"` (the kind's slug and the copy).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventCardId(u8);

impl EventCardId {
    /// Every event card in the box.
    pub fn all() -> impl Iterator<Item = EventCardId> {
        (0..event_card_count() as u8).map(EventCardId)
    }

    /// Its kind.
    pub fn kind(self) -> EventKind {
        let mut first = 0u8;
        for (i, k) in EVENT_KINDS.iter().enumerate() {
            if self.0 < first + k.count {
                return EventKind(i as u8);
            }
            first += k.count;
        }
        // Ids are only made from the table, so this is not reached; the last kind is a safe
        // answer that never panics.
        EventKind(EVENT_KINDS.len() as u8 - 1)
    }

    /// Which copy of its kind (1-based).
    pub fn copy(self) -> u8 {
        let kind = self.kind();
        self.0 - kind.first_card() + 1
    }

    /// Position among all event cards.
    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}

impl fmt::Display for EventCardId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.kind(), self.copy())
    }
}

impl FromStr for EventCardId {
    type Err = ParseIdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (slug, copy) = split_copy(s).ok_or_else(|| unknown("event card", s))?;
        let kind: EventKind = slug.parse().map_err(|_| unknown("event card", s))?;
        kind.card(copy).ok_or_else(|| unknown("event card", s))
    }
}

string_serde!(EventCardId);

// The first id of each table fills the unused slots of the state's inline lists.

impl Blank for GentlemanId {
    const BLANK: Self = GentlemanId(0);
}

impl Blank for CardId {
    const BLANK: Self = CardId(0);
}

impl Blank for DaughterId {
    const BLANK: Self = DaughterId(0);
}

impl Blank for EventCardId {
    const BLANK: Self = EventCardId(0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_card_id_reads_back_from_its_string() {
        for card in CardId::all() {
            assert_eq!(card.to_string().parse::<CardId>(), Ok(card));
        }
        for card in EventCardId::all() {
            assert_eq!(card.to_string().parse::<EventCardId>(), Ok(card));
        }
        assert_eq!(EventCardId::all().count(), 46);
    }

    #[test]
    fn card_ids_are_written_with_slug_and_copy() {
        let theobald: GentlemanId = "theobald".parse().unwrap();
        assert_eq!(theobald.card(3).unwrap().to_string(), "theobald-3");
        let bertram: CardId = "bertram-von-biedenfeld-6".parse().unwrap();
        assert_eq!(bertram.gentleman().data().name, "Bertram von Biedenfeld");
        let chaperone: EventCardId = "chaperone-7".parse().unwrap();
        assert_eq!(chaperone.kind().data().slug, "chaperone");
        assert_eq!(
            serde_json::to_string(&chaperone).unwrap(),
            "\"chaperone-7\""
        );
    }

    #[test]
    fn malformed_ids_are_refused() {
        for text in [
            "theobald-0",
            "theobald-7",
            "theobald-03",
            "theobald",
            "nobody-1",
            "-1",
        ] {
            assert!(text.parse::<CardId>().is_err(), "{text}");
        }
        assert!("chaperone-8".parse::<EventCardId>().is_err());
        assert!(serde_json::from_str::<DaughterId>("\"nobody\"").is_err());
    }
}
