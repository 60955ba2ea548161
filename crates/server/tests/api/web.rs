//! What browsers and generic gRPC tools meet: gRPC-Web on the gRPC port (a hand-built
//! `application/grpc-web+proto` POST over plain HTTP/1.1), CORS only when configured, and
//! server reflection in both its versions.

use missive_proto::v1 as pb;
use prost::Message;
use reqwest::StatusCode;
use tokio_stream::StreamExt;

use crate::helpers::{Backend, Options, TestApp, love_letter_options, spawn_app, spawn_app_with};

const ORIGIN: &str = "https://play.example";

/// One gRPC-Web data frame: flag 0, the length (4 bytes, big-endian), the message.
fn frame(message: &impl Message) -> Vec<u8> {
    let body = message.encode_to_vec();
    let mut out = vec![0];
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

/// The frames of a gRPC-Web response body: (flag, payload).
fn frames(mut body: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    while body.len() >= 5 {
        let flag = body[0];
        let len = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
        out.push((flag, body[5..5 + len].to_vec()));
        body = &body[5 + len..];
    }
    assert!(body.is_empty(), "whole frames");
    out
}

/// POSTs `message` to `path` on the gRPC port as a browser's gRPC-Web client would, over
/// HTTP/1.1; returns the response's headers and frames.
async fn grpc_web(
    app: &TestApp,
    path: &str,
    message: &impl Message,
) -> (reqwest::header::HeaderMap, Vec<(u8, Vec<u8>)>) {
    let client = reqwest::Client::builder()
        .http1_only()
        .build()
        .expect("client");
    let response = client
        .post(format!("{}{path}", app.grpc_addr))
        .header("content-type", "application/grpc-web+proto")
        .header("x-grpc-web", "1")
        .header("origin", ORIGIN)
        .body(frame(message))
        .send()
        .await
        .expect("a gRPC-Web answer");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.version(), reqwest::Version::HTTP_11);
    let headers = response.headers().clone();
    assert_eq!(
        headers["content-type"], "application/grpc-web+proto",
        "{headers:?}"
    );
    let body = response.bytes().await.expect("body");
    (headers, frames(&body))
}

#[tokio::test]
async fn a_grpc_web_call_over_http1_gets_its_answer_and_trailers() {
    let app = spawn_app(Backend::Sqlite).await;

    let (_, health) = grpc_web(
        &app,
        "/grpc.health.v1.Health/Check",
        &tonic_health::pb::HealthCheckRequest {
            service: String::new(),
        },
    )
    .await;
    assert_eq!(health.len(), 2, "a message, then the trailers: {health:?}");
    let answer =
        tonic_health::pb::HealthCheckResponse::decode(&health[0].1[..]).expect("a health answer");
    assert_eq!(
        answer.status(),
        tonic_health::pb::health_check_response::ServingStatus::Serving
    );
    assert_eq!(health[1].0, 0x80, "a trailers frame");
    assert!(String::from_utf8_lossy(&health[1].1).contains("grpc-status:0"));

    // The game service itself, through its interceptor.
    let created = app
        .grpc()
        .await
        .create_match(love_letter_options(2))
        .await
        .expect("create")
        .into_inner();
    let id = created.r#match.expect("match").match_id;
    let (headers, got) = grpc_web(
        &app,
        "/missive.v1.Missive/GetMatch",
        &pb::GetMatchRequest {
            match_id: id.clone(),
        },
    )
    .await;
    let answer = pb::GetMatchResponse::decode(&got[0].1[..]).expect("a GetMatch answer");
    assert_eq!(answer.r#match.expect("match").match_id, id);
    assert!(String::from_utf8_lossy(&got[1].1).contains("grpc-status:0"));
    assert!(
        !headers.contains_key("access-control-allow-origin"),
        "no CORS unless configured: {headers:?}"
    );
}

/// A browser's preflight for a cross-origin call of `method` to `url`.
async fn preflight(app: &TestApp, url: &str, origin: &str, method: &str) -> reqwest::Response {
    app.http
        .request(reqwest::Method::OPTIONS, url)
        .header("origin", origin)
        .header("access-control-request-method", method)
        .header(
            "access-control-request-headers",
            "authorization,content-type,x-grpc-web",
        )
        .send()
        .await
        .expect("preflight")
}

fn header(response: &reqwest::Response, name: &str) -> Option<String> {
    response
        .headers()
        .get(name)
        .map(|v| v.to_str().expect("ascii").to_ascii_lowercase())
}

#[tokio::test]
async fn cors_is_off_by_default_and_allows_only_the_configured_origins() {
    let closed = spawn_app(Backend::Sqlite).await;
    for url in [
        closed.url("/v1/matches"),
        format!("{}/missive.v1.Missive/GetMatch", closed.grpc_addr),
    ] {
        let response = preflight(&closed, &url, ORIGIN, "POST").await;
        assert_eq!(
            header(&response, "access-control-allow-origin"),
            None,
            "{url}"
        );
    }

    let open = spawn_app_with(
        Backend::Sqlite,
        Options {
            env: &[(
                "MISSIVE_CORS_ORIGINS",
                "https://play.example,http://localhost:5173",
            )],
            ..Options::default()
        },
    )
    .await;
    for url in [
        open.url("/v1/matches"),
        format!("{}/missive.v1.Missive/GetMatch", open.grpc_addr),
    ] {
        let response = preflight(&open, &url, ORIGIN, "POST").await;
        assert!(
            response.status().is_success(),
            "{url}: {}",
            response.status()
        );
        assert_eq!(
            header(&response, "access-control-allow-origin").as_deref(),
            Some(ORIGIN),
            "{url}"
        );
        let allowed = header(&response, "access-control-allow-headers").unwrap_or_default();
        for name in ["authorization", "content-type", "x-grpc-web"] {
            assert!(allowed.contains(name), "{url}: {allowed}");
        }
        assert!(
            header(&response, "access-control-allow-methods")
                .unwrap_or_default()
                .contains("post"),
            "{url}"
        );
        let response = preflight(&open, &url, "https://elsewhere.example", "POST").await;
        assert_eq!(
            header(&response, "access-control-allow-origin"),
            None,
            "{url}"
        );
    }

    // Real requests carry the header too, and gRPC-Web's status headers are readable.
    let response = open
        .http
        .get(open.url("/v1/matches"))
        .header("origin", "http://localhost:5173")
        .send()
        .await
        .expect("list");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        header(&response, "access-control-allow-origin").as_deref(),
        Some("http://localhost:5173")
    );
    let (headers, _) = grpc_web(
        &open,
        "/grpc.health.v1.Health/Check",
        &tonic_health::pb::HealthCheckRequest::default(),
    )
    .await;
    assert_eq!(headers["access-control-allow-origin"], ORIGIN);
    let exposed = headers["access-control-expose-headers"]
        .to_str()
        .expect("ascii")
        .to_ascii_lowercase();
    assert!(exposed.contains("grpc-status"), "{exposed}");
}

async fn channel(app: &TestApp) -> tonic::transport::Channel {
    tonic::transport::Channel::from_shared(app.grpc_addr.clone())
        .expect("a URI")
        .connect()
        .await
        .expect("connects")
}

#[tokio::test]
async fn reflection_answers_in_v1alpha_as_well_as_v1() {
    let app = spawn_app(Backend::Sqlite).await;
    let expected = [
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
        "missive.v1.Missive",
    ];

    use tonic_reflection::pb::v1alpha as alpha;
    let mut client =
        alpha::server_reflection_client::ServerReflectionClient::new(channel(&app).await);
    let request = |message| alpha::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(message),
    };
    let mut answers = client
        .server_reflection_info(tokio_stream::iter([
            request(alpha::server_reflection_request::MessageRequest::ListServices(String::new())),
            request(
                alpha::server_reflection_request::MessageRequest::FileContainingSymbol(
                    "missive.v1.Missive".into(),
                ),
            ),
        ]))
        .await
        .expect("v1alpha reflection")
        .into_inner();
    let listed = answers.next().await.expect("an answer").expect("ok");
    let Some(alpha::server_reflection_response::MessageResponse::ListServicesResponse(list)) =
        listed.message_response
    else {
        panic!("a service list: {listed:?}");
    };
    let mut names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
    names.sort();
    assert_eq!(names, expected);
    let file = answers.next().await.expect("an answer").expect("ok");
    let Some(alpha::server_reflection_response::MessageResponse::FileDescriptorResponse(files)) =
        file.message_response
    else {
        panic!("the file of the service: {file:?}");
    };
    let names: Vec<String> = files
        .file_descriptor_proto
        .iter()
        .map(|f| {
            prost_types::FileDescriptorProto::decode(&f[..])
                .expect("a file descriptor")
                .name()
                .to_owned()
        })
        .collect();
    assert!(
        names.iter().any(|n| n == "missive/v1/missive.proto"),
        "{names:?}"
    );

    use tonic_reflection::pb::v1;
    let mut client = v1::server_reflection_client::ServerReflectionClient::new(channel(&app).await);
    let mut answers = client
        .server_reflection_info(tokio_stream::iter([v1::ServerReflectionRequest {
            host: String::new(),
            message_request: Some(v1::server_reflection_request::MessageRequest::ListServices(
                String::new(),
            )),
        }]))
        .await
        .expect("v1 reflection")
        .into_inner();
    let listed = answers.next().await.expect("an answer").expect("ok");
    let Some(v1::server_reflection_response::MessageResponse::ListServicesResponse(list)) =
        listed.message_response
    else {
        panic!("a service list: {listed:?}");
    };
    let mut names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
    names.sort();
    assert_eq!(names, expected);
}
