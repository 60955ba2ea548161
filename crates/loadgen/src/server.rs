//! The server under test: either the `missive` binary started here on free loopback ports
//! against a fresh PostgreSQL database (created here, dropped in [`Server::finish`]), or a
//! server someone else runs, reached by its gRPC address.

use std::path::{Path, PathBuf};
use std::process::Child;

use anyhow::{Context, Result, bail};
use sqlx::Connection;

/// The per-client limits of a server started here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Limits {
    /// Far above what a run asks: every call is counted, none refused.
    Raised,
    /// Every limit off (0).
    Off,
    /// The server's defaults.
    Default,
}

impl Limits {
    fn env(self) -> Vec<(&'static str, &'static str)> {
        let names = [
            "MISSIVE_RATE_LIMIT_PER_SEC",
            "MISSIVE_RATE_LIMIT_BURST",
            "MISSIVE_CREATE_LIMIT_PER_MIN",
            "MISSIVE_CREATE_LIMIT_BURST",
            "MISSIVE_MAX_OPEN_MATCHES",
            "MISSIVE_MAX_WATCHES_PER_CLIENT",
            "MISSIVE_MAX_WATCHES",
        ];
        match self {
            Limits::Raised => names.iter().map(|n| (*n, "1000000000")).collect(),
            Limits::Off => names.iter().map(|n| (*n, "0")).collect(),
            Limits::Default => Vec::new(),
        }
    }
}

/// A server for one run.
#[derive(Debug)]
pub(crate) struct Server {
    /// The gRPC endpoint, `http://host:port`.
    pub(crate) grpc: String,
    /// The server's database, for the raw baseline; `None` when not known.
    pub(crate) database_url: Option<String>,
    /// The server's process id, for its memory; `None` when not known.
    pub(crate) pid: Option<u32>,
    child: Option<Child>,
    /// The admin URL and the database this run created (and so drops).
    created: Option<(String, String)>,
    data_dir: Option<PathBuf>,
    /// How the server was started, to start it again.
    launch: Option<Launch>,
}

#[derive(Debug, Clone)]
struct Launch {
    bin: PathBuf,
    db_connections: u32,
    limits: Limits,
    workers: Option<std::num::NonZeroUsize>,
}

/// `postgres://host/db` with the database replaced by `name`.
pub(crate) fn with_database(url: &str, name: &str) -> String {
    match url.rsplit_once('/') {
        Some((base, _)) => format!("{base}/{name}"),
        None => format!("{url}/{name}"),
    }
}

impl Server {
    /// A server already running at `grpc`.
    pub(crate) fn existing(grpc: String, database_url: Option<String>, pid: Option<u32>) -> Self {
        Server {
            grpc,
            database_url,
            pid,
            child: None,
            created: None,
            data_dir: None,
            launch: None,
        }
    }

    /// Creates a fresh database and starts `bin` on it, with `db_connections` pooled
    /// connections and `workers` worker threads (default: its own); returns once the server
    /// prints its gRPC address.
    pub(crate) async fn spawn(
        bin: &Path,
        admin_url: &str,
        db_connections: u32,
        limits: Limits,
        workers: Option<std::num::NonZeroUsize>,
    ) -> Result<Self> {
        if !bin.exists() {
            bail!(
                "no server binary at {} (build it with `cargo build --release -p missive-server`, \
                 or pass --server-bin)",
                bin.display()
            );
        }
        let suffix = uuid::Uuid::new_v4().simple().to_string();
        let name = format!("missive_load_{suffix}");
        let mut admin = sqlx::PgConnection::connect(admin_url)
            .await
            .with_context(|| format!("connecting to PostgreSQL at {admin_url}"))?;
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut admin)
            .await?;
        admin.close().await.ok();
        let database_url = with_database(admin_url, &name);
        let data_dir = std::env::temp_dir().join(format!("missive-load-{suffix}"));
        let mut server = Server {
            grpc: String::new(),
            database_url: Some(database_url),
            pid: None,
            child: None,
            created: Some((admin_url.to_owned(), name)),
            data_dir: Some(data_dir),
            launch: Some(Launch {
                bin: bin.to_owned(),
                db_connections,
                limits,
                workers,
            }),
        };
        if let Err(e) = server.launch().await {
            server.finish().await;
            return Err(e);
        }
        Ok(server)
    }

    /// Kills the server started here, as a crash would, and starts it again on the same
    /// database; returns when the new process was started, once it prints its gRPC address.
    pub(crate) async fn restart(&mut self) -> Result<std::time::Instant> {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.launch().await
    }

    /// Starts the server process; returns when it was started, once it prints where it
    /// listens.
    async fn launch(&mut self) -> Result<std::time::Instant> {
        let launch = self
            .launch
            .clone()
            .context("this server was not started here")?;
        let (Some(database_url), Some(data_dir)) = (&self.database_url, &self.data_dir) else {
            bail!("this server was not started here");
        };
        let started = std::time::Instant::now();
        let mut command = missive_launch::command(&launch.bin);
        command
            .env("MISSIVE_DATA_DIR", data_dir)
            .env(
                "MISSIVE_DB_MAX_CONNECTIONS",
                launch.db_connections.to_string(),
            )
            .env("DATABASE_URL", database_url)
            // One log line per action would measure the terminal, not the server.
            .env("RUST_LOG", "warn")
            .envs(launch.limits.env())
            .envs(
                launch
                    .workers
                    .map(|n| ("MISSIVE_WORKER_THREADS", n.to_string())),
            );
        let (child, at) = missive_launch::start(&mut command)
            .await
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("starting {}", launch.bin.display()))?;
        self.pid = Some(child.id());
        self.child = Some(child);
        self.grpc = at.grpc;
        Ok(started)
    }

    /// The server's resident set size, from `/proc/<pid>/status`.
    pub(crate) fn rss_bytes(&self) -> Result<u64> {
        let pid = self
            .pid
            .context("the server's pid is not known (--server-pid)")?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
        let kib: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .context("no VmRSS in /proc/<pid>/status")?;
        Ok(kib * 1024)
    }

    /// CPU time the server process has used so far (user and system, all threads), from
    /// `/proc/<pid>/stat`; `None` when its pid is not known.
    pub(crate) fn cpu_time(&self) -> Option<std::time::Duration> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid?)).ok()?;
        // Fields after the command name, which is in parentheses and may hold spaces.
        let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        // utime and stime: fields 14 and 15 of the line, 12 and 13 after the name; in clock
        // ticks, which Linux reports at 100 per second.
        let ticks: u64 =
            fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
        Some(std::time::Duration::from_millis(ticks * 10))
    }

    /// The number of file descriptors the server holds open.
    pub(crate) fn open_fds(&self) -> Result<usize> {
        let pid = self.pid.context("the server's pid is not known")?;
        Ok(std::fs::read_dir(format!("/proc/{pid}/fd"))?.count())
    }

    /// Stops the server this run started and drops its database.
    pub(crate) async fn finish(mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some(dir) = self.data_dir.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
        if let Some((admin, name)) = self.created.take() {
            match sqlx::PgConnection::connect(&admin).await {
                Ok(mut conn) => {
                    if let Err(e) =
                        sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                            .execute(&mut conn)
                            .await
                    {
                        eprintln!("could not drop the database {name}: {e}");
                    }
                }
                Err(e) => eprintln!("could not drop the database {name}: {e}"),
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // `finish` is the normal path; this only makes sure no server outlives the run.
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
