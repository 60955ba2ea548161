//! Seat tokens: 32 random bytes from the OS, shown once as hex, stored only as their SHA-256.

use missive_rules::Viewer;
use missive_store::MatchRecord;
use sha2::{Digest, Sha256};

use crate::error::{ApiError, ApiResult};

/// A fresh token and the hash the store keeps.
pub fn new_token() -> ApiResult<(String, [u8; 32])> {
    let bytes = random_bytes()?;
    Ok((hex::encode(bytes), Sha256::digest(bytes).into()))
}

/// 32 bytes from the operating system's generator.
pub fn random_bytes() -> ApiResult<[u8; 32]> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| ApiError::internal(format!("OS randomness: {e}")))?;
    Ok(bytes)
}

/// The token from an `authorization` header value (`Bearer <token>`); `None` when absent.
pub fn bearer(header: Option<&str>) -> ApiResult<Option<String>> {
    let Some(value) = header else { return Ok(None) };
    let token = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .ok_or_else(|| {
            ApiError::Unauthenticated(
                "the authorization header must be `Bearer <seat token>`".into(),
            )
        })?;
    Ok(Some(token.trim().to_owned()))
}

/// Who the caller is in `record`: the token's seat, or a spectator when there is no token
/// and none is required. `wanted` is the seat the request names, if any.
pub fn viewer(
    record: &MatchRecord,
    token: Option<&str>,
    wanted: Option<u32>,
    required: bool,
) -> ApiResult<Viewer> {
    let Some(token) = token else {
        if required || wanted.is_some() {
            return Err(ApiError::Unauthenticated(
                "a seat token is required: authorization: Bearer <seat token>".into(),
            ));
        }
        return Ok(Viewer::Spectator);
    };
    let invalid = || ApiError::Unauthenticated("the seat token is not valid for this match".into());
    let raw: [u8; 32] = hex::decode(token)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(invalid)?;
    let hash: [u8; 32] = Sha256::digest(raw).into();
    let seat = record
        .seats
        .iter()
        .find(|s| s.token_hash.is_some_and(|h| constant_time_eq(&h, &hash)))
        .map(|s| s.seat)
        .ok_or_else(invalid)?;
    if let Some(wanted) = wanted
        && wanted != u32::from(seat)
    {
        return Err(ApiError::PermissionDenied(format!(
            "this token is for seat {seat}, not seat {wanted}"
        )));
    }
    Ok(Viewer::Seat(seat))
}

fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
