//! Clients playing two-seat Love Letter matches over HTTP/JSON as docs/API.md tells a mobile
//! client to: every act carries a request id of its own, and a request that fails in a way
//! worth retrying (no answer, 503, 408, 500) is sent again, unchanged, until it is answered.
//! Every answered act is recorded with the answer.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// One act the server acknowledged.
#[derive(Debug, Clone)]
pub(crate) struct Ack {
    pub(crate) match_id: String,
    pub(crate) request_id: String,
    /// The seat's token and the body sent, to send it again later.
    pub(crate) token: String,
    pub(crate) body: Value,
    /// The version the answer names (the act's event's seq).
    pub(crate) version: u64,
    pub(crate) duplicate: bool,
    /// Attempts that failed before the answer came.
    pub(crate) failed_attempts: u32,
    /// When the attempt that was answered was sent, and when its answer came.
    pub(crate) sent: Instant,
    pub(crate) answered: Instant,
}

/// What every player shares: when to stop, and a running count of acknowledged acts.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    pub(crate) stop: AtomicBool,
    pub(crate) acks: AtomicUsize,
    /// Failed attempts by kind (`503`, `408`, `transport`…), for the report.
    pub(crate) failures: Mutex<BTreeMap<String, u32>>,
}

impl Shared {
    /// The failed attempts so far, by kind.
    pub(crate) fn failures(&self) -> BTreeMap<String, u32> {
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn failed(&self, kind: String) {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        *failures.entry(kind).or_default() += 1;
    }
}

/// One client: plays matches one after another until told to stop, never leaving an act
/// unanswered; fails if anything is answered unexpectedly or nothing answers by `deadline`.
#[derive(Debug)]
pub(crate) struct Player {
    pub(crate) number: usize,
    pub(crate) base: String,
    pub(crate) http: reqwest::Client,
    pub(crate) shared: Arc<Shared>,
    pub(crate) deadline: Instant,
}

/// An answer: status and JSON body.
type Answer = (u16, Value);

impl Player {
    pub(crate) async fn play(self) -> Result<Vec<Ack>, String> {
        let mut acks = Vec::new();
        let mut game = 0;
        while !self.shared.stop.load(Ordering::SeqCst) {
            game += 1;
            let (id, tokens) = self.start_match(game).await?;
            let mut turn = 0;
            while !self.shared.stop.load(Ordering::SeqCst) {
                turn += 1;
                let request_id = format!("p{}-g{game}-t{turn}", self.number);
                let Some((token, body)) = self.next_act(&id, &tokens, &request_id).await? else {
                    break; // the match is over
                };
                let path = format!("/v1/matches/{id}/act");
                let (answer, failed_attempts, sent) =
                    self.until_answered(&path, Some(&token), &body).await?;
                let (status, answer) = answer;
                if status != 200 {
                    return Err(format!("{request_id}: {status} {answer}"));
                }
                let version = version(&answer["version"])
                    .ok_or_else(|| format!("{request_id}: no version in {answer}"))?;
                acks.push(Ack {
                    match_id: id.clone(),
                    request_id,
                    token,
                    body,
                    version,
                    duplicate: answer["duplicate"] == json!(true),
                    failed_attempts,
                    sent,
                    answered: Instant::now(),
                });
                self.shared.acks.fetch_add(1, Ordering::SeqCst);
            }
        }
        Ok(acks)
    }

    /// A new two-seat match, both seats joined; each request with its own request id.
    async fn start_match(&self, game: usize) -> Result<(String, Vec<String>), String> {
        let create = json!({
            "options": {"loveLetter": {"edition": "LOVE_LETTER_EDITION_2019"}},
            "seatCount": 2,
            "requestId": uuid::Uuid::new_v4().to_string(),
        });
        let ((status, created), _, _) = self.until_answered("/v1/matches", None, &create).await?;
        if status != 201 {
            return Err(format!("create {game}: {status} {created}"));
        }
        let id = created["match"]["matchId"]
            .as_str()
            .ok_or_else(|| format!("no match id in {created}"))?
            .to_owned();
        let mut tokens = Vec::new();
        for player in ["ann", "bob"] {
            let join = json!({"player": player, "requestId": uuid::Uuid::new_v4().to_string()});
            let ((status, joined), _, _) = self
                .until_answered(&format!("/v1/matches/{id}/join"), None, &join)
                .await?;
            let token = joined["seatToken"].as_str().filter(|_| status == 200);
            let token = token.ok_or_else(|| format!("join {id}: {status} {joined}"))?;
            tokens.push(token.to_owned());
        }
        Ok((id, tokens))
    }

    /// The awaited seat's token and an act of its first legal action, pinned to the version
    /// the view shows; `None` once the match is over.
    async fn next_act(
        &self,
        id: &str,
        tokens: &[String],
        request_id: &str,
    ) -> Result<Option<(String, Value)>, String> {
        for token in tokens {
            let (status, view) = self
                .until_read(&format!("/v1/matches/{id}/view"), token)
                .await?;
            if status != 200 {
                return Err(format!("view of {id}: {status} {view}"));
            }
            let view = &view["view"];
            if let Some(action) = view["legalActions"].as_array().and_then(|a| a.first()) {
                let body = json!({
                    "requestId": request_id,
                    "action": action,
                    "expectedVersion": view["version"],
                });
                return Ok(Some((token.clone(), body)));
            }
        }
        Ok(None)
    }

    /// Sends a POST until it is answered with something other than a failure worth retrying;
    /// the answer, the failed attempts before it and when the answered attempt was sent.
    pub(crate) async fn until_answered(
        &self,
        path: &str,
        token: Option<&str>,
        body: &Value,
    ) -> Result<(Answer, u32, Instant), String> {
        let mut failed = 0;
        loop {
            let sent = Instant::now();
            let mut request = self.http.post(format!("{}{path}", self.base)).json(body);
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            match answer(request).await {
                Ok((status, body)) if !retryable(status) => {
                    return Ok(((status, body), failed, sent));
                }
                Ok((status, _)) => self.shared.failed(status.to_string()),
                Err(kind) => self.shared.failed(kind),
            }
            failed += 1;
            self.back_off(path).await?;
        }
    }

    /// A GET, retried the same way.
    async fn until_read(&self, path: &str, token: &str) -> Result<Answer, String> {
        loop {
            let request = self
                .http
                .get(format!("{}{path}", self.base))
                .bearer_auth(token);
            match answer(request).await {
                Ok((status, body)) if !retryable(status) => return Ok((status, body)),
                Ok((status, _)) => self.shared.failed(status.to_string()),
                Err(kind) => self.shared.failed(kind),
            }
            self.back_off(path).await?;
        }
    }

    async fn back_off(&self, path: &str) -> Result<(), String> {
        if Instant::now() > self.deadline {
            return Err(format!("{path}: still failing at the deadline"));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        Ok(())
    }
}

/// docs/API.md: no answer, 503 and 408 are retried with the same id; so is 500 (a bug, but
/// safe to retry), which the test reports separately.
fn retryable(status: u16) -> bool {
    matches!(status, 408 | 500 | 502 | 503 | 504)
}

/// The status and JSON body of a request, or the kind of failure when nothing came back.
async fn answer(request: reqwest::RequestBuilder) -> Result<Answer, String> {
    let response = request.send().await.map_err(|e| {
        if e.is_timeout() {
            "timeout".to_owned()
        } else {
            "transport".to_owned()
        }
    })?;
    let status = response.status().as_u16();
    let text = response.text().await.map_err(|_| "body".to_owned())?;
    Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
}

/// A version as the JSON mapping writes it (a string).
pub(crate) fn version(value: &Value) -> Option<u64> {
    value.as_str()?.parse().ok()
}
