//! The `missive` command line: `serve` (the default when no command is given), `migrate`, and
//! the client commands, which speak only the public HTTP/JSON API: `play` plays a seat in the
//! terminal (`play.rs`), `history` fetches a match's history, `watch` follows a match live,
//! and `verify` checks a finished match's history offline, without trusting the server that
//! produced it (see docs/AUDIT.md).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use missive_proto::v1 as pb;
use missive_store::MatchId;

use crate::Config;
use crate::audit::{self, AuditError};

mod play;
use crate::games::Registry;
pub use play::{PlayArgs, play};

/// `missive [COMMAND]`: without a command, the server's flags and `serve`'s are the same.
#[derive(Debug, Parser)]
#[command(
    name = "missive",
    version,
    about = "Missive: a server for asynchronous turn-based games, and its command-line client",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The server's settings when no command is given (`missive` is `missive serve`).
    #[command(flatten)]
    pub serve: Config,
}

impl Cli {
    /// The command to run: `serve` with the top-level settings when none was named.
    pub fn into_command(self) -> Command {
        self.command
            .unwrap_or_else(|| Command::Serve(Box::new(self.serve)))
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the server (the default). Boxed: the server's settings outweigh every other
    /// command's arguments.
    Serve(Box<Config>),
    /// Check a finished match's history offline: recompute the hash chain, check the seed
    /// against its commitment, replay every action through the rules and check that the log
    /// reaches its head (with `--key`, that the server signed the head).
    Verify(VerifyArgs),
    /// Fetch a match's history over HTTP/JSON (the audit log too, once the match is over).
    History(HistoryArgs),
    /// Follow a match live: print each update, one JSON object a line, until it ends.
    Watch(WatchArgs),
    /// Play in the terminal: create or join a match (or resume a seat), see your view, pick a
    /// legal action by number, and wait while the others play.
    Play(PlayArgs),
    /// Bring the store's schema up to date and exit (servers also do it at start-up; a
    /// deployment runs this once before it starts or replaces them).
    Migrate(MigrateArgs),
}

#[derive(Debug, Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub store: crate::config::StoreConfig,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The history: a GetHistory response in JSON, as `GET /v1/matches/{id}/history` returns
    /// it (and `missive history -o` saves it).
    pub file: PathBuf,
    /// The match's id, which every event's hash covers. Default: the one the log's head
    /// names (audit format 2), else the file's name when it is `<match id>.json`. A head
    /// that names another match does not verify.
    #[arg(long = "match", value_name = "MATCH_ID")]
    pub match_id: Option<MatchId>,
    /// The server's audit key, 64 hex digits as `GET /v1/audit/keys` serves it: the head must
    /// be signed by it. Without it the log is checked but not its signature.
    #[arg(long, value_name = "KEY")]
    pub key: Option<String>,
}

/// Where the server is and who is asking.
#[derive(Debug, Args)]
pub struct Client {
    /// The server's HTTP/JSON base URL.
    #[arg(long, env = "MISSIVE_SERVER", default_value = "http://127.0.0.1:8080")]
    pub server: String,
    /// A seat token: see what that seat sees (default: what a spectator sees).
    #[arg(long, env = "MISSIVE_SEAT_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
}

#[derive(Debug, Args)]
pub struct HistoryArgs {
    pub match_id: MatchId,
    #[command(flatten)]
    pub client: Client,
    /// Write the response body, unchanged, to this file instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct WatchArgs {
    pub match_id: MatchId,
    #[command(flatten)]
    pub client: Client,
    /// Only updates after this version (default: every update from the start).
    #[arg(long, default_value_t = 0)]
    pub after_version: u64,
}

/// How a client command failed: `1` the content does not hold (a history that does not
/// verify, an error answer), `2` it could not be checked or fetched at all.
#[derive(Debug)]
struct Failure {
    code: u8,
    message: String,
}

fn failed(message: impl Into<String>) -> Failure {
    Failure {
        code: 1,
        message: message.into(),
    }
}

fn unusable(message: impl Into<String>) -> Failure {
    Failure {
        code: 2,
        message: message.into(),
    }
}

fn exit(command: &str, result: Result<(), Failure>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("missive {command}: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}

/// `missive migrate`: applies the migrations the store lacks (none twice, even when servers
/// start at the same time: the store takes a lock), prints which store it brought up to date.
pub async fn migrate(args: &MigrateArgs) -> ExitCode {
    exit(
        "migrate",
        migrate_store(&args.store)
            .await
            .map(|name| println!("migrated: {name}")),
    )
}

async fn migrate_store(store: &crate::config::StoreConfig) -> Result<&'static str, Failure> {
    if store.embedded() {
        std::fs::create_dir_all(&store.data_dir).map_err(|e| {
            unusable(format!(
                "creating the data directory {}: {e}",
                store.data_dir.display()
            ))
        })?;
    }
    // Strict: a build that does not know every migration the database holds sets up nothing.
    let options = missive_store::StoreOptions {
        accept_newer_schema: false,
        ..store.options()
    };
    let store = missive_store::Store::connect(&store.url(), options)
        .await
        .map_err(|e| failed(format!("migrating the store: {e}")))?;
    Ok(store.backend_name())
}

/// `missive verify`: prints one `OK …` line and exits 0, or names the first event (or the head,
/// or its signature) that does not verify and exits 1 (2 if the file cannot be read or checked
/// at all).
pub fn verify(args: &VerifyArgs) -> ExitCode {
    exit(
        "verify",
        verify_file(args).map(|summary| println!("{summary}")),
    )
}

fn verify_file(args: &VerifyArgs) -> Result<String, Failure> {
    let key = args
        .key
        .as_deref()
        .map(|key| audit::parse_public_key(key).map_err(|e| unusable(format!("--key: {e}"))))
        .transpose()?;
    let bytes = std::fs::read(&args.file)
        .map_err(|e| unusable(format!("reading {}: {e}", args.file.display())))?;
    let history: pb::GetHistoryResponse = serde_json::from_slice(&bytes).map_err(|e| {
        failed(format!(
            "{} is not a GetHistory response in JSON: {e}",
            args.file.display()
        ))
    })?;
    let log = history.audit.ok_or_else(|| {
        unusable("the history has no audit log: the match is not over (or the file was cut)")
    })?;
    let named = log.head.as_ref().map(|head| head.match_id.as_str());
    let match_id = match (args.match_id, named) {
        (Some(id), Some(named)) if named.parse::<MatchId>().ok() != Some(id) => {
            return Err(failed(format!(
                "match {id}: the log's head is of match {named:?}, not of the match --match names"
            )));
        }
        (Some(id), _) => id,
        (None, Some(named)) => named.parse().map_err(|_| {
            failed(format!(
                "the log's head names {named:?}, which is not a match id"
            ))
        })?,
        (None, None) => id_from_name(&args.file).ok_or_else(|| {
            unusable(format!(
                "{} is a log without a head (audit format 1) and its name does not name its \
                 match: pass --match MATCH_ID",
                args.file.display()
            ))
        })?,
    };
    verify_log(match_id, &log, key.as_ref())
}

/// The `OK` line of a log that verifies, or the first thing in it that does not; with `key`,
/// its head must be signed by that key.
fn verify_log(
    match_id: MatchId,
    log: &pb::AuditLog,
    key: Option<&[u8; 32]>,
) -> Result<String, Failure> {
    let registry = Registry::new();
    let name = |seq: u64| {
        let kind = log
            .events
            .iter()
            .find(|e| e.seq == seq)
            .map_or("", |e| e.kind.as_str());
        if kind.is_empty() {
            format!("event {seq}")
        } else {
            format!("event {seq} ({kind})")
        }
    };
    let state = audit::verify(&registry, match_id, log).map_err(|e| {
        failed(match e {
            AuditError::Event { seq, reason } => {
                format!("match {match_id}: {} does not verify: {reason}", name(seq))
            }
            other => format!("match {match_id}: {other}"),
        })
    })?;
    // `verify` read the creation already (and refused a rules version this build does not
    // run): it is there and parses.
    let game = log
        .events
        .first()
        .and_then(|e| match &e.body {
            Some(pb::audit_event::Body::Created(c)) => c.options.as_ref().map(|o| (o, c)),
            _ => None,
        })
        .and_then(|(options, c)| {
            registry
                .parse_options(options, u8::try_from(c.seat_count).ok())
                .ok()
        })
        .map(|(game, _)| game)
        .ok_or_else(|| failed("the log has no creation event"))?;
    let outcome = match audit::outcome_of(state.as_ref()) {
        Some(outcome) => audit::describe_outcome(Some(&outcome)),
        None => "no winner (the match ended before the game did)".to_owned(),
    };
    let end = match (&log.head, key) {
        (None, None) => "no head (audit format 1): whether events are missing at the end \
                         was not checked"
            .to_owned(),
        (None, Some(_)) => {
            return Err(failed(format!(
                "match {match_id}: the log has no head (audit format 1), so no signature to \
                 check --key against"
            )));
        }
        (Some(head), None) => format!(
            "it ends at its head (version {}); the head's signature was not checked (pass \
             --key KEY, from GET /v1/audit/keys)",
            head.version
        ),
        (Some(head), Some(key)) => {
            audit::check_signature(head, key)
                .map_err(|e| failed(format!("match {match_id}: {e}")))?;
            format!(
                "it ends at its head (version {}), signed by key {}",
                head.version, head.key_id
            )
        }
    };
    Ok(format!(
        "OK match {match_id}: {}, {} events, hash chain, seed and every action verified; \
         {outcome}; {end}",
        game.kind(),
        log.events.len(),
    ))
}

/// The match id a file named `<match id>.json` (or `<match id>`) is for.
fn id_from_name(path: &Path) -> Option<MatchId> {
    path.file_stem()?.to_str()?.parse().ok()
}

fn http_client() -> Result<reqwest::Client, Failure> {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| unusable(format!("building the HTTP client: {e}")))
}

/// `GET {server}/v1/matches/{id}/{what}` with the seat token, if any; a non-2xx answer is a
/// failure with the server's message.
async fn get(
    client: &Client,
    http: &reqwest::Client,
    path: String,
    timeout: Option<Duration>,
) -> Result<reqwest::Response, Failure> {
    let url = format!("{}{path}", client.server.trim_end_matches('/'));
    let mut request = http.get(&url);
    if let Some(token) = &client.token {
        request = request.bearer_auth(token);
    }
    if let Some(timeout) = timeout {
        request = request.timeout(timeout);
    }
    let response = request
        .send()
        .await
        .map_err(|e| unusable(format!("GET {url}: {e}")))?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let body = response.text().await.unwrap_or_default();
    let message = serde_json::from_str::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v["message"].as_str().map(str::to_owned))
        .unwrap_or(body);
    Err(failed(format!("GET {url}: {status}: {message}")))
}

/// `missive history`: the response body exactly as the server sent it.
pub async fn history(args: &HistoryArgs) -> ExitCode {
    exit("history", fetch_history(args).await)
}

async fn fetch_history(args: &HistoryArgs) -> Result<(), Failure> {
    let http = http_client()?;
    let response = get(
        &args.client,
        &http,
        format!("/v1/matches/{}/history", args.match_id),
        Some(Duration::from_secs(60)),
    )
    .await?;
    let format = response
        .headers()
        .get(audit::FORMAT_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = response
        .bytes()
        .await
        .map_err(|e| unusable(format!("reading the history: {e}")))?;
    if let Some(format) = format.filter(|f| *f != audit::FORMAT.to_string()) {
        eprintln!(
            "missive history: the server writes audit format {format}; this build reads format {}",
            audit::FORMAT
        );
    }
    match &args.output {
        Some(path) => std::fs::write(path, &body)
            .map_err(|e| unusable(format!("writing {}: {e}", path.display())))?,
        None => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            out.write_all(&body)
                .and_then(|()| out.write_all(b"\n"))
                .map_err(|e| unusable(format!("writing the history: {e}")))?;
        }
    }
    Ok(())
}

/// `missive watch`: each SSE `update` as one JSON line on standard output, until the server
/// ends the stream (the match is over); an `error` event is a failure.
pub async fn watch(args: &WatchArgs) -> ExitCode {
    exit("watch", follow(args).await)
}

async fn follow(args: &WatchArgs) -> Result<(), Failure> {
    use std::io::Write;

    let http = http_client()?;
    let mut response = get(
        &args.client,
        &http,
        format!(
            "/v1/matches/{}/watch?afterVersion={}",
            args.match_id, args.after_version
        ),
        None,
    )
    .await?;
    let mut buffer = Vec::new();
    let mut out = std::io::stdout();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| unusable(format!("the watch stream broke: {e}")))?
    {
        buffer.extend_from_slice(&chunk);
        while let Some(end) = find_blank_line(&buffer) {
            let block: Vec<u8> = buffer.drain(..end).collect();
            let (event, data) = sse_event(&String::from_utf8_lossy(&block));
            match event.as_str() {
                "update" => {
                    writeln!(out, "{data}")
                        .and_then(|()| out.flush())
                        .map_err(|e| unusable(format!("writing an update: {e}")))?;
                }
                "error" => return Err(failed(format!("the server ended the stream: {data}"))),
                _ => {} // keep-alives and comments
            }
        }
    }
    Ok(())
}

/// The end (past the separator) of the first SSE event in `buffer`, if it holds a whole one.
fn find_blank_line(buffer: &[u8]) -> Option<usize> {
    buffer
        .windows(2)
        .position(|w| w == b"\n\n")
        .map(|at| at + 2)
}

/// An SSE event's name (`message` if none) and its data lines, joined.
fn sse_event(block: &str) -> (String, String) {
    let mut event = "message".to_owned();
    let mut data = Vec::new();
    for line in block.lines() {
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => event = value.to_owned(),
            "data" => data.push(value),
            _ => {}
        }
    }
    (event, data.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(args: &[&str]) -> Command {
        Cli::try_parse_from(args)
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
            .into_command()
    }

    #[test]
    fn serve_is_the_default_and_takes_the_servers_flags_either_way() {
        let Command::Serve(config) = command(&["missive"]) else {
            panic!("serve by default");
        };
        assert_eq!(config.listen.grpc_addr.to_string(), "127.0.0.1:50051");
        let Command::Serve(config) = command(&["missive", "--grpc-addr", "127.0.0.1:7"]) else {
            panic!("serve with flags");
        };
        assert_eq!(config.listen.grpc_addr.port(), 7);
        let Command::Serve(config) = command(&["missive", "serve", "--http-addr", "127.0.0.1:8"])
        else {
            panic!("serve named");
        };
        assert_eq!(config.listen.http_addr.port(), 8);
    }

    #[test]
    fn client_commands_take_their_own_arguments_and_not_the_servers() {
        let id = "0b0e7b4c-5a3e-4a8e-9d0f-2c1f6f1e2d3c";
        match command(&["missive", "verify", "h.json", "--match", id]) {
            Command::Verify(args) => {
                assert_eq!(args.file, PathBuf::from("h.json"));
                assert_eq!(args.match_id.map(|m| m.to_string()).as_deref(), Some(id));
            }
            other => panic!("{other:?}"),
        }
        match command(&[
            "missive",
            "history",
            id,
            "--server",
            "http://h:1",
            "-o",
            "f",
        ]) {
            Command::History(args) => {
                assert_eq!(args.client.server, "http://h:1");
                assert_eq!(args.output, Some(PathBuf::from("f")));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            command(&["missive", "watch", id, "--after-version", "3"]),
            Command::Watch(WatchArgs {
                after_version: 3,
                ..
            })
        ));
        assert!(
            Cli::try_parse_from(["missive", "--grpc-addr", "127.0.0.1:7", "verify", "f"]).is_err()
        );
        assert!(Cli::try_parse_from(["missive", "history", "not-a-match-id"]).is_err());
    }

    #[test]
    fn a_history_file_named_for_its_match_names_it() {
        let id: MatchId = "0b0e7b4c-5a3e-4a8e-9d0f-2c1f6f1e2d3c"
            .parse()
            .expect("uuid");
        assert_eq!(
            id_from_name(Path::new(&format!("/tmp/{id}.json"))),
            Some(id)
        );
        assert_eq!(id_from_name(Path::new("history.json")), None);
    }

    #[test]
    fn sse_events_are_split_and_read() {
        let stream = b"event: update\nid: 1\ndata: {\"a\":1}\n\n: keep-alive\n\nevent: up";
        let end = find_blank_line(stream).expect("one whole event");
        assert_eq!(
            sse_event(std::str::from_utf8(&stream[..end]).expect("utf-8")),
            ("update".to_owned(), "{\"a\":1}".to_owned())
        );
        let rest = &stream[end..];
        let end = find_blank_line(rest).expect("a comment");
        assert_eq!(
            sse_event(std::str::from_utf8(&rest[..end]).expect("utf-8")).0,
            "message"
        );
        assert_eq!(find_blank_line(&rest[end..]), None);
    }
}
