//! A Lopti session end to end, on PostgreSQL and on SQLite: three hands over gRPC in which a
//! vote fails, a hand's winner creates an enforced rule (and a table rule), a tied vote on
//! removing it goes to Roshambo, and a vote changing a base rule passes. No view or history
//! ever shows a seat another seat's hand or anyone's face-down cards, and the exported log
//! verifies. Then one HTTP/JSON round trip and refused actions.

use std::collections::{BTreeSet, HashMap};

use missive_proto::v1 as pb;
use missive_proto::v1::missive_client::MissiveClient;
use missive_rules::Viewer;
use missive_rules::lopti::Card;
use missive_server::games::{MatchState, Registry};
use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::Connection;
use tonic::transport::Channel;

use crate::helpers::{
    Backend, Lcg, Step, TestApp, act_with, audit_log, backend_tests, game_events, http_act,
    join_as, replay, seat_act, seat_view, spawn_app, spectator_view, told_to,
};

use pb::lopti_action::Action as A;
use pb::lopti_event::Event as E;
use pb::lopti_phase::Phase as P;

const SEATS: u32 = 2;
const HANDS: u32 = 3;
const TABLE_RULE: &str = "Whoever burns the pile says lopti out loud";

fn lopti_options(hands: u32) -> pb::CreateMatchRequest {
    pb::CreateMatchRequest {
        options: Some(pb::GameOptions {
            game: Some(pb::game_options::Game::Lopti(pb::LoptiOptions {
                hands,
                ..Default::default()
            })),
        }),
        seat_count: SEATS,
        ..Default::default()
    }
}

fn lopti_view(view: &pb::MatchView) -> &pb::LoptiView {
    match view.game.as_ref().and_then(|g| g.game.as_ref()) {
        Some(pb::game_view::Game::Lopti(v)) => v,
        other => panic!("not a Lopti view: {other:?}"),
    }
}

fn lopti_action(action: &pb::GameAction) -> &A {
    match &action.game {
        Some(pb::game_action::Game::Lopti(pb::LoptiAction {
            action: Some(action),
        })) => action,
        other => panic!("not a Lopti action: {other:?}"),
    }
}

fn wrap(action: A) -> pb::GameAction {
    pb::GameAction {
        game: Some(pb::game_action::Game::Lopti(pb::LoptiAction {
            action: Some(action),
        })),
    }
}

fn lopti_event(event: &pb::GameEvent) -> &E {
    match &event.game {
        Some(pb::game_event::Game::Lopti(pb::LoptiEvent { event: Some(e) })) => e,
        other => panic!("not a Lopti event: {other:?}"),
    }
}

/// The rule the first hand's winner creates: every play reverses the direction, so it fires
/// on every play and shows in every history.
fn reverse_on_every_play() -> pb::LoptiRuleSpec {
    pb::LoptiRuleSpec {
        trigger: Some(pb::LoptiTrigger {
            trigger: Some(pb::lopti_trigger::Trigger::CardsPlayed(
                pb::LoptiCardsPlayed { at_least: 1 },
            )),
        }),
        effect: Some(pb::LoptiEffect {
            effect: Some(pb::lopti_effect::Effect::ReverseDirection(
                pb::LoptiEmpty {},
            )),
        }),
    }
}

fn set_hand_size(size: u32) -> pb::LoptiChange {
    pb::LoptiChange {
        change: Some(pb::lopti_change::Change::SetHandSize(
            pb::LoptiSetHandSize { size },
        )),
    }
}

fn remove_rule(rule: u32) -> pb::LoptiChange {
    pb::LoptiChange {
        change: Some(pb::lopti_change::Change::RemoveRule(pb::LoptiRuleRef {
            rule,
        })),
    }
}

/// The listed action equal to `wanted`; panics if the server does not list it.
fn listed(legal: &[pb::GameAction], wanted: &A) -> pb::GameAction {
    legal
        .iter()
        .find(|a| lopti_action(a) == wanted)
        .cloned()
        .unwrap_or_else(|| panic!("{wanted:?} is not among the legal actions"))
}

/// A play that moves the hand on: usually the lowest rank with every card of it the seat may
/// play, sometimes another play at random (so two seats can't fall into a cycle of pickups);
/// a face-down card once the hand is gone; a pickup only when nothing else is legal.
fn progress(legal: &[pb::GameAction], rng: &mut Lcg) -> pb::GameAction {
    let plays: Vec<(&pb::GameAction, &pb::LoptiPlay)> = legal
        .iter()
        .filter_map(|a| match lopti_action(a) {
            A::Play(p) => Some((a, p)),
            _ => None,
        })
        .collect();
    if !plays.is_empty() {
        if rng.below(4) == 0 {
            return plays[rng.below(plays.len())].0.clone();
        }
        let rank = |p: &pb::LoptiPlay| Card::of(&p.cards[0]).rank();
        let lowest = plays.iter().map(|(_, p)| rank(p)).min().expect("a play");
        return plays
            .iter()
            .filter(|(_, p)| rank(p) == lowest)
            .max_by_key(|(_, p)| p.cards.len())
            .expect("a play")
            .0
            .clone();
    }
    let face_down = legal
        .iter()
        .find(|a| matches!(lopti_action(a), A::PlayFaceDown(_)));
    let pick_up = legal
        .iter()
        .find(|a| matches!(lopti_action(a), A::PickUp(_)));
    if let Some(action) = face_down.or(pick_up) {
        return action.clone();
    }
    panic!("no play, face-down card or pickup among {legal:?}")
}

/// What the seat on the spot does, by phase and hand: the script of the session.
fn choose(
    seat: u32,
    view: &pb::MatchView,
    rule_creator: &mut Option<u32>,
    rng: &mut Lcg,
) -> pb::GameAction {
    let game = lopti_view(view);
    let legal = &view.legal_actions;
    let phase = game.phase.as_ref().and_then(|p| p.phase.as_ref());
    match (phase.expect("a phase"), game.hand) {
        // The first hand's winner creates the enforced rule and a table rule; the second's
        // adds nothing.
        (P::RuleCreation(_), 1) => {
            *rule_creator = Some(seat);
            let A::CreateRule(create) = lopti_action(&listed(
                legal,
                &A::CreateRule(pb::LoptiCreateRule {
                    rule: Some(reverse_on_every_play()),
                    table_rule: None,
                }),
            ))
            .clone() else {
                unreachable!()
            };
            wrap(A::CreateRule(pb::LoptiCreateRule {
                table_rule: Some(TABLE_RULE.into()),
                ..create
            }))
        }
        (P::RuleCreation(_), _) => listed(legal, &A::SkipRule(pb::LoptiEmpty {})),
        // Hand 0: a hand size of 4 from now, voted down. Hand 1: removing the new rule from the
        // next hand, tied and so settled by Roshambo. Hand 2: a hand size of 4 from now, passed.
        (P::Proposal(_), 0 | 2) => listed(
            legal,
            &A::Propose(pb::LoptiPropose {
                change: Some(set_hand_size(4)),
                timing: pb::LoptiTiming::Now as i32,
            }),
        ),
        (P::Proposal(_), _) => listed(
            legal,
            &A::Propose(pb::LoptiPropose {
                change: Some(remove_rule(0)),
                timing: pb::LoptiTiming::NextHand as i32,
            }),
        ),
        (P::Voting(voting), hand) => {
            let proposer = voting.proposal.as_ref().expect("a proposal").by;
            let ballot = match hand {
                0 => pb::LoptiBallot::No,
                1 if seat == proposer => pb::LoptiBallot::Yes,
                1 => pb::LoptiBallot::No,
                _ => pb::LoptiBallot::Yes,
            };
            listed(
                legal,
                &A::Vote(pb::LoptiVote {
                    ballot: ballot as i32,
                }),
            )
        }
        // The challenger always throws rock; the defender matches it once (a draw, which
        // doesn't count), then throws scissors: the challenger wins 30–0.
        (P::Roshambo(r), _) => {
            let choice = if seat == r.challenger || r.last_reveal.is_none() {
                pb::LoptiThrow::Rock
            } else {
                pb::LoptiThrow::Scissors
            };
            listed(
                legal,
                &A::RoshamboThrow(pb::LoptiRoshamboThrow {
                    choice: choice as i32,
                }),
            )
        }
        // Seat 0 swaps its first listed pair; the others keep their cards.
        (P::Swap(_), _) => legal
            .iter()
            .find(|a| seat == 0 && matches!(lopti_action(a), A::Swap(_)))
            .cloned()
            .unwrap_or_else(|| listed(legal, &A::KeepCards(pb::LoptiEmpty {}))),
        (P::Play(_), _) => progress(legal, rng),
        (P::Over(_), _) => panic!("no action once the session is over"),
    }
}

/// A played session and every view each seat received.
#[derive(Debug)]
struct Played {
    match_id: String,
    tokens: Vec<String>,
    received: Vec<(u32, pb::MatchView)>,
    last: pb::MatchView,
}

/// The deadlines a view lists, as `(seat, unix micros)`.
fn deadlines(view: &pb::MatchView) -> Vec<(u32, i64)> {
    view.deadlines
        .iter()
        .map(|d| {
            let at = d.due_at.as_ref().expect("a due time");
            (d.seat, at.seconds * 1_000_000 + i64::from(at.nanos / 1_000))
        })
        .collect()
}

/// The store's pending human turns of a match, as `(seat, unix micros)`.
async fn stored_deadlines(db: &mut sqlx::PgConnection, match_id: &str) -> Vec<(u32, i64)> {
    let rows: Vec<(i16, chrono::DateTime<chrono::Utc>)> = sqlx::query_as(
        "SELECT seat, due_at FROM turns WHERE match_id = $1::uuid AND bot IS NULL ORDER BY seat",
    )
    .bind(match_id)
    .fetch_all(db)
    .await
    .expect("turns");
    rows.into_iter()
        .map(|(seat, at)| (seat as u32, at.timestamp_micros()))
        .collect()
}

/// Plays the scripted session. With `db` (PostgreSQL), the match has an hour per turn and
/// every step checks the deadlines each seat's view lists against the store's pending turns.
async fn play_session(
    client: &mut MissiveClient<Channel>,
    seed: u64,
    mut db: Option<&mut sqlx::PgConnection>,
) -> Played {
    let created = client
        .create_match(pb::CreateMatchRequest {
            turn_timeout_secs: db.is_some().then_some(3600),
            turn_reminder_secs: None,
            ..lopti_options(HANDS)
        })
        .await
        .expect("create")
        .into_inner()
        .r#match
        .expect("match info");
    assert_eq!(created.kind, "lopti");
    let match_id = created.match_id;
    let mut tokens = Vec::new();
    for seat in 0..SEATS {
        if seat == 0 {
            // Seat 0 changes hands before the start; the passer-by saw no card.
            crate::deal::pass_by(client, &match_id, seat).await;
        }
        let joined = join_as(client, &match_id, &format!("player {seat}"), None).await;
        assert_eq!(joined.seat, seat);
        tokens.push(joined.seat_token);
    }
    let mut rng = Lcg(seed);
    let mut rule_creator = None;
    let mut received = Vec::new();
    // Deadlines before the last action, that action's seat, and how often one carried over.
    let mut previous: Option<(Vec<(u32, i64)>, u32)> = None;
    let mut kept = 0;
    for _ in 0..5000 {
        let mut views = Vec::new();
        for (seat, token) in tokens.iter().enumerate() {
            let view = seat_view(client, &match_id, token).await;
            assert_eq!(view.seat, Some(seat as u32));
            views.push(view.clone());
            received.push((seat as u32, view));
        }
        let listed = deadlines(&views[0]);
        assert!(views.iter().all(|v| deadlines(v) == listed), "{views:?}");
        match db.as_deref_mut() {
            Some(db) => {
                assert_eq!(listed, stored_deadlines(db, &match_id).await);
                let awaited: Vec<u32> = listed.iter().map(|d| d.0).collect();
                assert_eq!(awaited, views[0].awaiting, "one deadline per awaited seat");
                if let Some((before, actor)) = &previous {
                    kept += listed
                        .iter()
                        .filter(|d| d.0 != *actor && before.contains(d))
                        .count();
                }
            }
            None => assert!(listed.is_empty(), "no deadlines without a turn timeout"),
        }
        let awaiting = &views[0].awaiting;
        assert!(awaiting.is_empty() || views[0].outcome.is_none());
        let Some(&first) = awaiting.first() else {
            break;
        };
        // In the proposal window every seat is awaited; the script names the proposer.
        let game = lopti_view(&views[0]);
        let seat = match game.phase.as_ref().and_then(|p| p.phase.as_ref()) {
            Some(P::Proposal(_)) => match (game.hand, rule_creator) {
                (1, Some(creator)) => 1 - creator,
                (hand, _) => hand % SEATS,
            },
            _ => first,
        };
        let view = &views[seat as usize];
        assert!(view.awaiting.contains(&seat));
        assert!(!view.legal_actions.is_empty(), "an awaited seat can act");
        let action = choose(seat, view, &mut rule_creator, &mut rng);
        let response = act_with(
            client,
            seat_act(&match_id, seat, action, Some(view.version)),
            &tokens[seat as usize],
        )
        .await;
        let after = response.view.expect("a view");
        received.push((seat, after.clone()));
        previous = Some((listed, seat));
        if after.outcome.is_some() {
            assert!(
                db.is_none() || kept > 0,
                "a seat that stays awaited while another acts keeps its deadline"
            );
            assert!(
                after.deadlines.is_empty(),
                "a finished match has no deadlines"
            );
            return Played {
                match_id,
                tokens,
                received,
                last: after,
            };
        }
    }
    panic!("the session did not end");
}

/// Where every card lies in a state, read from the engine's own serialised state.
#[derive(Debug, Default)]
struct Places {
    hands: Vec<BTreeSet<String>>,
    face_down: Vec<BTreeSet<String>>,
    /// Cards anyone may see: face-up cards, the pile and the chain of passes.
    open: BTreeSet<String>,
    /// Whether the cards are dealt (swap or play phase).
    dealt: bool,
}

fn strings(value: &Value) -> BTreeSet<String> {
    value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| c.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn places(state: &dyn MatchState) -> Places {
    let json = state.to_json().expect("state as JSON");
    let players = json["players"].as_array().expect("players");
    let mut places = Places {
        dealt: matches!(json["phase"]["kind"].as_str(), Some("swap" | "play")),
        ..Places::default()
    };
    for p in players {
        places.hands.push(strings(&p["hand"]));
        places.face_down.push(strings(&p["face_down"]));
        places.open.extend(strings(&p["face_up"]));
    }
    places.open.extend(strings(&json["pile"]));
    places.open.extend(strings(&json["pass_chain"]));
    places
}

/// Every card id named anywhere in a message, read from its canonical JSON.
fn named_cards<T: serde::Serialize>(message: &T) -> BTreeSet<String> {
    fn walk(value: &Value, out: &mut BTreeSet<String>) {
        match value {
            Value::String(s) if s.parse::<Card>().is_ok() => {
                out.insert(s.clone());
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            Value::Object(fields) => fields.values().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    walk(&serde_json::to_value(message).expect("JSON"), &mut out);
    out
}

/// The cards `viewer` may not know in a state: other seats' hands and every face-down card.
fn hidden_from(places: &Places, viewer: Viewer) -> BTreeSet<String> {
    let mut hidden: BTreeSet<String> = places.face_down.iter().flatten().cloned().collect();
    for (seat, hand) in places.hands.iter().enumerate() {
        if viewer != Viewer::Seat(seat as u8) {
            hidden.extend(hand.iter().cloned());
        }
    }
    hidden
}

fn check_session(played: &Played, steps: &[Step]) {
    let at: HashMap<u64, &Box<dyn MatchState>> =
        steps.iter().map(|(seq, s, _)| (*seq, s)).collect();
    // Every view a seat received is exactly what the engine shows that seat at that version,
    // and names no card of another seat's hand nor any face-down card.
    for (seat, view) in &played.received {
        let state = at[&view.version];
        let viewer = Viewer::Seat(*seat as u8);
        assert_eq!(
            view.game.as_ref(),
            Some(&state.view(viewer)),
            "seat {seat} at {}",
            view.version
        );
        if view.outcome.is_none() {
            assert_eq!(view.legal_actions, state.legal_actions(*seat as u8));
        }
        let leaked: Vec<_> = named_cards(&view.game)
            .intersection(&hidden_from(&places(state.as_ref()), viewer))
            .cloned()
            .collect();
        assert!(
            leaked.is_empty(),
            "seat {seat} sees {leaked:?} at {}",
            view.version
        );
    }
}

/// A history entry at `seq` that `viewer` may see names no face-down card, and no card in
/// another seat's hand unless everyone saw it go there (from the pile, a face-up card or a
/// turned face-down card).
fn check_history_entry(viewer: Viewer, before: &Places, after: &Places, event: &pb::GameEvent) {
    let named = named_cards(event);
    for (seat, hand) in after.hands.iter().enumerate() {
        if viewer == Viewer::Seat(seat as u8) {
            continue;
        }
        for card in named.intersection(hand) {
            let seen_going = before.dealt
                && (before.open.contains(card) || before.face_down[seat].contains(card));
            assert!(
                seen_going,
                "{viewer:?} learns {card} in seat {seat}'s hand from {event:?}"
            );
        }
    }
    for (seat, down) in after.face_down.iter().enumerate() {
        let leaked: Vec<_> = named.intersection(down).collect();
        assert!(
            leaked.is_empty(),
            "{viewer:?} learns {leaked:?} face down at seat {seat} from {event:?}"
        );
    }
}

async fn check_histories(client: &mut MissiveClient<Channel>, played: &Played, steps: &[Step]) {
    let places: HashMap<u64, Places> = steps
        .iter()
        .map(|(seq, s, _)| (*seq, places(s.as_ref())))
        .collect();
    for viewer in [Some(0u32), Some(1), None] {
        let token = viewer.map(|seat| played.tokens[seat as usize].as_str());
        let got = game_events(client, &played.match_id, viewer, token).await;
        let who = viewer.map_or(Viewer::Spectator, |s| Viewer::Seat(s as u8));
        let expected = told_to(steps, who);
        assert_eq!(got, expected, "history of {viewer:?}");
        assert!(
            matches!(got.first().map(|(_, e)| lopti_event(e)), Some(E::HandStarted(h)) if h.hand == 0),
            "a history opens with the first hand"
        );
        for (seq, event) in &got {
            let before = places.get(&(seq - 1)).unwrap_or(&places[seq]);
            check_history_entry(who, before, &places[seq], event);
        }
    }
}

/// The session went as scripted, as the public record tells it.
async fn check_script(client: &mut MissiveClient<Channel>, played: &Played) {
    let public: Vec<E> = game_events(client, &played.match_id, None, None)
        .await
        .iter()
        .map(|(_, event)| lopti_event(event).clone())
        .collect();
    let results: Vec<i32> = public
        .iter()
        .filter_map(|e| match e {
            E::VoteCounted(v) => Some(v.result),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            pb::LoptiVoteResult::Failed,
            pb::LoptiVoteResult::Tied,
            pb::LoptiVoteResult::Passed
        ]
        .map(|r| r as i32)
    );
    let position = |wanted: fn(&E) -> bool| {
        public
            .iter()
            .position(wanted)
            .expect("the event is in the public history")
    };
    let created = position(|e| matches!(e, E::RuleCreated(r) if r.id == 0));
    let table = position(|e| {
        matches!(e, E::RuleCreated(pb::LoptiRule { id: 1, body: Some(pb::LoptiRuleBody {
            body: Some(pb::lopti_rule_body::Body::Table(text)) }), .. }) if text == TABLE_RULE)
    });
    let fired = position(|e| matches!(e, E::RuleFired(f) if f.rule == 0));
    let started = position(|e| matches!(e, E::RoshamboStarted(_)));
    let won = position(|e| matches!(e, E::RoshamboWon(_)));
    let scheduled = position(|e| matches!(e, E::ChangeScheduled(c) if *c == remove_rule(0)));
    let removed = position(|e| matches!(e, E::ChangeApplied(c) if *c == remove_rule(0)));
    let bigger = position(|e| matches!(e, E::ChangeApplied(c) if *c == set_hand_size(4)));
    assert!(created < table && table < started && started < won && won < scheduled);
    assert!(created < fired, "the enforced rule fired");
    assert!(scheduled < removed && removed < bigger);
    let (E::RoshamboStarted(sides), E::RoshamboWon(winner)) = (&public[started], &public[won])
    else {
        unreachable!()
    };
    assert_eq!(
        winner.seat, sides.challenger,
        "rock beats scissors 30 times"
    );
    let reveals = public[started..won]
        .iter()
        .filter(|e| matches!(e, E::ThrowsRevealed(_)))
        .count();
    assert_eq!(reveals, 31, "one draw, then 30 decisive throws");
    // The passed change governs the last hand's deal.
    let last_deal: Vec<u32> = public[bigger..]
        .iter()
        .filter_map(|e| match e {
            E::Dealt(d) => Some(d.in_hand),
            _ => None,
        })
        .collect();
    assert_eq!(last_deal, [4, 4]);
    assert_eq!(
        public.iter().filter(|e| matches!(e, E::HandWon(_))).count(),
        HANDS as usize
    );
    assert!(matches!(public.last(), Some(E::MatchOver(_))));

    let last = lopti_view(&played.last);
    assert_eq!(last.hand, HANDS);
    assert!(matches!(
        last.phase.as_ref().and_then(|p| p.phase.as_ref()),
        Some(P::Over(_))
    ));
    assert_eq!(last.base_rules.as_ref().map(|b| b.hand_size), Some(4));
    assert_eq!(
        last.rules.iter().map(|r| r.status).collect::<Vec<_>>(),
        [pb::LoptiRuleStatus::Removed, pb::LoptiRuleStatus::Active].map(|s| s as i32)
    );
    let outcome = played.last.outcome.as_ref().expect("an outcome");
    let hands_won: Vec<i32> = last.seats.iter().map(|s| s.hands_won as i32).collect();
    assert_eq!(outcome.scores, hands_won, "scores are hands won");
    assert_eq!(outcome.scores.iter().sum::<i32>(), HANDS as i32);
    let best = hands_won.iter().max().copied();
    for winner in &outcome.winners {
        assert_eq!(Some(hands_won[*winner as usize]), best);
    }
}

async fn a_full_session(backend: Backend, seed: u64) {
    let app = spawn_app(backend).await;
    let mut client = app.grpc().await;
    let mut db = match backend {
        Backend::Postgres | Backend::Citus => Some(
            sqlx::PgConnection::connect(app.database_url())
                .await
                .expect("the test database"),
        ),
        Backend::Sqlite => None,
    };
    let played = play_session(&mut client, seed, db.as_mut()).await;
    let info = played.last.r#match.as_ref().expect("match info");
    assert_eq!(info.status, pb::MatchStatus::Finished as i32);
    assert!(info.seed.is_some(), "the seed is revealed once it is over");
    assert!(
        !played
            .last
            .outcome
            .as_ref()
            .expect("outcome")
            .winners
            .is_empty()
    );

    let log = audit_log(&mut client, &played.match_id).await;
    let steps = replay(&log);
    check_session(&played, &steps);
    check_histories(&mut client, &played, &steps).await;
    check_script(&mut client, &played).await;

    let registry = Registry::new();
    let id = played.match_id.parse().expect("uuid");
    let state = missive_server::audit::verify(&registry, id, &log).expect("the log verifies");
    let spectator = spectator_view(&mut client, &played.match_id).await;
    assert_eq!(spectator.game, Some(state.view(Viewer::Spectator)));
    assert!(
        lopti_view(&spectator).your_hand.is_empty(),
        "a spectator has no hand"
    );
}

backend_tests! {
    #[tokio::test]
    a_full_session(1):
    Postgres => lopti_session_with_a_rule_and_three_votes_over_grpc_on_postgres,
    Citus => lopti_session_with_a_rule_and_three_votes_over_grpc_on_citus,
}

#[tokio::test]
async fn lopti_session_with_a_rule_and_three_votes_over_grpc_on_sqlite() {
    a_full_session(Backend::Sqlite, 2).await;
}

async fn http_view(app: &TestApp, id: &str, token: &str) -> Value {
    let response = app
        .get_as(&format!("/v1/matches/{id}/view"), Some(token))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    response.json::<Value>().await.expect("json")["view"].clone()
}

#[tokio::test]
async fn lopti_actions_round_trip_over_http_json_and_illegal_ones_are_refused_by_rule() {
    let app = spawn_app(Backend::Sqlite).await;
    let created = app
        .post(
            "/v1/matches",
            &json!({ "options": { "lopti": { "hands": 1 } }, "seatCount": 2 }),
        )
        .await;
    assert_eq!(created.status(), StatusCode::CREATED);
    let created: Value = created.json().await.expect("json");
    assert_eq!(created["match"]["kind"], "lopti");
    assert_eq!(created["match"]["options"]["lopti"]["hands"], 1);
    let id = created["match"]["matchId"].as_str().expect("id").to_owned();
    let mut tokens = Vec::new();
    for player in ["ann", "bob"] {
        tokens.push(app.http_join(&id, player).await);
    }

    // Both seats decline the Rule Vote in canonical proto JSON; the second decline deals.
    let (status, body) = http_act(
        &app,
        &id,
        &tokens[0],
        &json!({ "action": { "lopti": { "declineProposal": {} } }, "requestId": "d0" }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["view"]["game"]["lopti"]["phase"]["proposal"]["declined"],
        json!([0])
    );
    let (status, body) = http_act(
        &app,
        &id,
        &tokens[1],
        &json!({ "action": { "lopti": { "declineProposal": {} } }, "requestId": "d1" }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let game = &body["view"]["game"]["lopti"];
    assert!(game["phase"]["swap"].is_object(), "{game}");
    assert_eq!(game["yourHand"].as_array().map(Vec::len), Some(3));
    assert_eq!(game["baseRules"]["handSize"], 3);
    assert_eq!(game["baseRules"]["burn"], "LOPTI_RANK_TEN");
    assert_eq!(game["seats"][0]["faceDown"], 3);
    assert_eq!(game["drawPile"], 52 - 2 * 9);

    // A swap the server lists, sent back exactly as listed.
    let mine = http_view(&app, &id, &tokens[0]).await;
    let swap = mine["legalActions"]
        .as_array()
        .expect("legal actions")
        .iter()
        .find(|a| a["lopti"]["swap"].is_object())
        .cloned()
        .expect("a listed swap");
    let (status, body) = http_act(
        &app,
        &id,
        &tokens[0],
        &json!({ "action": swap, "requestId": "s0" }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let game = &body["view"]["game"]["lopti"];
    let hand = swap["lopti"]["swap"]["hand"].clone();
    let face_up = swap["lopti"]["swap"]["faceUp"].clone();
    assert!(
        game["yourHand"]
            .as_array()
            .expect("hand")
            .contains(&face_up)
    );
    assert!(
        game["seats"][0]["faceUp"]
            .as_array()
            .expect("face up")
            .contains(&hand)
    );
    let version = body["view"]["version"].clone();

    // Refused: swapping a card the seat does not hold in hand (one of its own face-up cards),
    // with the rule's code; a Love Letter action; a proposal without its timing. None changes
    // anything.
    let theirs = http_view(&app, &id, &tokens[1]).await;
    let own_face_up = theirs["game"]["lopti"]["seats"][1]["faceUp"].clone();
    let (status, body) = http_act(
        &app,
        &id,
        &tokens[1],
        &json!({ "action": { "lopti": { "swap": { "hand": own_face_up[0], "faceUp": own_face_up[1] } } }, "requestId": "x1" }),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["code"], "FAILED_PRECONDITION");
    assert_eq!(body["rule"], "card-not-in-hand");
    let (status, body) = http_act(
        &app,
        &id,
        &tokens[1],
        &json!({ "action": { "loveLetter": { "play": { "card": "A♠" } } }, "requestId": "x2" }),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["code"], "INVALID_ARGUMENT");
    assert!(
        body["message"].as_str().expect("message").contains("lopti"),
        "{body}"
    );
    let (status, body) = http_act(
        &app,
        &id,
        &tokens[1],
        &json!({ "action": { "lopti": { "propose": { "change": { "setHandSize": { "size": 4 } } } } }, "requestId": "x3" }),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["message"]
            .as_str()
            .expect("message")
            .contains("timing"),
        "{body}"
    );
    let (status, body) = http_act(
        &app,
        &id,
        &tokens[1],
        &json!({ "action": { "lopti": { "keepCards": {} } }, "requestId": "k1" }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let after: u64 = body["view"]["version"]
        .as_str()
        .expect("uint64 string")
        .parse()
        .expect("n");
    let before: u64 = version.as_str().expect("uint64 string").parse().expect("n");
    assert_eq!(after, before + 1, "the refused actions appended nothing");
    assert!(body["view"]["game"]["lopti"]["phase"]["play"].is_object());
}
