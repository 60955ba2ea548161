//! The OpenAPI 3 document served at `/openapi.json`, built from the same file descriptor set
//! the proto crate is generated from, so its schemas are the proto3 JSON mapping of exactly the
//! messages the server accepts and returns: camelCase field names, enums as their names,
//! 64-bit integers as strings, `Timestamp` as RFC 3339.
//!
//! Responses carry every field that is not a message, a proto3 `optional` or a oneof member,
//! zero values included: a response-only schema lists those fields as `required`; a message a
//! request may also carry (where they may be left out) names them in `x-always-present`.

use std::sync::OnceLock;

use prost::Message;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorSet};
use serde_json::{Map, Value, json};

use crate::routes::{ROUTES, Route};

const PACKAGE: &str = "missive.v1";

fn schema_ref(full_name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{}", full_name.trim_start_matches('.')) })
}

fn field_schema(field: &FieldDescriptorProto) -> Value {
    let scalar = match field.r#type() {
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
            json!({ "type": "string", "format": "int64" })
        }
        Type::Uint64 | Type::Fixed64 => json!({ "type": "string", "format": "uint64" }),
        Type::Double | Type::Float => json!({ "type": "number" }),
        Type::Bytes => json!({ "type": "string", "format": "byte" }),
        Type::Enum => schema_ref(field.type_name()),
        Type::Message if field.type_name() == ".google.protobuf.Timestamp" => {
            json!({ "type": "string", "format": "date-time" })
        }
        Type::Message | Type::Group => schema_ref(field.type_name()),
    };
    if field.label() == Label::Repeated {
        json!({ "type": "array", "items": scalar })
    } else {
        scalar
    }
}

/// Whether a response always carries the field: the JSON mapping emits every field with its
/// default value except messages, proto3 `optional`s and oneof members, which it emits when set.
fn always_present(field: &FieldDescriptorProto) -> bool {
    field.label() == Label::Repeated
        || (field.oneof_index.is_none() && !matches!(field.r#type(), Type::Message | Type::Group))
}

fn message_schema(message: &DescriptorProto, in_requests: bool) -> Value {
    let mut properties = Map::new();
    for field in &message.field {
        properties.insert(field.json_name().to_owned(), field_schema(field));
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
    // Real oneofs (not proto3 `optional`): at most one of their fields may be set.
    let oneofs: Vec<String> = message
        .oneof_decl
        .iter()
        .enumerate()
        .filter(|(i, _)| {
            message
                .field
                .iter()
                .any(|f| f.oneof_index == Some(*i as i32) && !f.proto3_optional())
        })
        .map(|(i, oneof)| {
            let fields: Vec<&str> = message
                .field
                .iter()
                .filter(|f| f.oneof_index == Some(i as i32))
                .map(|f| f.json_name())
                .collect();
            format!("`{}`: at most one of {}", oneof.name(), fields.join(", "))
        })
        .collect();
    if !oneofs.is_empty() {
        schema["description"] = Value::String(oneofs.join("; "));
    }
    schema
}

/// The full names (`.missive.v1.X`) of the messages a request may carry: every RPC's input
/// and, transitively, the messages of their fields.
fn request_messages(set: &FileDescriptorSet) -> std::collections::HashSet<String> {
    let messages: std::collections::HashMap<String, &DescriptorProto> = set
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
    let mut seen = std::collections::HashSet::new();
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

fn schemas() -> Map<String, Value> {
    let set = FileDescriptorSet::decode(missive_proto::FILE_DESCRIPTOR_SET)
        .expect("the descriptor set compiled into the binary decodes");
    let in_requests = request_messages(&set);
    let mut schemas = Map::new();
    for file in set.file.iter().filter(|f| f.package() == PACKAGE) {
        for message in &file.message_type {
            let full_name = format!("{PACKAGE}.{}", message.name());
            let schema = message_schema(message, in_requests.contains(&format!(".{full_name}")));
            schemas.insert(full_name, schema);
        }
        for enumeration in &file.enum_type {
            let names: Vec<&str> = enumeration.value.iter().map(|v| v.name()).collect();
            schemas.insert(
                format!("{PACKAGE}.{}", enumeration.name()),
                json!({ "type": "string", "enum": names }),
            );
        }
    }
    schemas.insert(
        "Error".into(),
        json!({
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": { "type": "string", "description": "The gRPC code name, e.g. FAILED_PRECONDITION." },
                "message": { "type": "string" },
                "rule": { "type": "string", "description": "For refused actions: the rule's stable code, e.g. not-your-turn." }
            }
        }),
    );
    schemas
}

fn error_responses() -> Value {
    let error = json!({ "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } });
    let mut responses = Map::new();
    for (code, text) in [
        ("400", "Bad input (INVALID_ARGUMENT)"),
        ("401", "Missing or invalid seat token (UNAUTHENTICATED)"),
        (
            "403",
            "The token's seat may not do this (PERMISSION_DENIED)",
        ),
        ("404", "No such match (NOT_FOUND)"),
        (
            "409",
            "Refused by the rules or the match's state (FAILED_PRECONDITION, with `rule`), or a stale expectedVersion (ABORTED)",
        ),
        ("413", "Body too large (RESOURCE_EXHAUSTED)"),
        ("503", "Store unavailable (UNAVAILABLE)"),
    ] {
        let mut response = error.clone();
        response["description"] = Value::String(text.into());
        responses.insert(code.into(), response);
    }
    Value::Object(responses)
}

fn operation(
    id: &str,
    summary: &str,
    request: Option<&str>,
    response: &str,
    success: &str,
    parameters: &[Value],
    authed: bool,
) -> Value {
    let mut responses = error_responses();
    responses[success] = json!({
        "description": "OK",
        "content": { "application/json": { "schema": schema_ref(&format!("{PACKAGE}.{response}")) } }
    });
    let mut op = json!({
        "operationId": id,
        "summary": summary,
        "parameters": parameters,
        "responses": responses,
    });
    if let Some(request) = request {
        op["requestBody"] = json!({
            "required": false,
            "content": { "application/json": { "schema": schema_ref(&format!("{PACKAGE}.{request}")) } }
        });
    }
    if authed {
        op["security"] = json!([{ "seatToken": [] }, {}]);
    }
    op
}

fn path_id() -> Value {
    json!({ "name": "matchId", "in": "path", "required": true, "schema": { "type": "string", "format": "uuid" } })
}

fn query(name: &str, schema: Value, description: &str) -> Value {
    json!({ "name": name, "in": "query", "required": false, "schema": schema, "description": description })
}

/// `(input, output)` message of each RPC of the `Missive` service, by name.
fn rpcs() -> std::collections::HashMap<String, (String, String)> {
    let set = FileDescriptorSet::decode(missive_proto::FILE_DESCRIPTOR_SET)
        .expect("the descriptor set compiled into the binary decodes");
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

/// One route of the table as an OpenAPI operation.
fn route_operation(
    route: &Route,
    rpcs: &std::collections::HashMap<String, (String, String)>,
) -> Value {
    let (input, output) = &rpcs[route.rpc];
    let mut parameters = Vec::new();
    if route.path.contains("{id}") {
        parameters.push(path_id());
    }
    for param in route.query {
        let schema = match (param.name, param.kind) {
            ("status", _) => schema_ref(&format!("{PACKAGE}.MatchStatus")),
            (_, "integer") => json!({ "type": "integer", "minimum": 0 }),
            (_, kind) => json!({ "type": kind }),
        };
        parameters.push(query(param.name, schema, param.about));
    }
    let mut op = operation(
        route.operation,
        route.summary,
        route.body.then_some(input.as_str()),
        output,
        &route.success.to_string(),
        &parameters,
        route.authed,
    );
    if route.stream {
        op["responses"]["200"] = json!({
            "description": "A text/event-stream: each `update` event has the version as its id and a WatchMatchResponse (JSON) as its data; an `error` event carries an Error and ends the stream. The stream ends after the match's last update.",
            "content": { "text/event-stream": { "schema": { "type": "string" } } }
        });
    }
    op
}

fn build() -> Value {
    let rpcs = rpcs();
    let mut paths = Map::new();
    for route in ROUTES {
        let path = route.path.replace("{id}", "{matchId}");
        let entry = paths.entry(path).or_insert_with(|| json!({}));
        entry[route.method.openapi()] = route_operation(route, &rpcs);
    }
    paths.insert(
        "/healthz".into(),
        json!({ "get": { "operationId": "Health", "responses": { "200": { "description": "Serving" }, "503": { "description": "Store unavailable" } } } }),
    );
    paths.insert(
        "/metrics".into(),
        json!({ "get": { "operationId": "Metrics", "responses": { "200": { "description": "Prometheus text format", "content": { "text/plain": { "schema": { "type": "string" } } } } } } }),
    );
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "Missive",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Asynchronous turn-based games. Bodies are the canonical proto3 JSON mapping of the missive.v1 messages; the same operations are served over gRPC."
        },
        "components": {
            "securitySchemes": {
                "seatToken": { "type": "http", "scheme": "bearer", "description": "The seatToken returned by JoinMatch." }
            },
            "schemas": schemas()
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
mod tests {
    use super::*;

    #[test]
    fn every_schema_reference_resolves() {
        let doc = document();
        let text = doc.to_string();
        let schemas = doc["components"]["schemas"].as_object().expect("schemas");
        for part in text.split("#/components/schemas/").skip(1) {
            let name = &part[..part.find('"').expect("closing quote")];
            assert!(
                schemas.contains_key(name),
                "{name} is referenced but not defined"
            );
        }
    }

    #[test]
    fn every_route_of_the_table_is_documented_with_its_rpcs_messages() {
        let paths = &document()["paths"];
        for route in ROUTES {
            let op = &paths[route.path.replace("{id}", "{matchId}")][route.method.openapi()];
            assert_eq!(op["operationId"], route.operation, "{route:?}");
        }
        let join = &paths["/v1/matches/{matchId}/join"]["post"];
        assert_eq!(
            join["requestBody"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/missive.v1.JoinMatchRequest"
        );
        assert_eq!(
            join["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/missive.v1.JoinMatchResponse"
        );
        let watch = &paths["/v1/matches/{matchId}/watch"]["get"];
        assert!(watch["responses"]["200"]["content"]["text/event-stream"].is_object());
    }

    #[test]
    fn field_names_follow_the_proto3_json_mapping() {
        let act = &document()["components"]["schemas"]["missive.v1.ActRequest"]["properties"];
        assert_eq!(act["requestId"]["type"], "string");
        assert_eq!(act["expectedVersion"]["format"], "uint64");
        assert!(act.get("request_id").is_none());
    }

    #[test]
    fn responses_mark_the_fields_they_always_carry() {
        let schemas = &document()["components"]["schemas"];
        // A response-only message: its scalars are required, its message fields are not.
        let join = &schemas["missive.v1.JoinMatchResponse"];
        let required: Vec<&str> = join["required"]
            .as_array()
            .expect("JoinMatchResponse lists its required fields")
            .iter()
            .map(|v| v.as_str().expect("a field name"))
            .collect();
        assert!(required.contains(&"seat"), "{required:?}");
        assert!(!required.contains(&"match"), "{required:?}");
        // A request may leave its fields out: nothing is required of it.
        let act = &schemas["missive.v1.ActRequest"];
        assert!(act.get("required").is_none());
        assert!(
            act["x-always-present"]
                .as_array()
                .expect("listed")
                .contains(&json!("requestId"))
        );
    }
}
