//! What an act costs besides time (`acts --costs`): the PostgreSQL statements the server runs
//! and the socket system calls it makes, counted over each act step and divided by its acts.
//!
//! Statements come from `pg_stat_statements` in the server's database, reset just before the
//! step: it must be loaded (`shared_preload_libraries`), which a stock cluster does not do;
//! `scripts/act-costs.sh` runs the whole measurement on a private cluster that does. System
//! calls come from `perf stat` on the server's process, tracepoints `syscalls:sys_enter_*`
//! for the calls that write to a socket (`writev` for the gRPC connections, `sendto` for
//! PostgreSQL's, as tokio and sqlx issue them) and that read from one.
//! Everything the server does during the step counts, background workers included.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use sqlx::Connection;

/// The system calls counted.
const SYSCALLS: [&str; 5] = ["writev", "write", "sendto", "recvfrom", "epoll_wait"];

/// A statement's text, shortened for a table cell.
fn short(query: &str) -> String {
    let one_line = query.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(90) {
        Some((at, _)) => format!("{}…", &one_line[..at]),
        None => one_line,
    }
}

/// Counts over the steps measured so far.
#[derive(Debug, Default)]
pub(crate) struct Costs {
    /// Statement calls by statement text.
    statements: BTreeMap<String, u64>,
    /// System calls by name.
    syscalls: BTreeMap<&'static str, u64>,
}

/// One step's counters, started.
pub(crate) struct Probe {
    perf: Child,
    out: PathBuf,
}

impl Costs {
    /// Checks that statements can be counted in `database_url`.
    pub(crate) async fn check(database_url: &str) -> Result<()> {
        let mut conn = sqlx::PgConnection::connect(database_url).await?;
        sqlx::raw_sql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            .execute(&mut conn)
            .await?;
        if let Err(e) = sqlx::raw_sql("SELECT pg_stat_statements_reset()")
            .execute(&mut conn)
            .await
        {
            bail!(
                "statements cannot be counted ({e}): pg_stat_statements must be in \
                 shared_preload_libraries (scripts/act-costs.sh starts a cluster with it)"
            );
        }
        Ok(())
    }

    /// Resets the statement counts and starts `perf stat` on `pid` for `window`.
    pub(crate) async fn start(database_url: &str, pid: u32, window: Duration) -> Result<Probe> {
        let mut conn = sqlx::PgConnection::connect(database_url).await?;
        sqlx::raw_sql("SELECT pg_stat_statements_reset()")
            .execute(&mut conn)
            .await?;
        let out = std::env::temp_dir().join(format!("missive-costs-{}.csv", uuid::Uuid::new_v4()));
        let events = SYSCALLS
            .iter()
            .map(|s| format!("syscalls:sys_enter_{s}"))
            .collect::<Vec<_>>()
            .join(",");
        let perf = Command::new("perf")
            .args(["stat", "-x", ",", "-o"])
            .arg(&out)
            .args(["-e", &events, "-p", &pid.to_string(), "--", "sleep"])
            .arg(format!("{:.3}", window.as_secs_f64()))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting `perf stat` (Debian: linux-perf)")?;
        Ok(Probe { perf, out })
    }

    /// Waits for the probe's `perf stat` and adds its counts and the statements since its
    /// start.
    pub(crate) async fn finish(&mut self, database_url: &str, mut probe: Probe) -> Result<()> {
        let status = probe.perf.wait()?;
        let text = std::fs::read_to_string(&probe.out).unwrap_or_default();
        let _ = std::fs::remove_file(&probe.out);
        if !status.success() {
            bail!("`perf stat` failed ({status}): {text}");
        }
        for line in text.lines() {
            let fields: Vec<&str> = line.split(',').collect();
            let (Some(count), Some(event)) = (fields.first(), fields.get(2)) else {
                continue;
            };
            if let Some(name) = SYSCALLS
                .iter()
                .find(|s| event.strip_prefix("syscalls:sys_enter_") == Some(**s))
            {
                *self.syscalls.entry(name).or_default() += count.parse::<u64>().unwrap_or(0);
            }
        }
        let mut conn = sqlx::PgConnection::connect(database_url).await?;
        let rows: Vec<(String, i64)> = sqlx::query_as(
            "SELECT query, calls FROM pg_stat_statements
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
                 AND query NOT LIKE '%pg_stat_statements%'",
        )
        .fetch_all(&mut conn)
        .await?;
        for (query, calls) in rows {
            *self.statements.entry(short(&query)).or_default() += calls as u64;
        }
        Ok(())
    }

    /// Statements and socket calls per act, then the statements that most often ran.
    pub(crate) fn print(&self, clients: usize, acts: u64, matches: u64) {
        let acts = acts.max(1) as f64;
        let total: u64 = self.statements.values().sum();
        let calls = SYSCALLS
            .iter()
            .map(|s| {
                format!(
                    "{s} {:.2}",
                    *self.syscalls.get(s).unwrap_or(&0) as f64 / acts
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        println!(
            "  costs at {clients} clients: {:.3} statements per act ({total} over {} acts and \
             {matches} matches begun, {:.1} acts a match); per act, system calls: {calls}",
            total as f64 / acts,
            acts,
            acts / matches.max(1) as f64
        );
        let mut top: Vec<(&String, &u64)> = self.statements.iter().collect();
        top.sort_by(|a, b| b.1.cmp(a.1));
        for (query, calls) in top.into_iter().take(8) {
            println!("    {:.3} per act: {query}", *calls as f64 / acts);
        }
    }
}
