//! Scale benchmark on PostgreSQL: a million matches, then the store's reads timed through its
//! public API, with the plan of each query and the bytes on disk per event.
//!
//! `cargo bench -p missive-store --bench scale` (docs/BENCHMARKS.md, "Scale: a million
//! matches"). Options, from the environment:
//! - `DATABASE_URL`: the server, through any database on it (default
//!   `postgres://postgres@127.0.0.1:5432/postgres`); the benchmark creates its own database,
//!   `SCALE_DB` (default `missive_scale`), dropping one of that name first, and drops it at the
//!   end unless `SCALE_KEEP=1`. `SCALE_REUSE=1` measures a database kept by an earlier run of
//!   the same size instead of generating it again.
//! - `SCALE_MATCHES` (default 1,000,000; 20,000 is a quick try), `SCALE_GAMES` (distinct games
//!   played by the rules engine and reused across matches, default 400), `SCALE_SAMPLES` (timed
//!   calls per query, default 1,000), `SCALE_BUDGET_SECS` (a query whose calls take longer
//!   stops short of the samples, default 60), `SCALE_VACUUM_FULL=1` (also the sizes after
//!   `VACUUM FULL`), `SCALE_ARCHIVE=1` (then every ended match archived through
//!   `Store::archive_finished`, timed with the WAL it writes, the archives' bytes per event, and
//!   the reads of archived matches timed like those of rows).
//! - The mix: `SCALE_OPEN` open matches (default 1%), `SCALE_DEADLINES` active matches with a
//!   pending turn deadline (default 10%), and of the other matches `SCALE_ACTIVE_PERMILLE`
//!   (150) active and `SCALE_ABANDONED_PERMILLE` (600) abandoned per mille, the rest finished.
//!
//! The measurement turns `track_io_timing` on for the scratch database, so that the blocks each
//! query reads, and the time spent reading them, can be printed beside its figures.
//!
//! Every match is one the store can load and whose hash chain verifies: the rows are those the
//! store's own statements write (match row at its creation head, seats, events with request ids
//! and `request_last`, pending turns), each event's hash computed from its canonical bytes as
//! `canonical_bytes` defines them (checked against it on the first matches), and
//! `Store::verify_chain` is run on a sample. Payloads are real Love Letter games: a few hundred
//! played by the rules engine with random legal moves, reused with each match's own ids, times,
//! request ids and hashes. Matches are dealt from their committed seed (the older matches' way,
//! without `deal_at_start`), so the benchmark can fold a loaded log through the engine too.
//!
//! Rows are written with `COPY … FROM STDIN` into the migrated schema, its indexes dropped for
//! the load and built again from their own definitions (read from the catalogue) afterwards.
//! Events go in "time order": matches are played in windows of [`WINDOW`] at once, one event of
//! each in turn, so one match's events are spread over the heap as a busy server spreads them.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use chrono::{DateTime, Utc};
use missive_rules::love_letter::{Action, Config, LoveLetter};
use missive_rules::{Game, Seed};
use missive_store::{
    ChainCheck, MatchFilter, MatchId, MatchRecord, MatchStatus, NewEvent, Store, StoreOptions,
    canonical_bytes, canonical_json, statements,
};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use sqlx::{Connection, PgConnection, Row};

/// Matches played at once: each of them gets one event before any gets its next.
const WINDOW: usize = 4096;
/// The rules version of the Love Letter engine the matches are stored under.
const RULES_VERSION: u32 = 1;
/// ListMatches' default page, as the server asks for it.
const PAGE: u32 = 50;
/// The turn worker's batch (`crates/server/src/domain/turns.rs`).
const CLAIM_BATCH: u32 = 64;

#[derive(Debug, Clone)]
struct Options {
    admin_url: String,
    db: String,
    matches: usize,
    games: usize,
    samples: usize,
    /// Seconds a query's calls may take before it stops short of `samples`.
    budget_secs: u64,
    open: usize,
    deadlines: usize,
    /// Per mille of the other matches: active, abandoned; the rest are finished.
    active_permille: u32,
    abandoned_permille: u32,
    keep: bool,
    reuse: bool,
    vacuum_full: bool,
    /// After the measurements: archive every ended match, and measure again.
    archive: bool,
}

fn env_usize(name: &str, default: usize) -> Result<usize> {
    match std::env::var(name) {
        Ok(v) => v
            .replace(['_', ','], "")
            .parse()
            .with_context(|| format!("{name}={v}")),
        Err(_) => Ok(default),
    }
}

fn env_flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v == "1" || v == "true")
}

impl Options {
    fn from_env() -> Result<Options> {
        let matches = env_usize("SCALE_MATCHES", 1_000_000)?;
        Ok(Options {
            admin_url: std::env::var("DATABASE_URL")
                .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned()),
            db: std::env::var("SCALE_DB").unwrap_or_else(|_| "missive_scale".to_owned()),
            matches,
            games: env_usize("SCALE_GAMES", 400)?.max(1),
            samples: env_usize("SCALE_SAMPLES", 1_000)?.max(10),
            budget_secs: env_usize("SCALE_BUDGET_SECS", 60)? as u64,
            open: env_usize("SCALE_OPEN", (matches / 100).max(1))?,
            deadlines: env_usize("SCALE_DEADLINES", (matches / 10).max(1))?,
            active_permille: env_usize("SCALE_ACTIVE_PERMILLE", 150)? as u32,
            abandoned_permille: env_usize("SCALE_ABANDONED_PERMILLE", 600)? as u32,
            keep: env_flag("SCALE_KEEP"),
            reuse: env_flag("SCALE_REUSE"),
            vacuum_full: env_flag("SCALE_VACUUM_FULL"),
            archive: env_flag("SCALE_ARCHIVE"),
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Games: real Love Letter matches played by the rules engine.

/// One game played to its end: what its matches store.
#[derive(Debug)]
struct GameLog {
    seats: u8,
    seed: [u8; 32],
    seed_hash: [u8; 32],
    config: Value,
    /// Each action: the seat, and the canonical JSON of its event payload `{action, seat}`.
    actions: Vec<(u8, String)>,
}

fn play_games(n: usize) -> Result<Vec<GameLog>> {
    let config = Config::default();
    let config_json = serde_json::to_value(&config)?;
    let mut games = Vec::with_capacity(n);
    for g in 0..n {
        let mut rng = ChaCha8Rng::seed_from_u64(0x0005_ca1e_0000 + g as u64);
        // Two players most often, then three and four.
        let seats = match rng.next_u32() % 20 {
            0..=11 => 2,
            12..=16 => 3,
            _ => 4,
        };
        let mut seed = [0u8; 32];
        rng.fill_bytes(&mut seed);
        let mut state = LoveLetter::setup(&config, seats, Seed(seed))?;
        let mut actions = Vec::new();
        while state.outcome().is_none() {
            let seat = state
                .awaiting()
                .iter()
                .next()
                .context("a running game awaits nobody")?;
            let legal = state.legal_actions(seat);
            ensure!(!legal.is_empty(), "an awaited seat has no legal action");
            let action = legal[rng.next_u32() as usize % legal.len()].clone();
            state
                .apply(seat, &action)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            let payload = json!({"seat": seat, "action": serde_json::to_value(&action)?});
            actions.push((seat, canonical_json(&payload)));
        }
        games.push(GameLog {
            seats,
            seed,
            seed_hash: Sha256::digest(seed).into(),
            config: config_json.clone(),
            actions,
        });
    }
    Ok(games)
}

// ---------------------------------------------------------------------------------------------
// The plan: what each match is, decided before anything is written (and again, identically,
// by a run that reuses the database).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Open,
    Active,
    Finished,
    Abandoned,
}

#[derive(Debug, Clone)]
struct Plan {
    id: MatchId,
    game: u32,
    kind: Kind,
    /// Seats taken (joins stored).
    joins: u8,
    /// Game actions stored.
    actions: u32,
    /// Has a pending turn deadline.
    deadline: bool,
    /// Has a seat held for an invited player (open matches only; never listed).
    invited: bool,
    /// Events stored.
    events: u32,
}

fn match_rng(i: usize) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(0x6d61_7463_6800_0000 ^ i as u64)
}

fn random_id(rng: &mut ChaCha8Rng) -> MatchId {
    let mut b = [0u8; 16];
    rng.fill_bytes(&mut b);
    uuid::Builder::from_random_bytes(b).into_uuid()
}

fn plan(opts: &Options, games: &[GameLog]) -> Vec<Plan> {
    let mut plans = Vec::with_capacity(opts.matches);
    let open_every = (opts.matches / opts.open.max(1)).max(1);
    let mut open = 0;
    let mut deadlines = 0;
    for i in 0..opts.matches {
        let mut rng = match_rng(i);
        let id = random_id(&mut rng);
        let game_index = rng.next_u32() as usize % games.len();
        let game = &games[game_index];
        let len = game.actions.len() as u32;
        let kind = if i % open_every == 0 && open < opts.open {
            open += 1;
            Kind::Open
        } else {
            let r = rng.next_u32() % 1000;
            if r < opts.active_permille {
                Kind::Active
            } else if r < opts.active_permille + opts.abandoned_permille {
                Kind::Abandoned
            } else {
                Kind::Finished
            }
        };
        let (joins, actions) = match kind {
            Kind::Open => ((rng.next_u32() % u32::from(game.seats)) as u8, 0),
            Kind::Active => (game.seats, rng.next_u32() % len),
            Kind::Finished => (game.seats, len),
            // Left early: a few moves at most.
            Kind::Abandoned => (game.seats, rng.next_u32() % len.min(13)),
        };
        let deadline = kind == Kind::Active && deadlines < opts.deadlines;
        deadlines += usize::from(deadline);
        let invited = kind == Kind::Open && rng.next_u32().is_multiple_of(20);
        let events = 1 + u32::from(joins) + actions + u32::from(kind == Kind::Abandoned);
        plans.push(Plan {
            id,
            game: game_index as u32,
            kind,
            joins,
            actions,
            deadline,
            invited,
            events,
        });
    }
    plans
}

// ---------------------------------------------------------------------------------------------
// Rows, in COPY's text format.

/// Appends `s` escaped for COPY's text format.
fn copy_text(out: &mut Vec<u8>, s: &str) {
    for b in s.bytes() {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            _ => out.push(b),
        }
    }
}

fn copy_bytea(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(b"\\\\x");
    out.extend_from_slice(hex::encode(bytes).as_bytes());
}

fn copy_opt(out: &mut Vec<u8>, v: Option<&str>) {
    match v {
        Some(s) => copy_text(out, s),
        None => out.extend_from_slice(b"\\N"),
    }
}

fn rfc3339(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// One event of a match, before it is chained.
struct Ev {
    seq: u64,
    kind: &'static str,
    actor: Option<u8>,
    request_id: Option<String>,
    payload: String,
    at: DateTime<Utc>,
}

/// Writes the event's COPY row and returns its hash, chained from `prev`. The canonical bytes
/// are those of `canonical_bytes`, written here from the payload's canonical JSON.
fn event_row(
    out: &mut Vec<u8>,
    canon: &mut String,
    id: &str,
    ev: &Ev,
    prev: &[u8; 32],
) -> [u8; 32] {
    let at = rfc3339(ev.at);
    canon.clear();
    canon.push_str("{\"actor\":");
    match ev.actor {
        Some(a) => write!(canon, "{a}").unwrap_or_default(),
        None => canon.push_str("null"),
    }
    write!(
        canon,
        ",\"at\":\"{at}\",\"kind\":\"{}\",\"match_id\":\"{id}\",\"payload\":{},\"request_id\":",
        ev.kind, ev.payload
    )
    .unwrap_or_default();
    match &ev.request_id {
        Some(r) => write!(canon, "\"{r}\"").unwrap_or_default(),
        None => canon.push_str("null"),
    }
    write!(canon, ",\"seq\":{}}}", ev.seq).unwrap_or_default();
    let hash = missive_store::event_hash(prev, canon.as_bytes());
    // match_id, seq, kind, actor, request_id, request_last, payload, at, hash (no prev_hash: the
    // server leaves it to the row before, as here)
    out.extend_from_slice(id.as_bytes());
    write!(ByteWriter(out), "\t{}\t{}\t", ev.seq, ev.kind).unwrap_or_default();
    match ev.actor {
        Some(a) => write!(ByteWriter(out), "{a}").unwrap_or_default(),
        None => out.extend_from_slice(b"\\N"),
    }
    out.push(b'\t');
    copy_opt(out, ev.request_id.as_deref());
    out.push(b'\t');
    // Every request here is one event: its first event's request_last is its own seq.
    match &ev.request_id {
        Some(_) => write!(ByteWriter(out), "{}", ev.seq).unwrap_or_default(),
        None => out.extend_from_slice(b"\\N"),
    }
    out.push(b'\t');
    copy_text(out, &ev.payload);
    out.push(b'\t');
    out.extend_from_slice(at.as_bytes());
    out.push(b'\t');
    copy_bytea(out, &hash);
    out.push(b'\n');
    hash
}

struct ByteWriter<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for ByteWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

fn request_id(rng: &mut ChaCha8Rng) -> String {
    random_id(rng).to_string()
}

/// The events of match `i` (its own rng drawn in the same order as [`plan`] drew it).
fn match_events(
    i: usize,
    p: &Plan,
    g: &GameLog,
    created_at: DateTime<Utc>,
    rng: &mut ChaCha8Rng,
) -> Vec<Ev> {
    let mut evs = Vec::with_capacity(p.events as usize);
    let mut at = created_at;
    let mut step = |rng: &mut ChaCha8Rng| {
        // Correspondence play: seconds to a few minutes between moves.
        at += chrono::Duration::microseconds(5_000_000 + i64::from(rng.next_u32() % 240_000_000));
        at
    };
    let mut created = json!({
        "config": g.config,
        "seat_count": g.seats,
        "fixed_deck": false,
    });
    if p.deadline {
        created["turn_timeout_secs"] = json!(86_400);
    }
    evs.push(Ev {
        seq: 1,
        kind: "created",
        actor: None,
        request_id: None,
        payload: canonical_json(&created),
        at: created_at,
    });
    for seat in 0..p.joins {
        let at = step(rng);
        evs.push(Ev {
            seq: evs.len() as u64 + 1,
            kind: "joined",
            actor: Some(seat),
            request_id: Some(request_id(rng)),
            payload: canonical_json(&json!({"seat": seat, "player": player(i, seat)})),
            at,
        });
    }
    for (seat, payload) in g.actions.iter().take(p.actions as usize) {
        let at = step(rng);
        evs.push(Ev {
            seq: evs.len() as u64 + 1,
            kind: "action",
            actor: Some(*seat),
            request_id: Some(request_id(rng)),
            payload: payload.clone(),
            at,
        });
    }
    if p.kind == Kind::Abandoned {
        let seat = (rng.next_u32() % u32::from(g.seats)) as u8;
        let at = step(rng);
        evs.push(Ev {
            seq: evs.len() as u64 + 1,
            kind: "left",
            actor: Some(seat),
            request_id: Some(request_id(rng)),
            payload: canonical_json(&json!({"seat": seat})),
            at,
        });
    }
    evs
}

fn player(i: usize, seat: u8) -> String {
    format!(
        "player-{:x}",
        (i as u64).wrapping_mul(0x9e37_79b9) ^ u64::from(seat)
    )
}

/// What the generator sends to the writers: a buffer of COPY rows for one table.
enum Chunk {
    Matches(Vec<u8>),
    Seats(Vec<u8>),
    Events(Vec<u8>),
    Turns(Vec<u8>),
}

const FLUSH: usize = 4 << 20;

/// Writes every row of the plan, window by window, into `tx`. Runs on its own thread.
fn generate(
    plans: &[Plan],
    games: &[GameLog],
    now: DateTime<Utc>,
    tx: tokio::sync::mpsc::Sender<Chunk>,
) -> Result<()> {
    // Matches were created over the last 120 days, in index order.
    let span = chrono::Duration::days(120);
    let start = now - span;
    let per_match_us = span.num_microseconds().unwrap_or(0) / plans.len().max(1) as i64;
    let mut matches = Vec::with_capacity(FLUSH + 4096);
    let mut seats = Vec::with_capacity(FLUSH + 4096);
    let mut events = Vec::with_capacity(FLUSH + 65536);
    let mut turns = Vec::with_capacity(FLUSH + 4096);
    let mut canon = String::with_capacity(512);
    let send = |c: Chunk| {
        tx.blocking_send(c)
            .map_err(|_| anyhow::anyhow!("the writers stopped"))
    };
    for (w, window) in plans.chunks(WINDOW).enumerate() {
        // Each match's event rows, then interleaved one event per match in turn.
        let mut rows: Vec<Vec<Vec<u8>>> = Vec::with_capacity(window.len());
        for (k, p) in window.iter().enumerate() {
            let i = w * WINDOW + k;
            let g = &games[p.game as usize];
            let mut rng = match_rng(i);
            // Skip what plan() drew for the id and game: the rest is this match's own.
            let _ = random_id(&mut rng);
            let _ = rng.next_u32();
            rng = ChaCha8Rng::seed_from_u64(rng.next_u64());
            let created_at = start + chrono::Duration::microseconds(per_match_us * i as i64);
            let evs = match_events(i, p, g, created_at, &mut rng);
            let id = p.id.hyphenated().to_string();
            let mut prev = missive_store::GENESIS_HASH;
            let mut first_hash = prev;
            let mut match_rows = Vec::with_capacity(evs.len());
            for ev in &evs {
                let mut row = Vec::with_capacity(512);
                prev = event_row(&mut row, &mut canon, &id, ev, &prev);
                if ev.seq == 1 {
                    first_hash = prev;
                }
                match_rows.push(row);
            }
            if i < 64 {
                check_canonical(p.id, &evs)?;
            }
            rows.push(match_rows);
            let last_at = evs.last().map_or(created_at, |e| e.at);
            // The row is written again only when the status or the seats change: the last
            // join, the end, the leave.
            let updated_at = match p.kind {
                Kind::Open | Kind::Active => evs[usize::from(p.joins)].at,
                Kind::Finished | Kind::Abandoned => last_at,
            };
            let status = match p.kind {
                Kind::Open => "open",
                Kind::Active => "active",
                Kind::Finished => "finished",
                Kind::Abandoned => "abandoned",
            };
            // match_id, kind, config, rules_version, seat_count, status, seed, seed_hash,
            // turn_timeout_secs, version, last_hash, created_at, updated_at, creator
            write!(
                ByteWriter(&mut matches),
                "{id}\tlove-letter\t{}\t{RULES_VERSION}\t{}\t{status}\t",
                canonical_json(&g.config),
                g.seats
            )?;
            copy_bytea(&mut matches, &g.seed);
            matches.push(b'\t');
            copy_bytea(&mut matches, &g.seed_hash);
            matches.push(b'\t');
            matches.extend_from_slice(if p.deadline { b"86400" } else { b"\\N" });
            matches.extend_from_slice(b"\t1\t");
            copy_bytea(&mut matches, &first_hash);
            writeln!(
                ByteWriter(&mut matches),
                "\t{}\t{}\tplayer:{}",
                rfc3339(created_at),
                rfc3339(updated_at),
                player(i, 0)
            )?;
            // match_id, seat, player, token_hash, bot, account, invited
            for seat in 0..g.seats {
                let taken = seat < p.joins;
                write!(ByteWriter(&mut seats), "{id}\t{seat}\t")?;
                if taken {
                    let mut token = [0u8; 32];
                    rng.fill_bytes(&mut token);
                    seats.extend_from_slice(player(i, seat).as_bytes());
                    seats.push(b'\t');
                    copy_bytea(&mut seats, &token);
                    seats.extend_from_slice(b"\t\\N\t");
                    // Half the players play signed in, their seat bound to their account.
                    if rng.next_u32().is_multiple_of(2) {
                        write!(ByteWriter(&mut seats), "account-{}", player(i, seat))?;
                    } else {
                        seats.extend_from_slice(b"\\N");
                    }
                    seats.extend_from_slice(b"\tf\n");
                } else {
                    let invited = p.invited && seat + 1 == g.seats;
                    seats.extend_from_slice(b"\\N\t\\N\t\\N\t\\N\t");
                    seats.extend_from_slice(if invited { b"t\n" } else { b"f\n" });
                }
            }
            if p.deadline {
                // match_id, seat, version, due_at, bot, lease_until, remind_at: the seat of the
                // next move, due within the next three days, a few already overdue.
                let seat = g.actions[p.actions as usize].0;
                let due = now + chrono::Duration::seconds(i64::from(rng.next_u32() % (72 * 3600)))
                    - chrono::Duration::hours(1);
                writeln!(
                    ByteWriter(&mut turns),
                    "{id}\t{seat}\t{}\t{}\t\\N\t\\N\t\\N",
                    p.events,
                    rfc3339(due)
                )?;
            }
        }
        let longest = rows.iter().map(Vec::len).max().unwrap_or(0);
        for r in 0..longest {
            for match_rows in &rows {
                if let Some(row) = match_rows.get(r) {
                    events.extend_from_slice(row);
                }
            }
            if events.len() >= FLUSH {
                send(Chunk::Events(std::mem::replace(
                    &mut events,
                    Vec::with_capacity(FLUSH + 65536),
                )))?;
            }
        }
        if matches.len() >= FLUSH {
            send(Chunk::Matches(std::mem::take(&mut matches)))?;
            send(Chunk::Seats(std::mem::take(&mut seats)))?;
        }
        if turns.len() >= FLUSH {
            send(Chunk::Turns(std::mem::take(&mut turns)))?;
        }
    }
    send(Chunk::Matches(matches))?;
    send(Chunk::Seats(seats))?;
    send(Chunk::Events(events))?;
    send(Chunk::Turns(turns))?;
    Ok(())
}

/// The hand-written canonical bytes are the store's own.
fn check_canonical(id: MatchId, evs: &[Ev]) -> Result<()> {
    let mut prev = missive_store::GENESIS_HASH;
    let mut canon = String::new();
    let idstr = id.hyphenated().to_string();
    for ev in evs {
        let mut row = Vec::new();
        let ours = event_row(&mut row, &mut canon, &idstr, ev, &prev);
        let theirs_bytes = canonical_bytes(
            id,
            ev.seq,
            &NewEvent {
                kind: ev.kind.to_owned(),
                actor: ev.actor,
                request_id: ev.request_id.clone(),
                payload: serde_json::from_str(&ev.payload)?,
                at: ev.at,
            },
        );
        ensure!(
            canon.as_bytes() == theirs_bytes.as_slice(),
            "canonical bytes differ:\n ours   {canon}\n theirs {}",
            String::from_utf8_lossy(&theirs_bytes)
        );
        ensure!(ours == missive_store::event_hash(&prev, &theirs_bytes));
        prev = ours;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Loading: indexes off, COPY, indexes on.

const TABLES: [&str; 4] = ["matches", "seats", "events", "turns"];

/// Drops the indexes and constraints of the loaded tables (foreign keys first) and returns the
/// statements that build them again, exactly as the migrations defined them.
async fn drop_indexes(conn: &mut PgConnection) -> Result<Vec<String>> {
    let tables: Vec<String> = TABLES.iter().map(|t| (*t).to_owned()).collect();
    let constraints: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT c.conrelid::regclass::text, c.conname, pg_get_constraintdef(c.oid)
         FROM pg_constraint c
         WHERE (c.conrelid::regclass::text = ANY($1) OR c.confrelid::regclass::text = ANY($1))
           AND c.contype IN ('p', 'u', 'f')
         ORDER BY c.contype = 'f' DESC",
    )
    .bind(&tables)
    .fetch_all(&mut *conn)
    .await?;
    let indexes: Vec<(String, String)> = sqlx::query_as(
        "SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
         FROM pg_index i
         WHERE i.indrelid::regclass::text = ANY($1)
           AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)",
    )
    .bind(&tables)
    .fetch_all(&mut *conn)
    .await?;
    let mut rebuild = Vec::new();
    for (table, name, _) in &constraints {
        sqlx::raw_sql(&format!("ALTER TABLE {table} DROP CONSTRAINT {name}"))
            .execute(&mut *conn)
            .await?;
    }
    // Primary keys and unique constraints first, then the foreign keys that need them.
    for (table, name, def) in constraints.iter().rev() {
        rebuild.push(format!("ALTER TABLE {table} ADD CONSTRAINT {name} {def}"));
    }
    for (name, def) in indexes {
        sqlx::raw_sql(&format!("DROP INDEX {name}"))
            .execute(&mut *conn)
            .await?;
        rebuild.push(def);
    }
    Ok(rebuild)
}

async fn load(url: &str, plans: &[Plan], games: &[GameLog]) -> Result<()> {
    let mut admin = PgConnection::connect(url).await?;
    let rebuild = drop_indexes(&mut admin).await?;
    let mut conns = Vec::new();
    for _ in 0..TABLES.len() {
        conns.push(PgConnection::connect(url).await?);
    }
    let [cm, cs, ce, ct] = &mut conns[..] else {
        bail!("four connections");
    };
    let mut m = cm
        .copy_in_raw(
            "COPY matches (match_id, kind, config, rules_version, seat_count, status, seed, \
             seed_hash, turn_timeout_secs, version, last_hash, created_at, updated_at, creator) \
             FROM STDIN",
        )
        .await?;
    let mut s = cs
        .copy_in_raw(
            "COPY seats (match_id, seat, player, token_hash, bot, account, invited) FROM STDIN",
        )
        .await?;
    let mut e = ce
        .copy_in_raw(
            "COPY events (match_id, seq, kind, actor, request_id, request_last, payload, at, \
             hash) FROM STDIN",
        )
        .await?;
    let mut t = ct
        .copy_in_raw(
            "COPY turns (match_id, seat, version, due_at, bot, lease_until, remind_at) FROM STDIN",
        )
        .await?;
    let (tx, mut rx) = tokio::sync::mpsc::channel(8);
    let started = Instant::now();
    let now = Utc::now();
    let generator = {
        let plans = plans.to_vec();
        // The games are re-played (deterministically) on the generator's thread.
        let n = games.len();
        std::thread::spawn(move || -> Result<()> {
            let games = play_games(n)?;
            generate(&plans, &games, now, tx)
        })
    };
    let mut bytes = 0usize;
    while let Some(chunk) = rx.recv().await {
        let (sink, b) = match chunk {
            Chunk::Matches(b) => (&mut m, b),
            Chunk::Seats(b) => (&mut s, b),
            Chunk::Events(b) => (&mut e, b),
            Chunk::Turns(b) => (&mut t, b),
        };
        bytes += b.len();
        sink.send(b).await?;
    }
    generator
        .join()
        .map_err(|_| anyhow::anyhow!("the generator panicked"))??;
    let rows = [
        m.finish().await?,
        s.finish().await?,
        e.finish().await?,
        t.finish().await?,
    ];
    let copied = started.elapsed();
    println!(
        "COPY: {} matches, {} seats, {} events, {} pending turns, {:.1} GB of COPY text in {:.0} s \
         ({:.0} events/s, {:.0} matches/s)",
        rows[0],
        rows[1],
        rows[2],
        rows[3],
        bytes as f64 / 1e9,
        copied.as_secs_f64(),
        rows[2] as f64 / copied.as_secs_f64(),
        rows[0] as f64 / copied.as_secs_f64(),
    );
    let started = Instant::now();
    sqlx::raw_sql("SET maintenance_work_mem = '1GB'")
        .execute(&mut admin)
        .await?;
    for stmt in &rebuild {
        let t0 = Instant::now();
        sqlx::raw_sql(stmt).execute(&mut admin).await?;
        println!("  {:.1} s  {stmt}", t0.elapsed().as_secs_f64());
    }
    println!(
        "indexes and constraints built in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    let started = Instant::now();
    sqlx::raw_sql("VACUUM (ANALYZE) matches, seats, events, turns, snapshots")
        .execute(&mut admin)
        .await?;
    println!(
        "VACUUM (ANALYZE) in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Measurements.

/// The calls of one query: up to `warm` untimed ones (for at most a tenth of the budget), then
/// timed ones until `samples`, or until the budget is spent (at least 20 timed).
struct Pace {
    started: Instant,
    budget: Duration,
    warm: usize,
    samples: usize,
    calls: usize,
    timed: usize,
}

impl Pace {
    /// The options' pace: `SCALE_SAMPLES` timed calls after a tenth as many untimed ones, within
    /// `SCALE_BUDGET_SECS`.
    fn of(opts: &Options) -> Pace {
        let samples = opts.samples;
        Pace::new(
            Duration::from_secs(opts.budget_secs),
            (samples / 10).max(10),
            samples,
        )
    }

    fn new(budget: Duration, warm: usize, samples: usize) -> Pace {
        Pace {
            started: Instant::now(),
            budget,
            warm,
            samples,
            calls: 0,
            timed: 0,
        }
    }

    /// This pace with at most `calls` untimed calls first (at least one).
    fn warm_at_most(self, calls: usize) -> Pace {
        Pace {
            warm: self.warm.min(calls.max(1)),
            ..self
        }
    }

    /// `Some(true)` for a timed call, `Some(false)` for a warm-up call, `None` when done.
    fn step(&mut self) -> Option<bool> {
        let elapsed = self.started.elapsed();
        let timed = self.calls >= self.warm || elapsed >= self.budget / 10;
        if timed && (self.timed >= self.samples || (elapsed > self.budget && self.timed >= 20)) {
            return None;
        }
        self.calls += 1;
        self.timed += usize::from(timed);
        Some(timed)
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64) * p).ceil() as usize;
    sorted[i.saturating_sub(1).min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

struct Figure {
    what: String,
    calls: usize,
    p50: Duration,
    p99: Duration,
    max: Duration,
    target: Option<f64>,
    note: String,
}

fn figure(what: &str, mut times: Vec<Duration>, target: Option<f64>, note: String) -> Figure {
    times.sort();
    Figure {
        what: what.to_owned(),
        calls: times.len(),
        p50: percentile(&times, 0.50),
        p99: percentile(&times, 0.99),
        max: *times.last().unwrap_or(&Duration::ZERO),
        target,
        note,
    }
}

/// The database's block counters: hits in shared buffers, blocks read from outside them (the
/// OS cache or the disk), and the milliseconds spent reading (`track_io_timing`).
async fn io(url: &str) -> Result<(i64, i64, f64)> {
    // Idle backends report their counters within 10 s (PostgreSQL 15).
    tokio::time::sleep(Duration::from_secs(11)).await;
    let mut conn = PgConnection::connect(url).await?;
    Ok(sqlx::query_as(
        "SELECT blks_hit, blks_read, blk_read_time FROM pg_stat_database
         WHERE datname = current_database()",
    )
    .fetch_one(&mut conn)
    .await?)
}

/// The blocks a phase's calls hit and read, per call.
async fn io_note(url: &str, before: (i64, i64, f64), calls: usize) -> Result<String> {
    let after = io(url).await?;
    let calls = calls.max(1) as f64;
    Ok(format!(
        "; per call {:.0} buffer hits, {:.1} blocks read ({:.3} ms reading)",
        (after.0 - before.0) as f64 / calls,
        (after.1 - before.1) as f64 / calls,
        (after.2 - before.2) / calls
    ))
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

async fn measure(opts: &Options, url: &str, plans: &[Plan], games: &[GameLog]) -> Result<()> {
    // Read times in pg_stat_database, for the store's connections too.
    sqlx::raw_sql(
        "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET track_io_timing = on', \
         current_database()); END $$",
    )
    .execute(&mut PgConnection::connect(url).await?)
    .await?;
    let store = Store::connect(url, StoreOptions::default()).await?;
    let mut rng = ChaCha8Rng::seed_from_u64(0xbe_7c4);
    let n = plans.len();
    let pick = |rng: &mut ChaCha8Rng, f: &dyn Fn(&Plan) -> bool| pick_plan(rng, plans, f);

    // Spot-check: the store loads these and their chains verify.
    for k in 0..20 {
        let i = if k == 0 {
            0
        } else {
            rng.next_u64() as usize % n
        };
        let p = &plans[i];
        match store.verify_chain(p.id).await? {
            ChainCheck::Valid { events } if events == u64::from(p.events) => {}
            other => bail!("match {i} ({}): {other:?}", p.id),
        }
    }
    println!("verify_chain: 20 sampled matches valid");

    let samples = opts.samples;
    let warm = (samples / 10).max(10);
    let mut figures = Vec::new();
    println!("load average before the timed calls: {}", loadavg());

    // ListMatches: open matches, first page and a later page.
    let mut open: Vec<MatchId> = plans
        .iter()
        .filter(|p| p.kind == Kind::Open && !p.invited)
        .map(|p| p.id)
        .collect();
    open.sort();
    let list = |after: Option<MatchId>| MatchFilter {
        status: Some(MatchStatus::Open),
        kind: None,
        limit: PAGE,
        after,
    };
    let io0 = io(url).await?;
    let mut pace = Pace::of(opts);
    let first = (PAGE as usize).min(open.len());
    let times = time_lists(&store, &mut pace, || {
        (list(None), move |page: &[MatchRecord]| page.len() == first)
    })
    .await?;
    figures.push(figure(
        "list_matches, open, first page (50)",
        times,
        Some(10.0),
        format!(
            "{} open matches listed{}",
            open.len(),
            io_note(url, io0, pace.calls).await?
        ),
    ));
    let io0 = io(url).await?;
    let mut pace = Pace::of(opts);
    let times = time_lists(&store, &mut pace, || {
        let at = rng.next_u64() as usize % open.len().saturating_sub(PAGE as usize).max(1);
        let next = open.get(at + 1).copied();
        (list(Some(open[at])), move |page: &[MatchRecord]| {
            page.first().map(|r| r.id) == next
        })
    })
    .await?;
    figures.push(figure(
        "list_matches, open, a later page (cursor)",
        times,
        Some(10.0),
        format!(
            "cursor: a random open match{}",
            io_note(url, io0, pace.calls).await?
        ),
    ));
    // Without a status, as a client that sends no filter lists.
    let io0 = io(url).await?;
    let mut pace = Pace::of(opts);
    let times = time_lists(&store, &mut pace, || {
        let cursor = plans[rng.next_u64() as usize % plans.len()].id;
        let filter = MatchFilter {
            limit: PAGE,
            after: Some(cursor),
            ..MatchFilter::default()
        };
        (filter, move |page: &[MatchRecord]| {
            page.iter().all(|r| r.id > cursor)
        })
    })
    .await?;
    figures.push(figure(
        "list_matches, every status, a later page (cursor)",
        times,
        None,
        format!(
            "cursor: a random match{}",
            io_note(url, io0, pace.calls).await?
        ),
    ));

    // Load of a random match, then its fold through the rules engine.
    let io0 = io(url).await?;
    let mut pace = Pace::of(opts);
    let (times, folds, events) = time_loads(&store, plans, games, &mut pace, || {
        pick(&mut rng, &|_| true)
    })
    .await?;
    let mean = events as f64 / pace.timed as f64;
    let note = io_note(url, io0, pace.calls).await?;
    figures.push(figure(
        "load, a random match",
        times,
        Some(5.0),
        format!("{mean:.1} events on average{note}"),
    ));
    figures.push(figure(
        "  its fold through the rules engine",
        folds,
        None,
        "setup + replay of every action".to_owned(),
    ));

    // GetHistory of a finished match of 60 events or more.
    let long = |p: &Plan| p.kind == Kind::Finished && (60..=80).contains(&p.events);
    ensure!(
        plans.iter().any(long),
        "no finished match of 60 to 80 events"
    );
    let io0 = io(url).await?;
    let mut pace = Pace::of(opts);
    let (times, events) =
        time_reads(&store, plans, &mut pace, || pick(&mut rng, &long), |_| 0).await?;
    let mean = events as f64 / pace.timed as f64;
    figures.push(figure(
        "read_events, a finished match of 60-80 events",
        times,
        Some(10.0),
        format!(
            "{mean:.1} events on average{}",
            io_note(url, io0, pace.calls).await?
        ),
    ));

    // Claims as the turn worker makes them, each followed (untimed) by what playing the
    // claimed turns does to their rows: the append that plays a turn rewrites its match's
    // pending turn, here the next seat's deadline a day later, lease cleared. Claim k runs at
    // the time the (64 (k + 1))th deadline falls due (an hour after the generation at the
    // earliest, when about 1.4% are overdue), so every claim finds a full batch.
    let pool = sqlx::PgPool::connect(url).await?;
    let dues: Vec<(DateTime<Utc>,)> = sqlx::query_as("SELECT due_at FROM turns ORDER BY due_at")
        .fetch_all(&pool)
        .await?;
    ensure!(!dues.is_empty(), "no pending turns");
    let base = dues[0].0 + chrono::Duration::hours(1);
    let (overdue,): (i64,) = sqlx::query_as("SELECT count(*) FROM turns WHERE due_at <= $1")
        .bind(base)
        .fetch_one(&pool)
        .await?;
    // The claims start on a vacuumed table; each played turn then leaves a dead entry at the
    // front of turns_due until the next vacuum (autovacuum's default threshold on 100,000 rows
    // is 20,050 dead rows: about 300 claims of 64).
    sqlx::raw_sql("VACUUM (ANALYZE) turns")
        .execute(&pool)
        .await?;
    let mut times = Vec::new();
    let mut last_claim = base;
    let io0 = io(url).await?;
    // A small run has deadlines for few claims: at most a quarter of them warm up.
    let claims = dues.len() / CLAIM_BATCH as usize;
    let mut pace = Pace::of(opts).warm_at_most(claims / 4);
    while let Some(timed) = pace.step() {
        // Small runs have too few deadlines for every claim to find a full batch of fresh ones.
        let at = CLAIM_BATCH as usize * pace.calls;
        if at >= dues.len() {
            break;
        }
        let now = dues[at].0.max(base);
        last_claim = now;
        let t0 = Instant::now();
        let claimed = store
            .claim_turns(now, now + chrono::Duration::seconds(30), CLAIM_BATCH)
            .await?;
        if timed {
            times.push(t0.elapsed());
        }
        ensure!(
            claimed.len() == CLAIM_BATCH as usize,
            "a claim found {}",
            claimed.len()
        );
        let ids: Vec<String> = claimed.iter().map(|t| t.match_id.to_string()).collect();
        let seats: Vec<i16> = claimed.iter().map(|t| i16::from(t.seat)).collect();
        sqlx::query(
            "UPDATE turns SET version = version + 1, due_at = $3, lease_until = NULL
             FROM UNNEST($1::uuid[], $2::smallint[]) AS c(match_id, seat)
             WHERE turns.match_id = c.match_id AND turns.seat = c.seat",
        )
        .bind(&ids)
        .bind(&seats)
        .bind(now + chrono::Duration::hours(24))
        .execute(&pool)
        .await?;
    }
    let (pending,): (i64,) = sqlx::query_as("SELECT count(*) FROM turns")
        .fetch_one(&pool)
        .await?;
    ensure!(!times.is_empty(), "too few pending turns to time a claim");
    let first = times.len().min(200);
    figures.push(figure(
        "claim_turns, the first 200 claims after VACUUM",
        times[..first].to_vec(),
        Some(5.0),
        format!("up to {} dead entries in turns_due", 64 * (warm + first)),
    ));
    figures.push(figure(
        "claim_turns (batch of 64), all",
        times,
        Some(5.0),
        format!(
            "{pending} pending, {overdue} overdue at the first claim; each claim leased 64{}",
            io_note(url, io0, pace.calls).await?
        ),
    ));
    println!("load average after the timed calls: {}", loadavg());

    println!();
    println!(
        "up to {samples} timed calls each (after up to {warm} untimed), at most {} s per query, \
         one caller, through the store's pool",
        opts.budget_secs
    );
    println!();
    print_figures(&figures);

    explain(url, plans, &open, last_claim).await?;
    sizes(url, opts.vacuum_full).await?;
    if opts.archive {
        archive(opts, url, plans, games).await?;
        pack(opts, url, plans, games).await?;
    }
    Ok(())
}

/// Every live (open or active) match packed as the server's archiver does it (one sweep,
/// [`ARCHIVERS`] sweepers over halves of the id space), timed, with the WAL it wrote; the bytes
/// per live event, rows and blocks together; then the reads of packed matches timed as above.
async fn pack(opts: &Options, url: &str, plans: &[Plan], games: &[GameLog]) -> Result<()> {
    let store = Store::connect(url, StoreOptions::default()).await?;
    let mut conn = PgConnection::connect(url).await?;
    let live = |p: &Plan| matches!(p.kind, Kind::Open | Kind::Active);
    let events: u64 = plans
        .iter()
        .filter(|p| live(p))
        .map(|p| u64::from(p.events))
        .sum();
    let (lsn,): (String,) = sqlx::query_as("SELECT pg_current_wal_lsn()::text")
        .fetch_one(&mut conn)
        .await?;
    println!("## Packing every live match");
    println!();
    println!("load average before: {}", loadavg());
    let t0 = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    let halves = [None, Some(uuid::Uuid::from_u128(1 << 127))];
    for (i, from) in halves.into_iter().enumerate() {
        let store = store.clone();
        tasks.spawn(async move {
            let (mut packed, mut after) = (0usize, from);
            loop {
                let sweep = store.pack_live(after, 256).await?;
                packed += sweep.packed as usize;
                after = sweep.last;
                let past_half = i == 0 && after.is_some_and(|a| a.as_u128() >= 1 << 127);
                if sweep.looked_at < 256 || past_half {
                    return anyhow::Ok(packed);
                }
            }
        });
    }
    let mut packed = 0;
    while let Some(done) = tasks.join_next().await {
        packed += done??;
    }
    let took = t0.elapsed().as_secs_f64();
    let (wal,): (f64,) =
        sqlx::query_as("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::float8")
            .bind(&lsn)
            .fetch_one(&mut conn)
            .await?;
    let (blocks, in_blocks): (i64, i64) = sqlx::query_as(
        "SELECT count(*), COALESCE(sum(last_seq - first_seq + 1), 0)::bigint FROM event_blocks",
    )
    .fetch_one(&mut conn)
    .await?;
    println!(
        "packed {packed} of {} live matches in {took:.0} s: {blocks} blocks of {in_blocks} \
         events ({:.1} per block); WAL {:.1} MB, {:.0} bytes per packed event; load average \
         after: {}",
        plans.iter().filter(|p| live(p)).count(),
        in_blocks as f64 / blocks.max(1) as f64,
        wal / 1e6,
        wal / in_blocks.max(1) as f64,
        loadavg()
    );
    println!();
    let vacuum = if opts.vacuum_full {
        "VACUUM (FULL, ANALYZE) event_blocks, events"
    } else {
        "VACUUM (ANALYZE) event_blocks, events"
    };
    sqlx::raw_sql(vacuum).execute(&mut conn).await?;
    let (rows,): (i64,) = sqlx::query_as("SELECT count(*) FROM events")
        .fetch_one(&mut conn)
        .await?;
    println!(
        "after {vacuum}: {rows} event rows and {in_blocks} packed events, of {events} live events"
    );
    println!();
    println!("| relation | size | bytes per live event |");
    println!("|---|--:|--:|");
    let mut total = 0;
    for table in ["events", "event_blocks"] {
        for (what, bytes) in relation_bytes(&mut conn, table).await? {
            if what.starts_with("total") {
                total += bytes;
            }
            println!(
                "| {table}: {what} | {:.1} MB | {:.1} |",
                bytes as f64 / 1e6,
                bytes as f64 / events as f64
            );
        }
    }
    println!(
        "| **every live match's events, rows and blocks** | {:.1} MB | **{:.1}** |",
        total as f64 / 1e6,
        total as f64 / events as f64
    );
    println!();

    // The reads of live matches, now partly packed, as above.
    let mut rng = ChaCha8Rng::seed_from_u64(0x9ac4);
    let pick = |rng: &mut ChaCha8Rng, f: &dyn Fn(&Plan) -> bool| pick_plan(rng, plans, f);
    let mut figures = Vec::new();
    let long = |p: &Plan| p.kind == Kind::Active && p.events >= 40;
    let mut pace = Pace::of(opts);
    let (times, _) = time_reads(&store, plans, &mut pace, || pick(&mut rng, &long), |_| 0).await?;
    figures.push(figure(
        "read_events, a packed active match of 40 events or more, whole",
        times,
        Some(10.0),
        "its blocks unpacked, then its rows".to_owned(),
    ));
    let mut pace = Pace::of(opts);
    let last_two = |p: &Plan| u64::from(p.events) - 2;
    let (times, _) =
        time_reads(&store, plans, &mut pace, || pick(&mut rng, &long), last_two).await?;
    figures.push(figure(
        "read_events, the last two events of such a match",
        times,
        None,
        "rows only, as a client catching up reads".to_owned(),
    ));
    let mut pace = Pace::of(opts);
    let (times, folds, _) =
        time_loads(&store, plans, games, &mut pace, || pick(&mut rng, &long)).await?;
    figures.push(figure(
        "load, a packed active match of 40 events or more",
        times,
        Some(5.0),
        "no snapshot: every block unpacked".to_owned(),
    ));
    figures.push(figure(
        "  its fold through the rules engine",
        folds,
        None,
        "setup + replay of every action".to_owned(),
    ));
    verify_sample(&store, plans, &mut rng, "packed", &long).await?;
    print_figures(&figures);
    Ok(())
}

/// A random plan's index, among those `f` accepts.
fn pick_plan(rng: &mut ChaCha8Rng, plans: &[Plan], f: &dyn Fn(&Plan) -> bool) -> usize {
    loop {
        let i = rng.next_u64() as usize % plans.len();
        if f(&plans[i]) {
            return i;
        }
    }
}

/// Verifies the chains of 20 random matches among those `f` accepts: each must hold its
/// plan's events.
async fn verify_sample(
    store: &Store,
    plans: &[Plan],
    rng: &mut ChaCha8Rng,
    what: &str,
    f: &dyn Fn(&Plan) -> bool,
) -> Result<()> {
    for k in 0..20 {
        let p = &plans[pick_plan(rng, plans, f)];
        match store.verify_chain(p.id).await? {
            ChainCheck::Valid { events } if events == u64::from(p.events) => {}
            other => bail!("{what} match {k} ({}): {other:?}", p.id),
        }
    }
    println!("verify_chain: 20 sampled {what} matches valid");
    println!();
    Ok(())
}

fn print_figures(figures: &[Figure]) {
    println!("| query | calls | p50 ms | p99 ms | max ms | target p99 | | |");
    println!("|---|--:|--:|--:|--:|--:|---|---|");
    for f in figures {
        let (target, verdict) = match f.target {
            Some(t) if f.p99.as_secs_f64() * 1e3 <= t => (format!("≤ {t} ms"), "met"),
            Some(t) => (format!("≤ {t} ms"), "**not met**"),
            None => (String::new(), ""),
        };
        println!(
            "| {} | {} | {} | {} | {} | {target} | {verdict} | {} |",
            f.what,
            f.calls,
            ms(f.p50),
            ms(f.p99),
            ms(f.max),
            f.note
        );
    }
    println!();
}

/// Archivers at once, as replicas run them.
const ARCHIVERS: usize = 2;

/// Every ended match archived as the server's archiver does it (batches of 64, [`ARCHIVERS`]
/// at once), timed, with the WAL it wrote; the bytes per archived event; then GetHistory and
/// load of archived matches timed as above.
async fn archive(opts: &Options, url: &str, plans: &[Plan], games: &[GameLog]) -> Result<()> {
    let store = Store::connect(url, StoreOptions::default()).await?;
    let mut conn = PgConnection::connect(url).await?;
    let ended = |p: &Plan| matches!(p.kind, Kind::Finished | Kind::Abandoned);
    let matches = plans.iter().filter(|p| ended(p)).count();
    let events: u64 = plans
        .iter()
        .filter(|p| ended(p))
        .map(|p| u64::from(p.events))
        .sum();
    let (lsn,): (String,) = sqlx::query_as("SELECT pg_current_wal_lsn()::text")
        .fetch_one(&mut conn)
        .await?;
    println!("## Archiving every ended match");
    println!();
    println!("load average before: {}", loadavg());
    let cutoff = Utc::now() + chrono::Duration::days(3650);
    let t0 = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..ARCHIVERS {
        let store = store.clone();
        tasks.spawn(async move {
            let mut archived = 0usize;
            loop {
                let n = store.archive_finished(cutoff, CLAIM_BATCH).await?;
                archived += n as usize;
                if n == 0 {
                    return anyhow::Ok(archived);
                }
            }
        });
    }
    let mut archived = 0;
    while let Some(done) = tasks.join_next().await {
        archived += done??;
    }
    let took = t0.elapsed().as_secs_f64();
    ensure!(
        archived == matches,
        "archived {archived} of {matches} ended matches"
    );
    let (wal,): (f64,) =
        sqlx::query_as("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::float8")
            .bind(&lsn)
            .fetch_one(&mut conn)
            .await?;
    println!(
        "archived {archived} ended matches ({events} events) in {took:.0} s by {ARCHIVERS} \
         archivers: {:.0} matches/s, {:.0} events/s; WAL {:.1} MB, {:.0} bytes per archived \
         event; load average after: {}",
        archived as f64 / took,
        events as f64 / took,
        wal / 1e6,
        wal / events as f64,
        loadavg()
    );
    sqlx::raw_sql("VACUUM (ANALYZE) archives, events, matches")
        .execute(&mut conn)
        .await?;
    let (bodies, body_bytes): (i64, i64) =
        sqlx::query_as("SELECT count(*), COALESCE(sum(length(body)), 0)::bigint FROM archives")
            .fetch_one(&mut conn)
            .await?;
    println!();
    println!("| relation | size | bytes per archived event |");
    println!("|---|--:|--:|");
    for (what, bytes) in relation_bytes(&mut conn, "archives").await? {
        println!(
            "| archives: {what} | {:.1} MB | {:.1} |",
            bytes as f64 / 1e6,
            bytes as f64 / events as f64
        );
    }
    println!(
        "| (the compressed bodies alone: {bodies} of {:.0} bytes on average) | {:.1} MB | {:.1} |",
        body_bytes as f64 / bodies.max(1) as f64,
        body_bytes as f64 / 1e6,
        body_bytes as f64 / events as f64
    );
    println!();
    sizes(url, opts.vacuum_full).await?;

    // The reads of archived matches, as above.
    let mut rng = ChaCha8Rng::seed_from_u64(0xa7c4);
    let pick = |rng: &mut ChaCha8Rng, f: &dyn Fn(&Plan) -> bool| pick_plan(rng, plans, f);
    let mut figures = Vec::new();
    let long = |p: &Plan| p.kind == Kind::Finished && (60..=80).contains(&p.events);
    let mut pace = Pace::of(opts);
    let (times, _) = time_reads(&store, plans, &mut pace, || pick(&mut rng, &long), |_| 0).await?;
    figures.push(figure(
        "read_events, an archived finished match of 60-80 events",
        times,
        Some(10.0),
        "unpacked and its chain recomputed on every call".to_owned(),
    ));
    let mut pace = Pace::of(opts);
    let (times, folds, _) =
        time_loads(&store, plans, games, &mut pace, || pick(&mut rng, &ended)).await?;
    figures.push(figure(
        "load, a random archived match",
        times,
        Some(5.0),
        "finished or abandoned".to_owned(),
    ));
    figures.push(figure(
        "  its fold through the rules engine",
        folds,
        None,
        "setup + replay of every action".to_owned(),
    ));
    verify_sample(&store, plans, &mut rng, "archived", &ended).await?;
    print_figures(&figures);
    Ok(())
}

/// Listings of the filters `next` gives, each answer checked by the check that comes with its
/// filter, for as long as `pace` says: the timed listings' times.
async fn time_lists<C: FnOnce(&[MatchRecord]) -> bool>(
    store: &Store,
    pace: &mut Pace,
    mut next: impl FnMut() -> (MatchFilter, C),
) -> Result<Vec<Duration>> {
    let mut times = Vec::new();
    while let Some(timed) = pace.step() {
        let (filter, check) = next();
        let t0 = Instant::now();
        let page = store.list_matches(&filter).await?;
        let took = t0.elapsed();
        ensure!(check(&page), "unexpected page for {filter:?}");
        if timed {
            times.push(took);
        }
    }
    Ok(times)
}

/// Reads of the matches `pick` names from the seq `from` gives, each checked to hold every
/// event after it, for as long as `pace` says: the timed reads' times and the events they read.
async fn time_reads(
    store: &Store,
    plans: &[Plan],
    pace: &mut Pace,
    mut pick: impl FnMut() -> usize,
    from: impl Fn(&Plan) -> u64,
) -> Result<(Vec<Duration>, u64)> {
    let (mut times, mut events) = (Vec::new(), 0u64);
    while let Some(timed) = pace.step() {
        let p = &plans[pick()];
        let after = from(p);
        let t0 = Instant::now();
        let page = store.read_events(p.id, after, u32::MAX).await?;
        let took = t0.elapsed();
        ensure!(page.len() as u64 == u64::from(p.events) - after);
        if timed {
            times.push(took);
            events += page.len() as u64;
        }
    }
    Ok((times, events))
}

/// Loads of the matches `pick` names, each then folded through the rules engine, for as long
/// as `pace` says: the timed loads' times, their folds' times, and the events they loaded.
async fn time_loads(
    store: &Store,
    plans: &[Plan],
    games: &[GameLog],
    pace: &mut Pace,
    mut pick: impl FnMut() -> usize,
) -> Result<(Vec<Duration>, Vec<Duration>, u64)> {
    let (mut times, mut folds, mut events) = (Vec::new(), Vec::new(), 0u64);
    while let Some(timed) = pace.step() {
        let p = &plans[pick()];
        let t0 = Instant::now();
        let loaded = store.load(p.id, RULES_VERSION).await?;
        let took = t0.elapsed();
        ensure!(loaded.events.len() == p.events as usize);
        let t1 = Instant::now();
        fold(&loaded, &games[p.game as usize])?;
        if timed {
            times.push(took);
            folds.push(t1.elapsed());
            events += loaded.events.len() as u64;
        }
    }
    Ok((times, folds, events))
}

/// The server's replay: the rules set up from the match's config and seed, every action applied.
fn fold(loaded: &missive_store::Loaded, game: &GameLog) -> Result<()> {
    let config: Config = serde_json::from_value(loaded.record.config.clone())?;
    let mut state = LoveLetter::setup(&config, loaded.record.seat_count, Seed(game.seed))?;
    for ev in &loaded.events {
        if ev.kind == "action" {
            let seat = ev.payload["seat"].as_u64().context("seat")? as u8;
            let action: Action = serde_json::from_value(ev.payload["action"].clone())?;
            state
                .replay(seat, &action)
                .map_err(|e| anyhow::anyhow!("seq {}: {e}", ev.seq))?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Plans and sizes.

/// The statements below are the store's own, taken from it (`missive_store::statements`), with
/// their parameter types as sqlx binds them. Each is prepared and executed six
/// times before it is explained, so the plan shown is the one the plan cache settled on for a
/// prepared statement (sqlx prepares every query), generic or custom. The store's connections
/// set `plan_cache_mode = force_generic_plan`; the statement it runs with a custom plan
/// (`custom_plans` in `postgres/mod.rs`: the turn claim) is shown with its custom plan, and
/// with the generic plan it would get without it.
async fn explain_one(
    conn: &mut PgConnection,
    title: &str,
    types: &str,
    sql: &str,
    args: &str,
) -> Result<()> {
    explain_as(conn, title, types, sql, args, "auto").await
}

/// [`explain_one`] under `plan_cache_mode` = `mode`: `force_generic_plan` shows the plan a
/// prepared statement keeps once the plan cache has chosen its generic plan.
async fn explain_as(
    conn: &mut PgConnection,
    title: &str,
    types: &str,
    sql: &str,
    args: &str,
    mode: &str,
) -> Result<()> {
    sqlx::raw_sql(&format!("SET plan_cache_mode = {mode}"))
        .execute(&mut *conn)
        .await?;
    // A statement without parameters is prepared and executed without a list.
    let list = |items: &str| {
        if items.is_empty() {
            String::new()
        } else {
            format!("({items})")
        }
    };
    let (types, args) = (list(types), list(args));
    sqlx::raw_sql(&format!("PREPARE q {types} AS {sql}"))
        .execute(&mut *conn)
        .await?;
    for _ in 0..6 {
        sqlx::raw_sql(&format!("EXECUTE q {args}"))
            .execute(&mut *conn)
            .await?;
    }
    let rows = sqlx::raw_sql(&format!(
        "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE q {args}"
    ))
    .fetch_all(&mut *conn)
    .await?;
    println!("### {title}");
    println!();
    println!("```");
    for row in rows {
        let line: String = row.try_get(0)?;
        println!("{line}");
    }
    println!("```");
    println!();
    sqlx::raw_sql("DEALLOCATE q").execute(&mut *conn).await?;
    sqlx::raw_sql("RESET plan_cache_mode")
        .execute(&mut *conn)
        .await?;
    Ok(())
}

async fn explain(
    url: &str,
    plans: &[Plan],
    open: &[MatchId],
    claim_at: DateTime<Utc>,
) -> Result<()> {
    let mut conn = PgConnection::connect(url).await?;
    let any = plans[plans.len() / 2].id;
    let long = plans
        .iter()
        .rev()
        .find(|p| p.kind == Kind::Finished && (60..=80).contains(&p.events))
        .map_or(any, |p| p.id);
    let cursor = open[open.len() / 2];
    println!("## Plans (EXPLAIN (ANALYZE, BUFFERS) of the store's statements)");
    println!();
    // The store runs `list_matches` with `plan_cache_mode = force_generic_plan`, as all its
    // statements but the claim: one statement for each set of filters, the status and the
    // page size written in.
    let open_page = |after: Option<MatchId>| MatchFilter {
        status: Some(MatchStatus::Open),
        limit: 50,
        after,
        ..MatchFilter::default()
    };
    for (title, filter, types, args) in [
        (
            "list_matches, open, first page",
            open_page(None),
            "",
            String::new(),
        ),
        (
            "list_matches, open, after a cursor",
            open_page(Some(cursor)),
            "uuid",
            format!("'{cursor}'"),
        ),
        (
            "list_matches, every status, after a cursor",
            MatchFilter {
                limit: 50,
                after: Some(cursor),
                ..MatchFilter::default()
            },
            "uuid",
            format!("'{cursor}'"),
        ),
    ] {
        explain_as(
            &mut conn,
            title,
            types,
            &statements::list_matches_sql(&filter),
            &args,
            "force_generic_plan",
        )
        .await?;
    }
    let read = statements::read_match_sql();
    explain_one(
        &mut conn,
        "load (1/3): the match row and seats",
        "uuid",
        &read,
        &format!("'{long}'"),
    )
    .await?;
    explain_one(
        &mut conn,
        "load (2/3): the newest snapshot",
        "uuid, int4, int8",
        statements::LOAD_SNAPSHOT,
        &format!("'{long}', 1, 1000"),
    )
    .await?;
    explain_one(
        &mut conn,
        "load (3/3): the events",
        "uuid, int8",
        &statements::load_events_sql(),
        &format!("'{long}', 0"),
    )
    .await?;
    explain_one(
        &mut conn,
        "read_events (GetHistory of a 60-80 event match)",
        "uuid, int8, int8",
        &statements::read_events_sql(),
        &format!("'{long}', 0, 4294967295"),
    )
    .await?;
    // The claim's read of the due turns (a round's candidates are then taken by one update),
    // explained inside a transaction that is rolled back.
    sqlx::raw_sql("BEGIN").execute(&mut conn).await?;
    let now = rfc3339(claim_at);
    let claim = statements::CLAIM_TURNS;
    let args = format!("'{now}', 64");
    let types = "timestamptz, int8";
    explain_as(
        &mut conn,
        "claim_turns, its read of due turns (custom plan, as the store issues it)",
        types,
        claim,
        &args,
        "force_custom_plan",
    )
    .await?;
    explain_as(
        &mut conn,
        "claim_turns, its read of due turns: the generic plan",
        types,
        claim,
        &args,
        "force_generic_plan",
    )
    .await?;
    sqlx::raw_sql("ROLLBACK").execute(&mut conn).await?;
    Ok(())
}

async fn sizes(url: &str, vacuum_full: bool) -> Result<()> {
    let mut conn = PgConnection::connect(url).await?;
    print_sizes(&mut conn, "after VACUUM (ANALYZE)").await?;
    if vacuum_full {
        let t0 = Instant::now();
        sqlx::raw_sql("VACUUM (FULL, ANALYZE) events, matches")
            .execute(&mut conn)
            .await?;
        println!(
            "VACUUM FULL of events and matches: {:.0} s",
            t0.elapsed().as_secs_f64()
        );
        print_sizes(&mut conn, "after VACUUM (FULL, ANALYZE)").await?;
    }
    Ok(())
}

/// A table's bytes on disk, part by part (heap, maps, TOAST, each index), then in total.
async fn relation_bytes(conn: &mut PgConnection, table: &str) -> Result<Vec<(String, i64)>> {
    Ok(sqlx::query_as(
        "SELECT 'table (heap)', pg_relation_size($1::regclass)
         UNION ALL SELECT 'free space and visibility maps',
             pg_relation_size($1::regclass, 'fsm') + pg_relation_size($1::regclass, 'vm')
         UNION ALL SELECT 'TOAST (table and its index)',
             COALESCE((SELECT pg_total_relation_size(reltoastrelid) FROM pg_class
                 WHERE oid = $1::regclass AND reltoastrelid <> 0), 0)
         UNION ALL (SELECT 'index ' || indexrelid::regclass::text, pg_relation_size(indexrelid)
             FROM pg_index WHERE indrelid = $1::regclass ORDER BY 1)
         UNION ALL SELECT 'total (pg_total_relation_size)', pg_total_relation_size($1::regclass)",
    )
    .bind(table)
    .fetch_all(&mut *conn)
    .await?)
}

async fn print_sizes(conn: &mut PgConnection, when: &str) -> Result<()> {
    let (events,): (i64,) = sqlx::query_as("SELECT count(*) FROM events")
        .fetch_one(&mut *conn)
        .await?;
    let (matches,): (i64,) = sqlx::query_as("SELECT count(*) FROM matches")
        .fetch_one(&mut *conn)
        .await?;
    println!("## Bytes on disk, {when}");
    println!();
    println!("| relation | size | bytes per row of its table |");
    println!("|---|--:|--:|");
    for (table, rows) in [
        ("events", events),
        ("matches", matches),
        ("seats", matches),
        ("turns", 0),
    ] {
        for (what, bytes) in relation_bytes(conn, table).await? {
            let per = if rows > 0 {
                format!("{:.1}", bytes as f64 / rows as f64)
            } else {
                String::new()
            };
            println!("| {table}: {what} | {:.1} MB | {per} |", bytes as f64 / 1e6);
        }
    }
    let (db,): (i64,) = sqlx::query_as("SELECT pg_database_size(current_database())")
        .fetch_one(&mut *conn)
        .await?;
    println!();
    println!(
        "{events} events, {matches} matches; database {:.2} GB; per event (whole database / events) {:.0} bytes",
        db as f64 / 1e9,
        db as f64 / events as f64
    );
    println!();
    Ok(())
}

// ---------------------------------------------------------------------------------------------

async fn run(opts: &Options, url: &str) -> Result<()> {
    let t0 = Instant::now();
    let games = play_games(opts.games)?;
    let lens: Vec<usize> = games.iter().map(|g| g.actions.len()).collect();
    println!(
        "{} Love Letter games played in {:.2} s: {} to {} actions, {:.1} on average",
        games.len(),
        t0.elapsed().as_secs_f64(),
        lens.iter().min().unwrap_or(&0),
        lens.iter().max().unwrap_or(&0),
        lens.iter().sum::<usize>() as f64 / lens.len().max(1) as f64
    );
    let plans = plan(opts, &games);
    let count = |k: Kind| plans.iter().filter(|p| p.kind == k).count();
    let events: u64 = plans.iter().map(|p| u64::from(p.events)).sum();
    let events_of = |k: Kind| -> f64 {
        let (n, e) = plans
            .iter()
            .filter(|p| p.kind == k)
            .fold((0u64, 0u64), |(n, e), p| (n + 1, e + u64::from(p.events)));
        e as f64 / n.max(1) as f64
    };
    println!(
        "plan: {} matches ({} open, {} active of which {} with a pending deadline, {} finished, \
         {} abandoned), {} events ({:.1} per match; open {:.1}, active {:.1}, finished {:.1}, \
         abandoned {:.1})",
        plans.len(),
        count(Kind::Open),
        count(Kind::Active),
        plans.iter().filter(|p| p.deadline).count(),
        count(Kind::Finished),
        count(Kind::Abandoned),
        events,
        events as f64 / plans.len() as f64,
        events_of(Kind::Open),
        events_of(Kind::Active),
        events_of(Kind::Finished),
        events_of(Kind::Abandoned),
    );
    if !opts.reuse {
        // The store's own migrations make the schema.
        drop(Store::connect(url, StoreOptions::default()).await?);
        let t0 = Instant::now();
        load(url, &plans, &games).await?;
        let took = t0.elapsed().as_secs_f64();
        println!(
            "generated in {took:.0} s: {:.0} events/s, {:.0} matches/s overall",
            events as f64 / took,
            plans.len() as f64 / took
        );
    }
    measure(opts, url, &plans, &games).await
}

#[tokio::main]
async fn main() -> Result<()> {
    // `cargo bench` passes `--bench`; `cargo test --benches` would too, so only run when asked.
    if !std::env::args().any(|a| a == "--bench") {
        return Ok(());
    }
    let opts = Options::from_env()?;
    println!(
        "scale benchmark: {} matches, {} games, {} samples; load average {}",
        opts.matches,
        opts.games,
        opts.samples,
        loadavg()
    );
    let mut admin = PgConnection::connect(&opts.admin_url)
        .await
        .with_context(|| format!("PostgreSQL at {}", opts.admin_url))?;
    let (version,): (String,) = sqlx::query_as("SHOW server_version")
        .fetch_one(&mut admin)
        .await?;
    println!("PostgreSQL {version}");
    let name = &opts.db;
    ensure!(
        name.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
        "SCALE_DB must be a plain lowercase name"
    );
    if !opts.reuse {
        sqlx::raw_sql(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .execute(&mut admin)
            .await?;
        sqlx::raw_sql(&format!("CREATE DATABASE {name}"))
            .execute(&mut admin)
            .await?;
    }
    let (base, _) = opts
        .admin_url
        .rsplit_once('/')
        .context("DATABASE_URL has no database")?;
    let result = run(&opts, &format!("{base}/{name}")).await;
    if opts.keep {
        println!("kept database {name} (SCALE_KEEP=1)");
    } else {
        sqlx::raw_sql(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .execute(&mut admin)
            .await?;
        println!("dropped database {name}");
    }
    result
}
