//! Player tokens (JWTs from the game's own backend): a seat bound to its player, who acts and
//! views with the player token alone on both transports; ListMyMatches, the inbox; refusals of
//! bad tokens, each with its own message; keys from a JSON Web Key Set, rotated and kept when
//! the set cannot be fetched.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use missive_proto::v1 as pb;
use missive_proto::v1::missive_client::MissiveClient;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tonic::Code;
use tonic::transport::Channel;

use crate::helpers::{
    Backend, Lcg, Options, TestApp, authed, create_match, love_letter_options, seat_view,
    spawn_app, spawn_app_with, spectator_view,
};

pub(crate) const SECRET: &str = "the-players-test-secret-of-40-bytes-long";
pub(crate) const ISSUER: &str = "https://backend.example";
pub(crate) const AUDIENCE: &str = "missive-test";

/// The settings of a server that accepts HS256 player tokens signed with [`SECRET`].
pub(crate) const PLAYER_TOKENS: &[(&str, &str)] = &[
    ("MISSIVE_JWT_HS256_SECRET", SECRET),
    ("MISSIVE_JWT_ISSUER", ISSUER),
    ("MISSIVE_JWT_AUDIENCE", AUDIENCE),
];

pub(crate) async fn spawn_with_players(backend: Backend) -> TestApp {
    spawn_app_with(
        backend,
        Options {
            env: PLAYER_TOKENS,
            ..Options::default()
        },
    )
    .await
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

/// Claims of a player token valid for an hour, for `sub`.
pub(crate) fn claims(sub: &str) -> Value {
    json!({ "sub": sub, "iss": ISSUER, "aud": AUDIENCE, "exp": now() + 3600, "iat": now() })
}

pub(crate) fn sign(claims: &Value, secret: &str) -> String {
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(secret.as_bytes()),
    )
    .expect("sign")
}

/// A valid player token for `sub`.
pub(crate) fn player_token(sub: &str) -> String {
    sign(&claims(sub), SECRET)
}

async fn join_as(
    client: &mut MissiveClient<Channel>,
    id: &str,
    jwt: &str,
) -> pb::JoinMatchResponse {
    client
        .join_match(authed(
            pb::JoinMatchRequest {
                match_id: id.to_owned(),
                ..Default::default()
            },
            jwt,
        ))
        .await
        .expect("join with a player token")
        .into_inner()
}

async fn create(client: &mut MissiveClient<Channel>, request: pb::CreateMatchRequest) -> String {
    create_match(client, request).await
}

async fn view_as(client: &mut MissiveClient<Channel>, id: &str, jwt: &str) -> pb::MatchView {
    seat_view(client, id, jwt).await
}

/// Plays the match to its end with the given tokens alone (player or seat tokens), waiting
/// while a seat none of them holds (a bot's) is awaited; returns the acts made.
pub(crate) async fn play_out(
    client: &mut MissiveClient<Channel>,
    id: &str,
    jwts: &[String],
) -> usize {
    let mut rng = Lcg(7);
    let mut acts = 0;
    loop {
        let public = spectator_view(client, id).await;
        if public.outcome.is_some() {
            return acts;
        }
        assert!(acts < 2000, "the match did not end");
        let seat = *public.awaiting.first().expect("someone is awaited");
        // Whose seat it is, by the views the tokens get.
        let mut mine = None;
        for jwt in jwts {
            let view = view_as(client, id, jwt).await;
            if view.seat == Some(seat) {
                mine = Some((jwt.clone(), view));
            }
        }
        let Some((jwt, view)) = mine else {
            // A bot's turn: the server plays it.
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        let action = view.legal_actions[rng.below(view.legal_actions.len())].clone();
        client
            .act(authed(
                pb::ActRequest {
                    match_id: id.to_owned(),
                    action: Some(action),
                    request_id: format!("act-{acts}"),
                    expected_version: Some(view.version),
                    seat: None,
                    ..Default::default()
                },
                &jwt,
            ))
            .await
            .expect("act with a player token");
        acts += 1;
    }
}

#[tokio::test]
async fn a_player_token_binds_the_seat_and_plays_a_whole_match_alone() {
    for backend in [Backend::Postgres, Backend::Sqlite] {
        let app = spawn_with_players(backend).await;
        let mut client = app.grpc().await;
        let id = create(&mut client, love_letter_options(2)).await;
        let ann = sign(
            &json!({ "sub": "user-ann", "name": "Ann", "iss": ISSUER, "aud": AUDIENCE, "exp": now() + 3600 }),
            SECRET,
        );
        let bob = player_token("user-bob");
        let ann_join = join_as(&mut client, &id, &ann).await;
        let bob_join = join_as(&mut client, &id, &bob).await;
        assert_ne!(ann_join.seat, bob_join.seat);
        // The names come from the tokens: the `name` claim, else the subject.
        let info = bob_join.r#match.expect("match");
        let names: Vec<&str> = info.seats.iter().map(|s| s.player.as_str()).collect();
        assert!(
            names.contains(&"Ann") && names.contains(&"user-bob"),
            "{names:?}"
        );
        // The account ids are never shown; the seat tokens still work for those who want them.
        let public = serde_json::to_string(&spectator_view(&mut client, &id).await).expect("json");
        assert!(!public.contains(&ann_join.seat_token));
        let by_token = crate::helpers::seat_view(&mut client, &id, &ann_join.seat_token).await;
        assert_eq!(by_token.seat, Some(ann_join.seat));

        // Each player token sees its own seat, with its hand.
        let ann_view = view_as(&mut client, &id, &ann).await;
        assert_eq!(ann_view.seat, Some(ann_join.seat));
        let bob_view = view_as(&mut client, &id, &bob).await;
        assert_eq!(bob_view.seat, Some(bob_join.seat));
        // A player acts as their own seat only: the one not awaited tries the awaited seat's
        // move, naming that seat.
        let (mover, idle) = if ann_view.legal_actions.is_empty() {
            (&bob_view, &ann)
        } else {
            (&ann_view, &bob)
        };
        let other = client
            .act(authed(
                pb::ActRequest {
                    match_id: id.clone(),
                    action: mover.legal_actions.first().cloned(),
                    request_id: "wrong-seat".into(),
                    expected_version: None,
                    seat: mover.seat,
                    ..Default::default()
                },
                idle,
            ))
            .await
            .expect_err("acting as another seat");
        assert_eq!(other.code(), Code::PermissionDenied, "{other:?}");

        let acts = play_out(&mut client, &id, &[ann.clone(), bob.clone()]).await;
        assert!(acts > 2, "{acts} acts");

        // Over HTTP too: the view of a finished match, with the player token.
        let response = app
            .get_as(&format!("/v1/matches/{id}/view"), Some(bob.as_str()))
            .await;
        assert_eq!(response.status(), StatusCode::OK);
        let body: Value = response.json().await.expect("json");
        assert_eq!(body["view"]["seat"], json!(bob_join.seat), "{body}");
    }
}

#[tokio::test]
async fn a_player_takes_one_seat_per_match_and_is_a_spectator_where_they_hold_none() {
    let app = spawn_with_players(Backend::Sqlite).await;
    let mut client = app.grpc().await;
    let id = create(&mut client, love_letter_options(2)).await;
    let ann = player_token("ann");
    join_as(&mut client, &id, &ann).await;
    let again = client
        .join_match(authed(
            pb::JoinMatchRequest {
                match_id: id.clone(),
                ..Default::default()
            },
            &ann,
        ))
        .await
        .expect_err("a second seat");
    assert_eq!(again.code(), Code::FailedPrecondition);
    assert!(again.message().contains("already holds seat"), "{again:?}");
    let seats = crate::helpers::get_match(&mut client, &id).await.seats;
    assert_eq!(
        seats.iter().filter(|s| s.taken).count(),
        1,
        "nothing changed"
    );
    join_as(&mut client, &id, &player_token("bob")).await;
    let awaited = spectator_view(&mut client, &id).await.awaiting[0];
    let playable = [ann.clone(), player_token("bob")];
    let mut action = None;
    for jwt in &playable {
        let view = view_as(&mut client, &id, jwt).await;
        if view.seat == Some(awaited) {
            action = view.legal_actions.first().cloned();
        }
    }

    // Carol holds no seat: she views as a spectator and cannot act.
    let carol = player_token("carol");
    let carol_view = view_as(&mut client, &id, &carol).await;
    assert_eq!(carol_view.seat, None);
    assert!(carol_view.legal_actions.is_empty());
    let acted = client
        .act(authed(
            pb::ActRequest {
                match_id: id.clone(),
                action,
                request_id: "carol-1".into(),
                ..Default::default()
            },
            &carol,
        ))
        .await
        .expect_err("no seat");
    assert_eq!(acted.code(), Code::PermissionDenied, "{acted:?}");
}

/// Ann's inbox as ListMyMatches returns it, paging `limit` at a time.
async fn inbox(
    client: &mut MissiveClient<Channel>,
    jwt: &str,
    status: pb::MatchStatus,
    limit: u32,
) -> Vec<pb::MyMatch> {
    let mut all = Vec::new();
    let mut page_token = String::new();
    loop {
        let page = client
            .list_my_matches(authed(
                pb::ListMyMatchesRequest {
                    status: status as i32,
                    limit,
                    page_token: page_token.clone(),
                },
                jwt,
            ))
            .await
            .expect("list my matches")
            .into_inner();
        assert!(page.matches.len() <= limit as usize);
        all.extend(page.matches);
        if page.next_page_token.is_empty() {
            return all;
        }
        page_token = page.next_page_token;
    }
}

#[tokio::test]
async fn list_my_matches_is_the_inbox_newest_activity_first() {
    for backend in [Backend::Postgres, Backend::Sqlite] {
        let app = spawn_with_players(backend).await;
        let mut client = app.grpc().await;
        let ann = player_token("ann");
        let bob = player_token("bob");
        // Ann's matches: one still open, then matches under way (with a turn timeout) against
        // Bob until one waits for her and one for him (who starts is drawn); and one of Bob's
        // alone.
        let open = create(&mut client, love_letter_options(3)).await;
        join_as(&mut client, &open, &ann).await;
        let mut anns = vec![open.clone()];
        let mut timed = love_letter_options(2);
        timed.turn_timeout_secs = Some(3600);
        let (mut hers, mut his) = (false, false);
        while !(hers && his) {
            assert!(anns.len() < 40, "who starts is drawn, not fixed");
            let id = create(&mut client, timed.clone()).await;
            let ann_seat = join_as(&mut client, &id, &ann).await.seat;
            join_as(&mut client, &id, &bob).await;
            let awaited = spectator_view(&mut client, &id).await.awaiting;
            hers |= awaited.contains(&ann_seat);
            his |= !awaited.contains(&ann_seat);
            anns.push(id);
        }
        let bobs = create(&mut client, love_letter_options(2)).await;
        join_as(&mut client, &bobs, &bob).await;

        let all = inbox(&mut client, &ann, pb::MatchStatus::Unspecified, 50).await;
        let ids: Vec<String> = all
            .iter()
            .map(|m| m.r#match.as_ref().expect("match").match_id.clone())
            .collect();
        // Newest activity first: the matches in the reverse order of their last joins.
        anns.reverse();
        assert_eq!(ids, anns);
        for mine in &all {
            let info = mine.r#match.as_ref().expect("match");
            let view = view_as(&mut client, &info.match_id, &ann).await;
            assert_eq!(Some(mine.seat), view.seat, "the seat is Ann's");
            let awaited = view.awaiting.contains(&mine.seat);
            assert_eq!(mine.your_turn, awaited, "{}", info.match_id);
            // A deadline exactly while the match waits for Ann, and it is her view's.
            let deadline = view.deadlines.iter().find(|d| d.seat == mine.seat);
            assert_eq!(
                mine.deadline.as_ref().map(|d| d.seconds),
                deadline.and_then(|d| d.due_at.as_ref()).map(|d| d.seconds),
            );
            assert_eq!(mine.deadline.is_some(), awaited);
            assert!(mine.last_activity.is_some());
        }
        assert!(all.iter().any(|m| m.your_turn) && all.iter().any(|m| !m.your_turn));
        // Pages of one give the same list; the status filter keeps what it names.
        let paged = inbox(&mut client, &ann, pb::MatchStatus::Unspecified, 1).await;
        assert_eq!(paged, all);
        let open_only = inbox(&mut client, &ann, pb::MatchStatus::Open, 3).await;
        assert_eq!(open_only.len(), 1);
        assert_eq!(open_only[0].r#match.as_ref().expect("m").match_id, open);

        // An act moves its match to the top.
        let mine = all
            .iter()
            .find(|m| m.your_turn)
            .expect("Ann's turn somewhere");
        let id = mine.r#match.as_ref().expect("m").match_id.clone();
        let view = view_as(&mut client, &id, &ann).await;
        client
            .act(authed(
                pb::ActRequest {
                    match_id: id.clone(),
                    action: view.legal_actions.first().cloned(),
                    request_id: "ann-1".into(),
                    ..Default::default()
                },
                &ann,
            ))
            .await
            .expect("act");
        let after = inbox(&mut client, &ann, pb::MatchStatus::Unspecified, 50).await;
        assert_eq!(after[0].r#match.as_ref().expect("m").match_id, id);

        // Bob's inbox holds his matches; over HTTP too.
        let response = app
            .get_as("/v1/me/matches?limit=2", Some(bob.as_str()))
            .await;
        assert_eq!(response.status(), StatusCode::OK);
        let body: Value = response.json().await.expect("json");
        assert_eq!(body["matches"].as_array().map(Vec::len), Some(2), "{body}");
        assert!(
            body["nextPageToken"]
                .as_str()
                .is_some_and(|t| !t.is_empty())
        );
        assert_eq!(
            inbox(&mut client, &bob, pb::MatchStatus::Unspecified, 10)
                .await
                .len(),
            anns.len()
        );

        // Without a player token there is no inbox; a bad page token is a clear refusal.
        let anonymous = client
            .list_my_matches(pb::ListMyMatchesRequest::default())
            .await
            .expect_err("no player");
        assert_eq!(anonymous.code(), Code::Unauthenticated);
        let bad_page = client
            .list_my_matches(authed(
                pb::ListMyMatchesRequest {
                    page_token: "nonsense".into(),
                    ..Default::default()
                },
                &ann,
            ))
            .await
            .expect_err("bad page token");
        assert_eq!(bad_page.code(), Code::InvalidArgument);
    }
}

#[tokio::test]
async fn bad_player_tokens_are_refused_on_both_transports_each_saying_why() {
    let app = spawn_with_players(Backend::Sqlite).await;
    let mut client = app.grpc().await;
    let id = create(&mut client, love_letter_options(2)).await;
    let mut expired = claims("ann");
    expired["exp"] = json!(now() - 3600);
    let mut early = claims("ann");
    early["nbf"] = json!(now() + 3600);
    let mut elsewhere = claims("ann");
    elsewhere["aud"] = json!("another-service");
    let mut stranger = claims("ann");
    stranger["iss"] = json!("https://someone.else");
    let mut nobody = claims("ann");
    nobody.as_object_mut().expect("object").remove("sub");
    let cases = [
        (
            sign(&claims("ann"), "another-secret-of-more-than-32-bytes!!"),
            "signature",
        ),
        (sign(&expired, SECRET), "expired"),
        (sign(&early, SECRET), "not valid yet"),
        (sign(&elsewhere, SECRET), "audience"),
        (sign(&stranger, SECRET), "issuer"),
        (sign(&nobody, SECRET), "`sub`"),
        ("not.a.jwt".to_owned(), "not a JWT"),
    ];
    for (jwt, why) in &cases {
        let grpc = client
            .join_match(authed(
                pb::JoinMatchRequest {
                    match_id: id.clone(),
                    ..Default::default()
                },
                jwt,
            ))
            .await
            .expect_err("a bad token");
        assert_eq!(grpc.code(), Code::Unauthenticated, "{why}: {grpc:?}");
        assert!(grpc.message().contains(why), "{why}: {grpc:?}");
        let http = app
            .http
            .post(app.url(&format!("/v1/matches/{id}/join")))
            .bearer_auth(jwt)
            .json(&json!({}))
            .send()
            .await
            .expect("join");
        assert_eq!(http.status(), StatusCode::UNAUTHORIZED, "{why}");
        let body: Value = http.json().await.expect("json");
        assert!(body.to_string().contains(why), "{why}: {body}");
    }
    // Even reads that need no credentials refuse a bad one rather than ignore it.
    let view = app
        .get_as(&format!("/v1/matches/{id}"), Some(cases[1].0.as_str()))
        .await;
    assert_eq!(view.status(), StatusCode::UNAUTHORIZED);
    // Nothing changed.
    let info = crate::helpers::get_match(&mut client, &id).await;
    assert!(info.seats.iter().all(|s| !s.taken), "{info:?}");

    // A server configured without keys refuses every player token, saying so.
    let plain = spawn_app(Backend::Sqlite).await;
    let mut plain_client = plain.grpc().await;
    let refused = plain_client
        .list_my_matches(authed(
            pb::ListMyMatchesRequest::default(),
            &player_token("ann"),
        ))
        .await
        .expect_err("no keys");
    assert_eq!(refused.code(), Code::Unauthenticated);
    assert!(
        refused.message().contains("does not accept player tokens"),
        "{refused:?}"
    );
}

/// A key set served over HTTP on loopback, whose body and status the test changes.
struct KeySetServer {
    url: String,
    body: Arc<Mutex<(u16, String)>>,
    task: tokio::task::JoinHandle<()>,
}

impl KeySetServer {
    async fn start(keys: &[&str]) -> KeySetServer {
        let body = Arc::new(Mutex::new((200, key_set(keys))));
        let served = Arc::clone(&body);
        let app = axum::Router::new().route(
            "/jwks.json",
            axum::routing::get(move || {
                let served = Arc::clone(&served);
                async move {
                    let (status, body) = served.lock().expect("lock").clone();
                    (
                        axum::http::StatusCode::from_u16(status).expect("status"),
                        body,
                    )
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}/jwks.json", listener.local_addr().expect("addr"));
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.expect("serve");
        });
        KeySetServer { url, body, task }
    }

    fn serve(&self, status: u16, body: String) {
        *self.body.lock().expect("lock") = (status, body);
    }
}

impl Drop for KeySetServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn key_set(keys: &[&str]) -> String {
    let keys: Vec<Value> = keys
        .iter()
        .map(|name| {
            let path = format!(
                "{}/tests/api/keys/{name}.jwk.json",
                env!("CARGO_MANIFEST_DIR")
            );
            serde_json::from_str(&std::fs::read_to_string(path).expect("jwk")).expect("json")
        })
        .collect();
    json!({ "keys": keys }).to_string()
}

fn sign_with(key: &str, sub: &str) -> String {
    let der = std::fs::read(format!(
        "{}/tests/api/keys/{key}.der",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("key");
    let (mut header, kid, key) = match key {
        "rsa-k1" => (
            Header::new(Algorithm::RS256),
            "k1",
            EncodingKey::from_rsa_der(&der),
        ),
        _ => (
            Header::new(Algorithm::EdDSA),
            "k2",
            EncodingKey::from_ed_der(&der),
        ),
    };
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, &claims(sub), &key).expect("sign")
}

async fn inbox_status(app: &TestApp, jwt: &str) -> (StatusCode, Value) {
    let response = app.get_as("/v1/me/matches", Some(jwt)).await;
    let status = response.status();
    (status, response.json().await.expect("json"))
}

#[tokio::test]
async fn keys_come_from_the_issuers_key_set_rotated_and_kept_when_it_cannot_be_fetched() {
    let keys = KeySetServer::start(&["rsa-k1"]).await;
    let env: &'static [(&'static str, &'static str)] = Box::leak(Box::new([
        (
            "MISSIVE_JWT_JWKS_URL",
            &*Box::leak(keys.url.clone().into_boxed_str()),
        ),
        ("MISSIVE_JWT_ISSUER", ISSUER),
        ("MISSIVE_JWT_AUDIENCE", AUDIENCE),
        ("MISSIVE_JWT_JWKS_REFRESH_SECS", "1"),
    ]));
    let app = spawn_app_with(
        Backend::Sqlite,
        Options {
            env,
            ..Options::default()
        },
    )
    .await;
    let rsa = sign_with("rsa-k1", "ann");
    assert_eq!(inbox_status(&app, &rsa).await.0, StatusCode::OK);
    // A token of a key the set does not hold yet.
    let ed = sign_with("ed25519-k2", "bob");
    let (status, body) = inbox_status(&app, &ed).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        body.to_string().contains("not in the issuer's key set"),
        "{body}"
    );
    // A token signed with an HS256 secret is not taken on a key-set server.
    assert_eq!(
        inbox_status(&app, &player_token("ann")).await.0,
        StatusCode::UNAUTHORIZED
    );

    // The issuer rotates: k2 joins the set and is taken once the set is fetched again.
    keys.serve(200, key_set(&["rsa-k1", "ed25519-k2"]));
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(inbox_status(&app, &ed).await.0, StatusCode::OK);

    // The set's server fails: the keys held are kept.
    keys.serve(500, "down".into());
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(inbox_status(&app, &rsa).await.0, StatusCode::OK);
    assert_eq!(inbox_status(&app, &ed).await.0, StatusCode::OK);

    // k1 is withdrawn: its tokens are refused once the set is fetched again.
    keys.serve(200, key_set(&["ed25519-k2"]));
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(inbox_status(&app, &ed).await.0, StatusCode::OK);
    assert_eq!(inbox_status(&app, &rsa).await.0, StatusCode::UNAUTHORIZED);
}
