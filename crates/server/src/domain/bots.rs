//! Server-side bots: strategies that choose a seat's next action.
//!
//! A bot sees exactly what its seat may know, and the types say so: a strategy is a function
//! of the seat's view (`Game::View`, the same one a player of the seat gets), the seat's legal
//! actions and public identifiers, never of the game state. Its moves are played through the
//! same path as a player's, and logged as ordinary actions of its seat.
//!
//! Strategies: `random` plays a uniformly random legal action, in every game; `counting`
//! (Love Letter; elsewhere it plays at random) counts the cards its seat has seen and picks the
//! legal action that scores best against the unseen ones (see `games/love_letter/bot.rs`). A
//! game's strategies are its [`Strategies`] implementation, in `games/<game>/bot.rs`.
//!
//! Randomness (and the choice between equally good actions) comes from
//! `SHA-256(match id ‖ version ‖ seat)`, never from the match seed (which would let a bot's
//! choices leak the deck), so a bot's choice is reproducible from the public log.

use missive_rules::{Game, Seat};
use missive_store::MatchId;
use sha2::{Digest, Sha256};

/// The strategies this server plays, by stable name (stored with every bot seat).
pub const STRATEGIES: [&str; 2] = [RANDOM, COUNTING];

/// Plays a uniformly random legal action.
pub const RANDOM: &str = "random";

/// Love Letter: counts the cards seen and plays the best-scoring legal action.
pub const COUNTING: &str = "counting";

/// The stable strategy name for a requested one; empty means [`RANDOM`].
pub fn strategy(name: &str) -> Result<&'static str, String> {
    if name.is_empty() {
        return Ok(RANDOM);
    }
    STRATEGIES.into_iter().find(|s| *s == name).ok_or_else(|| {
        format!(
            "unknown bot strategy {} (known: {})",
            crate::limits::shown(name),
            STRATEGIES.join(", ")
        )
    })
}

/// The player name a bot seat shows.
pub fn player_name(strategy: &str) -> String {
    format!("bot:{strategy}")
}

/// A game's bot strategies beyond `random`.
pub trait Strategies: Game {
    /// Scores for `legal` under `strategy` (higher is better), one per action, from the seat's
    /// view; `None` where the game has no such strategy, which then plays at random.
    fn scores(
        strategy: &str,
        seat: Seat,
        view: &Self::View,
        legal: &[Self::Action],
    ) -> Option<Vec<f64>> {
        let _ = (strategy, seat, view, legal);
        None
    }
}

/// The action the bot playing `seat` chooses from the seat's view and legal actions at
/// `version`; `None` when there is no legal action.
pub fn choose<G: Strategies>(
    strategy: &str,
    match_id: MatchId,
    version: u64,
    seat: Seat,
    view: &G::View,
    legal: &[G::Action],
) -> Option<G::Action> {
    // Creation refuses names it does not know.
    debug_assert!(STRATEGIES.contains(&strategy), "{strategy}");
    let scores = match strategy {
        RANDOM => None,
        _ => G::scores(strategy, seat, view, legal),
    };
    let Some(scores) = scores.filter(|s| s.len() == legal.len()) else {
        return random(match_id, version, seat, legal);
    };
    // The best-scoring actions, one of them at random.
    let best = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let tied: Vec<G::Action> = legal
        .iter()
        .zip(&scores)
        .filter(|(_, score)| **score >= best - 1e-9)
        .map(|(action, _)| action.clone())
        .collect();
    random(match_id, version, seat, &tied)
}

fn random<T: Clone>(match_id: MatchId, version: u64, seat: Seat, legal: &[T]) -> Option<T> {
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
    use missive_rules::love_letter::{Action, CardId, LoveLetter};

    use super::*;

    fn actions(n: usize) -> Vec<Action> {
        CardId::ALL[..n]
            .iter()
            .map(|&card| Action::Play {
                card,
                target: None,
                guess: None,
            })
            .collect()
    }

    fn pick(
        strategy: &str,
        id: MatchId,
        version: u64,
        seat: u8,
        legal: &[Action],
    ) -> Option<Action> {
        let game =
            LoveLetter::setup(&Default::default(), 2, missive_rules::Seed([0; 32])).expect("setup");
        let view = game.view(missive_rules::Viewer::Seat(seat));
        choose::<LoveLetter>(strategy, id, version, seat, &view, legal)
    }

    #[test]
    fn strategies_parse_by_name_and_empty_means_random() {
        assert_eq!(strategy(""), Ok(RANDOM));
        assert_eq!(strategy("random"), Ok(RANDOM));
        assert_eq!(strategy("counting"), Ok(COUNTING));
        assert!(strategy("genius").unwrap_err().contains("genius"));
    }

    #[test]
    fn the_random_bot_plays_a_legal_action_and_nothing_without_one() {
        let id = MatchId::from_u128(7);
        let legal = actions(3);
        for version in 0..50 {
            let chosen = pick(RANDOM, id, version, 1, &legal).unwrap();
            assert!(legal.contains(&chosen));
        }
        assert_eq!(pick(RANDOM, id, 3, 1, &[]), None);
    }

    #[test]
    fn the_random_bot_is_reproducible_and_spreads_its_choices() {
        let id = MatchId::from_u128(42);
        let legal = actions(4);
        let picks: Vec<_> = (0..400)
            .map(|version| pick(RANDOM, id, version, 0, &legal).unwrap())
            .collect();
        let again: Vec<_> = (0..400)
            .map(|version| pick(RANDOM, id, version, 0, &legal).unwrap())
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

    #[test]
    fn a_game_without_the_strategy_plays_at_random() {
        use missive_rules::lopti::Lopti;
        let game =
            Lopti::setup(&Default::default(), 3, missive_rules::Seed([1; 32])).expect("setup");
        let seat = game.awaiting().iter().next().expect("someone is awaited");
        let view = game.view(missive_rules::Viewer::Seat(seat));
        let legal = game.legal_actions(seat);
        let id = MatchId::from_u128(9);
        for version in 0..20 {
            assert_eq!(
                choose::<Lopti>(COUNTING, id, version, seat, &view, &legal),
                choose::<Lopti>(RANDOM, id, version, seat, &view, &legal)
            );
        }
    }
}
