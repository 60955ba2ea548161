//! The pure parts of the write path and the projection: what a command decides from a match
//! as cached, and the fold of the event it appends.

use missive_rules::Game;
use missive_rules::love_letter::Action;
use missive_store::GENESIS_HASH;

use super::act::Act;
use super::cancel::Close;
use super::create::Create;
use super::join::Join;
use super::leave::Leave;
use super::*;
use crate::games::AnyAction;

const AT: &str = "2026-12-01T12:00:00Z";

fn at() -> DateTime<Utc> {
    AT.parse().expect("a time")
}

/// A match as a cache holds it, built by folding its events the way a load does.
struct Fixture {
    live: Live,
    tokens: Vec<String>,
}

fn stored(id: MatchId, seq: u64, event: &Event, request_id: Option<&str>) -> StoredEvent {
    let new = event.to_new(request_id.map(str::to_owned), at());
    StoredEvent {
        match_id: id,
        seq,
        kind: new.kind,
        actor: new.actor,
        request_id: new.request_id,
        payload: new.payload,
        at: new.at,
        prev_hash: GENESIS_HASH,
        hash: GENESIS_HASH,
    }
}

impl Fixture {
    /// A two-seat Love Letter match with `joined` of its seats taken (seat 0 first), and a turn
    /// timeout of `timeout` seconds.
    fn love_letter(joined: u8, timeout: Option<u32>) -> Fixture {
        let registry = Registry::new();
        let game = registry.get("love-letter").expect("registered").clone();
        let config =
            serde_json::to_value(missive_rules::love_letter::Config::default()).expect("config");
        let id = MatchId::from_u128(7);
        let record = MatchRecord {
            id,
            kind: game.kind().to_owned(),
            config: config.clone(),
            rules_version: game.rules_version(),
            seat_count: 2,
            seats: (0..2)
                .map(|seat| SeatRecord {
                    seat,
                    ..SeatRecord::default()
                })
                .collect(),
            status: MatchStatus::Open,
            seed_hash: [0; 32],
            turn_timeout_secs: timeout,
            turn_reminder_secs: None,
            created_at: at(),
            updated_at: at(),
            version: 0,
        };
        let table = Table::new(game, &config, 2, [3; 32], (1, true)).expect("table");
        let mut live = Live::new(record, table, true, HashMap::new());
        let created = Event::Created(Creation {
            config,
            seat_count: 2,
            fixed_deck: false,
            turn_timeout_secs: timeout,
            turn_reminder_secs: None,
            bots: Vec::new(),
            deal_at_start: true,
            invited: Vec::new(),
            rematch_of: None,
        });
        live.apply(&stored(id, 1, &created, None), &created, None)
            .expect("created");
        let mut tokens = Vec::new();
        for seat in 0..joined {
            let joined = Event::Joined {
                seat,
                player: format!("player {seat}"),
                nonce: Some(format!("nonce-{seat}")),
            };
            let seq = live.record.version + 1;
            live.apply(&stored(id, seq, &joined, None), &joined, None)
                .expect("joined");
            let (token, hash) = auth::new_token().expect("a token");
            live.record.seats[usize::from(seat)].token_hash = Some(hash);
            tokens.push(token);
        }
        Fixture { live, tokens }
    }

    fn awaited(&self) -> u8 {
        self.live
            .state()
            .awaiting()
            .iter()
            .next()
            .expect("a seat is awaited")
    }

    fn caller(&self, seat: u8) -> Caller {
        Caller::seat(&self.tokens[usize::from(seat)])
    }

    /// The awaited seat's first legal action, and one it may not play.
    fn legal_and_illegal(&self) -> (pb::GameAction, pb::GameAction) {
        let seat = self.awaited();
        let state = self.live.state();
        let legal = state.legal_actions(seat).remove(0);
        let game = self.live.game();
        let hand: Vec<_> = match game.parse_action(&legal).expect("parses") {
            AnyAction::LoveLetter(Action::Play { card, .. }) => vec![card],
            other => panic!("a play, not {other:?}"),
        };
        let not_held = missive_rules::love_letter::CardId::ALL
            .into_iter()
            .find(|c| {
                !hand.contains(c)
                    && !state
                        .legal_actions(seat)
                        .iter()
                        .any(|a| format!("{a:?}").contains(c.as_str()))
            })
            .expect("a card not in hand");
        let illegal = game
            .action_to_proto(&AnyAction::LoveLetter(Action::Play {
                card: not_held,
                target: None,
                guess: None,
            }))
            .expect("maps");
        (legal, illegal)
    }

    /// The state's JSON, to compare states by.
    fn snapshot(&self) -> serde_json::Value {
        self.live.table.snapshot().expect("dealt").expect("saves")
    }
}

fn act<'a>(caller: &'a Caller, action: &'a pb::GameAction, request_id: &'a str) -> Act<'a> {
    Act {
        id: MatchId::from_u128(7),
        by: By::Caller(caller, None),
        request_id,
        play: Play::Action(action),
        expected_version: None,
        omit_view: false,
    }
}

#[test]
fn an_action_is_decided_once_and_folds_as_if_replayed() {
    let fixture = Fixture::love_letter(2, Some(60));
    let seat = fixture.awaited();
    let caller = fixture.caller(seat);
    let (legal, _) = fixture.legal_and_illegal();
    let command = act(&caller, &legal, "r-1");
    let Ok(Decision::Append(write, acted)) = command.decide(&fixture.live, false, at()) else {
        panic!("a legal action is appended");
    };
    assert_eq!(acted, seat);
    assert!(
        matches!(write.event, Event::Action { seat: s, .. } if s == seat),
        "{:?}",
        write.event
    );
    assert_eq!(write.request_id.as_deref(), Some("r-1"));
    let turns = write
        .update
        .turns
        .clone()
        .expect("the match has a turn timeout");
    assert_eq!(turns.len(), 1, "{turns:?}");
    assert_ne!(turns[0].seat, seat, "the other seat is awaited next");
    let event = stored(
        fixture.live.record.id,
        fixture.live.record.version + 1,
        &write.event,
        Some("r-1"),
    );

    // Folding what the decision computed, and replaying the stored event, agree.
    let mut decided = Fixture::love_letter(2, Some(60));
    let observations = decided
        .live
        .apply(&event, &write.event, write.applied)
        .expect("folds");
    let mut replayed = Fixture::love_letter(2, Some(60));
    let again = replayed
        .live
        .apply(&event, &Event::of(&event).expect("reads"), None)
        .expect("replays");
    assert_eq!(observations, again);
    assert_eq!(decided.snapshot(), replayed.snapshot());
    assert_eq!(decided.live.record.version, 4);
    assert_eq!(decided.live.deadlines, replayed.live.deadlines);
    assert_eq!(
        decided.live.deadlines,
        vec![(turns[0].seat, turns[0].due_at)],
        "the cache's deadlines follow the turns the append writes"
    );
    assert_eq!(decided.live.request_ids.get("r-1"), Some(&4));
}

#[test]
fn a_refused_action_names_its_rule_and_changes_nothing() {
    let fixture = Fixture::love_letter(2, None);
    let seat = fixture.awaited();
    let before = fixture.snapshot();
    let (_, illegal) = fixture.legal_and_illegal();
    let caller = fixture.caller(seat);
    match act(&caller, &illegal, "r-1").decide(&fixture.live, true, at()) {
        Err(ApiError::Rule { rule, .. }) => assert!(!rule.is_empty()),
        Err(other) => panic!("a rule's refusal, not {other:?}"),
        Ok(_) => panic!("refused"),
    }
    assert_eq!(fixture.snapshot(), before);
    assert_eq!(fixture.live.record.version, 3);
}

#[test]
fn a_seat_acting_out_of_turn_or_without_a_token_is_refused() {
    let fixture = Fixture::love_letter(2, None);
    let seat = fixture.awaited();
    let (legal, _) = fixture.legal_and_illegal();
    let other = fixture.caller(1 - seat);
    assert!(matches!(
        act(&other, &legal, "r-1").decide(&fixture.live, true, at()),
        Err(ApiError::Rule { .. })
    ));
    let nobody = Caller::default();
    assert!(matches!(
        act(&nobody, &legal, "r-1").decide(&fixture.live, true, at()),
        Err(ApiError::Unauthenticated(_))
    ));
}

#[test]
fn a_request_id_the_match_holds_is_answered_again_before_any_check() {
    let mut fixture = Fixture::love_letter(2, None);
    let seat = fixture.awaited();
    let (_, illegal) = fixture.legal_and_illegal();
    fixture.live.request_ids.insert("r-1".into(), 2);
    // Even a finished match answers a retry.
    fixture.live.record.status = MatchStatus::Finished;
    let caller = fixture.caller(seat);
    assert!(matches!(
        act(&caller, &illegal, "r-1").decide(&fixture.live, false, at()),
        Ok(Decision::Again(2, s)) if s == seat
    ));
}

#[test]
fn an_action_pinned_to_another_version_is_aborted_and_one_before_the_start_refused() {
    let fixture = Fixture::love_letter(2, None);
    let seat = fixture.awaited();
    let (legal, _) = fixture.legal_and_illegal();
    let caller = fixture.caller(seat);
    let mut pinned = act(&caller, &legal, "r-1");
    pinned.expected_version = Some(2);
    assert!(matches!(
        pinned.decide(&fixture.live, true, at()),
        Err(ApiError::Aborted(_))
    ));
    assert!(
        pinned.lost_race(5).is_some(),
        "a pinned action is not retried"
    );
    assert!(act(&caller, &legal, "r-2").lost_race(5).is_none());

    let open = Fixture::love_letter(1, None);
    let caller = open.caller(0);
    assert!(matches!(
        act(&caller, &legal, "r-1").decide(&open.live, true, at()),
        Err(ApiError::FailedPrecondition { rule, .. }) if rule == Rule::MatchNotStarted.code()
    ));
}

#[test]
fn what_a_decision_writes_is_what_the_fold_decides_through_a_whole_match() {
    let mut fixture = Fixture::love_letter(2, Some(60));
    fixture.live.record.turn_reminder_secs = Some(10);
    let mut live = fixture.live;
    let minute = chrono::Duration::seconds(60);
    let mut moves = 0;
    while live.record.status == MatchStatus::Active {
        let seat = live
            .state()
            .awaiting()
            .iter()
            .next()
            .expect("a seat is awaited");
        let now = at() + chrono::Duration::seconds(7 * (moves + 1));
        let request_id = format!("bot-{moves}");
        let command = Act {
            id: live.record.id,
            by: By::Server(seat),
            request_id: &request_id,
            play: Play::Bot(bots::RANDOM),
            expected_version: None,
            omit_view: true,
        };
        let Ok(Decision::Append(write, _)) = command.decide(&live, true, now) else {
            panic!("the bot's move is appended");
        };
        let turns = write.update.turns.clone().expect("the match has deadlines");
        let status = write.update.status;
        let mut event = stored(live.record.id, live.record.version + 1, &write.event, None);
        event.at = now;
        live.apply(&event, &write.event, write.applied)
            .expect("folds");
        // The append writes exactly the deadlines the fold keeps, each reminded 10 s before.
        let written: Vec<_> = turns.iter().map(|t| (t.seat, t.due_at)).collect();
        assert_eq!(written, live.deadlines, "move {moves}");
        for turn in &turns {
            assert_eq!(
                turn.due_at,
                now + minute,
                "a seat newly awaited has its minute"
            );
            assert_eq!(
                turn.remind_at,
                Some(turn.due_at - chrono::Duration::seconds(10))
            );
        }
        // The status the append writes is the one the fold reaches.
        assert_eq!(status.unwrap_or(MatchStatus::Active), live.record.status);
        moves += 1;
    }
    assert_eq!(live.record.status, MatchStatus::Finished);
    assert!(
        live.deadlines.is_empty(),
        "nobody is awaited once it is over"
    );
    assert!(moves > 2, "a whole match: {moves} moves");
}

#[test]
fn a_bot_decides_from_its_seat_and_a_timeout_plays_the_default_action() {
    let fixture = Fixture::love_letter(2, Some(60));
    let seat = fixture.awaited();
    for (play, timeout) in [(Play::Bot(bots::RANDOM), false), (Play::Timeout, true)] {
        let command = Act {
            id: fixture.live.record.id,
            by: By::Server(seat),
            request_id: "bot:3:0",
            play,
            expected_version: Some(3),
            omit_view: true,
        };
        let Ok(Decision::Append(write, _)) = command.decide(&fixture.live, true, at()) else {
            panic!("the server's move is appended");
        };
        assert_eq!(matches!(write.event, Event::Timeout { .. }), timeout);
        assert!(write.applied.is_some());
    }
    // Not awaited: no default action.
    let command = Act {
        id: fixture.live.record.id,
        by: By::Server(1 - seat),
        request_id: "timeout:3:1",
        play: Play::Timeout,
        expected_version: Some(3),
        omit_view: true,
    };
    assert!(matches!(
        command.decide(&fixture.live, true, at()),
        Err(ApiError::FailedPrecondition { rule, .. }) if rule == Rule::NotAwaited.code()
    ));
}

fn join<'a>(req: &'a pb::JoinMatchRequest, keys: &'a Keys) -> Join<'a> {
    Join {
        id: MatchId::from_u128(7),
        req,
        player: &req.player,
        account: None,
        request_id: None,
        stored_id: None,
        nonce: "nonce-1".into(),
        keys,
        drawn: Some(auth::new_token().expect("a token")),
    }
}

#[test]
fn the_join_that_takes_the_last_seat_deals_and_starts_the_match() {
    let fixture = Fixture::love_letter(1, Some(60));
    let keys = Keys::new([9; 32]);
    let req = pb::JoinMatchRequest {
        player: "ann".into(),
        ..Default::default()
    };
    let Ok(Decision::Append(write, Some(taken))) =
        join(&req, &keys).decide(&fixture.live, true, at())
    else {
        panic!("the seat is taken");
    };
    assert_eq!(taken.seat, 1);
    assert_eq!(write.update.status, Some(MatchStatus::Active));
    let applied = write.applied.expect("the deal is computed once");
    assert!(applied.table.dealt());
    assert!(
        !applied.observations.is_empty(),
        "the deal tells each seat its hand"
    );
    let awaited = applied.table.state().awaiting();
    assert_eq!(
        write
            .update
            .notify
            .iter()
            .map(|n| n.seat)
            .collect::<Vec<_>>(),
        awaited.iter().collect::<Vec<_>>()
    );
    assert!(!fixture.live.table.dealt(), "the cache is untouched");
}

#[test]
fn a_join_refuses_a_taken_seat_and_rechecks_before_removing_a_left_seats_webhook() {
    let mut fixture = Fixture::love_letter(1, None);
    let keys = Keys::new([9; 32]);
    let taken = pb::JoinMatchRequest {
        player: "bob".into(),
        seat: Some(0),
        ..Default::default()
    };
    assert!(matches!(
        join(&taken, &keys).decide(&fixture.live, true, at()),
        Err(ApiError::FailedPrecondition { rule, .. }) if rule == Rule::SeatTaken.code()
    ));
    fixture.live.vacated.push(1);
    let req = pb::JoinMatchRequest {
        player: "ann".into(),
        ..Default::default()
    };
    assert!(matches!(
        join(&req, &keys).decide(&fixture.live, false, at()),
        Ok(Decision::Recheck)
    ));
    let Ok(Decision::Append(write, _)) = join(&req, &keys).decide(&fixture.live, true, at()) else {
        panic!("the seat is taken");
    };
    assert_eq!(write.remove_webhook, Some(1));
}

#[test]
fn leaving_frees_a_seat_before_the_start_and_abandons_the_match_after() {
    for (joined, status) in [(1, None), (2, Some(MatchStatus::Abandoned))] {
        let fixture = Fixture::love_letter(joined, Some(60));
        let caller = fixture.caller(0);
        let leave = Leave {
            caller: &caller,
            request_id: None,
        };
        let Ok(Decision::Append(write, ())) = leave.decide(&fixture.live, true, at()) else {
            panic!("the seat is left");
        };
        assert_eq!(write.event, Event::Left { seat: 0 });
        assert_eq!(write.update.status, status);
        assert_eq!(write.update.seats.len(), usize::from(status.is_none()));
        assert_eq!(write.update.turns, Some(Vec::new()), "nobody is awaited");
    }
}

#[test]
fn the_rules_state_is_typed_to_its_game() {
    let fixture = Fixture::love_letter(2, None);
    let seat = fixture.awaited();
    let lopti =
        missive_rules::lopti::Lopti::setup(&Default::default(), 2, missive_rules::Seed([0; 32]))
            .expect("setup");
    let awaited = lopti.awaiting().iter().next().expect("awaited");
    let other = lopti.legal_actions(awaited).remove(0);
    let mut table = fixture.live.table.clone();
    let refused = table
        .play(seat, &AnyAction::Lopti(other))
        .expect_err("another game's action");
    assert_eq!(refused.rule, "malformed-action");
}

#[test]
fn a_versions_info_is_built_once_and_never_outlives_its_version() {
    let mut fixture = Fixture::love_letter(2, None);
    let first = fixture.live.info().expect("built").expect("no seed needed");
    let again = fixture.live.info().expect("built").expect("no seed needed");
    assert!(Arc::ptr_eq(&first, &again), "one build for the version");
    assert_eq!(first.version, fixture.live.record.version);

    // An event folded: the info of the new version, not the old one.
    let seat = fixture.awaited();
    let caller = fixture.caller(seat);
    let (legal, _) = fixture.legal_and_illegal();
    let Ok(Decision::Append(write, _)) =
        act(&caller, &legal, "r-1").decide(&fixture.live, false, at())
    else {
        panic!("a legal action is appended");
    };
    let event = stored(
        fixture.live.record.id,
        fixture.live.record.version + 1,
        &write.event,
        Some("r-1"),
    );
    fixture
        .live
        .apply(&event, &write.event, write.applied)
        .expect("folds");
    let after = fixture.live.info().expect("built").expect("no seed needed");
    assert_eq!(after.version, first.version + 1);

    // The row replaced at the same version (the store's is authoritative): built again from it.
    let mut row = fixture.live.record.clone();
    row.seats[0].player = Some("renamed".into());
    fixture.live.replace_record(row);
    let replaced = fixture.live.info().expect("built").expect("no seed needed");
    assert_eq!(replaced.version, after.version);
    assert_eq!(replaced.seats[0].player, "renamed");
    assert_eq!(
        *replaced,
        Service::info_of(&fixture.live.record, fixture.live.game(), None).expect("built"),
        "the kept info is the one built from the row"
    );
}

#[test]
fn an_ended_matchs_info_waits_for_its_seed() {
    let mut fixture = Fixture::love_letter(2, None);
    fixture.live.record.status = MatchStatus::Finished;
    fixture.live.seed = None;
    assert!(
        fixture.live.info().expect("no error").is_none(),
        "the seed must be read first"
    );
    fixture.live.seed = Some([9; 32]);
    let info = fixture
        .live
        .info()
        .expect("built")
        .expect("the seed is known");
    assert_eq!(info.seed.as_deref(), Some(hex::encode([9; 32]).as_str()));
}

fn close(reason: CloseReason, request_id: Option<&str>, idle_secs: Option<i64>) -> Close<'_> {
    Close {
        reason,
        request_id,
        idle_for: idle_secs.map(chrono::Duration::seconds),
    }
}

#[test]
fn closing_an_open_match_abandons_it_and_the_fold_ends_it_undealt() {
    let mut fixture = Fixture::love_letter(1, Some(60));
    let Ok(Decision::Append(write, ())) =
        close(CloseReason::Cancelled, Some("c-1"), None).decide(&fixture.live, true, at())
    else {
        panic!("an open match is closed");
    };
    assert_eq!(
        write.event,
        Event::Closed {
            reason: CloseReason::Cancelled
        }
    );
    assert_eq!(write.update.status, Some(MatchStatus::Abandoned));
    assert!(write.update.seats.is_empty(), "the seats stay as they are");
    assert_eq!(write.update.turns, Some(Vec::new()), "nobody is awaited");
    assert!(write.ends, "the seed is read to be revealed");
    let event = stored(fixture.live.record.id, 3, &write.event, Some("c-1"));
    let observations = fixture
        .live
        .apply(&event, &write.event, None)
        .expect("folds");
    assert!(observations.is_empty(), "a closure tells the rules nothing");
    assert_eq!(fixture.live.record.status, MatchStatus::Abandoned);
    assert_eq!(fixture.live.record.version, 3);
    assert!(!fixture.live.table.dealt(), "a closed match is never dealt");
    assert!(fixture.live.deadlines.is_empty());
    // A retry with the same request id answers again; another request is refused: over.
    assert!(matches!(
        close(CloseReason::Cancelled, Some("c-1"), None).decide(&fixture.live, true, at()),
        Ok(Decision::Again(3, ()))
    ));
    assert!(matches!(
        close(CloseReason::Cancelled, Some("c-2"), None).decide(&fixture.live, true, at()),
        Err(ApiError::FailedPrecondition { rule, .. }) if rule == Rule::MatchOver.code()
    ));
}

#[test]
fn a_started_match_cannot_be_closed() {
    let fixture = Fixture::love_letter(2, None);
    for reason in [CloseReason::Cancelled, CloseReason::Expired] {
        assert!(matches!(
            close(reason, None, None).decide(&fixture.live, true, at()),
            Err(ApiError::FailedPrecondition { rule, .. }) if rule == Rule::MatchStarted.code()
        ));
    }
}

#[test]
fn an_open_match_expires_only_once_idle_for_the_whole_time() {
    let fixture = Fixture::love_letter(1, None);
    let later = |secs| at() + chrono::Duration::seconds(secs);
    assert!(matches!(
        close(CloseReason::Expired, None, Some(60)).decide(&fixture.live, true, later(59)),
        Err(ApiError::FailedPrecondition { rule, .. }) if rule == Rule::MatchNotOpen.code()
    ));
    let Ok(Decision::Append(write, ())) =
        close(CloseReason::Expired, None, Some(60)).decide(&fixture.live, true, later(60))
    else {
        panic!("idle for the expiry time: closed");
    };
    assert_eq!(
        write.event,
        Event::Closed {
            reason: CloseReason::Expired
        }
    );
    assert_eq!(write.request_id, None);
}

/// CreateMatch for two seats of Love Letter with these bots and invited seats, decided by
/// the creation command from its blank match, and the match its stored event folds into.
fn created(bots: &[u32], invited: &[u32]) -> (Write, Live) {
    let registry = Registry::new();
    let keys = Keys::new([9; 32]);
    let req = pb::CreateMatchRequest {
        options: Some(pb::GameOptions {
            game: Some(pb::game_options::Game::LoveLetter(
                pb::LoveLetterOptions::default(),
            )),
        }),
        seat_count: 2,
        turn_timeout_secs: Some(60),
        bots: bots
            .iter()
            .map(|&seat| pb::BotSeat {
                seat,
                strategy: "random".into(),
                nonce: String::new(),
            })
            .collect(),
        invite_seats: invited.to_vec(),
        ..pb::CreateMatchRequest::default()
    };
    let id = MatchId::from_u128(8);
    let create = Create::new(&registry, false, &keys, id, req, None).expect("a valid request");
    let mut live = create
        .blank(at())
        .expect("a blank")
        .expect("a creation has one");
    assert_eq!(live.record.version, 0);
    let Ok(Decision::Append(write, ())) = create.decide(&live, true, at()) else {
        panic!("a creation appends its event");
    };
    let event = stored(id, 1, &write.event, None);
    live.fold(&event, &write.event, None).expect("folded");
    // A server that holds the match already answers the request again.
    assert!(matches!(
        create.decide(&live, true, at()),
        Ok(Decision::Again(1, ()))
    ));
    (*write, live)
}

#[test]
fn a_creation_is_a_command_whose_match_starts_as_the_fold_of_its_event_decides() {
    // Every seat a bot's: taken and active at once, the awaited bot due at once.
    let (write, live) = created(&[0, 1], &[]);
    assert!(write.creates.is_some(), "a creation creates");
    let start = &write.update;
    assert_eq!(start.status, Some(MatchStatus::Active));
    assert_eq!(live.record.status, MatchStatus::Active);
    let taken: Vec<_> = start
        .seats
        .iter()
        .map(|s| (s.seat, s.bot.clone()))
        .collect();
    assert_eq!(
        taken,
        vec![(0, Some("random".into())), (1, Some("random".into()))]
    );
    for seat in &live.record.seats {
        assert!(seat.player.is_some() && seat.bot.is_some(), "{seat:?}");
    }
    let turns = start
        .turns
        .as_ref()
        .expect("a match with bots writes turns");
    let awaited: Vec<u8> = live.state().awaiting().iter().collect();
    assert_eq!(turns.iter().map(|t| t.seat).collect::<Vec<_>>(), awaited);
    assert!(turns.iter().all(|t| t.due_at == at() && t.bot.is_some()));
    assert_eq!(
        write.creates.as_ref().map(|c| &c.start),
        Some(&MatchUpdate::default()),
        "the write's update is the one start"
    );

    // A bot and an invited seat: open, the invited seat held, nothing due yet.
    let (write, live) = created(&[1], &[0]);
    assert!(write.creates.is_some(), "a creation creates");
    let start = &write.update;
    assert_eq!(start.status, None);
    assert_eq!(live.record.status, MatchStatus::Open);
    let held: Vec<_> = start.seats.iter().map(|s| (s.seat, s.invited)).collect();
    assert_eq!(held, vec![(1, false), (0, true)]);
    assert_eq!(start.turns, Some(Vec::new()));
    assert!(live.deadlines.is_empty());
}
