//! The web client in a real browser: headless Chromium driven over WebDriver (chromedriver),
//! two separate sessions (so two separate localStorages) playing a whole Love Letter match
//! through the page alone, and the page's headers.
//!
//! Without chromedriver the browser tests are skipped with a message, unless `CI` is set: then
//! they fail, so CI cannot pass without having run them. `MISSIVE_CHROMEDRIVER` and
//! `MISSIVE_CHROMIUM` name other binaries than `/usr/bin/chromedriver` and `/usr/bin/chromium`.

use std::future::Future;
use std::os::unix::process::CommandExt;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use futures::FutureExt;
use hyper_util::client::legacy::connect::HttpConnector;
use missive_proto::v1 as pb;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{Backend, Lcg, TestApp, spawn_app};

/// A chromedriver on a free loopback port; killed on drop.
struct Driver {
    child: Child,
    url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        // chromedriver and the browsers it started share a process group of their own: end
        // them all, even those of a session a failed test did not close.
        // `--` first: without it, procps's kill reads `-1234` as options and signals the
        // group named by the first digit alone (`-1`: every process there is).
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `body` with the browser sessions, then closes them whether it passed or panicked.
async fn with_sessions<F: Future<Output = ()>>(sessions: &[&Client], body: F) {
    let outcome = AssertUnwindSafe(body).catch_unwind().await;
    for session in sessions {
        let _ = (*session).clone().close().await;
    }
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

fn binary(var: &str, default: &str) -> Option<PathBuf> {
    let path = std::env::var_os(var).map_or_else(|| PathBuf::from(default), PathBuf::from);
    path.exists().then_some(path)
}

/// Starts chromedriver, or says why the test cannot run: `None` means skip.
async fn driver() -> Option<Driver> {
    let Some(path) = binary("MISSIVE_CHROMEDRIVER", "/usr/bin/chromedriver") else {
        let message = "chromedriver not found (install Debian's chromium and chromium-driver, \
                       or set MISSIVE_CHROMEDRIVER)";
        assert!(
            std::env::var_os("CI").is_none(),
            "{message}; CI must run the browser tests"
        );
        eprintln!("skipping the browser test: {message}");
        return None;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let child = Command::new(path)
        .arg(format!("--port={port}"))
        .arg("--allowed-ips=127.0.0.1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("chromedriver starts");
    let driver = Driver {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let http = reqwest::Client::new();
    let start = Instant::now();
    loop {
        let ready = http
            .get(format!("{}/status", driver.url))
            .send()
            .await
            .ok()
            .filter(|r| r.status().is_success());
        if ready.is_some() {
            return Some(driver);
        }
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "chromedriver did not answer on {}",
            driver.url
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A new headless browser session: its own profile, so its own localStorage.
async fn browser(driver: &Driver, width: u32, height: u32) -> Client {
    let mut options = json!({
        "args": [
            "--headless=new",
            "--no-sandbox",
            "--disable-dev-shm-usage",
            "--disable-gpu",
            "--no-first-run",
            format!("--window-size={width},{height}"),
        ]
    });
    if let Some(chromium) = binary("MISSIVE_CHROMIUM", "/usr/bin/chromium") {
        options["binary"] = json!(chromium.display().to_string());
    }
    let mut capabilities = serde_json::Map::new();
    capabilities.insert("goog:chromeOptions".into(), options);
    // Each WebDriver command is a small request: without TCP_NODELAY, each would wait out a
    // delayed ACK.
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    ClientBuilder::new(connector)
        .capabilities(capabilities)
        .connect(&driver.url)
        .await
        .expect("a browser session")
}

/// What the match page says about itself (`#match`'s data attributes), or `Null` before it
/// is shown.
async fn page_state(browser: &Client) -> Value {
    browser
        .execute(
            "const m = document.getElementById('match');
             if (!m) return null;
             const o = document.getElementById('outcome');
             return { version: Number(m.dataset.version), status: m.dataset.status,
                      seat: m.dataset.seat, busy: m.dataset.busy === '1',
                      actions: document.querySelectorAll('button.action:not(:disabled):not(.folded)').length,
                      winners: o ? o.dataset.winners : null,
                      outcome: o ? o.textContent : null };",
            vec![],
        )
        .await
        .expect("the page answers")
}

/// Polls the page until `ready` holds, for at most `limit`.
async fn wait_until(
    browser: &Client,
    what: &str,
    limit: Duration,
    ready: impl Fn(&Value) -> bool,
) -> Value {
    let start = Instant::now();
    loop {
        let state = page_state(browser).await;
        if ready(&state) {
            return state;
        }
        assert!(
            start.elapsed() < limit,
            "waited {limit:?} for {what}; the page: {state}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn type_into(browser: &Client, css: &str, text: &str) {
    let field = browser
        .wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"));
    field.clear().await.expect("clears");
    field.send_keys(text).await.expect("types");
}

async fn click(browser: &Client, css: &str) {
    browser
        .wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
        .click()
        .await
        .unwrap_or_else(|e| panic!("clicking {css}: {e}"));
}

/// Clicks one of the page's enabled action buttons, chosen by `rng`; false when there was none
/// to click (or the page re-rendered under the click, which the caller retries).
async fn click_an_action(browser: &Client, rng: &mut Lcg) -> bool {
    let Ok(buttons) = browser
        .find_all(Locator::Css("button.action:not(:disabled):not(.folded)"))
        .await
    else {
        return false;
    };
    if buttons.is_empty() {
        return false;
    }
    buttons[rng.below(buttons.len())].click().await.is_ok()
}

async fn spectator_view(app: &TestApp, match_id: &str) -> Value {
    app.http
        .get(app.url(&format!("/v1/matches/{match_id}/view")))
        .send()
        .await
        .expect("a view")
        .json::<Value>()
        .await
        .expect("JSON")
}

#[tokio::test]
async fn two_browsers_play_a_love_letter_match_through_the_page_alone() {
    let Some(driver) = driver().await else { return };
    let started = Instant::now();
    let app = spawn_app(Backend::Sqlite).await;
    let ann = browser(&driver, 1200, 900).await;
    let bob = browser(&driver, 1200, 900).await;
    with_sessions(&[&ann, &bob], play_a_match(&app, &ann, &bob, started)).await;
    eprintln!("the browser match took {:?}", started.elapsed());
}

async fn play_a_match(app: &TestApp, ann: &Client, bob: &Client, started: Instant) {
    // Ann creates a two-seat Love Letter match and takes the first seat.
    ann.goto(&app.url("/")).await.expect("opens the page");
    ann.wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::Css("#create #kind"))
        .await
        .expect("the create form")
        .select_by_value("love-letter")
        .await
        .expect("a game");
    type_into(ann, "#player", "ann").await;
    click(ann, "#create-button").await;
    wait_until(ann, "ann's seat", Duration::from_secs(10), |s| {
        s["seat"] == "0"
    })
    .await;
    let link = ann
        .find(Locator::Css("#share-link"))
        .await
        .expect("an invite link")
        .prop("value")
        .await
        .expect("its value")
        .expect("a link");
    let match_id = link.rsplit('/').next().expect("an id").to_owned();
    assert_eq!(link, app.url(&format!("/#/m/{match_id}")));

    // Bob follows the link and joins; the match starts.
    bob.goto(&link).await.expect("follows the link");
    type_into(bob, "#join-name", "bob").await;
    click(bob, "#join-button").await;
    for (who, page) in [("ann", ann), ("bob", bob)] {
        wait_until(
            page,
            &format!("{who} sees the match start"),
            Duration::from_secs(10),
            |s| s["status"] == "MATCH_STATUS_ACTIVE",
        )
        .await;
    }

    // Whoever has buttons clicks one, until the match is over. The other page learns of each
    // move from its watch stream only: nothing here reloads it, except once, to show that a
    // player who closes the tab comes back to the seat.
    let mut rng = Lcg(0x5eed);
    let mut moves = 0;
    let mut reloaded = false;
    loop {
        let (a, b) = (page_state(ann).await, page_state(bob).await);
        assert!(
            started.elapsed() < Duration::from_secs(50),
            "the match did not end in time ({moves} moves); ann's page: {a}, bob's: {b}"
        );
        if a["status"] == "MATCH_STATUS_FINISHED" && b["status"] == "MATCH_STATUS_FINISHED" {
            break;
        }
        let mut moved = false;
        for (page, state) in [(ann, &a), (bob, &b)] {
            if state["actions"].as_u64().unwrap_or(0) > 0 && state["busy"] == false {
                let before = state["version"].as_u64().expect("a version");
                if click_an_action(page, &mut rng).await {
                    wait_until(
                        page,
                        "the move to be applied",
                        Duration::from_secs(10),
                        |s| s["version"].as_u64().is_some_and(|v| v > before),
                    )
                    .await;
                    moves += 1;
                    moved = true;
                }
            }
        }
        if moves >= 6 && !reloaded {
            ann.refresh().await.expect("reloads");
            wait_until(ann, "ann back at her seat", Duration::from_secs(10), |s| {
                s["seat"] == "0"
            })
            .await;
            reloaded = true;
        }
        if !moved {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    assert!(
        reloaded && moves > 6,
        "a whole match takes more than {moves} moves"
    );

    // Both pages show the outcome the server holds.
    let server = spectator_view(app, &match_id).await;
    let winners: Vec<u64> = server["view"]["outcome"]["winners"]
        .as_array()
        .map(|w| w.iter().map(|s| s.as_u64().unwrap_or(0)).collect())
        .unwrap_or_else(|| vec![0]);
    assert_eq!(
        winners.len(),
        1,
        "one player wins a two-player match: {server}"
    );
    let expected = winners
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let winner_name = ["ann", "bob"][winners[0] as usize];
    for page in [ann, bob] {
        let state = wait_until(page, "the outcome", Duration::from_secs(5), |s| {
            s["winners"].is_string()
        })
        .await;
        assert_eq!(state["winners"], expected.as_str(), "{state}");
        let text = state["outcome"].as_str().expect("an outcome");
        assert!(text.contains(&format!("Winner: {winner_name}")), "{text}");
    }

    // The finished match's audit: the revealed seed matches its commitment, the chain links.
    let audit = ann
        .wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::Css("#seed-check.ok"))
        .await
        .expect("the seed checked against its commitment");
    assert!(
        audit
            .text()
            .await
            .expect("text")
            .contains("matches the commitment")
    );
    let chain = ann
        .find(Locator::Css("#chain-check"))
        .await
        .expect("the chain check");
    assert_eq!(
        chain.attr("class").await.expect("class").as_deref(),
        Some("ok")
    );
    let info: pb::GetMatchResponse = app
        .http
        .get(app.url(&format!("/v1/matches/{match_id}")))
        .send()
        .await
        .expect("the match")
        .json()
        .await
        .expect("JSON");
    let seed = ann.find(Locator::Css("#seed")).await.expect("the seed");
    assert_eq!(
        Some(seed.text().await.expect("text")),
        info.r#match.and_then(|m| m.seed)
    );
    // Stepping back through the log.
    let last = ann
        .find(Locator::Css("#step"))
        .await
        .expect("a step")
        .text()
        .await
        .expect("text");
    click(ann, "#step-prev").await;
    let previous = ann
        .find(Locator::Css("#step"))
        .await
        .expect("a step")
        .text()
        .await
        .expect("text");
    assert_ne!(last, previous);
    click(ann, "#step-first").await;
    let first = ann
        .find(Locator::Css("#step"))
        .await
        .expect("a step")
        .text()
        .await
        .expect("text");
    assert!(first.starts_with("event 1 of"), "{first}");

    eprintln!("{moves} moves");
}

#[tokio::test]
async fn the_page_and_its_assets_allow_only_their_own_origin_and_revalidate() {
    let app = spawn_app(Backend::Sqlite).await;
    for (path, kind) in [
        ("/", "text/html"),
        ("/web/app.js", "text/javascript"),
        ("/web/games.js", "text/javascript"),
        ("/web/app.css", "text/css"),
        ("/web/icon.svg", "image/svg+xml"),
    ] {
        let response = app.http.get(app.url(path)).send().await.expect("an answer");
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let headers = response.headers().clone();
        assert!(
            headers["content-type"].to_str().unwrap().starts_with(kind),
            "{path}"
        );
        let csp = headers["content-security-policy"].to_str().unwrap();
        assert!(
            csp.contains("default-src 'none'") && csp.contains("script-src 'self'"),
            "{csp}"
        );
        assert!(
            !csp.contains("unsafe-inline") && !csp.contains("http"),
            "{csp}"
        );
        assert_eq!(headers["cache-control"], "no-cache");
        assert_eq!(headers["x-content-type-options"], "nosniff");
        // An SVG's namespace is a name, not an address that is fetched.
        let body = response
            .text()
            .await
            .expect("a body")
            .replace("http://www.w3.org/2000/svg", "");
        assert!(
            !body.contains("https://") && !body.contains("http://"),
            "{path} fetches nothing from elsewhere"
        );
        let etag = headers["etag"].clone();
        let again = app
            .http
            .get(app.url(path))
            .header("if-none-match", etag)
            .send()
            .await
            .expect("an answer");
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED, "{path}");
    }
    let missing = app
        .http
        .get(app.url("/web/nothing.js"))
        .send()
        .await
        .expect("an answer");
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
}

/// Takes a seat over HTTP and hands its token to the page as the web client keeps it.
async fn seat_in_browser(app: &TestApp, page: &Client, request: Value) -> String {
    let created: Value = app
        .http
        .post(app.url("/v1/matches"))
        .json(&request)
        .send()
        .await
        .expect("creates")
        .json()
        .await
        .expect("JSON");
    let id = created["match"]["matchId"]
        .as_str()
        .expect("an id")
        .to_owned();
    let kind = created["match"]["kind"].clone();
    let joined: Value = app
        .http
        .post(app.url(&format!("/v1/matches/{id}/join")))
        .json(&json!({ "player": "ann" }))
        .send()
        .await
        .expect("joins")
        .json()
        .await
        .expect("JSON");
    let held = json!({
        "seats": { "0": { "token": joined["seatToken"], "player": "ann" } },
        "current": 0,
        "kind": kind,
    });
    page.goto(&app.url("/")).await.expect("opens the page");
    page.execute(
        "localStorage.setItem('missive.match.' + arguments[0], JSON.stringify(arguments[1]));",
        vec![json!(id), held],
    )
    .await
    .expect("stores the seat");
    page.goto(&app.url(&format!("/#/m/{id}")))
        .await
        .expect("opens the match");
    id
}

/// The pictures in docs/screenshots: each game's table in play, seat 0 played through the page
/// against bots. Run by hand after changing the web client, and look at them.
#[tokio::test]
#[ignore = "writes docs/screenshots/*.png; run by hand"]
async fn screenshots() {
    let Some(driver) = driver().await else { return };
    let app = spawn_app(Backend::Sqlite).await;
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/screenshots");
    std::fs::create_dir_all(&dir).expect("the directory");
    let bots = |n: u32| -> Vec<Value> {
        (1..n)
            .map(|seat| json!({ "seat": seat, "strategy": "random" }))
            .collect()
    };
    let games = [
        (
            "love-letter.png",
            json!({ "options": { "loveLetter": { "edition": "LOVE_LETTER_EDITION_2019" } },
                    "seatCount": 3, "bots": bots(3), "turnTimeoutSecs": 86400 }),
            4,
        ),
        (
            "lopti.png",
            json!({ "options": { "lopti": { "hands": 3 } }, "seatCount": 3, "bots": bots(3) }),
            6,
        ),
        (
            "amori-e-intrighi.png",
            json!({ "options": { "amori": {} }, "seatCount": 3, "bots": bots(3) }),
            6,
        ),
    ];
    let mut rng = Lcg(7);
    for (file, request, moves) in games {
        let page = browser(&driver, 1200, 1100).await;
        let shoot = async {
            seat_in_browser(&app, &page, request).await;
            let mut made = 0;
            while made < moves {
                let state = wait_until(&page, "a move", Duration::from_secs(20), |s| {
                    s["actions"].as_u64().unwrap_or(0) > 0 && s["busy"] == false
                })
                .await;
                let before = state["version"].as_u64().expect("a version");
                if click_an_action(&page, &mut rng).await {
                    wait_until(&page, "the move", Duration::from_secs(10), |s| {
                        s["version"].as_u64().is_some_and(|v| v > before)
                    })
                    .await;
                    made += 1;
                }
            }
            wait_until(&page, "seat 0's turn", Duration::from_secs(20), |s| {
                s["actions"].as_u64().unwrap_or(0) > 0
            })
            .await;
            page.execute("window.scrollTo(0, 0);", vec![])
                .await
                .expect("scrolls");
            let png = page.screenshot().await.expect("a screenshot");
            std::fs::write(dir.join(file), &png).expect("writes");
            eprintln!("{file}: {} bytes", png.len());
        };
        with_sessions(&[&page], shoot).await;
    }
}
