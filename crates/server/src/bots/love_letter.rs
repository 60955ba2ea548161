//! The `counting` strategy for Love Letter: it counts the cards it has seen and scores each
//! legal action by what is likely to be in the other hands.
//!
//! What it counts is only what its seat's view shows: its own hand (and a pending Chancellor
//! choice), every player's played and discarded cards, and the cards set aside face up. The rest
//! of the edition's deck is "unseen", each unseen card equally likely to be in any hand, the
//! draw pile or the set-aside card. It keeps no memory between turns (a Priest's look is not
//! remembered): every decision is a function of the current view.

use missive_proto::v1 as pb;
use missive_rules::love_letter::{CardId, Edition, Role};

/// Scores for the legal actions (higher is better), or `None` when the view is not a Love
/// Letter view the strategy understands (it then plays at random).
pub(super) fn scores(view: &pb::MatchView) -> Option<Vec<f64>> {
    let Some(pb::game_view::Game::LoveLetter(game)) = view.game.as_ref()?.game.as_ref() else {
        return None;
    };
    let seat = view.seat?;
    let edition = match pb::LoveLetterEdition::try_from(game.edition).ok()? {
        pb::LoveLetterEdition::Classic => Edition::Classic,
        _ => Edition::V2019,
    };
    let hand = cards(&game.hand)?;
    let mut seen: Vec<CardId> = hand.clone();
    seen.extend(cards(&game.chancellor_choice)?);
    seen.extend(cards(&game.face_up)?);
    for player in &game.players {
        seen.extend(cards(&player.played)?);
    }
    let unseen = Unseen::new(edition, &seen);
    view.legal_actions
        .iter()
        .map(|action| score(action, seat, &hand, &unseen))
        .collect()
}

fn cards(ids: &[String]) -> Option<Vec<CardId>> {
    ids.iter().map(|id| id.parse().ok()).collect()
}

/// How many cards of each value nobody has shown this seat.
struct Unseen {
    by_value: [u32; 10],
    total: u32,
}

impl Unseen {
    fn new(edition: Edition, seen: &[CardId]) -> Unseen {
        let mut by_value = [0u32; 10];
        for card in edition.cards() {
            by_value[usize::from(card.value())] += 1;
        }
        for card in seen {
            let n = &mut by_value[usize::from(card.value())];
            *n = n.saturating_sub(1);
        }
        Unseen {
            by_value,
            total: by_value.iter().sum(),
        }
    }

    /// The chance that a given unseen card is `role`.
    fn chance(&self, role: Role) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        f64::from(self.by_value[usize::from(role.value())]) / f64::from(self.total)
    }

    /// The chances that a given unseen card is below and above `value`.
    fn below_above(&self, value: u8) -> (f64, f64) {
        if self.total == 0 {
            return (0.0, 0.0);
        }
        let v = usize::from(value);
        let below: u32 = self.by_value[..v].iter().sum();
        let above: u32 = self.by_value[v + 1..].iter().sum();
        let total = f64::from(self.total);
        (f64::from(below) / total, f64::from(above) / total)
    }

    /// The expected value of a given unseen card.
    fn mean(&self) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        let sum: u32 = (0u32..10).map(|v| v * self.by_value[v as usize]).sum();
        f64::from(sum) / f64::from(self.total)
    }
}

fn role_of(guess: i32) -> Option<Role> {
    let value = pb::LoveLetterRole::try_from(guess).ok()? as i32 - 1;
    Role::ALL
        .into_iter()
        .find(|r| i32::from(r.value()) == value)
}

fn score(action: &pb::GameAction, seat: u32, hand: &[CardId], unseen: &Unseen) -> Option<f64> {
    let Some(pb::game_action::Game::LoveLetter(action)) = &action.game else {
        return None;
    };
    match action.action.as_ref()? {
        // Keep the strongest card; what goes back under the deck does not matter here.
        pb::love_letter_action::Action::ChancellorKeep(keep) => {
            let kept: CardId = keep.keep.parse().ok()?;
            Some(f64::from(kept.value()))
        }
        pb::love_letter_action::Action::Play(play) => {
            let played: CardId = play.card.parse().ok()?;
            // The card left in hand after this play.
            let kept = hand.iter().copied().find(|c| *c != played);
            let keep_value = kept.map_or(0, CardId::value);
            let at_other = play.target.is_some_and(|t| t != seat);
            let effect = match played.role() {
                Role::Princess => -100.0,
                Role::Guard => match (at_other, role_of(play.guess)) {
                    (true, Some(guess)) => 10.0 * unseen.chance(guess),
                    _ => 0.0,
                },
                Role::Baron if at_other => {
                    let (win, lose) = unseen.below_above(keep_value);
                    10.0 * (win - lose)
                }
                Role::Handmaid => 1.5 + if keep_value >= 6 { 1.5 } else { 0.0 },
                Role::Prince if at_other => 1.0 + 10.0 * unseen.chance(Role::Princess),
                // Discarding one's own kept card: only worth it for a weak one, fatal for the
                // Princess.
                Role::Prince => match kept.map(CardId::role) {
                    Some(Role::Princess) => -100.0,
                    _ => 1.5 - f64::from(keep_value),
                },
                Role::King if at_other => 0.5 * (unseen.mean() - f64::from(keep_value)),
                Role::Chancellor | Role::Spy | Role::Priest => 0.5,
                _ => 0.0,
            };
            // Other things equal, keep the stronger card for the end of the round.
            Some(effect + 0.1 * f64::from(keep_value))
        }
    }
}
