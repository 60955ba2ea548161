//! TLS to PostgreSQL, asked for by the database URL's `sslmode` as libpq does: the store's own
//! connections are encrypted with `require`, and `verify-full` refuses a certificate no trusted
//! root signed. Needs a PostgreSQL with `ssl = on` (Debian's clusters are, with a self-signed
//! certificate); against one without it the test says so and passes.
#![cfg(feature = "tls")]

use anyhow::{Context, Result};
use missive_store::{Store, StoreOptions};
use sqlx::Connection;

/// A fresh database on the server `DATABASE_URL` names, dropped by [`Scratch::drop_now`].
struct Scratch {
    admin: sqlx::PgConnection,
    name: String,
    url: String,
}

impl Scratch {
    async fn new() -> Result<Scratch> {
        let admin_url = std::env::var("DATABASE_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
        let mut admin = sqlx::PgConnection::connect(&admin_url)
            .await
            .with_context(|| format!("PostgreSQL at {admin_url} (is it running?)"))?;
        let name = format!("missive_tls_{}", uuid::Uuid::new_v4().simple());
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut admin)
            .await?;
        let (base, _) = admin_url
            .split('?')
            .next()
            .and_then(|u| u.rsplit_once('/'))
            .context("DATABASE_URL has no database name")?;
        let url = format!("{base}/{name}");
        Ok(Scratch { admin, name, url })
    }

    async fn drop_now(mut self) -> Result<()> {
        sqlx::query(&format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            self.name
        ))
        .execute(&mut self.admin)
        .await?;
        Ok(())
    }
}

#[tokio::test]
async fn a_database_url_with_sslmode_require_encrypts_every_connection_of_the_store() -> Result<()>
{
    let mut scratch = Scratch::new().await?;
    let ssl: String = sqlx::query_scalar("SHOW ssl")
        .fetch_one(&mut scratch.admin)
        .await?;
    if ssl != "on" {
        println!("skipped: this PostgreSQL has ssl = {ssl}; nothing to encrypt with");
        return scratch.drop_now().await;
    }
    let result = check_require(&mut scratch).await;
    scratch.drop_now().await?;
    result
}

async fn check_require(scratch: &mut Scratch) -> Result<()> {
    let url = format!("{}?sslmode=require", scratch.url);
    let store = Store::connect(&url, StoreOptions::default()).await?;
    store.ping().await?;
    // Every backend serving the scratch database belongs to the store (the admin connection is
    // on another database): each one must be encrypted.
    let rows: Vec<(bool,)> = sqlx::query_as(
        "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.datname = $1",
    )
    .bind(&scratch.name)
    .fetch_all(&mut scratch.admin)
    .await?;
    assert!(
        !rows.is_empty(),
        "the store holds no connection to its database"
    );
    assert!(
        rows.iter().all(|(ssl,)| *ssl),
        "a connection of the store is not encrypted: {rows:?}"
    );
    Ok(())
}

#[tokio::test]
async fn sslmode_verify_full_refuses_a_certificate_no_trusted_root_signed() -> Result<()> {
    let mut scratch = Scratch::new().await?;
    let ssl: String = sqlx::query_scalar("SHOW ssl")
        .fetch_one(&mut scratch.admin)
        .await?;
    if ssl != "on" {
        println!("skipped: this PostgreSQL has ssl = {ssl}");
        return scratch.drop_now().await;
    }
    // The local cluster's certificate is self-signed (Debian's snakeoil): no web PKI root
    // vouches for it, so a verifying client must refuse to talk.
    let url = format!("{}?sslmode=verify-full", scratch.url);
    let options = StoreOptions {
        acquire_timeout: std::time::Duration::from_secs(2),
        ..StoreOptions::default()
    };
    let outcome = Store::connect(&url, options).await;
    scratch.drop_now().await?;
    assert!(
        outcome.is_err(),
        "a self-signed certificate was accepted under verify-full"
    );
    Ok(())
}
