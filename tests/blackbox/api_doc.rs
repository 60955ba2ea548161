//! docs/API.md's examples, run against the real binary: the curl tour as a transcript (each
//! `$ ` command run by one bash session, its output compared with the lines the page prints
//! under it) and the Python client example with the code `grpcio-tools` generates.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::harness::{Backend, Client, Server, Store, fenced_block, have};

/// One `$ ` command of a transcript and the output printed under it.
#[derive(Debug)]
struct Step {
    command: String,
    expected: String,
}

/// Splits a console transcript: a line starting `$ ` opens a command, which goes on while its
/// lines end with `\`; the lines up to the next command are its output.
fn steps(transcript: &str) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let mut continued = false;
    for line in transcript.lines() {
        if let Some(command) = line.strip_prefix("$ ") {
            steps.push(Step {
                command: command.to_owned(),
                expected: String::new(),
            });
            continued = command.ends_with('\\');
        } else if let Some(step) = steps.last_mut() {
            if continued {
                step.command.push('\n');
                step.command.push_str(line);
                continued = line.ends_with('\\');
            } else {
                step.expected.push_str(line);
                step.expected.push('\n');
            }
        } else {
            panic!("the transcript starts with a command: {line:?}");
        }
    }
    steps
}

/// Whether `actual` reads as `expected`, where `…` in `expected` stands for any text and
/// white space is not compared (the page folds long JSON lines).
fn matches(expected: &str, actual: &str) -> bool {
    let squeeze = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let (expected, actual) = (squeeze(expected), squeeze(actual));
    let parts: Vec<&str> = expected.split('…').collect();
    if parts.len() == 1 {
        return expected == actual;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !actual.starts_with(first) || !actual[first.len()..].ends_with(last) {
        return false;
    }
    let mut rest = &actual[first.len()..actual.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

#[test]
fn transcripts_match_with_elisions_and_fail_on_a_difference() {
    assert!(matches("{\"a\":1,…}", "{\"a\":1,\"b\":2}"));
    assert!(matches("x … y … z", "x 1 y 2 z"));
    assert!(matches("{\"a\":\n 1}", "{\"a\":1}"));
    assert!(!matches("{\"a\":1,…}", "{\"a\":2,\"b\":2}"));
    assert!(!matches("x … y … z", "x 1 z 2 y"));
    assert!(!matches("…\"version\":\"4\"", "{\"version\":\"40\""));
    assert!(!matches("", "output where none is printed"));
    let parsed = steps("$ a \\\n  b\nout 1\nout 2\n$ c\n");
    assert_eq!(parsed.len(), 2);
    assert_eq!(parsed[0].command, "a \\\n  b");
    assert_eq!(parsed[0].expected, "out 1\nout 2\n");
    assert_eq!(parsed[1].expected, "");
}

/// Runs `steps` in one bash, in `dir`, and answers each one's output (stdout and stderr).
fn run_transcript(steps: &[Step], dir: &Path) -> Vec<String> {
    const MARK: &str = "\u{1e}step ";
    let mut script = String::new();
    for (i, step) in steps.iter().enumerate() {
        script.push_str(&format!(
            "printf '{MARK}{i}\\n'\n{{\n{}\n}} 2>&1\n",
            step.command
        ));
    }
    let output = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(dir)
        .output()
        .expect("bash runs the transcript");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let mut outputs = vec![String::new(); steps.len()];
    for chunk in stdout.split(MARK).skip(1) {
        let (index, text) = chunk.split_once('\n').unwrap_or((chunk, ""));
        let index: usize = index.parse().expect("a step's mark");
        outputs[index] = text.to_owned();
    }
    outputs
}

#[tokio::test]
async fn the_api_pages_curl_tour_prints_what_the_page_shows() {
    if !have(&["bash", "curl", "python3"]) {
        return;
    }
    let store = Store::new(Backend::Sqlite).await;
    let server = Server::start(&store, &[]).await;
    let transcript = fenced_block("docs/API.md", "## A curl tour", "console");
    let mut steps = steps(&transcript);
    assert!(steps.len() >= 15, "the tour has its steps: {steps:?}");
    assert_eq!(
        steps[0].command, "H=http://127.0.0.1:8080",
        "the tour names the default address first"
    );
    // The same transcript against this server; the live stream is cut after a few seconds
    // instead of by Ctrl-C.
    steps[0].command = format!("H={}", server.http_base);
    for step in &mut steps {
        step.command = step.command.replace("curl -sN ", "curl -sN --max-time 3 ");
    }
    let dir = tempdir("missive-api-tour");
    let steps = tokio::task::spawn_blocking(move || {
        let outputs = run_transcript(&steps, &dir);
        let _ = std::fs::remove_dir_all(&dir);
        (steps, outputs)
    })
    .await
    .expect("the tour's thread");
    let (steps, outputs) = steps;
    let differ: Vec<String> = steps
        .iter()
        .zip(&outputs)
        .filter(|(step, output)| !matches(&step.expected, output))
        .map(|(step, output)| {
            format!(
                "$ {}\n--- the page prints:\n{}--- the server answered:\n{output}",
                step.command, step.expected
            )
        })
        .collect();
    assert!(
        differ.is_empty(),
        "docs/API.md's tour and the server disagree on {} step(s):\n\n{}",
        differ.len(),
        differ.join("\n\n")
    );
}

fn tempdir(prefix: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("{prefix}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

/// The Python example, with a stub generated by `grpcio-tools` (installed from PyPI into a
/// virtual environment under target/), against a server with one open match.
#[tokio::test]
async fn the_api_pages_python_example_runs() {
    if !have(&["python3"]) {
        return;
    }
    let tools = Path::new(env!("CARGO_TARGET_TMPDIR")).join("api-doc-python");
    let python = tools.join("bin/python");
    let installed = python.exists()
        || tokio::task::spawn_blocking({
            let tools = tools.clone();
            move || install_grpcio_tools(&tools)
        })
        .await
        .expect("the installer's thread");
    if !installed {
        // No virtual environments here (python3-venv is one of .ci/run's packages).
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must be able to make a python3 venv (.ci/run installs python3-venv)"
        );
        eprintln!("skipped: no python3 venv with grpcio-tools");
        return;
    }
    let store = Store::new(Backend::Sqlite).await;
    let server = Server::start(&store, &[]).await;
    let client = Client::new(server.http_base.clone());
    let id = client
        .create(
            serde_json::json!({"loveLetter": {"edition": "LOVE_LETTER_EDITION_2019"}}),
            2,
        )
        .await;
    let generate = fenced_block("docs/API.md", "**Python**", "sh");
    let example = fenced_block("docs/API.md", "**Python**", "python");
    let dir = tempdir("missive-api-python");
    std::fs::create_dir_all(dir.join("gen")).expect("gen/");
    let proto = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../proto");
    let copied = Command::new("cp").arg("-r").arg(&proto).arg(&dir).status();
    assert!(
        copied.is_ok_and(|s| s.success()),
        "proto/ copied beside gen/"
    );
    let grpc_addr = server.grpc_addr.trim_start_matches("http://").to_owned();
    let result = tokio::task::spawn_blocking(move || {
        let generated = Command::new("bash")
            .arg("-c")
            .arg(generate.replace("python ", &format!("{} ", python.display())))
            .current_dir(&dir)
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .output()
            .expect("bash");
        let _ = std::fs::remove_dir_all(dir.join("proto"));
        let script = format!(
            "{}\nprint('JOINED', m.match_id, view.view.match.version)\n",
            example.replace("127.0.0.1:50051", &grpc_addr)
        );
        let ran = Command::new(&python)
            .arg("-c")
            .arg(&script)
            .current_dir(&dir)
            .output()
            .expect("python runs");
        let _ = std::fs::remove_dir_all(&dir);
        (generated, ran)
    });
    let (generated, ran) = result.await.expect("the example's thread");
    assert!(
        generated.status.success(),
        "the generation command runs: {}",
        String::from_utf8_lossy(&generated.stderr)
    );
    let stdout = String::from_utf8_lossy(&ran.stdout);
    assert!(
        ran.status.success() && stdout.contains(&format!("JOINED {id} 2")),
        "the example joins the open match and reads its view:\n{stdout}\n{}",
        String::from_utf8_lossy(&ran.stderr)
    );
}

fn install_grpcio_tools(tools: &Path) -> bool {
    let venv = Command::new("python3")
        .args(["-m", "venv"])
        .arg(tools)
        .status()
        .is_ok_and(|s| s.success());
    if !venv {
        return false;
    }
    let pip = Command::new(tools.join("bin/pip"))
        .args(["install", "--quiet", "grpcio-tools==1.76.0"])
        .status()
        .expect("pip runs");
    assert!(pip.success(), "pip installs grpcio-tools");
    true
}
