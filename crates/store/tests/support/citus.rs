//! A fresh database on the Citus cluster whose coordinator `MISSIVE_CITUS_URL` names (its
//! `postgres` database, say, with the workers registered there): the database is created on the
//! coordinator and on every worker, each gets the `citus` extension, the coordinator's copy
//! registers the workers, the store's migrations run, then `deploy/citus/distribute.sql`.

use std::path::Path;

use anyhow::{Context, Result};
use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection};

/// The variable naming the coordinator; unset, the Citus checks are skipped.
pub(super) const URL_VAR: &str = "MISSIVE_CITUS_URL";

/// A database made on every node of the cluster.
pub(super) struct Database {
    /// The new database on the coordinator, as a URL the store connects to.
    pub(super) url: String,
    pub(super) name: String,
    /// Every node's administrative connection (its database of `MISSIVE_CITUS_URL`),
    /// coordinator first.
    pub(super) nodes: Vec<PgConnectOptions>,
}

/// The coordinator's URL, or `None` after saying why the check is skipped.
pub(super) fn coordinator_url() -> Option<String> {
    match std::env::var(URL_VAR) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            eprintln!(
                "skipped: {URL_VAR} is not set (a Citus coordinator with its workers registered, \
                 e.g. postgres://postgres@127.0.0.1:9700/postgres)"
            );
            None
        }
    }
}

/// Makes the database and readies it for the store (migrated, then distributed).
pub(super) async fn create(
    admin_url: &str,
    options: missive_store::StoreOptions,
) -> Result<Database> {
    let coordinator: PgConnectOptions = admin_url
        .parse()
        .with_context(|| format!("{URL_VAR} is not a PostgreSQL URL"))?;
    let mut admin = PgConnection::connect_with(&coordinator)
        .await
        .with_context(|| format!("the Citus coordinator at {admin_url} (is it running?)"))?;
    // One setup at a time, across test processes: registering the workers in two new databases
    // at once can fail on a worker ("tuple concurrently updated"). Held until `admin` closes.
    sqlx::query("SELECT pg_advisory_lock(hashtext('missive: a Citus test database'))")
        .execute(&mut admin)
        .await?;
    let workers: Vec<(String, i32)> = sqlx::query_as(
        "SELECT nodename, nodeport FROM pg_dist_node
         WHERE noderole = 'primary' AND groupid <> 0 AND isactive ORDER BY nodeid",
    )
    .fetch_all(&mut admin)
    .await
    .with_context(|| format!("no Citus worker list in {admin_url} (citus_add_node there)"))?;
    anyhow::ensure!(
        !workers.is_empty(),
        "no Citus workers registered in {admin_url}"
    );

    let name = format!("missive_citus_{}", uuid::Uuid::new_v4().simple());
    let mut nodes = vec![coordinator.clone()];
    for (host, port) in &workers {
        let port = u16::try_from(*port).context("a worker's port")?;
        nodes.push(coordinator.clone().host(host).port(port));
    }
    let (path, query) = admin_url
        .split_once('?')
        .map_or((admin_url, String::new()), |(p, q)| (p, format!("?{q}")));
    let database = Database {
        url: format!(
            "{}/{name}{query}",
            path.rsplit_once('/').context("no database name")?.0
        ),
        name,
        nodes,
    };
    for node in &database.nodes {
        let mut conn = PgConnection::connect_with(node).await?;
        sqlx::raw_sql(&format!("CREATE DATABASE {}", database.name))
            .execute(&mut conn)
            .await?;
        conn.close().await?;
        let mut conn = PgConnection::connect_with(&node.clone().database(&database.name)).await?;
        sqlx::raw_sql("CREATE EXTENSION citus")
            .execute(&mut conn)
            .await?;
        conn.close().await?;
    }
    // Citus's execution counters, which `citus_routing.rs` reads, for every session to come.
    let mut conn = PgConnection::connect_with(&coordinator).await?;
    sqlx::raw_sql(&format!(
        "ALTER DATABASE {} SET citus.enable_stat_counters = on",
        database.name
    ))
    .execute(&mut conn)
    .await?;
    conn.close().await?;
    let mut conn =
        PgConnection::connect_with(&coordinator.clone().database(&database.name)).await?;
    sqlx::query("SELECT citus_set_coordinator_host($1, $2)")
        .bind(coordinator.get_host())
        .bind(i32::from(coordinator.get_port()))
        .execute(&mut conn)
        .await?;
    for (host, port) in &workers {
        sqlx::query("SELECT citus_add_node($1, $2)")
            .bind(host)
            .bind(port)
            .execute(&mut conn)
            .await?;
    }
    // The schema, then its distribution, as deploy/citus/README.md says to run them.
    drop(missive_store::Store::connect(&database.url, options).await?);
    let distribute =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/citus/distribute.sql");
    let script = std::fs::read_to_string(&distribute)
        .with_context(|| format!("{}", distribute.display()))?;
    sqlx::raw_sql(&script)
        .execute(&mut conn)
        .await
        .context("deploy/citus/distribute.sql")?;
    conn.close().await?;
    admin.close().await?;
    Ok(database)
}

/// Drops the database on every node, the coordinator first.
pub(super) async fn drop_database(nodes: &[PgConnectOptions], name: &str) -> Result<()> {
    for node in nodes {
        let mut conn = PgConnection::connect_with(node).await?;
        sqlx::raw_sql(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .execute(&mut conn)
            .await?;
        conn.close().await?;
    }
    Ok(())
}
