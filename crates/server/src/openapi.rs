//! The OpenAPI 3 document served at `/openapi.json` (filled in below).

/// The document.
pub fn document() -> serde_json::Value {
    serde_json::json!({"openapi": "3.0.3"})
}
