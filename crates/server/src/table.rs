//! A match's game side: the rules state, and the one fold of an event into it.
//!
//! [`Table::apply`] is the only place an event reaches the rules, whoever folds a log: the
//! cache (live and when it catches up), a history's replay, the audit verifier and the tests.
//! An action or a timeout is applied by the rules; in a match dealt at its start (see
//! `deal.rs`) the event that fills the last seat deals, and what the deal told each seat
//! belongs to that event; in an older match, dealt at creation, that first deal belongs to the
//! `created` event.

use std::sync::Arc;

use missive_proto::v1 as pb;
use missive_rules::{Observation, Seat};
use serde_json::Value;

use crate::deal;
use crate::error::{ApiError, ApiResult};
use crate::events::Event;
use crate::games::{AnyAction, GameKind, MatchState, NotDealt, Refusal};

/// What a table's events produced: the observations of each, with their audiences.
pub type Observations = Vec<Observation<pb::GameEvent>>;

/// Why an event does not fold.
#[derive(Debug)]
pub enum Replay {
    /// The rules refuse the action.
    Refused(Refusal),
    /// The event (or the config, or a nonce) cannot be read, or the game no longer sets up.
    Unreadable(ApiError),
}

impl From<ApiError> for Replay {
    fn from(e: ApiError) -> Self {
        Replay::Unreadable(e)
    }
}

/// A match's rules state, with what it is dealt from until it is.
#[derive(Debug)]
pub struct Table {
    game: Arc<dyn GameKind>,
    /// The game's config (the rules' JSON, as the match row holds it) and seat count.
    config: Value,
    seats: u8,
    state: Box<dyn MatchState>,
    /// Until a match dealt at its start starts: the committed seed and each seat holder's
    /// nonce. The state is [`NotDealt`] meanwhile.
    undealt: Option<Undealt>,
}

#[derive(Debug, Clone)]
struct Undealt {
    seed: [u8; 32],
    holders: deal::Holders,
}

impl Clone for Table {
    fn clone(&self) -> Self {
        Table {
            game: self.game.clone(),
            config: self.config.clone(),
            seats: self.seats,
            state: self.state.boxed_clone(),
            undealt: self.undealt.clone(),
        }
    }
}

impl Table {
    /// The table before its `created` event is folded: dealt from `seed` at once for a match
    /// dealt at creation (older matches), else waiting for its seats' holders.
    pub fn new(
        game: Arc<dyn GameKind>,
        config: Value,
        seats: u8,
        seed: [u8; 32],
        deal_at_start: bool,
    ) -> ApiResult<Table> {
        let (state, undealt) = if deal_at_start {
            let undealt = Undealt {
                seed,
                holders: deal::Holders::new(seats),
            };
            (Box::new(NotDealt) as Box<dyn MatchState>, Some(undealt))
        } else {
            (game.setup(&config, seats, seed)?, None)
        };
        Ok(Table {
            game,
            config,
            seats,
            state,
            undealt,
        })
    }

    /// A table restored from a snapshot of a dealt state.
    pub fn restored(
        game: Arc<dyn GameKind>,
        config: Value,
        seats: u8,
        state: Value,
    ) -> ApiResult<Table> {
        let state = game.restore(state)?;
        Ok(Table {
            game,
            config,
            seats,
            state,
            undealt: None,
        })
    }

    pub fn game(&self) -> &Arc<dyn GameKind> {
        &self.game
    }

    pub fn state(&self) -> &dyn MatchState {
        self.state.as_ref()
    }

    /// Whether the match is dealt (it may still be waiting for its seats otherwise).
    pub fn dealt(&self) -> bool {
        self.undealt.is_none()
    }

    /// Folds the `seq`th event of the log, returning what it told whom. A stored action the
    /// rules refuse is corrupt data, not a refusal.
    pub fn apply(&mut self, seq: u64, event: &Event) -> ApiResult<Observations> {
        self.replay(seq, event).map_err(|e| match e {
            Replay::Refused(refusal) => ApiError::internal(format!(
                "stored event {seq} refused on replay: {}",
                refusal.rule
            )),
            Replay::Unreadable(e) => e,
        })
    }

    /// [`Table::apply`], telling a refused action from an event that cannot be read (for a
    /// verifier, which must say which).
    pub fn replay(&mut self, seq: u64, event: &Event) -> Result<Observations, Replay> {
        if let Some(pending) = self.undealt.as_mut() {
            pending.holders.note(seq, event)?;
            if let Some(nonces) = pending.holders.all() {
                let seed = deal::seed(&pending.seed, &nonces);
                self.state = self.game.setup(&self.config, self.seats, seed)?;
                self.undealt = None;
                return Ok(self.state.setup_observations());
            }
        }
        match event {
            Event::Action { seat, action } | Event::Timeout { seat, action } => {
                let action = self.game.decode_action(action)?;
                self.play(*seat, &action).map_err(Replay::Refused)
            }
            // Dealt at creation: the first deal is the creation's news.
            Event::Created(_) if self.dealt() => Ok(self.state.setup_observations()),
            Event::Created(_) | Event::Joined { .. } | Event::Left { .. } => Ok(Vec::new()),
        }
    }

    /// Lets the rules apply a seat's action. On `Err` nothing changed.
    pub fn play(&mut self, seat: Seat, action: &AnyAction) -> Result<Observations, Refusal> {
        self.state.apply(seat, action)
    }

    /// The state as a snapshot stores it; `None` before the deal, when there is nothing to
    /// save.
    pub fn snapshot(&self) -> Option<ApiResult<Value>> {
        self.dealt().then(|| self.state.to_json())
    }
}
