//! The served OpenAPI document, used as clients use it: held to a maintained linter (Redocly
//! CLI's `recommended` rules, with no warning let through but those `REDOCLY_CONFIG` turns off,
//! each with its reason), and a client generated from the document alone (openapi-typescript's
//! types, checked by the TypeScript compiler, over openapi-fetch, run by node) plays a whole
//! match against the real server.
//!
//! The tools are npm packages at the versions of `PACKAGE_JSON`, installed into
//! `target/openapi-tools` the first time (and again when the versions change). Without node and
//! npm these tests are skipped with a message, unless `CI` is set: then they fail, so CI cannot
//! pass without having run them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

use serde_json::Value;

use crate::helpers::{Backend, TestApp, spawn_app};

/// The tools, pinned: a new linter version with new rules is taken on purpose, not by chance.
/// `typescript` checks the client against the generated types.
const PACKAGE_JSON: &str = r#"{
  "name": "missive-openapi-tools",
  "private": true,
  "description": "Installed by crates/server/tests/api/openapi.rs",
  "dependencies": {
    "@redocly/cli": "2.77.0",
    "openapi-fetch": "0.17.0",
    "openapi-typescript": "7.13.0",
    "typescript": "5.9.3"
  }
}
"#;

/// Redocly's recommended rules, every warning an error, except:
const REDOCLY_CONFIG: &str = r#"extends:
  - recommended-strict
rules:
  # Every message of the schema is a component, also those no HTTP body carries: the request
  # messages of the GET routes (read from the path and query) and the gRPC-only Play
  # stream's. They are the proto's, documented for clients that share them with gRPC.
  no-unused-components: off
"#;

/// The tool directory, installed once per test process and version: `None` when npm or node
/// is missing (outside CI).
fn tools() -> Option<PathBuf> {
    static INSTALL: Mutex<()> = Mutex::new(());
    let _one_at_a_time = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    let binary = Path::new(env!("CARGO_BIN_EXE_missive"));
    let target = binary
        .parent()
        .and_then(Path::parent)
        .expect("the binary is in target/<profile>");
    let dir = target.join("openapi-tools");
    let manifest = dir.join("package.json");
    if std::fs::read_to_string(&manifest).ok().as_deref() == Some(PACKAGE_JSON)
        && dir.join("node_modules/.bin/redocly").exists()
        && dir.join("node_modules/.bin/tsc").exists()
    {
        return Some(dir);
    }
    for tool in ["node", "npm"] {
        if Command::new(tool).arg("--version").output().is_err() {
            let message = format!("{tool} not found (install Node.js 20 or later, with npm)");
            assert!(
                std::env::var_os("CI").is_none(),
                "{message}; CI must run the OpenAPI tests"
            );
            eprintln!("skipping the OpenAPI test: {message}");
            return None;
        }
    }
    std::fs::create_dir_all(&dir).expect("the tool directory");
    // Written last, so an install cut short is done again.
    let _ = std::fs::remove_file(&manifest);
    std::fs::write(dir.join("package.json.next"), PACKAGE_JSON).expect("package.json");
    std::fs::rename(dir.join("package.json.next"), &manifest).expect("package.json");
    let installed = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--no-package-lock"])
        .current_dir(&dir)
        .output()
        .expect("npm runs");
    if !installed.status.success() {
        let _ = std::fs::remove_file(&manifest);
        panic!("npm install failed:\n{}", text(&installed));
    }
    Some(dir)
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// A tool of `tools`, without telemetry or update checks (no network but the registry's).
fn tool(tools: &Path, name: &str) -> Command {
    let mut command = Command::new(tools.join("node_modules/.bin").join(name));
    command
        .env("REDOCLY_TELEMETRY", "off")
        .env("REDOCLY_SUPPRESS_UPDATE_NOTICE", "true")
        .env("NO_COLOR", "1");
    command
}

/// A fresh scratch directory for one test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "missive-openapi-{name}-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// The document as the server serves it.
async fn served(app: &TestApp) -> String {
    let response = reqwest::get(app.url("/openapi.json"))
        .await
        .expect("the document");
    assert!(response.status().is_success());
    let body = response.text().await.expect("the body");
    let doc: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(doc["openapi"], "3.1.0");
    body
}

#[tokio::test]
async fn the_openapi_document_passes_the_linter_without_a_warning() {
    let Some(tools) = tools() else { return };
    let app = spawn_app(Backend::Sqlite).await;
    let dir = scratch("lint");
    std::fs::write(dir.join("openapi.json"), served(&app).await).expect("written");
    std::fs::write(dir.join("redocly.yaml"), REDOCLY_CONFIG).expect("written");
    let lint = tool(&tools, "redocly")
        .args(["lint", "openapi.json", "--config", "redocly.yaml"])
        .current_dir(&dir)
        .output()
        .expect("redocly runs");
    let report = text(&lint);
    assert!(
        lint.status.success(),
        "the linter refuses the document:\n{report}"
    );
    assert!(
        report.contains("Woohoo! Your API description is valid"),
        "the linter found problems:\n{report}"
    );
    // The linter does lint: a document that names a schema it lacks is refused.
    let mut broken: Value =
        serde_json::from_slice(&std::fs::read(dir.join("openapi.json")).expect("read"))
            .expect("JSON");
    broken["paths"]["/v1/matches"]["post"]["responses"]["201"]["content"]["application/json"]["schema"]
        ["$ref"] = Value::from("#/components/schemas/missive.v1.NoSuchMessage");
    std::fs::write(dir.join("broken.json"), broken.to_string()).expect("written");
    let refused = tool(&tools, "redocly")
        .args(["lint", "broken.json", "--config", "redocly.yaml"])
        .current_dir(&dir)
        .output()
        .expect("redocly runs");
    assert!(!refused.status.success(), "{}", text(&refused));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The client's TypeScript: compiled against the generated types, so a document that
/// mistypes a path, a body or an answer fails to compile.
const CLIENT: &str = include_str!("openapi_client.ts");

const TSCONFIG: &str = r#"{
  "compilerOptions": {
    "target": "ES2022",
    "module": "NodeNext",
    "moduleResolution": "NodeNext",
    "strict": true,
    "noEmitOnError": true,
    "skipLibCheck": true,
    "outDir": "out",
    "types": []
  },
  "files": ["play.ts", "schema.d.ts"]
}
"#;

fn run(command: &mut Command, what: &str) -> String {
    let output = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let report = text(&output);
    assert!(output.status.success(), "{what} failed:\n{report}");
    report
}

#[tokio::test]
async fn a_client_generated_from_the_openapi_document_alone_plays_a_match() {
    let Some(tools) = tools() else { return };
    let app = spawn_app(Backend::Sqlite).await;
    // Inside the tool directory, so node finds openapi-fetch in its node_modules.
    let dir = tools
        .join("runs")
        .join(uuid::Uuid::new_v4().simple().to_string());
    std::fs::create_dir_all(&dir).expect("a run directory");
    std::fs::write(dir.join("openapi.json"), served(&app).await).expect("written");
    std::fs::write(
        dir.join("play.ts"),
        CLIENT.replace("__BASE_URL__", app.url("").trim_end_matches('/')),
    )
    .expect("written");
    std::fs::write(dir.join("tsconfig.json"), TSCONFIG).expect("written");
    std::fs::write(dir.join("package.json"), r#"{ "type": "module" }"#).expect("written");
    run(
        tool(&tools, "openapi-typescript")
            .args(["openapi.json", "-o", "schema.d.ts"])
            .current_dir(&dir),
        "openapi-typescript",
    );
    run(
        tool(&tools, "tsc")
            .args(["-p", "tsconfig.json"])
            .current_dir(&dir),
        "the TypeScript compiler, on the client and the generated types",
    );
    let printed = run(
        Command::new("node").arg("out/play.js").current_dir(&dir),
        "the generated client's match",
    );
    let summary: Value = serde_json::from_str(printed.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {printed}"));
    assert_eq!(summary["status"], "MATCH_STATUS_FINISHED", "{summary}");
    assert!(summary["acts"].as_u64().is_some_and(|n| n > 2), "{summary}");
    // The server agrees: the match is over, with a winner.
    let id = summary["matchId"].as_str().expect("the match id");
    let info: Value = reqwest::get(app.url(&format!("/v1/matches/{id}")))
        .await
        .expect("GetMatch")
        .json()
        .await
        .expect("JSON");
    assert_eq!(info["match"]["status"], "MATCH_STATUS_FINISHED", "{info}");
    let history: Value = reqwest::get(app.url(&format!("/v1/matches/{id}/history")))
        .await
        .expect("GetHistory")
        .json()
        .await
        .expect("JSON");
    assert!(
        history["audit"]["events"]
            .as_array()
            .is_some_and(|e| e.len() > 3)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
