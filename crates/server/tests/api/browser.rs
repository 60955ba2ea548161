//! The web client in a real browser: headless Chromium driven over WebDriver (chromedriver).
//! A whole match of every game played through the page alone: Love Letter between two separate
//! sessions (so two separate localStorages), one on a phone's screen, joined by invitation and
//! followed by a rematch; Lopti and Amori e Intrighi on a phone against a bot. At every move the
//! page must never show an enum's zero value ("unspecified"), and on a phone it must fit the
//! screen's width with the moves on the first screen. A player signed in with a player token
//! finds a match in the inbox and plays it with that token alone; and the page's headers.
//! `MISSIVE_SCREENSHOT_DIR` keeps screenshots of the phone's screen, to look at.
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
use crate::players::{player_token, spawn_with_players};

/// A phone's screen, in CSS pixels: every game is played on one, which the page must fit.
const PHONE: (u32, u32) = (390, 844);

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
    // A window is never narrower than 500 pixels: a phone's screen is emulated, as Chromium's
    // device toolbar does.
    if width < 500 {
        options["mobileEmulation"] =
            json!({ "deviceMetrics": { "width": width, "height": height, "pixelRatio": 1 } });
    }
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

/// What the match page says about itself (`#match`'s data attributes), or `null` before it is
/// shown: the body of a script.
const PAGE_STATE: &str = "const m = document.getElementById('match');
     if (!m) return null;
     const o = document.getElementById('outcome');
     return { version: Number(m.dataset.version), status: m.dataset.status,
              seat: m.dataset.seat, busy: m.dataset.busy === '1',
              actions: document.querySelectorAll('button.action:not(:disabled):not(.folded)').length,
              winners: o ? o.dataset.winners : null,
              outcome: o ? o.textContent : null };";

/// Where the page shows an enum's zero value as if it were a value (`…_UNSPECIFIED`, read as
/// "unspecified"), in its text (the log and the audit table too, folded or not), its tooltips
/// and its fields: the words around it, or `null`.
const UNSPECIFIED: &str = "const texts = [document.body.textContent];
     document.querySelectorAll('[title]').forEach((e) => texts.push(e.title));
     document.querySelectorAll('input, textarea').forEach((e) => texts.push(e.value));
     const text = texts.join('\\n');
     const at = text.toLowerCase().indexOf('unspecified');
     return at < 0 ? null : text.slice(Math.max(0, at - 300), at + 100);";

/// The page's width against the window's, and where its first legal move is when it is
/// scrolled to the top.
const LAYOUT: &str = "window.scrollTo(0, 0);
     const move = document.querySelector('button.action:not(:disabled):not(.folded)');
     const r = move ? move.getBoundingClientRect() : null;
     return { scrollWidth: document.documentElement.scrollWidth,
              width: window.innerWidth, height: window.innerHeight,
              move: r ? { top: r.top, bottom: r.bottom, text: move.textContent } : null };";

/// The moves a player can click: enabled, and not folded away.
const MOVES: &str = "button.action:not(:disabled):not(.folded)";

async fn run(browser: &Client, script: &str) -> Value {
    browser
        .execute(script, vec![])
        .await
        .expect("the page answers")
}

async fn page_state(browser: &Client) -> Value {
    run(browser, PAGE_STATE).await
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

/// The element `css` selects, once the page shows it (within 10 s).
async fn element(browser: &Client, css: &str) -> fantoccini::elements::Element {
    browser
        .wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
}

/// The text of the element `css` selects, once the page shows it.
async fn element_text(browser: &Client, css: &str) -> String {
    element(browser, css)
        .await
        .text()
        .await
        .unwrap_or_else(|e| panic!("the text of {css}: {e}"))
}

/// The text of the element `css` selects, as the page shows it now (without waiting).
async fn text_now(browser: &Client, css: &str) -> String {
    browser
        .find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
        .text()
        .await
        .unwrap_or_else(|e| panic!("the text of {css}: {e}"))
}

async fn type_into(browser: &Client, css: &str, text: &str) {
    let field = element(browser, css).await;
    field.clear().await.expect("clears");
    field.send_keys(text).await.expect("types");
}

async fn click(browser: &Client, css: &str) {
    element(browser, css)
        .await
        .click()
        .await
        .unwrap_or_else(|e| panic!("clicking {css}: {e}"));
}

async fn choose(browser: &Client, css: &str, value: &str) {
    element(browser, css)
        .await
        .select_by_value(value)
        .await
        .unwrap_or_else(|e| panic!("choosing {value} in {css}: {e}"));
}

/// Clicks one of the page's enabled action buttons, chosen by `rng` among those whose text
/// holds none of `avoid` (among all, if every one does); false when there was none to click (or
/// the page re-rendered under the click, which the caller retries).
async fn click_an_action(browser: &Client, rng: &mut Lcg, avoid: &[&str]) -> bool {
    let texts = browser
        .execute(
            "return Array.from(document.querySelectorAll(arguments[0]),
                 (b) => `${b.dataset.group || ''} ${b.textContent}`);",
            vec![json!(MOVES)],
        )
        .await
        .unwrap_or_default();
    let texts: Vec<&str> = texts
        .as_array()
        .map(|t| t.iter().map(|x| x.as_str().unwrap_or_default()).collect())
        .unwrap_or_default();
    click_one_of(browser, rng, &texts, avoid).await
}

/// Clicks one of the page's moves (as [`click_an_action`], avoiding none) from the page `state`
/// and waits (10 s at most) for the version it makes; false when there was none to click.
async fn make_a_move(browser: &Client, rng: &mut Lcg, state: &Value, what: &str) -> bool {
    let before = state["version"].as_u64().expect("a version");
    if !click_an_action(browser, rng, &[]).await {
        return false;
    }
    wait_until(browser, what, Duration::from_secs(10), |s| {
        s["version"].as_u64().is_some_and(|v| v > before)
    })
    .await;
    true
}

/// Waits until every named page shows `what` (a match) under way.
async fn both_see_it_start(pages: [(&str, &Client); 2], what: &str) {
    for (who, page) in pages {
        wait_until(
            page,
            &format!("{who} sees {what} start"),
            Duration::from_secs(10),
            |s| s["status"] == "MATCH_STATUS_ACTIVE",
        )
        .await;
    }
}

/// Clicks one of the moves whose texts (group and label) are `texts`, as [`click_an_action`].
async fn click_one_of(browser: &Client, rng: &mut Lcg, texts: &[&str], avoid: &[&str]) -> bool {
    let Ok(buttons) = browser.find_all(Locator::Css(MOVES)).await else {
        return false;
    };
    if buttons.is_empty() || buttons.len() != texts.len() {
        return false;
    }
    buttons[pick(rng, texts, avoid)].click().await.is_ok()
}

/// One of `texts` chosen by `rng`, among those that hold none of `avoid` if there are any.
fn pick(rng: &mut Lcg, texts: &[&str], avoid: &[&str]) -> usize {
    let wanted: Vec<usize> = (0..texts.len())
        .filter(|&i| !avoid.iter().any(|a| texts[i].contains(a)))
        .collect();
    if wanted.is_empty() {
        rng.below(texts.len())
    } else {
        wanted[rng.below(wanted.len())]
    }
}

/// Fails if the page shows an enum's zero value as if it were a value.
async fn assert_reads_right(browser: &Client, when: &str) {
    check_reads_right(&run(browser, UNSPECIFIED).await, when);
}

fn check_reads_right(found: &Value, when: &str) {
    assert!(
        found.is_null(),
        "{when}: the page shows an unspecified value: …{}…",
        found.as_str().unwrap_or_default()
    );
}

/// Fails unless the page fits the width of the browser's window (no sideways scrolling) and,
/// scrolled to the top, shows its first legal move on the screen.
async fn assert_fits_the_screen(browser: &Client, when: &str) {
    check_fits_the_screen(&run(browser, LAYOUT).await, when);
}

fn check_fits_the_screen(layout: &Value, when: &str) {
    let width = layout["width"].as_f64().expect("a width");
    assert!(
        layout["scrollWidth"].as_f64().expect("a width") <= width,
        "{when}: the page is wider than the screen: {layout}"
    );
    if layout["move"].is_object() {
        let (top, bottom) = (
            layout["move"]["top"].as_f64().expect("a top"),
            layout["move"]["bottom"].as_f64().expect("a bottom"),
        );
        let height = layout["height"].as_f64().expect("a height");
        assert!(
            top >= 0.0 && bottom <= height,
            "{when}: the first move is off the first screen: {layout}"
        );
    }
}

/// Saves a screenshot into `MISSIVE_SCREENSHOT_DIR` when it is set, to look at by hand.
async fn keep_screenshot(browser: &Client, name: &str) {
    let Some(dir) = std::env::var_os("MISSIVE_SCREENSHOT_DIR") else {
        return;
    };
    let png = browser.screenshot().await.expect("a screenshot");
    std::fs::write(PathBuf::from(dir).join(format!("{name}.png")), png).expect("writes");
}

/// Fills the create form for a match of `kind` (with the form's `options`), seat 1 held by
/// `second` (a bot's strategy, or `invite`), under the name `player`, and submits it.
async fn create_in_the_form(
    page: &Client,
    kind: &str,
    options: &[(&str, &str)],
    second: &str,
    player: &str,
) {
    choose(page, "#create #kind", kind).await;
    for (field, text) in options {
        type_into(page, &format!("#create [name={field}]"), text).await;
    }
    choose(page, "select.bot[data-seat='1']", second).await;
    type_into(page, "#player", player).await;
    click(page, "#create-button").await;
}

/// The value of the field `css` selects (a link the page offers to copy).
async fn field_value(page: &Client, css: &str) -> String {
    page.find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
        .prop("value")
        .await
        .expect("its value")
        .unwrap_or_else(|| panic!("{css} has a value"))
}

/// The id of the match the page shows, from its address (`#/m/<id>`).
async fn match_id_of(page: &Client) -> String {
    page.current_url()
        .await
        .expect("a url")
        .fragment()
        .and_then(|f| f.rsplit('/').next())
        .expect("the match's id")
        .to_owned()
}

/// Runs `body` against the server `spawn` starts, on a page of a phone's size, and closes the
/// page after; skipped (before starting anything) without chromedriver.
async fn on_a_phone(
    spawn: impl Future<Output = TestApp>,
    body: impl AsyncFnOnce(&TestApp, &Client),
) {
    let Some(driver) = driver().await else { return };
    let app = spawn.await;
    let page = browser(&driver, PHONE.0, PHONE.1).await;
    with_sessions(&[&page], body(&app, &page)).await;
}

async fn spectator_view(app: &TestApp, match_id: &str) -> Value {
    app.get(&format!("/v1/matches/{match_id}/view"))
        .await
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
    // Bob plays on a phone.
    let bob = browser(&driver, PHONE.0, PHONE.1).await;
    with_sessions(&[&ann, &bob], play_a_match(&app, &ann, &bob, started)).await;
    eprintln!("the browser match took {:?}", started.elapsed());
}

async fn play_a_match(app: &TestApp, ann: &Client, bob: &Client, started: Instant) {
    // Ann creates a two-seat Love Letter match with the second seat held for a friend she
    // invites, and takes the first seat.
    ann.goto(&app.url("/")).await.expect("opens the page");
    create_in_the_form(ann, "love-letter", &[], "invite", "ann").await;
    wait_until(ann, "ann's seat", Duration::from_secs(10), |s| {
        s["seat"] == "0"
    })
    .await;
    let link = field_value(ann, "#share-link").await;
    let match_id = link.rsplit('/').next().expect("an id").to_owned();
    assert_eq!(link, app.url(&format!("/#/m/{match_id}")));
    // An invitation for the second seat.
    let invitation = field_value(ann, "#invite-1").await;
    assert!(
        invitation.starts_with(&format!("{link}/invite/")),
        "{invitation}"
    );
    // The match waits for its invited player: it is not listed as open to anyone.
    let open: Value = app.get_json("/v1/matches", None).await;
    assert!(!open.to_string().contains(&match_id), "{open}");

    // Bob follows the invitation and joins; the match starts.
    bob.goto(&invitation).await.expect("follows the invitation");
    type_into(bob, "#join-name", "bob").await;
    click(bob, "#join-button").await;
    both_see_it_start([("ann", ann), ("bob", bob)], "the match").await;

    // Whoever has buttons clicks one, until the match is over. The other page learns of each
    // move from its watch stream only: nothing here reloads it, except once, to show that a
    // player who closes the tab comes back to the seat.
    let mut rng = Lcg(0x5eed);
    let mut moves = 0;
    let mut reloaded = false;
    loop {
        let (a, b) = (page_state(ann).await, page_state(bob).await);
        for (who, page) in [("ann", ann), ("bob", bob)] {
            assert_reads_right(page, &format!("{who}'s page after {moves} moves")).await;
        }
        if b["actions"].as_u64().unwrap_or(0) > 0 {
            assert_fits_the_screen(bob, &format!("bob's phone after {moves} moves")).await;
            if moves == 4 {
                keep_screenshot(bob, "love-letter-phone").await;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(50),
            "the match did not end in time ({moves} moves); ann's page: {a}, bob's: {b}"
        );
        if a["status"] == "MATCH_STATUS_FINISHED" && b["status"] == "MATCH_STATUS_FINISHED" {
            break;
        }
        let mut moved = false;
        for (page, state) in [(ann, &a), (bob, &b)] {
            if state["actions"].as_u64().unwrap_or(0) > 0
                && state["busy"] == false
                && make_a_move(page, &mut rng, state, "the move to be applied").await
            {
                moves += 1;
                moved = true;
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
        let state = wait_until(page, "the outcome", Duration::from_secs(10), |s| {
            s["winners"].is_string()
        })
        .await;
        assert_eq!(state["winners"], expected.as_str(), "{state}");
        let text = state["outcome"].as_str().expect("an outcome");
        assert!(text.contains(&format!("Winner: {winner_name}")), "{text}");
    }

    // The finished match's audit: the revealed seed matches its commitment, the chain links.
    // The seed checked against its commitment.
    let audit = element_text(ann, "#seed-check.ok").await;
    assert!(audit.contains("matches the commitment"), "{audit}");
    let chain = ann
        .find(Locator::Css("#chain-check"))
        .await
        .expect("the chain check");
    assert_eq!(
        chain.attr("class").await.expect("class").as_deref(),
        Some("ok")
    );
    let info: pb::GetMatchResponse = app.get_json(&format!("/v1/matches/{match_id}"), None).await;
    assert_eq!(
        Some(text_now(ann, "#seed").await),
        info.r#match.and_then(|m| m.seed)
    );
    // Stepping back through the log.
    let last = text_now(ann, "#step").await;
    click(ann, "#step-prev").await;
    let previous = text_now(ann, "#step").await;
    assert_ne!(last, previous);
    click(ann, "#step-first").await;
    let first = text_now(ann, "#step").await;
    assert!(first.starts_with("event 1 of"), "{first}");
    for (who, page) in [("ann", ann), ("bob", bob)] {
        assert_reads_right(page, &format!("{who}'s page of the finished match")).await;
    }
    assert_fits_the_screen(bob, "bob's phone at the end").await;
    keep_screenshot(bob, "love-letter-phone-over").await;

    // Both ask for a rematch: the same one, which starts once both have.
    click(ann, "#rematch").await;
    let rematch = wait_until(ann, "ann in the rematch", Duration::from_secs(10), |s| {
        s["status"] == "MATCH_STATUS_OPEN" && s["seat"] == "0"
    })
    .await;
    let rematch_url = ann.current_url().await.expect("a url").to_string();
    assert!(!rematch_url.contains(&match_id), "{rematch_url}");
    click(bob, "#rematch").await;
    both_see_it_start([("ann", ann), ("bob", bob)], "the rematch").await;
    assert_eq!(
        bob.current_url().await.expect("a url").to_string(),
        rematch_url
    );
    assert_eq!(page_state(bob).await["seat"], "1", "{rematch}");

    eprintln!("{moves} moves");
}

/// Ann creates a two-seat match of `kind` through the page's form, with a random bot in the
/// other seat and the form's `options` (a field's name and the text typed into it), and plays
/// it to the end on a phone by clicking the page's moves; the page must read right and fit the
/// screen at every one of her turns. She clicks moves at random, but none whose text holds one
/// of `avoid` while there is another. Returns the number of moves she made.
async fn play_against_a_bot_on_a_phone(
    app: &TestApp,
    page: &Client,
    kind: &str,
    options: &[(&str, &str)],
    avoid: &[&str],
    limit: Duration,
) -> usize {
    let started = Instant::now();
    page.goto(&app.url("/")).await.expect("opens the page");
    create_in_the_form(page, kind, options, "random", "ann").await;
    wait_until(page, "the match to start", Duration::from_secs(10), |s| {
        s["seat"] == "0" && s["status"] == "MATCH_STATUS_ACTIVE"
    })
    .await;
    let match_id = match_id_of(page).await;

    // Each round trip to the browser counts: one script reads the page's state, checks its
    // text and layout and lists its moves; then one of them is clicked, and the next read
    // waits for the version it makes.
    let turn = format!(
        "return {{ state: (() => {{ {PAGE_STATE} }})(),
                   unspecified: (() => {{ {UNSPECIFIED} }})(),
                   layout: (() => {{ {LAYOUT} }})(),
                   moves: Array.from(document.querySelectorAll('{MOVES}'),
                       (b) => `${{b.dataset.group || ''}} ${{b.textContent}}`) }};"
    );
    let first = run(page, &turn).await;
    assert_eq!(
        first["layout"]["width"],
        json!(PHONE.0),
        "a phone's width: {first}"
    );
    let mut rng = Lcg(0x5eed ^ kind.len() as u64);
    let mut moves = 0;
    let mut played = 0; // the version of her last move
    let mut since = Instant::now();
    loop {
        let now = run(page, &turn).await;
        let state = &now["state"];
        assert!(
            started.elapsed() < limit,
            "the {kind} match did not end in {limit:?} ({moves} moves); the page: {state}"
        );
        if state["status"] == "MATCH_STATUS_FINISHED" {
            break;
        }
        let version = state["version"].as_u64().unwrap_or(0);
        let ready = state["actions"].as_u64().unwrap_or(0) > 0
            && state["busy"] == false
            && version > played;
        if !ready {
            assert!(
                since.elapsed() < Duration::from_secs(20),
                "the move after version {played} was not applied; the page: {state}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        let when = format!("{kind} after {moves} moves");
        check_reads_right(&now["unspecified"], &when);
        check_fits_the_screen(&now["layout"], &when);
        if moves == 3 {
            keep_screenshot(page, &format!("{kind}-phone")).await;
        }
        let texts: Vec<&str> = now["moves"]
            .as_array()
            .map(|t| t.iter().map(|x| x.as_str().unwrap_or_default()).collect())
            .unwrap_or_default();
        // Every tenth move is a real click, which the browser hit-tests (the button is on the
        // screen, not covered); the others call the button's click(), one round trip instead
        // of two, so a long match stays short to run.
        let clicked = if moves % 10 == 0 {
            click_one_of(page, &mut rng, &texts, avoid).await
        } else if texts.is_empty() {
            false
        } else {
            let script = format!(
                "const b = document.querySelectorAll('{MOVES}')[arguments[0]];
                 if (!b) return false; b.click(); return true;"
            );
            let index = pick(&mut rng, &texts, avoid);
            page.execute(&script, vec![json!(index)]).await.ok() == Some(json!(true))
        };
        if clicked {
            played = version;
            since = Instant::now();
            moves += 1;
        }
    }

    // The page shows the outcome the server holds, and the whole log, read right.
    let server = spectator_view(app, &match_id).await;
    let winners = server["view"]["outcome"]["winners"]
        .as_array()
        .expect("an outcome")
        .iter()
        .map(|s| s.as_u64().expect("a seat").to_string())
        .collect::<Vec<_>>()
        .join(",");
    let state = wait_until(page, "the outcome", Duration::from_secs(10), |s| {
        s["winners"].is_string()
    })
    .await;
    assert_eq!(state["winners"], winners.as_str(), "{state}");
    // The audit of the finished match.
    element(page, "#seed-check.ok").await;
    assert_reads_right(page, &format!("the finished {kind} match")).await;
    assert_fits_the_screen(page, &format!("the finished {kind} match")).await;
    keep_screenshot(page, &format!("{kind}-phone-over")).await;
    assert!(moves > 1, "a whole match takes more than {moves} moves");
    moves
}

#[tokio::test]
async fn a_player_plays_a_whole_lopti_session_on_a_phone_through_the_page() {
    // Picking the pile up when not made to only makes the session longer. About 100 of her
    // moves: 10 to 20 s alone, up to three times that beside the rest of the suite.
    phone_match("lopti", &[("hands", "1")], &["Pick up the pile"], 150).await;
}

#[tokio::test]
async fn a_player_plays_a_whole_amori_match_on_a_phone_through_the_page() {
    // A match of random moves takes her 200 to 600 moves: 20 to 60 s alone, and up to three
    // times that while the rest of the suite shares the machine's two cores.
    phone_match("amori-e-intrighi", &[], &[], 300).await;
}

/// One whole match of `kind` against a bot, on a phone, within `limit_secs`.
async fn phone_match(kind: &str, options: &[(&str, &str)], avoid: &[&str], limit_secs: u64) {
    let started = Instant::now();
    let play = async |app: &TestApp, page: &Client| {
        let limit = Duration::from_secs(limit_secs);
        let moves = play_against_a_bot_on_a_phone(app, page, kind, options, avoid, limit).await;
        eprintln!("{moves} moves in {:?}", started.elapsed());
    };
    on_a_phone(spawn_app(Backend::Sqlite), play).await;
}

#[tokio::test]
async fn a_signed_in_player_finds_a_match_in_the_inbox_and_plays_it_with_the_player_token_alone() {
    on_a_phone(spawn_with_players(Backend::Sqlite), sign_in_and_play).await;
}

async fn sign_in_and_play(app: &TestApp, page: &Client) {
    page.goto(&app.url("/")).await.expect("opens the page");
    // A token the server refuses is said so, and not kept.
    click(page, "#signin summary").await;
    type_into(page, "#player-token", "not-a-token").await;
    click(page, "#signin-button").await;
    let refused = element_text(page, "#signin .error").await;
    assert!(refused.contains("refused"), "{refused}");
    type_into(page, "#player-token", &player_token("carol")).await;
    click(page, "#signin-button").await;
    let signed_in = element_text(page, "#signed-in").await;
    assert!(signed_in.contains("carol"), "{signed_in}");

    // Signed in, no name is needed: the seat is bound to the player and named by the token.
    create_in_the_form(page, "love-letter", &[], "random", "").await;
    wait_until(page, "carol's seat", Duration::from_secs(10), |s| {
        s["seat"] == "0"
    })
    .await;
    let match_id = match_id_of(page).await;

    // On another device (here: this browser forgetting its seat token), the inbox lists the
    // match, and the player token alone opens and plays it.
    page.execute(
        "Object.keys(localStorage).filter((k) => k.startsWith('missive.match.'))
           .forEach((k) => localStorage.removeItem(k));",
        vec![],
    )
    .await
    .expect("forgets the seat");
    page.goto(&app.url("/")).await.expect("opens the page");
    click(page, &format!("#inbox li[data-match='{match_id}'] a")).await;
    let state = wait_until(page, "carol's turn", Duration::from_secs(10), |s| {
        s["seat"] == "0" && s["actions"].as_u64().unwrap_or(0) > 0 && s["busy"] == false
    })
    .await;
    let held = page
        .execute(
            "return Object.keys(localStorage).filter((k) => k.startsWith('missive.match.')).length;",
            vec![],
        )
        .await
        .expect("the page answers");
    assert_eq!(held, json!(0), "no seat token was kept");
    let mut rng = Lcg(3);
    assert!(
        make_a_move(page, &mut rng, &state, "carol's move").await,
        "a move to click"
    );
    assert_reads_right(page, "carol's match").await;
    let seat = spectator_view(app, &match_id).await["view"]["match"]["seats"][0].clone();
    assert_eq!(seat["player"], "carol", "{seat}");
}

#[tokio::test]
async fn the_creator_cancels_an_open_match_from_its_page_and_the_log_says_so() {
    on_a_phone(spawn_app(Backend::Sqlite), cancel_from_the_page).await;
}

async fn cancel_from_the_page(app: &TestApp, page: &Client) {
    page.goto(&app.url("/")).await.expect("opens the page");
    choose(page, "#create #kind", "love-letter").await;
    // The creator takes no seat: the cancel token is all that lets them call the match off.
    run(
        page,
        "document.getElementById('join-self').checked = false;",
    )
    .await;
    click(page, "#create-button").await;
    wait_until(
        page,
        "the open match's page",
        Duration::from_secs(10),
        |s| s["status"] == "MATCH_STATUS_OPEN",
    )
    .await;
    click(page, "#cancel-match").await;
    page.accept_alert()
        .await
        .expect("the confirmation is accepted");
    wait_until(
        page,
        "the match to be cancelled",
        Duration::from_secs(10),
        |s| s["status"] == "MATCH_STATUS_ABANDONED",
    )
    .await;
    let text = run(page, "return document.body.textContent;").await;
    let text = text.as_str().unwrap_or_default();
    assert!(
        text.contains("Its creator cancelled the match before it started."),
        "the log says why the match ended: {text}"
    );
    assert!(
        page.find(Locator::Css("#cancel-match")).await.is_err(),
        "a cancelled match offers no cancel button"
    );
    assert_reads_right(page, "a cancelled match").await;
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
        let response = app.get(path).await;
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
    let missing = app.get("/web/nothing.js").await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
}

/// Takes a seat over HTTP and hands its token to the page as the web client keeps it.
async fn seat_in_browser(app: &TestApp, page: &Client, request: Value) -> String {
    let created: Value = app.post_json("/v1/matches", &request).await;
    let id = created["match"]["matchId"]
        .as_str()
        .expect("an id")
        .to_owned();
    let kind = created["match"]["kind"].clone();
    let token = app.http_join(&id, "ann").await;
    let held = json!({
        "seats": { "0": { "token": token, "player": "ann" } },
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
                if make_a_move(&page, &mut rng, &state, "the move").await {
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
