//! A round-robin HTTP proxy in front of `serve --http` replicas: every
//! request goes to the next replica (a refused connection tries the one
//! after), the body streamed back as it comes, so one client's session,
//! streams and answers land on every replica in turn.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use http_body_util::{BodyExt as _, Full, combinators::BoxBody};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};

type Body = BoxBody<Bytes, hyper::Error>;

/// A running proxy; dropping it stops it.
pub struct RoundRobin {
    /// Where it listens.
    pub addr: SocketAddr,
    /// How many requests went to each backend, in order.
    pub counts: Arc<Vec<AtomicUsize>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RoundRobin {
    /// Listens on a free loopback port in front of `backends` (`host:port`).
    pub fn start(backends: Vec<String>) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binding the proxy");
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let counts: Arc<Vec<AtomicUsize>> = Arc::new(backends.iter().map(|_| AtomicUsize::new(0)).collect());
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let shared = Arc::new(Proxy { backends, next: AtomicUsize::new(0), counts: counts.clone(), client: client() });
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("the proxy's listener");
                shared.serve(listener, stopped).await
            });
        });
        Self { addr, counts, stop: Some(stop), thread: Some(thread) }
    }

    /// Its `/mcp` URL.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }
}

impl Drop for RoundRobin {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct Proxy {
    backends: Vec<String>,
    next: AtomicUsize,
    counts: Arc<Vec<AtomicUsize>>,
    client: Client<HttpConnector, Full<Bytes>>,
}

/// Connections to the backends without Nagle's delay (with it, every
/// small request waited 40 ms for the replica's delayed acknowledgement).
fn client() -> Client<HttpConnector, Full<Bytes>> {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    Client::builder(TokioExecutor::new()).pool_max_idle_per_host(0).build(connector)
}

impl Proxy {
    async fn serve(
        self: Arc<Self>,
        listener: tokio::net::TcpListener,
        mut stopped: tokio::sync::oneshot::Receiver<()>,
    ) {
        loop {
            let stream = tokio::select! {
                _ = &mut stopped => return,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(_) => continue,
                },
            };
            let _ = stream.set_nodelay(true);
            let proxy = self.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| proxy.clone().forward(request));
                let _ =
                    hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    }

    /// `request` to the next backend that takes a connection.
    async fn forward(self: Arc<Self>, request: Request<Incoming>) -> Result<Response<Body>, Infallible> {
        let (parts, body) = request.into_parts();
        let body = match body.collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) => return Ok(plain(400, format!("reading the request: {e}"))),
        };
        for _ in 0..self.backends.len() {
            let index = self.next.fetch_add(1, Ordering::Relaxed) % self.backends.len();
            let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
            let mut out =
                Request::builder().method(parts.method.clone()).uri(format!("http://{}{path}", self.backends[index]));
            for (name, value) in &parts.headers {
                out = out.header(name, value);
            }
            let out = out.body(Full::new(body.clone())).expect("a request");
            match self.client.request(out).await {
                Ok(response) => {
                    self.counts[index].fetch_add(1, Ordering::Relaxed);
                    return Ok(response.map(|b| b.boxed()));
                }
                Err(e) if e.is_connect() => continue,
                Err(e) => return Ok(plain(502, format!("the replica failed: {e}"))),
            }
        }
        Ok(plain(503, "no replica takes connections".to_string()))
    }
}

fn plain(status: u16, text: String) -> Response<Body> {
    let body = Full::new(Bytes::from(text)).map_err(|never| match never {}).boxed();
    Response::builder().status(status).body(body).expect("a response")
}
