//! What every request is checked against before anything reaches the store: the length and
//! characters of each string, the range of each number. A request outside them is refused
//! with INVALID_ARGUMENT (HTTP 400) naming the field, and changes nothing. docs/API.md lists
//! them.

use crate::error::{ApiError, ApiResult};

/// The longest request id, in characters.
pub const MAX_REQUEST_ID: usize = 128;
/// The shortest request id a join accepts: it entitles a retry to the seat token, so it must
/// be hard to guess.
pub const MIN_JOIN_REQUEST_ID: usize = 16;
/// The longest player name, in characters.
pub const MAX_PLAYER_NAME: usize = 64;
/// The longest turn timeout (and reminder): 30 days.
pub const MAX_TURN_SECS: u32 = 30 * 24 * 60 * 60;
/// The longest game kind in a list filter.
pub const MAX_KIND: usize = 64;
/// The longest page token.
pub const MAX_PAGE_TOKEN: usize = 64;
/// The longest bot strategy name.
pub const MAX_STRATEGY: usize = 32;
/// The most of a refused value an error message repeats, in characters.
pub const MAX_SHOWN: usize = 40;
/// The page size of ListMatches when the request names none, and the largest served.
pub const LIST_MATCHES_DEFAULT: u32 = 50;
pub const LIST_MATCHES_MAX: u32 = 200;
/// The page size of ListMyMatches when the request names none, and the largest served.
pub const MY_MATCHES_DEFAULT: u32 = 20;
pub const MY_MATCHES_MAX: u32 = 100;
/// The most deliveries GetWebhook lists.
pub const RECENT_DELIVERIES: u32 = 50;
/// Request ids the server gives its own moves, the joins it stores and the rematches it
/// creates; refused from clients.
pub const SERVER_REQUEST_PREFIXES: [&str; 4] = ["bot:", "timeout:", "join:", "rematch:"];
/// The longest invite code accepted (codes are 32 hex digits).
pub const MAX_INVITE_CODE: usize = 64;

/// A request id: 1 to [`MAX_REQUEST_ID`] visible ASCII characters (`!` to `~`, no spaces),
/// not starting with a prefix the server keeps for itself.
pub fn request_id(field: &str, id: &str, min: usize) -> ApiResult<()> {
    let len = id.len();
    if len < min.max(1) || len > MAX_REQUEST_ID || !id.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ApiError::invalid(format!(
            "{field} must be {} to {MAX_REQUEST_ID} visible ASCII characters (no spaces)",
            min.max(1)
        )));
    }
    if let Some(prefix) = SERVER_REQUEST_PREFIXES.iter().find(|p| id.starts_with(*p)) {
        return Err(ApiError::invalid(format!(
            "{field}s starting with `{prefix}` are the server's own"
        )));
    }
    Ok(())
}

/// An optional request id: `None` when empty, else checked as [`request_id`].
pub fn optional_request_id<'a>(field: &str, id: &'a str, min: usize) -> ApiResult<Option<&'a str>> {
    if id.is_empty() {
        return Ok(None);
    }
    request_id(field, id, min)?;
    Ok(Some(id))
}

/// Text of at most `max` characters with no control characters (NUL among them).
pub fn text(field: &str, value: &str, max: usize) -> ApiResult<()> {
    if value.chars().count() > max {
        return Err(ApiError::invalid(format!(
            "{field} is longer than {max} characters"
        )));
    }
    if value.chars().any(char::is_control) {
        return Err(ApiError::invalid(format!(
            "{field} contains a control character"
        )));
    }
    Ok(())
}

/// A refused value as an error message repeats it: at most [`MAX_SHOWN`] characters, then `…`
/// (a request of many kilobytes is not sent back whole), quoted and escaped.
pub fn shown(value: &str) -> String {
    if value.chars().count() <= MAX_SHOWN {
        return format!("{value:?}");
    }
    let cut: String = value.chars().take(MAX_SHOWN).collect();
    format!("{cut:?}…")
}

/// A number of seconds from 1 to [`MAX_TURN_SECS`].
pub fn turn_secs(field: &str, secs: Option<u32>) -> ApiResult<()> {
    match secs {
        Some(s) if s == 0 || s > MAX_TURN_SECS => Err(ApiError::invalid(format!(
            "{field} must be from 1 to {MAX_TURN_SECS} seconds (30 days)"
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(result: ApiResult<()>) -> String {
        match result {
            Err(ApiError::InvalidArgument(message)) => message,
            other => panic!("expected INVALID_ARGUMENT, got {other:?}"),
        }
    }

    #[test]
    fn request_ids_are_visible_ascii_within_bounds() {
        assert!(request_id("requestId", "act-1", 1).is_ok());
        assert!(request_id("requestId", &"x".repeat(MAX_REQUEST_ID), 1).is_ok());
        assert!(request_id("requestId", "6f1c0d9e-4a57-4f0e-9a43-1f5a3c2b7d10", 16).is_ok());
        for bad in [
            "",
            "a\0b",
            "with space",
            "é",
            "tab\t",
            &"x".repeat(MAX_REQUEST_ID + 1),
        ] {
            assert!(
                refused(request_id("requestId", bad, 1)).contains("requestId"),
                "{bad:?}"
            );
        }
        assert!(refused(request_id("requestId", "short", MIN_JOIN_REQUEST_ID)).contains("16"));
        for own in ["bot:3:1", "timeout:3:1", "join:abc", "rematch:abc"] {
            assert!(refused(request_id("requestId", own, 1)).contains("server's own"));
        }
    }

    #[test]
    fn an_empty_request_id_is_no_request_id() {
        assert_eq!(optional_request_id("requestId", "", 16).unwrap(), None);
        assert_eq!(
            optional_request_id("requestId", "r-1", 1).unwrap(),
            Some("r-1")
        );
        assert!(optional_request_id("requestId", "r\u{0}", 1).is_err());
    }

    #[test]
    fn text_refuses_control_characters_and_long_values() {
        assert!(text("player", "Ana María 🂡", MAX_PLAYER_NAME).is_ok());
        assert!(refused(text("player", "a\u{0}b", MAX_PLAYER_NAME)).contains("control"));
        assert!(refused(text("player", "a\nb", MAX_PLAYER_NAME)).contains("control"));
        assert!(refused(text("kind", &"k".repeat(MAX_KIND + 1), MAX_KIND)).contains("longer"));
    }

    #[test]
    fn refused_values_are_repeated_cut_short() {
        assert_eq!(shown("Baron"), "\"Baron\"");
        let long = "x".repeat(10_000);
        let repeated = shown(&long);
        assert!(repeated.len() < MAX_SHOWN + 8, "{repeated}");
        assert!(repeated.ends_with('…'));
    }

    #[test]
    fn turn_seconds_are_bounded_on_both_sides() {
        assert!(turn_secs("turnTimeoutSecs", None).is_ok());
        assert!(turn_secs("turnTimeoutSecs", Some(1)).is_ok());
        assert!(turn_secs("turnTimeoutSecs", Some(MAX_TURN_SECS)).is_ok());
        for bad in [0, MAX_TURN_SECS + 1, 1 << 31, u32::MAX] {
            assert!(refused(turn_secs("turnTimeoutSecs", Some(bad))).contains("turnTimeoutSecs"));
        }
    }
}
