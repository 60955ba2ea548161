//! Lopti's bots: no strategy of its own yet, so every strategy plays a uniformly random legal
//! action.

use missive_rules::lopti::Lopti;

use crate::bots::Strategies;

impl Strategies for Lopti {}
