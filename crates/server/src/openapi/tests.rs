//! The document's shape: descriptions, statuses, security and limits, checked on the built document.

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
    // A request may leave its fields out: nothing is required of it, but what the server
    // refuses it without.
    let leave = &schemas["missive.v1.LeaveMatchRequest"];
    assert!(leave.get("required").is_none());
    assert!(
        leave["x-always-present"]
            .as_array()
            .expect("listed")
            .contains(&json!("requestId"))
    );
    let act = &schemas["missive.v1.ActRequest"];
    assert_eq!(act["required"], json!(["action", "requestId"]));
}

#[test]
fn every_operation_schema_property_and_enum_is_described() {
    let doc = document();
    let mut missing = Vec::new();
    for (name, schema) in doc["components"]["schemas"].as_object().expect("schemas") {
        if schema["description"].as_str().is_none_or(str::is_empty) {
            missing.push(name.clone());
        }
        for (field, property) in schema["properties"].as_object().into_iter().flatten() {
            if property["description"].as_str().is_none_or(str::is_empty) {
                missing.push(format!("{name}.{field}"));
            }
        }
    }
    for route in ROUTES {
        let op = &doc["paths"][route.path.replace("{id}", "{matchId}")][route.method.openapi()];
        if op["description"].as_str().is_none_or(str::is_empty) {
            missing.push(route.operation.to_owned());
        }
    }
    assert!(missing.is_empty(), "undescribed: {missing:?}");
    let status = &doc["components"]["schemas"]["missive.v1.MatchStatus"]["description"];
    assert!(
        status
            .as_str()
            .is_some_and(|s| s.contains("- `MATCH_STATUS_OPEN`: Waiting for players to join.")),
        "{status}"
    );
}

#[test]
fn every_operation_declares_the_statuses_of_the_layers_in_front_of_it() {
    let doc = document();
    for route in ROUTES {
        let op = &doc["paths"][route.path.replace("{id}", "{matchId}")][route.method.openapi()];
        for status in ["400", "401", "408", "429", "500", "503"] {
            assert!(
                op["responses"][status]["content"]["application/json"]["schema"]["$ref"]
                    == "#/components/schemas/Error",
                "{} lacks {status}",
                route.operation
            );
        }
        assert!(
            op["responses"]["429"]["headers"]["Retry-After"].is_object(),
            "{}",
            route.operation
        );
        assert_eq!(
            op["responses"]["413"].is_object(),
            route.body,
            "{}",
            route.operation
        );
        assert_eq!(
            op["responses"]["404"].is_object(),
            route.path.contains("{id}"),
            "{}",
            route.operation
        );
    }
}

#[test]
fn operations_name_the_tokens_they_read() {
    let paths = &document()["paths"];
    let security = |path: &str, method: &str| paths[path][method]["security"].clone();
    // Acting needs a seat: by its token, or by the player token bound to it.
    assert_eq!(
        security("/v1/matches/{matchId}/act", "post"),
        json!([{ "seatToken": [] }, { "playerToken": [] }])
    );
    // A spectator may view: no token at all is one of the choices.
    assert!(
        security("/v1/matches/{matchId}/view", "get")
            .as_array()
            .expect("a list")
            .contains(&json!({}))
    );
    assert_eq!(
        security("/v1/me/matches", "get"),
        json!([{ "playerToken": [] }])
    );
    let schemes = &document()["components"]["securitySchemes"];
    assert_eq!(schemes["playerToken"]["bearerFormat"], "JWT");
    assert_eq!(schemes["seatToken"]["scheme"], "bearer");
}

#[test]
fn request_fields_carry_the_limits_the_server_checks() {
    let schemas = &document()["components"]["schemas"];
    let field = |m: &str, f: &str| schemas[format!("missive.v1.{m}")]["properties"][f].clone();
    let act_id = field("ActRequest", "requestId");
    assert_eq!(act_id["maxLength"], limits::MAX_REQUEST_ID);
    assert_eq!(act_id["minLength"], 1);
    let join_id = field("JoinMatchRequest", "requestId");
    assert!(
        join_id["pattern"]
            .as_str()
            .is_some_and(|p| p.contains(&format!("{{{},", limits::MIN_JOIN_REQUEST_ID))),
        "{join_id}"
    );
    assert_eq!(
        field("JoinMatchRequest", "player")["maxLength"],
        limits::MAX_PLAYER_NAME
    );
    assert_eq!(
        field("CreateMatchRequest", "turnTimeoutSecs")["maximum"],
        limits::MAX_TURN_SECS
    );
    assert_eq!(
        field("SetWebhookRequest", "url")["maxLength"],
        crate::webhooks::MAX_URL
    );
    assert_eq!(
        field("ListMatchesResponse", "matches")["maxItems"],
        limits::LIST_MATCHES_MAX
    );
    // A pattern that holds what the checks accept and refuses what they refuse.
    let pattern = request_id_pattern(1);
    assert!(pattern.contains("bot|timeout|join|rematch"), "{pattern}");
    for id in ["act-1", "6f1c0d9e-4a57-4f0e-9a43-1f5a3c2b7d10"] {
        assert!(limits::request_id("requestId", id, 1).is_ok(), "{id}");
    }
}
