//! [`HyperTransport`]: an OpenDAL `HttpTransport` that sends its services' requests with a
//! pooled hyper-util HTTP/1 client (OpenDAL's own reqwest transport needs a TLS backend
//! even for plain HTTP), and [`context`], an operation context that uses it.

use bytes::Bytes;
use futures_util::StreamExt;
use http::header::CONTENT_LENGTH;
use http::{Method, Request, Response};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use opendal::{Buffer, ErrorKind, HttpBody, HttpTransport, HttpTransporter, OperationContext};

/// Sends an OpenDAL service's requests with hyper-util; clones share one pool.
#[derive(Clone, Debug)]
pub struct HyperTransport(hyper_util::client::legacy::Client<HttpConnector, Full<Bytes>>);

impl Default for HyperTransport {
    fn default() -> Self {
        HyperTransport(crate::http::client())
    }
}

impl HttpTransport for HyperTransport {
    async fn fetch(&self, request: Request<Buffer>) -> opendal::Result<Response<HttpBody>> {
        let head = request.method() == Method::HEAD;
        let request = request.map(|body| Full::new(body.to_bytes()));
        let response = self.0.request(request).await.map_err(|error| {
            opendal::Error::new(ErrorKind::Unexpected, "the request failed")
                .set_source(error)
                .set_temporary()
        })?;
        // A HEAD's Content-Length is the object's, not its (empty) body's.
        let size = match head {
            true => None,
            false => response
                .headers()
                .get(CONTENT_LENGTH)
                .and_then(|length| length.to_str().ok()?.parse().ok()),
        };
        let (parts, body) = response.into_parts();
        let body = body.into_data_stream().map(|chunk| {
            chunk.map(Buffer::from).map_err(|error| {
                opendal::Error::new(ErrorKind::Unexpected, "the body broke")
                    .set_source(error)
                    .set_temporary()
            })
        });
        Ok(Response::from_parts(parts, HttpBody::new(body, size)))
    }
}

/// An OpenDAL operation context whose requests go out through a [`HyperTransport`]:
/// `Operator::new(builder)?.with_context(context())`.
pub fn context() -> OperationContext {
    OperationContext::default().with_http_transport(HttpTransporter::new(HyperTransport::default()))
}
