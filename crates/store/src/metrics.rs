//! What the store records through the `metrics` facade (a no-op until the process installs a
//! recorder; the store knows nothing of how the figures are exported): the latency of every
//! operation, and the size of each group-commit batch on PostgreSQL.

use metrics::{Unit, describe_counter, describe_histogram};

/// Latency of one store operation, labelled `operation` (the [`crate::Store`] method).
pub const OPERATION_DURATION: &str = "missive_store_operation_duration_seconds";
/// Appends written by one group-commit statement (PostgreSQL).
pub const GROUP_COMMIT_BATCH: &str = "missive_store_group_commit_batch_size";
/// Statements the group commit wrote, one commit each (PostgreSQL).
pub const GROUP_COMMITS: &str = "missive_store_group_commits_total";
/// Appends those statements carried (PostgreSQL).
pub const GROUP_COMMIT_APPENDS: &str = "missive_store_group_commit_appends_total";

/// Describes the store's series to the installed recorder.
pub fn describe() {
    describe_histogram!(
        OPERATION_DURATION,
        Unit::Seconds,
        "Store operation latency, by operation."
    );
    describe_histogram!(
        GROUP_COMMIT_BATCH,
        Unit::Count,
        "Appends per group-commit statement (PostgreSQL)."
    );
    describe_counter!(
        GROUP_COMMITS,
        "Statements the store's group commit wrote, one commit each (PostgreSQL)."
    );
    describe_counter!(
        GROUP_COMMIT_APPENDS,
        "Appends those group-commit statements carried (PostgreSQL)."
    );
}

/// Records the time since `start` as one `operation`.
pub(crate) fn operation(operation: &'static str, start: std::time::Instant) {
    metrics::histogram!(OPERATION_DURATION, "operation" => operation)
        .record(start.elapsed().as_secs_f64());
}

/// Records one group-commit statement of `rows` appends.
pub(crate) fn group_commit(rows: usize) {
    metrics::counter!(GROUP_COMMITS).increment(1);
    metrics::counter!(GROUP_COMMIT_APPENDS).increment(rows as u64);
    metrics::histogram!(GROUP_COMMIT_BATCH).record(rows as f64);
}
