//! `missive play`: a terminal client for a person, over the public HTTP/JSON API. It creates a
//! match or joins one (or resumes a seat with its token), tells in sentences what happened
//! since the player last looked (from the seat's own history, so what only this seat learnt
//! too), shows the seat's view with cards by name, value and effect (from the catalogue of
//! `GET /v1/games`, fetched once), lists the legal actions as numbered choices, sends the
//! chosen one with a request id of its own (retried with the same id if the answer is lost),
//! and waits on the watch stream while others play. The words are in `play/story.rs` and one
//! module per game beside it.

mod amori;
mod lopti;
mod love_letter;
mod story;

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use missive_store::MatchId;
use serde_json::{Value, json};

use self::story::{Catalogue, Story, Teller};
use super::{Failure, exit, failed, find_blank_line, http_client, sse_event, unusable};

/// Each game's sentences, by the key the API's JSON names it with.
const TELLERS: &[Teller] = &[
    Teller {
        game: "loveLetter",
        event: love_letter::event,
        action: love_letter::action,
        view: love_letter::view,
    },
    Teller {
        game: "lopti",
        event: lopti::event,
        action: lopti::action,
        view: lopti::view,
    },
    Teller {
        game: "amori",
        event: amori::event,
        action: amori::action,
        view: amori::view,
    },
];

/// The most lines of the past a terminal prints when it first looks at a match.
const FIRST_LOOK_LINES: usize = 40;

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
    /// The sentences: the catalogue, the seats' names, this seat.
    story: Story,
    /// The last event of the seat's history already told; `None` before the first look.
    told: Option<u64>,
    /// The version of the match the history was last read at.
    looked: u64,
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
        let games = send(
            http.get(format!("{server}/v1/games"))
                .timeout(Duration::from_secs(30)),
        )
        .await?;
        Ok(Table {
            http,
            server,
            id,
            token,
            story: Story {
                catalogue: Catalogue::from_json(&games),
                me: None,
                names: Vec::new(),
                tellers: TELLERS,
            },
            told: None,
            looked: 0,
        })
    }

    /// Prints what happened since the last look, as the seat's history tells it.
    async fn tell(&mut self, view: &Value) -> Result<(), Failure> {
        self.story.me = view["seat"].as_u64();
        self.story.names = view["match"]["seats"]
            .as_array()
            .map(|seats| {
                seats
                    .iter()
                    .map(|s| s["player"].as_str().unwrap_or_default().to_owned())
                    .collect()
            })
            .unwrap_or_default();
        let version = version(&view["version"]);
        if self.looked >= version {
            return Ok(());
        }
        let url = format!("{}/v1/matches/{}/history", self.server, self.id);
        let request = self
            .http
            .get(url)
            .bearer_auth(&self.token)
            .timeout(Duration::from_secs(30));
        let history = send(request).await?;
        self.looked = story::number(&history["version"]).unwrap_or(version);
        let after = self.told.unwrap_or(0);
        let mut lines = Vec::new();
        for entry in history["entries"].as_array().into_iter().flatten() {
            let seq = story::number(&entry["seq"]).unwrap_or(0);
            if seq <= after {
                continue;
            }
            self.told = Some(self.told.unwrap_or(0).max(seq));
            lines.extend(self.story.entry(entry));
        }
        if lines.len() > FIRST_LOOK_LINES && after == 0 {
            println!("… ({} earlier lines)", lines.len() - FIRST_LOOK_LINES);
            lines.drain(..lines.len() - FIRST_LOOK_LINES);
        }
        for line in lines {
            println!("* {line}");
        }
        Ok(())
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

    async fn run(mut self) -> Result<(), Failure> {
        loop {
            let view = self.view().await?;
            self.tell(&view).await?;
            print!("{}", self.describe_view(&view));
            if let Some(outcome) = outcome(&view) {
                println!("{outcome}");
                return Ok(());
            }
            let legal = view["legalActions"].as_array().cloned().unwrap_or_default();
            if legal.is_empty() {
                println!("waiting for {} …", self.story.seats(&view["awaiting"]));
                self.wait_after(version(&view["version"])).await?;
                continue;
            }
            for (n, action) in legal.iter().enumerate() {
                println!("  {:>2}. {}", n + 1, self.story.action(action));
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
            if too_fast(&response) {
                tokio::time::sleep(retry_after(&response)).await;
                continue;
            }
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
/// A request the server turned away for going too fast (429) is sent again after the wait it
/// asks for, a few times.
async fn send(request: reqwest::RequestBuilder) -> Result<Value, Failure> {
    let mut request = request;
    let mut attempt = 0;
    let response = loop {
        let again = request.try_clone();
        let response = request
            .send()
            .await
            .map_err(|e| unusable(format!("the server does not answer: {e}")))?;
        match again {
            Some(again) if too_fast(&response) && attempt < 5 => {
                attempt += 1;
                tokio::time::sleep(retry_after(&response)).await;
                request = again;
            }
            _ => break response,
        }
    };
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    if !status.is_success() {
        return Err(failed(format!("{status}: {}", message(&text))));
    }
    serde_json::from_str(&text).map_err(|e| failed(format!("an answer that is not JSON: {e}")))
}

fn too_fast(response: &reqwest::Response) -> bool {
    response.status() == reqwest::StatusCode::TOO_MANY_REQUESTS
}

/// The wait a 429 answer asks for (`Retry-After`, in seconds), one second when it names none.
fn retry_after(response: &reqwest::Response) -> Duration {
    let secs = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    Duration::from_secs(secs.min(30))
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
        .map(|a| a.iter().map(|v| v.to_string()).collect())
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
        "MATCH_STATUS_ABANDONED" => Some(
            "match over: abandoned (a player left, or it was cancelled or expired before it started)"
                .to_owned(),
        ),
        _ => None,
    }
}

impl Table {
    /// The view as a few lines: the match and whose turn, then the game's state in words.
    fn describe_view(&self, view: &Value) -> String {
        let awaiting = match view["awaiting"].as_array() {
            Some(seats) if !seats.is_empty() => {
                format!("waiting for {}", self.story.seats(&view["awaiting"]))
            }
            _ => "waiting for no one".to_owned(),
        };
        format!(
            "\n— {} match, version {}, {}; you are {}\n{}",
            view["match"]["kind"].as_str().unwrap_or("?"),
            version(&view["version"]),
            awaiting,
            match view["seat"].as_u64() {
                Some(seat) => format!("seat {seat}"),
                None => "watching".to_owned(),
            },
            self.story.view(&view["game"]),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_read_as_choices_with_the_cards_by_name_and_no_unset_value() {
        let games = json!({ "games": [{ "catalogue": { "loveLetter": { "editions": [{ "roles": [
            { "role": "LOVE_LETTER_ROLE_GUARD", "name": "Guard", "value": 1, "cards": ["A♠"], "effect": "Guess." },
            { "role": "LOVE_LETTER_ROLE_PRIEST", "name": "Priest", "value": 2, "cards": ["2♠"], "effect": "Look." }
        ] }] } } }] });
        let story = Story {
            catalogue: Catalogue::from_json(&games),
            me: Some(0),
            names: vec!["ann".into(), "bob".into()],
            tellers: TELLERS,
        };
        let guard = json!({ "loveLetter": { "play": { "card": "A♠", "target": 1, "guess": "LOVE_LETTER_ROLE_PRIEST" } } });
        assert_eq!(
            story.action(&guard),
            "Play the Guard (1, A♠) on bob (seat 1), naming the Priest"
        );
        let priest = json!({ "loveLetter": { "play": { "card": "2♠", "guess": "LOVE_LETTER_ROLE_UNSPECIFIED" } } });
        assert_eq!(story.action(&priest), "Play the Priest (2, 2♠)");
        assert_eq!(
            story.action(&json!({ "lopti": { "pickUp": {} } })),
            "Pick up the pile"
        );
    }

    #[test]
    fn an_amori_reaction_reads_as_the_card_aimed_and_the_answers_to_it() {
        let games = json!({ "games": [{ "catalogue": { "amori": { "eventCards": [
            { "id": "slander", "name": "Slander", "effect": "Hostile: another player's daughter loses 1 Reputation." },
            { "id": "chaperone", "name": "Chaperone", "effect": "Reaction: cancel it." }
        ] } } }] });
        let story = Story {
            catalogue: Catalogue::from_json(&games),
            me: Some(0),
            names: vec!["ann".into(), "bob".into()],
            tellers: TELLERS,
        };
        let view = json!({ "amori": { "phase": { "reaction": { "attacker": 1, "target": 0, "card": "slander-4" } } } });
        let told = story.view(&view);
        assert!(
            told.contains(
                "now: bob (seat 1) plays Slander (slander-4) against your daughter (Hostile: \
                 another player's daughter loses 1 Reputation.); answer it or let it happen"
            ),
            "{told}"
        );
        assert_eq!(
            story.action(&json!({ "amori": { "pass": {} } })),
            "Let the card take effect (no answer)"
        );
        assert_eq!(
            story.action(&json!({ "amori": { "react": { "card": "chaperone-2" } } })),
            "Answer with Chaperone (chaperone-2): Reaction: cancel it."
        );
        assert!(!told.to_lowercase().contains("unspecified"), "{told}");
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
