//! Turn deadlines and server-side bots: a passed deadline plays the game's default action once
//! (also with two replicas racing, and across a restart), and bots play matches to the end.

use std::time::{Duration, Instant};

use missive_proto::v1 as pb;
use missive_proto::v1::missive_client::MissiveClient;
use missive_server::games::Registry;
use tonic::Code;
use tonic::transport::Channel;

use crate::helpers::{
    Backend, TestApp, act_with, authed, backend_tests, get_match, history, join_as, leave,
    love_letter_options, seat_view, spawn_app, spawn_replica, spectator_view,
};

/// Creates a Love Letter match with `timeout` seconds per turn and `bots` as bot seats, and
/// joins every other seat. Returns the match id and the tokens by seat (empty for bots).
async fn start_match(
    client: &mut MissiveClient<Channel>,
    seats: u32,
    timeout: Option<u32>,
    bots: &[u32],
) -> (String, Vec<String>) {
    start_match_with(client, seats, (timeout, None), bots, "").await
}

/// [`start_match`] with a turn reminder (`timing` is the timeout and the reminder) and bots of
/// the named strategy (empty: the default).
async fn start_match_with(
    client: &mut MissiveClient<Channel>,
    seats: u32,
    timing: (Option<u32>, Option<u32>),
    bots: &[u32],
    strategy: &str,
) -> (String, Vec<String>) {
    let created = client
        .create_match(pb::CreateMatchRequest {
            turn_timeout_secs: timing.0,
            turn_reminder_secs: timing.1,
            bots: bots
                .iter()
                .map(|&seat| pb::BotSeat {
                    seat,
                    strategy: strategy.to_owned(),
                    nonce: String::new(),
                })
                .collect(),
            ..love_letter_options(seats)
        })
        .await
        .expect("create")
        .into_inner()
        .r#match
        .expect("match info");
    let mut tokens = vec![String::new(); seats as usize];
    for seat in (0..seats).filter(|s| !bots.contains(s)) {
        let joined = join_as(
            client,
            &created.match_id,
            &format!("player {seat}"),
            Some(seat),
        )
        .await;
        tokens[seat as usize] = joined.seat_token;
    }
    (created.match_id, tokens)
}

/// Polls the match until `done` holds or `limit` passes.
async fn wait_until(
    client: &mut MissiveClient<Channel>,
    match_id: &str,
    limit: Duration,
    done: impl Fn(&pb::MatchInfo) -> bool,
) -> pb::MatchInfo {
    let start = Instant::now();
    loop {
        let info = get_match(client, match_id).await;
        if done(&info) {
            return info;
        }
        assert!(
            start.elapsed() < limit,
            "gave up after {limit:?}; match at version {} status {}",
            info.version,
            info.status
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn seconds(at: &Option<pbjson_types::Timestamp>) -> f64 {
    let at = at.as_ref().expect("a time");
    at.seconds as f64 + f64::from(at.nanos) / 1e9
}

/// The full log of a finished or abandoned match, checked by the independent verifier.
async fn verified_audit(client: &mut MissiveClient<Channel>, match_id: &str) -> pb::AuditLog {
    let log = history(client, match_id, None)
        .await
        .audit
        .expect("an audit log once the match is over");
    missive_server::audit::verify(&Registry::new(), match_id.parse().expect("uuid"), &log)
        .expect("the exported log verifies and replays");
    log
}

/// Every timeout of the log: played for an awaited seat under the request id naming the
/// version it was awaited after, without an actor, and not before its deadline.
fn check_timeouts(log: &pb::AuditLog, timeout: u32) -> Vec<(u64, u32, pb::GameAction)> {
    let mut found = Vec::new();
    for (i, event) in log.events.iter().enumerate() {
        let Some(pb::audit_event::Body::TimedOut(t)) = &event.body else {
            assert_ne!(event.kind, "timeout");
            continue;
        };
        assert_eq!(event.kind, "timeout");
        assert_eq!(event.actor, None, "a timeout is the server's doing");
        assert_eq!(
            event.request_id.as_deref(),
            Some(format!("timeout:{}:{}", event.seq - 1, t.seat).as_str())
        );
        let previous = &log.events[i - 1];
        let waited = seconds(&event.at) - seconds(&previous.at);
        assert!(
            waited >= f64::from(timeout) - 1e-6,
            "timeout at seq {} after only {waited:.3} s",
            event.seq
        );
        found.push((
            event.seq,
            t.seat,
            t.action.clone().expect("the action played"),
        ));
    }
    found
}

fn is_public_play(action: &pb::GameAction) -> bool {
    matches!(
        &action.game,
        Some(pb::game_action::Game::LoveLetter(pb::LoveLetterAction {
            action: Some(pb::love_letter_action::Action::Play(_))
        }))
    )
}

fn timed_out_entry(history: &pb::GetHistoryResponse, seq: u64) -> pb::TurnTimedOut {
    history
        .entries
        .iter()
        .find_map(|e| match &e.entry {
            Some(pb::history_entry::Entry::TimedOut(t)) if e.seq == seq => Some(t.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("a timed-out entry at seq {seq}"))
}

async fn a_passed_deadline_plays_the_default_action_once(backend: Backend) {
    const TIMEOUT: u32 = 2;
    let app = spawn_app(backend).await;
    let mut client = app.grpc().await;
    let (match_id, tokens) = start_match(&mut client, 2, Some(TIMEOUT), &[]).await;
    let started = get_match(&mut client, &match_id).await;
    let first = seat_view(&mut client, &match_id, &tokens[0]).await;
    let late = first.awaiting[0];
    let other_seat = 1 - late;

    // Nobody acts: the default action is played for the awaited seat, once.
    let info = wait_until(&mut client, &match_id, Duration::from_secs(6), |m| {
        m.version > started.version
    })
    .await;
    assert_eq!(info.version, started.version + 1);
    // Usually the other seat's turn; the same seat's again after a Chancellor.
    let spectating = history(&mut client, &match_id, None).await;
    let on_time = *seat_view(&mut client, &match_id, &tokens[0])
        .await
        .awaiting
        .first()
        .unwrap_or_else(|| panic!("someone is awaited: {spectating:?}"));
    let view_after = seat_view(&mut client, &match_id, &tokens[on_time as usize]).await;

    // That seat acts in time: no timeout for it.
    let acted = act_with(
        &mut client,
        pb::ActRequest {
            match_id: match_id.clone(),
            action: Some(view_after.legal_actions[0].clone()),
            request_id: "in-time".into(),
            expected_version: Some(info.version),
            seat: None,
            ..Default::default()
        },
        &tokens[on_time as usize],
    )
    .await;
    assert!(!acted.duplicate);

    // Abandoning the match clears its deadlines: nothing fires afterwards.
    leave(&mut client, &match_id, &tokens[0]).await;
    let abandoned = get_match(&mut client, &match_id).await;
    tokio::time::sleep(Duration::from_millis(u64::from(TIMEOUT) * 1000 + 700)).await;
    assert_eq!(
        get_match(&mut client, &match_id).await.version,
        abandoned.version
    );

    let log = verified_audit(&mut client, &match_id).await;
    let timeouts = check_timeouts(&log, TIMEOUT);
    assert_eq!(
        timeouts
            .iter()
            .map(|(seq, seat, _)| (*seq, *seat))
            .collect::<Vec<_>>(),
        vec![(started.version + 1, late)]
    );
    let acted_event = &log.events[acted.version as usize - 1];
    assert_eq!(acted_event.kind, "action");
    assert_eq!(acted_event.actor, Some(on_time));

    // The late seat sees what was played for it; others only if the game makes it public.
    let (seq, _, action) = &timeouts[0];
    let own = timed_out_entry(
        &history(&mut client, &match_id, Some(&tokens[late as usize])).await,
        *seq,
    );
    assert_eq!(own.action.as_ref(), Some(action));
    let public = is_public_play(action).then(|| action.clone());
    let other = timed_out_entry(
        &history(&mut client, &match_id, Some(&tokens[other_seat as usize])).await,
        *seq,
    );
    assert_eq!((other.seat, other.action), (late, public.clone()));
    let spectator = timed_out_entry(&history(&mut client, &match_id, None).await, *seq);
    assert_eq!((spectator.seat, spectator.action), (late, public));
}

backend_tests! {
    #[tokio::test]
    a_passed_deadline_plays_the_default_action_once:
    Postgres => a_passed_deadline_plays_the_default_action_once_on_postgres,
    Citus => a_passed_deadline_plays_the_default_action_once_on_citus,
    Sqlite => a_passed_deadline_plays_the_default_action_once_on_sqlite,
}

/// `missive_turns_played_total{kind="timeout"}` of one server.
async fn timeouts_played(app: &TestApp) -> u64 {
    app.metric("missive_turns_played_total{kind=\"timeout\"}")
        .await
        .expect("the counter is exported")
}

#[tokio::test]
async fn two_replicas_play_each_passed_deadline_once() {
    const TIMEOUT: u32 = 1;
    let app = spawn_app(Backend::Postgres).await;
    let replica = spawn_replica(&app).await;
    let mut client = app.grpc().await;
    let (match_id, tokens) = start_match(&mut client, 2, Some(TIMEOUT), &[]).await;
    let started = get_match(&mut client, &match_id).await;

    // Nobody acts: both replicas race for every deadline, one after the other.
    wait_until(&mut client, &match_id, Duration::from_secs(10), |m| {
        m.version >= started.version + 3 || m.status != pb::MatchStatus::Active as i32
    })
    .await;
    let mut other = replica.grpc().await;
    if get_match(&mut other, &match_id).await.status == pb::MatchStatus::Active as i32 {
        leave(&mut other, &match_id, &tokens[1]).await;
    }
    // A turn being played when the match was abandoned is refused; let it settle.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let log = verified_audit(&mut client, &match_id).await;
    let timeouts = check_timeouts(&log, TIMEOUT);
    assert!(timeouts.len() >= 3, "{} timeouts", timeouts.len());
    // Every event after the joins up to the end is a timeout, each for the seat then awaited.
    for event in &log.events[started.version as usize..] {
        assert!(
            matches!(event.kind.as_str(), "timeout" | "left"),
            "unexpected {} at seq {}",
            event.kind,
            event.seq
        );
    }
    // Each was applied by exactly one replica.
    let played = timeouts_played(&app).await + timeouts_played(&replica).await;
    assert_eq!(played, timeouts.len() as u64);
}

async fn a_deadline_survives_a_restart(backend: Backend) {
    const TIMEOUT: u32 = 2;
    let mut app = spawn_app(backend).await;
    let mut client = app.grpc().await;
    let (match_id, _tokens) = start_match(&mut client, 2, Some(TIMEOUT), &[]).await;
    let started = get_match(&mut client, &match_id).await;

    // Down (killed, not stopped) while the deadline passes, then back on the same database.
    app.restart_after(Duration::from_millis(u64::from(TIMEOUT) * 1000 + 500))
        .await;
    let mut client = app.grpc().await;
    let info = wait_until(&mut client, &match_id, Duration::from_secs(5), |m| {
        m.version > started.version
    })
    .await;
    assert_eq!(info.version, started.version + 1);
    let history = history(&mut client, &match_id, None).await;
    let entry = history
        .entries
        .iter()
        .find(|e| e.seq == started.version + 1)
        .expect("the timeout's entry");
    assert!(
        matches!(entry.entry, Some(pb::history_entry::Entry::TimedOut(_))),
        "{entry:?}"
    );
}

/// `at` plus `secs`, as a view lists a deadline.
fn plus(at: Option<pbjson_types::Timestamp>, secs: u32) -> Option<pbjson_types::Timestamp> {
    let at = at.expect("a time");
    Some(pbjson_types::Timestamp {
        seconds: at.seconds + i64::from(secs),
        nanos: at.nanos,
    })
}

fn deadline(seat: u32, due_at: Option<pbjson_types::Timestamp>) -> Vec<pb::TurnDeadline> {
    vec![pb::TurnDeadline { seat, due_at }]
}

async fn a_view_lists_the_awaited_seats_deadline(backend: Backend) {
    const TIMEOUT: u32 = 3600;
    let mut app = spawn_app(backend).await;
    let mut client = app.grpc().await;
    let (match_id, tokens) = start_match(&mut client, 2, Some(TIMEOUT), &[]).await;
    let started = get_match(&mut client, &match_id).await;
    let view = seat_view(&mut client, &match_id, &tokens[0]).await;
    let first = view.awaiting[0];
    // Due a timeout after the event that made the seat awaited (the last join).
    let due = deadline(first, plus(started.updated_at, TIMEOUT));
    assert_eq!(view.deadlines, due);
    let spectator = spectator_view(&mut client, &match_id).await;
    assert_eq!(spectator.deadlines, due, "deadlines are public");

    // The seat acts: the next awaited seat's time starts with that action, and a watcher's
    // update says so too.
    let mut watch = client
        .watch_match(pb::WatchMatchRequest {
            match_id: match_id.clone(),
            after_version: started.version,
            seat: None,
        })
        .await
        .expect("watch")
        .into_inner();
    let mover = seat_view(&mut client, &match_id, &tokens[first as usize]).await;
    let acted = act_with(
        &mut client,
        pb::ActRequest {
            match_id: match_id.clone(),
            action: Some(mover.legal_actions[0].clone()),
            request_id: "first".into(),
            expected_version: Some(mover.version),
            seat: None,
            ..Default::default()
        },
        &tokens[first as usize],
    )
    .await;
    let after = acted.view.expect("a view");
    let next = after.awaiting[0];
    let moved = get_match(&mut client, &match_id).await;
    let due = deadline(next, plus(moved.updated_at, TIMEOUT));
    assert_eq!(after.deadlines, due);
    let update = tokio::time::timeout(Duration::from_secs(5), watch.message())
        .await
        .expect("an update in time")
        .expect("the stream")
        .expect("an update");
    assert_eq!(update.version, acted.version);
    assert_eq!(update.view.expect("a view").deadlines, due);

    // A restarted server reads the deadline back from the store.
    app.restart_after(Duration::ZERO).await;
    let mut client = app.grpc().await;
    let reloaded = seat_view(&mut client, &match_id, &tokens[0]).await;
    assert_eq!(reloaded.deadlines, due);

    // No timeout, no deadlines.
    let (untimed, tokens) = start_match(&mut client, 2, None, &[]).await;
    let view = seat_view(&mut client, &untimed, &tokens[0]).await;
    assert_eq!(view.awaiting.len(), 1);
    assert!(view.deadlines.is_empty(), "{view:?}");
}

backend_tests! {
    #[tokio::test]
    a_view_lists_the_awaited_seats_deadline:
    Postgres => a_view_lists_the_awaited_seats_deadline_on_postgres,
    Citus => a_view_lists_the_awaited_seats_deadline_on_citus,
    Sqlite => a_view_lists_the_awaited_seats_deadline_on_sqlite,
}

backend_tests! {
    #[tokio::test]
    a_deadline_survives_a_restart:
    Postgres => a_deadline_survives_a_restart_on_postgres,
    Citus => a_deadline_survives_a_restart_on_citus,
    Sqlite => a_deadline_survives_a_restart_on_sqlite,
}

async fn a_match_of_bots_plays_itself_to_the_end(backend: Backend, strategy: &str) {
    let app = spawn_app(backend).await;
    let mut client = app.grpc().await;
    // Deadlines and reminders are for humans; bots play at once, and the match's settings are
    // part of its audited log.
    let timing = (Some(3600), Some(600));
    let (match_id, _) = start_match_with(&mut client, 3, timing, &[0, 1, 2], strategy).await;
    let created = get_match(&mut client, &match_id).await;
    assert_eq!(
        created.status,
        pb::MatchStatus::Active as i32,
        "starts at once"
    );
    for seat in &created.seats {
        assert!(seat.taken && seat.bot, "{seat:?}");
        let named = if strategy.is_empty() {
            "random"
        } else {
            strategy
        };
        assert_eq!(seat.player, format!("bot:{named}"));
    }
    let over = wait_until(&mut client, &match_id, Duration::from_secs(60), |m| {
        m.status != pb::MatchStatus::Active as i32
    })
    .await;
    assert_eq!(over.status, pb::MatchStatus::Finished as i32);
    let log = verified_audit(&mut client, &match_id).await;
    let created = match &log.events[0].body {
        Some(pb::audit_event::Body::Created(c)) => c.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(created.bots.len(), 3);
    assert_eq!(
        (created.turn_timeout_secs, created.turn_reminder_secs),
        timing
    );
    for event in &log.events[1..] {
        assert_eq!(event.kind, "action", "bots play ordinary actions");
        let seat = event.actor.expect("the bot's seat");
        assert_eq!(
            event.request_id.as_deref(),
            Some(format!("bot:{}:{seat}", event.seq - 1).as_str())
        );
    }
    let last = history(&mut client, &match_id, None).await;
    assert_eq!(last.version, log.events.len() as u64);
}

backend_tests! {
    #[tokio::test]
    a_match_of_bots_plays_itself_to_the_end("counting"):
    Postgres => a_match_of_bots_plays_itself_to_the_end_on_postgres,
    Citus => a_match_of_bots_plays_itself_to_the_end_on_citus,
}

#[tokio::test]
async fn a_match_of_bots_plays_itself_to_the_end_on_sqlite() {
    a_match_of_bots_plays_itself_to_the_end(Backend::Sqlite, "").await;
}

#[tokio::test]
async fn a_player_plays_a_bot_through_the_ordinary_api() {
    let app = spawn_app(Backend::Postgres).await;
    let mut client = app.grpc().await;
    let (match_id, tokens) = start_match(&mut client, 2, None, &[1]).await;
    let refused = client
        .join_match(pb::JoinMatchRequest {
            match_id: match_id.clone(),
            player: "intruder".into(),
            seat: Some(1),
            ..Default::default()
        })
        .await
        .expect_err("a bot's seat is taken");
    assert_eq!(refused.code(), Code::FailedPrecondition);

    let start = Instant::now();
    let mut moves = 0;
    loop {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the match never ended"
        );
        let mine = seat_view(&mut client, &match_id, &tokens[0]).await;
        if mine.outcome.is_some() {
            break;
        }
        if !mine.awaiting.contains(&0) {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        moves += 1;
        let result = client
            .act(authed(
                pb::ActRequest {
                    match_id: match_id.clone(),
                    action: Some(mine.legal_actions[moves % mine.legal_actions.len()].clone()),
                    request_id: format!("me-{moves}"),
                    expected_version: Some(mine.version),
                    seat: None,
                    ..Default::default()
                },
                &tokens[0],
            ))
            .await;
        // The bot may have moved in between (a new round): then look again.
        if let Err(status) = result {
            assert_eq!(status.code(), Code::Aborted, "{status:?}");
        }
    }
    let log = verified_audit(&mut client, &match_id).await;
    let by_bot = log
        .events
        .iter()
        .filter(|e| e.actor == Some(1) && e.kind == "action");
    assert!(by_bot.clone().count() > 0);
    assert!(by_bot.clone().all(|e| {
        e.request_id
            .as_deref()
            .is_some_and(|r| r.starts_with("bot:"))
    }));
    assert!(moves > 0);
}

#[tokio::test]
async fn bad_bot_requests_are_refused_and_create_nothing() {
    let app = spawn_app(Backend::Sqlite).await;
    let mut client = app.grpc().await;
    let bad = [
        vec![pb::BotSeat {
            seat: 2,
            strategy: String::new(),
            nonce: String::new(),
        }],
        vec![pb::BotSeat {
            seat: 0,
            strategy: "genius".into(),
            nonce: String::new(),
        }],
        vec![
            pb::BotSeat {
                seat: 1,
                strategy: String::new(),
                nonce: String::new(),
            },
            pb::BotSeat {
                seat: 1,
                strategy: "random".into(),
                nonce: String::new(),
            },
        ],
    ];
    for bots in bad {
        let status = client
            .create_match(pb::CreateMatchRequest {
                bots: bots.clone(),
                ..love_letter_options(2)
            })
            .await
            .expect_err("refused");
        assert_eq!(status.code(), Code::InvalidArgument, "{bots:?}: {status:?}");
    }
    let listed = client
        .list_matches(pb::ListMatchesRequest::default())
        .await
        .expect("list")
        .into_inner();
    assert!(listed.matches.is_empty());

    // The server's own request ids are not for clients.
    let (match_id, tokens) = start_match(&mut client, 2, None, &[]).await;
    let mine = seat_view(&mut client, &match_id, &tokens[0]).await;
    let token = &tokens[mine.awaiting[0] as usize];
    let mine = seat_view(&mut client, &match_id, token).await;
    let status = client
        .act(authed(
            pb::ActRequest {
                match_id: match_id.clone(),
                action: Some(mine.legal_actions[0].clone()),
                request_id: format!("timeout:{}:{}", mine.version, mine.awaiting[0]),
                expected_version: None,
                seat: None,
                ..Default::default()
            },
            token,
        ))
        .await
        .expect_err("reserved");
    assert_eq!(status.code(), Code::InvalidArgument);
    assert_eq!(
        get_match(&mut client, &match_id).await.version,
        mine.version
    );
}

/// During a rolling deploy a newer server may create a match under rules this one does not
/// run. When such a match's deadline passes and this server claims the turn, it must leave the
/// turn for a server that runs those rules, not drop it (it would never be played).
#[tokio::test]
async fn a_turn_under_rules_this_server_does_not_run_is_left_for_one_that_does() {
    use sqlx::Connection;

    let app = spawn_app(Backend::Postgres).await;
    let mut client = app.grpc().await;
    let (id, _tokens) = start_match(&mut client, 2, Some(1), &[]).await;
    let mut db = sqlx::PgConnection::connect(app.database_url())
        .await
        .expect("connect");
    // As a newer server would have written it: the same match under a later rules version.
    sqlx::query("UPDATE matches SET rules_version = rules_version + 100 WHERE match_id = $1::uuid")
        .bind(&id)
        .execute(&mut db)
        .await
        .expect("update");
    // This server has the match cached under its own rules: start afresh.
    let mut app = app;
    app.restart().await;
    // The deadline (1 s) passes and the turn worker claims the turn, more than once.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let pending: i64 = sqlx::query_scalar("SELECT count(*) FROM turns WHERE match_id = $1::uuid")
        .bind(&id)
        .fetch_one(&mut db)
        .await
        .expect("count");
    assert_eq!(
        pending, 1,
        "the turn is still pending for a server that runs its rules"
    );
    let events: i64 = sqlx::query_scalar("SELECT count(*) FROM events WHERE match_id = $1::uuid")
        .bind(&id)
        .fetch_one(&mut db)
        .await
        .expect("count");
    assert_eq!(
        events, 3,
        "nothing was played for it: created and two joins"
    );
}
