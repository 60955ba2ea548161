//! Whole matches and error cases over gRPC, on PostgreSQL and on the SQLite default.

use std::collections::HashMap;

use missive_proto::v1 as pb;
use missive_proto::v1::missive_client::MissiveClient;
use missive_rules::Viewer;
use missive_server::games::{MatchState, Registry};
use tonic::Code;
use tonic::transport::Channel;

use crate::helpers::{
    Backend, Lcg, Options, act_request, act_with, assert_each_act_logged_once, audit_log, authed,
    backend_tests, game_events, get_match, join_as, love_letter_options, maybe_authed,
    open_love_letter, replay, seat_act, seat_view, spawn_app, spawn_app_with, spectator_view,
    told_to, two_replicas,
};

/// A played match and every view each seat received, by version.
#[derive(Debug)]
pub(crate) struct Played {
    pub(crate) match_id: String,
    pub(crate) tokens: Vec<String>,
    pub(crate) received: Vec<(u32, pb::MatchView)>,
    pub(crate) last: pb::MatchView,
    /// Acts the match took, the last one included.
    pub(crate) acts: u64,
}

pub(crate) async fn create_and_join(
    client: &mut MissiveClient<Channel>,
    seats: u32,
) -> (String, Vec<String>) {
    let created = client
        .create_match(love_letter_options(seats))
        .await
        .expect("create")
        .into_inner();
    let info = created.r#match.expect("match info");
    assert_eq!(info.seed_commitment.len(), 64, "a hex SHA-256 commitment");
    assert_eq!(info.status, pb::MatchStatus::Open as i32);
    let mut tokens = Vec::new();
    for seat in 0..seats {
        let joined = join_as(client, &info.match_id, &format!("player {seat}"), None).await;
        assert_eq!(joined.seat, seat);
        assert_eq!(
            joined.r#match,
            Some(get_match(client, &info.match_id).await),
            "the server answers a join from the match as stored"
        );
        tokens.push(joined.seat_token);
    }
    (info.match_id, tokens)
}

/// Both seats play, each choosing at random among the legal actions the server lists.
pub(crate) async fn play_over_grpc(client: &mut MissiveClient<Channel>, seed: u64) -> Played {
    let (match_id, tokens) = create_and_join(client, 2).await;
    let mut rng = Lcg(seed);
    let mut received = Vec::new();
    for acts in 1..=5000 {
        let mut mover = None;
        for (seat, token) in tokens.iter().enumerate() {
            let view = seat_view(client, &match_id, token).await;
            assert_eq!(view.seat, Some(seat as u32));
            if view.awaiting.contains(&(seat as u32)) {
                assert!(
                    !view.legal_actions.is_empty(),
                    "an awaited seat has legal actions"
                );
                mover = Some((seat, view.legal_actions.clone()));
            } else {
                assert!(
                    view.legal_actions.is_empty()
                        || view.outcome.is_some()
                        || !view.awaiting.is_empty()
                );
            }
            received.push((seat as u32, view));
        }
        let Some((seat, legal)) = mover else { break };
        let action = legal[rng.below(legal.len())].clone();
        let response = act_with(
            client,
            seat_act(&match_id, seat as u32, action, None),
            &tokens[seat],
        )
        .await;
        let view = response.view.expect("a view");
        assert_eq!(view.version, response.version);
        received.push((seat as u32, view.clone()));
        if view.outcome.is_some() {
            // The view was built from the server's cache, which folded the final act itself.
            assert_eq!(view.r#match, Some(get_match(client, &match_id).await));
            return Played {
                match_id,
                tokens,
                received,
                last: view,
                acts,
            };
        }
    }
    panic!("the match did not end");
}

fn assert_finished(played: &Played) {
    let outcome = played.last.outcome.as_ref().expect("an outcome");
    assert!(!outcome.winners.is_empty(), "someone wins");
    let info = played.last.r#match.as_ref().expect("match info");
    assert_eq!(info.status, pb::MatchStatus::Finished as i32);
    assert!(
        info.seed.is_some(),
        "the seed is revealed once the match is over"
    );
    let Some(pb::game_view::Game::LoveLetter(view)) =
        played.last.game.as_ref().and_then(|g| g.game.clone())
    else {
        panic!("a Love Letter view");
    };
    assert_eq!(view.winners, outcome.winners);
    for winner in &outcome.winners {
        assert!(view.players[*winner as usize].tokens >= view.tokens_to_win);
    }
}

backend_tests! {
    #[tokio::test]
    two_seats_play_a_full_match_over_grpc:
    Postgres => two_seats_play_a_full_match_over_grpc_on_postgres,
    Citus => two_seats_play_a_full_match_over_grpc_on_citus,
}

async fn two_seats_play_a_full_match_over_grpc(backend: Backend) {
    let app = spawn_app(backend).await;
    let played = play_over_grpc(&mut app.grpc().await, 1).await;
    assert_finished(&played);
    // The acts went through the store's group commit, and /metrics counts them: at most
    // this match's acts (the one that ends it is written on its own), and how many depends
    // on the deal: a short match may take only a few.
    let appends = app.metric("missive_store_group_commit_appends_total").await;
    let commits = app.metric("missive_store_group_commits_total").await;
    assert!(
        appends.is_some_and(|n| n >= 1 && n <= played.acts),
        "{appends:?} appends for {} acts",
        played.acts
    );
    assert!(
        commits.is_some_and(|n| n >= 1 && n <= appends.unwrap_or(0)),
        "{commits:?} commits for {appends:?} appends"
    );
}

#[tokio::test]
async fn two_seats_play_a_full_match_over_grpc_on_sqlite() {
    let app = spawn_app(Backend::Sqlite).await;
    let played = play_over_grpc(&mut app.grpc().await, 2).await;
    assert_finished(&played);
    // Each SQLite append is its own transaction: no group commit to count.
    assert_eq!(app.metric("missive_store_group_commits_total").await, None);
}

#[tokio::test]
async fn no_view_or_history_shows_a_seat_what_the_rules_hide_from_it() {
    let app = spawn_app(Backend::Postgres).await;
    let mut client = app.grpc().await;
    let played = play_over_grpc(&mut client, 3).await;
    let log = audit_log(&mut client, &played.match_id).await;
    let steps = replay(&log);
    let at: HashMap<u64, &Box<dyn MatchState>> =
        steps.iter().map(|(seq, s, _)| (*seq, s)).collect();

    // Every view a seat received is exactly what the rules let that seat see at that version.
    for (seat, view) in &played.received {
        let state = at[&view.version];
        assert_eq!(
            view.game.as_ref(),
            Some(&state.view(Viewer::Seat(*seat as u8))),
            "seat {seat} at {}",
            view.version
        );
        if view.outcome.is_none() {
            assert_eq!(view.legal_actions, state.legal_actions(*seat as u8));
        }
        // And never holds a card of the other seat's hand at that moment.
        let other = state.view(Viewer::Seat(1 - *seat as u8));
        if let (
            Some(pb::game_view::Game::LoveLetter(mine)),
            Some(pb::game_view::Game::LoveLetter(theirs)),
        ) = (
            view.game.as_ref().and_then(|g| g.game.as_ref()),
            other.game.as_ref(),
        ) {
            for card in &theirs.hand {
                assert!(
                    !mine.hand.contains(card),
                    "seat {seat} holds {card} of the other seat"
                );
            }
        }
    }

    // Each seat's history is exactly the observations addressed to it, in order; a
    // spectator's is the public ones.
    for viewer in [Some(0u32), Some(1), None] {
        let token = viewer.map(|seat| played.tokens[seat as usize].as_str());
        let got = game_events(&mut client, &played.match_id, viewer, token).await;
        let who = viewer.map_or(Viewer::Spectator, |s| Viewer::Seat(s as u8));
        let expected = told_to(&steps, who);
        assert!(!expected.is_empty());
        assert_eq!(got, expected, "history of {viewer:?}");
    }
}

backend_tests! {
    #[tokio::test]
    a_finished_matchs_exported_log_verifies_and_replays_to_the_same_state:
    Postgres => a_finished_matchs_exported_log_verifies_and_replays_to_the_same_state_on_postgres,
    Citus => a_finished_matchs_exported_log_verifies_and_replays_to_the_same_state_on_citus,
}

async fn a_finished_matchs_exported_log_verifies_and_replays_to_the_same_state(backend: Backend) {
    let app = spawn_app(backend).await;
    let mut client = app.grpc().await;
    let played = play_over_grpc(&mut client, 4).await;
    let log = audit_log(&mut client, &played.match_id).await;
    let info = get_match(&mut client, &played.match_id).await;
    assert_eq!(
        log.seed_commitment, info.seed_commitment,
        "the commitment published at creation"
    );
    let registry = Registry::new();
    let id = played.match_id.parse().expect("uuid");
    let state = missive_server::audit::verify(&registry, id, &log).expect("the log verifies");
    let spectator = spectator_view(&mut client, &played.match_id).await;
    assert_eq!(
        spectator.game,
        Some(state.view(Viewer::Spectator)),
        "replay reaches the same final state"
    );
    assert_eq!(
        state
            .outcome()
            .map(|o| o.winners.iter().map(u32::from).collect::<Vec<_>>()),
        spectator.outcome.map(|o| o.winners)
    );

    // Tampering with any one action, or with the seed, is caught.
    let mut tampered = log.clone();
    let action = tampered
        .events
        .iter_mut()
        .rev()
        .find(|e| matches!(e.body, Some(pb::audit_event::Body::Action(_))))
        .expect("an action");
    if let Some(pb::audit_event::Body::Action(a)) = &mut action.body {
        a.seat = 1 - a.seat;
    }
    assert!(missive_server::audit::verify(&registry, id, &tampered).is_err());
    let mut wrong_seed = log.clone();
    wrong_seed.seed = "00".repeat(32);
    assert!(matches!(
        missive_server::audit::verify(&registry, id, &wrong_seed),
        Err(missive_server::audit::AuditError::SeedMismatch)
    ));
}

backend_tests! {
    #[tokio::test]
    a_retried_act_is_applied_once_and_returns_the_same_result:
    Postgres => a_retried_act_is_applied_once_and_returns_the_same_result_on_postgres,
    Citus => a_retried_act_is_applied_once_and_returns_the_same_result_on_citus,
}

async fn a_retried_act_is_applied_once_and_returns_the_same_result(backend: Backend) {
    let app = spawn_app(backend).await;
    let mut client = app.grpc().await;
    let (match_id, tokens) = create_and_join(&mut client, 2).await;
    let view = spectator_view(&mut client, &match_id).await;
    let seat = view.awaiting[0] as usize;
    let mine = seat_view(&mut client, &match_id, &tokens[seat]).await;
    let request = pb::ActRequest {
        match_id: match_id.clone(),
        action: Some(mine.legal_actions[0].clone()),
        request_id: "retry-me".into(),
        expected_version: Some(mine.version),
        seat: None,
        ..Default::default()
    };
    let first = act_with(&mut client, request.clone(), &tokens[seat]).await;
    let second = act_with(&mut client, request.clone(), &tokens[seat]).await;
    assert!(!first.duplicate);
    assert!(second.duplicate);
    assert_eq!(first.version, mine.version + 1);
    assert_eq!(second.version, first.version);
    assert_eq!(second.view, first.view);
    let after = client
        .get_match(pb::GetMatchRequest { match_id })
        .await
        .expect("match")
        .into_inner()
        .r#match
        .expect("info");
    assert_eq!(after.version, first.version, "applied once");
}

#[tokio::test]
async fn a_watcher_receives_every_update_of_a_match_in_order() {
    let app = spawn_app(Backend::Postgres).await;
    let mut client = app.grpc().await;
    let match_id = open_love_letter(&mut client, 2).await;
    let mut stream = client
        .watch_match(pb::WatchMatchRequest {
            match_id: match_id.clone(),
            after_version: 0,
            seat: None,
        })
        .await
        .expect("watch")
        .into_inner();
    let watcher = tokio::spawn(async move {
        let mut versions = Vec::new();
        let mut last = None;
        while let Some(update) = stream.message().await.expect("stream") {
            versions.push(update.version);
            last = update.view;
        }
        (versions, last)
    });
    // Play the match with a second client, seats joining after the watch began.
    let mut player = app.grpc().await;
    let mut tokens = Vec::new();
    for seat in 0..2 {
        tokens.push(
            join_as(&mut player, &match_id, &format!("p{seat}"), None)
                .await
                .seat_token,
        );
    }
    let final_version = play_out(&mut player, &match_id, &tokens, 9).await;
    let (versions, last) = tokio::time::timeout(std::time::Duration::from_secs(30), watcher)
        .await
        .expect("the stream ends with the match")
        .expect("watcher task");
    let expected: Vec<u64> = (1..=final_version).collect();
    assert_eq!(versions, expected, "every update from the first, in order");
    assert!(
        last.and_then(|v| v.outcome).is_some(),
        "the last update shows the outcome"
    );
}

/// A join answers with the seat's view as the join left the match, the one GetView then
/// shows; the second join starts the match, so its answer holds a dealt hand. A retried join
/// answers with the view as the match is now.
#[tokio::test]
async fn a_join_answers_with_its_seats_view() {
    let app = spawn_app(Backend::Postgres).await;
    let mut client = app.grpc().await;
    let match_id = open_love_letter(&mut client, 2).await;
    let join = |player: &str| pb::JoinMatchRequest {
        match_id: match_id.clone(),
        player: player.to_owned(),
        request_id: format!("join-of-{player}-0123456789"),
        ..Default::default()
    };
    let mut answers = Vec::new();
    for player in ["ann", "bob"] {
        let joined = client
            .join_match(join(player))
            .await
            .expect("join")
            .into_inner();
        let view = joined.view.clone().expect("a join answers with a view");
        assert_eq!(
            view.seat,
            Some(joined.seat),
            "{player}: the joined seat's view"
        );
        assert_eq!(
            view.r#match, joined.r#match,
            "{player}: of the match answered"
        );
        assert_eq!(
            view,
            seat_view(&mut client, &match_id, &joined.seat_token).await,
            "{player}: as GetView shows it right after"
        );
        answers.push(joined);
    }
    let started = answers[1].view.as_ref().expect("view");
    assert!(started.game.is_some(), "the second join deals");
    assert!(!started.awaiting.is_empty(), "and the match awaits a seat");
    let retried = client
        .join_match(join("ann"))
        .await
        .expect("retried join")
        .into_inner();
    assert_eq!(retried.seat_token, answers[0].seat_token, "the same seat");
    assert_eq!(
        retried.view,
        Some(seat_view(&mut client, &match_id, &answers[0].seat_token).await),
        "a retry answers with the view as it is now"
    );
    assert_ne!(retried.view, answers[0].view, "not as it was");
}

/// Plays the match to its end, the awaited seat choosing at random among its legal actions;
/// returns the final version.
async fn play_out(
    player: &mut MissiveClient<Channel>,
    match_id: &str,
    tokens: &[String],
    seed: u64,
) -> u64 {
    let mut rng = Lcg(seed);
    loop {
        let spectator = spectator_view(player, match_id).await;
        if spectator.outcome.is_some() {
            return spectator.version;
        }
        let seat = spectator.awaiting[0] as usize;
        let view = seat_view(player, match_id, &tokens[seat]).await;
        let action = view.legal_actions[rng.below(view.legal_actions.len())].clone();
        player
            .act(authed(act_request(match_id, &view, action), &tokens[seat]))
            .await
            .expect("act");
    }
}

/// Clients that give up on their acts: each act is first sent with a deadline (from 50 µs to
/// 4 ms, so the server drops it at every point of its way: before deciding, while appending,
/// after), then sent again unchanged without one, as a client that lost its answer would. The
/// retry answers the act once: the original version when the first attempt was applied, a
/// fresh one when it was not. Every act is in the log exactly once, and on PostgreSQL no
/// session is left inside a transaction by the dropped requests.
async fn acts_given_up_by_their_clients(backend: Backend) {
    use sqlx::Connection;
    use std::time::Duration;
    let app = spawn_app(backend).await;
    let mut player = app.grpc().await;
    let deadlines = [1, 10, 25, 50, 100, 200, 500, 1_000, 4_000].map(Duration::from_micros);
    let (mut given_up, mut applied_anyway) = (0, 0);
    for game in 0..3u64 {
        let (match_id, tokens) = create_and_join(&mut player, 2).await;
        let mut rng = Lcg(game);
        let mut acts = HashMap::new();
        loop {
            let spectator = spectator_view(&mut player, &match_id).await;
            if spectator.outcome.is_some() {
                break;
            }
            let seat = spectator.awaiting[0] as usize;
            let view = seat_view(&mut player, &match_id, &tokens[seat]).await;
            let action = view.legal_actions[rng.below(view.legal_actions.len())].clone();
            let act = act_request(&match_id, &view, action);
            let mut first = authed(act.clone(), &tokens[seat]);
            first.set_timeout(deadlines[acts.len() % deadlines.len()]);
            let first = match player.act(first).await {
                Ok(answer) => Some(answer.into_inner().version),
                Err(status) => {
                    assert!(
                        matches!(status.code(), Code::DeadlineExceeded | Code::Cancelled),
                        "a first attempt failed otherwise: {status:?}"
                    );
                    given_up += 1;
                    None
                }
            };
            let retry = act_with(&mut player, act.clone(), &tokens[seat]).await;
            match first {
                Some(version) => {
                    assert!(retry.duplicate, "a retry of an answered act is a duplicate");
                    assert_eq!(retry.version, version, "with its original version");
                }
                None => applied_anyway += u32::from(retry.duplicate),
            }
            assert!(
                acts.insert(act.request_id, retry.version).is_none(),
                "a fresh request id each act"
            );
        }
        let log = audit_log(&mut player, &match_id).await;
        assert_each_act_logged_once(
            &acts,
            log.events
                .iter()
                .map(|event| (event.request_id.as_deref(), event.seq)),
        );
    }
    assert!(given_up > 0, "no first attempt was given up");
    eprintln!("{given_up} acts given up, {applied_anyway} of them applied before they were");
    if matches!(backend, Backend::Sqlite) {
        return;
    }
    let mut db = sqlx::PgConnection::connect(app.database_url())
        .await
        .expect("database");
    let mut left = -1;
    for _ in 0..50 {
        left = sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
             AND state = 'idle in transaction' AND pid <> pg_backend_pid()",
        )
        .fetch_one(&mut db)
        .await
        .expect("sessions");
        if left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(left, 0, "sessions left idle in a transaction");
}

backend_tests! {
    #[tokio::test]
    acts_given_up_by_their_clients:
    Postgres => acts_given_up_by_their_clients_are_applied_once_on_postgres,
    Citus => acts_given_up_by_their_clients_are_applied_once_on_citus,
    Sqlite => acts_given_up_by_their_clients_are_applied_once_on_sqlite,
}

/// An act its player gave up on still runs to its end once it reached the server: a bot owed
/// the next turn plays it at once, as after any act, not at the next poll for due turns (10 s
/// here). The act is sent with a deadline (1 µs to 4 ms), then again unchanged.
#[tokio::test]
async fn a_bot_answers_an_act_its_client_gave_up_on_at_once_on_postgres() {
    use std::time::{Duration, Instant};
    let options = Options {
        env: &[("MISSIVE_TURN_POLL_MS", "10000")],
        ..Options::default()
    };
    let app = spawn_app_with(Backend::Postgres, options).await;
    let mut player = app.grpc().await;
    let deadlines = [1, 10, 25, 50, 100, 200, 500, 1_000, 4_000].map(Duration::from_micros);
    let (mut acts, mut applied_anyway) = (0, 0);
    for game in 0..3u64 {
        let created = player
            .create_match(pb::CreateMatchRequest {
                bots: vec![pb::BotSeat {
                    seat: 1,
                    strategy: String::new(),
                    nonce: String::new(),
                }],
                ..love_letter_options(2)
            })
            .await
            .expect("create")
            .into_inner();
        let match_id = created.r#match.expect("info").match_id;
        let token = join_as(&mut player, &match_id, "ann", Some(0))
            .await
            .seat_token;
        let mut rng = Lcg(game);
        loop {
            let asked = Instant::now();
            let view = loop {
                let view = seat_view(&mut player, &match_id, &token).await;
                if view.outcome.is_some() || view.awaiting.contains(&0) {
                    break view;
                }
                assert!(
                    asked.elapsed() < Duration::from_secs(3),
                    "the bot has not played within 3 s of act {acts} (version {})",
                    view.version
                );
                tokio::time::sleep(Duration::from_millis(10)).await;
            };
            if view.outcome.is_some() {
                break;
            }
            let action = view.legal_actions[rng.below(view.legal_actions.len())].clone();
            let act = act_request(&match_id, &view, action);
            let mut first = authed(act.clone(), &token);
            first.set_timeout(deadlines[acts % deadlines.len()]);
            acts += 1;
            if player.act(first).await.is_ok() {
                continue;
            }
            let retry = act_with(&mut player, act, &token).await;
            applied_anyway += u32::from(retry.duplicate);
        }
    }
    assert!(
        applied_anyway > 0,
        "no act was applied after its client gave up"
    );
    eprintln!("{acts} acts, {applied_anyway} applied after their client gave up");
}

/// Many streams watch one match: two spectators and two streams of each seat, open before the
/// first act. Every stream gets every update, each exactly as the rules let its own viewer see
/// it, and streams of the same viewer get the same.
#[tokio::test]
async fn streams_of_one_match_each_get_their_own_viewers_updates() {
    let app = spawn_app(Backend::Postgres).await;
    let mut player = app.grpc().await;
    let (match_id, tokens) = create_and_join(&mut player, 2).await;
    let joined = get_match(&mut player, &match_id).await.version;
    let viewers = [None, None, Some(0u32), Some(0), Some(1), Some(1)];
    let mut watchers = Vec::new();
    for viewer in viewers {
        let mut watching = app.grpc().await;
        let request = pb::WatchMatchRequest {
            match_id: match_id.clone(),
            after_version: joined,
            seat: None,
        };
        let request = maybe_authed(request, viewer.map(|seat| tokens[seat as usize].as_str()));
        let mut stream = watching
            .watch_match(request)
            .await
            .expect("watch")
            .into_inner();
        watchers.push(tokio::spawn(async move {
            let _connection = watching;
            let mut got = Vec::new();
            while let Some(update) = stream.message().await.expect("stream") {
                got.push(update);
            }
            got
        }));
    }
    let last = play_out(&mut player, &match_id, &tokens, 21).await;
    let log = audit_log(&mut player, &match_id).await;
    let steps = replay(&log);
    let at: HashMap<u64, &Box<dyn MatchState>> =
        steps.iter().map(|(seq, s, _)| (*seq, s)).collect();
    let mut received = Vec::new();
    for (viewer, watcher) in viewers.into_iter().zip(watchers) {
        let got = tokio::time::timeout(std::time::Duration::from_secs(30), watcher)
            .await
            .expect("each stream ends with the match")
            .expect("watcher task");
        let versions: Vec<u64> = got.iter().map(|u| u.version).collect();
        assert_eq!(
            versions,
            (joined + 1..=last).collect::<Vec<_>>(),
            "{viewer:?}: every update, in order"
        );
        let who = viewer.map_or(Viewer::Spectator, |s| Viewer::Seat(s as u8));
        for update in &got {
            let view = update.view.as_ref().expect("a view");
            assert_eq!(view.seat, viewer, "{viewer:?} at {}", update.version);
            assert_eq!(
                view.game.as_ref(),
                Some(&at[&update.version].view(who)),
                "{viewer:?} sees what the rules show it at {}",
                update.version
            );
            if viewer.is_none() {
                assert!(view.legal_actions.is_empty(), "a spectator has no actions");
            }
        }
        received.push(got);
    }
    assert_eq!(received[0], received[1], "the spectators got the same");
    assert_eq!(received[2], received[3], "seat 0's streams got the same");
    assert_eq!(received[4], received[5], "seat 1's streams got the same");
    assert_ne!(received[2], received[4], "the seats did not");
}

#[tokio::test]
async fn bad_grpc_requests_get_the_right_code_and_change_nothing() {
    let app = spawn_app(Backend::Postgres).await;
    let mut client = app.grpc().await;
    let (match_id, tokens) = create_and_join(&mut client, 2).await;
    let version = |client: &mut MissiveClient<Channel>| {
        let mut client = client.clone();
        let match_id = match_id.clone();
        async move {
            client
                .get_match(pb::GetMatchRequest { match_id })
                .await
                .expect("match")
                .into_inner()
                .r#match
                .expect("info")
                .version
        }
    };
    let before = version(&mut client).await;
    let spectator = spectator_view(&mut client, &match_id).await;
    let mover = spectator.awaiting[0] as usize;
    let idle = 1 - mover;
    let idle_view = seat_view(&mut client, &match_id, &tokens[idle]).await;
    let Some(pb::game_view::Game::LoveLetter(ll)) = idle_view.game.and_then(|g| g.game) else {
        panic!("view")
    };
    let idle_card = ll.hand[0].clone();
    let play = |card: &str| pb::GameAction {
        game: Some(pb::game_action::Game::LoveLetter(pb::LoveLetterAction {
            action: Some(pb::love_letter_action::Action::Play(pb::LoveLetterPlay {
                card: card.into(),
                target: None,
                guess: 0,
            })),
        })),
    };
    let act = |action: Option<pb::GameAction>, seat: Option<u32>| pb::ActRequest {
        match_id: match_id.clone(),
        action,
        request_id: uuid::Uuid::new_v4().to_string(),
        expected_version: None,
        seat,
        ..Default::default()
    };

    let cases: Vec<(&str, tonic::Request<pb::ActRequest>, Code)> = vec![
        (
            "no token",
            tonic::Request::new(act(Some(play(&idle_card)), None)),
            Code::Unauthenticated,
        ),
        (
            "wrong token",
            authed(act(Some(play(&idle_card)), None), &"ab".repeat(32)),
            Code::Unauthenticated,
        ),
        (
            "garbage token",
            authed(act(Some(play(&idle_card)), None), "not-a-token"),
            Code::Unauthenticated,
        ),
        (
            "acting for another seat",
            authed(
                act(Some(play(&idle_card)), Some(mover as u32)),
                &tokens[idle],
            ),
            Code::PermissionDenied,
        ),
        (
            "out of turn",
            authed(act(Some(play(&idle_card)), None), &tokens[idle]),
            Code::FailedPrecondition,
        ),
        (
            "no action",
            authed(act(None, None), &tokens[mover]),
            Code::InvalidArgument,
        ),
        (
            "unknown action",
            authed(
                act(Some(pb::GameAction { game: None }), None),
                &tokens[mover],
            ),
            Code::InvalidArgument,
        ),
        (
            "unknown card",
            authed(act(Some(play("Z♠")), None), &tokens[mover]),
            Code::InvalidArgument,
        ),
    ];
    for (name, request, code) in cases {
        let status = client.act(request).await.expect_err(name);
        assert_eq!(status.code(), code, "{name}: {}", status.message());
        assert!(!status.message().is_empty(), "{name} explains itself");
    }
    let out_of_turn = client
        .act(authed(act(Some(play(&idle_card)), None), &tokens[idle]))
        .await
        .expect_err("out of turn");
    assert_eq!(
        out_of_turn
            .metadata()
            .get("missive-rule")
            .and_then(|v| v.to_str().ok()),
        Some("not-your-turn")
    );
    assert_eq!(
        version(&mut client).await,
        before,
        "refused requests change nothing"
    );

    let unknown = client
        .get_view(pb::GetViewRequest {
            match_id: uuid::Uuid::new_v4().to_string(),
            seat: None,
        })
        .await
        .expect_err("unknown match");
    assert_eq!(unknown.code(), Code::NotFound);
    let malformed = client
        .get_match(pb::GetMatchRequest {
            match_id: "nope".into(),
        })
        .await
        .expect_err("bad id");
    assert_eq!(malformed.code(), Code::InvalidArgument);
    let huge = client
        .join_match(pb::JoinMatchRequest {
            match_id: match_id.clone(),
            player: "x".repeat(1 << 20),
            seat: None,
            ..Default::default()
        })
        .await
        .expect_err("huge message");
    assert!(
        matches!(
            huge.code(),
            Code::OutOfRange | Code::ResourceExhausted | Code::InvalidArgument
        ),
        "{huge:?}"
    );
    assert_eq!(version(&mut client).await, before);
}

#[tokio::test]
async fn two_servers_on_one_database_never_serve_a_stale_version() {
    let (first, _second, mut a, mut b) = two_replicas(Backend::Postgres).await;
    let mut rng = Lcg(11);
    // A random match may end before it passes two snapshots; then play another.
    let mut long_enough = None;
    for _attempt in 0..10 {
        let (match_id, tokens) = create_and_join(&mut a, 2).await;
        // Alternate servers every action, past several snapshots (one every 16 events), so each
        // server must fold in what the other appended, from a snapshot or from its cache.
        for step in 0..60 {
            let (client, other) = if step % 2 == 0 {
                (&mut a, &mut b)
            } else {
                (&mut b, &mut a)
            };
            let spectator = spectator_view(client, &match_id).await;
            if spectator.outcome.is_some() {
                break;
            }
            let seat = spectator.awaiting[0] as usize;
            let mine = seat_view(client, &match_id, &tokens[seat]).await;
            assert_eq!(mine.version, spectator.version);
            let action = mine.legal_actions[rng.below(mine.legal_actions.len())].clone();
            let acted = act_with(
                client,
                pb::ActRequest {
                    match_id: match_id.clone(),
                    action: Some(action),
                    request_id: format!("step-{step}"),
                    expected_version: Some(mine.version),
                    seat: None,
                    ..Default::default()
                },
                &tokens[seat],
            )
            .await;
            let seen = seat_view(other, &match_id, &tokens[seat]).await;
            assert_eq!(
                seen.version, acted.version,
                "the other server sees the new version at once"
            );
            assert_eq!(
                seen.game,
                acted.view.expect("view").game,
                "and the same state"
            );
        }
        let reached = spectator_view(&mut a, &match_id).await.version;
        if reached > 32 {
            long_enough = Some(match_id);
            break;
        }
    }
    let match_id = long_enough.expect("one of ten random matches passes two snapshots");
    // A server that starts now loads the match from its newest snapshot plus the events after.
    let third = crate::helpers::spawn_replica(&first).await;
    let request = || pb::GetViewRequest {
        match_id: match_id.clone(),
        seat: None,
    };
    let cold = third
        .grpc()
        .await
        .get_view(request())
        .await
        .expect("view")
        .into_inner()
        .view;
    let warm = a.get_view(request()).await.expect("view").into_inner().view;
    assert!(
        cold.as_ref().is_some_and(|v| v.version > 32),
        "past two snapshots"
    );
    assert_eq!(cold, warm);
}
