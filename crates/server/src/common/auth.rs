//! Credentials: seat tokens (32 random bytes from the OS, shown once as hex, stored only as
//! their SHA-256) and, where configured, player tokens (JWTs, verified in `identity.rs`).

use missive_rules::Viewer;
use missive_store::{MatchId, MatchRecord};
use sha2::{Digest, Sha256};

use crate::error::{ApiError, ApiResult};
use crate::identity::Player;

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

/// The caller of a request, from the value of its `authorization` header (an HTTP header or
/// gRPC metadata) and the player its player token named, verified before (`identity.rs`): the
/// one place a request's credentials are read. Both transports call it, HTTP through the
/// `Caller` extractor and gRPC through its interceptor.
pub fn caller(authorization: Option<&[u8]>, player: Option<&Player>) -> ApiResult<Caller> {
    if let Some(player) = player {
        return Ok(Caller {
            token: None,
            player: Some(player.clone()),
        });
    }
    let header = authorization
        .map(|value| {
            std::str::from_utf8(value).map_err(|_| {
                ApiError::Unauthenticated("the authorization header is not text".into())
            })
        })
        .transpose()?;
    Ok(Caller {
        token: bearer(header)?.as_deref().map(SeatToken::new),
        player: None,
    })
}

/// A seat token as a request presents it, kept as what seats are recognised by: its SHA-256.
/// It is hashed once per request, and so once for all the acts of a `Play` stream. Not
/// comparable: a seat's hash is matched in constant time ([`viewer`]).
#[derive(Clone)]
pub struct SeatToken {
    /// `None` when the text is not a token at all (64 hex digits), which no seat accepts.
    hash: Option<[u8; 32]>,
}

impl std::fmt::Debug for SeatToken {
    // What a seat is recognised by: never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SeatToken(..)")
    }
}

impl SeatToken {
    pub fn new(text: &str) -> SeatToken {
        let mut raw = [0u8; 32];
        SeatToken {
            hash: hex::decode_to_slice(text, &mut raw)
                .ok()
                .map(|()| Sha256::digest(raw).into()),
        }
    }
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

/// Who the caller is in `record`: the seat of the caller's seat token, or the seat bound to
/// the caller's player, or a spectator when there is neither and none is required. `wanted`
/// is the seat the request names, if any.
pub fn viewer(
    record: &MatchRecord,
    caller: &Caller,
    wanted: Option<u32>,
    required: bool,
) -> ApiResult<Viewer> {
    if let Some(player) = &caller.player {
        return player_seat(record, player, wanted, required);
    }
    let Some(token) = &caller.token else {
        if required || wanted.is_some() {
            return Err(ApiError::Unauthenticated(
                "a seat token is required: authorization: Bearer <seat token>".into(),
            ));
        }
        return Ok(Viewer::Spectator);
    };
    let invalid = || ApiError::Unauthenticated("the seat token is not valid for this match".into());
    let hash = token.hash.ok_or_else(invalid)?;
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

/// The seat bound to `player` in `record`, as [`viewer`] answers it.
fn player_seat(
    record: &MatchRecord,
    player: &Player,
    wanted: Option<u32>,
    required: bool,
) -> ApiResult<Viewer> {
    let seat = record
        .seats
        .iter()
        .find(|s| s.account.as_deref() == Some(player.id.as_str()))
        .map(|s| s.seat);
    match (seat, wanted) {
        (Some(seat), Some(wanted)) if wanted != u32::from(seat) => Err(ApiError::PermissionDenied(
            format!("this player holds seat {seat}, not seat {wanted}"),
        )),
        (Some(seat), _) => Ok(Viewer::Seat(seat)),
        (None, None) if !required => Ok(Viewer::Spectator),
        (None, Some(wanted)) => Err(ApiError::PermissionDenied(format!(
            "this player does not hold seat {wanted}"
        ))),
        (None, None) => Err(ApiError::PermissionDenied(
            "this player holds no seat in this match".into(),
        )),
    }
}

/// Whether `a` and `b` are equal, in time that depends on their length only, not on where
/// they differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// What a retried request needs to be answered as it was the first time, derived with
/// HMAC-SHA256 from the key every server of one store shares (`Store::server_key`): the seat
/// token of a retried join, the signing secret of a retried webhook registration and the id of
/// a retried match creation. Nothing derived here is stored, and without the key none of it
/// can be computed from what is.
#[derive(Clone)]
pub struct Keys {
    key: [u8; 32],
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keys(..)")
    }
}

impl Keys {
    /// The name the key is stored under.
    pub const NAME: &str = "request-ids";

    pub fn new(key: [u8; 32]) -> Keys {
        Keys { key }
    }

    /// HMAC over a purpose tag and length-prefixed parts, so no two inputs share bytes.
    fn mac(&self, purpose: &str, parts: &[&[u8]]) -> [u8; 32] {
        use hmac::{Hmac, Mac};
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(&self.key).expect("HMAC takes any key size");
        for part in std::iter::once(purpose.as_bytes()).chain(parts.iter().copied()) {
            mac.update(&(part.len() as u64).to_be_bytes());
            mac.update(part);
        }
        mac.finalize().into_bytes().into()
    }

    /// The invite code of an invited seat: whoever holds it may take the seat. Never stored;
    /// checked by deriving it again.
    pub fn invite_code(&self, id: MatchId, seat: u8) -> String {
        hex::encode(&self.mac("invite", &[id.as_bytes(), &[seat]])[..16])
    }

    /// The seat an invite code opens among `invited`, if it opens one; compared in constant
    /// time.
    pub fn invited_seat(
        &self,
        id: MatchId,
        invited: impl Iterator<Item = u8>,
        code: &str,
    ) -> Option<u8> {
        let given = code.as_bytes();
        invited
            .into_iter()
            .find(|&seat| constant_time_eq(self.invite_code(id, seat).as_bytes(), given))
    }

    /// The cancel token of a match: whoever holds it may cancel the match while it is open.
    /// Never stored; checked by deriving it again, so a retried creation answers the same one.
    pub fn cancel_token(&self, id: MatchId) -> String {
        hex::encode(&self.mac("cancel", &[id.as_bytes()])[..16])
    }

    /// Whether `token` is match `id`'s cancel token; compared in constant time.
    pub fn cancels(&self, id: MatchId, token: &str) -> bool {
        constant_time_eq(self.cancel_token(id).as_bytes(), token.as_bytes())
    }

    /// The seat token a join with this request id gives, and its hash as stored.
    pub fn seat_token(&self, id: MatchId, seat: u8, request_id: &str) -> (String, [u8; 32]) {
        let raw = self.mac(
            "seat-token",
            &[id.as_bytes(), &[seat], request_id.as_bytes()],
        );
        (hex::encode(raw), Sha256::digest(raw).into())
    }

    /// The request id a join's event is stored under: a keyed digest, so that the audit log,
    /// which shows it, never shows what a retry must present to be given the seat token.
    pub fn join_request_id(&self, id: MatchId, request_id: &str) -> String {
        let digest = self.mac("join", &[id.as_bytes(), request_id.as_bytes()]);
        format!("join:{}", hex::encode(&digest[..16]))
    }

    /// The signing secret of a webhook registered with this request id.
    pub fn webhook_secret(&self, id: MatchId, seat: u8, request_id: &str) -> [u8; 32] {
        self.mac(
            "webhook-secret",
            &[id.as_bytes(), &[seat], request_id.as_bytes()],
        )
    }

    /// The id of a match created with this request id: a version 4 UUID drawn from the key.
    pub fn match_id(&self, request_id: &str) -> MatchId {
        let digest = self.mac("create", &[request_id.as_bytes()]);
        let bytes: [u8; 16] = digest[..16].try_into().expect("16 of 32 bytes");
        uuid::Builder::from_random_bytes(bytes).into_uuid()
    }
}

/// Whether two hashes are equal, in time that does not depend on where they differ.
pub fn same_hash(a: &[u8; 32], b: &[u8; 32]) -> bool {
    constant_time_eq(a, b)
}

/// The caller of a request: the seat token, or the player a verified player token names.
#[derive(Clone, Default)]
pub struct Caller {
    pub token: Option<SeatToken>,
    pub player: Option<Player>,
}

impl Caller {
    /// A caller that presents seat token `token`.
    pub fn seat(token: &str) -> Caller {
        Caller {
            token: Some(SeatToken::new(token)),
            player: None,
        }
    }
}

impl std::fmt::Debug for Caller {
    // A token is a credential: never print it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caller")
            .field("token", &self.token.as_ref().map(|_| ".."))
            .field("player", &self.player.as_ref().map(|p| &p.id))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> Keys {
        Keys::new([7; 32])
    }

    #[test]
    fn a_retried_join_gets_the_same_token_and_nothing_else_does() {
        let id = MatchId::from_u128(1);
        let (token, hash) = keys().seat_token(id, 1, "req-0123456789abcdef");
        assert_eq!(
            keys().seat_token(id, 1, "req-0123456789abcdef"),
            (token.clone(), hash)
        );
        assert_eq!(
            hash,
            <[u8; 32]>::from(Sha256::digest(hex::decode(&token).unwrap()))
        );
        for other in [
            keys().seat_token(id, 2, "req-0123456789abcdef"),
            keys().seat_token(MatchId::from_u128(2), 1, "req-0123456789abcdef"),
            keys().seat_token(id, 1, "req-0123456789abcdeg"),
            Keys::new([8; 32]).seat_token(id, 1, "req-0123456789abcdef"),
        ] {
            assert_ne!(other.0, token);
        }
    }

    #[test]
    fn the_caller_is_read_from_the_authorization_header_alone() {
        assert!(caller(None, None).unwrap().token.is_none());
        let (token, hash) = new_token().unwrap();
        let header = format!("Bearer {token} ");
        let presented = caller(Some(header.as_bytes()), None).unwrap().token;
        assert_eq!(presented.and_then(|t| t.hash), Some(hash));
        assert!(
            caller(Some(b"Bearer abc"), None)
                .unwrap()
                .token
                .unwrap()
                .hash
                .is_none()
        );
        for bad in [&b"Basic abc"[..], b"abc", b"Bearer \xff"] {
            assert!(
                matches!(caller(Some(bad), None), Err(ApiError::Unauthenticated(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn derived_values_of_one_request_differ_by_purpose() {
        let id = MatchId::from_u128(1);
        let k = keys();
        let token = hex::decode(k.seat_token(id, 0, "r").0).unwrap();
        assert_ne!(token, k.webhook_secret(id, 0, "r").to_vec());
        let stored = k.join_request_id(id, "r");
        assert!(
            stored.starts_with("join:") && stored.len() == 37,
            "{stored}"
        );
        assert_eq!(k.match_id("r"), k.match_id("r"));
        assert_ne!(k.match_id("r"), k.match_id("s"));
        assert_eq!(k.match_id("r").get_version_num(), 4);
        assert_ne!(k.cancel_token(id), k.invite_code(id, 0));
    }

    #[test]
    fn a_cancel_token_opens_its_own_match_only() {
        let (id, other) = (MatchId::from_u128(1), MatchId::from_u128(2));
        let token = keys().cancel_token(id);
        assert_eq!(token.len(), 32);
        assert!(keys().cancels(id, &token));
        assert!(!keys().cancels(other, &token));
        assert!(!Keys::new([8; 32]).cancels(id, &token));
        assert!(!keys().cancels(id, &token[..31]));
        assert!(!keys().cancels(id, ""));
        assert!(!keys().cancels(id, &token.to_uppercase()));
    }
}
