//! Simulated players: at `tables` concurrency, `tables` two-seat Love Letter matches are played
//! at once, each by two players with a seat token and a gRPC connection of their own.
//!
//! A player watches its match (`WatchMatch` with its token) and reads its view once; whenever
//! a view (from its own `Act` response or from the watch stream) says it is awaited, it plays
//! a random legal action from that view, pinned to the view's version. A Love Letter match
//! awaits one seat at a time, so at most `tables` actions are in flight. When a match ends the
//! pair opens the next one (create and two joins, not counted as actions).

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use missive_proto::v1 as pb;
use missive_proto::v1::missive_client::MissiveClient;
use prost::Message as _;
use tokio::time::sleep_until;
use tonic::transport::{Channel, Endpoint};

use crate::stats::Step;

pub(crate) type Client = MissiveClient<Channel>;

/// What one step of play measured.
#[derive(Debug, Default)]
pub(crate) struct Played {
    pub(crate) acts: Step,
    /// Matches opened (created and joined) during the step.
    pub(crate) matches: u64,
    /// Matches played to the end during the step.
    pub(crate) finished: u64,
    /// The abusive client's calls, when there was one.
    pub(crate) flood: Flood,
}

/// A small deterministic generator, so a run's choices can be repeated.
#[derive(Debug)]
pub(crate) struct Lcg(pub(crate) u64);

impl Lcg {
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n.max(1)
    }
}

pub(crate) fn authed<T>(message: T, token: &str) -> Result<tonic::Request<T>> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert("authorization", format!("Bearer {token}").parse()?);
    Ok(request)
}

pub(crate) async fn connect(grpc: &str) -> Result<Client> {
    connect_from(grpc, None).await
}

/// A connection from the local address `from` (any of 127.0.0.0/8 on loopback), so that a
/// server keying its per-client limits by address sees each simulated player as its own client.
pub(crate) async fn connect_from(grpc: &str, from: Option<IpAddr>) -> Result<Client> {
    let channel = Endpoint::from_shared(grpc.to_owned())?
        .local_address(from)
        .connect()
        .await
        .with_context(|| format!("connecting to {grpc}"))?;
    Ok(MissiveClient::new(channel))
}

/// The loopback address of player `n` (127.0.x.y from 127.0.1.1 on): distinct for 65,000 players.
fn player_address(n: usize) -> IpAddr {
    let n = n + 257;
    IpAddr::V4(Ipv4Addr::new(127, 0, (n >> 8) as u8, n as u8))
}

/// The loopback address the flooder sends from, shared by all its calls: one client.
pub(crate) const FLOODER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 255, 0, 1));

/// How the players play and who else calls meanwhile.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Options {
    /// Each player waits this long before each of its actions (a person thinks).
    pub(crate) think: Duration,
    /// Calls in flight at once from one abusive client (one address) during the window:
    /// `ListMatches` in a loop, as fast as they are answered or refused.
    pub(crate) flood: usize,
    /// Each player acts and watches on one `Play` stream instead of unary `Act` calls beside a
    /// `WatchMatch` stream.
    pub(crate) play: bool,
    /// Each act asks for an answer without the view; the player takes its view from the
    /// update the act made.
    pub(crate) omit_view: bool,
}

/// What the flooder got.
#[derive(Debug, Default)]
pub(crate) struct Flood {
    pub(crate) answered: u64,
    pub(crate) refused: u64,
    pub(crate) failed: u64,
}

/// `tasks` calls in flight from one client until `deadline`.
async fn flood(grpc: String, tasks: usize, deadline: Instant) -> Result<Flood> {
    let client = connect_from(&grpc, Some(FLOODER)).await?;
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..tasks {
        let mut client = client.clone();
        set.spawn(async move {
            let mut got = Flood::default();
            while Instant::now() < deadline {
                match client.list_matches(pb::ListMatchesRequest::default()).await {
                    Ok(_) => got.answered += 1,
                    Err(status) if status.code() == tonic::Code::ResourceExhausted => {
                        got.refused += 1
                    }
                    Err(_) => got.failed += 1,
                }
            }
            got
        });
    }
    let mut total = Flood::default();
    while let Some(got) = set.join_next().await {
        let got = got?;
        total.answered += got.answered;
        total.refused += got.refused;
        total.failed += got.failed;
    }
    Ok(total)
}

pub(crate) fn is_over(view: &pb::MatchView) -> bool {
    view.outcome.is_some()
        || view.r#match.as_ref().is_some_and(|m| {
            matches!(
                pb::MatchStatus::try_from(m.status),
                Ok(pb::MatchStatus::Finished | pb::MatchStatus::Abandoned)
            )
        })
}

/// Plays for `window` with `tables` matches at once; `seed` makes the choices repeatable.
pub(crate) async fn play(
    grpc: &str,
    tables: usize,
    window: Duration,
    seed: u64,
    options: Options,
) -> Result<Played> {
    // Connections first, so connecting is not part of the window; each player its own address.
    let mut pairs = Vec::with_capacity(tables);
    for t in 0..tables {
        pairs.push([
            connect_from(grpc, Some(player_address(2 * t))).await?,
            connect_from(grpc, Some(player_address(2 * t + 1))).await?,
        ]);
    }
    let started = Instant::now();
    let deadline = started + window;
    let flooder =
        (options.flood > 0).then(|| tokio::spawn(flood(grpc.to_owned(), options.flood, deadline)));
    let mut tasks = tokio::task::JoinSet::new();
    for (i, pair) in pairs.into_iter().enumerate() {
        let rng = Lcg(seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        tasks.spawn(table(pair, deadline, rng, options));
    }
    let mut played = Played::default();
    if let Some(flooder) = flooder {
        played.flood = flooder.await??;
    }
    while let Some(done) = tasks.join_next().await {
        let one = done??;
        played.acts.merge(one.acts);
        played.matches += one.matches;
        played.finished += one.finished;
    }
    played.acts.window = window;
    Ok(played)
}

/// Two players at one table, playing match after match until the deadline, as `how` says.
async fn table(pair: [Client; 2], deadline: Instant, mut rng: Lcg, how: Options) -> Result<Played> {
    let mut played = Played::default();
    let [mut first, mut second] = pair;
    while Instant::now() < deadline {
        let id = create_love_letter(&mut first).await?;
        let mut seats = Vec::new();
        for (n, client) in [&mut first, &mut second].into_iter().enumerate() {
            let joined = client
                .join_match(pb::JoinMatchRequest {
                    match_id: id.clone(),
                    player: format!("load-{n}"),
                    seat: None,
                    ..Default::default()
                })
                .await?
                .into_inner();
            let view = joined.view.context("JoinMatch answered without a view")?;
            seats.push((joined.seat, joined.seat_token, view));
        }
        played.matches += 1;
        let [a, b] = <[_; 2]>::try_from(seats).map_err(|_| anyhow::anyhow!("two seats"))?;
        let mut rng_b = Lcg(rng.0.rotate_left(17) ^ 0xB5);
        let (ra, rb) = tokio::join!(
            player(
                first.clone(),
                &id,
                (a.0, &a.1),
                a.2,
                deadline,
                how,
                &mut rng
            ),
            player(
                second.clone(),
                &id,
                (b.0, &b.1),
                b.2,
                deadline,
                how,
                &mut rng_b
            ),
        );
        let (a_done, a_acts) = ra?;
        let (b_done, b_acts) = rb?;
        played.acts.merge(a_acts);
        played.acts.merge(b_acts);
        if a_done && b_done {
            played.finished += 1;
        }
    }
    Ok(played)
}

/// How a player talks to the server: unary `Act` calls beside a `WatchMatch` stream, or one
/// `Play` stream for both.
enum Line {
    Unary {
        client: Client,
        token: String,
        watch: tonic::Streaming<pb::WatchMatchResponse>,
    },
    Play {
        requests: tokio::sync::mpsc::Sender<pb::PlayRequest>,
        responses: tonic::Streaming<pb::PlayResponse>,
        /// Updates that arrived while an act's answer was awaited.
        early: std::collections::VecDeque<pb::WatchMatchResponse>,
    },
}

impl Line {
    /// Opens the player's stream: updates after `after`, as `token`'s seat.
    async fn open(
        client: &mut Client,
        id: &str,
        token: &str,
        after: u64,
        play: bool,
    ) -> Result<Line> {
        let watch = pb::WatchMatchRequest {
            match_id: id.to_owned(),
            after_version: after,
            seat: None,
        };
        if !play {
            let watch = client
                .watch_match(authed(watch, token)?)
                .await?
                .into_inner();
            return Ok(Line::Unary {
                client: client.clone(),
                token: token.to_owned(),
                watch,
            });
        }
        let (requests, outbound) = tokio::sync::mpsc::channel(4);
        requests
            .send(pb::PlayRequest {
                request: Some(pb::play_request::Request::Watch(watch)),
            })
            .await?;
        let stream = futures::stream::unfold(outbound, |mut outbound| async move {
            outbound.recv().await.map(|request| (request, outbound))
        });
        let responses = client.play(authed(stream, token)?).await?.into_inner();
        Ok(Line::Play {
            requests,
            responses,
            early: std::collections::VecDeque::new(),
        })
    }

    /// Sends an act; its answer, or the code it was refused with.
    async fn act(&mut self, request: pb::ActRequest) -> Result<Result<pb::ActResponse, String>> {
        use pb::play_response::Response;
        match self {
            Line::Unary { client, token, .. } => match client.act(authed(request, token)?).await {
                Ok(response) => Ok(Ok(response.into_inner())),
                Err(status) => Ok(Err(format!("{:?}", status.code()))),
            },
            Line::Play {
                requests,
                responses,
                early,
            } => {
                requests
                    .send(pb::PlayRequest {
                        request: Some(pb::play_request::Request::Act(request)),
                    })
                    .await?;
                loop {
                    let message = responses
                        .message()
                        .await?
                        .context("the Play stream ended before answering an act")?;
                    match message.response {
                        Some(Response::Update(update)) => early.push_back(update),
                        Some(Response::Acted(acted)) => return Ok(Ok(acted)),
                        Some(Response::Refused(refused)) => return Ok(Err(refused.code)),
                        None => bail!("an empty Play response"),
                    }
                }
            }
        }
    }

    /// The next update of the match; `None` once the stream has ended.
    async fn update(&mut self) -> Result<Option<pb::WatchMatchResponse>> {
        use pb::play_response::Response;
        match self {
            Line::Unary { watch, .. } => Ok(watch.message().await?),
            Line::Play {
                responses, early, ..
            } => {
                if let Some(update) = early.pop_front() {
                    return Ok(Some(update));
                }
                match responses.message().await? {
                    Some(pb::PlayResponse {
                        response: Some(Response::Update(update)),
                    }) => Ok(Some(update)),
                    Some(other) => bail!("an answer without an act: {other:?}"),
                    None => Ok(None),
                }
            }
        }
    }
}

/// One seat's player until the match is over (`true`) or the deadline passes (`false`),
/// starting from the view its join answered with, and watching for every update after it (on
/// a `Play` stream, acting on it too, when `how.play`).
async fn player(
    mut client: Client,
    id: &str,
    (seat, token): (u32, &str),
    mut view: pb::MatchView,
    deadline: Instant,
    how: Options,
    rng: &mut Lcg,
) -> Result<(bool, Step)> {
    let mut acts = Step::default();
    let mut line = Line::open(&mut client, id, token, view.version, how.play).await?;
    // The version of the player's last act, whose update brings its view when the answer
    // came without one.
    let mut acted = 0;
    loop {
        if is_over(&view) {
            return Ok((true, acts));
        }
        if Instant::now() >= deadline {
            return Ok((false, acts));
        }
        if view.version >= acted && view.awaiting.contains(&seat) {
            if view.legal_actions.is_empty() {
                bail!(
                    "seat {seat} is awaited at version {} with no legal action",
                    view.version
                );
            }
            if !how.think.is_zero() {
                tokio::time::sleep(how.think).await;
            }
            let action = view.legal_actions[rng.below(view.legal_actions.len())].clone();
            let request = pb::ActRequest {
                match_id: id.to_owned(),
                action: Some(action),
                request_id: format!("{seat}-{}", view.version),
                expected_version: Some(view.version),
                seat: None,
                omit_view: how.omit_view,
            };
            let sent = Instant::now();
            let result = line.act(request).await?;
            let done = Instant::now();
            match result {
                Ok(answer) => {
                    if done <= deadline {
                        acts.record(done - sent);
                        acts.received += answer.encoded_len() as u64;
                    }
                    acted = answer.version;
                    match answer.view {
                        Some(after) => view = after,
                        None if how.omit_view => {}
                        None => bail!("an act answered without a view"),
                    }
                }
                Err(code) => {
                    acts.error(format!("Act {code}"));
                    view = get_view(&mut client, id, Some(token)).await?;
                }
            }
            continue;
        }
        // Not this seat's turn: wait for the next update of the match.
        let update = tokio::select! {
            update = line.update() => update?,
            () = sleep_until(deadline.into()) => return Ok((false, acts)),
        };
        if let Some(update) = &update
            && Instant::now() <= deadline
        {
            acts.received += update.encoded_len() as u64;
        }
        match update {
            Some(update) if update.version > view.version => {
                if let Some(next) = update.view {
                    view = next;
                }
            }
            Some(_) => {}
            None => {
                view = get_view(&mut client, id, Some(token)).await?;
                if !is_over(&view) {
                    bail!("the watch stream of {id} ended before the match did");
                }
            }
        }
    }
}

/// Creates an open two-seat Love Letter match; returns its id.
pub(crate) async fn create_love_letter(client: &mut Client) -> Result<String> {
    let created = client
        .create_match(pb::CreateMatchRequest {
            options: Some(pb::GameOptions {
                game: Some(pb::game_options::Game::LoveLetter(
                    pb::LoveLetterOptions::default(),
                )),
            }),
            seat_count: 2,
            ..Default::default()
        })
        .await?
        .into_inner();
    Ok(created
        .r#match
        .context("CreateMatch returned no match")?
        .match_id)
}

/// The match as `token`'s seat sees it, or as a spectator without a token.
pub(crate) async fn get_view(
    client: &mut Client,
    id: &str,
    token: Option<&str>,
) -> Result<pb::MatchView> {
    let message = pb::GetViewRequest {
        match_id: id.to_owned(),
        seat: None,
    };
    let request = match token {
        Some(token) => authed(message, token)?,
        None => tonic::Request::new(message),
    };
    client
        .get_view(request)
        .await?
        .into_inner()
        .view
        .context("GetViewResponse without a view")
}
