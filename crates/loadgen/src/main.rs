//! `missive-load`: load figures for a Missive server, rerunnable by anyone.
//!
//! - `acts`: simulated players on Love Letter matches acting over gRPC as fast as the rules
//!   allow, at several concurrencies, each step a fixed time; in the same run, the same
//!   concurrency of raw single-row INSERT transactions into the same database. Prints acts/s,
//!   p50/p99 latencies, the server's CPU time and the bytes the players received per act, and
//!   the ratio acts/raw; with `--floor`, also gRPC health checks at the
//!   same concurrency (the cheapest unary call the server answers), their ratio to raw and the
//!   server's CPU time per check.
//! - `watch`: idle `WatchMatch` streams in steps, with the server's resident memory per stream.
//! - `fanout`: many spectators on one match, and how long each act takes to reach them all.
//! - `cold`: a long match, then the server killed and restarted: time to ready, and to the
//!   first act on that match.
//!
//! By default it starts the release `missive` binary next to itself on free loopback ports
//! against a fresh PostgreSQL database, and drops the database at the end; `--target` points it
//! at a server someone else runs instead.

mod acts;
mod cold;
mod costs;
mod fanout;
mod floor;
mod raw;
mod server;
mod stats;
mod watch;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use missive_proto::v1 as pb;

use crate::server::Server;

#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Debug, Parser)]
#[command(name = "missive-load", about = "Load figures for a Missive server")]
struct Cli {
    #[command(subcommand)]
    mode: Mode,

    /// The `missive` binary to start; default: the one next to this binary.
    #[arg(long, global = true)]
    server_bin: Option<PathBuf>,

    /// PostgreSQL admin URL; a fresh database is created on this server (and dropped).
    #[arg(
        long,
        global = true,
        env = "DATABASE_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/postgres"
    )]
    database_url: String,

    /// Database connections: the server's pool, and the raw baseline's at most.
    #[arg(long, global = true, default_value_t = 32)]
    db_connections: u32,

    /// Use the server at this gRPC address (`http://host:port`) instead of starting one.
    #[arg(long, global = true)]
    target: Option<String>,

    /// With --target: the server's own database URL, for the raw baseline (skipped without).
    #[arg(long, global = true)]
    target_database_url: Option<String>,

    /// With --target: the server's process id, for its memory.
    #[arg(long, global = true)]
    server_pid: Option<u32>,

    /// The per-client limits of the server started here: `raised` far above what the run
    /// asks (the limiter counts every call and refuses none), `off` (no limiter state at all),
    /// or `default` (the server's own defaults). Each simulated player calls from its own
    /// loopback address, so each is its own client.
    #[arg(long, global = true, value_enum, default_value_t = server::Limits::Raised)]
    server_limits: server::Limits,

    /// The async runtime's worker threads of the server started here
    /// (`MISSIVE_WORKER_THREADS`); default: the server's own, one per core.
    #[arg(long, global = true)]
    server_workers: Option<std::num::NonZeroUsize>,
}

#[derive(Debug, Subcommand)]
enum Mode {
    /// Simulated players against raw INSERTs, at several concurrencies.
    Acts {
        /// Concurrencies: matches played at once (two players each), and raw writers.
        #[arg(long, value_delimiter = ',', default_value = "1,8,32,128")]
        clients: Vec<usize>,
        /// Seconds per step (each side, each round).
        #[arg(long, default_value_t = 10)]
        secs: u64,
        /// Alternating raw/acts rounds per concurrency; times and counts are summed.
        #[arg(long, default_value_t = 1)]
        rounds: usize,
        /// Seed of the players' choices.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Also time gRPC health checks at each concurrency, in the same run.
        #[arg(long)]
        floor: bool,
        /// Milliseconds each player waits before each of its actions.
        #[arg(long, default_value_t = 0)]
        think_ms: u64,
        /// Calls in flight from one abusive client (one address) during each acts step:
        /// `ListMatches` in a loop. 0: none.
        #[arg(long, default_value_t = 0)]
        flood: usize,
        /// Also count, over each acts step, the server's PostgreSQL statements
        /// (`pg_stat_statements`, which must be loaded) and its socket system calls (`perf`),
        /// per act.
        #[arg(long)]
        costs: bool,
        /// Players act and watch on one `Play` stream each, instead of unary `Act` calls beside
        /// a `WatchMatch` stream.
        #[arg(long)]
        play: bool,
        /// Players ask for answers without the view (`omit_view`) and take their view from the
        /// update their act makes.
        #[arg(long)]
        omit_view: bool,
    },
    /// Idle watch streams and the server's memory per stream.
    Watch {
        /// Stream counts to measure at, opened cumulatively.
        #[arg(long, value_delimiter = ',', default_value = "1000,5000,10000,20000")]
        streams: Vec<usize>,
        /// Streams per match.
        #[arg(long, default_value_t = 1)]
        per_match: usize,
        /// Streams per HTTP/2 connection.
        #[arg(long, default_value_t = 500)]
        per_connection: usize,
    },
    /// A long match, then restarts: time to ready and to the first act on it.
    Cold {
        /// Events the match's log holds before the first restart (a Lopti session of 15 hands
        /// at 4 seats ends after 2,500 to 4,500 in random play).
        #[arg(long, default_value_t = 3_000)]
        events: u64,
        /// The game: `lopti` (a session of 15 hands), `love-letter` or `amori`.
        #[arg(long, default_value = "lopti")]
        game: String,
        /// Seats of the match.
        #[arg(long, default_value_t = 4)]
        seats: u32,
        /// Kills and restarts, each timed.
        #[arg(long, default_value_t = 3)]
        restarts: usize,
        /// Seed of the players' choices (seed 2 plays the 4-seat Lopti session to 4,457 events).
        #[arg(long, default_value_t = 2)]
        seed: u64,
        /// Percent of the turns on which a Lopti player who may pick up the play pile does
        /// (0: every legal action equally likely); longer hands make a longer match.
        #[arg(long, default_value_t = 0)]
        stall: u32,
    },
    /// Spectators of one match, and the delay from each act to its update reaching them.
    Fanout {
        /// Spectator streams on the match.
        #[arg(long, default_value_t = 1000)]
        watchers: usize,
        /// Streams per HTTP/2 connection (1: each watcher a client of its own).
        #[arg(long, default_value_t = 1)]
        per_connection: usize,
        /// Matches played in turn, each with its own watchers.
        #[arg(long, default_value_t = 3)]
        matches: usize,
        /// Milliseconds between one act's response and the next act.
        #[arg(long, default_value_t = 50)]
        think_ms: u64,
        /// Seed of the players' choices.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

async fn start(cli: &Cli) -> Result<Server> {
    match &cli.target {
        Some(target) => Ok(Server::existing(
            target.clone(),
            cli.target_database_url.clone(),
            cli.server_pid,
        )),
        None => {
            let bin = match &cli.server_bin {
                Some(bin) => bin.clone(),
                None => std::env::current_exe()?.with_file_name("missive"),
            };
            Server::spawn(
                &bin,
                &cli.database_url,
                cli.db_connections,
                cli.server_limits,
                cli.server_workers,
            )
            .await
        }
    }
}

async fn postgres_facts(database_url: &str) -> Result<String> {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(database_url).await?;
    let version: String = sqlx::query_scalar("SHOW server_version")
        .fetch_one(&mut conn)
        .await?;
    let fsync: String = sqlx::query_scalar("SHOW fsync")
        .fetch_one(&mut conn)
        .await?;
    let sync: String = sqlx::query_scalar("SHOW synchronous_commit")
        .fetch_one(&mut conn)
        .await?;
    conn.close().await.ok();
    Ok(format!(
        "PostgreSQL {version}, fsync={fsync}, synchronous_commit={sync}"
    ))
}

fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".into());
    format!("{cores} cores, load average {load} at start")
}

#[allow(clippy::too_many_arguments)]
async fn run_acts(
    cli: &Cli,
    server: &Server,
    clients: &[usize],
    secs: u64,
    rounds: usize,
    seed: u64,
    floor: bool,
    costs: bool,
    options: acts::Options,
) -> Result<()> {
    let window = Duration::from_secs(secs.max(1));
    let raw_url = server.database_url.clone();
    let costs_at = match (costs, &raw_url, server.pid) {
        (false, _, _) => None,
        (true, Some(url), Some(pid)) => {
            costs::Costs::check(url).await?;
            Some((url.clone(), pid))
        }
        (true, _, _) => anyhow::bail!("--costs needs the server's database URL and pid"),
    };
    match &raw_url {
        Some(url) => {
            println!("{}; {}", postgres_facts(url).await?, machine());
            raw::create_table(url).await?;
        }
        None => println!("{}; no database URL: raw baseline skipped", machine()),
    }
    println!(
        "{secs} s per step, {rounds} alternating raw/acts round(s) per level; at C clients: C \
         two-seat Love Letter matches at once, 2C players (one gRPC connection each), at most C \
         acts in flight; raw: C writers over at most {} connections; server pool {} connections",
        cli.db_connections, cli.db_connections
    );
    if cli.target.is_none() {
        println!(
            "server limits: {:?}; server worker threads: {}",
            cli.server_limits,
            cli.server_workers
                .map_or_else(|| "one per core".to_owned(), |n| n.to_string())
        );
    }
    if !options.think.is_zero() {
        println!(
            "each player waits {} ms before each action",
            options.think.as_millis()
        );
    }
    if options.flood > 0 {
        println!(
            "meanwhile one client ({}) keeps {} ListMatches calls in flight",
            acts::FLOODER,
            options.flood
        );
    }
    if floor {
        println!(
            "floor: C gRPC health checks in flight (one connection each), a step of its own in \
             each round"
        );
    }
    println!();
    let (floor_head, floor_rule) = if floor {
        (
            " checks/s | checks/raw | server CPU per check |",
            "--:|--:|--:|",
        )
    } else {
        ("", "")
    };
    println!(
        "| clients | players | matches opened / finished | acts/s | act p50 | act p99 | server CPU per act | bytes to players per act | raw inserts/s | raw p50 | raw p99 | acts/raw |{floor_head}"
    );
    println!("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|{floor_rule}");
    for &c in clients {
        let mut played = acts::Played::default();
        let mut raw_step = stats::Step::default();
        let mut checks = stats::Step::default();
        let mut server_cpu = Some(Duration::ZERO);
        let mut checks_cpu = Some(Duration::ZERO);
        let mut step_costs = costs::Costs::default();
        for round in 0..rounds.max(1) {
            if let Some(url) = &raw_url {
                raw_step.append(raw::inserts(url, c, cli.db_connections, window).await?);
            }
            let probe = match &costs_at {
                Some((url, pid)) => Some(costs::Costs::start(url, *pid, window).await?),
                None => None,
            };
            let cpu_before = server.cpu_time();
            let one = acts::play(&server.grpc, c, window, seed ^ round as u64, options).await?;
            if let (Some((url, _)), Some(probe)) = (&costs_at, probe) {
                step_costs.finish(url, probe).await?;
            }
            server_cpu = add_cpu(server_cpu, cpu_before, server.cpu_time());
            played.acts.append(one.acts);
            played.matches += one.matches;
            played.finished += one.finished;
            played.flood.answered += one.flood.answered;
            played.flood.refused += one.flood.refused;
            played.flood.failed += one.flood.failed;
            if floor {
                let before = server.cpu_time();
                checks.append(floor::checks(&server.grpc, c, window).await?);
                checks_cpu = add_cpu(checks_cpu, before, server.cpu_time());
            }
        }
        let acts_rate = played.acts.rate();
        let raw_rate = raw_step.rate();
        let to_raw = |rate: f64| {
            if raw_rate > 0.0 {
                format!("{:.2}", rate / raw_rate)
            } else {
                "—".into()
            }
        };
        let ratio = to_raw(acts_rate);
        let cpu_per_act = cpu_per(server_cpu, played.acts.ops);
        let bytes_per_act = played.acts.received as f64 / played.acts.ops.max(1) as f64;
        let floor_cells = if floor {
            format!(
                " {:.0} | {} | {} |",
                checks.rate(),
                to_raw(checks.rate()),
                cpu_per(checks_cpu, checks.ops)
            )
        } else {
            String::new()
        };
        println!(
            "| {c} | {} | {} / {} | {:.0} | {:.1} ms | {:.1} ms | {cpu_per_act} | {bytes_per_act:.0} | {:.0} | {:.1} ms | {:.1} ms | {ratio} |{floor_cells}",
            2 * c,
            played.matches,
            played.finished,
            acts_rate,
            played.acts.percentile_ms(50.0),
            played.acts.percentile_ms(99.0),
            raw_rate,
            raw_step.percentile_ms(50.0),
            raw_step.percentile_ms(99.0),
        );
        if costs_at.is_some() {
            step_costs.print(c, played.acts.ops, played.matches);
        }
        if options.flood > 0 {
            let per_sec = |n: u64| n as f64 / (window.as_secs_f64() * rounds.max(1) as f64);
            println!(
                "  flood at {c} clients: {:.0}/s answered, {:.0}/s refused (RESOURCE_EXHAUSTED), {:.0}/s failed otherwise",
                per_sec(played.flood.answered),
                per_sec(played.flood.refused),
                per_sec(played.flood.failed)
            );
        }
        if !played.acts.errors.is_empty()
            || !raw_step.errors.is_empty()
            || !checks.errors.is_empty()
        {
            eprintln!(
                "errors at {c} clients: acts [{}], raw [{}], checks [{}]",
                played.acts.errors_text(),
                raw_step.errors_text(),
                checks.errors_text()
            );
        }
    }
    // A database this run created is dropped whole; on someone else's, remove the scratch table.
    if let (Some(url), Some(_)) = (&raw_url, &cli.target) {
        raw::drop_table(url).await?;
    }
    Ok(())
}

async fn run_watch(
    server: &Server,
    levels: &[usize],
    per_match: usize,
    per_connection: usize,
) -> Result<()> {
    println!(
        "{}; idle spectator streams, {per_match} per match, {per_connection} per HTTP/2 connection",
        machine()
    );
    println!();
    println!("| streams | server RSS | added per stream | server fds | GetMatch while open |");
    println!("|--:|--:|--:|--:|--:|");
    let baseline = watch::run(server, levels, per_match, per_connection, |row| {
        println!(
            "| {} | {:.1} MiB | {:.0} B | {} | {:.1} ms |",
            row.streams,
            row.rss as f64 / (1 << 20) as f64,
            row.per_stream,
            row.fds.map_or("?".into(), |n| n.to_string()),
            row.probe.as_secs_f64() * 1e3
        );
    })
    .await?;
    println!();
    println!(
        "baseline (matches created, no stream): {:.1} MiB",
        baseline as f64 / (1 << 20) as f64
    );
    Ok(())
}

async fn run_cold(
    server: &mut Server,
    game: &str,
    seats: u32,
    events: u64,
    restarts: usize,
    (seed, stall): (u64, u32),
) -> Result<()> {
    let options = match game {
        "lopti" => pb::game_options::Game::Lopti(pb::LoptiOptions {
            hands: 15,
            ..Default::default()
        }),
        "love-letter" => pb::game_options::Game::LoveLetter(pb::LoveLetterOptions::default()),
        "amori" => pb::game_options::Game::Amori(pb::AmoriOptions::default()),
        other => anyhow::bail!("unknown game {other}"),
    };
    let options = pb::GameOptions {
        game: Some(options),
    };
    println!(
        "{}; one {game} match of {seats} seats played to {events} events, then the server \
         killed and started again {restarts} time(s); seed {seed}, stall {stall}%",
        machine()
    );
    let mut m = cold::run(server, options, seats, events, restarts, (seed, stall)).await?;
    let warm = m.warm.ops;
    println!(
        "match filled in {:.1} s; its last {warm} acts before the first kill: p50 {:.1} ms, p99 {:.1} ms",
        m.filling.as_secs_f64(),
        m.warm.percentile_ms(50.0),
        m.warm.percentile_ms(99.0)
    );
    println!();
    println!(
        "while the match grew, {} acts a bucket (server CPU includes the players' two GetViews before each act; WAL is the whole cluster's):",
        cold::BUCKET
    );
    println!();
    println!("| events before | act p50 | act p99 | server CPU per act | WAL per act |");
    println!("|--:|--:|--:|--:|--:|");
    for b in &mut m.buckets {
        println!(
            "| {} | {:.2} ms | {:.2} ms | {} | {:.0} B |",
            b.from,
            b.acts.percentile_ms(50.0),
            b.acts.percentile_ms(99.0),
            b.cpu_per_act
                .map_or("—".into(), |c| format!("{:.0} µs", c.as_secs_f64() * 1e6)),
            b.wal_per_act
        );
    }
    println!();
    println!(
        "| events | newest snapshot | start to listening | start to ready | start to first act answered | first act | next act |"
    );
    println!("|--:|--:|--:|--:|--:|--:|--:|");
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for r in &m.restarts {
        println!(
            "| {} | {} | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms |",
            r.events,
            r.snapshot.map_or("none".into(), |s| s.to_string()),
            ms(r.listening),
            ms(r.ready),
            ms(r.first_act_at),
            ms(r.first_act),
            ms(r.next_act),
        );
    }
    Ok(())
}

async fn run_fanout(
    server: &Server,
    watchers: usize,
    per_connection: usize,
    matches: usize,
    think: Duration,
    seed: u64,
) -> Result<()> {
    println!(
        "{}; {matches} two-seat Love Letter match(es) in turn, {watchers} spectator streams on \
         each ({per_connection} per HTTP/2 connection), one act at a time, {} ms between acts",
        machine(),
        think.as_millis()
    );
    let mut m = fanout::run(server, watchers, per_connection, matches, think, seed).await?;
    let cpu_per_act = match m.server_cpu {
        Some(cpu) if m.acts.ops > 0 => {
            format!("{:.0} µs", cpu.as_secs_f64() * 1e6 / m.acts.ops as f64)
        }
        _ => "—".into(),
    };
    println!();
    println!(
        "| watchers | acts | updates received | missed | act p50 | act p99 | act to watcher p50 | p99 | max | first to last watcher p50 | p99 | server CPU per act |"
    );
    println!("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    let (acts, received) = (m.acts.ops, m.delays.ops);
    println!(
        "| {watchers} | {acts} | {received} | {} | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms | {cpu_per_act} |",
        m.missed,
        m.acts.percentile_ms(50.0),
        m.acts.percentile_ms(99.0),
        m.delays.percentile_ms(50.0),
        m.delays.percentile_ms(99.0),
        m.delays.percentile_ms(100.0),
        m.spreads.percentile_ms(50.0),
        m.spreads.percentile_ms(99.0),
    );
    if m.missed > 0 {
        anyhow::bail!("{} updates never reached their watchers", m.missed);
    }
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    let mut server = start(&cli).await.context("starting the server")?;
    let result = match &cli.mode {
        Mode::Acts {
            clients,
            secs,
            rounds,
            seed,
            floor,
            think_ms,
            flood,
            costs,
            play,
            omit_view,
        } => {
            let options = acts::Options {
                think: Duration::from_millis(*think_ms),
                flood: *flood,
                play: *play,
                omit_view: *omit_view,
            };
            run_acts(
                &cli, &server, clients, *secs, *rounds, *seed, *floor, *costs, options,
            )
            .await
        }
        Mode::Watch {
            streams,
            per_match,
            per_connection,
        } => run_watch(&server, streams, *per_match, *per_connection).await,
        Mode::Cold {
            events,
            game,
            seats,
            restarts,
            seed,
            stall,
        } => {
            run_cold(
                &mut server,
                game,
                *seats,
                *events,
                *restarts,
                (*seed, *stall),
            )
            .await
        }
        Mode::Fanout {
            watchers,
            per_connection,
            matches,
            think_ms,
            seed,
        } => {
            run_fanout(
                &server,
                *watchers,
                *per_connection,
                *matches,
                Duration::from_millis(*think_ms),
                *seed,
            )
            .await
        }
    };
    server.finish().await;
    result
}

/// `sum` plus the server's CPU time from `before` to `after`; `None` once either is unknown.
fn add_cpu(
    sum: Option<Duration>,
    before: Option<Duration>,
    after: Option<Duration>,
) -> Option<Duration> {
    Some(sum? + after?.saturating_sub(before?))
}

/// The server's CPU time per operation, as a table cell.
fn cpu_per(cpu: Option<Duration>, ops: u64) -> String {
    match cpu {
        Some(cpu) if ops > 0 => format!("{:.0} µs", cpu.as_secs_f64() * 1e6 / ops as f64),
        _ => "—".into(),
    }
}
