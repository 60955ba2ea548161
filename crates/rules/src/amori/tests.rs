//! Scenario tests for the rules (being written).
