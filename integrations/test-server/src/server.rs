//! [`Server`]: a running loopback server of any protocol, and its [`Log`].

use std::net::SocketAddr;
use std::ops::Deref;

use bytes::Bytes;
use http::{Method, Request, Response, Uri};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;

use crate::answer::SCRIPT;
use crate::log::Log;

/// A running loopback server: HTTP ([`Server::http`]) or gRPC (`Server::grpc`, feature
/// `grpc`). It derefs to its [`Log`].
#[derive(Debug)]
pub struct Server {
    /// Where it listens: 127.0.0.1 and a free port.
    pub addr: SocketAddr,
    log: Log,
}

/// An address on 127.0.0.1 where nothing listens: a connection to it is refused at once
/// (a port just bound and let go).
pub fn refusing_address() -> SocketAddr {
    let listener = std::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .expect("a free port on loopback");
    listener.local_addr().expect("a bound address")
}

impl Server {
    /// Binds 127.0.0.1 on a free port (TCP nodelay on for every connection).
    pub(crate) async fn bind(log: Log) -> std::io::Result<(TcpListener, Server)> {
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let addr = listener.local_addr()?;
        Ok((listener, Server { addr, log }))
    }

    /// `http://127.0.0.1:port` and `path`.
    pub fn uri(&self, path: &str) -> Uri {
        self.url(path).parse().expect("a valid uri")
    }

    /// `http://127.0.0.1:port`: this server as an origin.
    pub fn origin(&self) -> String {
        self.url("")
    }

    /// `http://127.0.0.1:port` and `path`, as text.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// A request to `path` whose copies answer as `script` says ([`Answer::scripted`]).
    ///
    /// [`Answer::scripted`]: crate::Answer::scripted
    pub fn request<B>(&self, method: Method, path: &str, script: &str, body: B) -> Request<B> {
        let mut request = Request::new(body);
        *request.method_mut() = method;
        *request.uri_mut() = self.uri(path);
        let script = script.parse().expect("a script fits in a header");
        request.headers_mut().insert(SCRIPT, script);
        request
    }
}

impl Deref for Server {
    type Target = Log;

    fn deref(&self) -> &Log {
        &self.log
    }
}

/// A request read whole: its head, and its body (empty if reading it failed).
pub(crate) async fn read_whole(request: Request<Incoming>) -> (http::request::Parts, Bytes) {
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    (parts, body)
}

/// Serves HTTP/1.1 and HTTP/2 on every connection `listener` accepts, each with the
/// service `service` makes from the log; counts each connection accepted, and closed
/// when its client closes it (or resets it).
pub(crate) async fn serve<S, B>(listener: TcpListener, log: Log, service: impl Fn(Log) -> S)
where
    S: hyper::service::Service<Request<Incoming>, Response = Response<B>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    while let Ok((stream, _)) = listener.accept().await {
        let _ = stream.set_nodelay(true);
        log.connected();
        let (serving, closing) = (service(log.clone()), log.clone());
        tokio::spawn(async move {
            let connection = auto::Builder::new(TokioExecutor::new());
            let _ = connection
                .serve_connection(TokioIo::new(stream), serving)
                .await;
            closing.disconnected();
        });
    }
}
