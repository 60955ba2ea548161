//! The HTTP/JSON routes, listed once: [`ROUTES`] builds the router (`http.rs`) and the paths
//! of the OpenAPI document (`openapi.rs`), and a test holds it against the RPCs of the proto's
//! `missive.v1.Missive` service, so a route cannot name a message its RPC does not take.

/// An HTTP method a route answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
    Put,
    Delete,
}

impl Method {
    /// The lowercase name OpenAPI keys operations by.
    pub fn openapi(self) -> &'static str {
        match self {
            Method::Get => "get",
            Method::Post => "post",
            Method::Put => "put",
            Method::Delete => "delete",
        }
    }
}

/// A query parameter: its name (a field of the RPC's request message), its JSON schema type
/// and what it does.
#[derive(Debug, Clone, Copy)]
pub struct Param {
    pub name: &'static str,
    pub kind: &'static str,
    pub about: &'static str,
}

/// The bearer token an operation that takes one (`authed`) reads: a seat token, or a player
/// token (a JWT) that stands for the seat bound to its player (docs/API.md, "Authorisation").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Token {
    /// Either may be sent; without one the caller is a spectator.
    Optional,
    /// One of them is required: the operation acts as a seat.
    Seat,
    /// A player token is required.
    Player,
}

/// One operation over HTTP.
#[derive(Debug, Clone, Copy)]
pub struct Route {
    pub method: Method,
    /// The path, `{id}` standing for the match id.
    pub path: &'static str,
    /// The OpenAPI operation id; the RPC's name unless one RPC has two routes.
    pub operation: &'static str,
    /// The RPC of `missive.v1.Missive` it serves.
    pub rpc: &'static str,
    pub summary: &'static str,
    /// Whether the request message comes as the JSON body (else from the path and query).
    pub body: bool,
    pub query: &'static [Param],
    /// The status of a success.
    pub success: u16,
    /// Whether a seat token may be sent (and for some operations must be); without, only a
    /// player token is read, and none is needed.
    pub authed: bool,
    /// Which token an `authed` operation needs.
    pub token: Token,
    /// Whether the answer is a stream of responses (Server-Sent Events).
    pub stream: bool,
}

const SEAT: Param = Param {
    name: "seat",
    kind: "integer",
    about: "Act or view as this seat (requires its token).",
};

const PAGE_TOKEN: Param = Param {
    name: "pageToken",
    kind: "string",
    about: "nextPageToken of the previous page.",
};

const fn route(method: Method, path: &'static str, rpc: &'static str) -> Route {
    Route {
        method,
        path,
        operation: rpc,
        rpc,
        summary: "",
        body: false,
        query: &[],
        success: 200,
        authed: true,
        token: Token::Optional,
        stream: false,
    }
}

/// Every route, in the order the documentation lists them.
pub const ROUTES: &[Route] = &[
    Route {
        summary: "Open a new match",
        body: true,
        success: 201,
        authed: false,
        ..route(Method::Post, "/v1/matches", "CreateMatch")
    },
    Route {
        summary: "Matches, by default those open to join",
        authed: false,
        query: &[
            Param {
                name: "status",
                kind: "string",
                about: "A MatchStatus name; default MATCH_STATUS_OPEN.",
            },
            Param {
                name: "kind",
                kind: "string",
                about: "A game kind such as love-letter.",
            },
            Param {
                name: "limit",
                kind: "integer",
                about: "Page size (default 50, at most 200).",
            },
            PAGE_TOKEN,
        ],
        ..route(Method::Get, "/v1/matches", "ListMatches")
    },
    Route {
        summary: "A match's public information",
        authed: false,
        ..route(Method::Get, "/v1/matches/{id}", "GetMatch")
    },
    Route {
        summary: "Take a seat; returns the seat token once",
        body: true,
        authed: false,
        ..route(Method::Post, "/v1/matches/{id}/join", "JoinMatch")
    },
    Route {
        summary: "Play an action as the token's seat",
        body: true,
        token: Token::Seat,
        ..route(Method::Post, "/v1/matches/{id}/act", "Act")
    },
    Route {
        summary: "The caller's view and legal actions",
        query: &[SEAT],
        ..route(Method::Get, "/v1/matches/{id}/view", "GetView")
    },
    Route {
        summary: "The log as the caller may see it; the audit log once over",
        query: &[SEAT],
        ..route(Method::Get, "/v1/matches/{id}/history", "GetHistory")
    },
    Route {
        summary: "Every update after a version, as Server-Sent Events",
        query: &[
            Param {
                name: "afterVersion",
                kind: "integer",
                about: "Send updates after this version.",
            },
            SEAT,
        ],
        stream: true,
        ..route(Method::Get, "/v1/matches/{id}/watch", "WatchMatch")
    },
    Route {
        summary: "Give up the token's seat",
        body: true,
        token: Token::Seat,
        ..route(Method::Post, "/v1/matches/{id}/leave", "LeaveMatch")
    },
    Route {
        summary: "Cancel an open match, with its cancel token (or its creator's player token)",
        body: true,
        // The cancel token travels in the body; a seat token is no use here.
        authed: false,
        ..route(Method::Post, "/v1/matches/{id}/cancel", "CancelMatch")
    },
    Route {
        summary: "Register or replace the token's seat's \"your turn\" webhook; returns its signing secret once",
        body: true,
        token: Token::Seat,
        ..route(Method::Put, "/v1/matches/{id}/webhook", "SetWebhook")
    },
    Route {
        operation: "RemoveWebhook",
        summary: "Remove the token's seat's webhook",
        token: Token::Seat,
        ..route(Method::Delete, "/v1/matches/{id}/webhook", "SetWebhook")
    },
    Route {
        summary: "The token's seat's webhook and its recent deliveries",
        token: Token::Seat,
        ..route(Method::Get, "/v1/matches/{id}/webhook", "GetWebhook")
    },
    Route {
        summary: "The caller's matches, newest activity first (needs a player token)",
        query: &[
            Param {
                name: "status",
                kind: "string",
                about: "A MatchStatus name; every status when absent.",
            },
            Param {
                name: "limit",
                kind: "integer",
                about: "Page size (default 20, at most 100).",
            },
            PAGE_TOKEN,
        ],
        token: Token::Player,
        ..route(Method::Get, "/v1/me/matches", "ListMyMatches")
    },
    Route {
        summary: "The rematch of a match that is over: takes the caller's seat in it",
        body: true,
        token: Token::Seat,
        ..route(Method::Post, "/v1/matches/{id}/rematch", "Rematch")
    },
    Route {
        summary: "The games this server plays: editions, seats, options, bots, rules versions, cards and their texts",
        authed: false,
        ..route(Method::Get, "/v1/games", "ListGames")
    },
    Route {
        summary: "The public keys audit heads are signed with",
        authed: false,
        ..route(Method::Get, "/v1/audit/keys", "GetAuditKeys")
    },
];

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use prost::Message;
    use prost_types::FileDescriptorSet;

    use super::*;

    /// `(name, input type, output type, server streaming)` of an RPC.
    type Rpc = (String, String, String, bool);
    /// Each message's JSON field names, by full name.
    type Fields = std::collections::HashMap<String, Vec<String>>;

    /// The RPCs of the `Missive` service that HTTP/JSON serves, and the messages' fields.
    fn service() -> (Vec<Rpc>, Fields) {
        let set = FileDescriptorSet::decode(missive_proto::FILE_DESCRIPTOR_SET).expect("decodes");
        let mut rpcs = Vec::new();
        let mut fields = std::collections::HashMap::new();
        for file in set.file.iter().filter(|f| f.package() == "missive.v1") {
            for message in &file.message_type {
                fields.insert(
                    format!(".missive.v1.{}", message.name()),
                    message
                        .field
                        .iter()
                        .map(|f| f.json_name().to_owned())
                        .collect(),
                );
            }
            for service in file.service.iter().filter(|s| s.name() == "Missive") {
                // A client stream (Play) has no HTTP/JSON form: it is gRPC only.
                for method in service.method.iter().filter(|m| !m.client_streaming()) {
                    rpcs.push((
                        method.name().to_owned(),
                        method.input_type().to_owned(),
                        method.output_type().to_owned(),
                        method.server_streaming(),
                    ));
                }
            }
        }
        (rpcs, fields)
    }

    #[test]
    fn every_rpc_has_a_route_and_every_route_an_rpc() {
        let (rpcs, _) = service();
        let named: BTreeSet<&str> = rpcs.iter().map(|r| r.0.as_str()).collect();
        let routed: BTreeSet<&str> = ROUTES.iter().map(|r| r.rpc).collect();
        assert_eq!(named, routed);
    }

    #[test]
    fn routes_take_what_their_rpc_takes() {
        let (rpcs, fields) = service();
        for route in ROUTES {
            let (_, input, _, streaming) = rpcs
                .iter()
                .find(|r| r.0 == route.rpc)
                .unwrap_or_else(|| panic!("{} is no RPC", route.rpc));
            assert_eq!(route.stream, *streaming, "{}", route.operation);
            let input_fields = &fields[input];
            for param in route.query {
                assert!(
                    input_fields.iter().any(|f| f == param.name),
                    "{} {}: {:?} is not a field of {input}",
                    route.method.openapi(),
                    route.path,
                    param.name
                );
            }
            if route.path.contains("{id}") {
                assert!(input_fields.iter().any(|f| f == "matchId"), "{input}");
            }
            assert!(
                !(route.body && route.method == Method::Get),
                "a GET takes no body"
            );
        }
    }

    #[test]
    fn no_two_routes_share_a_method_and_path_or_an_operation_id() {
        let mut seen = BTreeSet::new();
        let mut operations = BTreeSet::new();
        for route in ROUTES {
            assert!(
                seen.insert((route.method.openapi(), route.path)),
                "{route:?}"
            );
            assert!(operations.insert(route.operation), "{route:?}");
        }
    }
}
