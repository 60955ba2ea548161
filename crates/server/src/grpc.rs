//! The gRPC transport: the `missive.v1.Missive` service over [`Service`], plus health and
//! reflection. Handlers only extract the bearer token and relay; the service does the work.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use missive_proto::v1 as pb;
use missive_proto::v1::missive_server::Missive;
use tokio_stream::StreamExt;
use tonic::{Request, Response, Status, Streaming};

use crate::auth;
use crate::error::{ApiError, ApiResult};
use crate::ratelimit::Client;
use crate::service::{Caller, Service};

mod play;

/// The tonic service.
#[derive(Debug, Clone)]
pub struct Grpc {
    service: Arc<Service>,
}

impl Grpc {
    pub fn new(service: Arc<Service>) -> Self {
        Grpc { service }
    }
}

/// The interceptor in front of every call: reads the caller from the `authorization`
/// metadata once, refusing a malformed one, and hands it to the handler.
pub fn authenticate(mut request: Request<()>) -> Result<Request<()>, Status> {
    let caller = auth::caller(
        request
            .metadata()
            .get("authorization")
            .map(|v| v.as_bytes()),
        request.extensions().get::<crate::identity::Player>(),
    )?;
    request.extensions_mut().insert(caller);
    Ok(request)
}

/// The caller [`authenticate`] read.
fn caller<T>(request: &Request<T>) -> Result<Caller, Status> {
    request
        .extensions()
        .get::<Caller>()
        .cloned()
        .ok_or_else(|| Status::internal("the call was not authenticated"))
}

type WatchStream = Pin<Box<dyn Stream<Item = Result<pb::WatchMatchResponse, Status>> + Send>>;
type PlayStream = Pin<Box<dyn Stream<Item = Result<pb::PlayResponse, Status>> + Send>>;

/// Answers below the updates a Play stream may have waiting for its client.
const PLAY_ANSWERS: usize = 8;

/// A Play stream's answer to one act: what the unary `Act` would have answered, a refusal as a
/// message rather than the end of the stream.
fn play_answer(request_id: String, acted: ApiResult<pb::ActResponse>) -> pb::PlayResponse {
    use pb::play_response::Response;
    let response = match acted {
        Ok(acted) => Response::Acted(acted),
        Err(e) => Response::Refused(pb::PlayRefusal {
            request_id,
            code: e.code_name().to_owned(),
            rule: e.rule().unwrap_or_default().to_owned(),
            message: e.public_message(),
        }),
    };
    pb::PlayResponse {
        response: Some(response),
    }
}

impl Grpc {
    /// A call that writes, for the caller [`authenticate`] read: its work runs to its end in a
    /// task of its own, and it is answered within the store's bound
    /// ([`Service::bounded_write`]).
    async fn writes<Req, Res, F>(
        &self,
        request: Request<Req>,
        work: impl FnOnce(Arc<Service>, Caller, Req) -> F + Send + 'static,
    ) -> Result<Response<Res>, Status>
    where
        Req: Send + 'static,
        Res: Send + 'static,
        F: Future<Output = ApiResult<Res>> + Send + 'static,
    {
        let caller = caller(&request)?;
        let request = request.into_inner();
        let answer = self
            .service
            .bounded_write(move |service| work(service, caller, request))
            .await?;
        Ok(Response::new(answer))
    }

    /// A call that only reads, for the caller [`authenticate`] read, answered within the
    /// store's bound ([`Service::bounded`]).
    async fn reads<Req, Res, F>(
        &self,
        request: Request<Req>,
        work: impl FnOnce(Arc<Service>, Caller, Req) -> F,
    ) -> Result<Response<Res>, Status>
    where
        F: Future<Output = ApiResult<Res>>,
    {
        let caller = caller(&request)?;
        let work = work(Arc::clone(&self.service), caller, request.into_inner());
        Ok(Response::new(self.service.bounded(work).await?))
    }

    /// A watch stream of `req` for `caller`, holding its place under `client`'s watch caps as
    /// long as it lasts: `WatchMatch`'s, and the updates of a `Play` stream.
    async fn watch(
        &self,
        caller: &Caller,
        client: Option<&Client>,
        req: pb::WatchMatchRequest,
    ) -> Result<impl Stream<Item = Result<pb::WatchMatchResponse, Status>> + use<>, Status> {
        let permit = client.map(Client::open_watch).transpose()?;
        let updates = self.service.watch(caller, req).await?;
        Ok(updates.map(move |item| {
            let _held = &permit;
            item.map_err(Status::from)
        }))
    }
}

#[tonic::async_trait]
impl Missive for Grpc {
    async fn create_match(
        &self,
        request: Request<pb::CreateMatchRequest>,
    ) -> Result<Response<pb::CreateMatchResponse>, Status> {
        let client = request.extensions().get::<Client>().cloned();
        let request = request.into_inner();
        Ok(Response::new(
            self.service
                .bounded_write(
                    move |s| async move { s.create_match_by(client.as_ref(), request).await },
                )
                .await?,
        ))
    }

    async fn join_match(
        &self,
        request: Request<pb::JoinMatchRequest>,
    ) -> Result<Response<pb::JoinMatchResponse>, Status> {
        self.writes(request, |s, caller, req| async move {
            s.join_match(&caller, req).await
        })
        .await
    }

    async fn act(
        &self,
        request: Request<pb::ActRequest>,
    ) -> Result<Response<pb::ActResponse>, Status> {
        self.writes(request, |s, caller, req| async move {
            s.act(&caller, req).await
        })
        .await
    }

    async fn get_view(
        &self,
        request: Request<pb::GetViewRequest>,
    ) -> Result<Response<pb::GetViewResponse>, Status> {
        self.reads(request, |s, caller, req| async move {
            s.get_view(&caller, req).await
        })
        .await
    }

    type WatchMatchStream = WatchStream;

    async fn watch_match(
        &self,
        request: Request<pb::WatchMatchRequest>,
    ) -> Result<Response<Self::WatchMatchStream>, Status> {
        let caller = caller(&request)?;
        let client = request.extensions().get::<Client>().cloned();
        let stream = self
            .watch(&caller, client.as_ref(), request.into_inner())
            .await?;
        Ok(Response::new(Box::pin(stream)))
    }

    type PlayStream = PlayStream;

    async fn play(
        &self,
        request: Request<Streaming<pb::PlayRequest>>,
    ) -> Result<Response<Self::PlayStream>, Status> {
        use pb::play_request::Request as Message;
        let caller = caller(&request)?;
        let client = request.extensions().get::<Client>().cloned();
        let mut inbound = request.into_inner();
        let watch = match inbound.message().await?.and_then(|m| m.request) {
            Some(Message::Watch(watch)) => watch,
            _ => {
                return Err(ApiError::invalid(
                    "a Play stream opens with a watch message: the match and the version to \
                     send updates after",
                )
                .into());
            }
        };
        let match_id = watch.match_id.clone();
        let after = watch.after_version;
        let updates = self.watch(&caller, client.as_ref(), watch).await?;
        // Acts are read and answered one at a time, in order, while updates flow.
        let (answers, answered) = tokio::sync::mpsc::channel(PLAY_ANSWERS);
        let begun = play::Begun::default();
        let taken_up = begun.clone();
        let service = Arc::clone(&self.service);
        tokio::spawn(async move {
            while let Ok(Some(message)) = inbound.message().await {
                taken_up.one_more();
                let answer = match message.request {
                    Some(Message::Act(mut act)) => {
                        if act.match_id.is_empty() {
                            act.match_id.clone_from(&match_id);
                        }
                        let watched = act.match_id == match_id;
                        let request_id = act.request_id.clone();
                        let acted = async {
                            if let Some(c) = &client {
                                c.limiter.check_request(&c.key)?;
                            }
                            service.bounded(service.act(&caller, act)).await
                        };
                        let acted = acted.await;
                        let after = match &acted {
                            Ok(acted) if watched && !acted.duplicate => acted.version,
                            _ => 0,
                        };
                        play::Answer {
                            after,
                            response: play_answer(request_id, acted),
                        }
                    }
                    _ => play::Answer {
                        after: 0,
                        response: play_answer(
                            String::new(),
                            Err(ApiError::invalid(
                                "after its first message, a Play stream carries acts only",
                            )),
                        ),
                    },
                };
                if answers.send(answer).await.is_err() {
                    break;
                }
            }
        });
        let messages = play::Messages::new(updates, after, answered, begun).map(|message| {
            message.map(|message| match message {
                play::Message::Update(update) => pb::PlayResponse {
                    response: Some(pb::play_response::Response::Update(update)),
                },
                play::Message::Answer(answer) => answer,
            })
        });
        Ok(Response::new(Box::pin(messages)))
    }

    async fn get_history(
        &self,
        request: Request<pb::GetHistoryRequest>,
    ) -> Result<Response<pb::GetHistoryResponse>, Status> {
        let caller = caller(&request)?;
        let mut response = Response::new(
            self.service
                .bounded(self.service.get_history(&caller, request.into_inner()))
                .await?,
        );
        response.metadata_mut().insert(
            crate::audit::FORMAT_HEADER,
            tonic::metadata::MetadataValue::from(crate::audit::FORMAT),
        );
        Ok(response)
    }

    async fn get_audit_keys(
        &self,
        request: Request<pb::GetAuditKeysRequest>,
    ) -> Result<Response<pb::GetAuditKeysResponse>, Status> {
        self.reads(
            request,
            |s, _, req| async move { s.get_audit_keys(req).await },
        )
        .await
    }

    async fn get_match(
        &self,
        request: Request<pb::GetMatchRequest>,
    ) -> Result<Response<pb::GetMatchResponse>, Status> {
        self.reads(request, |s, _, req| async move { s.get_match(req).await })
            .await
    }

    async fn list_games(
        &self,
        request: Request<pb::ListGamesRequest>,
    ) -> Result<Response<pb::ListGamesResponse>, Status> {
        Ok(Response::new(self.service.list_games(request.into_inner())))
    }

    async fn list_matches(
        &self,
        request: Request<pb::ListMatchesRequest>,
    ) -> Result<Response<pb::ListMatchesResponse>, Status> {
        self.reads(
            request,
            |s, _, req| async move { s.list_matches(req).await },
        )
        .await
    }

    async fn leave_match(
        &self,
        request: Request<pb::LeaveMatchRequest>,
    ) -> Result<Response<pb::LeaveMatchResponse>, Status> {
        self.writes(request, |s, caller, req| async move {
            s.leave_match(&caller, req).await
        })
        .await
    }

    async fn cancel_match(
        &self,
        request: Request<pb::CancelMatchRequest>,
    ) -> Result<Response<pb::CancelMatchResponse>, Status> {
        self.writes(request, |s, caller, req| async move {
            s.cancel_match(&caller, req).await
        })
        .await
    }

    async fn set_webhook(
        &self,
        request: Request<pb::SetWebhookRequest>,
    ) -> Result<Response<pb::SetWebhookResponse>, Status> {
        self.reads(request, |s, caller, req| async move {
            s.set_webhook(&caller, req).await
        })
        .await
    }

    async fn get_webhook(
        &self,
        request: Request<pb::GetWebhookRequest>,
    ) -> Result<Response<pb::GetWebhookResponse>, Status> {
        self.reads(request, |s, caller, req| async move {
            s.get_webhook(&caller, req).await
        })
        .await
    }

    async fn rematch(
        &self,
        request: Request<pb::RematchRequest>,
    ) -> Result<Response<pb::RematchResponse>, Status> {
        self.writes(request, |s, caller, req| async move {
            s.rematch(&caller, req).await
        })
        .await
    }

    async fn list_my_matches(
        &self,
        request: Request<pb::ListMyMatchesRequest>,
    ) -> Result<Response<pb::ListMyMatchesResponse>, Status> {
        self.reads(request, |s, caller, req| async move {
            s.list_my_matches(&caller, req).await
        })
        .await
    }
}
