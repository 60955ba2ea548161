//! Starting the `missive` binary from another process: the API tests, the black-box and
//! failover suites and the load generator all start it here, on ports the system picks, and
//! learn where it listens from the two lines it prints once both listeners are bound:
//!
//! ```text
//! missive gRPC listening on 127.0.0.1:40123
//! missive HTTP listening on http://127.0.0.1:40124
//! ```
//!
//! The crate knows nothing of the server's code, so a suite that must stay independent of it
//! (the black-box suite) can use it too.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};

/// What the server prints before its gRPC address.
pub const GRPC_LINE: &str = "missive gRPC listening on ";
/// What the server prints before its HTTP base URL.
pub const HTTP_LINE: &str = "missive HTTP listening on ";

/// Where a started server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listening {
    /// The gRPC endpoint as a URL: `http://127.0.0.1:40123`.
    pub grpc: String,
    /// The HTTP/JSON base URL: `http://127.0.0.1:40124`.
    pub http: String,
}

/// The binary at `bin` serving on ports the system picks, its stdout piped (for [`start`]),
/// stderr shared with the caller's, stdin closed. Add the suite's environment on top.
pub fn command(bin: impl AsRef<OsStr>) -> Command {
    let mut command = Command::new(bin);
    command
        .env("MISSIVE_GRPC_ADDR", "127.0.0.1:0")
        .env("MISSIVE_HTTP_ADDR", "127.0.0.1:0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    command
}

/// Starts `command` and waits until the server prints where it listens. Its stdout is drained
/// from then on, so the server never blocks on a full pipe. An error says what was missing when
/// the server's output ended (it exited, or failed to bind); the child is killed then.
pub async fn start(command: &mut Command) -> Result<(Child, Listening), String> {
    let mut child = command
        .spawn()
        .map_err(|e| format!("the missive binary did not start: {e}"))?;
    let Some(stdout) = child.stdout.take() else {
        let _ = child.kill();
        return Err("the server's stdout is not piped".into());
    };
    match listening(stdout).await {
        Ok(listening) => Ok((child, listening)),
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(e)
        }
    }
}

/// Reads `stdout` until both addresses are printed, off a blocking thread, then keeps draining
/// it on a thread of its own.
pub async fn listening(stdout: ChildStdout) -> Result<Listening, String> {
    tokio::task::spawn_blocking(move || {
        let mut lines = BufReader::new(stdout).lines();
        let (mut grpc, mut http) = (None, None);
        while grpc.is_none() || http.is_none() {
            let Some(Ok(line)) = lines.next() else { break };
            parse(&line, &mut grpc, &mut http);
        }
        std::thread::spawn(move || for _ in lines {});
        match (grpc, http) {
            (Some(grpc), Some(http)) => Ok(Listening { grpc, http }),
            (grpc, _) => Err(format!(
                "the server's output ended before it printed its {} address",
                if grpc.is_none() { "gRPC" } else { "HTTP" }
            )),
        }
    })
    .await
    .map_err(|e| format!("reading the server's output: {e}"))?
}

/// Takes an address from one line of the server's output, if it prints one.
fn parse(line: &str, grpc: &mut Option<String>, http: &mut Option<String>) {
    if let Some(addr) = line.strip_prefix(GRPC_LINE) {
        *grpc = Some(format!("http://{}", addr.trim()));
    } else if let Some(url) = line.strip_prefix(HTTP_LINE) {
        *http = Some(url.trim().to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_lines_give_the_two_addresses_and_others_are_passed_over() {
        let (mut grpc, mut http) = (None, None);
        for line in [
            "2026-12-07T03:00:00Z  INFO starting",
            "missive gRPC listening on 127.0.0.1:40123",
            "missive HTTP listening on http://127.0.0.1:40124",
            "missive store: sqlite",
        ] {
            parse(line, &mut grpc, &mut http);
        }
        assert_eq!(grpc.as_deref(), Some("http://127.0.0.1:40123"));
        assert_eq!(http.as_deref(), Some("http://127.0.0.1:40124"));
    }

    #[tokio::test]
    async fn a_process_that_ends_without_listening_is_an_error_that_says_so() {
        let mut command = command("sh");
        command.args(["-c", "echo 'missive gRPC listening on 127.0.0.1:1'"]);
        let refused = start(&mut command).await.expect_err("no HTTP line");
        assert!(refused.contains("HTTP address"), "{refused}");
    }
}
