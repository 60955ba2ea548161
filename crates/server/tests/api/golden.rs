//! The golden corpus: matches recorded from the server (every game, edition and seat count;
//! bots and people; deadlines that passed and players who left), kept under `golden/` at the
//! repository's root, each with its whole audit log (every event, its hash, the seed) and the
//! outcome the players saw. Every one must still replay, under the rules version it was
//! recorded with, to that outcome: a change to a game that alters a past outcome fails here
//! unless it ships as a new rules version. The files are never edited: `golden/MANIFEST` holds
//! each one's SHA-256, and new files are added with new names.
//!
//! `MISSIVE_RECORD_GOLDEN=<folder> cargo test -p missive-server --test api record_golden --
//! --ignored` records a new batch into `<folder>` (see docs/ADDING_A_GAME.md, "Changing a
//! game's rules").

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use missive_proto::v1 as pb;
use missive_proto::v1::missive_client::MissiveClient;
use missive_server::games::Registry;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tonic::transport::Channel;

use crate::deal::games;
use crate::helpers::{
    Backend, Lcg, audit_log, authed, leave, seat_view, spawn_app, spectator_view,
};

/// One golden file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Golden {
    /// This file's format.
    format: u32,
    /// How the match was played, for a person.
    note: String,
    match_id: String,
    kind: String,
    /// `finished` or `abandoned`.
    status: String,
    /// What the last view showed: absent for an abandoned match.
    outcome: Option<pb::Outcome>,
    /// The audit log as GetHistory returned it: every event with its hash, and the seed.
    audit: pb::AuditLog,
}

fn folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../golden")
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).expect("a folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            found.extend(files(&path));
        } else if path.to_string_lossy().ends_with(".json.gz") {
            found.push(path);
        }
    }
    found.sort();
    found
}

fn relative(path: &Path) -> String {
    path.strip_prefix(folder())
        .expect("inside golden/")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn every_golden_match_replays_to_its_recorded_outcome_and_no_golden_file_changed() {
    let dir = folder();
    let manifest = std::fs::read_to_string(dir.join("MANIFEST")).expect("golden/MANIFEST");
    let listed: BTreeMap<String, String> = manifest
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (hash, path) = l.split_once("  ").expect("`<sha256>  <path>` lines");
            (path.to_owned(), hash.to_owned())
        })
        .collect();
    let present: BTreeSet<String> = files(&dir).iter().map(|p| relative(p)).collect();
    assert_eq!(
        listed.keys().cloned().collect::<BTreeSet<_>>(),
        present,
        "every golden file is in golden/MANIFEST, and nothing else"
    );
    let registry = Registry::new();
    let mut covered = BTreeSet::new();
    let mut kinds = BTreeMap::<String, usize>::new();
    for (path, hash) in &listed {
        let bytes = std::fs::read(dir.join(path)).expect("a golden file");
        assert_eq!(
            &hex::encode(Sha256::digest(&bytes)),
            hash,
            "{path} was edited: golden files are never changed, add new ones instead"
        );
        let mut json = Vec::new();
        std::io::Read::read_to_end(
            &mut flate2::read::GzDecoder::new(bytes.as_slice()),
            &mut json,
        )
        .expect("gzipped");
        let golden: Golden = serde_json::from_slice(&json).expect("a golden file");
        let id = golden.match_id.parse().expect("a match id");
        let state = missive_server::audit::verify(&registry, id, &golden.audit)
            .unwrap_or_else(|e| panic!("{path} ({}): {e}", golden.note));
        let outcome = state.outcome().map(|o| pb::Outcome {
            winners: o.winners.iter().map(u32::from).collect(),
            scores: o.scores,
        });
        match golden.status.as_str() {
            "finished" => assert_eq!(outcome, golden.outcome, "{path}: the outcome changed"),
            "abandoned" => assert!(golden.outcome.is_none(), "{path}"),
            other => panic!("{path}: status {other}"),
        }
        // Under a version the server does not run, the same log is refused, not replayed.
        let mut other = golden.audit.clone();
        other.rules_version += 1;
        let refused = missive_server::audit::verify(&registry, id, &other)
            .map(|_| ())
            .expect_err("an unknown rules version");
        assert!(refused.to_string().contains("version"), "{path}: {refused}");
        let created = match golden.audit.events.first().and_then(|e| e.body.as_ref()) {
            Some(pb::audit_event::Body::Created(c)) => c,
            _ => panic!("{path}: no creation first"),
        };
        let edition = match created.options.as_ref().and_then(|o| o.game.as_ref()) {
            Some(pb::game_options::Game::LoveLetter(o)) => o.edition,
            _ => 0,
        };
        covered.insert((golden.kind.clone(), edition, created.seat_count));
        for event in &golden.audit.events {
            *kinds.entry(event.kind.clone()).or_default() += 1;
        }
        *kinds
            .entry(format!("status {}", golden.status))
            .or_default() += 1;
        if !created.bots.is_empty() {
            *kinds.entry("with bots".into()).or_default() += 1;
        }
    }
    assert!(listed.len() >= 200, "{} golden matches", listed.len());
    for game in games() {
        for seats in game.seats.clone() {
            let edition = match game.options.game.as_ref() {
                Some(pb::game_options::Game::LoveLetter(o)) => o.edition,
                _ => 0,
            };
            let kind = match game.options.game.as_ref() {
                Some(pb::game_options::Game::LoveLetter(_)) => "love-letter",
                Some(pb::game_options::Game::Lopti(_)) => "lopti",
                _ => "amori-e-intrighi",
            };
            assert!(
                covered.contains(&(kind.to_owned(), edition, seats)),
                "no golden match of {} with {seats} seats",
                game.name
            );
        }
    }
    for kind in [
        "created",
        "joined",
        "action",
        "timeout",
        "left",
        "status finished",
        "status abandoned",
        "with bots",
    ] {
        assert!(kinds.contains_key(kind), "no golden {kind}: {kinds:?}");
    }
}

async fn wait_over(client: &mut MissiveClient<Channel>, id: &str) -> pb::MatchView {
    let start = Instant::now();
    loop {
        let view = spectator_view(client, id).await;
        let status = view.r#match.as_ref().map(|m| m.status).unwrap_or_default();
        if status == pb::MatchStatus::Finished as i32 || status == pb::MatchStatus::Abandoned as i32
        {
            return view;
        }
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "{id} never ended"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Plays the seats whose tokens are given (random legal actions) until the match ends, or,
/// with `stop_after_timeout`, until a deadline has passed once, when the first seat leaves.
async fn play_people(
    client: &mut MissiveClient<Channel>,
    id: &str,
    tokens: &[String],
    rng: &mut Lcg,
    stop_after_timeout: bool,
) {
    let start = Instant::now();
    let mut n = 0;
    loop {
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "{id} never ended"
        );
        if stop_after_timeout {
            let log = client
                .get_history(authed(
                    pb::GetHistoryRequest {
                        match_id: id.to_owned(),
                        seat: None,
                    },
                    &tokens[0],
                ))
                .await
                .expect("history")
                .into_inner();
            if log
                .entries
                .iter()
                .any(|e| matches!(e.entry, Some(pb::history_entry::Entry::TimedOut(_))))
            {
                leave(client, id, &tokens[0]).await;
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        let mut acted = false;
        for token in tokens {
            let view = seat_view(client, id, token).await;
            let status = view.r#match.as_ref().map(|m| m.status).unwrap_or_default();
            if status != pb::MatchStatus::Active as i32 {
                return;
            }
            let seat = view.seat.expect("a seat");
            if !view.awaiting.contains(&seat) || view.legal_actions.is_empty() {
                continue;
            }
            let action = view.legal_actions[rng.below(view.legal_actions.len())].clone();
            n += 1;
            let acted_now = client
                .act(authed(
                    pb::ActRequest {
                        match_id: id.to_owned(),
                        action: Some(action),
                        request_id: format!("golden-{n}"),
                        expected_version: Some(view.version),
                        seat: None,
                        ..Default::default()
                    },
                    token,
                ))
                .await;
            acted |= acted_now.is_ok();
        }
        if !acted {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// Records a batch of golden matches into `$MISSIVE_RECORD_GOLDEN`; run by hand.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "records the golden corpus; run by hand with MISSIVE_RECORD_GOLDEN set"]
async fn record_golden() {
    let out = PathBuf::from(std::env::var("MISSIVE_RECORD_GOLDEN").expect("a folder"));
    let app = spawn_app(Backend::Sqlite).await;
    let mut client = app.grpc().await;
    let mut rng = Lcg(0x601d);
    // (match id, note)
    let mut matches: Vec<(String, String)> = Vec::new();
    let strategies = ["random", "counting"];
    // Lopti sessions of one hand: a whole session of three is a thousand events.
    let games: Vec<_> = games()
        .into_iter()
        .map(|mut game| {
            if let Some(pb::game_options::Game::Lopti(options)) = game.options.game.as_mut() {
                options.hands = 1;
                game.name = "lopti, one hand";
            }
            game
        })
        .collect();
    for game in &games {
        // People: one person against bots, to the end; two people, one deadline passing,
        // then a leave that abandons the match (after a seat taken and left before the start).
        for (timeout, people) in [(None, 1u32), (None, 1), (Some(1), 2)] {
            let seats = *game.seats.start();
            let created = client
                .create_match(pb::CreateMatchRequest {
                    options: Some(game.options.clone()),
                    seat_count: seats,
                    turn_timeout_secs: timeout,
                    bots: (people..seats)
                        .map(|seat| pb::BotSeat {
                            seat,
                            strategy: "random".into(),
                            nonce: String::new(),
                        })
                        .collect(),
                    ..Default::default()
                })
                .await
                .expect("create")
                .into_inner();
            let id = created.r#match.expect("info").match_id;
            let join = |player: String| pb::JoinMatchRequest {
                match_id: id.clone(),
                player,
                ..Default::default()
            };
            if timeout.is_some() {
                let passer = client
                    .join_match(join("passer".into()))
                    .await
                    .expect("join")
                    .into_inner();
                leave(&mut client, &id, &passer.seat_token).await;
            }
            let mut tokens = Vec::new();
            for p in 0..people {
                let joined = client
                    .join_match(join(format!("player {p}")))
                    .await
                    .expect("join")
                    .into_inner();
                tokens.push(joined.seat_token);
            }
            let note = match timeout {
                None => format!("{}, a person against bots", game.name),
                Some(_) => format!(
                    "{}, two people, a seat left before the start, a deadline passed, then a leave",
                    game.name
                ),
            };
            // Played at once, so that its deadlines do not end the match meanwhile.
            play_people(&mut client, &id, &tokens, &mut rng, timeout.is_some()).await;
            matches.push((id, note));
        }
    }
    for game in &games {
        for seats in game.seats.clone() {
            // Bots only, mixing strategies: more of the short games than of the long ones, to
            // keep the corpus a few megabytes.
            let count = match game.options.game {
                Some(pb::game_options::Game::LoveLetter(_)) => 20,
                Some(pb::game_options::Game::Lopti(_)) => 6,
                _ => 4,
            };
            for n in 0..count {
                let bots: Vec<pb::BotSeat> = (0..seats)
                    .map(|seat| pb::BotSeat {
                        seat,
                        strategy: strategies[((n + seat) % 2) as usize].into(),
                        nonce: String::new(),
                    })
                    .collect();
                let created = client
                    .create_match(pb::CreateMatchRequest {
                        options: Some(game.options.clone()),
                        seat_count: seats,
                        bots,
                        ..Default::default()
                    })
                    .await
                    .expect("create")
                    .into_inner();
                let id = created.r#match.expect("info").match_id;
                matches.push((id, format!("{}, {seats} bots", game.name)));
            }
        }
    }
    std::fs::create_dir_all(&out).expect("the folder");
    for (i, (id, note)) in matches.iter().enumerate() {
        let view = wait_over(&mut client, id).await;
        let info = view.r#match.clone().expect("info");
        let status = if info.status == pb::MatchStatus::Finished as i32 {
            "finished"
        } else {
            "abandoned"
        };
        let golden = Golden {
            format: 1,
            note: note.clone(),
            match_id: id.clone(),
            kind: info.kind.clone(),
            status: status.into(),
            outcome: view.outcome.clone(),
            audit: audit_log(&mut client, id).await,
        };
        let dir = out.join(&info.kind);
        std::fs::create_dir_all(&dir).expect("the folder");
        let file = dir.join(format!(
            "{:03}-{}p-{}.json.gz",
            i,
            info.seat_count,
            &id[..8]
        ));
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        serde_json::to_writer(&mut gz, &golden).expect("JSON");
        std::fs::write(&file, gz.finish().expect("gzipped")).expect("written");
    }
    eprintln!(
        "{} golden matches recorded in {}",
        matches.len(),
        out.display()
    );
}
