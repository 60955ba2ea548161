//! The session's rules: the base rules a vote may change, and the catalogue of custom rules a
//! hand's winner may create.
//!
//! A custom rule is a structured *trigger → effect* pair. Every effect in the catalogue only
//! *adds* something after a base event (a skip, a reversal, draws, a burn, a bonus play), so no
//! rule can prevent a base event, winning or voting. `check_rule` (in `game/session.rs`) refuses the few
//! combinations that would still contradict a base rule or never end:
//!
//! - `pile-burned → burn-pile` loops without end (each burn triggers the next);
//! - `pile-picked-up → burn-pile` or `→ bonus-play` contradicts "any pickup ends the turn";
//! - `rank-played(pass rank) → bonus-play` contradicts "a pass hands the pickup to the next
//!   player" (the bonus play would hand it back to its own player);
//! - parameters out of range, duplicates of an active rule, and (at creation) a rule the
//!   session removed: that one may only come back through a Rule Vote.
//!
//! Loops are checked as a graph: the only effect that raises a catalogue trigger by itself is
//! `burn-pile` (it raises `pile-burned`), so a cycle exists exactly when some rule maps
//! `pile-burned` to `burn-pile`; the check walks the graph anyway, so a future effect that
//! raises events is covered by adding its edge in `raised_by`.
//!
//! Free-text *table rules* are recorded and shown to everyone but never enforced; the engine
//! checks only their length.

use std::sync::{Arc, LazyLock};

use serde::{Deserialize, Serialize};

use super::cards::Rank;

/// The base rules a Rule Vote may change for the rest of the session. The vote and Roshambo
/// procedures are not parameters: they can't be changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BaseRules {
    /// Cards dealt to each hand (face-down and face-up stay at 3), and the hand size under
    /// which a player draws after their first play.
    pub hand_size: u8,
    /// The reset rank (base: 2); `None` disables it.
    pub reset: Option<Rank>,
    /// The pass rank (base: 3).
    pub pass: Option<Rank>,
    /// The play-low rank (base: 7).
    pub low: Option<Rank>,
    /// The burn rank (base: 10).
    pub burn: Option<Rank>,
}

impl Default for BaseRules {
    fn default() -> Self {
        BaseRules {
            hand_size: 3,
            reset: Some(Rank::Two),
            pass: Some(Rank::Three),
            low: Some(Rank::Seven),
            burn: Some(Rank::Ten),
        }
    }
}

/// Smallest and largest hand size a vote may set.
pub const HAND_SIZE_RANGE: std::ops::RangeInclusive<u8> = 1..=5;

impl BaseRules {
    pub fn special(&self, special: Special) -> Option<Rank> {
        match special {
            Special::Reset => self.reset,
            Special::Pass => self.pass,
            Special::Low => self.low,
            Special::Burn => self.burn,
        }
    }

    pub(crate) fn set_special(&mut self, special: Special, rank: Option<Rank>) {
        let slot = match special {
            Special::Reset => &mut self.reset,
            Special::Pass => &mut self.pass,
            Special::Low => &mut self.low,
            Special::Burn => &mut self.burn,
        };
        *slot = rank;
    }

    /// Which special role `rank` has, if any.
    pub fn role_of(&self, rank: Rank) -> Option<Special> {
        Special::ALL
            .into_iter()
            .find(|s| self.special(*s) == Some(rank))
    }
}

/// The four special roles a rank may have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Special {
    /// Playable on anything outside a 3-obligation; the next play may be of any rank.
    Reset,
    /// Discarded at once; the next player must pick up the pile or pass on with the same rank.
    Pass,
    /// The next play must be of this rank or lower.
    Low,
    /// Burns the pile; not playable on a low card.
    Burn,
}

impl Special {
    pub const ALL: [Special; 4] = [Special::Reset, Special::Pass, Special::Low, Special::Burn];
}

/// What sets a custom rule off. Every trigger is a base event that has just resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Trigger {
    /// A play of this rank resolved (including a face-down card turned and played validly).
    RankPlayed { rank: Rank },
    /// A play of at least this many cards (1 to 4) resolved.
    CardsPlayed { at_least: u8 },
    /// The pile burned, by any cause.
    PileBurned,
    /// A player picked up the pile.
    PilePickedUp,
    /// A player took their face-up cards into hand.
    FaceUpTaken,
}

/// What a custom rule adds. "The player" is the one whose action set the trigger off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Effect {
    /// The next player in turn order loses their next turn.
    NextPlayerSkips,
    /// Turn order reverses.
    ReverseDirection,
    /// The player draws this many cards (1 to 3) from the draw pile, as far as it lasts.
    PlayerDraws { count: u8 },
    /// Every other player draws one card from the draw pile, in turn order, as far as it lasts.
    OthersDrawOne,
    /// The pile burns (a custom burn rule): like any burn, it cancels a pending 3 or 7 and
    /// gives the player a bonus play. Does nothing on an empty table.
    BurnPile,
    /// The player gets one more play now (no draw). Dropped if a 3-obligation is pending,
    /// since the pass belongs to the next player.
    BonusPlay,
}

/// An enforceable custom rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RuleSpec {
    pub trigger: Trigger,
    pub effect: Effect,
}

/// What a rule says: an enforced trigger → effect, or free text the table keeps by itself. The
/// text is shared with the action that wrote it, so the rule the state keeps is not a copy.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum RuleBody {
    Enforced { spec: RuleSpec },
    Table { text: Arc<str> },
}

/// A rule's id, unique within the session, in creation order.
pub type RuleId = u16;

/// Where a rule stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuleStatus {
    Active,
    /// Removed by a Rule Vote; only a later vote may restore it.
    Removed,
    /// Cancelled by its creator; only a later vote may restore it.
    Cancelled,
}

/// A rule of this session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    pub id: RuleId,
    pub creator: u8,
    /// The hand (from 0) whose winner created it; `None` for a rule carried over from an
    /// earlier session.
    pub won_in_hand: Option<u8>,
    pub body: RuleBody,
    pub status: RuleStatus,
}

/// A change a Rule Vote may make.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Change {
    RemoveRule {
        rule: RuleId,
    },
    ModifyRule {
        rule: RuleId,
        to: RuleBody,
    },
    /// Bring back a removed or cancelled rule.
    RestoreRule {
        rule: RuleId,
    },
    SetHandSize {
        size: u8,
    },
    /// Move a special role to another rank, or switch it off (`None`).
    SetSpecial {
        special: Special,
        rank: Option<Rank>,
    },
}

impl Change {
    /// The custom rule the change concerns, if any (base-rule changes concern none).
    pub fn rule(&self) -> Option<RuleId> {
        match self {
            Change::RemoveRule { rule }
            | Change::ModifyRule { rule, .. }
            | Change::RestoreRule { rule } => Some(*rule),
            Change::SetHandSize { .. } | Change::SetSpecial { .. } => None,
        }
    }
}

/// When a passed change takes effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Timing {
    /// At once, so for this hand (the vote is held before the cards are dealt).
    Now,
    /// At the start of the next hand.
    NextHand,
}

/// Longest table rule, in characters.
pub const TABLE_RULE_MAX_CHARS: usize = 280;

/// The trigger an effect raises by itself, if any: the edges of the loop graph.
pub(crate) fn raised_by(effect: Effect) -> Option<Trigger> {
    match effect {
        Effect::BurnPile => Some(Trigger::PileBurned),
        Effect::NextPlayerSkips
        | Effect::ReverseDirection
        | Effect::PlayerDraws { .. }
        | Effect::OthersDrawOne
        | Effect::BonusPlay => None,
    }
}

/// Every enforced rule the catalogue can express, in a fixed order: what `legal_actions`
/// offers a hand's winner (before the checks against the session's rules).
pub fn catalogue() -> &'static [RuleSpec] {
    static CATALOGUE: LazyLock<Vec<RuleSpec>> = LazyLock::new(every_rule);
    &CATALOGUE
}

/// [`catalogue`], built once.
fn every_rule() -> Vec<RuleSpec> {
    let mut triggers: Vec<Trigger> = Rank::ALL
        .into_iter()
        .map(|rank| Trigger::RankPlayed { rank })
        .collect();
    triggers.extend((1..=4).map(|at_least| Trigger::CardsPlayed { at_least }));
    triggers.extend([
        Trigger::PileBurned,
        Trigger::PilePickedUp,
        Trigger::FaceUpTaken,
    ]);
    let mut effects = vec![Effect::NextPlayerSkips, Effect::ReverseDirection];
    effects.extend((1..=3).map(|count| Effect::PlayerDraws { count }));
    effects.extend([Effect::OthersDrawOne, Effect::BurnPile, Effect::BonusPlay]);
    let mut specs = Vec::new();
    for trigger in triggers {
        for effect in &effects {
            specs.push(RuleSpec {
                trigger,
                effect: *effect,
            });
        }
    }
    specs
}
