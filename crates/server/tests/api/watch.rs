//! Watch streams against the service in this process, where a test decides when a stream is
//! read: a stream that falls behind the updates handed to it reads the rest from the store.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use missive_proto::v1 as pb;
use missive_server::clock::Clock;
use missive_server::service::{Caller, Service};

use crate::clock::{database, server, start_match};
use crate::helpers::{Backend, Lcg, backend_tests};

/// How many updates of one match the service holds for its watchers before a slow one misses
/// some (`WATCH_BUFFER` in the service).
const HANDED_OVER: u64 = 16;

async fn view(service: &Service, match_id: &str, caller: &Caller) -> pb::MatchView {
    service
        .get_view(
            caller,
            pb::GetViewRequest {
                match_id: match_id.to_owned(),
                seat: None,
            },
        )
        .await
        .expect("view")
        .view
        .expect("a view")
}

/// Plays random legal actions to the match's end; its final version.
async fn play_out(service: &Service, match_id: &str, tokens: &[String], seed: u64) -> u64 {
    let mut rng = Lcg(seed);
    loop {
        let public = view(service, match_id, &Caller::default()).await;
        if public.outcome.is_some() {
            return public.version;
        }
        let seat = public.awaiting[0] as usize;
        let caller = Caller::seat(&tokens[seat]);
        let mine = view(service, match_id, &caller).await;
        let action = mine.legal_actions[rng.below(mine.legal_actions.len())].clone();
        service
            .act(
                &caller,
                crate::helpers::act_request(match_id, &mine, action),
            )
            .await
            .expect("act");
    }
}

/// Streams opened as a match starts and not read until it has ended: each missed most of the
/// updates handed to it, read them from the store, and sends every version once, in order, as
/// its viewer may see it, then ends.
async fn a_stream_read_only_after_the_end_still_sends_every_update(backend: Backend) {
    let (url, _db, _dir) = database(backend).await;
    // The turn worker beside it has nothing to do here (no deadline falls due during the
    // test), and the watch's 10 s timer does not fire: a stream catches up because it missed
    // updates.
    let (_stop, stop) = tokio::sync::watch::channel(false);
    let service = server(&url, &Clock::system(), &stop).await;
    // The deal is random, and a short match may not overflow what is held for a watcher: play
    // until one does.
    for game in 0..8 {
        let (id, tokens) = start_match(&service, None).await;
        let match_id = id.to_string();
        let watch = |caller: Caller, after_version| {
            let service = Arc::clone(&service);
            let match_id = match_id.clone();
            async move {
                service
                    .watch(
                        &caller,
                        pb::WatchMatchRequest {
                            match_id,
                            after_version,
                            seat: None,
                        },
                    )
                    .await
                    .expect("watch")
            }
        };
        let spectator = watch(Caller::default(), 0).await;
        let seat = watch(Caller::seat(&tokens[1]), 2).await;
        let last = play_out(&service, &match_id, &tokens, game).await;
        for (stream, after, seen_as) in [(spectator.boxed(), 0, None), (seat.boxed(), 2, Some(1))] {
            let updates: Vec<pb::WatchMatchResponse> = tokio::time::timeout(
                Duration::from_secs(30),
                stream.map(|u| u.expect("update")).collect(),
            )
            .await
            .expect("the stream ends with the match");
            let versions: Vec<u64> = updates.iter().map(|u| u.version).collect();
            assert_eq!(
                versions,
                (after + 1..=last).collect::<Vec<_>>(),
                "every version after {after}, once, in order"
            );
            for update in &updates {
                let view = update.view.as_ref().expect("a view");
                assert_eq!(view.version, update.version, "the view is the update's own");
                assert_eq!(view.seat, seen_as, "seen as the stream's viewer");
            }
            let end = updates.last().and_then(|u| u.view.as_ref());
            assert!(
                end.is_some_and(|v| v.outcome.is_some()),
                "the last update shows the outcome"
            );
        }
        if last > 2 + HANDED_OVER {
            return;
        }
    }
    panic!("no match was long enough to overflow the updates held for a watcher");
}

backend_tests! {
    #[tokio::test]
    a_stream_read_only_after_the_end_still_sends_every_update:
    Postgres => a_stream_read_only_after_the_end_still_sends_every_update_postgres,
    Citus => a_stream_read_only_after_the_end_still_sends_every_update_citus,
    Sqlite => a_stream_read_only_after_the_end_still_sends_every_update_sqlite,
}
