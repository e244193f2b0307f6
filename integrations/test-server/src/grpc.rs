//! [`Server::grpc`]: a loopback tonic server with one hand-written unary service
//! (`test.Echo/Say`, and `test.Echo/Other` for a method no layer names; messages derive
//! `prost::Message`, so no protoc is needed), and [`say`], one call through any gRPC
//! service stack.
//!
//! Every copy is logged with its script as its key; the [`scripted`] behaviour answers
//! copy n (by its `grpc-previous-rpc-attempts`) as the script's n-th part says.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::stream;
use http::Method;
use tonic::body::Body;
use tonic::metadata::MetadataMap;
use tonic::server::{NamedService, UnaryService};
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};
use tonic_prost::ProstCodec;

use crate::answer::{Answer, Behavior};
use crate::log::{Arrival, Clock, Log};
use crate::server::Server;
use crate::Error;

/// The hedged method.
pub const SAY: &str = "/test.Echo/Say";
/// A second method of the same service.
pub const OTHER: &str = "/test.Echo/Other";

/// The request: what the server does with each copy, and a payload to carry.
#[derive(Clone, PartialEq, prost::Message)]
pub struct EchoRequest {
    /// The copies' script ([`Answer::scripted`]), and the key they are logged by.
    #[prost(string, tag = "1")]
    pub script: String,
    #[prost(bytes = "vec", tag = "2")]
    pub payload: Vec<u8>,
}

/// The reply: which copy answered and what it carried.
#[derive(Clone, PartialEq, prost::Message)]
pub struct EchoReply {
    /// The copy that answered: its `grpc-previous-rpc-attempts`, 0 for the original.
    #[prost(uint32, tag = "1")]
    pub attempt: u32,
    #[prost(uint64, tag = "2")]
    pub payload_len: u64,
}

/// A request with `script` and `payload`.
pub fn request(script: &str, payload: &[u8]) -> tonic::Request<EchoRequest> {
    tonic::Request::new(EchoRequest {
        script: script.to_owned(),
        payload: payload.to_vec(),
    })
}

/// The copy a gRPC arrival was: its `grpc-previous-rpc-attempts`, 0 without one.
pub fn attempt(arrival: &Arrival) -> usize {
    arrival
        .header("grpc-previous-rpc-attempts")
        .map_or(0, |a| a.parse().expect("an attempt number"))
}

/// Every copy answers as its script says, by its attempt number.
pub fn scripted() -> Behavior {
    Arc::new(|arrival| Answer::scripted(&arrival.key, attempt(arrival)))
}

impl Server {
    /// A tonic server on 127.0.0.1 and a free port (TCP nodelay on), serving on the
    /// current runtime, its arrivals stamped by `clock`.
    pub async fn grpc(behavior: Behavior, clock: Clock) -> std::io::Result<Server> {
        let log = Log::new(clock);
        let echo = Echo {
            behavior,
            log: log.clone(),
        };
        let accepting = log.clone();
        let (listener, server) = Server::bind(log).await?;
        // Each accepted connection counted; tonic serves them as they come.
        let incoming = stream::unfold(listener, move |listener| {
            let log = accepting.clone();
            async move {
                let accepted = listener.accept().await.map(|(stream, _)| {
                    let _ = stream.set_nodelay(true);
                    log.connected();
                    stream
                });
                Some((accepted, listener))
            }
        });
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(echo)
                .serve_with_incoming(incoming),
        );
        Ok(server)
    }

    /// A channel to this server (TCP nodelay on), connected.
    pub async fn channel(&self) -> Result<Channel, Error> {
        let endpoint = Endpoint::from_shared(format!("http://{}", self.addr))?.tcp_nodelay(true);
        Ok(endpoint.connect().await?)
    }
}

/// One unary call to `path` through any gRPC service stack.
pub async fn say<S>(
    service: S,
    request: tonic::Request<EchoRequest>,
    path: &'static str,
) -> Result<EchoReply, Status>
where
    S: tonic::client::GrpcService<Body>,
    S::Error: Into<Error>,
    S::ResponseBody: http_body::Body<Data = Bytes> + Send + 'static,
    <S::ResponseBody as http_body::Body>::Error: Into<Error>,
{
    let mut grpc = tonic::client::Grpc::new(service);
    grpc.ready()
        .await
        .map_err(|e| Status::unavailable(e.into().to_string()))?;
    let path = http::uri::PathAndQuery::from_static(path);
    let reply = grpc.unary(request, path, ProstCodec::default()).await?;
    Ok(reply.into_inner())
}

#[derive(Clone)]
struct Echo {
    behavior: Behavior,
    log: Log,
}

impl NamedService for Echo {
    const NAME: &'static str = "test.Echo";
}

impl tower_service::Service<http::Request<Body>> for Echo {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let method = EchoMethod {
            path: request.uri().path().to_owned(),
            echo: self.clone(),
        };
        Box::pin(async move {
            if method.path != SAY && method.path != OTHER {
                return Ok(Status::unimplemented(method.path).into_http());
            }
            let mut grpc =
                tonic::server::Grpc::new(ProstCodec::<EchoReply, EchoRequest>::default());
            Ok(grpc.unary(method, request).await)
        })
    }
}

struct EchoMethod {
    path: String,
    echo: Echo,
}

impl UnaryService<EchoRequest> for EchoMethod {
    type Response = EchoReply;
    type Future = Pin<Box<dyn Future<Output = Result<tonic::Response<EchoReply>, Status>> + Send>>;

    fn call(&mut self, request: tonic::Request<EchoRequest>) -> Self::Future {
        let headers = request.metadata().clone().into_headers();
        let message = request.into_inner();
        let log = self.echo.log.clone();
        let arrival = log.arrive(
            message.script.clone(),
            Method::POST,
            self.path.clone(),
            headers,
            Bytes::from(message.payload),
        );
        let answer = (self.echo.behavior)(&arrival);
        let answering = log.answering();
        Box::pin(async move {
            log.hold(&arrival.key, answer.hold).await;
            answering.done();
            match answer.status {
                None => Ok(tonic::Response::new(EchoReply {
                    attempt: attempt(&arrival) as u32,
                    payload_len: arrival.body.len() as u64,
                })),
                Some(code) => {
                    let metadata = MetadataMap::from_headers(answer.headers);
                    Err(Status::with_metadata(
                        Code::from_i32(i32::from(code)),
                        "scripted",
                        metadata,
                    ))
                }
            }
        })
    }
}
