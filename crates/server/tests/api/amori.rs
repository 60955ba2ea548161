//! Amori e Intrighi through the service: whole matches over gRPC on PostgreSQL and SQLite,
//! driven from each seat's legal actions; views and histories checked against the rules
//! engine's own, seat by seat, so no seat ever sees another's event hand or a location deck
//! it is not choosing from; the exported log verifies; an action over HTTP/JSON; refusals.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use missive_proto::v1 as pb;
use missive_proto::v1::missive_client::MissiveClient;
use missive_rules::amori::{Amori, Event};
use missive_rules::{Game, Observation, Seed, Viewer};
use missive_server::games::{ProtoGame, Registry};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tonic::Code;
use tonic::transport::Channel;

use crate::helpers::{
    Backend, Lcg, act_with, audit_log, authed, backend_tests, game_events, get_match, http_act,
    join_as, seat_act, seat_view, spawn_app,
};

const KIND: &str = "amori-e-intrighi";

fn amori_request(seats: u32, starting_player: Option<u32>) -> pb::CreateMatchRequest {
    pb::CreateMatchRequest {
        options: Some(pb::GameOptions {
            game: Some(pb::game_options::Game::Amori(pb::AmoriOptions {
                starting_player,
            })),
        }),
        seat_count: seats,
        ..Default::default()
    }
}

/// Creates a match and takes every seat; returns the match id and the seat tokens.
async fn create_and_join(
    client: &mut MissiveClient<Channel>,
    seats: u32,
    starting_player: Option<u32>,
) -> (String, Vec<String>) {
    let info = client
        .create_match(amori_request(seats, starting_player))
        .await
        .expect("create")
        .into_inner()
        .r#match
        .expect("match info");
    assert_eq!(info.kind, KIND);
    let mut tokens = Vec::new();
    for seat in 0..seats {
        if seat == 0 {
            // Someone takes seat 0 first, looks, and leaves: the seat changes hands before the
            // start, and the passer-by saw no card.
            crate::deal::pass_by(client, &info.match_id, seat).await;
        }
        let joined = client
            .join_match(pb::JoinMatchRequest {
                match_id: info.match_id.clone(),
                player: format!("mother {seat}"),
                seat: Some(seat),
                nonce: Some(format!("mother-{seat}")),
                ..Default::default()
            })
            .await
            .expect("join")
            .into_inner();
        tokens.push(joined.seat_token);
    }
    (info.match_id, tokens)
}

fn amori_view(view: &pb::MatchView) -> &pb::AmoriView {
    match view.game.as_ref().and_then(|g| g.game.as_ref()) {
        Some(pb::game_view::Game::Amori(v)) => v,
        other => panic!("an Amori view, not {other:?}"),
    }
}

fn amori_action(action: &pb::GameAction) -> &pb::amori_action::Action {
    match action.game.as_ref() {
        Some(pb::game_action::Game::Amori(pb::AmoriAction {
            action: Some(action),
        })) => action,
        other => panic!("an Amori action, not {other:?}"),
    }
}

/// Picks among a seat's legal actions. A quarter of the picks are uniformly random, so every
/// kind of move happens; the rest prefer progress (location actions over intrigues, cards of a
/// gentleman the daughter already courts, giving up the weakest suit), which ends games fast.
fn pick(view: &pb::MatchView, seat: u32, rng: &mut Lcg) -> usize {
    use pb::amori_action::Action as A;
    let legal = &view.legal_actions;
    if legal.len() == 1 || rng.below(4) == 0 {
        return rng.below(legal.len());
    }
    let game = amori_view(view);
    let held: Vec<&str> = game.players[seat as usize]
        .active
        .as_ref()
        .map(|d| d.suitors.iter().map(String::as_str).collect())
        .unwrap_or_default();
    // "theobald-3" → "theobald".
    let gentleman = |card: &str| card.rsplit_once('-').map_or("", |(g, _)| g).to_owned();
    let courted = |g: &str| held.iter().filter(|c| gentleman(c) == g).count() as i32;
    let score = |action: &pb::GameAction| -> i32 {
        match amori_action(action) {
            A::LocationAction(_) => 3,
            A::Visit(v) => {
                let deck = game
                    .location_decks
                    .iter()
                    .find(|d| d.location == v.location);
                if deck.is_some_and(|d| d.size > 0) {
                    2
                } else {
                    1
                }
            }
            A::Take(t) => 1 + courted(&gentleman(&t.card)),
            A::GiveUp(g) => -courted(&g.gentleman),
            A::EndTurn(_) => 1,
            A::PlayEvent(_) => 2,
            _ => 0,
        }
    };
    let best = legal.iter().map(score).max().unwrap_or(0);
    let top: Vec<usize> = (0..legal.len())
        .filter(|&i| score(&legal[i]) == best)
        .collect();
    top[rng.below(top.len())]
}

/// A match played to the end, and every view each driven seat received.
struct Played {
    match_id: String,
    received: Vec<(u32, pb::MatchView)>,
    last: pb::MatchView,
    actions: usize,
}

/// Plays the match to the end. `driven` maps the seats this test plays to their tokens; any
/// other seat is left to whoever else holds it (a server-side bot), and the driver waits for
/// it to move.
async fn drive(
    client: &mut MissiveClient<Channel>,
    match_id: &str,
    driven: &BTreeMap<u32, String>,
    seed: u64,
) -> Played {
    let mut rng = Lcg(seed);
    let mut received = Vec::new();
    let mut actions = 0;
    let all: Vec<(u32, String)> = driven.iter().map(|(s, t)| (*s, t.clone())).collect();
    let mut idle_since = Instant::now();
    // The mover's own response view, when it moves again at once and the other seats' views
    // need not be fetched this time.
    let mut carried: Option<(u32, pb::MatchView)> = None;
    for _ in 0..20_000 {
        // Every driven seat's view at this version: an idle seat's view is checked for leaks
        // just as the mover's is.
        let mut mover = carried.take();
        let mut any = None;
        let fetch: &[(u32, String)] = if mover.is_some() { &[] } else { &all };
        for (seat, token) in fetch {
            let seat = *seat;
            let view = seat_view(client, match_id, token).await;
            assert_eq!(view.seat, Some(seat));
            if view.outcome.is_some() {
                return Played {
                    match_id: match_id.to_owned(),
                    received,
                    last: view,
                    actions,
                };
            }
            if view.awaiting.contains(&seat) {
                assert!(!view.legal_actions.is_empty(), "an awaited seat can act");
                mover = Some((seat, view.clone()));
            } else {
                assert!(view.legal_actions.is_empty(), "only the awaited seat acts");
            }
            any = Some(view.clone());
            received.push((seat, view));
        }
        let Some((seat, view)) = mover else {
            // Another hand holds the move.
            let awaiting = any.map(|v| v.awaiting).unwrap_or_default();
            assert!(!awaiting.is_empty(), "a running match awaits someone");
            assert!(
                idle_since.elapsed() < Duration::from_secs(20),
                "seats {awaiting:?} never moved"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        idle_since = Instant::now();
        let action = view.legal_actions[pick(&view, seat, &mut rng)].clone();
        let response = act_with(
            client,
            seat_act(match_id, seat, action, Some(view.version)),
            &driven[&seat],
        )
        .await;
        actions += 1;
        let view = response.view.expect("a view");
        // A seat often moves several times in a row (visit, location action, events): its
        // response view serves for the next move. Every third action, and whenever someone
        // looks at a location deck, every driven seat's view is fetched and checked instead.
        let choosing = matches!(
            amori_view(&view)
                .phase
                .as_ref()
                .and_then(|p| p.phase.as_ref()),
            Some(pb::amori_phase::Phase::ChooseGentleman(_))
        );
        if view.outcome.is_none() && view.awaiting == [seat] && actions % 3 != 0 && !choosing {
            carried = Some((seat, view.clone()));
        }
        received.push((seat, view));
    }
    panic!("the match did not end");
}

/// One logged event: its seq, the engine's state right after it, and what it told the table.
struct Step {
    seq: u64,
    state: Amori,
    observations: Vec<Observation<Event>>,
}

/// Replays a finished match's audit log through the rules engine itself (not the service).
fn replay(log: &pb::AuditLog) -> Vec<Step> {
    let (dealt_at, seed) = crate::helpers::deal_of(log);
    let mut created: Option<pb::MatchCreated> = None;
    let mut state: Option<Amori> = None;
    let mut steps = Vec::new();
    for event in &log.events {
        if let Some(pb::audit_event::Body::Created(c)) = &event.body {
            created = Some(c.clone());
        }
        let observations = match &event.body {
            _ if event.seq == dealt_at => {
                let created = created.as_ref().expect("created first");
                let options = created.options.as_ref().expect("options");
                let config = Amori::options_from_proto(options)
                    .expect("Amori options")
                    .expect("valid options");
                let fresh =
                    Amori::setup(&config, created.seat_count as u8, Seed(seed)).expect("setup");
                let observations = fresh.setup_observations();
                state = Some(fresh);
                observations
            }
            Some(pb::audit_event::Body::Action(taken)) => {
                let action = Amori::action_from_proto(taken.action.as_ref().expect("action"))
                    .expect("a logged action reads back");
                state
                    .as_mut()
                    .expect("created first")
                    .apply(taken.seat as u8, &action)
                    .expect("a logged action replays")
            }
            _ => Vec::new(),
        };
        // Nothing is dealt before the start: no state, and nothing told to anyone.
        match &state {
            Some(state) => steps.push(Step {
                seq: event.seq,
                state: state.clone(),
                observations,
            }),
            None => assert!(observations.is_empty()),
        }
    }
    steps
}

/// What a seat's view may hold of hidden things: its own hand only, and a location deck's
/// cards only while that seat chooses from that deck.
fn assert_view_hides_what_it_must(view: &pb::AmoriView, seat: u32) {
    for player in &view.players {
        if player.seat == seat {
            assert_eq!(player.hand.len() as u32, player.hand_size);
        } else {
            assert!(
                player.hand.is_empty(),
                "seat {seat} sees seat {}'s hand",
                player.seat
            );
        }
    }
    let choosing = match view.phase.as_ref().and_then(|p| p.phase.as_ref()) {
        Some(pb::amori_phase::Phase::ChooseGentleman(c)) if c.seat == seat => Some(c.location),
        _ => None,
    };
    for deck in &view.location_decks {
        if Some(deck.location) == choosing {
            assert_eq!(deck.cards.len() as u32, deck.size);
        } else {
            assert!(
                deck.cards.is_empty(),
                "seat {seat} sees the cards of a deck it is not choosing from"
            );
        }
    }
}

/// Who may read a private event: the seat it names. `None` for public kinds.
fn private_to(event: &pb::GameEvent) -> Option<Option<u32>> {
    use pb::amori_event::Event as E;
    let Some(pb::game_event::Game::Amori(pb::AmoriEvent { event: Some(event) })) = &event.game
    else {
        panic!("an Amori event");
    };
    match event {
        E::HandDealt(h) => Some(Some(h.seat)),
        E::EventDrawn(d) => Some(Some(d.seat)),
        // A shown deck names no seat: only the chooser of that moment may read it.
        E::DeckShown(_) => Some(None),
        _ => None,
    }
}

/// Plays a whole match and checks everything the service showed against the engine.
async fn full_match_is_played_and_shows_each_seat_only_its_own(
    backend: Backend,
    seats: u32,
    seed: u64,
) {
    let started = Instant::now();
    let app = spawn_app(backend).await;
    let mut client = app.grpc().await;
    let (match_id, tokens) = create_and_join(&mut client, seats, None).await;
    let driven: BTreeMap<u32, String> = tokens
        .iter()
        .cloned()
        .enumerate()
        .map(|(s, t)| (s as u32, t))
        .collect();
    let played = drive(&mut client, &match_id, &driven, seed).await;

    // Finished, with the engine's outcome.
    let outcome = played.last.outcome.as_ref().expect("an outcome");
    assert!(!outcome.winners.is_empty(), "someone wins");
    let info = played.last.r#match.as_ref().expect("match info");
    assert_eq!(info.status, pb::MatchStatus::Finished as i32);
    let last = amori_view(&played.last);
    let scoring = last.scoring.as_ref().expect("the reckoning");
    assert_eq!(scoring.totals, outcome.scores);
    let best = scoring.totals.iter().max().copied();
    for winner in &outcome.winners {
        assert_eq!(Some(scoring.totals[*winner as usize]), best);
    }
    assert!(
        last.players.iter().any(|p| p.brides.len() == 3),
        "the match ends once a family has married all three daughters"
    );

    // The exported log verifies, and the engine replays it to the same end.
    let log = audit_log(&mut client, &played.match_id).await;
    let registry = Registry::new();
    let id = played.match_id.parse().expect("uuid");
    let verified = missive_server::audit::verify(&registry, id, &log).expect("the log verifies");
    let steps = replay(&log);
    let end = &steps.last().expect("events").state;
    assert_eq!(
        verified.view(Viewer::Spectator),
        Amori::view_to_proto(&end.view(Viewer::Spectator))
    );
    assert_eq!(
        end.outcome().map(|o| o.scores),
        Some(outcome.scores.clone())
    );
    let at: BTreeMap<u64, &Amori> = steps.iter().map(|s| (s.seq, &s.state)).collect();

    // Every view a seat received is exactly the engine's view for that seat at that version,
    // and holds nothing hidden from the seat.
    let mut deck_choices_seen = 0;
    for (seat, view) in &played.received {
        let state = at[&view.version];
        let viewer = Viewer::Seat(*seat as u8);
        assert_eq!(
            view.game,
            Some(Amori::view_to_proto(&state.view(viewer))),
            "seat {seat} at version {}",
            view.version
        );
        if view.outcome.is_none() {
            let legal: Vec<_> = state
                .legal_actions(*seat as u8)
                .iter()
                .map(Amori::action_to_proto)
                .collect();
            assert_eq!(view.legal_actions, legal);
        }
        let game = amori_view(view);
        assert_view_hides_what_it_must(game, *seat);
        deck_choices_seen += game
            .location_decks
            .iter()
            .filter(|d| !d.cards.is_empty())
            .count();
    }
    assert!(
        deck_choices_seen > 0,
        "some seat chose from a location deck"
    );

    // Each history is exactly the observations addressed to its reader, in order, and holds
    // no other seat's hand or draw; a spectator's holds nothing private at all.
    let mut viewers: Vec<Option<u32>> = (0..seats).map(Some).collect();
    viewers.push(None);
    for viewer in viewers {
        let token = viewer.map(|seat| tokens[seat as usize].as_str());
        let got = game_events(&mut client, &played.match_id, viewer, token).await;
        let who = viewer.map_or(Viewer::Spectator, |s| Viewer::Seat(s as u8));
        let expected: Vec<(u64, pb::GameEvent)> = steps
            .iter()
            .flat_map(|step| {
                step.observations
                    .iter()
                    .filter(|o| o.audience.includes(who))
                    .map(|o| (step.seq, Amori::event_to_proto(&o.event)))
            })
            .collect();
        assert!(!expected.is_empty());
        assert_eq!(got, expected, "history of {viewer:?}");
        let mut own_hand_dealt = 0;
        for (_, event) in &got {
            match (private_to(event), viewer) {
                (Some(_), None) => panic!("a spectator reads a private event: {event:?}"),
                (Some(Some(owner)), Some(seat)) => {
                    assert_eq!(owner, seat, "seat {seat} reads seat {owner}'s card");
                    if matches!(
                        &event.game,
                        Some(pb::game_event::Game::Amori(pb::AmoriEvent {
                            event: Some(pb::amori_event::Event::HandDealt(_))
                        }))
                    ) {
                        own_hand_dealt += 1;
                    }
                }
                _ => {}
            }
        }
        if viewer.is_some() {
            assert_eq!(own_hand_dealt, 1, "{viewer:?} learns its opening hand once");
        }
    }
    eprintln!(
        "{backend:?}, {seats} seats: {} actions, {} turns, in {:?}",
        played.actions,
        last.turn,
        started.elapsed()
    );
}

backend_tests! {
    #[tokio::test]
    full_match_is_played_and_shows_each_seat_only_its_own(2, 11):
    Postgres => two_mothers_play_a_whole_match_over_grpc_on_postgres,
    Citus => two_mothers_play_a_whole_match_over_grpc_on_citus,
}

#[tokio::test]
async fn three_mothers_play_a_whole_match_over_grpc_on_sqlite() {
    full_match_is_played_and_shows_each_seat_only_its_own(Backend::Sqlite, 3, 12).await;
}

#[tokio::test]
async fn an_amori_action_round_trips_over_http_json_and_illegal_ones_are_refused() {
    let app = spawn_app(Backend::Postgres).await;
    let created: Value = app
        .post_json(
            "/v1/matches",
            &json!({ "options": { "amori": { "startingPlayer": 1 } }, "seatCount": 2 }),
        )
        .await;
    assert_eq!(created["match"]["kind"], KIND, "{created}");
    assert_eq!(created["match"]["options"]["amori"]["startingPlayer"], 1);
    let id = created["match"]["matchId"]
        .as_str()
        .expect("matchId")
        .to_owned();
    let mut tokens = Vec::new();
    for player in ["ann", "bea"] {
        tokens.push(app.http_join(&id, player).await);
    }

    // Seat 1 starts: it visits the Park, in the canonical JSON a third-party client writes.
    let visit = json!({ "amori": { "visit": { "location": "AMORI_LOCATION_PARK" } } });
    let (status, body) = http_act(
        &app,
        &id,
        &tokens[1],
        &json!({ "action": visit, "requestId": "visit-1" }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let game = &body["view"]["game"]["amori"];
    assert_eq!(
        game["players"][1]["location"], "AMORI_LOCATION_PARK",
        "{game}"
    );
    assert_eq!(
        game["phase"]["actionOrIntrigue"]["location"],
        "AMORI_LOCATION_PARK"
    );
    let own_hand = game["players"][1]["hand"]
        .as_array()
        .expect("own hand")
        .clone();
    assert_eq!(own_hand.len(), 2);
    assert!(
        game["players"][0]["hand"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "no other seat's hand"
    );
    // The listed legal actions are the same JSON shape a client sends back.
    let legal = body["view"]["legalActions"].as_array().expect("legal");
    // (Responses write default values: "no attribute chosen" is the UNSPECIFIED choice.)
    assert!(
        legal.contains(
            &json!({ "amori": { "locationAction": { "choice": "AMORI_ATTRIBUTE_UNSPECIFIED" } } })
        ),
        "{legal:?}"
    );

    // Its history over HTTP shows the move, and the opening hand to seat 1 alone.
    let history: Value = app
        .get_json(
            &format!("/v1/matches/{id}/history"),
            Some(tokens[0].as_str()),
        )
        .await;
    let events: Vec<&Value> = history["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter_map(|e| e.get("game").map(|g| &g["amori"]))
        .collect();
    assert!(
        events
            .iter()
            .any(|e| e["visited"] == json!({ "seat": 1, "location": "AMORI_LOCATION_PARK" }))
    );
    let dealt: Vec<&Value> = events.iter().filter_map(|e| e.get("handDealt")).collect();
    assert_eq!(dealt.len(), 1, "one opening hand, seat 0's own");
    // Seat 0 is proto3's default value; responses write it all the same.
    assert_eq!(dealt[0]["seat"], json!(0));
    let seat0: Value = app
        .get_json(&format!("/v1/matches/{id}/view"), Some(tokens[0].as_str()))
        .await;
    assert_eq!(
        dealt[0]["cards"],
        seat0["view"]["game"]["amori"]["players"][0]["hand"]
    );

    // Refusals over gRPC: each with the right code, the rule named, nothing changed.
    let mut client = app.grpc().await;
    let version = |client: &MissiveClient<Channel>| {
        let mut client = client.clone();
        let id = id.clone();
        async move { get_match(&mut client, &id).await.version }
    };
    let before = version(&client).await;
    let act = |action: pb::amori_action::Action, token: &str| {
        authed(
            pb::ActRequest {
                match_id: id.clone(),
                action: Some(pb::GameAction {
                    game: Some(pb::game_action::Game::Amori(pb::AmoriAction {
                        action: Some(action),
                    })),
                }),
                request_id: uuid::Uuid::new_v4().to_string(),
                expected_version: None,
                seat: None,
                ..Default::default()
            },
            token,
        )
    };
    use pb::amori_action::Action as A;
    let not_held = ["diadem-1", "diadem-2", "diadem-3"]
        .into_iter()
        .find(|c| !own_hand.contains(&json!(c)))
        .expect("two cards in hand leave one of three free");
    let rule_cases = [
        (
            "a card not in hand",
            act(
                A::PlayEvent(pb::AmoriPlayEvent {
                    card: not_held.into(),
                    target: None,
                    location: 0,
                }),
                &tokens[1],
            ),
            "card-not-in-hand",
        ),
        (
            "a second visit in one turn",
            act(
                A::Visit(pb::AmoriVisit {
                    location: pb::AmoriLocation::Tavern as i32,
                }),
                &tokens[1],
            ),
            "wrong-phase",
        ),
        (
            "the other seat out of turn",
            act(A::EndTurn(pb::AmoriEndTurn {}), &tokens[0]),
            "not-your-turn",
        ),
    ];
    for (name, request, rule) in rule_cases {
        let status = client.act(request).await.expect_err(name);
        assert_eq!(
            status.code(),
            Code::FailedPrecondition,
            "{name}: {}",
            status.message()
        );
        assert_eq!(
            status
                .metadata()
                .get("missive-rule")
                .and_then(|v| v.to_str().ok()),
            Some(rule),
            "{name}"
        );
    }
    let malformed = [
        (
            "no location",
            act(A::Visit(pb::AmoriVisit { location: 0 }), &tokens[1]),
        ),
        (
            "an unknown card id",
            act(
                A::Take(pb::AmoriTake {
                    card: "nobody-1".into(),
                }),
                &tokens[1],
            ),
        ),
        (
            "another game's action",
            authed(
                pb::ActRequest {
                    match_id: id.clone(),
                    action: Some(pb::GameAction {
                        game: Some(pb::game_action::Game::LoveLetter(pb::LoveLetterAction {
                            action: Some(pb::love_letter_action::Action::Play(
                                pb::LoveLetterPlay {
                                    card: "A♠".into(),
                                    target: None,
                                    guess: 0,
                                },
                            )),
                        })),
                    }),
                    request_id: uuid::Uuid::new_v4().to_string(),
                    expected_version: None,
                    seat: None,
                    ..Default::default()
                },
                &tokens[1],
            ),
        ),
    ];
    for (name, request) in malformed {
        let status = client.act(request).await.expect_err(name);
        assert_eq!(
            status.code(),
            Code::InvalidArgument,
            "{name}: {}",
            status.message()
        );
    }
    let bad_start = client.create_match(amori_request(2, Some(2))).await;
    assert_eq!(
        bad_start.expect_err("seat 2 of 2").code(),
        Code::InvalidArgument
    );
    assert_eq!(version(&client).await, before, "refusals change nothing");
}

backend_tests! {
    #[tokio::test]
    a_mother_plays_a_whole_match_against_two_bots:
    /// Two server-side bots and a human seat play a whole game: the bots move from their own
    /// seats' views, through the same path as a player's actions, and the log of the finished
    /// match verifies and replays with every seat's moves in it.
    Postgres => a_mother_plays_a_whole_match_against_two_bots_on_postgres,
    Citus => a_mother_plays_a_whole_match_against_two_bots_on_citus,
}

async fn a_mother_plays_a_whole_match_against_two_bots(backend: Backend) {
    let app = spawn_app(backend).await;
    let mut client = app.grpc().await;
    let mut request = amori_request(3, Some(1));
    request.bots = vec![
        pb::BotSeat {
            seat: 1,
            strategy: "random".into(),
            nonce: String::new(),
        },
        pb::BotSeat {
            seat: 2,
            strategy: String::new(),
            nonce: String::new(),
        },
    ];
    let info = client
        .create_match(request)
        .await
        .expect("create")
        .into_inner()
        .r#match
        .expect("match info");
    let bots: Vec<bool> = info.seats.iter().map(|s| s.bot).collect();
    assert_eq!(bots, [false, true, true]);
    assert_eq!(info.status, pb::MatchStatus::Open as i32, "seat 0 is free");
    let joined = join_as(&mut client, &info.match_id, "mother 0", None).await;
    assert_eq!(joined.seat, 0);
    let driven = BTreeMap::from([(0, joined.seat_token)]);
    let played = drive(&mut client, &info.match_id, &driven, 11).await;

    let outcome = played.last.outcome.as_ref().expect("an outcome");
    assert!(!outcome.winners.is_empty(), "someone wins");
    assert!(played.actions > 0, "the human seat played");
    for (_, view) in &played.received {
        assert_view_hides_what_it_must(amori_view(view), 0);
    }
    let log = audit_log(&mut client, &info.match_id).await;
    let actors: std::collections::BTreeSet<u32> = log
        .events
        .iter()
        .filter(|e| e.kind == "action")
        .filter_map(|e| e.actor)
        .collect();
    assert_eq!(
        actors,
        [0, 1, 2].into(),
        "bots act as ordinary logged actions"
    );
    let id = info.match_id.parse().expect("a match id");
    missive_server::audit::verify(&Registry::new(), id, &log).expect("the log verifies");
    let steps = replay(&log);
    let last = steps.last().expect("a replayed log");
    assert_eq!(
        last.state.outcome().map(|o| o.scores),
        Some(outcome.scores.clone())
    );
}
