//! Nothing is dealt before the start, and no one can steer the deal.
//!
//! A player who takes a seat of an open match and leaves again learns nothing a spectator does
//! not (over gRPC and HTTP/JSON, on PostgreSQL and SQLite, for every game); seats changing hands
//! at random before the start leave each holder with exactly what it may know; the deal's
//! seed is the documented function of the committed seed and the seats' holders' nonces; and a
//! match stored before the deal moved to the start still loads, plays and audits.

use missive_proto::v1 as pb;
use missive_proto::v1::missive_client::MissiveClient;
use missive_rules::{Observation, Viewer};
use missive_server::games::{MatchState, Registry};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tonic::Code;
use tonic::transport::Channel;

use crate::helpers::{
    Backend, Lcg, TestApp, audit_log, authed, backend_tests, create_match, deal_of, history, leave,
    spawn_app, spawn_replica, view,
};

/// A game as a test creates it: a name for messages, its options and its seat counts.
pub(crate) struct GameCase {
    pub(crate) name: &'static str,
    pub(crate) options: pb::GameOptions,
    pub(crate) options_json: Value,
    pub(crate) seats: std::ops::RangeInclusive<u32>,
}

impl GameCase {
    /// A match of this game with `seats` seats, and these `bots`.
    fn request(&self, seats: u32, bots: Vec<pb::BotSeat>) -> pb::CreateMatchRequest {
        pb::CreateMatchRequest {
            options: Some(self.options.clone()),
            seat_count: seats,
            bots,
            ..Default::default()
        }
    }
}

/// A bot in `seat`, of the server's own strategy, with this `nonce`.
fn bot(seat: u32, nonce: &str) -> pb::BotSeat {
    pb::BotSeat {
        seat,
        strategy: String::new(),
        nonce: nonce.into(),
    }
}

pub(crate) fn games() -> Vec<GameCase> {
    use pb::game_options::Game;
    let love_letter = |edition: pb::LoveLetterEdition| pb::GameOptions {
        game: Some(Game::LoveLetter(pb::LoveLetterOptions {
            edition: edition as i32,
            ..Default::default()
        })),
    };
    vec![
        GameCase {
            name: "love letter 2019",
            options: love_letter(pb::LoveLetterEdition::LoveLetterEdition2019),
            options_json: json!({ "loveLetter": { "edition": "LOVE_LETTER_EDITION_2019" } }),
            seats: 2..=6,
        },
        GameCase {
            name: "love letter classic",
            options: love_letter(pb::LoveLetterEdition::Classic),
            options_json: json!({ "loveLetter": { "edition": "LOVE_LETTER_EDITION_CLASSIC" } }),
            seats: 2..=4,
        },
        GameCase {
            name: "amori e intrighi",
            options: pb::GameOptions {
                game: Some(Game::Amori(pb::AmoriOptions::default())),
            },
            options_json: json!({ "amori": {} }),
            seats: 2..=4,
        },
        GameCase {
            name: "lopti",
            options: pb::GameOptions {
                game: Some(Game::Lopti(pb::LoptiOptions::default())),
            },
            options_json: json!({ "lopti": {} }),
            seats: 2..=5,
        },
    ]
}

/// The scenario of the report: the three games and seat counts it names.
fn reported() -> Vec<(GameCase, u32)> {
    let mut cases = Vec::new();
    for game in games() {
        let seats = match game.name {
            "love letter classic" => 2,
            _ => 3,
        };
        cases.push((game, seats));
    }
    cases
}

/// The game events among history entries.
fn game_entries(entries: &[pb::HistoryEntry]) -> Vec<&pb::HistoryEntry> {
    entries
        .iter()
        .filter(|e| matches!(e.entry, Some(pb::history_entry::Entry::Game(_))))
        .collect()
}

/// The first message of a watch from the start: every update so far, as `token` may see it.
async fn watched(
    client: &mut MissiveClient<Channel>,
    match_id: &str,
    token: Option<&str>,
    version: u64,
) -> Vec<pb::WatchMatchResponse> {
    let request = pb::WatchMatchRequest {
        match_id: match_id.to_owned(),
        after_version: 0,
        seat: None,
    };
    let request = match token {
        Some(token) => authed(request, token),
        None => tonic::Request::new(request),
    };
    let mut stream = client
        .watch_match(request)
        .await
        .expect("watch")
        .into_inner();
    let mut got = Vec::new();
    while got
        .last()
        .is_none_or(|m: &pb::WatchMatchResponse| m.version < version)
    {
        let message = tokio::time::timeout(std::time::Duration::from_secs(10), stream.message())
            .await
            .expect("the watch answers")
            .expect("a message")
            .expect("the stream is open");
        got.push(message);
    }
    got
}

async fn join(
    client: &mut MissiveClient<Channel>,
    match_id: &str,
    player: &str,
    seat: u32,
    nonce: Option<String>,
) -> pb::JoinMatchResponse {
    client
        .join_match(pb::JoinMatchRequest {
            match_id: match_id.to_owned(),
            player: player.to_owned(),
            seat: Some(seat),
            nonce,
            ..Default::default()
        })
        .await
        .expect("join")
        .into_inner()
}

/// Someone takes `seat` of an open match, reads its history and view (exactly a spectator's),
/// and leaves again.
pub(crate) async fn pass_by(client: &mut MissiveClient<Channel>, match_id: &str, seat: u32) {
    let token = join(client, match_id, "passer-by", seat, Some("passing".into()))
        .await
        .seat_token;
    let seen = (
        history(client, match_id, Some(&token)).await,
        view(client, match_id, Some(&token)).await,
    );
    let spectator = (
        history(client, match_id, None).await,
        view(client, match_id, None).await,
    );
    assert_like_a_spectator(
        "a passer-by",
        (&seen.0, &seen.1),
        (&spectator.0, &spectator.1),
    );
    leave(client, match_id, &token).await;
}

/// What a seat's holder of an open match sees is exactly what a spectator sees, apart from the
/// view naming its seat.
fn assert_like_a_spectator(
    what: &str,
    holder: (&pb::GetHistoryResponse, &pb::MatchView),
    spectator: (&pb::GetHistoryResponse, &pb::MatchView),
) {
    assert_eq!(holder.0.entries, spectator.0.entries, "{what}: history");
    assert!(
        game_entries(&holder.0.entries).is_empty(),
        "{what}: no game event before the start"
    );
    assert_eq!(holder.1.game, None, "{what}: no game view");
    assert!(holder.1.legal_actions.is_empty(), "{what}: nothing to play");
    let mut view = holder.1.clone();
    view.seat = None;
    assert_eq!(&view, spectator.1, "{what}: view");
}

/// The report over gRPC: seat 1's first holder reads everything it can, leaves; another takes
/// the seat, the match starts, and the first holder had learnt nothing of the deal.
async fn a_seat_left_before_the_start_reveals_nothing_over_grpc(backend: Backend) {
    let app = spawn_app(backend).await;
    let mut client = app.grpc().await;
    for (game, seats) in reported() {
        let what = format!("{}, {seats} seats, {backend:?}", game.name);
        let info = client
            .create_match(game.request(seats, Vec::new()))
            .await
            .expect("create")
            .into_inner()
            .r#match
            .expect("info");
        let id = info.match_id;
        let leaver = join(&mut client, &id, "leaver", 1, None).await.seat_token;
        let version = view(&mut client, &id, None).await.version;
        let seen = (
            history(&mut client, &id, Some(&leaver)).await,
            view(&mut client, &id, Some(&leaver)).await,
        );
        let spectator = (
            history(&mut client, &id, None).await,
            view(&mut client, &id, None).await,
        );
        assert_like_a_spectator(&what, (&seen.0, &seen.1), (&spectator.0, &spectator.1));
        let stream = watched(&mut client, &id, Some(&leaver), version).await;
        let spectator_stream = watched(&mut client, &id, None, version).await;
        assert_eq!(
            stream.iter().map(|m| &m.entries).collect::<Vec<_>>(),
            spectator_stream
                .iter()
                .map(|m| &m.entries)
                .collect::<Vec<_>>(),
            "{what}: watch"
        );
        assert!(
            stream
                .iter()
                .all(|m| m.view.as_ref().is_some_and(|v| v.game.is_none()))
        );
        leave(&mut client, &id, &leaver).await;

        // Seat 1 changes hands; the match starts with the last join.
        let newcomer = join(&mut client, &id, "newcomer", 1, None).await.seat_token;
        let mut tokens = vec![String::new(); seats as usize];
        tokens[1] = newcomer.clone();
        for seat in (0..seats).filter(|s| *s != 1) {
            tokens[seat as usize] = join(&mut client, &id, &format!("p{seat}"), seat, None)
                .await
                .seat_token;
        }
        // The leaver's token is no longer the seat's.
        let refused = client
            .get_view(authed(
                pb::GetViewRequest {
                    match_id: id.clone(),
                    seat: None,
                },
                &leaver,
            ))
            .await
            .expect_err("the old token is void");
        assert_eq!(refused.code(), Code::Unauthenticated, "{what}");
        // The deal is the newcomer's, and it came with the join that started the match.
        let started = view(&mut client, &id, Some(&newcomer)).await;
        assert!(started.game.is_some(), "{what}: dealt at the start");
        let history = history(&mut client, &id, Some(&newcomer)).await;
        let start = history.version;
        let games = game_entries(&history.entries);
        assert!(!games.is_empty(), "{what}: the deal is in the history");
        assert!(
            games.iter().all(|e| e.seq == start),
            "{what}: every deal entry belongs to the starting join"
        );
        // Played on and abandoned: the log verifies, dealt from the seats' holders at the
        // start: the newcomer's nonce, not the leaver's.
        leave(&mut client, &id, &tokens[0]).await;
        let log = audit_log(&mut client, &id).await;
        missive_server::audit::verify(&Registry::new(), id.parse().expect("uuid"), &log)
            .unwrap_or_else(|e| panic!("{what}: the log verifies: {e}"));
        assert_eq!(deal_of(&log).0, start, "{what}");
    }
}

backend_tests! {
    #[tokio::test]
    a_seat_left_before_the_start_reveals_nothing_over_grpc:
    Postgres => a_seat_left_before_the_start_reveals_nothing_over_grpc_on_postgres,
    Citus => a_seat_left_before_the_start_reveals_nothing_over_grpc_on_citus,
    Sqlite => a_seat_left_before_the_start_reveals_nothing_over_grpc_on_sqlite,
}

async fn http_json(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut request = app.http.request(method, app.url(path));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("request");
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn has_game_entry(history: &Value) -> bool {
    history["entries"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|e| e.get("game").is_some())
}

/// The report over HTTP/JSON.
async fn a_seat_left_before_the_start_reveals_nothing_over_http(backend: Backend) {
    use reqwest::Method;
    let app = spawn_app(backend).await;
    for (game, seats) in reported() {
        let what = format!("{}, {seats} seats, {backend:?}", game.name);
        let (status, created) = http_json(
            &app,
            Method::POST,
            "/v1/matches",
            None,
            Some(json!({ "options": game.options_json, "seatCount": seats })),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{what}: {created}");
        let id = created["match"]["matchId"].as_str().expect("id").to_owned();
        let join_path = format!("/v1/matches/{id}/join");
        let (status, joined) = http_json(
            &app,
            Method::POST,
            &join_path,
            None,
            Some(json!({ "player": "leaver", "seat": 1, "nonce": "leaver's-nonce" })),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{what}: {joined}");
        let leaver = joined["seatToken"].as_str().expect("token").to_owned();
        let history_path = format!("/v1/matches/{id}/history");
        let view_path = format!("/v1/matches/{id}/view");
        let (_, seen) = http_json(&app, Method::GET, &history_path, Some(&leaver), None).await;
        let (_, spectated) = http_json(&app, Method::GET, &history_path, None, None).await;
        assert_eq!(seen["entries"], spectated["entries"], "{what}: history");
        assert!(!has_game_entry(&seen), "{what}: {seen}");
        let (_, seen_view) = http_json(&app, Method::GET, &view_path, Some(&leaver), None).await;
        assert_eq!(seen_view["view"].get("game"), None, "{what}");
        assert!(
            seen_view["view"]["legalActions"]
                .as_array()
                .is_none_or(Vec::is_empty),
            "{what}"
        );
        let (status, _) = http_json(
            &app,
            Method::POST,
            &format!("/v1/matches/{id}/leave"),
            Some(&leaver),
            Some(json!({})),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{what}");

        let mut tokens = Vec::new();
        for (seat, player) in std::iter::once((1, "newcomer".to_owned()))
            .chain((0..seats).filter(|s| *s != 1).map(|s| (s, format!("p{s}"))))
        {
            let (status, joined) = http_json(
                &app,
                Method::POST,
                &join_path,
                None,
                Some(json!({ "player": player, "seat": seat })),
            )
            .await;
            assert_eq!(status, StatusCode::OK, "{what}: {joined}");
            tokens.push(joined["seatToken"].as_str().expect("token").to_owned());
        }
        let (status, _) = http_json(&app, Method::GET, &view_path, Some(&leaver), None).await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "{what}: the old token is void"
        );
        let (_, started) =
            http_json(&app, Method::GET, &history_path, Some(&tokens[0]), None).await;
        assert!(has_game_entry(&started), "{what}: the newcomer is dealt");
        let start = started["version"].as_str().expect("version");
        for entry in started["entries"].as_array().expect("entries") {
            if entry.get("game").is_some() {
                assert_eq!(
                    entry["seq"].as_str(),
                    Some(start),
                    "{what}: dealt by the last join"
                );
            }
        }
        // Every join is in the history with its nonce: the leaver's own, the others drawn.
        let nonces: Vec<&str> = started["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .filter_map(|e| e["joined"]["nonce"].as_str())
            .collect();
        assert_eq!(nonces.len(), seats as usize + 1, "{what}");
        assert_eq!(nonces[0], "leaver's-nonce");
        assert!(
            nonces[1..].iter().all(|n| n.len() == 32),
            "{what}: {nonces:?}"
        );
    }
}

backend_tests! {
    #[tokio::test]
    a_seat_left_before_the_start_reveals_nothing_over_http:
    Postgres => a_seat_left_before_the_start_reveals_nothing_over_http_on_postgres,
    Citus => a_seat_left_before_the_start_reveals_nothing_over_http_on_citus,
    Sqlite => a_seat_left_before_the_start_reveals_nothing_over_http_on_sqlite,
}

#[tokio::test]
async fn a_nonce_is_checked_at_the_edge() {
    let app = spawn_app(Backend::Sqlite).await;
    let mut client = app.grpc().await;
    let game = &games()[0];
    let id = create_match(&mut client, game.request(2, Vec::new())).await;
    for bad in [
        String::new(),
        "x".repeat(65),
        "two words".into(),
        "né".into(),
    ] {
        let refused = client
            .join_match(pb::JoinMatchRequest {
                match_id: id.clone(),
                player: "p".into(),
                seat: None,
                nonce: Some(bad.clone()),
                ..Default::default()
            })
            .await
            .expect_err("a bad nonce is refused");
        assert_eq!(refused.code(), Code::InvalidArgument, "{bad:?}");
        assert!(refused.message().contains("nonce"), "{}", refused.message());
    }
    let (status, body) = http_json(
        &app,
        reqwest::Method::POST,
        &format!("/v1/matches/{id}/join"),
        None,
        Some(json!({ "player": "p", "nonce": "" })),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.to_string().contains("nonce"), "{body}");
    let refused = client
        .create_match(game.request(2, vec![bot(0, " ")]))
        .await
        .expect_err("a bad bot nonce is refused");
    assert_eq!(refused.code(), Code::InvalidArgument);
    assert!(refused.message().contains("nonce"));
    // Nothing was joined.
    let info = view(&mut client, &id, None).await.r#match.expect("info");
    assert!(info.seats.iter().all(|s| !s.taken));
}

/// The deal seed is the documented function of the committed seed and the nonces of the seats'
/// holders at the start: chosen nonces give the same deal under the same seed, and a log whose
/// nonce is changed no longer verifies.
#[tokio::test]
async fn the_deal_follows_the_committed_seed_and_the_holders_nonces() {
    let app = spawn_app(Backend::Postgres).await;
    let mut client = app.grpc().await;
    let registry = Registry::new();
    let game = &games()[0];
    let info = client
        .create_match(game.request(3, vec![bot(2, "bot-nonce")]))
        .await
        .expect("create")
        .into_inner()
        .r#match
        .expect("info");
    let id = info.match_id;
    // Seat 0 is taken and left with one nonce, then taken again with another on a second
    // server, which loads the open match from the store; the first, whose cache is behind,
    // takes the last seat and deals.
    let replica = spawn_replica(&app).await;
    let mut other = replica.grpc().await;
    let first = join(&mut client, &id, "a", 0, Some("first".into())).await;
    leave(&mut client, &id, &first.seat_token).await;
    let zero = join(&mut other, &id, "b", 0, Some("zero!".into())).await;
    let one = join(&mut client, &id, "c", 1, Some("~one~".into())).await;
    let history = history(&mut client, &id, Some(&one.seat_token)).await;
    // Both servers show seat 1 the same deal, compared at one version (the bot may move
    // between the two reads).
    let mut tries = 0;
    loop {
        let there = view(&mut other, &id, Some(&one.seat_token)).await;
        let here = view(&mut client, &id, Some(&one.seat_token)).await;
        if there.version == here.version {
            assert_eq!(there.game, here.game);
            break;
        }
        tries += 1;
        assert!(tries < 50, "the two servers agree on a version");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    leave(&mut client, &id, &zero.seat_token).await;
    let log = audit_log(&mut client, &id).await;
    let state = missive_server::audit::verify(&registry, id.parse().expect("uuid"), &log)
        .expect("the log verifies");
    let created = match &log.events[0].body {
        Some(pb::audit_event::Body::Created(c)) => c.clone(),
        other => panic!("created first, not {other:?}"),
    };
    assert!(created.deal_at_start);
    assert_eq!(created.bots[0].nonce, "bot-nonce");

    // The deal, from the formula of docs/API.md written out here once more.
    let (dealt_at, deal_seed) = deal_of(&log);
    assert_eq!(
        Some(dealt_at),
        one.r#match.as_ref().map(|m| m.version),
        "dealt by the last join"
    );
    let seed: [u8; 32] = hex::decode(&log.seed).expect("hex").try_into().expect("32");
    let mut expected = sha2::Sha256::new();
    use sha2::Digest;
    expected.update(b"missive deal v1");
    expected.update(seed);
    for nonce in ["zero!", "~one~", "bot-nonce"] {
        expected.update([nonce.len() as u8]);
        expected.update(nonce.as_bytes());
    }
    assert_eq!(deal_seed, <[u8; 32]>::from(expected.finalize()));
    let (kind, parsed) = registry
        .parse_options(created.options.as_ref().expect("options"), Some(3))
        .expect("options");
    let dealt = kind.setup(&parsed.config, 3, deal_seed).expect("setup");
    // The actions (the bot may have moved at once) replay on it to the audited state.
    let mut replayed = dealt.boxed_clone();
    for event in &log.events {
        if let Some(pb::audit_event::Body::Action(a)) = &event.body {
            let stored = missive_server::audit::stored_event(&registry, event, Some(&created))
                .expect("rebuilds");
            replayed
                .apply(
                    a.seat as u8,
                    &kind
                        .decode_action(&stored.payload["action"])
                        .expect("decodes"),
                )
                .expect("replays");
        }
    }
    for viewer in [Viewer::Spectator, Viewer::Seat(1)] {
        assert_eq!(replayed.view(viewer), state.view(viewer));
    }
    // Seat 1's history holds exactly what the deal told seat 1.
    let told: Vec<pb::GameEvent> = dealt
        .setup_observations()
        .into_iter()
        .filter(|o| o.audience.includes(Viewer::Seat(1)))
        .map(|o| o.event)
        .collect();
    let got: Vec<pb::GameEvent> = game_entries(&history.entries)
        .into_iter()
        .filter(|e| e.seq == dealt_at)
        .filter_map(|e| match &e.entry {
            Some(pb::history_entry::Entry::Game(g)) => Some(g.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(got, told);

    // A changed nonce breaks the chain.
    let mut tampered = log.clone();
    for event in &mut tampered.events {
        if let Some(pb::audit_event::Body::Joined(j)) = &mut event.body
            && j.nonce == "~one~"
        {
            j.nonce = "~two~".into();
        }
    }
    assert!(
        missive_server::audit::verify(&registry, id.parse().expect("uuid"), &tampered).is_err()
    );
}

/// One replayed event: its seq, the state right after it, and what it told the table.
type Step = (u64, Box<dyn MatchState>, Vec<Observation<pb::GameEvent>>);

/// Everything one seat holder received, and the version it held the seat from.
struct Holder {
    seat: u32,
    token: String,
    /// Whether it still held the seat at the start.
    at_start: bool,
    histories: Vec<pb::GetHistoryResponse>,
    views: Vec<pb::MatchView>,
}

/// Seats change hands at random before the start (join, leave, rejoin, with and without
/// nonces), for every game and seat count. Whatever a holder received before the start is
/// what a spectator saw at that version; the holders at the start receive exactly what the
/// rules, replayed from the audit log and its deal seed, tell their seat; and the log verifies.
async fn seat_churn_before_the_start_leaks_nothing(backend: Backend, seed: u64) {
    let app = spawn_app(backend).await;
    let mut client = app.grpc().await;
    let registry = Registry::new();
    let mut rng = Lcg(seed);
    for game in games() {
        for seats in game.seats.clone() {
            let what = format!("{}, {seats} seats, {backend:?}, seed {seed}", game.name);
            let id = create_match(&mut client, game.request(seats, Vec::new())).await;
            let mut holders: Vec<Holder> = Vec::new();
            let mut held: Vec<Option<usize>> = vec![None; seats as usize];
            let mut started = false;
            let mut n = 0;
            let mut left = 0;
            while !started {
                let free: Vec<u32> = (0..seats).filter(|s| held[*s as usize].is_none()).collect();
                let taken: Vec<usize> = held.iter().flatten().copied().collect();
                // Leave a third of the time while someone sits, and never fill the table
                // before someone has left, so seats change hands.
                if !taken.is_empty() && (rng.below(3) == 0 || (free.len() == 1 && left == 0)) {
                    let h = taken[rng.below(taken.len())];
                    leave(&mut client, &id, &holders[h].token).await;
                    held[holders[h].seat as usize] = None;
                    left += 1;
                } else {
                    let seat = free[rng.below(free.len())];
                    let nonce = (rng.below(2) == 0).then(|| format!("n{n}-{}", rng.below(1000)));
                    let joined = join(&mut client, &id, &format!("h{n}"), seat, nonce).await;
                    held[seat as usize] = Some(holders.len());
                    holders.push(Holder {
                        seat,
                        token: joined.seat_token,
                        at_start: false,
                        histories: Vec::new(),
                        views: Vec::new(),
                    });
                    started = free.len() == 1;
                }
                n += 1;
                // Every current holder looks, and a spectator with it: while the match is
                // open they must see the same.
                let spectator = (
                    history(&mut client, &id, None).await,
                    view(&mut client, &id, None).await,
                );
                for h in held.iter().flatten().copied() {
                    let token = holders[h].token.clone();
                    let seen = (
                        history(&mut client, &id, Some(&token)).await,
                        view(&mut client, &id, Some(&token)).await,
                    );
                    if !started {
                        assert_like_a_spectator(
                            &what,
                            (&seen.0, &seen.1),
                            (&spectator.0, &spectator.1),
                        );
                    }
                    holders[h].histories.push(seen.0);
                    holders[h].views.push(seen.1);
                }
            }
            assert!(
                holders.len() > seats as usize,
                "{what}: seats changed hands"
            );
            for h in held.iter().flatten() {
                holders[*h].at_start = true;
            }
            // A move or two where the first player can, then abandoned for the log.
            let first = held.iter().flatten().copied().find(|&h| {
                let v = holders[h].views.last().expect("a view");
                !v.legal_actions.is_empty()
            });
            if let Some(h) = first {
                let v = holders[h].views.last().expect("a view").clone();
                client
                    .act(authed(
                        pb::ActRequest {
                            match_id: id.clone(),
                            action: Some(v.legal_actions[0].clone()),
                            request_id: format!("churn-{n}"),
                            expected_version: Some(v.version),
                            seat: None,
                            ..Default::default()
                        },
                        &holders[h].token,
                    ))
                    .await
                    .expect("a legal action");
            }
            for h in held.iter().flatten().copied() {
                let token = holders[h].token.clone();
                let seen = history(&mut client, &id, Some(&token)).await;
                holders[h].histories.push(seen);
                let seen = view(&mut client, &id, Some(&token)).await;
                holders[h].views.push(seen);
            }
            let h = held.iter().flatten().copied().next().expect("a holder");
            leave(&mut client, &id, &holders[h].token).await;
            let log = audit_log(&mut client, &id).await;
            missive_server::audit::verify(&registry, id.parse().expect("uuid"), &log)
                .unwrap_or_else(|e| panic!("{what}: {e}"));

            // The rules' own replay from the deal seed: every state and what each event told.
            let (dealt_at, deal_seed) = deal_of(&log);
            let created = match &log.events[0].body {
                Some(pb::audit_event::Body::Created(c)) => c.clone(),
                other => panic!("created first, not {other:?}"),
            };
            let (kind, parsed) = registry
                .parse_options(
                    created.options.as_ref().expect("options"),
                    Some(seats as u8),
                )
                .expect("options");
            let mut state: Option<Box<dyn MatchState>> = None;
            let mut steps: Vec<Step> = Vec::new();
            for event in &log.events {
                let observations = if event.seq == dealt_at {
                    let fresh = kind
                        .setup(&parsed.config, seats as u8, deal_seed)
                        .expect("setup");
                    let told = fresh.setup_observations();
                    state = Some(fresh);
                    told
                } else if let Some(pb::audit_event::Body::Action(a)) = &event.body {
                    let stored =
                        missive_server::audit::stored_event(&registry, event, Some(&created))
                            .expect("rebuilds");
                    state
                        .as_mut()
                        .expect("dealt")
                        .apply(
                            a.seat as u8,
                            &kind
                                .decode_action(&stored.payload["action"])
                                .expect("decodes"),
                        )
                        .expect("replays")
                } else {
                    Vec::new()
                };
                if let Some(state) = &state {
                    steps.push((event.seq, state.boxed_clone(), observations));
                }
            }
            for holder in &holders {
                let viewer = Viewer::Seat(holder.seat as u8);
                for history in &holder.histories {
                    // Exactly the game events addressed to the seat, from the deal to the
                    // version of the read.
                    let expected: Vec<(u64, pb::GameEvent)> = steps
                        .iter()
                        .filter(|(seq, _, _)| *seq <= history.version)
                        .flat_map(|(seq, _, told)| {
                            told.iter()
                                .filter(|o| o.audience.includes(viewer))
                                .map(|o| (*seq, o.event.clone()))
                        })
                        .collect();
                    let got: Vec<(u64, pb::GameEvent)> = history
                        .entries
                        .iter()
                        .filter_map(|e| match &e.entry {
                            Some(pb::history_entry::Entry::Game(g)) => Some((e.seq, g.clone())),
                            _ => None,
                        })
                        .collect();
                    assert_eq!(
                        got, expected,
                        "{what}: seat {} at {}",
                        holder.seat, history.version
                    );
                    if !holder.at_start {
                        assert!(got.is_empty(), "{what}: a holder gone before the start");
                    }
                }
                for v in &holder.views {
                    let expected = steps
                        .iter()
                        .find(|(seq, _, _)| *seq == v.version)
                        .map(|(_, state, _)| state.view(viewer));
                    assert_eq!(
                        v.game, expected,
                        "{what}: seat {} at {}",
                        holder.seat, v.version
                    );
                }
            }
        }
    }
}

backend_tests! {
    #[tokio::test]
    seat_churn_before_the_start_leaks_nothing(17):
    Postgres => seat_churn_before_the_start_leaks_nothing_on_postgres,
    Citus => seat_churn_before_the_start_leaks_nothing_on_citus,
}

#[tokio::test]
async fn seat_churn_before_the_start_leaks_nothing_on_sqlite() {
    seat_churn_before_the_start_leaks_nothing(Backend::Sqlite, 71).await;
}

/// A match stored the way matches were before the deal moved to the start (created and
/// joined events without nonces or marker, dealt at creation from the committed seed) still
/// loads, shows its seats the deal of the `created` event, plays to the end and audits.
#[tokio::test]
async fn a_match_stored_before_the_deal_moved_still_loads_plays_and_audits() {
    use missive_store::{
        ChainCheck, MatchUpdate, NewEvent, NewMatch, SeatRecord, Store, StoreOptions,
    };
    use sha2::{Digest, Sha256};
    let app = spawn_app(Backend::Postgres).await;
    let store = Store::connect(
        app.database_url(),
        StoreOptions {
            notify: false,
            ..StoreOptions::default()
        },
    )
    .await
    .expect("the store");
    let registry = Registry::new();
    let game = &games()[1];
    let (kind, parsed) = registry
        .parse_options(&game.options, Some(2))
        .expect("options");
    let seed = [5u8; 32];
    let id = uuid::Uuid::new_v4();
    let now = chrono::Utc::now();
    store
        .create_match(
            NewMatch {
                id,
                kind: kind.kind().to_owned(),
                config: parsed.config.clone(),
                rules_version: kind.rules_version(),
                seat_count: 2,
                seed,
                seed_hash: Sha256::digest(seed).into(),
                turn_timeout_secs: None,
                turn_reminder_secs: None,
                created_at: now,
                creator: None,
                start: MatchUpdate::default(),
            },
            vec![NewEvent {
                kind: "created".into(),
                actor: None,
                request_id: None,
                payload: json!({ "config": parsed.config, "seat_count": 2, "fixed_deck": false }),
                at: now,
            }],
        )
        .await
        .expect("an old-style match");
    // Seat 0 was taken the old way; seat 1 is taken now, through the server.
    let raw = [9u8; 32];
    let old_token = hex::encode(raw);
    store
        .append(
            id,
            1,
            vec![NewEvent {
                kind: "joined".into(),
                actor: Some(0),
                request_id: None,
                payload: json!({ "seat": 0, "player": "old" }),
                at: now,
            }],
            MatchUpdate {
                status: None,
                seats: vec![SeatRecord {
                    seat: 0,
                    player: Some("old".into()),
                    token_hash: Some(Sha256::digest(raw).into()),
                    bot: None,
                    account: None,
                    invited: false,
                }],
                turns: None,
                notify: Vec::new(),
            },
        )
        .await
        .expect("an old-style join");
    let mut client = app.grpc().await;
    let match_id = id.to_string();
    let new_token = join(&mut client, &match_id, "new", 1, None)
        .await
        .seat_token;
    let info = view(&mut client, &match_id, None)
        .await
        .r#match
        .expect("info");
    assert_eq!(info.status, pb::MatchStatus::Active as i32);

    // Dealt at creation from the seed itself: seat 0's deal is on the created event.
    let dealt = kind.setup(&parsed.config, 2, seed).expect("setup");
    let history0 = history(&mut client, &match_id, Some(&old_token)).await;
    let told: Vec<(u64, pb::GameEvent)> = dealt
        .setup_observations()
        .into_iter()
        .filter(|o| o.audience.includes(Viewer::Seat(0)))
        .map(|o| (1, o.event))
        .collect();
    let got: Vec<(u64, pb::GameEvent)> = game_entries(&history0.entries)
        .into_iter()
        .filter_map(|e| match &e.entry {
            Some(pb::history_entry::Entry::Game(g)) => Some((e.seq, g.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(got, told);
    assert_eq!(
        view(&mut client, &match_id, Some(&old_token)).await.game,
        Some(dealt.view(Viewer::Seat(0)))
    );

    // Played to the end with the first legal action each turn.
    let tokens = [old_token, new_token];
    for step in 0..2_000 {
        let views = [
            view(&mut client, &match_id, Some(&tokens[0])).await,
            view(&mut client, &match_id, Some(&tokens[1])).await,
        ];
        if views[0].outcome.is_some() {
            break;
        }
        let seat = views
            .iter()
            .position(|v| !v.legal_actions.is_empty())
            .expect("someone can act");
        client
            .act(authed(
                pb::ActRequest {
                    match_id: match_id.clone(),
                    action: Some(views[seat].legal_actions[0].clone()),
                    request_id: format!("old-{step}"),
                    expected_version: Some(views[seat].version),
                    seat: None,
                    ..Default::default()
                },
                &tokens[seat],
            ))
            .await
            .expect("a legal action");
    }
    let info = view(&mut client, &match_id, None)
        .await
        .r#match
        .expect("info");
    assert_eq!(info.status, pb::MatchStatus::Finished as i32);
    let log = audit_log(&mut client, &match_id).await;
    match &log.events[0].body {
        Some(pb::audit_event::Body::Created(c)) => assert!(!c.deal_at_start),
        other => panic!("created first, not {other:?}"),
    }
    assert_eq!(deal_of(&log), (1, seed));
    missive_server::audit::verify(&registry, id, &log).expect("the old-style log verifies");
    assert!(matches!(
        store.verify_chain(id).await.expect("chain"),
        ChainCheck::Valid { .. }
    ));
}

async fn next(
    stream: &mut tonic::Streaming<pb::WatchMatchResponse>,
) -> Option<pb::WatchMatchResponse> {
    tokio::time::timeout(std::time::Duration::from_secs(10), stream.message())
        .await
        .expect("the watch answers")
        .expect("no error")
}

/// A watch opened with a seat token ends when its holder leaves the seat: it never streams
/// what the seat's next holder is dealt.
#[tokio::test]
async fn a_leavers_watch_ends_with_its_leave() {
    let app = spawn_app(Backend::Postgres).await;
    let mut client = app.grpc().await;
    let game = &games()[0];
    let id = create_match(&mut client, game.request(2, Vec::new())).await;
    let leaver = join(&mut client, &id, "leaver", 1, None).await.seat_token;
    let mut stream = client
        .watch_match(authed(
            pb::WatchMatchRequest {
                match_id: id.clone(),
                after_version: 0,
                seat: None,
            },
            &leaver,
        ))
        .await
        .expect("watch")
        .into_inner();
    assert_eq!(next(&mut stream).await.map(|m| m.version), Some(1));
    assert_eq!(next(&mut stream).await.map(|m| m.version), Some(2));
    leave(&mut client, &id, &leaver).await;
    let left = next(&mut stream).await.expect("the leave");
    assert!(matches!(
        left.entries[0].entry,
        Some(pb::history_entry::Entry::Left(_))
    ));
    join(&mut client, &id, "newcomer", 1, None).await;
    join(&mut client, &id, "other", 0, None).await;
    assert!(
        next(&mut stream).await.is_none(),
        "the stream ended with the leave"
    );
}
