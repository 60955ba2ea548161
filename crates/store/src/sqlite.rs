//! The sqlite backend (being written).

use sqlx::SqlitePool;

use crate::{
    Loaded, MatchFilter, MatchId, MatchRecord, MatchUpdate, NewEvent, NewMatch, Snapshot,
    StoreError, StoreOptions, StoredEvent, Appended,
};

fn todo() -> StoreError {
    StoreError::Internal("not implemented yet".to_owned())
}

pub(crate) async fn connect(_url: &str, _options: &StoreOptions) -> Result<SqlitePool, StoreError> {
    Err(todo())
}
pub(crate) async fn create_match(_pool: &SqlitePool, _m: &NewMatch, _events: &[StoredEvent]) -> Result<(), StoreError> {
    Err(todo())
}
pub(crate) async fn get_match(_pool: &SqlitePool, _id: MatchId) -> Result<MatchRecord, StoreError> {
    Err(todo())
}
pub(crate) async fn seed(_pool: &SqlitePool, _id: MatchId) -> Result<[u8; 32], StoreError> {
    Err(todo())
}
pub(crate) async fn list_matches(_pool: &SqlitePool, _f: &MatchFilter) -> Result<Vec<MatchRecord>, StoreError> {
    Err(todo())
}
pub(crate) async fn append(_pool: &SqlitePool, _id: MatchId, _expected: u64, _events: Vec<NewEvent>, _update: &MatchUpdate) -> Result<Appended, StoreError> {
    Err(todo())
}
pub(crate) async fn read_events(_pool: &SqlitePool, _id: MatchId, _after: u64, _limit: u32) -> Result<Vec<StoredEvent>, StoreError> {
    Err(todo())
}
pub(crate) async fn load(_pool: &SqlitePool, _id: MatchId, _rules_version: u32) -> Result<Loaded, StoreError> {
    Err(todo())
}
pub(crate) async fn put_snapshot(_pool: &SqlitePool, _id: MatchId, _s: &Snapshot) -> Result<(), StoreError> {
    Err(todo())
}
