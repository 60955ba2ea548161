//! The README's "short tour with curl", extracted from README.md and run by bash against a
//! server on the embedded store, so the tour a newcomer pastes keeps working.

use crate::harness::{Backend, Server, Store, fenced_block, have};

#[tokio::test]
async fn the_readmes_curl_tour_runs_as_written() {
    if !have(&["bash", "curl", "python3"]) {
        return;
    }
    let store = Store::new(Backend::Sqlite).await;
    let server = Server::start(&store, &[]).await;
    let script = fenced_block("README.md", "## A short tour with curl", "sh");
    assert!(
        script.contains("H=http://127.0.0.1:8080"),
        "the tour names the default address"
    );
    // The same script, pointed at this server; the live stream at its end is cut after a
    // few seconds instead of by Ctrl-C.
    let script = script
        .replace(
            "H=http://127.0.0.1:8080",
            &format!("H={}", server.http_base),
        )
        .replace("curl -sN ", "curl -sN --max-time 4 ");
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new("bash")
            .arg("-c")
            .arg(&script)
            .output()
    })
    .await
    .expect("the tour's thread")
    .expect("bash runs the tour");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let acts: Vec<&str> = stdout.lines().filter(|l| l.starts_with("act: ")).collect();
    assert!(
        acts.len() >= 6,
        "the tour plays several turns:\n{stdout}\n{stderr}"
    );
    assert!(
        acts.iter().all(|line| *line == "act: 200"),
        "every act of the tour is accepted:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("\"legalActions\""),
        "Ann's view lists her legal actions:\n{stdout}"
    );
    assert!(
        stdout.contains("\"entries\""),
        "Bob's history is printed:\n{stdout}"
    );
    assert!(
        stdout.contains("event: update") || stdout.contains("event:update"),
        "the watch streams updates:\n{stdout}"
    );
    assert!(
        stderr.trim().is_empty() || !stderr.contains("Traceback"),
        "no step failed:\n{stderr}"
    );
}
