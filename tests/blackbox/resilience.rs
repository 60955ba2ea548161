//! What a mobile client lives through: an answer lost to a crash and the act retried, a
//! connection that has to be made again, a watch stream cut in the middle and resumed, and
//! the audit export of a finished match checked offline, by the binary's own verifier.

use std::time::{Duration, Instant};

use missive_proto::v1 as pb;
use reqwest::StatusCode;
use serde_json::json;

use crate::harness::{
    Backend, Client, Dice, Server, Store, authed, binary, logged_request_ids, over, play_http,
    play_http_for, read_sse, version,
};

/// A two-seat Love Letter match, joined, with its two tokens.
async fn love_letter(client: &Client) -> (String, Vec<String>) {
    let id = client
        .create(
            json!({ "loveLetter": { "edition": "LOVE_LETTER_EDITION_2019" } }),
            2,
        )
        .await;
    let tokens = vec![client.join(&id, "ann").await, client.join(&id, "bob").await];
    (id, tokens)
}

/// The seat whose turn it is, its token and its first legal action other than `except`.
async fn whose_turn(
    client: &Client,
    id: &str,
    tokens: &[String],
    except: Option<&serde_json::Value>,
) -> (String, serde_json::Value) {
    for token in tokens {
        let view = client.view(id, Some(token)).await;
        let mut legal = view["legalActions"].as_array().into_iter().flatten();
        if let Some(action) = legal.find(|a| Some(*a) != except) {
            return (token.clone(), action.clone());
        }
    }
    panic!("nobody may act in {id} (other than {except:?})");
}

async fn a_retry_after_a_crash(backend: Backend) {
    let store = Store::new(backend).await;
    let mut server = Server::start(&store, &[]).await;
    let client = server.client();
    let (id, tokens) = love_letter(&client).await;
    let (token, action) = whose_turn(&client, &id, &tokens, None).await;
    let body = json!({ "requestId": "turn-1-of-ann", "action": action });
    let (status, first) = client
        .post(&format!("/v1/matches/{id}/act"), &body, Some(&token))
        .await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(first["duplicate"], false, "{first}");
    let acked = version(&first["version"]);

    // The answer never reached the phone; the server then died. The app sends the same act
    // again, with the same request id, to the server once it is back on the same address.
    server.kill();
    server.restart().await;
    let (status, again) = client
        .post(&format!("/v1/matches/{id}/act"), &body, Some(&token))
        .await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["duplicate"], true, "the retry is recognised: {again}");
    assert_eq!(
        version(&again["version"]),
        acked,
        "and answers the first outcome"
    );
    assert_eq!(
        version(&client.view(&id, None).await["version"]),
        acked,
        "nothing was applied twice"
    );

    // The same request id with another action is refused, not applied. Another indeed: a new
    // round can deal the acting seat the same card, and its first legal action be the same.
    let (_, other) = whose_turn(&client, &id, &tokens, Some(&action)).await;
    let (status, refused) = client
        .post(
            &format!("/v1/matches/{id}/act"),
            &json!({ "requestId": "turn-1-of-ann", "action": other }),
            Some(&token),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert_eq!(version(&client.view(&id, None).await["version"]), acked);

    // The match plays on to its end, and its log holds the retried act once.
    play_http(&client, &id, &tokens, &mut Dice::new(3), 2_000).await;
    let logged = logged_request_ids(&client.history(&id, None).await);
    assert_eq!(
        logged.iter().filter(|r| *r == "turn-1-of-ann").count(),
        1,
        "{logged:?}"
    );
}

#[tokio::test]
async fn a_retried_act_answers_its_first_outcome_after_a_crash_on_postgres() {
    a_retry_after_a_crash(Backend::Postgres).await;
}

#[tokio::test]
async fn a_retried_act_answers_its_first_outcome_after_a_crash_on_the_embedded_store() {
    a_retry_after_a_crash(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_grpc_channel_reconnects_by_itself_once_the_server_is_back() {
    let store = Store::new(Backend::Postgres).await;
    let mut server = Server::start(&store, &[]).await;
    let client = server.client();
    let (id, tokens) = love_letter(&client).await;
    let mut grpc = server.grpc().await;
    let request = |id: &str, token: &str| {
        authed(
            pb::GetViewRequest {
                match_id: id.to_owned(),
                ..Default::default()
            },
            token,
        )
    };
    let before = grpc
        .get_view(request(&id, &tokens[0]))
        .await
        .expect("GetView")
        .into_inner();

    server.kill();
    let down = grpc
        .get_view(request(&id, &tokens[0]))
        .await
        .expect_err("the server is down");
    // Refused (UNAVAILABLE) or cut mid-call (UNKNOWN, a broken pipe): either way, no answer.
    assert!(
        matches!(down.code(), tonic::Code::Unavailable | tonic::Code::Unknown),
        "{down:?}"
    );
    server.restart().await;

    // The same channel, no new client: it reconnects when asked again.
    let start = Instant::now();
    let after = loop {
        match grpc.get_view(request(&id, &tokens[0])).await {
            Ok(view) => break view.into_inner(),
            Err(status)
                if matches!(
                    status.code(),
                    tonic::Code::Unavailable | tonic::Code::Unknown
                ) && start.elapsed() < Duration::from_secs(10) =>
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(status) => panic!("the channel did not reconnect: {status:?}"),
        }
    };
    assert_eq!(before.view, after.view, "the same view, from the store");
}

/// The versions an SSE watch delivered, read until `limit` updates or the stream's end.
async fn watch_versions(
    client: &Client,
    id: &str,
    token: &str,
    after: u64,
    limit: usize,
) -> (Vec<u64>, bool) {
    let response = client
        .http
        .get(format!(
            "{}/v1/matches/{id}/watch?afterVersion={after}",
            client.base
        ))
        .bearer_auth(token)
        .timeout(Duration::from_secs(60))
        .send()
        .await
        .expect("the watch opens");
    assert_eq!(response.status(), StatusCode::OK);
    let (events, ended) = read_sse(response, limit).await;
    let versions = events
        .iter()
        .map(|(kind, id, data)| {
            assert_eq!(kind, "update", "{data}");
            let body: serde_json::Value = serde_json::from_str(data).expect("JSON data");
            let v = version(&body["version"]);
            assert_eq!(
                id.as_deref(),
                Some(v.to_string().as_str()),
                "the event id is the version"
            );
            v
        })
        .collect();
    (versions, ended)
}

#[tokio::test]
async fn a_dropped_watch_resumes_where_it_left_off_with_no_gap_and_no_repeat() {
    let store = Store::new(Backend::Postgres).await;
    let server = Server::start(&store, &[]).await;
    let client = server.client();
    let (id, tokens) = love_letter(&client).await;
    let mut dice = Dice::new(11);
    play_http_for(&client, &id, &tokens, &mut dice, 4).await;

    // The phone reads three updates, then loses the connection.
    let (first, ended) = watch_versions(&client, &id, &tokens[1], 0, 3).await;
    assert_eq!(first.len(), 3);
    assert!(!ended);
    let last_seen = *first.last().expect("three updates");

    // Play goes on while it is away; it comes back and asks for what followed.
    play_http(&client, &id, &tokens, &mut dice, 2_000).await;
    let (rest, ended) = watch_versions(&client, &id, &tokens[1], last_seen, usize::MAX).await;
    assert!(ended, "the stream ends after the match's last update");
    let final_version = version(&client.view(&id, None).await["version"]);
    let seen: Vec<u64> = first.iter().chain(&rest).copied().collect();
    let expected: Vec<u64> = (first[0]..=final_version).collect();
    assert_eq!(
        seen, expected,
        "every version once, in order, across the two streams"
    );
}

#[tokio::test]
async fn a_grpc_watch_cut_by_a_crash_resumes_on_the_restarted_server() {
    let store = Store::new(Backend::Postgres).await;
    let mut server = Server::start(&store, &[]).await;
    let client = server.client();
    let (id, tokens) = love_letter(&client).await;
    let mut dice = Dice::new(5);
    play_http_for(&client, &id, &tokens, &mut dice, 3).await;

    let mut grpc = server.grpc().await;
    let mut stream = grpc
        .watch_match(authed(
            pb::WatchMatchRequest {
                match_id: id.clone(),
                ..Default::default()
            },
            &tokens[0],
        ))
        .await
        .expect("WatchMatch")
        .into_inner();
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let update = stream
            .message()
            .await
            .expect("an update")
            .expect("not ended");
        seen.push(update.version);
    }
    server.kill();
    let cut = loop {
        match stream.message().await {
            Ok(Some(update)) => seen.push(update.version),
            Ok(None) => panic!("a crash is not a clean end"),
            Err(status) => break status,
        }
    };
    assert!(
        matches!(
            cut.code(),
            tonic::Code::Unavailable | tonic::Code::Unknown | tonic::Code::Internal
        ),
        "{cut:?}"
    );
    server.restart().await;
    let client = server.client();
    play_http(&client, &id, &tokens, &mut dice, 2_000).await;

    let mut grpc = server.grpc().await;
    let mut stream = grpc
        .watch_match(authed(
            pb::WatchMatchRequest {
                match_id: id.clone(),
                after_version: *seen.last().expect("seen"),
                ..Default::default()
            },
            &tokens[0],
        ))
        .await
        .expect("WatchMatch again")
        .into_inner();
    while let Some(update) = stream.message().await.expect("updates") {
        seen.push(update.version);
    }
    let final_version = version(&client.view(&id, None).await["version"]);
    let expected: Vec<u64> = (seen[0]..=final_version).collect();
    assert_eq!(seen, expected, "no gap and no repeat across the crash");
}

#[tokio::test]
async fn a_finished_matchs_history_verifies_offline_and_a_tampered_copy_does_not() {
    let store = Store::new(Backend::Sqlite).await;
    let server = Server::start(&store, &[]).await;
    let client = server.client();
    let (id, tokens) = love_letter(&client).await;
    play_http(&client, &id, &tokens, &mut Dice::new(9), 2_000).await;
    assert!(over(&client.view(&id, None).await));

    // The export is the history as anyone downloads it, byte for byte.
    let response = client
        .http
        .get(format!("{}/v1/matches/{id}/history", client.base))
        .send()
        .await
        .expect("history");
    assert_eq!(response.headers()["missive-audit-format"], "2");
    let text = response.text().await.expect("body");
    let dir = std::env::temp_dir().join(format!("missive-audit-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join(format!("{id}.json"));
    std::fs::write(&file, &text).expect("write the export");
    let verify = |path: &std::path::Path| {
        std::process::Command::new(binary())
            .arg("verify")
            .arg(path)
            .output()
            .expect("missive verify runs")
    };
    let good = verify(&file);
    assert!(
        good.status.success(),
        "{}",
        String::from_utf8_lossy(&good.stderr)
    );
    assert!(
        String::from_utf8_lossy(&good.stdout).starts_with("OK"),
        "{good:?}"
    );

    // One action's time moved by a second: its hash no longer holds, and the verifier says
    // which event.
    let mut history: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let events = history["audit"]["events"].as_array_mut().expect("events");
    let tampered = events
        .iter_mut()
        .find(|e| e["kind"] == "action")
        .expect("an action event");
    let seq = tampered["seq"].as_str().expect("seq").to_owned();
    let at = tampered["at"].as_str().expect("at").to_owned();
    let second: u32 = at[17..19].parse().expect("seconds");
    tampered["at"] = json!(format!(
        "{}{:02}{}",
        &at[..17],
        (second + 1) % 60,
        &at[19..]
    ));
    std::fs::write(&file, history.to_string()).expect("write the tampered copy");
    let bad = verify(&file);
    assert_eq!(bad.status.code(), Some(1), "{bad:?}");
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains(&format!("event {seq}")),
        "names the event: {stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
