//! Server-side bots: strategies that choose a seat's next action.
//!
//! A bot sees exactly what its seat may know: a strategy is a function of the seat's
//! [`pb::MatchView`] (which lists the seat's legal actions) and of public identifiers, never
//! of the full game state. Its moves are played through the same path as a player's, and
//! logged as ordinary actions of its seat.
//!
//! Strategies: `random` plays a uniformly random legal action, in every game; `counting`
//! (Love Letter; elsewhere it plays at random) counts the cards its seat has seen and picks the
//! legal action that scores best against the unseen ones (see `bots/love_letter.rs`).
//!
//! Randomness (and the choice between equally good actions) comes from
//! `SHA-256(match id ‖ version ‖ seat)`, never from the match seed (which would let a bot's
//! choices leak the deck), so a bot's choice is reproducible from the public log.

mod love_letter;

use missive_proto::v1 as pb;
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
    // Creation refuses names it does not know.
    debug_assert!(STRATEGIES.contains(&strategy), "{strategy}");
    let scores = match strategy {
        COUNTING => love_letter::scores(view),
        _ => None,
    };
    let Some(scores) = scores.filter(|s| s.len() == view.legal_actions.len()) else {
        return random(match_id, view.version, seat, &view.legal_actions);
    };
    // The best-scoring actions, one of them at random.
    let best = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let tied: Vec<pb::GameAction> = view
        .legal_actions
        .iter()
        .zip(&scores)
        .filter(|(_, score)| **score >= best - 1e-9)
        .map(|(action, _)| action.clone())
        .collect();
    random(match_id, view.version, seat, &tied)
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

    /// One two-seat Love Letter match of `edition` from `seed`, `strategies` by seat: the
    /// winners, and every play the counting seat made with the view it made it from.
    fn duel(
        seed: u64,
        edition: pb::LoveLetterEdition,
        strategies: [&str; 2],
    ) -> (missive_rules::SeatSet, Vec<(pb::MatchView, pb::GameAction)>) {
        let registry = crate::games::Registry::new();
        let options = pb::GameOptions {
            game: Some(pb::game_options::Game::LoveLetter(pb::LoveLetterOptions {
                edition: edition as i32,
                ..Default::default()
            })),
        };
        let (game, parsed) = registry.parse_options(&options, Some(2)).expect("options");
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&seed.to_le_bytes());
        let mut state = game.setup(&parsed.config, 2, bytes).expect("setup");
        let id = MatchId::from_u128(u128::from(seed) + 1);
        let mut plays = Vec::new();
        for version in 0..10_000 {
            if let Some(outcome) = state.outcome() {
                return (outcome.winners, plays);
            }
            let seat = state.awaiting().iter().next().expect("someone is awaited");
            let view = pb::MatchView {
                version,
                seat: Some(seat.into()),
                legal_actions: state.legal_actions(seat),
                game: Some(state.view(missive_rules::Viewer::Seat(seat))),
                ..Default::default()
            };
            let strategy = strategies[usize::from(seat)];
            let action = choose(strategy, id, seat, &view).expect("a legal action");
            assert!(view.legal_actions.contains(&action));
            let value = game.parse_action(&action).expect("parses");
            state.apply(seat, &value).expect("a listed action applies");
            if strategy == COUNTING {
                plays.push((view, action));
            }
        }
        panic!("the match did not end");
    }

    fn played_card(action: &pb::GameAction) -> Option<(&str, Option<u32>)> {
        match &action.game {
            Some(pb::game_action::Game::LoveLetter(pb::LoveLetterAction {
                action: Some(pb::love_letter_action::Action::Play(play)),
            })) => Some((play.card.as_str(), play.target)),
            _ => None,
        }
    }

    #[test]
    fn the_counting_bot_beats_the_random_bot_in_both_editions() {
        for edition in [
            pb::LoveLetterEdition::LoveLetterEdition2019,
            pb::LoveLetterEdition::Classic,
        ] {
            let (mut won, mut lost) = (0, 0);
            for seed in 0..200u64 {
                // The counting bot takes each seat in turn.
                let counting = (seed % 2) as u8;
                let mut strategies = [RANDOM; 2];
                strategies[usize::from(counting)] = COUNTING;
                let (winners, plays) = duel(seed, edition, strategies);
                if winners.contains(counting) {
                    won += 1;
                } else {
                    lost += 1;
                }
                for (view, action) in plays {
                    let Some(pb::game_view::Game::LoveLetter(game)) =
                        view.game.as_ref().and_then(|g| g.game.as_ref())
                    else {
                        panic!("a Love Letter view");
                    };
                    let holds_princess = game.hand.iter().any(|c| c.starts_with('Q'));
                    // Playing the Princess, or a Prince on oneself while holding her.
                    let fatal = |action: &pb::GameAction| {
                        played_card(action).is_some_and(|(card, target)| {
                            card.starts_with('Q')
                                || (card.starts_with('5') && target == view.seat && holds_princess)
                        })
                    };
                    assert!(
                        !fatal(&action) || view.legal_actions.iter().all(fatal),
                        "it threw the round away with a choice: {view:?}"
                    );
                }
            }
            // Measured: 189 of 200 (2019) and 185 of 200 (classic); a random bot wins half.
            assert!(won >= 160, "{edition:?}: won {won}, lost {lost} of 200");
        }
    }

    #[test]
    fn the_counting_bot_plays_at_random_where_it_does_not_count() {
        let id = MatchId::from_u128(9);
        let legal = actions(4);
        for version in 0..20 {
            let v = view(version, legal.clone());
            assert_eq!(choose(COUNTING, id, 0, &v), choose(RANDOM, id, 0, &v));
        }
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
