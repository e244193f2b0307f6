//! A loopback tonic server with one hand-written unary method (`test.Echo/Say`, and
//! `test.Echo/Other` for a method no layer names): messages derive `prost::Message`, so
//! no protoc is needed. What each copy does is up to a [`Behavior`]; every copy that
//! reaches the server is logged. Shared by `examples/grpc.rs` and `tests/grpc.rs`.
#![allow(dead_code)]

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hedging_http::ReplayBody;
use tonic::body::Body;
use tonic::metadata::MetadataMap;
use tonic::server::{NamedService, UnaryService};
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};
use tonic_prost::ProstCodec;

pub type Error = Box<dyn std::error::Error + Send + Sync>;

pub const SAY: &str = "/test.Echo/Say";
pub const OTHER: &str = "/test.Echo/Other";

#[derive(Clone, PartialEq, prost::Message)]
pub struct EchoRequest {
    /// What the server does with each copy (see `scripted` in the tests).
    #[prost(string, tag = "1")]
    pub script: String,
    #[prost(bytes = "vec", tag = "2")]
    pub payload: Vec<u8>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct EchoReply {
    /// The copy that answered: its `grpc-previous-rpc-attempts`, 0 for the original.
    #[prost(uint32, tag = "1")]
    pub attempt: u32,
    #[prost(uint64, tag = "2")]
    pub payload_len: u64,
}

/// What the server does with one copy.
#[derive(Clone, Debug, Default)]
pub struct Action {
    /// Wait this long first.
    pub stall: Duration,
    /// Answer with this status, Trailers-Only; `None` answers `OK` with a reply.
    pub status: Option<Code>,
    /// A `grpc-retry-pushback-ms` value to send with the status.
    pub pushback: Option<&'static str>,
}

/// Decides each copy's action from its request and its attempt number.
pub type Behavior = Arc<dyn Fn(&EchoRequest, usize) -> Action + Send + Sync>;

/// One copy as the server saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub path: String,
    pub script: String,
    pub attempt: usize,
    pub at: Instant,
    pub grpc_timeout: Option<String>,
    pub payload_len: usize,
}

/// A running loopback tonic server.
pub struct Server {
    pub addr: SocketAddr,
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    /// Binds 127.0.0.1 on a free port (TCP nodelay on) and serves on the current runtime.
    pub async fn start(behavior: Behavior) -> std::io::Result<Server> {
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let addr = listener.local_addr()?;
        let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let echo = Echo {
            behavior,
            seen: Arc::clone(&seen),
        };
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(echo)
                .serve_with_incoming(incoming),
        );
        Ok(Server { addr, seen })
    }

    /// A channel to this server (TCP nodelay on), connected.
    pub async fn channel(&self) -> Result<Channel, Error> {
        let endpoint = Endpoint::from_shared(format!("http://{}", self.addr))?.tcp_nodelay(true);
        Ok(endpoint.connect().await?)
    }

    /// The copies of calls with `script` that reached the server, in arrival order.
    pub fn seen(&self, script: &str) -> Vec<Seen> {
        let seen = self.seen.lock().unwrap();
        seen.iter()
            .filter(|s| s.script == script)
            .cloned()
            .collect()
    }
}

/// One unary call through any gRPC service stack.
pub async fn say<S>(
    service: S,
    request: tonic::Request<EchoRequest>,
    path: &'static str,
) -> Result<EchoReply, Status>
where
    S: tonic::client::GrpcService<Body>,
    S::Error: Into<Error>,
    S::ResponseBody: http_body::Body<Data = bytes::Bytes> + Send + 'static,
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

/// The body map that puts a hedging layer in front of a tonic `Channel`.
pub fn into_tonic_body(request: http::Request<ReplayBody<Body>>) -> http::Request<Body> {
    request.map(Body::new)
}

#[derive(Clone)]
struct Echo {
    behavior: Behavior,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl NamedService for Echo {
    const NAME: &'static str = "test.Echo";
}

impl tower::Service<http::Request<Body>> for Echo {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let method = Method {
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

struct Method {
    path: String,
    echo: Echo,
}

impl UnaryService<EchoRequest> for Method {
    type Response = EchoReply;
    type Future = Pin<Box<dyn Future<Output = Result<tonic::Response<EchoReply>, Status>> + Send>>;

    fn call(&mut self, request: tonic::Request<EchoRequest>) -> Self::Future {
        let metadata = request.metadata();
        let attempt =
            header(metadata, "grpc-previous-rpc-attempts").map_or(0, |a| a.parse().unwrap());
        let grpc_timeout = header(metadata, "grpc-timeout");
        let message = request.into_inner();
        let action = (self.echo.behavior)(&message, attempt);
        self.echo.seen.lock().unwrap().push(Seen {
            path: self.path.clone(),
            script: message.script.clone(),
            attempt,
            at: Instant::now(),
            grpc_timeout,
            payload_len: message.payload.len(),
        });
        Box::pin(async move {
            if !action.stall.is_zero() {
                tokio::time::sleep(action.stall).await;
            }
            match action.status {
                None => Ok(tonic::Response::new(EchoReply {
                    attempt: attempt as u32,
                    payload_len: message.payload.len() as u64,
                })),
                Some(code) => {
                    let mut metadata = MetadataMap::new();
                    if let Some(pushback) = action.pushback {
                        metadata.insert("grpc-retry-pushback-ms", pushback.parse().unwrap());
                    }
                    Err(Status::with_metadata(code, "scripted", metadata))
                }
            }
        })
    }
}

fn header(metadata: &MetadataMap, name: &str) -> Option<String> {
    metadata.get(name).map(|v| v.to_str().unwrap().to_owned())
}
