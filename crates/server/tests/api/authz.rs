//! The authorisation matrix: every RPC, on both transports, called by each kind of caller —
//! nobody, a signed-in spectator, the seat's token, another seat's token, a token of another
//! match, the seat's player token, another player's token, an expired player token — answers
//! exactly the status the matrix gives, serves the seat it names and no other, and leaks no
//! token and no view but the caller's own.

use std::collections::BTreeMap;

use futures::StreamExt;
use missive_proto::v1 as pb;
use missive_proto::v1::missive_client::MissiveClient;
use serde_json::{Value, json};
use tonic::Code;
use tonic::transport::Channel;

use crate::helpers::{TestApp, authed, love_letter_options, maybe_authed, open_love_letter};
use crate::players::{SECRET, claims, player_token, sign, spawn_with_players};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Who {
    Nobody,
    Stranger,
    SeatToken,
    OtherSeatToken,
    OtherMatchToken,
    PlayerToken,
    OtherPlayerToken,
    ExpiredPlayerToken,
}

const EVERYONE: [Who; 8] = [
    Who::Nobody,
    Who::Stranger,
    Who::SeatToken,
    Who::OtherSeatToken,
    Who::OtherMatchToken,
    Who::PlayerToken,
    Who::OtherPlayerToken,
    Who::ExpiredPlayerToken,
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    Grpc,
    Http,
}

/// One seat of a match: its number, its seat token and its player's token.
#[derive(Debug, Clone)]
struct Seat {
    seat: u32,
    token: String,
    jwt: String,
}

/// A two-seat match under way between Ann and Bob, both joined with player tokens. `me` is the
/// seat the matrix is about (the one awaited first), `other` the other one.
#[derive(Debug, Clone)]
struct Table {
    id: String,
    me: Seat,
    other: Seat,
}

/// What a call should answer: success as a seat, as a spectator, or a refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Me,
    Other,
    Spectator,
    /// Success with nothing seat-specific to check.
    Done,
    Refused(Code),
}

struct Caller {
    authorization: Option<String>,
}

fn caller(who: Who, table: &Table, elsewhere: &str) -> Caller {
    let expired = {
        let mut c = claims("ann");
        c["exp"] = json!(0);
        sign(&c, SECRET)
    };
    let authorization = match who {
        Who::Nobody => None,
        Who::Stranger => Some(player_token("carol-who-holds-no-seat")),
        Who::SeatToken => Some(table.me.token.clone()),
        Who::OtherSeatToken => Some(table.other.token.clone()),
        Who::OtherMatchToken => Some(elsewhere.to_owned()),
        Who::PlayerToken => Some(table.me.jwt.clone()),
        Who::OtherPlayerToken => Some(table.other.jwt.clone()),
        Who::ExpiredPlayerToken => Some(expired),
    };
    Caller { authorization }
}

/// Ann's and Bob's player tokens.
fn players() -> (String, String) {
    (player_token("ann"), player_token("bob"))
}

async fn table(client: &mut MissiveClient<Channel>) -> Table {
    let id = open_love_letter(client, 2).await;
    let (ann, bob) = players();
    let mut seats = Vec::new();
    for jwt in [ann, bob] {
        let joined = client
            .join_match(authed(
                pb::JoinMatchRequest {
                    match_id: id.clone(),
                    ..Default::default()
                },
                &jwt,
            ))
            .await
            .expect("join")
            .into_inner();
        seats.push(Seat {
            seat: joined.seat,
            token: joined.seat_token,
            jwt,
        });
    }
    let awaited = crate::helpers::spectator_view(client, &id).await.awaiting[0];
    let (me, other) = if seats[0].seat == awaited {
        (seats[0].clone(), seats[1].clone())
    } else {
        (seats[1].clone(), seats[0].clone())
    };
    Table { id, me, other }
}

/// The expected answer of each RPC to each caller, as the API documents it.
fn expected(rpc: &str, who: Who) -> Expect {
    use Expect::*;
    use Who::*;
    let unauthenticated = Refused(Code::Unauthenticated);
    let denied = Refused(Code::PermissionDenied);
    match (rpc, who) {
        // A bad player token is refused whatever the call.
        (_, ExpiredPlayerToken) => unauthenticated,
        // Public calls read no credentials.
        ("CreateMatch" | "GetMatch" | "ListMatches" | "ListGames" | "GetAuditKeys", _) => Done,
        // A cancel without the cancel token: only the creating player may; the table was
        // created without a player token, so nobody here is its creator, and a seat token
        // is no credential for it.
        ("CancelMatch", Stranger | PlayerToken | OtherPlayerToken) => denied,
        ("CancelMatch", _) => unauthenticated,
        // Anyone may join; a player token binds the seat.
        ("JoinMatch", _) => Done,
        // Calls that name the seat (seat = me's).
        ("GetView" | "GetHistory" | "WatchMatch" | "Act", Nobody | OtherMatchToken) => {
            unauthenticated
        }
        (
            "GetView" | "GetHistory" | "WatchMatch" | "Act",
            Stranger | OtherSeatToken | OtherPlayerToken,
        ) => denied,
        ("GetView" | "GetHistory" | "WatchMatch" | "Act", SeatToken | PlayerToken) => Me,
        // The same reads naming no seat: each caller's own view.
        ("GetView (no seat)", Nobody | Stranger) => Spectator,
        ("GetView (no seat)", OtherMatchToken) => unauthenticated,
        ("GetView (no seat)", SeatToken | PlayerToken) => Me,
        ("GetView (no seat)", OtherSeatToken | OtherPlayerToken) => Other,
        // Calls about the caller's own seat.
        ("LeaveMatch" | "SetWebhook" | "GetWebhook", Nobody | OtherMatchToken) => unauthenticated,
        ("LeaveMatch" | "SetWebhook" | "GetWebhook", Stranger) => denied,
        ("LeaveMatch" | "SetWebhook" | "GetWebhook", SeatToken | PlayerToken) => Me,
        ("LeaveMatch" | "SetWebhook" | "GetWebhook", OtherSeatToken | OtherPlayerToken) => Other,
        // A rematch is for the holders of a match that is over; the table is under way.
        ("Rematch", Nobody | OtherMatchToken) => unauthenticated,
        ("Rematch", Stranger) => denied,
        ("Rematch", _) => Refused(Code::FailedPrecondition),
        // The inbox is a player's.
        ("ListMyMatches", Stranger) => Spectator,
        ("ListMyMatches", PlayerToken) => Me,
        ("ListMyMatches", OtherPlayerToken) => Other,
        ("ListMyMatches", _) => unauthenticated,
        (rpc, who) => panic!("no expectation for {rpc} by {who:?}"),
    }
}

fn code_of_http(status: reqwest::StatusCode) -> Code {
    match status.as_u16() {
        200 | 201 => Code::Ok,
        400 => Code::InvalidArgument,
        401 => Code::Unauthenticated,
        403 => Code::PermissionDenied,
        404 => Code::NotFound,
        409 => Code::FailedPrecondition,
        other => panic!("unexpected HTTP status {other}"),
    }
}

/// Everything a call may need that the matrix set up.
struct Ctx<'a> {
    app: &'a TestApp,
    client: MissiveClient<Channel>,
    elsewhere: String,
    /// The action `me` plays (the same, under one request id, by every caller).
    action: pb::GameAction,
}

fn json_of<T: serde::Serialize>(message: &T) -> Value {
    serde_json::to_value(message).expect("proto JSON")
}

impl Ctx<'_> {
    async fn http(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        who: &Caller,
    ) -> Result<Value, Code> {
        let mut request = self.app.http.request(method, self.app.url(path));
        if let Some(token) = &who.authorization {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("http");
        let code = code_of_http(response.status());
        if code != Code::Ok {
            return Err(code);
        }
        if response
            .headers()
            .get("content-type")
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"))
        {
            // The first update of the stream.
            let mut stream = response.bytes_stream();
            let mut buffer = String::new();
            while let Some(chunk) = stream.next().await {
                buffer.push_str(&String::from_utf8_lossy(&chunk.expect("chunk")));
                if let Some(end) = buffer.find("\n\n") {
                    let data: String = buffer[..end]
                        .lines()
                        .filter_map(|l| l.strip_prefix("data: "))
                        .collect();
                    return Ok(serde_json::from_str(&data).expect("update JSON"));
                }
            }
            panic!("the stream ended before its first update");
        }
        Ok(response.json().await.expect("json"))
    }

    /// Calls `rpc` on `table` as `who` over `transport`; the answer as JSON.
    async fn call(
        &mut self,
        rpc: &str,
        table: &Table,
        who: Who,
        transport: Transport,
    ) -> Result<Value, Code> {
        let c = caller(who, table, &self.elsewhere);
        match transport {
            Transport::Grpc => self.grpc_call(rpc, table, c.authorization.as_deref()).await,
            Transport::Http => {
                let (method, path, body) = self.http_route(rpc, table);
                self.http(method, &path, body, &c).await
            }
        }
    }

    /// Calls `rpc` on `table` over gRPC with `token`; the answer as JSON.
    async fn grpc_call(
        &mut self,
        rpc: &str,
        table: &Table,
        token: Option<&str>,
    ) -> Result<Value, Code> {
        let id = table.id.clone();
        let me = Some(table.me.seat);
        let client = &mut self.client;
        // One unary call with the caller's token, its answer as JSON.
        macro_rules! unary {
            ($method:ident, $request:expr) => {
                client
                    .$method(maybe_authed($request, token))
                    .await
                    .map(|r| json_of(&r.into_inner()))
                    .map_err(|s| s.code())
            };
        }
        match rpc {
            "CreateMatch" => unary!(create_match, love_letter_options(2)),
            "GetMatch" => unary!(get_match, pb::GetMatchRequest { match_id: id }),
            "ListMatches" => unary!(list_matches, pb::ListMatchesRequest::default()),
            "JoinMatch" => unary!(
                join_match,
                pb::JoinMatchRequest {
                    match_id: id,
                    player: "guest".into(),
                    ..Default::default()
                }
            ),
            "GetView" | "GetView (no seat)" => {
                let seat = if rpc == "GetView" { me } else { None };
                unary!(get_view, pb::GetViewRequest { match_id: id, seat })
            }
            "GetHistory" => unary!(
                get_history,
                pb::GetHistoryRequest {
                    match_id: id,
                    seat: me,
                }
            ),
            "WatchMatch" => {
                let request = pb::WatchMatchRequest {
                    match_id: id,
                    after_version: 0,
                    seat: me,
                };
                match client.watch_match(maybe_authed(request, token)).await {
                    Err(status) => Err(status.code()),
                    Ok(stream) => {
                        let first = stream
                            .into_inner()
                            .message()
                            .await
                            .map_err(|s| s.code())?
                            .expect("a first update");
                        Ok(json_of(&first))
                    }
                }
            }
            "Act" => unary!(
                act,
                pb::ActRequest {
                    match_id: id,
                    action: Some(self.action.clone()),
                    request_id: "matrix-act".into(),
                    expected_version: None,
                    seat: me,
                    ..Default::default()
                }
            ),
            "LeaveMatch" => unary!(
                leave_match,
                pb::LeaveMatchRequest {
                    match_id: id,
                    request_id: String::new(),
                }
            ),
            "SetWebhook" => unary!(
                set_webhook,
                pb::SetWebhookRequest {
                    match_id: id,
                    url: "http://127.0.0.1:9/hook".into(),
                    request_id: String::new(),
                }
            ),
            "GetWebhook" => unary!(get_webhook, pb::GetWebhookRequest { match_id: id }),
            "Rematch" => unary!(rematch, pb::RematchRequest { match_id: id }),
            "ListMyMatches" => unary!(list_my_matches, pb::ListMyMatchesRequest::default()),
            "ListGames" => unary!(list_games, pb::ListGamesRequest::default()),
            "GetAuditKeys" => unary!(get_audit_keys, pb::GetAuditKeysRequest::default()),
            "CancelMatch" => unary!(
                cancel_match,
                pb::CancelMatchRequest {
                    match_id: id,
                    ..Default::default()
                }
            ),
            rpc => panic!("no call for {rpc}"),
        }
    }

    /// The HTTP method, path and body that call `rpc` on `table`.
    fn http_route(&self, rpc: &str, table: &Table) -> (reqwest::Method, String, Option<Value>) {
        use reqwest::Method;
        let id = &table.id;
        let seat = table.me.seat;
        let matches = |tail: &str| format!("/v1/matches/{id}{tail}");
        match rpc {
            "CreateMatch" => (
                Method::POST,
                "/v1/matches".into(),
                Some(json_of(&love_letter_options(2))),
            ),
            "GetMatch" => (Method::GET, matches(""), None),
            "ListMatches" => (Method::GET, "/v1/matches".into(), None),
            "JoinMatch" => (
                Method::POST,
                matches("/join"),
                Some(json!({ "player": "guest" })),
            ),
            "GetView" => (Method::GET, matches(&format!("/view?seat={seat}")), None),
            "GetView (no seat)" => (Method::GET, matches("/view"), None),
            "GetHistory" => (Method::GET, matches(&format!("/history?seat={seat}")), None),
            "WatchMatch" => (Method::GET, matches(&format!("/watch?seat={seat}")), None),
            "Act" => {
                let body = json!({
                    "action": json_of(&self.action),
                    "requestId": "matrix-act",
                    "seat": seat,
                });
                (Method::POST, matches("/act"), Some(body))
            }
            "LeaveMatch" => (Method::POST, matches("/leave"), Some(json!({}))),
            "SetWebhook" => (
                Method::PUT,
                matches("/webhook"),
                Some(json!({ "url": "http://127.0.0.1:9/hook" })),
            ),
            "GetWebhook" => (Method::GET, matches("/webhook"), None),
            "Rematch" => (Method::POST, matches("/rematch"), Some(json!({}))),
            "ListMyMatches" => (Method::GET, "/v1/me/matches".into(), None),
            "ListGames" => (Method::GET, "/v1/games".into(), None),
            "GetAuditKeys" => (Method::GET, "/v1/audit/keys".into(), None),
            "CancelMatch" => (Method::POST, matches("/cancel"), Some(json!({}))),
            rpc => panic!("no call for {rpc}"),
        }
    }

    /// The view of `seat` (a spectator's with `None`), read with its seat token.
    async fn reference_view(&mut self, table: &Table, seat: Option<&Seat>) -> Value {
        let view =
            crate::helpers::view(&mut self.client, &table.id, seat.map(|s| s.token.as_str())).await;
        json_of(&view)
    }
}

/// The `seat` a view-bearing answer was served for, if it has one.
fn served_seat(rpc: &str, body: &Value) -> Option<Option<u64>> {
    let view = match rpc {
        "GetView" | "GetView (no seat)" | "WatchMatch" | "Act" => &body["view"],
        _ => return None,
    };
    Some(view.get("seat").and_then(Value::as_u64))
}

/// Checks one answer against the matrix, and that it shows no token it should not.
async fn check(
    ctx: &mut Ctx<'_>,
    rpc: &str,
    table: &Table,
    who: Who,
    transport: Transport,
    answer: Result<Value, Code>,
) {
    let expect = expected(rpc, who);
    let label = format!("{rpc} by {who:?} over {transport:?}");
    let body = match (expect, answer) {
        (Expect::Refused(code), Err(got)) => {
            assert_eq!(got, code, "{label}");
            return;
        }
        (Expect::Refused(code), Ok(body)) => panic!("{label}: expected {code:?}, got {body}"),
        (_, Err(code)) => panic!("{label}: expected success, got {code:?}"),
        (_, Ok(body)) => body,
    };
    // No answer carries a seat token of the table (a join's own new token aside).
    let text = body.to_string();
    for token in [&table.me.token, &table.other.token, &ctx.elsewhere] {
        assert!(!text.contains(token.as_str()), "{label} leaks a seat token");
    }
    // Whose view was served, and that it is exactly that viewer's view.
    if let Some(served) = served_seat(rpc, &body) {
        let (want, seat) = match expect {
            Expect::Me => (Some(u64::from(table.me.seat)), Some(&table.me)),
            Expect::Other => (Some(u64::from(table.other.seat)), Some(&table.other)),
            _ => (None, None),
        };
        assert_eq!(served, want, "{label} serves the wrong seat");
        if rpc.starts_with("GetView") {
            let seat = seat.cloned();
            let reference = ctx.reference_view(table, seat.as_ref()).await;
            assert_eq!(
                body["view"], reference,
                "{label}: not the viewer's own view"
            );
        }
    }
    if rpc == "GetHistory" {
        // A seat's history holds its own cards: the reference is the seat token's.
        let reference = ctx
            .client
            .get_history(authed(
                pb::GetHistoryRequest {
                    match_id: table.id.clone(),
                    seat: Some(table.me.seat),
                },
                &table.me.token,
            ))
            .await
            .expect("reference history")
            .into_inner();
        assert_eq!(body["entries"], json_of(&reference)["entries"], "{label}");
    }
    if rpc == "ListMyMatches" {
        let matches = body["matches"].as_array().cloned().unwrap_or_default();
        let listed: BTreeMap<String, u64> = matches
            .iter()
            .map(|m| {
                (
                    m["match"]["matchId"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    m["seat"].as_u64().unwrap_or(u64::MAX),
                )
            })
            .collect();
        match expect {
            Expect::Spectator => assert!(!listed.contains_key(&table.id), "{label}: {body}"),
            Expect::Me => assert_eq!(listed.get(&table.id), Some(&u64::from(table.me.seat))),
            Expect::Other => {
                assert_eq!(listed.get(&table.id), Some(&u64::from(table.other.seat)))
            }
            _ => {}
        }
    }
}

/// Reads and the act on one match; the act is the same request each time it is allowed, so
/// it is applied once and answered as a retry after.
const SHARED: [&str; 15] = [
    "CreateMatch",
    "GetMatch",
    "ListMatches",
    "GetView",
    "GetView (no seat)",
    "GetHistory",
    "WatchMatch",
    "SetWebhook",
    "GetWebhook",
    "ListMyMatches",
    "Rematch",
    "ListGames",
    "GetAuditKeys",
    "CancelMatch",
    "Act",
];

/// Calls that change the match: each caller gets a match of its own.
const CHANGING: [&str; 2] = ["JoinMatch", "LeaveMatch"];

/// RPCs the matrix leaves to a suite of their own, and why.
const ELSEWHERE: [(&str, &str); 1] = [(
    "Play",
    "a bidirectional stream of acts and updates: a spectator's act and an act for a seat the \
     token does not hold are refused on it by tests/api/play.rs \
     (a_play_stream_refuses_what_act_refuses_and_stays_open)",
)];

#[test]
fn the_matrix_covers_every_rpc_of_the_service() {
    use prost::Message;
    let set = prost_types::FileDescriptorSet::decode(missive_proto::FILE_DESCRIPTOR_SET)
        .expect("the schema's descriptor set");
    let rpcs: std::collections::BTreeSet<String> = set
        .file
        .iter()
        .flat_map(|f| &f.service)
        .filter(|s| s.name() == "Missive")
        .flat_map(|s| &s.method)
        .map(|m| m.name().to_owned())
        .collect();
    let covered: std::collections::BTreeSet<String> = SHARED
        .iter()
        .chain(&CHANGING)
        .chain(ELSEWHERE.iter().map(|(rpc, _)| rpc))
        .map(|name| name.split(' ').next().unwrap_or_default().to_owned())
        .collect();
    let missing: Vec<_> = rpcs.difference(&covered).collect();
    assert!(
        missing.is_empty(),
        "RPCs the matrix does not call: {missing:?}"
    );
    let stale: Vec<_> = covered.difference(&rpcs).collect();
    assert!(
        stale.is_empty(),
        "the matrix names RPCs the service lacks: {stale:?}"
    );
}

#[tokio::test]
async fn every_rpc_on_both_transports_answers_each_caller_as_the_matrix_says() {
    let app = spawn_with_players(crate::helpers::Backend::Sqlite).await;
    let mut client = app.grpc().await;
    let main = table(&mut client).await;
    let elsewhere = table(&mut client).await.me.token;
    let my_view = crate::helpers::seat_view(&mut client, &main.id, &main.me.token).await;
    let action = my_view.legal_actions[0].clone();
    let before = my_view.version;
    let mut ctx = Ctx {
        app: &app,
        client,
        elsewhere,
        action,
    };
    for transport in [Transport::Grpc, Transport::Http] {
        for rpc in SHARED {
            for who in EVERYONE {
                let answer = ctx.call(rpc, &main, who, transport).await;
                check(&mut ctx, rpc, &main, who, transport, answer).await;
            }
        }
        // Joins and leaves change the match: each caller gets a match of its own.
        for rpc in CHANGING {
            for who in EVERYONE {
                let mut fresh = table(&mut ctx.client).await;
                if rpc == "JoinMatch" {
                    // An open match with a free seat: the table's players hold seats
                    // elsewhere (in `fresh`'s sibling), so a player token may join.
                    fresh.id = open_love_letter(&mut ctx.client, 2).await;
                }
                let answer = ctx.call(rpc, &fresh, who, transport).await;
                check(&mut ctx, rpc, &fresh, who, transport, answer.clone()).await;
                if let (Ok(body), Expect::Me | Expect::Other) = (&answer, expected(rpc, who)) {
                    // A leave abandons the match.
                    assert_eq!(body["match"]["status"], "MATCH_STATUS_ABANDONED", "{body}");
                }
            }
        }
    }
    // The act was applied exactly once: one event more than before the matrix.
    let after = crate::helpers::get_match(&mut ctx.client, &main.id).await;
    assert_eq!(after.version, before + 1);
}
