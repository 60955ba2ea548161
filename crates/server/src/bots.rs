//! Server-side bots: strategies that choose a seat's next action.
//!
//! A bot sees exactly what its seat may know: a strategy is a function of the seat's
//! [`pb::MatchView`] (which lists the seat's legal actions) and of public identifiers, never
//! of the full game state. Its moves are played through the same path as a player's, and
//! logged as ordinary actions of its seat.
//!
//! Randomness comes from `SHA-256(match id ‖ version ‖ seat)`, never from the match seed
//! (which would let a bot's choices leak the deck), so a bot's choice is reproducible from
//! the public log.

use missive_proto::v1 as pb;
use missive_store::MatchId;
use sha2::{Digest, Sha256};

/// The strategies this server plays, by stable name (stored with every bot seat).
pub const STRATEGIES: [&str; 1] = [RANDOM];

/// Plays a uniformly random legal action.
pub const RANDOM: &str = "random";

/// The stable strategy name for a requested one; empty means [`RANDOM`].
pub fn strategy(name: &str) -> Result<&'static str, String> {
    if name.is_empty() {
        return Ok(RANDOM);
    }
    STRATEGIES.into_iter().find(|s| *s == name).ok_or_else(|| {
        format!(
            "unknown bot strategy {name:?} (known: {})",
            STRATEGIES.join(", ")
        )
    })
}

/// The player name a bot seat shows.
pub fn player_name(strategy: &str) -> String {
    format!("bot:{strategy}")
}

/// The action the bot playing `seat` chooses, from the seat's view (at `view.version`);
/// `None` when the view offers no legal action.
pub fn choose(
    strategy: &str,
    match_id: MatchId,
    seat: u8,
    view: &pb::MatchView,
) -> Option<pb::GameAction> {
    // `random` is the only strategy so far, and creation refuses names it does not know.
    debug_assert!(STRATEGIES.contains(&strategy), "{strategy}");
    random(match_id, view.version, seat, &view.legal_actions)
}

fn random(
    match_id: MatchId,
    version: u64,
    seat: u8,
    legal: &[pb::GameAction],
) -> Option<pb::GameAction> {
    if legal.is_empty() {
        return None;
    }
    let digest = Sha256::new()
        .chain_update(match_id.as_bytes())
        .chain_update(version.to_be_bytes())
        .chain_update([seat])
        .finalize();
    let mut word = [0u8; 8];
    word.copy_from_slice(&digest[..8]);
    // Multiply-shift: uniform enough over 64 random bits, and no modulo bias worth the name.
    let index = (u128::from(u64::from_be_bytes(word)) * legal.len() as u128) >> 64;
    legal.get(usize::try_from(index).ok()?).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn actions(n: usize) -> Vec<pb::GameAction> {
        (0..n)
            .map(|i| pb::GameAction {
                game: Some(pb::game_action::Game::LoveLetter(pb::LoveLetterAction {
                    action: Some(pb::love_letter_action::Action::Play(pb::LoveLetterPlay {
                        card: format!("card-{i}"),
                        ..Default::default()
                    })),
                })),
            })
            .collect()
    }

    fn view(version: u64, legal: Vec<pb::GameAction>) -> pb::MatchView {
        pb::MatchView {
            version,
            legal_actions: legal,
            ..Default::default()
        }
    }

    #[test]
    fn strategies_parse_by_name_and_empty_means_random() {
        assert_eq!(strategy(""), Ok(RANDOM));
        assert_eq!(strategy("random"), Ok(RANDOM));
        assert!(strategy("genius").unwrap_err().contains("genius"));
    }

    #[test]
    fn the_random_bot_plays_a_legal_action_and_nothing_without_one() {
        let id = MatchId::from_u128(7);
        let legal = actions(3);
        for version in 0..50 {
            let chosen = choose(RANDOM, id, 1, &view(version, legal.clone())).unwrap();
            assert!(legal.contains(&chosen));
        }
        assert_eq!(choose(RANDOM, id, 1, &view(3, Vec::new())), None);
    }

    #[test]
    fn the_random_bot_is_reproducible_and_spreads_its_choices() {
        let id = MatchId::from_u128(42);
        let legal = actions(4);
        let picks: Vec<_> = (0..400)
            .map(|version| choose(RANDOM, id, 0, &view(version, legal.clone())).unwrap())
            .collect();
        let again: Vec<_> = (0..400)
            .map(|version| choose(RANDOM, id, 0, &view(version, legal.clone())).unwrap())
            .collect();
        assert_eq!(picks, again);
        for action in &legal {
            let n = picks.iter().filter(|p| *p == action).count();
            assert!(
                (60..=140).contains(&n),
                "{n} of 400 picks for one of 4 actions"
            );
        }
    }
}
