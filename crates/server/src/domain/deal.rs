//! When a match's cards are dealt, and from what seed.
//!
//! A match whose `created` event says `deal_at_start` (every match created since nonces exist)
//! holds no dealt state while it is open: the rules set it up only when the match starts (the
//! join that takes the last free seat, or the creation when every seat is a bot), so before the
//! start there is nothing a seat could be told. The shuffle's seed is then
//!
//! ```text
//! deal seed = SHA-256("missive deal v1" ‖ seed ‖ len(nonce_0) ‖ nonce_0 ‖ … ‖ len(nonce_{n-1}) ‖ nonce_{n-1})
//! ```
//!
//! where `seed` is the 32 bytes committed to at creation (its SHA-256 is public from then on),
//! `nonce_i` the nonce of seat `i`'s holder at the start (its join's, or its bot's in the
//! `created` event), as ASCII bytes, and `len` one byte. The operator committed to `seed` before
//! any player's nonce was known, and a player does not know `seed`: neither can choose the deal.
//!
//! Older matches (no `deal_at_start`) were dealt at creation from the committed seed itself,
//! and still replay that way.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::{ApiError, ApiResult};
use crate::events::Event;

/// The domain tag the deal seed's hash starts with.
pub const DOMAIN: &[u8] = b"missive deal v1";
/// The longest nonce, in characters (bytes: visible ASCII only).
pub const MAX_NONCE: usize = 64;

/// Whether `nonce` is 1 to [`MAX_NONCE`] visible ASCII characters (`!` to `~`).
pub fn check_nonce(nonce: &str) -> Result<(), String> {
    if nonce.is_empty() || nonce.len() > MAX_NONCE || !nonce.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(format!(
            "nonce must be 1 to {MAX_NONCE} visible ASCII characters (0x21 to 0x7E)"
        ));
    }
    Ok(())
}

/// A nonce the server draws for a seat whose holder gave none (or a bot): 32 hex digits.
pub fn random_nonce() -> ApiResult<String> {
    Ok(hex::encode(&crate::auth::random_bytes()?[..16]))
}

/// The shuffle's seed of a match dealt at the start, as the module documentation defines it.
pub fn seed(committed: &[u8; 32], nonces: &[&str]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(DOMAIN);
    hasher.update(committed);
    for nonce in nonces {
        // Checked at the edge: at most 64 bytes, so one length byte.
        hasher.update([nonce.len() as u8]);
        hasher.update(nonce.as_bytes());
    }
    hasher.finalize().into()
}

/// Whether a `created` payload marks a match dealt at the start.
pub fn deals_at_start(created: &Value) -> bool {
    matches!(Event::parse(crate::events::kinds::CREATED, created), Ok(Event::Created(c)) if c.deal_at_start)
}

/// The nonce of each seat's holder of a match not yet dealt, kept from its events.
#[derive(Debug, Clone)]
pub struct Holders {
    nonces: Vec<Option<String>>,
}

impl Holders {
    pub fn new(seats: u8) -> Self {
        Holders {
            nonces: vec![None; usize::from(seats)],
        }
    }

    /// Takes note of one event (the `seq`th) before the start: the bots of the creation, a
    /// seat's holder in a join, a seat freed by a leave. Every holder of a match dealt at the
    /// start has a nonce: one missing or malformed is corrupt data.
    pub fn note(&mut self, seq: u64, event: &Event) -> ApiResult<()> {
        let mut hold = |seat: u8, nonce: Option<&String>| {
            let nonce = nonce
                .ok_or_else(|| format!("event {seq} has no nonce"))
                .and_then(|n| check_nonce(n).map(|()| n.clone()))
                .map_err(|e| ApiError::internal(format!("event {seq}: {e}")))?;
            if let Some(slot) = self.nonces.get_mut(usize::from(seat)) {
                *slot = Some(nonce);
            }
            Ok::<_, ApiError>(())
        };
        match event {
            Event::Created(creation) => {
                for bot in &creation.bots {
                    hold(bot.seat, bot.nonce.as_ref())?;
                }
            }
            Event::Joined { seat, nonce, .. } => hold(*seat, nonce.as_ref())?,
            Event::Left { seat } => {
                if let Some(slot) = self.nonces.get_mut(usize::from(*seat)) {
                    *slot = None;
                }
            }
            Event::Action { .. } | Event::Timeout { .. } | Event::Closed { .. } => {}
        }
        Ok(())
    }

    /// Every seat's nonce, in seat order, once every seat is held: the match starts.
    pub fn all(&self) -> Option<Vec<&str>> {
        self.nonces.iter().map(Option::as_deref).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonces_are_visible_ascii_of_1_to_64() {
        assert!(check_nonce("a").is_ok());
        assert!(check_nonce(&"~".repeat(64)).is_ok());
        assert!(check_nonce("").is_err());
        assert!(check_nonce(&"x".repeat(65)).is_err());
        assert!(check_nonce("a b").is_err());
        assert!(check_nonce("é").is_err());
    }

    #[test]
    fn the_seed_is_pinned_and_depends_on_every_part() {
        let committed = [7u8; 32];
        let base = seed(&committed, &["ab", "c"]);
        // If this changes, every match dealt at the start replays differently.
        let mut hasher = Sha256::new();
        hasher.update(b"missive deal v1");
        hasher.update([7u8; 32]);
        hasher.update([2, b'a', b'b', 1, b'c']);
        assert_eq!(base, <[u8; 32]>::from(hasher.finalize()));
        // Length prefixes: moving a character between nonces changes the seed.
        assert_ne!(base, seed(&committed, &["a", "bc"]));
        assert_ne!(base, seed(&committed, &["c", "ab"]));
        assert_ne!(base, seed(&[8u8; 32], &["ab", "c"]));
    }
}
