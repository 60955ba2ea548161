//! Amori e Intrighi's bots: no strategy of its own yet, so every strategy plays a uniformly
//! random legal action.

use missive_rules::amori::Amori;

use crate::bots::Strategies;

impl Strategies for Amori {}
