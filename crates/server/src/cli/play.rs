//! `missive play`: a terminal client for a person, over the public HTTP/JSON API. It creates a
//! match or joins one (or resumes a seat with its token), shows the seat's view, lists the
//! legal actions by number, sends the chosen one with a request id of its own (retried with
//! the same id if the answer is lost), and waits on the watch stream while others play.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use missive_store::MatchId;
use serde_json::{Value, json};

use super::{Failure, exit, failed, find_blank_line, http_client, sse_event, unusable};

#[derive(Debug, Args)]
pub struct PlayArgs {
    /// The match to join, or with `--token` to resume. Leave it out with `--create`.
    #[arg(required_unless_present = "create")]
    pub match_id: Option<MatchId>,
    /// The server's HTTP/JSON base URL.
    #[arg(long, env = "MISSIVE_SERVER", default_value = "http://127.0.0.1:8080")]
    pub server: String,
    /// Resume the seat this token holds (printed when you joined) instead of joining.
    #[arg(long, env = "MISSIVE_SEAT_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Your name at the table.
    #[arg(long, default_value = "player")]
    pub player: String,
    /// Create a match first: `love-letter`, `love-letter-classic`, `lopti` or
    /// `amori-e-intrighi`; you take the first free seat.
    #[arg(long, value_name = "GAME", conflicts_with = "match_id")]
    pub create: Option<String>,
    /// Seats in the match you create.
    #[arg(long, default_value_t = 2)]
    pub seats: u32,
    /// A seat the server's bot plays, in the match you create (repeat for more).
    #[arg(long = "bot", value_name = "SEAT")]
    pub bots: Vec<u32>,
    /// Seconds each seat has per turn, in the match you create.
    #[arg(long)]
    pub turn_timeout_secs: Option<u32>,
}

/// `missive play`: exits 0 when the match is over or the player stops (end of input).
pub async fn play(args: &PlayArgs) -> ExitCode {
    let result = async { Table::open(args).await?.run().await }.await;
    exit("play", result)
}

/// The options of a game named on the command line, in the JSON mapping.
fn options(game: &str) -> Result<Value, Failure> {
    Ok(match game {
        "love-letter" => json!({ "loveLetter": { "edition": "LOVE_LETTER_EDITION_2019" } }),
        "love-letter-classic" => {
            json!({ "loveLetter": { "edition": "LOVE_LETTER_EDITION_CLASSIC" } })
        }
        "lopti" => json!({ "lopti": {} }),
        "amori-e-intrighi" => json!({ "amori": {} }),
        other => {
            return Err(unusable(format!(
                "unknown game {other:?}: love-letter, love-letter-classic, lopti or amori-e-intrighi"
            )));
        }
    })
}

/// One seat at one match on one server.
struct Table {
    http: reqwest::Client,
    server: String,
    id: String,
    token: String,
}

impl Table {
    /// Creates the match if asked, then joins it unless a token resumes a seat.
    async fn open(args: &PlayArgs) -> Result<Table, Failure> {
        let http = http_client()?;
        let server = args.server.trim_end_matches('/').to_owned();
        let id = match (&args.create, args.match_id) {
            (Some(game), _) => {
                let mut body = json!({
                    "options": options(game)?,
                    "seatCount": args.seats,
                    "bots": args.bots.iter().map(|seat| json!({ "seat": seat })).collect::<Vec<_>>(),
                });
                if let Some(secs) = args.turn_timeout_secs {
                    body["turnTimeoutSecs"] = json!(secs);
                }
                let created = send(post(&http, &server, "/v1/matches", &body, None)).await?;
                let id = created["match"]["matchId"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                println!("created {game} match {id}; others join with: missive play {id}");
                id
            }
            (None, Some(id)) => id.to_string(),
            (None, None) => return Err(unusable("name a match, or --create a game")),
        };
        let token = match &args.token {
            Some(token) => token.clone(),
            None => {
                let body = json!({
                    "player": args.player,
                    "requestId": format!("join-{}", uuid::Uuid::new_v4()),
                });
                let path = format!("/v1/matches/{id}/join");
                let joined = send(post(&http, &server, &path, &body, None)).await?;
                let token = joined["seatToken"].as_str().unwrap_or_default().to_owned();
                println!(
                    "you are seat {}; to come back later: missive play {id} --token {token}",
                    joined["seat"].as_u64().unwrap_or(0)
                );
                token
            }
        };
        Ok(Table {
            http,
            server,
            id,
            token,
        })
    }

    async fn view(&self) -> Result<Value, Failure> {
        let url = format!("{}/v1/matches/{}/view", self.server, self.id);
        let request = self
            .http
            .get(url)
            .bearer_auth(&self.token)
            .timeout(Duration::from_secs(30));
        Ok(send(request).await?["view"].take())
    }

    async fn run(self) -> Result<(), Failure> {
        loop {
            let view = self.view().await?;
            print!("{}", describe_view(&view));
            if let Some(outcome) = outcome(&view) {
                println!("{outcome}");
                return Ok(());
            }
            let legal = view["legalActions"].as_array().cloned().unwrap_or_default();
            if legal.is_empty() {
                println!("waiting for seat(s) {} …", list(&view["awaiting"]));
                self.wait_after(version(&view["version"])).await?;
                continue;
            }
            for (n, action) in legal.iter().enumerate() {
                println!("  {:>2}. {}", n + 1, describe_action(action));
            }
            let Some(choice) = choose(legal.len()).await? else {
                println!(
                    "stopped; to come back: missive play {} --token {}",
                    self.id, self.token
                );
                return Ok(());
            };
            self.act(&legal[choice]).await?;
        }
    }

    /// Sends the action with a fresh request id; a lost answer is asked again with the same
    /// id, so the action is applied once. A refusal (someone moved first) is shown, not fatal.
    async fn act(&self, action: &Value) -> Result<(), Failure> {
        let body =
            json!({ "requestId": format!("play-{}", uuid::Uuid::new_v4()), "action": action });
        let path = format!("/v1/matches/{}/act", self.id);
        let mut attempt = 0;
        loop {
            let request = post(&self.http, &self.server, &path, &body, Some(&self.token));
            match request.send().await {
                Ok(response) if response.status().is_success() => return Ok(()),
                Ok(response) if response.status().is_server_error() && attempt < 5 => {}
                Ok(response) => {
                    let status = response.status();
                    let text = response.text().await.unwrap_or_default();
                    println!("refused ({status}): {}", message(&text));
                    return Ok(());
                }
                Err(e) if attempt < 5 => eprintln!("no answer ({e}); asking again"),
                Err(e) => return Err(unusable(format!("the server does not answer: {e}"))),
            }
            attempt += 1;
            tokio::time::sleep(Duration::from_millis(500 << attempt)).await;
        }
    }

    /// Waits for the match's next update after `version` on the watch stream (reconnecting
    /// if the stream breaks).
    async fn wait_after(&self, version: u64) -> Result<(), Failure> {
        let url = format!(
            "{}/v1/matches/{}/watch?afterVersion={version}",
            self.server, self.id
        );
        for _ in 0..10 {
            let response = self.http.get(&url).bearer_auth(&self.token).send().await;
            let Ok(mut response) = response else {
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            };
            if !response.status().is_success() {
                let status = response.status();
                let text = response.text().await.unwrap_or_default();
                return Err(failed(format!("watching: {status}: {}", message(&text))));
            }
            let mut buffer = Vec::new();
            while let Ok(Some(chunk)) = response.chunk().await {
                buffer.extend_from_slice(&chunk);
                if let Some(end) = find_blank_line(&buffer) {
                    let block: Vec<u8> = buffer.drain(..end).collect();
                    let (event, _) = sse_event(&String::from_utf8_lossy(&block));
                    if event == "update" || event == "error" {
                        return Ok(());
                    }
                }
            }
            // The stream ended without an update (the server restarted): look again.
            return Ok(());
        }
        Err(unusable("the watch stream keeps failing"))
    }
}

fn post(
    http: &reqwest::Client,
    server: &str,
    path: &str,
    body: &Value,
    token: Option<&str>,
) -> reqwest::RequestBuilder {
    let request = http
        .post(format!("{server}{path}"))
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_string())
        .timeout(Duration::from_secs(30));
    match token {
        Some(token) => request.bearer_auth(token),
        None => request,
    }
}

/// The JSON body of a successful answer, or a failure with the server's message.
async fn send(request: reqwest::RequestBuilder) -> Result<Value, Failure> {
    let response = request
        .send()
        .await
        .map_err(|e| unusable(format!("the server does not answer: {e}")))?;
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    if !status.is_success() {
        return Err(failed(format!("{status}: {}", message(&text))));
    }
    serde_json::from_str(&text).map_err(|e| failed(format!("an answer that is not JSON: {e}")))
}

fn message(body: &str) -> String {
    serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v["message"].as_str().map(str::to_owned))
        .unwrap_or_else(|| body.to_owned())
}

/// Reads a number from 1 to `n` from standard input, asking again until it gets one;
/// `None` at the end of input.
async fn choose(n: usize) -> Result<Option<usize>, Failure> {
    loop {
        print!("your move (1-{n}): ");
        let _ = std::io::stdout().flush();
        let line = tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            std::io::stdin()
                .read_line(&mut line)
                .map(|read| (read, line))
        })
        .await
        .map_err(|e| unusable(format!("reading input: {e}")))?
        .map_err(|e| unusable(format!("reading input: {e}")))?;
        match line {
            (0, _) => return Ok(None),
            (_, text) => match text.trim().parse::<usize>() {
                Ok(k) if (1..=n).contains(&k) => return Ok(Some(k - 1)),
                _ => println!("pick a number from 1 to {n}"),
            },
        }
    }
}

fn version(value: &Value) -> u64 {
    match value {
        Value::String(s) => s.parse().unwrap_or(0),
        other => other.as_u64().unwrap_or(0),
    }
}

fn list(value: &Value) -> String {
    let items: Vec<String> = value
        .as_array()
        .map(|a| a.iter().map(compact).collect())
        .unwrap_or_default();
    items.join(", ")
}

/// The result line of a match that is over, if it is.
fn outcome(view: &Value) -> Option<String> {
    match view["match"]["status"].as_str()? {
        "MATCH_STATUS_FINISHED" => Some(format!(
            "match over: won by seat(s) {} (scores {})",
            list(&view["outcome"]["winners"]),
            list(&view["outcome"]["scores"])
        )),
        "MATCH_STATUS_ABANDONED" => Some("match over: abandoned (a player left)".to_owned()),
        _ => None,
    }
}

/// A value on one line: strings bare, objects as `key=value` pairs, lists in brackets.
fn compact(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(compact).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(fields) => fields
            .iter()
            .map(|(k, v)| match v {
                Value::Object(inner) if inner.is_empty() => k.clone(),
                Value::Object(_) => format!("{k}({})", compact(v)),
                _ => format!("{k}={}", compact(v)),
            })
            .collect::<Vec<_>>()
            .join(" "),
        other => other.to_string(),
    }
}

/// An action without its game's wrapper, fields in name order: `play(card=Guard guess=Priest target=1)`.
fn describe_action(action: &Value) -> String {
    match action.as_object() {
        Some(fields) if fields.len() == 1 => {
            compact(fields.values().next().unwrap_or(&Value::Null))
        }
        _ => compact(action),
    }
}

/// The view as a few lines: the match, whose turn, then the game's own fields one a line.
fn describe_view(view: &Value) -> String {
    let mut out = format!(
        "\n— {} match, version {}, seat {}, awaiting [{}]\n",
        view["match"]["kind"].as_str().unwrap_or("?"),
        version(&view["version"]),
        compact(&view["seat"]),
        list(&view["awaiting"]),
    );
    if let Some(game) = view["game"]
        .as_object()
        .and_then(|g| g.values().next())
        .and_then(Value::as_object)
    {
        for (key, value) in game {
            out += &format!("  {key}: {}\n", compact(value));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_read_without_their_games_wrapper() {
        let action = json!({ "loveLetter": { "play": { "card": "Guard", "target": 1, "guess": "Priest" } } });
        assert_eq!(
            describe_action(&action),
            "play(card=Guard guess=Priest target=1)"
        );
        assert_eq!(describe_action(&json!({ "lopti": { "pass": {} } })), "pass");
    }

    #[test]
    fn a_finished_view_names_its_winners_and_an_open_one_nothing() {
        let over = json!({ "match": { "status": "MATCH_STATUS_FINISHED" }, "outcome": { "winners": [1], "scores": [0, 2] } });
        assert_eq!(
            outcome(&over).as_deref(),
            Some("match over: won by seat(s) 1 (scores 0, 2)")
        );
        assert_eq!(
            outcome(&json!({ "match": { "status": "MATCH_STATUS_ACTIVE" } })),
            None
        );
    }

    #[test]
    fn games_are_named_as_on_the_command_line() {
        assert!(options("lopti").is_ok());
        assert!(options("chess").is_err());
    }
}
