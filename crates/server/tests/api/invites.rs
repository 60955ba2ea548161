//! Invitations (a seat held for a friend, opened by its code, in a match no list shows) and
//! rematches (the same game again, each seat held for its previous holder).

use missive_proto::v1 as pb;
use missive_proto::v1::missive_client::MissiveClient;
use missive_server::games::Registry;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tonic::Code;
use tonic::transport::Channel;

use crate::helpers::{Backend, authed, get_match, join_as, love_letter_options, spectator_view};
use crate::players::{play_out, player_token, spawn_with_players};

async fn join(
    client: &mut MissiveClient<Channel>,
    id: &str,
    seat: Option<u32>,
    code: &str,
) -> Result<pb::JoinMatchResponse, tonic::Status> {
    client
        .join_match(pb::JoinMatchRequest {
            match_id: id.to_owned(),
            player: "guest".into(),
            seat,
            invite_code: code.to_owned(),
            ..Default::default()
        })
        .await
        .map(tonic::Response::into_inner)
}

async fn open_ids(client: &mut MissiveClient<Channel>) -> Vec<String> {
    client
        .list_matches(pb::ListMatchesRequest::default())
        .await
        .expect("list")
        .into_inner()
        .matches
        .into_iter()
        .map(|m| m.match_id)
        .collect()
}

#[tokio::test]
async fn an_invited_seat_is_taken_only_with_its_code_in_a_match_no_list_shows() {
    for backend in [Backend::Postgres, Backend::Sqlite] {
        let app = spawn_with_players(backend).await;
        let mut client = app.grpc().await;
        let mut request = love_letter_options(3);
        request.invite_seats = vec![2];
        request.request_id = "with-a-friend".into();
        let created = client
            .create_match(request.clone())
            .await
            .expect("create")
            .into_inner();
        let id = created.r#match.as_ref().expect("match").match_id.clone();
        let [invite] = created.invites.as_slice() else {
            panic!("one invite: {:?}", created.invites)
        };
        assert_eq!(invite.seat, 2);
        assert!(
            invite.code.len() == 32 && invite.code.bytes().all(|b| b.is_ascii_hexdigit()),
            "{}",
            invite.code
        );
        // A retry answers the same match and the same code.
        let again = client
            .create_match(request)
            .await
            .expect("retry")
            .into_inner();
        assert_eq!(again.r#match.expect("match").match_id, id);
        assert_eq!(again.invites, created.invites);
        assert_eq!(get_match(&mut client, &id).await.invited_seats, [2]);
        assert!(!open_ids(&mut client).await.contains(&id), "not listed");

        // The held seat: not without its code, not with a wrong one.
        let taken = join(&mut client, &id, Some(2), "")
            .await
            .expect_err("no code");
        assert_eq!(taken.code(), Code::PermissionDenied, "{taken:?}");
        assert!(taken.message().contains("invite code"), "{taken:?}");
        let wrong = join(&mut client, &id, None, &"0".repeat(32))
            .await
            .expect_err("wrong");
        assert_eq!(wrong.code(), Code::PermissionDenied, "{wrong:?}");
        let elsewhere = join(&mut client, &id, Some(1), &invite.code)
            .await
            .expect_err("seat 1");
        assert_eq!(elsewhere.code(), Code::InvalidArgument, "{elsewhere:?}");
        // Others fill the free seats, and then no seat is left to them.
        for seat in [0, 1] {
            assert_eq!(
                join(&mut client, &id, None, "").await.expect("join").seat,
                seat
            );
        }
        let full = join(&mut client, &id, None, "").await.expect_err("full");
        assert_eq!(full.code(), Code::FailedPrecondition, "{full:?}");
        assert!(
            get_match(&mut client, &id)
                .await
                .seats
                .iter()
                .filter(|s| s.taken)
                .count()
                == 2
        );
        // The friend, over HTTP, with the code.
        let response = app
            .post(
                &format!("/v1/matches/{id}/join"),
                &json!({ "player": "friend", "inviteCode": invite.code }),
            )
            .await;
        assert_eq!(response.status(), StatusCode::OK);
        let body: Value = response.json().await.expect("json");
        assert_eq!(body["seat"], 2, "{body}");
        assert_eq!(body["match"]["status"], "MATCH_STATUS_ACTIVE", "{body}");
        let twice = join(&mut client, &id, None, &invite.code)
            .await
            .expect_err("taken");
        assert_eq!(twice.code(), Code::FailedPrecondition, "{twice:?}");
        // The log records the invitation (the audit checks it like every other field).
        let history = crate::helpers::history(&mut client, &id, None).await;
        let Some(pb::history_entry::Entry::Created(c)) = &history.entries[0].entry else {
            panic!("the first entry is the creation")
        };
        assert_eq!(c.invited_seats, [2]);

        // Invitations that cannot be.
        for (seats, bots, why) in [
            (vec![3], vec![], "does not exist"),
            (vec![1, 1], vec![], "twice"),
            (vec![1], vec![1], "bot"),
        ] {
            let mut bad = love_letter_options(3);
            bad.invite_seats = seats;
            bad.bots = bots
                .into_iter()
                .map(|seat| pb::BotSeat {
                    seat,
                    ..Default::default()
                })
                .collect();
            let refused = client.create_match(bad).await.expect_err(why);
            assert_eq!(refused.code(), Code::InvalidArgument, "{why}: {refused:?}");
            assert!(refused.message().contains(why), "{why}: {refused:?}");
        }
    }
}

#[tokio::test]
async fn a_finished_match_offers_each_seats_holder_the_same_seat_in_its_rematch() {
    for backend in [Backend::Postgres, Backend::Sqlite] {
        let app = spawn_with_players(backend).await;
        let mut client = app.grpc().await;
        // Ann with a player token, Bob anonymously with a seat token, and a bot.
        let mut request = love_letter_options(3);
        request.bots = vec![pb::BotSeat {
            seat: 2,
            strategy: "random".into(),
            ..Default::default()
        }];
        request.turn_timeout_secs = Some(86_400);
        let old = client
            .create_match(request)
            .await
            .expect("create")
            .into_inner()
            .r#match
            .expect("match");
        let ann = player_token("ann");
        let ann_seat = client
            .join_match(authed(
                pb::JoinMatchRequest {
                    match_id: old.match_id.clone(),
                    seat: Some(0),
                    ..Default::default()
                },
                &ann,
            ))
            .await
            .expect("ann joins")
            .into_inner();
        let bob_seat = join_as(&mut client, &old.match_id, "Bob", Some(1)).await;
        let rematch = |token: &str| {
            authed(
                pb::RematchRequest {
                    match_id: old.match_id.clone(),
                },
                token,
            )
        };
        let early = client.rematch(rematch(&ann)).await.expect_err("under way");
        assert_eq!(early.code(), Code::FailedPrecondition, "{early:?}");
        assert!(early.message().contains("over"), "{early:?}");
        play_out(
            &mut client,
            &old.match_id,
            &[ann.clone(), bob_seat.seat_token.clone()],
        )
        .await;

        // Someone who held no seat gets no rematch.
        let stranger = client
            .rematch(rematch(&player_token("carol")))
            .await
            .expect_err("no seat");
        assert_eq!(stranger.code(), Code::PermissionDenied, "{stranger:?}");
        let anonymous = client
            .rematch(pb::RematchRequest {
                match_id: old.match_id.clone(),
            })
            .await
            .expect_err("no credentials");
        assert_eq!(anonymous.code(), Code::Unauthenticated);

        // Both ask at once: one rematch, each in their own seat.
        let mut other = client.clone();
        let (a, b) = tokio::join!(
            client.rematch(rematch(&ann)),
            other.rematch(rematch(&bob_seat.seat_token))
        );
        let (a, b) = (a.expect("ann").into_inner(), b.expect("bob").into_inner());
        assert_eq!((a.seat, b.seat), (ann_seat.seat, bob_seat.seat));
        let new = b.r#match.as_ref().expect("match");
        let new_id = new.match_id.clone();
        assert_eq!(a.r#match.as_ref().expect("match").match_id, new_id);
        assert_ne!(new_id, old.match_id);
        let info = get_match(&mut client, &new_id).await;
        assert_eq!(info.kind, old.kind);
        assert_eq!(info.options, old.options);
        assert_eq!(info.turn_timeout_secs, old.turn_timeout_secs);
        assert_eq!(info.invited_seats, [0, 1]);
        assert_eq!(
            info.status(),
            pb::MatchStatus::Active,
            "every seat held: it starts"
        );
        let names: Vec<&str> = info.seats.iter().map(|s| s.player.as_str()).collect();
        let old_names: Vec<String> = get_match(&mut client, &old.match_id)
            .await
            .seats
            .into_iter()
            .map(|s| s.player)
            .collect();
        assert_eq!(names, old_names);
        assert!(info.seats[2].bot);
        assert!(!open_ids(&mut client).await.contains(&new_id));
        // Asking again answers the same seat and token; Ann's player token plays it.
        let again = client
            .rematch(rematch(&ann))
            .await
            .expect("again")
            .into_inner();
        assert_eq!(again.seat_token, a.seat_token);
        let view = crate::helpers::seat_view(&mut client, &new_id, &a.seat_token).await;
        assert_eq!(view.seat, Some(ann_seat.seat));
        let inbox = client
            .list_my_matches(authed(pb::ListMyMatchesRequest::default(), &ann))
            .await
            .expect("inbox")
            .into_inner();
        assert_eq!(
            inbox.matches[0].r#match.as_ref().expect("match").match_id,
            new_id,
            "the rematch is Ann's newest"
        );

        // The rematch is played to its end and its audit log verifies, naming its origin.
        play_out(&mut client, &new_id, &[ann.clone(), b.seat_token.clone()]).await;
        assert!(spectator_view(&mut client, &new_id).await.outcome.is_some());
        let log = crate::helpers::audit_log(&mut client, &new_id).await;
        let Some(pb::audit_event::Body::Created(created)) = &log.events[0].body else {
            panic!("the log starts with the creation")
        };
        assert_eq!(created.rematch_of, old.match_id);
        assert_eq!(created.invited_seats, [0, 1]);
        missive_server::audit::verify(&Registry::new(), new_id.parse().expect("id"), &log)
            .expect("the rematch's log verifies");
    }
}
