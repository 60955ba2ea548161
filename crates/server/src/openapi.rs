//! The OpenAPI 3.1 document served at `/openapi.json`, built from the same file descriptor set
//! the proto crate is generated from, so its schemas are the proto3 JSON mapping of exactly the
//! messages the server accepts and returns: camelCase field names, enums as their names,
//! 64-bit integers as strings, `Timestamp` as RFC 3339.
//!
//! Every description comes from the proto's comments (the descriptor set keeps its source
//! info; a schema test holds every RPC, message, field and enum to having one). The limits a
//! request is checked against (`limits.rs`) are its schemas' constraints, from the same
//! constants; each operation lists every status the server may answer it with (`error.rs`),
//! and the tokens it reads (`routes.rs`).
//!
//! Responses carry every field that is not a message, a proto3 `optional` or a oneof member,
//! zero values included: a response-only schema lists those fields as `required`; a message a
//! request may also carry (where they may be left out) names them in `x-always-present`.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use prost::Message;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorSet};
use serde_json::{Map, Value, json};

use crate::limits;
use crate::routes::{ROUTES, Route, Token};

const PACKAGE: &str = "missive.v1";

/// `SourceCodeInfo` path numbers, as `descriptor.proto` numbers its fields.
mod path {
    pub(super) const FILE_MESSAGE: i32 = 4;
    pub(super) const FILE_ENUM: i32 = 5;
    pub(super) const FILE_SERVICE: i32 = 6;
    pub(super) const MESSAGE_FIELD: i32 = 2;
    pub(super) const ENUM_VALUE: i32 = 2;
    pub(super) const SERVICE_METHOD: i32 = 2;
}

/// The proto's comments, by full name without the leading dot: `missive.v1.Message`,
/// `missive.v1.Message.field`, `missive.v1.Enum`, `missive.v1.Enum.VALUE`,
/// `missive.v1.Service.Method`.
struct Comments(HashMap<String, String>);

impl Comments {
    fn of(set: &FileDescriptorSet) -> Self {
        let mut out = HashMap::new();
        for file in set.file.iter().filter(|f| f.package() == PACKAGE) {
            let Some(info) = &file.source_code_info else {
                continue;
            };
            let by_path: HashMap<&[i32], &str> = info
                .location
                .iter()
                .filter_map(|l| {
                    let text = l
                        .leading_comments
                        .as_deref()
                        .filter(|c| !c.trim().is_empty())
                        .or(l.trailing_comments.as_deref())?;
                    Some((l.path.as_slice(), text))
                })
                .collect();
            let mut put = |name: String, at: &[i32]| {
                if let Some(text) = by_path.get(at) {
                    out.insert(name, unwrap_comment(text));
                }
            };
            for (i, m) in file.message_type.iter().enumerate() {
                let name = format!("{PACKAGE}.{}", m.name());
                let at = [path::FILE_MESSAGE, i as i32];
                put(name.clone(), &at);
                for (j, f) in m.field.iter().enumerate() {
                    put(
                        format!("{name}.{}", f.name()),
                        &[at[0], at[1], path::MESSAGE_FIELD, j as i32],
                    );
                }
            }
            for (i, e) in file.enum_type.iter().enumerate() {
                let name = format!("{PACKAGE}.{}", e.name());
                let at = [path::FILE_ENUM, i as i32];
                put(name.clone(), &at);
                for (j, v) in e.value.iter().enumerate() {
                    put(
                        format!("{name}.{}", v.name()),
                        &[at[0], at[1], path::ENUM_VALUE, j as i32],
                    );
                }
            }
            for (i, s) in file.service.iter().enumerate() {
                for (j, m) in s.method.iter().enumerate() {
                    put(
                        format!("{PACKAGE}.{}.{}", s.name(), m.name()),
                        &[path::FILE_SERVICE, i as i32, path::SERVICE_METHOD, j as i32],
                    );
                }
            }
        }
        Comments(out)
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }
}

/// A proto comment as Markdown: its lines joined into paragraphs, list items and blank lines
/// kept.
fn unwrap_comment(text: &str) -> String {
    let mut out = String::new();
    for line in text.trim().lines().map(str::trim) {
        if out.is_empty() {
            out.push_str(line);
        } else if line.is_empty() || line.starts_with("- ") || out.ends_with('\n') {
            out.push('\n');
            out.push_str(line);
        } else {
            out.push(' ');
            out.push_str(line);
        }
    }
    out
}

fn schema_ref(full_name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{}", full_name.trim_start_matches('.')) })
}

/// The no-control-characters rule of [`limits::text`] (`char::is_control`: C0, DEL and C1).
const NO_CONTROL: &str = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$";

/// A request id of at least `min` characters, or none: visible ASCII, not starting with a
/// prefix the server keeps (`limits::request_id`).
fn request_id_pattern(min: usize) -> String {
    let prefixes: Vec<&str> = limits::SERVER_REQUEST_PREFIXES
        .iter()
        .map(|p| p.trim_end_matches(':'))
        .collect();
    format!(
        "^(?!({}):)([!-~]{{{min},{}}})?$",
        prefixes.join("|"),
        limits::MAX_REQUEST_ID
    )
}

/// The checks `limits.rs` (and the services) run on a request field, as schema keywords.
fn constraints(message: &str, field: &str) -> Option<Value> {
    let request_id =
        || json!({ "maxLength": limits::MAX_REQUEST_ID, "pattern": request_id_pattern(1) });
    let nonce = json!({ "maxLength": crate::deal::MAX_NONCE, "pattern": "^[!-~]*$" });
    let seconds = json!({ "minimum": 1, "maximum": limits::MAX_TURN_SECS });
    Some(match (message, field) {
        ("JoinMatchRequest", "request_id") => json!({
            "maxLength": limits::MAX_REQUEST_ID,
            "pattern": request_id_pattern(limits::MIN_JOIN_REQUEST_ID),
        }),
        ("ActRequest", "request_id") => {
            let mut id = request_id();
            id["minLength"] = json!(1);
            id
        }
        (_, "request_id") => request_id(),
        (_, "match_id") => json!({ "format": "uuid" }),
        ("JoinMatchRequest", "player") => {
            json!({ "maxLength": limits::MAX_PLAYER_NAME, "pattern": NO_CONTROL })
        }
        ("JoinMatchRequest" | "BotSeat", "nonce") => nonce,
        ("JoinMatchRequest", "invite_code") | ("CancelMatchRequest", "cancel_token") => {
            json!({ "maxLength": limits::MAX_INVITE_CODE, "pattern": "^[0-9a-f]*$" })
        }
        ("BotSeat", "strategy") => {
            json!({ "maxLength": limits::MAX_STRATEGY, "pattern": NO_CONTROL })
        }
        ("CreateMatchRequest", "turn_timeout_secs") => seconds,
        ("CreateMatchRequest", "turn_reminder_secs") => {
            json!({ "minimum": 1, "maximum": limits::MAX_TURN_SECS - 1 })
        }
        // More is refused as too many; the game decides within (ListGames).
        ("CreateMatchRequest", "seat_count") => json!({ "maximum": u8::MAX }),
        ("CreateMatchRequest", "bots" | "invite_seats") => json!({ "maxItems": u8::MAX }),
        ("SetWebhookRequest", "url") => json!({
            "maxLength": crate::webhooks::MAX_URL,
            "pattern": "^(|https?://[^\\u0000-\\u001f\\u007f-\\u009f]+)$",
        }),
        ("ListMatchesRequest", "kind") => {
            json!({ "maxLength": limits::MAX_KIND, "pattern": NO_CONTROL })
        }
        (_, "page_token") => {
            json!({ "maxLength": limits::MAX_PAGE_TOKEN, "pattern": NO_CONTROL })
        }
        ("ListMatchesResponse", "matches") => json!({ "maxItems": limits::LIST_MATCHES_MAX }),
        ("ListMyMatchesResponse", "matches") => json!({ "maxItems": limits::MY_MATCHES_MAX }),
        ("GetWebhookResponse", "deliveries") => {
            json!({ "maxItems": limits::RECENT_DELIVERIES })
        }
        _ => return None,
    })
}

/// The fields a request must set, though proto3 lets any be left out.
const REQUEST_REQUIRED: &[(&str, &str)] = &[
    ("CreateMatchRequest", "options"),
    ("ActRequest", "action"),
    ("ActRequest", "requestId"),
];

fn scalar_schema(field: &FieldDescriptorProto) -> Value {
    match field.r#type() {
        Type::String => json!({ "type": "string" }),
        Type::Bool => json!({ "type": "boolean" }),
        Type::Int32 | Type::Sint32 | Type::Sfixed32 => {
            json!({ "type": "integer", "format": "int32" })
        }
        Type::Uint32 | Type::Fixed32 => {
            json!({ "type": "integer", "format": "int32", "minimum": 0 })
        }
        // The proto3 JSON mapping writes 64-bit integers as strings (and reads either).
        Type::Int64 | Type::Sint64 | Type::Sfixed64 => {
            json!({ "type": "string", "format": "int64", "pattern": "^-?[0-9]+$" })
        }
        Type::Uint64 | Type::Fixed64 => {
            json!({ "type": "string", "format": "uint64", "pattern": "^[0-9]+$" })
        }
        Type::Double | Type::Float => json!({ "type": "number" }),
        Type::Bytes => json!({ "type": "string", "format": "byte" }),
        Type::Enum => schema_ref(field.type_name()),
        Type::Message if field.type_name() == ".google.protobuf.Timestamp" => {
            json!({ "type": "string", "format": "date-time" })
        }
        Type::Message | Type::Group => schema_ref(field.type_name()),
    }
}

/// A field's schema: its type, its comment, and the constraints requests are checked against.
fn field_schema(message: &str, field: &FieldDescriptorProto, comments: &Comments) -> Value {
    let mut item = scalar_schema(field);
    let mut schema = if field.label() == Label::Repeated {
        json!({ "type": "array", "items": item.take() })
    } else {
        item
    };
    if let Some(Value::Object(extra)) = constraints(message, field.name()) {
        for (key, value) in extra {
            // Constraints on strings and numbers bind the items of a list.
            if schema.get("items").is_some() && key != "maxItems" {
                schema["items"][key] = value;
            } else {
                schema[key] = value;
            }
        }
    }
    if let Some(text) = comments.get(&format!("{PACKAGE}.{message}.{}", field.name())) {
        schema["description"] = Value::String(text.to_owned());
    }
    schema
}

/// Whether a response always carries the field: the JSON mapping emits every field with its
/// default value except messages, proto3 `optional`s and oneof members, which it emits when set.
fn always_present(field: &FieldDescriptorProto) -> bool {
    field.label() == Label::Repeated
        || (field.oneof_index.is_none() && !matches!(field.r#type(), Type::Message | Type::Group))
}

fn message_schema(message: &DescriptorProto, in_requests: bool, comments: &Comments) -> Value {
    let mut properties = Map::new();
    for field in &message.field {
        properties.insert(
            field.json_name().to_owned(),
            field_schema(message.name(), field, comments),
        );
    }
    let mut schema = json!({ "type": "object", "properties": properties });
    let present: Vec<&str> = message
        .field
        .iter()
        .filter(|f| always_present(f))
        .map(|f| f.json_name())
        .collect();
    if !present.is_empty() {
        let key = if in_requests {
            "x-always-present"
        } else {
            "required"
        };
        schema[key] = json!(present);
    }
    let required: Vec<&str> = REQUEST_REQUIRED
        .iter()
        .filter(|(m, _)| *m == message.name())
        .map(|(_, f)| *f)
        .collect();
    if in_requests && !required.is_empty() {
        schema["required"] = json!(required);
    }
    let mut description: Vec<String> = comments
        .get(&format!("{PACKAGE}.{}", message.name()))
        .map(str::to_owned)
        .into_iter()
        .collect();
    // Real oneofs (not proto3 `optional`): at most one of their fields may be set.
    for (i, oneof) in message.oneof_decl.iter().enumerate() {
        let members: Vec<&FieldDescriptorProto> = message
            .field
            .iter()
            .filter(|f| f.oneof_index == Some(i as i32))
            .collect();
        if members.iter().any(|f| f.proto3_optional()) {
            continue;
        }
        let names: Vec<String> = members
            .iter()
            .map(|f| format!("`{}`", f.json_name()))
            .collect();
        description.push(format!(
            "`{}`: at most one of {}.",
            oneof.name(),
            names.join(", ")
        ));
    }
    if !description.is_empty() {
        schema["description"] = Value::String(description.join("\n\n"));
    }
    schema
}

/// An enum as the JSON mapping writes it, its name; the description lists every value with
/// its comment.
fn enum_schema(full_name: &str, values: &[&str], comments: &Comments) -> Value {
    let mut lines: Vec<String> = comments
        .get(full_name)
        .map(str::to_owned)
        .into_iter()
        .collect();
    let listed: Vec<String> = values
        .iter()
        .map(|v| match comments.get(&format!("{full_name}.{v}")) {
            Some(text) => format!("- `{v}`: {}", text.replace('\n', " ")),
            None => format!("- `{v}`"),
        })
        .collect();
    lines.push(listed.join("\n"));
    json!({ "type": "string", "enum": values, "description": lines.join("\n\n") })
}

/// The full names (`.missive.v1.X`) of the messages a request may carry: every RPC's input
/// and, transitively, the messages of their fields.
fn request_messages(set: &FileDescriptorSet) -> HashSet<String> {
    let messages: HashMap<String, &DescriptorProto> = set
        .file
        .iter()
        .flat_map(|f| {
            f.message_type
                .iter()
                .map(move |m| (format!(".{}.{}", f.package(), m.name()), m))
        })
        .collect();
    let mut todo: Vec<String> = set
        .file
        .iter()
        .flat_map(|f| &f.service)
        .flat_map(|s| &s.method)
        .map(|m| m.input_type().to_owned())
        .collect();
    let mut seen = HashSet::new();
    while let Some(name) = todo.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        if let Some(message) = messages.get(&name) {
            todo.extend(
                message
                    .field
                    .iter()
                    .filter(|f| f.r#type() == Type::Message)
                    .map(|f| f.type_name().to_owned()),
            );
        }
    }
    seen
}

fn schemas(set: &FileDescriptorSet, comments: &Comments) -> Map<String, Value> {
    let in_requests = request_messages(set);
    let mut schemas = Map::new();
    for file in set.file.iter().filter(|f| f.package() == PACKAGE) {
        for message in &file.message_type {
            let full_name = format!("{PACKAGE}.{}", message.name());
            let schema = message_schema(
                message,
                in_requests.contains(&format!(".{full_name}")),
                comments,
            );
            schemas.insert(full_name, schema);
        }
        for enumeration in &file.enum_type {
            let full_name = format!("{PACKAGE}.{}", enumeration.name());
            let names: Vec<&str> = enumeration.value.iter().map(|v| v.name()).collect();
            let schema = enum_schema(&full_name, &names, comments);
            schemas.insert(full_name, schema);
        }
    }
    schemas.insert(
        "Error".into(),
        json!({
            "type": "object",
            "description": "The body of every error response (docs/API.md, \"Errors\").",
            "required": ["code", "message"],
            "properties": {
                "code": {
                    "type": "string",
                    "description": "The gRPC code name: INVALID_ARGUMENT, FAILED_PRECONDITION, ABORTED, UNAUTHENTICATED, PERMISSION_DENIED, NOT_FOUND, RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED, UNAVAILABLE, UNIMPLEMENTED or INTERNAL."
                },
                "message": {
                    "type": "string",
                    "description": "What went wrong, for people; never internal detail or hidden cards."
                },
                "rule": {
                    "type": "string",
                    "description": "For refusals (FAILED_PRECONDITION): the broken rule's stable code, e.g. `not-your-turn` or `match-over`, for clients to branch on."
                }
            }
        }),
    );
    schemas
}

/// The answer of a request cut short by the request timeout, which is in front of every route.
const TIMED_OUT: &str = "The request took longer than the server's request timeout (DEADLINE_EXCEEDED); retry it with the same request id.";

/// Every error status an operation may answer, with why. Those of the layers in front of
/// every route (`http.rs`: the player token, the rate limits, the timeout) apply to all.
fn error_statuses(route: &Route) -> Vec<(&'static str, &'static str)> {
    let about_match = route.path.contains("{id}");
    let mut statuses = vec![(
        "400",
        "Bad input (INVALID_ARGUMENT): a field outside its limits, malformed JSON, an unknown field or action, a match id that is not a UUID.",
    )];
    statuses.push((
        "401",
        match route.token {
            _ if !route.authed => {
                "A player token that fails its checks (UNAUTHENTICATED); nothing is changed."
            }
            Token::Player => "No player token, or one that fails its checks (UNAUTHENTICATED).",
            _ => {
                "A token that is not valid for this match, a player token that fails its checks, or none where one is needed (UNAUTHENTICATED)."
            }
        },
    ));
    if route.authed && route.token != Token::Player || route.body {
        statuses.push((
            "403",
            "The caller may not do this (PERMISSION_DENIED): another seat than the token's, an invited seat without its code, a fixed deck on a server that forbids them.",
        ));
    }
    if about_match {
        statuses.push(("404", "No such match (NOT_FOUND)."));
    }
    statuses.push(("408", TIMED_OUT));
    if about_match || route.body {
        statuses.push((
            "409",
            "Refused by the rules or the match's state (FAILED_PRECONDITION, with `rule`), or a stale expectedVersion (ABORTED, without `rule`).",
        ));
    }
    if route.body {
        statuses.push((
            "413",
            "The body is larger than the server accepts (RESOURCE_EXHAUSTED).",
        ));
    }
    statuses.push((
        "429",
        "Over one of the client's limits (RESOURCE_EXHAUSTED): a rate, the open-match cap, the watch-stream caps. The message names the limit; retry after `Retry-After` seconds.",
    ));
    statuses.push((
        "500",
        "A bug on the server (INTERNAL); retrying with the same request id is safe.",
    ));
    statuses.push((
        "503",
        "The store is unavailable, or this server is shutting down (UNAVAILABLE); retry with the same request id, with back-off.",
    ));
    statuses
}

fn error_response(description: &str) -> Value {
    let mut response = json!({
        "description": description,
        "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } }
    });
    if description.contains("Retry-After") {
        response["headers"] = json!({
            "Retry-After": {
                "description": "Whole seconds to wait before trying again, at least 1.",
                "schema": { "type": "integer", "minimum": 1 }
            }
        });
    }
    response
}

/// Who may call an operation, as OpenAPI security requirements (any one of them).
fn security(route: &Route) -> Value {
    match route.token {
        // A player token is read by every call, and identifies the client to the limits.
        _ if !route.authed => json!([{}, { "playerToken": [] }]),
        Token::Optional => json!([{ "seatToken": [] }, { "playerToken": [] }, {}]),
        Token::Seat => json!([{ "seatToken": [] }, { "playerToken": [] }]),
        Token::Player => json!([{ "playerToken": [] }]),
    }
}

fn path_id() -> Value {
    json!({
        "name": "matchId",
        "in": "path",
        "required": true,
        "description": "The match's id.",
        "schema": { "type": "string", "format": "uuid" }
    })
}

/// The RPCs of the `Missive` service, by name: `(input, output)` message names.
fn rpcs(set: &FileDescriptorSet) -> HashMap<String, (String, String)> {
    set.file
        .iter()
        .filter(|f| f.package() == PACKAGE)
        .flat_map(|f| &f.service)
        .filter(|s| s.name() == "Missive")
        .flat_map(|s| &s.method)
        .map(|m| {
            let name = |t: &str| t.trim_start_matches(&format!(".{PACKAGE}.")).to_owned();
            (
                m.name().to_owned(),
                (name(m.input_type()), name(m.output_type())),
            )
        })
        .collect()
}

/// A query parameter's schema: its request field's, a 64-bit number as an integer (a query
/// string has no JSON types).
fn query_schema(field: Option<(&str, &FieldDescriptorProto)>, kind: &str) -> Value {
    let Some((message, field)) = field else {
        return json!({ "type": kind });
    };
    let mut schema = field_schema(message, field, &Comments(HashMap::new()));
    if matches!(field.r#type(), Type::Uint64 | Type::Fixed64) {
        schema = json!({ "type": "integer", "format": "int64", "minimum": 0 });
    }
    schema
}

/// One route of the table as an OpenAPI operation.
fn route_operation(
    route: &Route,
    rpcs: &HashMap<String, (String, String)>,
    messages: &HashMap<String, &DescriptorProto>,
    comments: &Comments,
) -> Value {
    let (input, output) = &rpcs[route.rpc];
    let mut parameters = Vec::new();
    if route.path.contains("{id}") {
        parameters.push(path_id());
    }
    for param in route.query {
        let field = messages
            .get(input)
            .and_then(|m| m.field.iter().find(|f| f.json_name() == param.name))
            .map(|f| (input.as_str(), f));
        parameters.push(json!({
            "name": param.name,
            "in": "query",
            "required": false,
            "description": param.about,
            "schema": query_schema(field, param.kind),
        }));
    }
    let mut responses = Map::new();
    let success = if route.stream {
        json!({
            "description": "A text/event-stream: each `update` event has the version as its id and a WatchMatchResponse (JSON) as its data; an `error` event carries an Error and ends the stream. The stream ends after the match's last update.",
            "content": { "text/event-stream": { "schema": { "type": "string" } } }
        })
    } else {
        json!({
            "description": "OK",
            "content": { "application/json": { "schema": schema_ref(&format!("{PACKAGE}.{output}")) } }
        })
    };
    responses.insert(route.success.to_string(), success);
    for (status, description) in error_statuses(route) {
        responses.insert(status.into(), error_response(description));
    }
    let mut op = json!({
        "operationId": route.operation,
        "summary": route.summary,
        "parameters": parameters,
        "responses": responses,
        "security": security(route),
        "tags": ["Missive"],
    });
    if let Some(text) = comments.get(&format!("{PACKAGE}.Missive.{}", route.rpc)) {
        op["description"] = Value::String(text.to_owned());
    }
    if route.body {
        op["requestBody"] = json!({
            "required": false,
            "description": "An empty body is the empty message; the path's match id fills `matchId`.",
            "content": { "application/json": { "schema": schema_ref(&format!("{PACKAGE}.{input}")) } }
        });
    }
    op
}

fn build() -> Value {
    let set = FileDescriptorSet::decode(missive_proto::FILE_DESCRIPTOR_SET)
        .expect("the descriptor set compiled into the binary decodes");
    let comments = Comments::of(&set);
    let rpcs = rpcs(&set);
    let messages: HashMap<String, &DescriptorProto> = set
        .file
        .iter()
        .filter(|f| f.package() == PACKAGE)
        .flat_map(|f| &f.message_type)
        .map(|m| (m.name().to_owned(), m))
        .collect();
    let mut paths = Map::new();
    for route in ROUTES {
        let path = route.path.replace("{id}", "{matchId}");
        let entry = paths.entry(path).or_insert_with(|| json!({}));
        entry[route.method.openapi()] = route_operation(route, &rpcs, &messages, &comments);
    }
    paths.insert(
        "/healthz".into(),
        json!({ "get": {
            "operationId": "Health",
            "summary": "Whether this server serves: its store answers and it is not shutting down",
            "tags": ["Operations"],
            "security": [{}],
            "responses": {
                "200": { "description": "Serving", "content": { "text/plain": { "schema": { "type": "string" } } } },
                "408": error_response(TIMED_OUT),
                "503": { "description": "The store is unavailable, or the server is shutting down", "content": { "text/plain": { "schema": { "type": "string" } } } }
            }
        } }),
    );
    paths.insert(
        "/metrics".into(),
        json!({ "get": {
            "operationId": "Metrics",
            "summary": "The server's metrics (docs/METRICS.md)",
            "tags": ["Operations"],
            "security": [{}],
            "responses": {
                "200": { "description": "Prometheus text format", "content": { "text/plain": { "schema": { "type": "string" } } } },
                "408": error_response(TIMED_OUT)
            }
        } }),
    );
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Missive",
            "version": env!("CARGO_PKG_VERSION"),
            "license": { "name": env!("CARGO_PKG_LICENSE"), "identifier": env!("CARGO_PKG_LICENSE") },
            "description": concat!(
                "Asynchronous turn-based games. Bodies are the canonical proto3 JSON mapping of ",
                "the missive.v1 messages; the same operations are served over gRPC. ",
                "Errors carry `{code, message, rule?}`; every request is held to the limits its ",
                "schemas state, and to per-client rates (429 with `Retry-After`). ",
                "docs/API.md describes the API in full."
            )
        },
        "servers": [{ "url": "/", "description": "The server that serves this document" }],
        "tags": [
            { "name": "Missive", "description": "Matches: create, join, act, view, watch." },
            { "name": "Operations", "description": "Health and metrics, for operators." }
        ],
        "components": {
            "securitySchemes": {
                "seatToken": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "The seatToken JoinMatch (or Rematch) returned: acts and views as that seat."
                },
                "playerToken": {
                    "type": "http",
                    "scheme": "bearer",
                    "bearerFormat": "JWT",
                    "description": "A JWT the game's backend issued to a signed-in player, on a server configured with its key: acts and views as the seat bound to the player (docs/API.md, \"Players\")."
                }
            },
            "schemas": schemas(&set, &comments)
        },
        "paths": paths,
    })
}

/// The document, built once.
pub fn document() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(build)
}

#[cfg(test)]
mod tests;
