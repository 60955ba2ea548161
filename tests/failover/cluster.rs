//! A three-node Patroni cluster on loopback, started from the files in deploy/postgres-ha/
//! (rendered with free ports and a scratch directory instead of the example hosts): one etcd
//! member, three Patroni nodes (PostgreSQL run as the `postgres` user when the test runs as
//! root, since PostgreSQL refuses to run as root), and HAProxy in front. [`Cluster`] owns every
//! process; dropping it kills them all, and anything else still running from its directory,
//! and removes the directory, also when the test fails.

use std::collections::HashMap;
use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const PATRONI_YML: &str = include_str!("../../deploy/postgres-ha/patroni.yml");
const HAPROXY_CFG: &str = include_str!("../../deploy/postgres-ha/haproxy.cfg");
const ETCD_ENV: &str = include_str!("../../deploy/postgres-ha/etcd.env");

/// The cluster's superuser password (loopback only, gone with the test).
pub(crate) const SUPERUSER_PASSWORD: &str = "failover-test-superuser";

/// The programs the cluster needs, found on this machine.
#[derive(Debug)]
pub(crate) struct Tools {
    patroni: PathBuf,
    etcd: PathBuf,
    haproxy: PathBuf,
    /// PostgreSQL's `bin` directory (the newest under /usr/lib/postgresql).
    pg_bin: PathBuf,
    /// `setpriv` and the `postgres` user's uid and gid, when running as root.
    as_postgres: Option<(PathBuf, u32, u32)>,
}

impl Tools {
    /// Everything the cluster needs, or a sentence naming what is missing.
    pub(crate) fn find() -> Result<Tools, String> {
        let mut missing = Vec::new();
        let mut need = |name: &str, package: &str| {
            let found = program(name);
            if found.is_none() {
                missing.push(format!("`{name}` (Debian package {package})"));
            }
            found.unwrap_or_default()
        };
        let patroni = need("patroni", "patroni");
        let etcd = need("etcd", "etcd-server");
        let haproxy = need("haproxy", "haproxy");
        // The owner of /proc/self is the effective user.
        let root = fs::metadata("/proc/self")
            .map(|m| m.uid() == 0)
            .unwrap_or(false);
        let setpriv = if root {
            need("setpriv", "util-linux")
        } else {
            PathBuf::new()
        };
        let pg_bin = postgres_bin();
        if pg_bin.is_none() {
            missing.push("PostgreSQL server binaries under /usr/lib/postgresql/*/bin".to_owned());
        }
        let as_postgres = if root {
            match user_ids("postgres") {
                Some((uid, gid)) => Some((setpriv, uid, gid)),
                None => {
                    missing.push("the `postgres` user (PostgreSQL refuses to run as root)".into());
                    None
                }
            }
        } else {
            None
        };
        if !missing.is_empty() {
            return Err(missing.join(", "));
        }
        Ok(Tools {
            patroni,
            etcd,
            haproxy,
            pg_bin: pg_bin.unwrap_or_default(),
            as_postgres,
        })
    }
}

/// `name` on `PATH`, or in the system directories a non-root `PATH` may leave out.
fn program(name: &str) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    path.split(':')
        .chain(["/usr/sbin", "/usr/bin", "/sbin", "/bin"])
        .map(|dir| Path::new(dir).join(name))
        .find(|candidate| candidate.is_file())
}

/// The newest PostgreSQL `bin` directory with everything Patroni runs.
fn postgres_bin() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            ["postgres", "initdb", "pg_ctl", "pg_basebackup", "pg_rewind"]
                .iter()
                .all(|tool| bin.join(tool).is_file())
                .then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

/// A user's uid and gid, from /etc/passwd (`name:password:uid:gid:…`).
fn user_ids(user: &str) -> Option<(u32, u32)> {
    let passwd = fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        if fields.next() != Some(user) {
            return None;
        }
        let uid = fields.nth(1)?.parse().ok()?;
        let gid = fields.next()?.parse().ok()?;
        Some((uid, gid))
    })
}

/// `n` distinct free loopback ports (held together while chosen, so none repeats).
fn free_ports(n: usize) -> Vec<u16> {
    let listeners: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("a free port"))
        .collect();
    listeners
        .iter()
        .map(|l| l.local_addr().expect("bound").port())
        .collect()
}

/// `template` with every `${NAME}` replaced by `vars[NAME]`; comment lines are left as they
/// are. Panics on a name without a value, so a template and this test cannot drift apart.
pub(crate) fn render(template: &str, vars: &HashMap<&str, String>) -> String {
    let mut out = String::with_capacity(template.len());
    for line in template.lines() {
        if line.trim_start().starts_with('#') {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let mut rest = line;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let end = rest[start..]
                .find('}')
                .unwrap_or_else(|| panic!("an unclosed ${{ in {line:?}"))
                + start;
            let name = &rest[start + 2..end];
            let value = vars
                .get(name)
                .unwrap_or_else(|| panic!("no value for ${{{name}}} in {line:?}"));
            out.push_str(value);
            rest = &rest[end + 1..];
        }
        out.push_str(rest);
        out.push('\n');
    }
    out
}

/// A process this test started, in a process group of its own, logging to a file.
#[derive(Debug)]
struct Process {
    name: String,
    child: Child,
    log: PathBuf,
}

impl Process {
    fn spawn(name: &str, mut command: Command, log: PathBuf) -> Process {
        let file = fs::File::create(&log).expect("a log file");
        command
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("log file"))
            .stderr(file)
            // Its own group: killing the group also kills what it started (pg_basebackup, a
            // runuser's child), but never the test.
            .process_group(0);
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("{name} starts: {e}"));
        Process {
            name: name.to_owned(),
            child,
            log,
        }
    }

    /// SIGKILL to the whole process group, then reaped.
    fn kill(&mut self) {
        kill_group(self.child.id());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// SIGKILL to every process of the group `pgid`.
fn kill_group(pgid: u32) {
    // Never init's group, nor the test's own: `kill -- -1` would be every process there is.
    let own = process_group(std::process::id());
    if pgid <= 1 || Some(pgid) == own {
        return;
    }
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// The process group of `pid` (the fifth field of /proc/<pid>/stat, after the command name in
/// parentheses, which may itself hold spaces).
fn process_group(pid: u32) -> Option<u32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, after_name) = stat.rsplit_once(')')?;
    after_name.split_whitespace().nth(2)?.parse().ok()
}

/// Whether any process of the group `pgid` is still running (zombies count as gone).
fn group_alive(pgid: u32) -> bool {
    let Ok(entries) = fs::read_dir("/proc") else {
        return false;
    };
    entries.filter_map(Result::ok).any(|entry| {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            return false;
        };
        let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return false;
        };
        let Some((_, after_name)) = stat.rsplit_once(')') else {
            return false;
        };
        let mut fields = after_name.split_whitespace();
        let state = fields.next();
        let group = fields.nth(1).and_then(|g| g.parse::<u32>().ok());
        state != Some("Z") && group == Some(pgid)
    })
}

/// One Patroni node and the PostgreSQL it runs.
#[derive(Debug)]
pub(crate) struct Node {
    pub(crate) name: String,
    pub(crate) pg_port: u16,
    rest_port: u16,
    data_dir: PathBuf,
    /// Patroni's log (PostgreSQL's too: Patroni passes its output on).
    log: PathBuf,
    patroni: Option<Process>,
}

impl Node {
    /// The postmaster's pid from its pid file, if that process is still this node's postgres.
    fn postmaster(&self) -> Option<u32> {
        let pid_file = fs::read_to_string(self.data_dir.join("postmaster.pid")).ok()?;
        let pid: u32 = pid_file.lines().next()?.trim().parse().ok()?;
        let cmdline = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        String::from_utf8_lossy(&cmdline)
            .contains(&*self.data_dir.to_string_lossy())
            .then_some(pid)
    }

    /// Kills Patroni first (so it cannot restart PostgreSQL), then the postmaster with every
    /// backend. Patroni starts the postmaster from a helper that opens a session of its own,
    /// so the postmaster's process group is the helper's (which has exited): the group is read
    /// from /proc, not assumed to be the postmaster's pid. Whether that group is gone within
    /// five seconds.
    fn kill(&mut self) -> bool {
        if let Some(patroni) = &mut self.patroni {
            patroni.kill();
        }
        let Some(group) = self.postmaster().and_then(process_group) else {
            return true;
        };
        kill_group(group);
        let killed = Instant::now();
        while group_alive(group) {
            if killed.elapsed() > Duration::from_secs(5) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    }
}

/// A member of the cluster as Patroni reports it (`GET /cluster`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Member {
    pub(crate) name: String,
    /// `leader`, `sync_standby` or `replica`.
    pub(crate) role: String,
    pub(crate) state: String,
    pub(crate) timeline: Option<u64>,
}

/// etcd, three Patroni nodes and HAProxy, all on loopback, all killed on drop.
#[derive(Debug)]
pub(crate) struct Cluster {
    dir: PathBuf,
    etcd: Process,
    pub(crate) nodes: Vec<Node>,
    haproxy: Option<Process>,
    pub(crate) haproxy_port: u16,
    http: reqwest::Client,
}

impl Cluster {
    /// Starts etcd and the three nodes and waits (up to `within`) until one node leads, one
    /// is its synchronous standby and the third replicates; then starts HAProxy and waits
    /// until it reaches the primary.
    pub(crate) async fn start(tools: &Tools, within: Duration) -> Cluster {
        let deadline = Instant::now() + within;
        let dir = std::env::temp_dir().join(format!(
            "missive-failover-{}",
            uuid::Uuid::new_v4().simple()
        ));
        fs::create_dir_all(&dir).expect("scratch directory");
        let ports = free_ports(9);
        let (etcd_client, etcd_peer, haproxy_port) = (ports[0], ports[1], ports[2]);
        let mut vars: HashMap<&str, String> = HashMap::from([
            ("CLUSTER_NAME", "missive-failover".to_owned()),
            ("NODE_ADDRESS", "127.0.0.1".to_owned()),
            ("ETCD_NAME", "etcd1".to_owned()),
            ("ETCD_DATA_DIR", dir.join("etcd").display().to_string()),
            ("ETCD_CLIENT_PORT", etcd_client.to_string()),
            ("ETCD_PEER_PORT", etcd_peer.to_string()),
            (
                "ETCD_INITIAL_CLUSTER",
                format!("etcd1=http://127.0.0.1:{etcd_peer}"),
            ),
            ("ETCD_HOSTS", format!("127.0.0.1:{etcd_client}")),
            ("BIN_DIR", tools.pg_bin.display().to_string()),
            ("SUPERUSER_PASSWORD", SUPERUSER_PASSWORD.to_owned()),
            (
                "REPLICATION_PASSWORD",
                "failover-test-replicator".to_owned(),
            ),
            ("CLUSTER_NETWORK", "127.0.0.1/32".to_owned()),
            ("CLIENT_NETWORK", "127.0.0.1/32".to_owned()),
            ("HAPROXY_BIND", format!("127.0.0.1:{haproxy_port}")),
        ]);

        let mut etcd = Command::new(&tools.etcd);
        for line in render(ETCD_ENV, &vars).lines() {
            if let Some((key, value)) = line.split_once('=').filter(|_| !line.starts_with('#')) {
                etcd.env(key.trim(), value.trim());
            }
        }
        let etcd = Process::spawn("etcd", etcd, dir.join("etcd.log"));
        let mut cluster = Cluster {
            dir: dir.clone(),
            etcd,
            nodes: Vec::new(),
            haproxy: None,
            haproxy_port,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(2))
                .build()
                .expect("client"),
        };
        cluster
            .wait_for(deadline, "etcd to answer", |c| async move {
                let health = c
                    .get(format!("http://127.0.0.1:{etcd_client}/health"))
                    .send()
                    .await
                    .ok()?;
                health.status().is_success().then_some(())
            })
            .await;

        for (n, (&pg_port, &rest_port)) in ports[3..6].iter().zip(&ports[6..9]).enumerate() {
            let name = format!("node{}", n + 1);
            let node_dir = dir.join(&name);
            fs::create_dir_all(&node_dir).expect("node directory");
            let data_dir = node_dir.join("data");
            vars.insert("NODE_NAME", name.clone());
            vars.insert("PG_PORT", pg_port.to_string());
            vars.insert("REST_PORT", rest_port.to_string());
            vars.insert("DATA_DIR", data_dir.display().to_string());
            vars.insert("PGPASS_FILE", node_dir.join("pgpass").display().to_string());
            vars.insert("SOCKET_DIR", node_dir.display().to_string());
            vars.insert(
                match n {
                    0 => "NODE1_PG",
                    1 => "NODE2_PG",
                    _ => "NODE3_PG",
                },
                format!("127.0.0.1:{pg_port}"),
            );
            vars.insert(
                match n {
                    0 => "NODE1_REST_PORT",
                    1 => "NODE2_REST_PORT",
                    _ => "NODE3_REST_PORT",
                },
                rest_port.to_string(),
            );
            let config = node_dir.join("patroni.yml");
            fs::write(&config, render(PATRONI_YML, &vars)).expect("patroni.yml");
            let mut command = match &tools.as_postgres {
                Some((setpriv, uid, gid)) => {
                    std::os::unix::fs::chown(&node_dir, Some(*uid), Some(*gid))
                        .expect("the node's directory belongs to postgres");
                    let mut command = Command::new(setpriv);
                    command
                        .arg(format!("--reuid={uid}"))
                        .arg(format!("--regid={gid}"))
                        .arg("--clear-groups")
                        .arg("--")
                        .arg(&tools.patroni);
                    command
                }
                None => Command::new(&tools.patroni),
            };
            // Run from the node's own directory: the PostgreSQL tools Patroni starts refuse to
            // run in a working directory their user cannot enter (a checkout under a private
            // temporary directory, say).
            command
                .arg(&config)
                .env("HOME", &node_dir)
                .current_dir(&node_dir);
            let log = node_dir.join("patroni.log");
            let patroni = Process::spawn(&name, command, log.clone());
            cluster.nodes.push(Node {
                name,
                pg_port,
                rest_port,
                data_dir,
                log,
                patroni: Some(patroni),
            });
        }
        cluster
            .wait_for(
                deadline,
                "a leader, a synchronous standby and a replica",
                |_| {
                    let members = cluster.members();
                    async move {
                        let members = members.await;
                        let running = |role: &str| {
                            members.iter().any(|m| {
                                m.role == role && (m.state == "running" || m.state == "streaming")
                            })
                        };
                        (members.len() == 3
                            && running("leader")
                            && running("sync_standby")
                            && running("replica"))
                        .then_some(())
                    }
                },
            )
            .await;

        let haproxy_cfg = dir.join("haproxy.cfg");
        fs::write(&haproxy_cfg, render(HAPROXY_CFG, &vars)).expect("haproxy.cfg");
        let mut haproxy = Command::new(&tools.haproxy);
        haproxy.arg("-db").arg("-f").arg(&haproxy_cfg);
        cluster.haproxy = Some(Process::spawn("haproxy", haproxy, dir.join("haproxy.log")));
        // HAProxy starts with every server up and marks the replicas down on their first
        // failed checks; until then it may pick one. Six primaries in a row: round robin over
        // three servers has left the replicas out.
        let url = cluster.superuser_url(haproxy_port, "postgres");
        cluster
            .wait_for(deadline, "HAProxy to reach only the primary", |_| {
                let url = url.clone();
                async move {
                    for _ in 0..6 {
                        if !is_primary(&url).await {
                            return None;
                        }
                    }
                    Some(())
                }
            })
            .await;
        cluster
    }

    /// Polls `probe` every 200 ms until it answers, or fails the test at `deadline`.
    async fn wait_for<F, Fut>(&self, deadline: Instant, what: &str, probe: F)
    where
        F: Fn(reqwest::Client) -> Fut,
        Fut: std::future::Future<Output = Option<()>>,
    {
        loop {
            if probe(self.http.clone()).await.is_some() {
                return;
            }
            assert!(Instant::now() < deadline, "gave up waiting for {what}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The members as the first node that answers reports them (empty if none does).
    pub(crate) fn members(&self) -> impl std::future::Future<Output = Vec<Member>> + 'static {
        let (http, ports) = (
            self.http.clone(),
            self.nodes
                .iter()
                .filter(|n| n.patroni.is_some())
                .map(|n| n.rest_port)
                .collect::<Vec<_>>(),
        );
        async move {
            for port in ports {
                let Ok(response) = http
                    .get(format!("http://127.0.0.1:{port}/cluster"))
                    .send()
                    .await
                else {
                    continue;
                };
                let Ok(body) = response.json::<Value>().await else {
                    continue;
                };
                let Some(members) = body["members"].as_array() else {
                    continue;
                };
                return members
                    .iter()
                    .map(|m| Member {
                        name: m["name"].as_str().unwrap_or_default().to_owned(),
                        role: m["role"].as_str().unwrap_or_default().to_owned(),
                        state: m["state"].as_str().unwrap_or_default().to_owned(),
                        timeline: m["timeline"].as_u64(),
                    })
                    .collect();
            }
            Vec::new()
        }
    }

    /// Kills a node as a crash of its host would: Patroni and PostgreSQL, with SIGKILL, and
    /// its leader key left in etcd to expire.
    pub(crate) fn kill_node(&mut self, name: &str) {
        let node = self
            .nodes
            .iter_mut()
            .find(|n| n.name == name)
            .unwrap_or_else(|| panic!("no node {name}"));
        assert!(node.kill(), "{name}'s PostgreSQL outlived SIGKILL");
        node.patroni = None;
    }

    /// The node called `name`.
    pub(crate) fn node(&self, name: &str) -> &Node {
        self.nodes
            .iter()
            .find(|n| n.name == name)
            .unwrap_or_else(|| panic!("no node {name}"))
    }

    /// A superuser URL for `database` on a port (HAProxy's, or a node's own).
    pub(crate) fn superuser_url(&self, port: u16, database: &str) -> String {
        format!("postgres://postgres:{SUPERUSER_PASSWORD}@127.0.0.1:{port}/{database}")
    }

    /// The last lines of every log, for a failing test.
    fn print_logs(&self) {
        tail(&self.etcd.name, &self.etcd.log);
        for node in &self.nodes {
            tail(&node.name, &node.log);
        }
        if let Some(haproxy) = &self.haproxy {
            tail(&haproxy.name, &haproxy.log);
        }
    }
}

/// Whether `url` reaches a PostgreSQL that is not in recovery.
pub(crate) async fn is_primary(url: &str) -> bool {
    use sqlx::Connection;
    let Ok(Ok(mut conn)) =
        tokio::time::timeout(Duration::from_secs(2), sqlx::PgConnection::connect(url)).await
    else {
        return false;
    };
    let primary = sqlx::query_scalar::<_, bool>("SELECT NOT pg_is_in_recovery()")
        .fetch_one(&mut conn)
        .await
        .unwrap_or(false);
    let _ = conn.close().await;
    primary
}

/// Prints the last 40 lines of a log.
fn tail(name: &str, log: &Path) {
    let Ok(file) = fs::File::open(log) else {
        return;
    };
    let lines: Vec<String> = BufReader::new(file).lines().map_while(Result::ok).collect();
    eprintln!("---- {name}: last lines of {} ----", log.display());
    for line in &lines[lines.len().saturating_sub(40)..] {
        eprintln!("{line}");
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.print_logs();
        }
        if let Some(haproxy) = &mut self.haproxy {
            haproxy.kill();
        }
        for node in &mut self.nodes {
            let _ = node.kill();
        }
        self.etcd.kill();
        // Anything else still running from the scratch directory (a postmaster whose pid file
        // was not written yet, say) goes too, before the directory does.
        kill_under(&self.dir);
        if std::env::var_os("MISSIVE_FAILOVER_KEEP").is_some() {
            eprintln!("logs and data kept in {}", self.dir.display());
        } else {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

/// SIGKILL to every process whose command line names a path under `dir`.
fn kill_under(dir: &Path) {
    let dir = dir.to_string_lossy().into_owned();
    // Only a scratch directory of this test's own: an empty or short path would match
    // every process's command line.
    if !dir.contains("missive-failover") {
        return;
    }
    let own = std::process::id().to_string();
    for _ in 0..3 {
        let Ok(entries) = fs::read_dir("/proc") else {
            return;
        };
        let pids: Vec<String> = entries
            .filter_map(|e| {
                let name = e.ok()?.file_name().into_string().ok()?;
                name.parse::<u32>().ok()?;
                if name == own {
                    return None;
                }
                let cmdline = fs::read(format!("/proc/{name}/cmdline")).ok()?;
                String::from_utf8_lossy(&cmdline)
                    .contains(&dir)
                    .then_some(name)
            })
            .collect();
        if pids.is_empty() {
            return;
        }
        let _ = Command::new("kill")
            .arg("-KILL")
            .arg("--")
            .args(&pids)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        std::thread::sleep(Duration::from_millis(100));
    }
}
