//! The `Play` stream: acts and updates on one bidirectional gRPC stream. Every update reaches
//! it as `WatchMatch` sends them, every act is answered in order as `Act` would answer it, a
//! retried act is applied once however it comes, and a refused act leaves the stream open.
//! An accepted act's answer comes after the update it made, so a client holds the new view
//! when it reads the answer.

use missive_proto::v1 as pb;
use missive_proto::v1::missive_client::MissiveClient;
use pb::play_response::Response;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Code;
use tonic::transport::Channel;

use crate::grpc::create_and_join;
use crate::helpers::{
    Backend, Lcg, act_request, act_with, authed, get_match, maybe_authed, seat_view, spawn_app,
    spectator_view,
};

/// One open Play stream.
struct Play {
    requests: Option<mpsc::Sender<pb::PlayRequest>>,
    responses: tonic::Streaming<pb::PlayResponse>,
}

impl Play {
    /// Opens a stream on `match_id` with updates after `after`, as `token`'s seat (a spectator
    /// without one).
    async fn open(
        client: &mut MissiveClient<Channel>,
        match_id: &str,
        after: u64,
        token: Option<&str>,
    ) -> Play {
        let (requests, outbound) = mpsc::channel(16);
        requests
            .send(pb::PlayRequest {
                request: Some(pb::play_request::Request::Watch(pb::WatchMatchRequest {
                    match_id: match_id.to_owned(),
                    after_version: after,
                    seat: None,
                })),
            })
            .await
            .expect("the first message is queued");
        let responses = client
            .play(maybe_authed(ReceiverStream::new(outbound), token))
            .await
            .expect("the stream opens")
            .into_inner();
        Play {
            requests: Some(requests),
            responses,
        }
    }

    async fn act(&self, act: pb::ActRequest) {
        self.requests
            .as_ref()
            .expect("the stream is open")
            .send(pb::PlayRequest {
                request: Some(pb::play_request::Request::Act(act)),
            })
            .await
            .expect("the act is sent");
    }

    /// The next message, or `None` once the stream has ended.
    async fn next(&mut self) -> Option<Response> {
        let message =
            tokio::time::timeout(std::time::Duration::from_secs(15), self.responses.message())
                .await
                .expect("the stream answers in time")
                .expect("the stream does not fail");
        message.map(|m| m.response.expect("a response"))
    }

    /// The answer to the act just sent; the updates that came first are added to `updates`.
    async fn answer(&mut self, updates: &mut Vec<pb::WatchMatchResponse>) -> Response {
        loop {
            match self.next().await.expect("an answer before the end") {
                Response::Update(update) => updates.push(update),
                answer => return answer,
            }
        }
    }

    /// Closes the sending side; the updates until the stream ends.
    async fn finish(&mut self) -> Vec<pb::WatchMatchResponse> {
        self.requests = None;
        let mut updates = Vec::new();
        while let Some(response) = self.next().await {
            match response {
                Response::Update(update) => updates.push(update),
                other => panic!("only updates are left, not {other:?}"),
            }
        }
        updates
    }
}

/// The seat the started match awaits first, and its view.
async fn awaited(
    client: &mut MissiveClient<Channel>,
    match_id: &str,
    tokens: &[String],
) -> (usize, pb::MatchView) {
    let seat = spectator_view(client, match_id).await.awaiting[0] as usize;
    (seat, seat_view(client, match_id, &tokens[seat]).await)
}

/// The name of a unary call's code, as a refusal on the stream spells it.
fn code_name(code: Code) -> &'static str {
    match code {
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::Unauthenticated => "UNAUTHENTICATED",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::NotFound => "NOT_FOUND",
        other => panic!("no refusal here answers {other:?}"),
    }
}

#[tokio::test]
async fn a_match_played_over_play_streams_gets_every_update_and_every_answer() {
    let app = spawn_app(Backend::Postgres).await;
    let mut client = app.grpc().await;
    let (match_id, tokens) = create_and_join(&mut client, 2).await;
    let joined = get_match(&mut client, &match_id).await.version;
    let mut streams = Vec::new();
    for token in &tokens {
        streams.push(Play::open(&mut client, &match_id, joined, Some(token)).await);
    }
    let mut received: Vec<Vec<pb::WatchMatchResponse>> = vec![Vec::new(), Vec::new()];
    let mut rng = Lcg(5);
    let last = loop {
        let spectator = spectator_view(&mut client, &match_id).await;
        if spectator.outcome.is_some() {
            break spectator.version;
        }
        let seat = spectator.awaiting[0] as usize;
        let view = seat_view(&mut client, &match_id, &tokens[seat]).await;
        let action = view.legal_actions[rng.below(view.legal_actions.len())].clone();
        let mut act = act_request(&match_id, &view, action);
        act.match_id = String::new(); // the watched match
        streams[seat].act(act).await;
        match streams[seat].answer(&mut received[seat]).await {
            Response::Acted(acted) => {
                assert_eq!(acted.version, view.version + 1, "the act's own version");
                assert!(!acted.duplicate);
                let acted_view = acted.view.expect("the act answers a view");
                assert_eq!(acted_view.seat, Some(seat as u32));
                assert_eq!(acted_view.version, acted.version);
                assert_eq!(
                    received[seat].last().map(|u| u.version),
                    Some(acted.version),
                    "seat {seat}: the update the act made comes before its answer"
                );
            }
            other => panic!("seat {seat}'s act was answered {other:?}"),
        }
    };
    for (seat, stream) in streams.iter_mut().enumerate() {
        received[seat].extend(stream.finish().await);
        let versions: Vec<u64> = received[seat].iter().map(|u| u.version).collect();
        assert_eq!(
            versions,
            (joined + 1..=last).collect::<Vec<_>>(),
            "seat {seat}: every update, in order, once"
        );
        for update in &received[seat] {
            let view = update.view.as_ref().expect("a view");
            assert_eq!(view.seat, Some(seat as u32), "seat {seat}'s own view");
        }
    }
    let outcome = received[0]
        .last()
        .and_then(|u| u.view.as_ref()?.outcome.as_ref());
    assert!(outcome.is_some(), "the last update shows the outcome");
}

#[tokio::test]
async fn an_act_retried_on_a_play_stream_or_elsewhere_is_applied_once() {
    let app = spawn_app(Backend::Postgres).await;
    let mut client = app.grpc().await;
    let (match_id, tokens) = create_and_join(&mut client, 2).await;
    let (seat, view) = awaited(&mut client, &match_id, &tokens).await;
    let token = &tokens[seat];
    let act = act_request(&match_id, &view, view.legal_actions[0].clone());
    let mut stream = Play::open(&mut client, &match_id, view.version, Some(token)).await;
    let mut updates = Vec::new();
    stream.act(act.clone()).await;
    let Response::Acted(first) = stream.answer(&mut updates).await else {
        panic!("the act is applied");
    };
    assert!(!first.duplicate);
    // Sent again on the same stream: answered as the first, nothing new.
    stream.act(act.clone()).await;
    let Response::Acted(again) = stream.answer(&mut updates).await else {
        panic!("a retry is answered, not refused");
    };
    assert!(again.duplicate, "a retry on the stream is a duplicate");
    assert_eq!(again.version, first.version);
    // As a unary Act, and on a new stream after this one is gone.
    let unary = act_with(&mut client, act.clone(), token).await;
    assert!(
        unary.duplicate,
        "a unary retry of a streamed act is a duplicate"
    );
    assert_eq!(unary.version, first.version);
    drop(stream);
    let mut reopened = Play::open(&mut client, &match_id, first.version, Some(token)).await;
    reopened.act(act).await;
    let Response::Acted(later) = reopened.answer(&mut updates).await else {
        panic!("a retry on a new stream is answered");
    };
    assert!(later.duplicate);
    assert_eq!(later.version, first.version);
    assert_eq!(
        get_match(&mut client, &match_id).await.version,
        first.version,
        "one event for four sendings"
    );
}

#[tokio::test]
async fn a_play_stream_refuses_what_act_refuses_and_stays_open() {
    let app = spawn_app(Backend::Postgres).await;
    let mut client = app.grpc().await;
    let (match_id, tokens) = create_and_join(&mut client, 2).await;
    let joined = get_match(&mut client, &match_id).await.version;
    let (mover, view) = awaited(&mut client, &match_id, &tokens).await;
    let other = 1 - mover;
    let action = view.legal_actions[0].clone();
    let mut updates = Vec::new();

    // Each act is refused on the stream with the code the unary Act answers, and nothing
    // changes: a spectator's act, an act for a seat the token does not hold, an act out of
    // turn.
    let mut watching = Play::open(&mut client, &match_id, joined, None).await;
    let mut waiting = Play::open(&mut client, &match_id, joined, Some(&tokens[other])).await;
    let as_mover = pb::ActRequest {
        seat: Some(mover as u32),
        ..act_request(&match_id, &view, action.clone())
    };
    for (stream, token, act) in [
        (
            &mut watching,
            None,
            act_request(&match_id, &view, action.clone()),
        ),
        (&mut waiting, Some(tokens[other].as_str()), as_mover),
    ] {
        let unary = client
            .act(maybe_authed(act.clone(), token))
            .await
            .expect_err("refused as a unary call");
        stream.act(act.clone()).await;
        match stream.answer(&mut updates).await {
            Response::Refused(refusal) => {
                assert_eq!(refusal.request_id, act.request_id);
                assert_eq!(refusal.code, code_name(unary.code()), "{refusal:?}");
                assert!(!refusal.message.is_empty());
            }
            other => panic!("{act:?} was answered {other:?}"),
        }
    }
    let out_of_turn = act_request(&match_id, &view, action.clone());
    waiting.act(out_of_turn).await;
    match waiting.answer(&mut updates).await {
        Response::Refused(refusal) => {
            assert_eq!(refusal.code, "FAILED_PRECONDITION");
            assert_eq!(refusal.rule, "not-your-turn");
        }
        other => panic!("an act out of turn was answered {other:?}"),
    }
    assert_eq!(get_match(&mut client, &match_id).await.version, joined);

    // The streams are still open: the mover's act reaches both.
    client
        .act(authed(
            act_request(&match_id, &view, action),
            &tokens[mover],
        ))
        .await
        .expect("the mover acts");
    for stream in [&mut watching, &mut waiting] {
        match stream.next().await {
            Some(Response::Update(update)) => assert_eq!(update.version, joined + 1),
            other => panic!("the next update, not {other:?}"),
        }
    }

    // A stream must open with what to watch.
    let (requests, outbound) = mpsc::channel(1);
    requests
        .send(pb::PlayRequest {
            request: Some(pb::play_request::Request::Act(act_request(
                &match_id,
                &view,
                view.legal_actions[0].clone(),
            ))),
        })
        .await
        .expect("queued");
    let opened = client
        .play(authed(ReceiverStream::new(outbound), &tokens[mover]))
        .await;
    let status = match opened {
        Err(status) => status,
        Ok(response) => response
            .into_inner()
            .message()
            .await
            .expect_err("an act first is refused"),
    };
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
}

#[tokio::test]
async fn an_act_that_omits_its_view_is_answered_by_version_and_its_update_carries_the_view() {
    let app = spawn_app(Backend::Postgres).await;
    let mut client = app.grpc().await;
    let (match_id, tokens) = create_and_join(&mut client, 2).await;
    let (seat, view) = awaited(&mut client, &match_id, &tokens).await;
    let token = &tokens[seat];
    let act = pb::ActRequest {
        omit_view: true,
        ..act_request(&match_id, &view, view.legal_actions[0].clone())
    };
    let mut stream = Play::open(&mut client, &match_id, view.version, Some(token)).await;
    let mut updates = Vec::new();
    stream.act(act.clone()).await;
    let Response::Acted(acted) = stream.answer(&mut updates).await else {
        panic!("the act is applied");
    };
    assert_eq!(acted.version, view.version + 1);
    assert!(!acted.duplicate);
    assert_eq!(acted.view, None, "the answer leaves the view out");
    let update = updates.last().expect("the act's update came first");
    assert_eq!(update.version, acted.version);
    assert_eq!(
        update.view.as_ref(),
        Some(&seat_view(&mut client, &match_id, token).await),
        "the update carries the seat's view after the act"
    );
    // Retried, it is answered as it asks: without the view, or with it.
    let lean = act_with(&mut client, act.clone(), token).await;
    assert!(lean.duplicate);
    assert_eq!((lean.version, lean.view), (acted.version, None));
    let full = act_with(
        &mut client,
        pb::ActRequest {
            omit_view: false,
            ..act
        },
        token,
    )
    .await;
    assert!(full.duplicate);
    assert_eq!(full.view.map(|v| v.version), Some(acted.version));
}
