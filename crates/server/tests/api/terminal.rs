//! `missive play`, the terminal client, through the real binary with scripted input: it tells
//! each seat what happened in sentences, including what only that seat learnt, names cards by
//! name and value, offers readable choices, and never prints an enum's unset value.

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::helpers::{Backend, Options, TestApp, spawn_app, spawn_app_with};

/// A `missive play` process whose output is gathered as it comes.
struct Terminal {
    child: Child,
    output: Arc<Mutex<String>>,
}

impl Terminal {
    /// Starts `missive play ARGS` against the app with `input` on its standard input (closed
    /// after it, so the player stops at the first prompt past it).
    fn start(app: &TestApp, args: &[&str], input: String) -> Terminal {
        let mut child = Command::new(env!("CARGO_BIN_EXE_missive"))
            .arg("play")
            .args(args)
            .args(["--server", &app.http_base])
            .env_remove("MISSIVE_SEAT_TOKEN")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("missive play starts");
        let mut stdin = child.stdin.take().expect("stdin");
        std::thread::spawn(move || {
            let _ = stdin.write_all(input.as_bytes());
        });
        let output = Arc::new(Mutex::new(String::new()));
        let mut stdout = child.stdout.take().expect("stdout");
        let gathered = output.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                let text = String::from_utf8_lossy(&buffer[..n]).into_owned();
                gathered.lock().expect("lock").push_str(&text);
            }
        });
        Terminal { child, output }
    }

    fn text(&self) -> String {
        self.output.lock().expect("lock").clone()
    }

    /// Waits until the output holds `needle`, failing with the output after 30 s.
    async fn wait_for(&self, needle: &str) -> String {
        let start = Instant::now();
        loop {
            let text = self.text();
            if text.contains(needle) {
                return text;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "{needle:?} never came:\n{text}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits for the process to end by itself; its whole output.
    async fn finish(mut self) -> String {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                assert!(status.success(), "{}", self.text());
                // Let the reader thread take the last bytes.
                tokio::time::sleep(Duration::from_millis(200)).await;
                return self.text();
            }
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "missive play never ended:\n{}",
                self.text()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn no_unset_value(output: &str) {
    assert!(
        !output.to_lowercase().contains("unspecified"),
        "an enum's unset value is printed:\n{output}"
    );
}

/// The answers of a scripted player: the choices cycle through `pattern`, `moves` times.
fn script(pattern: &[u32], moves: usize) -> String {
    pattern
        .iter()
        .cycle()
        .take(moves)
        .map(|n| format!("{n}\n"))
        .collect()
}

async fn post(app: &TestApp, path: &str, body: Value) -> Value {
    let response = app.post(path, &body).await;
    assert!(response.status().is_success(), "POST {path}");
    response.json().await.expect("JSON")
}

/// Waits until `seat` of the match is taken.
async fn taken(app: &TestApp, id: &str, seat: usize) {
    for _ in 0..300 {
        let info: Value = app.get_json(&format!("/v1/matches/{id}"), None).await;
        if info["match"]["seats"][seat]["taken"] == true {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("seat {seat} of {id} is never taken");
}

#[tokio::test]
async fn after_a_priest_only_the_peeking_seats_terminal_names_the_card_seen() {
    let app = spawn_app_with(
        Backend::Sqlite,
        Options {
            allow_fixed_deck: true,
            ..Options::default()
        },
    )
    .await;
    // Set aside 5♠, face up ★1 ★2 6♠; ann gets the Priest 2♠, bob the King 7♥; ann draws the
    // Handmaid 4♠, so her first choice is the Priest on bob.
    let first = ["5♠", "★1", "★2", "6♠", "2♠", "7♥", "4♠"];
    let all = [
        "★1", "★2", "A♠", "A♥", "A♦", "A♣", "J♠", "J♣", "2♠", "2♣", "3♠", "3♣", "4♠", "4♣", "5♠",
        "5♣", "6♠", "6♣", "7♥", "8♥", "Q♥",
    ];
    let deck: Vec<&str> = first
        .iter()
        .copied()
        .chain(all.iter().copied().filter(|c| !first.contains(c)))
        .collect();
    let created = post(
        &app,
        "/v1/matches",
        json!({
            "options": { "loveLetter": { "edition": "LOVE_LETTER_EDITION_2019", "firstPlayer": 0, "deck": deck } },
            "seatCount": 2,
        }),
    )
    .await;
    let id = created["match"]["matchId"].as_str().expect("id").to_owned();
    let ann = Terminal::start(&app, &[&id, "--player", "ann"], script(&[1], 1));
    taken(&app, &id, 0).await;
    // Bob answers nothing: his terminal stops at his first prompt.
    let bob = Terminal::start(&app, &[&id, "--player", "bob"], String::new());

    let seen = ann
        .wait_for("* You look at bob (seat 1)'s hand: the King (7, 7♥).")
        .await;
    assert!(
        seen.contains("* You are dealt the Priest (2, 2♠)."),
        "{seen}"
    );
    assert!(seen.contains("* You draw the Handmaid (4, 4♠)."), "{seen}");
    assert!(
        seen.contains("   1. Play the Priest (2, 2♠) on bob (seat 1)"),
        "choices name the card and the target: {seen}"
    );
    assert!(
        seen.contains("Look at another player's hand in secret."),
        "a card in hand shows its effect: {seen}"
    );
    assert!(
        seen.contains("* You play the Priest (2, 2♠) on bob (seat 1)."),
        "{seen}"
    );
    no_unset_value(&seen);

    let told = bob.finish().await;
    assert!(
        told.contains("* Ann (seat 0) plays the Priest (2, 2♠) on you."),
        "{told}"
    );
    assert!(told.contains("* You are dealt the King (7, 7♥)."), "{told}");
    assert!(
        !told.contains("look at") && !told.contains("looks at"),
        "only the Priest's player learns what she saw:\n{told}"
    );
    no_unset_value(&told);
}

#[tokio::test]
async fn a_lopti_session_reads_as_sentences_and_readable_choices() {
    let app = spawn_app(Backend::Sqlite).await;
    let ann = Terminal::start(
        &app,
        &["--create", "lopti", "--bot", "1", "--player", "ann"],
        script(&[1], 150),
    );
    let told = ann.finish().await;
    for sentence in [
        "* Hand 1 begins: ",
        // A hand size of 3, unless the bot's first proposal changed it before the deal.
        " card(s) in hand, 3 face down, and face up ",
        "* You get ",
        "* Your hand is ",
        "* Bot:random (seat 1) gets ",
        "special ranks: 2s: reset, 3s: pass, 7s: play low, 10s: burn",
        "your hand: ",
    ] {
        assert!(told.contains(sentence), "{sentence:?} in:\n{told}");
    }
    assert!(
        told.contains(". Keep your cards as dealt") || told.contains(". Swap "),
        "the swap is offered in words:\n{told}"
    );
    assert!(
        told.contains(". Play ") || told.contains(". Pick up the pile"),
        "plays are offered in words:\n{told}"
    );
    assert!(
        told.contains("* You play ") || told.contains("* You pick up the pile"),
        "what the player did is told:\n{told}"
    );
    no_unset_value(&told);
}

#[tokio::test]
async fn an_amori_match_reads_as_sentences_with_names_and_effects() {
    let app = spawn_app(Backend::Sqlite).await;
    let ann = Terminal::start(
        &app,
        &[
            "--create",
            "amori-e-intrighi",
            "--bot",
            "1",
            "--player",
            "ann",
        ],
        script(&[1, 2, 1, 1, 3], 30),
    );
    let told = ann.finish().await;
    for sentence in [
        "* The game is set up: the daughters are your ",
        "* You are dealt the event cards ",
        "Go to the Theater (+1 Education, then take one gentleman card of your choice from its deck.)",
        "* Your daughter goes to the ",
        "gentlemen waiting: Theater 3",
    ] {
        assert!(told.contains(sentence), "{sentence:?} in:\n{told}");
    }
    assert!(
        !told.contains("card=") && !told.contains("phase: "),
        "no raw fields:\n{told}"
    );
    no_unset_value(&told);
}
