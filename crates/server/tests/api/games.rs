//! `ListGames` (`GET /v1/games`): every game with its editions, seats, options and cards,
//! the same over both transports, with the content of the game specs and no enum default.

use std::collections::BTreeSet;

use missive_proto::v1 as pb;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{Backend, TestApp, spawn_app};

/// The gentlemen of docs/games/amori-e-intrighi.md with their victory points.
const GENTLEMEN: [(&str, u64); 14] = [
    ("Bodo", 1),
    ("Cornelius", 1),
    ("Gustav", 1),
    ("Konrad", 2),
    ("Ludwig", 2),
    ("Heinrich", 2),
    ("Alexander", 3),
    ("Giselbert", 3),
    ("Theobald", 4),
    ("Ferdinand", 4),
    ("Friedrich", 5),
    ("Maximilian", 6),
    ("Wilhelm", 7),
    ("Bertram von Biedenfeld", 8),
];

fn game<'a>(catalogue: &'a Value, kind: &str) -> &'a Value {
    catalogue["games"]
        .as_array()
        .and_then(|games| games.iter().find(|g| g["kind"] == kind))
        .unwrap_or_else(|| panic!("{kind} is listed: {catalogue}"))
}

fn items(value: &Value) -> &[Value] {
    value.as_array().map_or(&[], Vec::as_slice)
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

/// Every check of the catalogue's content, on its JSON form.
fn check_content(catalogue: &Value) {
    let body = catalogue.to_string();
    assert!(
        !body.to_lowercase().contains("unspecified"),
        "no enum shows its default: {body}"
    );
    let kinds: BTreeSet<&str> = items(&catalogue["games"])
        .iter()
        .map(|g| text(&g["kind"]))
        .collect();
    assert_eq!(
        kinds,
        BTreeSet::from(["amori-e-intrighi", "love-letter", "lopti"])
    );
    for info in items(&catalogue["games"]) {
        for field in ["name", "summary", "optionsField"] {
            assert!(!text(&info[field]).is_empty(), "{field} of {info}");
        }
        assert!(info["rulesVersion"].as_u64() >= Some(1), "{info}");
        assert!(!items(&info["rulesVersions"]).is_empty(), "{info}");
        assert!(!items(&info["botStrategies"]).is_empty(), "{info}");
        assert!(!items(&info["editions"]).is_empty(), "{info}");
        for option in items(&info["options"]) {
            assert!(!text(&option["description"]).is_empty(), "{option}");
        }
    }

    // Love Letter: the 2019 deck of 21 cards in 10 roles, the classic one of 16 in 8.
    let love_letter = game(catalogue, "love-letter");
    assert_eq!(
        (
            love_letter["minSeats"].as_u64(),
            love_letter["maxSeats"].as_u64()
        ),
        (Some(2), Some(6))
    );
    let editions = items(&love_letter["catalogue"]["loveLetter"]["editions"]);
    let deck = |edition: &str| {
        editions
            .iter()
            .find(|e| e["edition"] == edition)
            .unwrap_or_else(|| panic!("{edition} in {love_letter}"))
    };
    for (edition, cards, roles) in [
        ("LOVE_LETTER_EDITION_2019", 21, 10),
        ("LOVE_LETTER_EDITION_CLASSIC", 16, 8),
    ] {
        let deck = deck(edition);
        let listed = items(&deck["roles"]);
        assert_eq!(deck["cardCount"], cards, "{deck}");
        assert_eq!(listed.len(), roles, "{deck}");
        let counted: u64 = listed.iter().filter_map(|r| r["count"].as_u64()).sum();
        let ids: u64 = listed.iter().map(|r| items(&r["cards"]).len() as u64).sum();
        assert_eq!((counted, ids), (cards, cards), "{deck}");
        for role in listed {
            assert!(!text(&role["name"]).is_empty(), "{role}");
            assert!(text(&role["effect"]).len() > 10, "{role}");
        }
    }
    let priest = items(&deck("LOVE_LETTER_EDITION_2019")["roles"])
        .iter()
        .find(|r| r["role"] == "LOVE_LETTER_ROLE_PRIEST")
        .expect("the Priest");
    assert_eq!(
        (&priest["name"], &priest["value"], &priest["cards"]),
        (&json!("Priest"), &json!(2), &json!(["2♠", "2♣"]))
    );
    let classic = love_letter["editions"]
        .as_array()
        .and_then(|e| e.iter().find(|e| e["name"] == "classic"))
        .expect("the classic edition");
    assert_eq!(classic["maxSeats"], 4);

    // Lopti: 52 cards, the four special ranks, the rule catalogue and the Rule Vote.
    let lopti = &game(catalogue, "lopti")["catalogue"]["lopti"];
    assert_eq!(items(&lopti["cards"]).len(), 52);
    let specials: Vec<(&str, &str)> = items(&lopti["specials"])
        .iter()
        .map(|s| (text(&s["special"]), text(&s["rank"])))
        .collect();
    assert_eq!(
        specials,
        [
            ("LOPTI_SPECIAL_RESET", "LOPTI_RANK_TWO"),
            ("LOPTI_SPECIAL_PASS", "LOPTI_RANK_THREE"),
            ("LOPTI_SPECIAL_LOW", "LOPTI_RANK_SEVEN"),
            ("LOPTI_SPECIAL_BURN", "LOPTI_RANK_TEN"),
        ]
    );
    assert!(
        text(&lopti["ruleVote"]).contains("more than half"),
        "{lopti}"
    );
    for part in ["triggers", "effects", "changes"] {
        assert!(!items(&lopti[part]).is_empty(), "{part}");
        for item in items(&lopti[part]) {
            assert!(!text(&item["description"]).is_empty(), "{item}");
        }
    }
    assert_eq!(lopti["roshamboThrows"], 30);

    // Amori e Intrighi: every gentleman of the spec with his points, the 46 event cards, the
    // daughters, the six locations and the three dice.
    let amori = &game(catalogue, "amori-e-intrighi")["catalogue"]["amori"];
    for (name, points) in GENTLEMEN {
        let gentleman = items(&amori["gentlemen"])
            .iter()
            .find(|g| g["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {amori}"));
        assert_eq!(
            gentleman["victoryPoints"].as_u64(),
            Some(points),
            "{gentleman}"
        );
    }
    assert_eq!(items(&amori["gentlemen"]).len(), GENTLEMEN.len());
    let events = items(&amori["eventCards"]);
    assert_eq!(
        events
            .iter()
            .filter_map(|e| e["count"].as_u64())
            .sum::<u64>(),
        46
    );
    for event in events {
        assert!(text(&event["effect"]).len() > 10, "{event}");
    }
    let chaperone = events
        .iter()
        .find(|e| e["id"] == "chaperone")
        .expect("Chaperone");
    assert_eq!(
        (&chaperone["count"], &chaperone["reaction"]),
        (&json!(7), &json!(true))
    );
    assert_eq!(items(&amori["daughters"]).len(), 12);
    let locations = items(&amori["locations"]);
    assert_eq!(locations.len(), 6);
    for location in locations {
        assert!(!text(&location["action"]).is_empty(), "{location}");
    }
    let tailor = &locations[5];
    assert_eq!(
        (
            &tailor["name"],
            &tailor["deckSize"],
            &tailor["intrigueAllowed"]
        ),
        (&json!("Tailor"), &json!(0), &json!(false))
    );
    assert_eq!(items(&amori["dice"]).len(), 3);
}

async fn over_http(app: &TestApp) -> Value {
    let response = app.get("/v1/games").await;
    assert_eq!(response.status(), StatusCode::OK);
    let cache = response
        .headers()
        .get(reqwest::header::CACHE_CONTROL)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(cache.contains("max-age="), "cacheable: {cache:?}");
    response.json().await.expect("JSON")
}

#[tokio::test]
async fn list_games_over_http_gives_every_game_with_its_cards_and_their_texts() {
    let app = spawn_app(Backend::Sqlite).await;
    check_content(&over_http(&app).await);
}

#[tokio::test]
async fn list_games_over_grpc_gives_what_http_gives_without_a_token() {
    let app = spawn_app(Backend::Postgres).await;
    let mut client = app.grpc().await;
    let games = client
        .list_games(pb::ListGamesRequest {})
        .await
        .expect("ListGames answers a caller without a token")
        .into_inner();
    let as_json = serde_json::to_value(&games).expect("JSON");
    check_content(&as_json);
    assert_eq!(
        as_json,
        over_http(&app).await,
        "both transports answer alike"
    );
}

#[tokio::test]
async fn every_edition_takes_the_seats_the_catalogue_gives_and_no_more() {
    let app = spawn_app(Backend::Sqlite).await;
    let catalogue = over_http(&app).await;
    for info in items(&catalogue["games"]) {
        let field = text(&info["optionsField"]);
        for edition in items(&info["editions"]) {
            let mut options = json!({});
            if !text(&edition["optionValue"]).is_empty() {
                options["edition"] = edition["optionValue"].clone();
            }
            let (min, max) = (&edition["minSeats"], &edition["maxSeats"]);
            for (seats, allowed) in [
                (min.as_u64().unwrap_or(0), true),
                (max.as_u64().unwrap_or(0), true),
                (max.as_u64().unwrap_or(0) + 1, false),
            ] {
                let body = json!({ "options": { field: options.clone() }, "seatCount": seats });
                let response = app.post("/v1/matches", &body).await;
                assert_eq!(
                    response.status().is_success(),
                    allowed,
                    "{body}: {}",
                    response.text().await.unwrap_or_default()
                );
            }
        }
    }
}
