//! The real `missive` binary on free ports against a `DATABASE_URL`, killed on drop.

use std::path::PathBuf;
use std::process::{Child, Command};

/// A running `missive` server.
#[derive(Debug)]
pub(crate) struct Missive {
    child: Child,
    pub(crate) http_base: String,
    data_dir: PathBuf,
}

const RAISED_LIMITS: [(&str, &str); 6] = [
    ("MISSIVE_RATE_LIMIT_PER_SEC", "1000000"),
    ("MISSIVE_RATE_LIMIT_BURST", "1000000"),
    ("MISSIVE_CREATE_LIMIT_PER_MIN", "100000000"),
    ("MISSIVE_CREATE_LIMIT_BURST", "1000000"),
    ("MISSIVE_MAX_OPEN_MATCHES", "1000000"),
    ("MISSIVE_MAX_WATCHES_PER_CLIENT", "1000000"),
];

impl Missive {
    /// Starts the server with `env` on top of the test's environment and reads the addresses
    /// it prints.
    pub(crate) async fn start(database_url: &str, env: &[(&str, &str)]) -> Missive {
        let data_dir =
            std::env::temp_dir().join(format!("missive-test-{}", uuid::Uuid::new_v4().simple()));
        let mut command = missive_launch::command(env!("CARGO_BIN_EXE_missive"));
        command
            .env("DATABASE_URL", database_url)
            .env("MISSIVE_DATA_DIR", &data_dir)
            .env("RUST_LOG", "warn")
            // Every player here is the one loopback address: the per-client limits are raised
            // far above what the test asks.
            .envs(RAISED_LIMITS)
            .envs(env.iter().copied());
        let (child, at) = missive_launch::start(&mut command)
            .await
            .expect("the server listens");
        let http_base = at.http;
        Missive {
            child,
            http_base,
            data_dir,
        }
    }
}

impl Missive {
    /// For a failing test: whether the server still runs, what its `/healthz` says, and (when
    /// gdb is there) every thread's stack, written to a file.
    pub(crate) fn diagnose(&mut self) -> String {
        if let Ok(Some(status)) = self.child.try_wait() {
            return format!("exited: {status}");
        }
        let health = Command::new("curl")
            .args(["-s", "-m", "3", "-o", "/dev/null", "-w", "%{http_code}"])
            .arg(format!("{}/healthz", self.http_base))
            .output()
            .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
            .unwrap_or_else(|e| format!("curl: {e}"));
        let stacks = self.data_dir.with_extension("threads.txt");
        let dumped = Command::new("gdb")
            .args(["-p", &self.child.id().to_string(), "-batch"])
            .args(["-ex", "thread apply all bt"])
            .output()
            .ok()
            .filter(|out| out.status.success())
            .and_then(|out| std::fs::write(&stacks, out.stdout).ok())
            .map_or_else(String::new, |()| {
                format!(", thread stacks in {}", stacks.display())
            });
        format!("running, /healthz answered {health:?}{dumped}")
    }
}

impl Drop for Missive {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.data_dir);
    }
}
