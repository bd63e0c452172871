//! The HTTP/1.1 server of `serve`: [hyper] on a small [tokio] runtime of its own (two worker
//! threads), optionally behind TLS ([rustls], the `ring` provider). Connections are served by
//! tasks, not threads: an idle or slow client costs a socket and a few kilobytes, never a
//! thread, and holds only its own connection. The caller (the master thread) stays a plain
//! thread: it reads complete requests from the [`std::sync::mpsc`] channel [`Server::bind`]
//! returns and answers them from there; answering never blocks.
//!
//! * **Requests.** Each request is handed to the caller as a [`Request`] (method, path, query,
//!   headers, body) once its body has been read in full. hyper parses the head and the body
//!   (`Content-Length` or chunked; a malformed or overflowing chunk size is a `400`);
//!   `Expect: 100-continue` is answered when the body is first read, so a body declared too
//!   large is refused (`413`) before the client sends it. Header names arrive in lower case.
//! * **Keep-alive.** HTTP/1.1 connections stay open for further requests (HTTP/1.0 ones only
//!   with `Connection: keep-alive`) until the client sends `Connection: close`, closes, or stays
//!   silent for [`Limits::idle_timeout`] (60 s by default). Pipelined requests are answered in
//!   order.
//! * **Timeouts.** A request head must arrive within [`Limits::header_timeout`] of its first
//!   byte (of the connection's start, for its first request; of the end of the answer before
//!   it, for a head whose start was pipelined behind a request), or the connection is closed
//!   without an answer (a slowloris holds its socket for that long at most); a body must
//!   arrive within [`Limits::body_timeout`] of the head (`408` otherwise); a connection that
//!   has nothing in progress is closed after [`Limits::idle_timeout`]; an answer the client
//!   does not read counts as idle time.
//! * **Limits.** A body over [`Limits::max_body`] is answered `413` (then the connection
//!   closes lingering, as nginx's does: what the client still sends is read and dropped for a
//!   bounded time, so that it reads its answer rather than a reset), a head over
//!   [`Limits::max_head`] `431` (by hyper). At most [`Limits::max_connections`] *request*
//!   connections are open at once, and at most [`Limits::max_connections_per_address`] from
//!   one client address. When every place is taken, the connection idle (kept alive with
//!   nothing in progress) or in its head for more than a second since the head began
//!   (trickling or silent: a real client sends its head at once) the longest is closed to make
//!   room, as nginx does; a connection over the per-address limit, or over the global
//!   one with none to close, is answered `503` at once (closed without an answer under TLS)
//!   and nobody else is affected. A connection's place is held by
//!   a guard and is given back however the connection ends (a panic in its task included).
//! * **Answers.** [`Request::respond`] (a JSON body), [`Request::respond_with`] (any
//!   [`Response`]: status, headers, body) or [`Request::stream`]: a long-lived chunked answer
//!   that the returned [`Stream`] handle keeps writing to, from any thread, one chunk per
//!   [`Stream::send`] (what the Mesos scheduler API's `SUBSCRIBE` needs). A connection that
//!   becomes a stream gives back its request place (streams do not count against
//!   [`Limits::max_connections`] nor the per-address limit) and takes one of
//!   [`Limits::max_streams`] instead, at most [`Limits::max_streams_per_address`] from one
//!   client address (over either, the request is answered `503`). An *observer* stream
//!   ([`Request::observer_stream`]: one that only watches, as the operator API's event stream)
//!   also takes one of [`Limits::max_observer_streams`] places, a share of
//!   [`Limits::max_streams`], so that observers can never take the places the other streams
//!   need; and what the observer streams together hold unread (each chunk once, being
//!   written included) is bounded by [`Limits::observer_queue_bytes`]: a chunk that would pass
//!   it cuts off the observer streams holding the most until it fits. `send` never blocks,
//!   and a chunk sent to many streams is one copy in memory ([`Chunk`]: reference-counted,
//!   shared by every queue it waits in); a client that stops
//!   reading fills its stream's queue, which is bounded in bytes
//!   ([`Limits::stream_queue_bytes`]; one chunk larger than that is still taken into an empty
//!   queue) and in chunks ([`Limits::stream_queue`]), and the stream is then cut off
//!   ([`StreamError::Overflow`]: the connection is closed, and a warning logged) rather than
//!   holding up the sender or growing; and a stream whose queued chunks (or final
//!   chunk, after [`Stream::close`]) the client does not take for [`Limits::idle_timeout`] is
//!   cut off too, even when nothing more is sent; an ended stream's last bytes must be written
//!   within [`Limits::body_timeout`]. A stream ends when [`Stream::close`] is
//!   called, every handle is dropped, the client closes its connection, or it is cut off; its
//!   `on_close` callback then runs exactly once.
//! * **TLS.** [`Server::bind_tls`] with a [`Tls`] made from PEM files ([`Tls::load`]) serves
//!   HTTPS only; the handshake must end within [`Limits::header_timeout`].
//!
//! This crate is the only one that knows hyper, tokio and rustls. It knows nothing of Mesos,
//! the master core or the simulation: a request is bytes in, an answer bytes out.
#![deny(missing_docs)]

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::body::{Body, Bytes, Frame as BodyFrame, Incoming, SizeHint};
use hyper::header::{HeaderName, HeaderValue};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::sync::{Notify, oneshot};

/// The server's limits and timeouts.
#[derive(Clone, Debug)]
pub struct Limits {
    /// A request line and headers must arrive within this long of their first byte (of the
    /// connection's start, for its first request); otherwise the connection is closed. Also
    /// the longest a TLS handshake may take.
    pub header_timeout: Duration,
    /// The body must arrive within this long after the head (`408` otherwise).
    pub body_timeout: Duration,
    /// A connection with nothing in progress (no request being read or answered) for this
    /// long is closed.
    pub idle_timeout: Duration,
    /// Largest body accepted, in bytes; larger gets `413`.
    pub max_body: usize,
    /// Largest request head (request line and headers), in bytes (at least 8 KiB); larger
    /// gets `431`.
    pub max_head: usize,
    /// Request connections open at once (streams not included); more are answered `503`.
    pub max_connections: usize,
    /// Request connections open at once from one client address; more are answered `503`.
    pub max_connections_per_address: usize,
    /// Streams ([`Request::stream`]) open at once; more are answered `503`.
    pub max_streams: usize,
    /// Streams open at once from one client address; more are answered `503`, so that one
    /// client cannot take every stream place.
    pub max_streams_per_address: usize,
    /// Chunks a [`Stream`] queues for a client that does not read them before it is cut off.
    pub stream_queue: usize,
    /// Bytes a [`Stream`] queues for a client that does not read them before it is cut off
    /// (a chunk larger than this is still taken when nothing else waits).
    pub stream_queue_bytes: usize,
    /// Observer streams ([`Request::observer_stream`]) open at once, a share of
    /// [`Limits::max_streams`]; more are answered `503`.
    pub max_observer_streams: usize,
    /// Bytes every observer stream together holds for clients that have not read them (each
    /// chunk counted once, however many hold it; being written included). A chunk that would
    /// pass this cuts off the observer streams holding the most until it fits (one chunk
    /// larger than this is still taken when none is held).
    pub observer_queue_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_body: 1 << 20,
            max_head: 16 << 10,
            max_connections: 1024,
            max_connections_per_address: 128,
            max_streams: 1024,
            max_streams_per_address: 64,
            stream_queue: 4096,
            stream_queue_bytes: 16 << 20,
            max_observer_streams: 256,
            observer_queue_bytes: 128 << 20,
        }
    }
}

/// Where the server's certificate chain and private key are (PEM files).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain, leaf first (PEM).
    pub cert: PathBuf,
    /// The private key (PEM: PKCS #8, PKCS #1 or SEC1).
    pub key: PathBuf,
}

/// A TLS server configuration (rustls with the `ring` provider; TLS 1.2 and 1.3).
#[derive(Clone)]
pub struct Tls(Arc<rustls::ServerConfig>);

impl Tls {
    /// Reads the certificate chain and key. `Err` is a one-line message naming the file.
    pub fn load(files: &TlsFiles) -> Result<Tls, String> {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let cert_file = files.cert.display();
        let certs = CertificateDer::pem_file_iter(&files.cert)
            .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
            .map_err(|e| format!("cannot read the certificate file '{cert_file}': {e}"))?;
        if certs.is_empty() {
            return Err(format!("no certificate in '{cert_file}'"));
        }
        let key = PrivateKeyDer::from_pem_file(&files.key)
            .map_err(|e| format!("cannot read the key file '{}': {e}", files.key.display()))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| format!("the certificate and key do not go together: {e}"))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Tls(Arc::new(config)))
    }
}

/// A complete answer: status, headers and body. `Content-Length` and `Connection` are added
/// by the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// The status code (`200`, `202`, `400`, …).
    pub status: u16,
    /// Headers to send, in order (for example `Content-Type`, `Mesos-Stream-Id`).
    pub headers: Vec<(String, String)>,
    /// The body (may be empty).
    pub body: Vec<u8>,
}

impl Response {
    /// A JSON answer: `Content-Type: application/json` and `body`.
    pub fn json(status: u16, body: String) -> Response {
        Response {
            status,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: body.into_bytes(),
        }
    }

    /// A plain-text answer (`Content-Type: text/plain; charset=utf-8`), as Mesos gives the
    /// one-line reason of a refused call.
    pub fn text(status: u16, message: &str) -> Response {
        Response {
            status,
            headers: vec![("Content-Type".into(), "text/plain; charset=utf-8".into())],
            body: message.as_bytes().to_vec(),
        }
    }

    /// An HTML page (`Content-Type: text/html; charset=utf-8`).
    pub fn html(status: u16, page: &str) -> Response {
        Response {
            status,
            headers: vec![("Content-Type".into(), "text/html; charset=utf-8".into())],
            body: page.as_bytes().to_vec(),
        }
    }

    /// An answer without a body (for example `202 Accepted`).
    pub fn empty(status: u16) -> Response {
        Response { status, headers: Vec::new(), body: Vec::new() }
    }

    /// `self` with one more header.
    pub fn with_header(mut self, name: &str, value: &str) -> Response {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
}

/// Bytes to send on streams ([`Stream::send_chunk`]), reference-counted: cloning a chunk
/// or sending it on a thousand streams copies nothing, so an event encoded once for every
/// subscriber is one copy in memory for as long as any of their queues holds it.
#[derive(Clone, Debug, Default)]
pub struct Chunk {
    bytes: Bytes,
    /// How many observer streams hold it (queued or being written), shared by its clones: its
    /// bytes count once against [`Limits::observer_queue_bytes`] while any does.
    observers: Arc<AtomicUsize>,
}

impl PartialEq for Chunk {
    fn eq(&self, other: &Chunk) -> bool {
        self.bytes == other.bytes
    }
}

impl Eq for Chunk {}

impl Chunk {
    fn new(bytes: Bytes) -> Chunk {
        Chunk { bytes, observers: Arc::new(AtomicUsize::new(0)) }
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether it has no bytes.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Its bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl From<Vec<u8>> for Chunk {
    fn from(bytes: Vec<u8>) -> Chunk {
        Chunk::new(Bytes::from(bytes))
    }
}

impl From<&[u8]> for Chunk {
    fn from(bytes: &[u8]) -> Chunk {
        Chunk::new(Bytes::copy_from_slice(bytes))
    }
}

impl From<String> for Chunk {
    fn from(text: String) -> Chunk {
        Chunk::new(Bytes::from(text))
    }
}

/// What every observer stream together holds for clients that have not read it: each chunk
/// counted once however many of them hold it ([`Limits::observer_queue_bytes`]).
struct ObserverBudget {
    /// Bytes of the chunks some observer stream holds (queued, or being written).
    held: AtomicUsize,
    max: usize,
    /// The observer streams open, to choose the one to cut off when the budget is full.
    streams: Mutex<Vec<std::sync::Weak<StreamState>>>,
}

impl ObserverBudget {
    fn register(&self, state: &Arc<StreamState>) {
        let mut streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        streams.retain(|s| s.strong_count() > 0);
        streams.push(Arc::downgrade(state));
    }

    /// Takes `chunk` into the budget for stream `me`. When it would pass the budget, the
    /// observer streams holding the most unread bytes are cut off (each with a warning) until
    /// what they alone hold makes room for it; `false` (the chunk not queued) when `me` is
    /// among them. One chunk larger than the budget is still taken when nothing is held.
    fn admit(&self, chunk: &Chunk, me: &Arc<StreamState>) -> bool {
        let len = chunk.len();
        if chunk.observers.fetch_add(1, Ordering::SeqCst) > 0 {
            // Already held by another observer stream: no new memory.
            return true;
        }
        let before = self.held.fetch_add(len, Ordering::SeqCst);
        let max = self.max;
        if before == 0 || before.saturating_add(len) <= max {
            return true;
        }
        let streams: Vec<Arc<StreamState>> = self
            .streams
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter_map(std::sync::Weak::upgrade)
            .collect();
        // Streams already ended give back what they hold as their connections close.
        let (mut going, open): (Vec<_>, Vec<_>) =
            streams.into_iter().partition(|s| s.closed.load(Ordering::SeqCst));
        let mut open: Vec<(usize, Arc<StreamState>)> = open
            .into_iter()
            .map(|s| (s.unread.load(Ordering::SeqCst), s))
            .filter(|(unread, _)| *unread > 0)
            .collect();
        open.sort_by_key(|(unread, _)| std::cmp::Reverse(*unread));
        let mut open = open.into_iter();
        while before.saturating_sub(freed_by(&going)).saturating_add(len) > max {
            let Some((unread, victim)) = open.next() else { break };
            let why = format_args!(
                "the observer streams together hold {before} bytes unread, and {len} more would \
                 pass their {max}-byte bound; this one holds the most, {unread} bytes"
            );
            if Arc::ptr_eq(&victim, me) {
                self.release(chunk);
                me.overflow(why);
                return false;
            }
            victim.overflow(why);
            going.push(victim);
        }
        true
    }

    /// One observer stream no longer holds `chunk`.
    fn release(&self, chunk: &Chunk) {
        if chunk.observers.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.held.fetch_sub(chunk.len(), Ordering::SeqCst);
        }
    }
}

/// Bytes that only `streams` hold among the observer streams: what closing them gives back.
fn freed_by(streams: &[Arc<StreamState>]) -> usize {
    // Each stream's list is locked alone (never two at once), its chunks counted.
    let mut holders: HashMap<*const AtomicUsize, (usize, Chunk)> = HashMap::new();
    for stream in streams {
        let list = stream.held.lock().unwrap_or_else(|e| e.into_inner()).clone();
        for c in list {
            holders.entry(Arc::as_ptr(&c.observers)).or_insert_with(|| (0, c.clone())).0 += 1;
        }
    }
    holders
        .values()
        .filter(|(n, c)| *n >= c.observers.load(Ordering::SeqCst))
        .map(|(_, c)| c.len())
        .sum()
}

/// A chunk queued on a stream or being written to its client: for an observer stream, its
/// bytes count against [`Limits::observer_queue_bytes`] until this is dropped (the chunk
/// written in full, or the stream gone).
struct Held {
    chunk: Chunk,
    state: Arc<StreamState>,
}

impl Held {
    /// `chunk`, held from now on by `state`'s stream.
    fn new(chunk: &Chunk, state: &Arc<StreamState>) -> Held {
        if state.budget.is_some() {
            state.unread.fetch_add(chunk.len(), Ordering::SeqCst);
            state.held.lock().unwrap_or_else(|e| e.into_inner()).push_back(chunk.clone());
        }
        Held { chunk: chunk.clone(), state: state.clone() }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(budget) = &self.state.budget {
            let mut held = self.state.held.lock().unwrap_or_else(|e| e.into_inner());
            let me = Arc::as_ptr(&self.chunk.observers);
            if let Some(i) = held.iter().position(|c| Arc::as_ptr(&c.observers) == me) {
                held.remove(i);
            }
            drop(held);
            self.state.unread.fetch_sub(self.chunk.len(), Ordering::SeqCst);
            budget.release(&self.chunk);
        }
    }
}

/// The data of an answer's body as hyper writes it: a stream's chunk keeps its place in the
/// observer budget until hyper has written it and drops it.
struct OutBuf {
    bytes: Bytes,
    _held: Option<Held>,
}

impl hyper::body::Buf for OutBuf {
    fn remaining(&self) -> usize {
        self.bytes.remaining()
    }

    fn chunk(&self) -> &[u8] {
        self.bytes.chunk()
    }

    fn advance(&mut self, cnt: usize) {
        self.bytes.advance(cnt)
    }
}

/// What a connection's task is told to answer.
enum Reply {
    Whole(Response),
    Stream(StreamStart),
}

/// A streamed answer, handed to the connection's task.
struct StreamStart {
    status: u16,
    headers: Vec<(String, String)>,
    body: StreamBody,
}

/// One item of a stream's queue.
enum Frame {
    Chunk(Held),
    End,
}

/// What a [`Request`] needs to open a stream.
#[derive(Clone)]
struct StreamRoom {
    open: Arc<AtomicUsize>,
    max: usize,
    per_address: Arc<Mutex<HashMap<IpAddr, usize>>>,
    max_per_address: usize,
    observers: Arc<AtomicUsize>,
    max_observers: usize,
    observer_budget: Arc<ObserverBudget>,
    queue: usize,
    queue_bytes: usize,
}

/// A request read in full, waiting for its answer. Dropping it unanswered closes its
/// connection without an answer.
pub struct Request {
    /// `GET`, `POST`, … as sent.
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query (after `?`, undecoded; empty when there is none).
    pub query: String,
    /// The headers in the order sent, names in lower case (look them up with
    /// [`Request::header`]).
    pub headers: Vec<(String, String)>,
    /// The body as text (UTF-8, lossily).
    pub body: String,
    reply: oneshot::Sender<Reply>,
    conn: Arc<Conn>,
    streams: StreamRoom,
}

impl Request {
    /// The value of header `name` (case-insensitive; the first one when repeated).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// Sends the answer (a JSON body) to the client.
    pub fn respond(self, status: u16, json: String) {
        self.respond_with(Response::json(status, json));
    }

    /// Sends `response` to the client.
    pub fn respond_with(self, response: Response) {
        let _ = self.reply.send(Reply::Whole(response));
    }

    /// Answers with a chunked stream: the status and `headers` now (the server adds
    /// `Transfer-Encoding: chunked` and `Connection: close`), then one chunk per
    /// [`Stream::send`] until the stream ends (see the module documentation). `on_close` runs
    /// once when it ends, for whatever reason, on whichever thread ends it. When the client is
    /// already gone, or [`Limits::max_streams`] streams are open (the client is then answered
    /// `503`), the stream returned is closed and `on_close` has run.
    pub fn stream(
        self,
        status: u16,
        headers: Vec<(String, String)>,
        on_close: impl FnOnce() + Send + 'static,
    ) -> Stream {
        self.open_stream(false, status, headers, Box::new(on_close))
    }

    /// As [`Request::stream`], for a stream that only watches (the operator API's event
    /// stream): it also takes one of [`Limits::max_observer_streams`] places, so that
    /// observers cannot take every stream place; over that share the client is answered
    /// `503` and the stream returned is closed.
    pub fn observer_stream(
        self,
        status: u16,
        headers: Vec<(String, String)>,
        on_close: impl FnOnce() + Send + 'static,
    ) -> Stream {
        self.open_stream(true, status, headers, Box::new(on_close))
    }

    fn open_stream(
        self,
        observer: bool,
        status: u16,
        headers: Vec<(String, String)>,
        on_close: Box<dyn FnOnce() + Send>,
    ) -> Stream {
        let (tx, rx) = tokio::sync::mpsc::channel(self.streams.queue.max(1));
        let state = Arc::new(StreamState {
            closed: AtomicBool::new(false),
            queued_bytes: AtomicUsize::new(0),
            max_bytes: self.streams.queue_bytes,
            conn: self.conn,
            budget: observer.then(|| self.streams.observer_budget.clone()),
            unread: AtomicUsize::new(0),
            held: Mutex::new(std::collections::VecDeque::new()),
        });
        let stream = Stream { tx, state: state.clone() };
        let Some(slot) = StreamSlot::take(&self.streams, state.conn.ip, observer) else {
            // The connection is answered and closed: its request place goes back now.
            drop(state.conn.take_request_slot());
            state.closed.store(true, Ordering::SeqCst);
            let busy = Response::json(503, error_json("too many open streams; try again later"));
            let _ = self.reply.send(Reply::Whole(busy.with_header("Connection", "close")));
            on_close();
            return stream;
        };
        // From now on the connection is a stream: it no longer holds a request place.
        drop(state.conn.take_request_slot());
        if let Some(budget) = &state.budget {
            budget.register(&state);
        }
        let guard = StreamGuard { on_close: Some(on_close), state, _slot: slot };
        let body = StreamBody { rx, done: false, _guard: guard };
        // When the client is gone the start comes back and is dropped here: `on_close` runs.
        let _ = self.reply.send(Reply::Stream(StreamStart { status, headers, body }));
        stream
    }
}

/// Why a chunk was not queued on a [`Stream`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// The stream has ended (closed by the server, the client gone, or a write failed).
    #[error("the stream is closed")]
    Closed,
    /// The client did not read what was sent; the stream has been cut off.
    #[error("the client does not read its stream; cut off")]
    Overflow,
}

/// What a stream's handles and its body share.
struct StreamState {
    closed: AtomicBool,
    /// Bytes of the chunks queued and not yet taken by the client's connection.
    queued_bytes: AtomicUsize,
    /// [`Limits::stream_queue_bytes`].
    max_bytes: usize,
    conn: Arc<Conn>,
    /// For an observer stream, the budget of every observer stream.
    budget: Option<Arc<ObserverBudget>>,
    /// For an observer stream, bytes of the chunks it holds (queued, or being written).
    unread: AtomicUsize,
    /// For an observer stream, the chunks it holds, oldest first.
    held: Mutex<std::collections::VecDeque<Chunk>>,
}

impl StreamState {
    /// Ends the stream at once: its connection is closed without the final chunk.
    fn cut_off(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.conn.abort.notify_one();
    }

    /// Cuts off a stream whose client does not read, saying so once.
    fn overflow(&self, why: std::fmt::Arguments<'_>) {
        if !self.closed.load(Ordering::SeqCst) {
            log::warn!("http: the stream to {} is cut off: {why}", self.conn.peer);
        }
        self.cut_off();
    }
}

/// The server's handle on a streamed answer ([`Request::stream`]): cheap to clone, usable
/// from any thread. The stream ends when [`Stream::close`] is called or every handle is
/// dropped (the final empty chunk is then written), or when the client goes.
#[derive(Clone)]
pub struct Stream {
    tx: tokio::sync::mpsc::Sender<Frame>,
    state: Arc<StreamState>,
}

impl Stream {
    /// Queues a copy of `data` as one chunk; never blocks. Empty data is ignored (an empty
    /// chunk would end the stream). `Err` once the stream has ended; a full queue cuts the
    /// stream off. To send the same bytes on many streams, make one [`Chunk`] and
    /// [`Stream::send_chunk`] it.
    pub fn send(&self, data: &[u8]) -> Result<(), StreamError> {
        if self.is_closed() {
            return Err(StreamError::Closed);
        }
        self.send_chunk(&Chunk::from(data))
    }

    /// Queues `chunk` (shared, not copied); never blocks. Empty chunks are ignored. `Err`
    /// once the stream has ended; a queue that would hold more than
    /// [`Limits::stream_queue_bytes`] (unless it is empty) or [`Limits::stream_queue`] chunks
    /// cuts the stream off, with a warning in the log.
    pub fn send_chunk(&self, chunk: &Chunk) -> Result<(), StreamError> {
        if self.is_closed() {
            return Err(StreamError::Closed);
        }
        if chunk.is_empty() {
            return Ok(());
        }
        let (len, max) = (chunk.len(), self.state.max_bytes);
        let before = self.state.queued_bytes.fetch_add(len, Ordering::SeqCst);
        if before > 0 && before.saturating_add(len) > max {
            self.state.queued_bytes.fetch_sub(len, Ordering::SeqCst);
            self.state.overflow(format_args!(
                "its client left {before} bytes unread, and {len} more would pass the {max}-byte bound"
            ));
            return Err(StreamError::Overflow);
        }
        if let Some(budget) = &self.state.budget
            && !budget.admit(chunk, &self.state)
        {
            self.state.queued_bytes.fetch_sub(len, Ordering::SeqCst);
            return Err(StreamError::Overflow);
        }
        // From here on the chunk's place in the observer budget goes with `held`.
        let held = Held::new(chunk, &self.state);
        use tokio::sync::mpsc::error::TrySendError;
        match self.tx.try_send(Frame::Chunk(held)) {
            Ok(()) => {
                self.state.conn.queued();
                Ok(())
            }
            Err(TrySendError::Full(_)) => {
                self.state.queued_bytes.fetch_sub(len, Ordering::SeqCst);
                let chunks = self.tx.max_capacity();
                self.state.overflow(format_args!("its client left {chunks} chunks unread"));
                Err(StreamError::Overflow)
            }
            Err(TrySendError::Closed(_)) => {
                self.state.queued_bytes.fetch_sub(len, Ordering::SeqCst);
                self.state.closed.store(true, Ordering::SeqCst);
                Err(StreamError::Closed)
            }
        }
    }

    /// `true` once the stream has ended (or is being cut off); nothing more will reach the
    /// client.
    pub fn is_closed(&self) -> bool {
        self.state.closed.load(Ordering::SeqCst)
    }

    /// Ends the stream after the chunks already queued (the final empty chunk is written and
    /// the connection closed). Later sends fail with [`StreamError::Closed`].
    pub fn close(&self) {
        if self.state.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        if self.tx.try_send(Frame::End).is_err() {
            // Full (or gone): cut off at once.
            self.state.cut_off();
        } else {
            self.state.conn.queued();
        }
    }
}

/// Runs a stream's `on_close` once, however its body goes (ended, dropped with its
/// connection, never started), and gives back its place among the streams.
struct StreamGuard {
    on_close: Option<Box<dyn FnOnce() + Send>>,
    state: Arc<StreamState>,
    _slot: StreamSlot,
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.state.closed.store(true, Ordering::SeqCst);
        if let Some(f) = self.on_close.take() {
            f();
        }
    }
}

/// A place among the open streams (in the global count, its address's and, for an observer,
/// the observers'), given back when dropped.
struct StreamSlot {
    open: Arc<AtomicUsize>,
    per_address: Arc<Mutex<HashMap<IpAddr, usize>>>,
    ip: IpAddr,
    /// The observers' count, for an observer stream.
    observers: Option<Arc<AtomicUsize>>,
}

impl StreamSlot {
    fn take(room: &StreamRoom, ip: IpAddr, observer: bool) -> Option<StreamSlot> {
        let mut per_address = room.per_address.lock().unwrap_or_else(|e| e.into_inner());
        let from_ip = per_address.get(&ip).copied().unwrap_or(0);
        if from_ip >= room.max_per_address {
            return None;
        }
        let take = |count: &AtomicUsize, max: usize| {
            count
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < max).then_some(n + 1))
                .is_ok()
        };
        if observer && !take(&room.observers, room.max_observers) {
            return None;
        }
        if !take(&room.open, room.max) {
            if observer {
                room.observers.fetch_sub(1, Ordering::SeqCst);
            }
            return None;
        }
        per_address.insert(ip, from_ip + 1);
        Some(StreamSlot {
            open: room.open.clone(),
            per_address: room.per_address.clone(),
            ip,
            observers: observer.then(|| room.observers.clone()),
        })
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut per_address = self.per_address.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = per_address.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                per_address.remove(&self.ip);
            }
        }
        self.open.fetch_sub(1, Ordering::SeqCst);
        if let Some(observers) = &self.observers {
            observers.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// A stream's body: the queued chunks until `End` or every sender is gone.
struct StreamBody {
    rx: tokio::sync::mpsc::Receiver<Frame>,
    done: bool,
    _guard: StreamGuard,
}

/// The body of an answer: whole, or a stream.
enum AnswerBody {
    Whole(Option<Bytes>),
    Stream(StreamBody),
}

impl Body for AnswerBody {
    type Data = OutBuf;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<BodyFrame<OutBuf>, Infallible>>> {
        match self.get_mut() {
            AnswerBody::Whole(data) => Poll::Ready(
                data.take().map(|bytes| Ok(BodyFrame::data(OutBuf { bytes, _held: None }))),
            ),
            AnswerBody::Stream(s) => {
                if s.done {
                    return Poll::Ready(None);
                }
                let state = &s._guard.state;
                let conn = &state.conn;
                match s.rx.poll_recv(cx) {
                    Poll::Ready(Some(Frame::Chunk(held))) => {
                        state.queued_bytes.fetch_sub(held.chunk.len(), Ordering::SeqCst);
                        conn.taken();
                        let bytes = held.chunk.bytes.clone();
                        Poll::Ready(Some(Ok(BodyFrame::data(OutBuf { bytes, _held: Some(held) }))))
                    }
                    Poll::Ready(Some(Frame::End) | None) => {
                        conn.taken();
                        // What is left to write must go within the body timeout.
                        conn.set_phase(CLOSING);
                        s.done = true;
                        s._guard.state.closed.store(true, Ordering::SeqCst);
                        Poll::Ready(None)
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            AnswerBody::Whole(data) => data.is_none(),
            AnswerBody::Stream(s) => s.done,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            AnswerBody::Whole(data) => {
                SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64))
            }
            AnswerBody::Stream(_) => SizeHint::default(),
        }
    }
}

/// A listening server; requests arrive on the channel returned by [`Server::bind`].
pub struct Server {
    addr: SocketAddr,
    tls: bool,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Server {
    /// Listens on `addr` (plain HTTP) and serves connections on the server's own runtime.
    pub fn bind(addr: &str, limits: Limits) -> std::io::Result<(Server, mpsc::Receiver<Request>)> {
        Server::bind_tls(addr, limits, None)
    }

    /// Listens on `addr`; with `tls`, every connection is HTTPS.
    pub fn bind_tls(
        addr: &str,
        limits: Limits,
        tls: Option<Tls>,
    ) -> std::io::Result<(Server, mpsc::Receiver<Request>)> {
        let addrs: Vec<SocketAddr> = addr.to_socket_addrs()?.collect();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("http")
            .enable_io()
            .enable_time()
            .build()?;
        let listener = {
            let _inside = runtime.enter();
            listen(&addrs)?
        };
        let addr = listener.local_addr()?;
        let (tx, rx) = mpsc::channel();
        let observer_budget = Arc::new(ObserverBudget {
            held: AtomicUsize::new(0),
            max: limits.observer_queue_bytes,
            streams: Mutex::new(Vec::new()),
        });
        let shared = Arc::new(Shared {
            limits,
            requests: tx,
            open: AtomicUsize::new(0),
            per_address: Mutex::new(HashMap::new()),
            streams: Arc::new(AtomicUsize::new(0)),
            streams_per_address: Arc::new(Mutex::new(HashMap::new())),
            observer_streams: Arc::new(AtomicUsize::new(0)),
            observer_budget,
            conns: Mutex::new(HashMap::new()),
            next_conn: AtomicU64::new(0),
            lingering: AtomicUsize::new(0),
            epoch: Instant::now(),
        });
        let is_tls = tls.is_some();
        let acceptor = tls.map(|t| tokio_rustls::TlsAcceptor::from(t.0));
        runtime.spawn(accept_loop(listener, shared, acceptor));
        Ok((Server { addr, tls: is_tls, runtime: Some(runtime) }, rx))
    }

    /// The address listened on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `"https"` when serving TLS, else `"http"`.
    pub fn scheme(&self) -> &'static str {
        if self.tls { "https" } else { "http" }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Every connection's task is dropped: sockets close, streams' `on_close` run, and the
        // request channel's sender goes (the receiver sees the end).
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(Duration::from_secs(1));
        }
    }
}

/// Binds the first of `addrs` that can be bound, with a generous accept backlog.
fn listen(addrs: &[SocketAddr]) -> std::io::Result<tokio::net::TcpListener> {
    let mut last = std::io::Error::new(std::io::ErrorKind::InvalidInput, "no address to bind");
    for addr in addrs {
        let socket = match addr {
            SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4(),
            SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6(),
        };
        match socket.and_then(|s| {
            s.set_reuseaddr(true)?;
            s.bind(*addr)?;
            s.listen(1024)
        }) {
            Ok(listener) => return Ok(listener),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// What every connection's task shares.
struct Shared {
    limits: Limits,
    requests: mpsc::Sender<Request>,
    /// Request connections open.
    open: AtomicUsize,
    /// Request connections open per client address (addresses with none are removed).
    per_address: Mutex<HashMap<IpAddr, usize>>,
    /// Streams open.
    streams: Arc<AtomicUsize>,
    /// Streams open per client address (addresses with none are removed).
    streams_per_address: Arc<Mutex<HashMap<IpAddr, usize>>>,
    /// Observer streams open (also counted in `streams`).
    observer_streams: Arc<AtomicUsize>,
    /// What the observer streams hold together.
    observer_budget: Arc<ObserverBudget>,
    /// Request connections open, by number (to close an idle one under pressure).
    conns: Mutex<HashMap<u64, std::sync::Weak<Conn>>>,
    /// The next connection's number.
    next_conn: AtomicU64,
    /// Refused connections still being closed politely.
    lingering: AtomicUsize,
    /// The zero of every connection's clock.
    epoch: Instant,
}

/// A request connection's place (in the global count and its address's), given back when
/// dropped.
struct RequestSlot {
    shared: Arc<Shared>,
    ip: IpAddr,
}

impl RequestSlot {
    /// A place for a connection from `ip`, or why there is none.
    fn take(shared: &Arc<Shared>, ip: IpAddr) -> Result<RequestSlot, NoPlace> {
        let mut per_address = shared.per_address.lock().unwrap_or_else(|e| e.into_inner());
        let from_ip = per_address.get(&ip).copied().unwrap_or(0);
        if from_ip >= shared.limits.max_connections_per_address {
            return Err(NoPlace::Address);
        }
        let max = shared.limits.max_connections;
        if shared
            .open
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < max).then_some(n + 1))
            .is_err()
        {
            return Err(NoPlace::Full);
        }
        per_address.insert(ip, from_ip + 1);
        Ok(RequestSlot { shared: shared.clone(), ip })
    }
}

/// Why a connection has no request place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NoPlace {
    /// Its address has [`Limits::max_connections_per_address`] open.
    Address,
    /// [`Limits::max_connections`] are open (and none idle or stalled to close for it).
    Full,
}

impl NoPlace {
    fn message(self) -> &'static str {
        match self {
            NoPlace::Address => "too many connections from your address; try again later",
            NoPlace::Full => "too many connections; try again later",
        }
    }
}

/// A head still arriving this long after its first byte (a real client sends its head at
/// once) is stalled, whether it trickles or not: under connection pressure it is closed for a
/// new connection, as an idle one is.
const STALLED: Duration = Duration::from_secs(1);

/// Under connection pressure (every request place taken), closes the connection that has
/// been idle (kept alive with nothing in progress) or in its head (for more than [`STALLED`]
/// since the head began, trickling or silent) the longest and gives its place back, as nginx
/// closes its idle keep-alive connections when it runs out: a client from elsewhere is served
/// while an attacker holds idle or trickling sockets on many addresses. A connection reading
/// a body, being answered or streaming is never closed for another. `false` when there was
/// none to close.
fn evict(shared: &Shared) -> bool {
    let now = shared.epoch.elapsed().as_millis() as u64;
    let open: Vec<Arc<Conn>> = shared
        .conns
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .values()
        .filter_map(std::sync::Weak::upgrade)
        .collect();
    let mut quiet: Vec<(u64, Arc<Conn>)> = open
        .into_iter()
        .filter_map(|c| {
            // Idle since the answer ended; in its head since the head began (its first byte,
            // the connection's start, or the end of the answer it was pipelined behind).
            let quiet = now.saturating_sub(c.since_ms.load(Ordering::SeqCst));
            match c.phase.load(Ordering::SeqCst) {
                IDLE => Some((quiet, c)),
                HEAD if quiet >= STALLED.as_millis() as u64 => Some((quiet, c)),
                _ => None,
            }
        })
        .collect();
    quiet.sort_by_key(|(q, _)| std::cmp::Reverse(*q));
    for (ms, c) in quiet {
        if let Some(slot) = c.take_request_slot() {
            drop(slot);
            c.abort.notify_one();
            log::debug!("http: closed {} (quiet for {ms} ms) to make room for a new one", c.peer);
            return true;
        }
    }
    false
}

/// Keeps a connection in [`Shared::conns`] while its task runs.
struct Registered<'a> {
    shared: &'a Shared,
    id: u64,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.shared.conns.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.id);
    }
}

impl Drop for RequestSlot {
    fn drop(&mut self) {
        let mut per_address = self.shared.per_address.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = per_address.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                per_address.remove(&self.ip);
            }
        }
        self.shared.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// How many refused connections may linger (their `503` written, waiting for the client to
/// close) at once; beyond that they are closed at once.
const MAX_LINGERING: usize = 256;

/// How long a refused connection lingers.
const LINGER: Duration = Duration::from_millis(500);

/// A connection answered `413` drains what its client still sends until the client has been
/// silent this long (nginx's `lingering_timeout`), for at most [`Limits::body_timeout`] in all.
const LINGER_QUIET: Duration = Duration::from_secs(2);

async fn accept_loop(
    listener: tokio::net::TcpListener,
    shared: Arc<Shared>,
    tls: Option<tokio_rustls::TlsAcceptor>,
) {
    loop {
        let (tcp, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors or memory: wait for some to be given back. Any other
                // error is one connection's (aborted, refused by a firewall): go on at once, so
                // that a client cannot slow the accepting down.
                let resources = matches!(e.raw_os_error(), Some(23 | 24 | 105 | 12));
                if resources {
                    log::warn!("http: cannot accept a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                } else {
                    log::debug!("http: a connection failed while accepted: {e}");
                }
                continue;
            }
        };
        let mut taken = RequestSlot::take(&shared, peer.ip());
        if taken.as_ref().err() == Some(&NoPlace::Full) && evict(&shared) {
            taken = RequestSlot::take(&shared, peer.ip());
        }
        let slot = match taken {
            Ok(slot) => slot,
            Err(why) => {
                refuse(tcp, &shared, why.message(), tls.is_some());
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let conn = Arc::new(Conn::new(slot, peer, shared.epoch));
        let id = shared.next_conn.fetch_add(1, Ordering::SeqCst);
        shared.conns.lock().unwrap_or_else(|e| e.into_inner()).insert(id, Arc::downgrade(&conn));
        let (shared, tls) = (shared.clone(), tls.clone());
        tokio::spawn(async move {
            let _registered = Registered { shared: &shared, id };
            match tls {
                None => serve_connection(tcp, &shared, conn).await,
                Some(acceptor) => {
                    let handshake = acceptor.accept(tcp);
                    if let Ok(Ok(io)) =
                        tokio::time::timeout(shared.limits.header_timeout, handshake).await
                    {
                        serve_connection(io, &shared, conn).await;
                    }
                }
            }
        });
    }
}

/// Answers a connection there is no room for with `503` (plain HTTP) and closes it.
fn refuse(tcp: tokio::net::TcpStream, shared: &Arc<Shared>, why: &str, tls: bool) {
    if tls {
        return;
    }
    let body = error_json(why);
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: {}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    // A fresh socket's send buffer always has room for this.
    let _ = tcp.try_write(answer.as_bytes());
    // Closing with the client's request unread would reset the connection and could lose the
    // answer: read and drop what comes for a moment first, when few others are doing so.
    if shared.lingering.fetch_add(1, Ordering::SeqCst) >= MAX_LINGERING {
        shared.lingering.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    let shared = shared.clone();
    tokio::spawn(async move {
        struct Done(Arc<Shared>);
        impl Drop for Done {
            fn drop(&mut self) {
                self.0.lingering.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let _done = Done(shared);
        let mut tcp = tcp;
        let _ = tcp.shutdown().await;
        let mut sink = [0u8; 1024];
        let _ = tokio::time::timeout(LINGER, async {
            while let Ok(n) = tcp.read(&mut sink).await {
                if n == 0 {
                    break;
                }
            }
        })
        .await;
    });
}

fn error_json(message: &str) -> String {
    serde_json::json!({ "error": message }).to_string()
}

/// A connection reading (or waiting for) a request head: [`Limits::header_timeout`] applies.
const HEAD: u8 = 0;
/// A connection with nothing in progress: [`Limits::idle_timeout`] applies.
const IDLE: u8 = 1;
/// A connection whose request is being read or answered: no deadline here.
const BUSY: u8 = 2;
/// A stream: while chunks wait that the client does not take, [`Limits::idle_timeout`] after
/// the last one it took (a client that stops reading is cut off even when nothing more is
/// sent).
const STREAM: u8 = 3;
/// A stream that has ended, flushing its last bytes: [`Limits::body_timeout`] applies.
const CLOSING: u8 = 4;

/// One connection's state, shared by its task, its watchdog, its requests and its stream.
struct Conn {
    /// [`HEAD`], [`IDLE`] or [`BUSY`].
    phase: AtomicU8,
    /// When the phase began (milliseconds after [`Shared::epoch`]).
    since_ms: AtomicU64,
    epoch: Instant,
    /// Wakes the watchdog when the phase changes.
    wake: Notify,
    /// Ends the connection at once (its stream was cut off).
    abort: Notify,
    /// Its request place, until it becomes a stream.
    slot: Mutex<Option<RequestSlot>>,
    /// Frames queued on its stream and not yet taken by the client's connection.
    pending: AtomicUsize,
    /// The client's address.
    ip: IpAddr,
    /// The client's address and port.
    peer: SocketAddr,
    /// Its request was refused with its body unread (`413`): the connection closes lingering.
    linger: AtomicBool,
    /// Where its bytes are: whether a pipelined head has begun when an answer ends.
    framing: Mutex<Framing>,
}

impl Conn {
    fn new(slot: RequestSlot, peer: SocketAddr, epoch: Instant) -> Conn {
        let ip = slot.ip;
        let conn = Conn {
            phase: AtomicU8::new(HEAD),
            since_ms: AtomicU64::new(0),
            epoch,
            wake: Notify::new(),
            abort: Notify::new(),
            slot: Mutex::new(Some(slot)),
            pending: AtomicUsize::new(0),
            ip,
            peer,
            linger: AtomicBool::new(false),
            framing: Mutex::new(Framing::default()),
        };
        conn.since_ms.store(conn.now_ms(), Ordering::SeqCst);
        conn
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    fn set_phase(&self, phase: u8) {
        self.since_ms.store(self.now_ms(), Ordering::SeqCst);
        self.phase.store(phase, Ordering::SeqCst);
        self.wake.notify_one();
    }

    /// `bytes` arrived: they are framed, and an idle connection starts reading a head.
    fn saw_bytes(&self, bytes: &[u8]) {
        self.framing.lock().unwrap_or_else(|e| e.into_inner()).read(bytes);
        if self.phase.load(Ordering::SeqCst) == IDLE {
            self.since_ms.store(self.now_ms(), Ordering::SeqCst);
            if self.phase.compare_exchange(IDLE, HEAD, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
                self.wake.notify_one();
            }
        }
    }

    /// A frame was queued on the stream: with none waiting before, the stall clock starts.
    fn queued(&self) {
        if self.pending.fetch_add(1, Ordering::SeqCst) == 0 {
            self.since_ms.store(self.now_ms(), Ordering::SeqCst);
            self.wake.notify_one();
        }
    }

    /// The client's connection took a frame: progress, the stall clock starts again.
    fn taken(&self) {
        self.since_ms.store(self.now_ms(), Ordering::SeqCst);
        let _ = self.pending.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    }

    fn take_request_slot(&self) -> Option<RequestSlot> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Returns when the connection has been in its phase too long.
    async fn watchdog(&self, limits: &Limits) {
        loop {
            let phase = self.phase.load(Ordering::SeqCst);
            let since = self.epoch + Duration::from_millis(self.since_ms.load(Ordering::SeqCst));
            let deadline = match phase {
                HEAD => Some(since + limits.header_timeout),
                IDLE => Some(since + limits.idle_timeout),
                STREAM if self.pending.load(Ordering::SeqCst) > 0 => {
                    Some(since + limits.idle_timeout)
                }
                CLOSING => Some(since + limits.body_timeout),
                _ => None,
            };
            match deadline {
                Some(d) if Instant::now() >= d => return,
                Some(d) => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(d.into()) => {}
                        _ = self.wake.notified() => {}
                    }
                }
                None => self.wake.notified().await,
            }
        }
    }
}

/// Sets its connection idle when dropped (its request answered, or abandoned), unless
/// disarmed (the connection became a stream).
struct IdleOnDrop(Option<Arc<Conn>>);

impl Drop for IdleOnDrop {
    fn drop(&mut self) {
        if let Some(conn) = self.0.take() {
            // The client may have pipelined the start of its next head: that head's clock
            // runs from now, not the idle one.
            let next_head = conn.framing.lock().unwrap_or_else(|e| e.into_inner()).next_head();
            conn.set_phase(if next_head { HEAD } else { IDLE });
        }
    }
}

/// The most bytes a connection keeps while it waits to learn the length of the body after a
/// head (hyper reads at most a buffer's worth ahead); beyond, its framing is given up.
const FRAMING_AHEAD: usize = 64 << 10;

/// Where a connection's bytes are, followed as they are read, so that when an answer ends the
/// server knows whether the client has already sent part of its next head (pipelined): that
/// head then gets [`Limits::header_timeout`], not [`Limits::idle_timeout`]. A head ends at a
/// blank line; its body's length comes from [`handle`] (`Content-Length`, else none). After a
/// chunked body the framing is given up (lost), and answers end idle as before.
#[derive(Default)]
struct Framing {
    /// Bytes of the head being read.
    head_bytes: usize,
    /// Whether the last byte of the head so far ended a line (`\r` aside).
    line_end: bool,
    /// After a head, until its body's length is known: the bytes read since.
    ahead: Option<Vec<u8>>,
    /// Bytes of the current body still to come.
    body_left: u64,
    lost: bool,
}

impl Framing {
    /// Bytes read from the client, in order.
    fn read(&mut self, bytes: &[u8]) {
        if self.lost {
            return;
        }
        if let Some(ahead) = &mut self.ahead {
            if ahead.len() + bytes.len() > FRAMING_AHEAD {
                self.lost = true;
                self.ahead = None;
            } else {
                ahead.extend_from_slice(bytes);
            }
            return;
        }
        self.scan(bytes);
    }

    fn scan(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.body_left > 0 {
                let skip = self.body_left.min(bytes.len() as u64);
                self.body_left -= skip;
                bytes = &bytes[skip as usize..];
                continue;
            }
            for (i, b) in bytes.iter().enumerate() {
                self.head_bytes += 1;
                match b {
                    b'\n' if self.line_end => {
                        // The blank line: the head ends; its body's length comes next.
                        (self.head_bytes, self.line_end) = (0, false);
                        self.ahead = Some(bytes[i + 1..].to_vec());
                        return;
                    }
                    b'\n' => self.line_end = true,
                    b'\r' => {}
                    _ => self.line_end = false,
                }
            }
            return;
        }
    }

    /// The head just handed over has a body of `length` bytes (`None`: chunked).
    fn body(&mut self, length: Option<u64>) {
        match (self.ahead.take(), length) {
            (Some(ahead), Some(length)) if !self.lost => {
                self.body_left = length;
                self.scan(&ahead);
            }
            _ => {
                self.lost = true;
                self.ahead = None;
            }
        }
    }

    /// Whether part of a next head has been read (and nothing is pending before it).
    fn next_head(&self) -> bool {
        !self.lost && self.ahead.is_none() && self.body_left == 0 && self.head_bytes > 0
    }
}

/// A connection's socket, telling the connection when bytes arrive.
struct Watched<I> {
    io: I,
    conn: Arc<Conn>,
}

impl<I: AsyncRead + Unpin> AsyncRead for Watched<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.conn.saw_bytes(&buf.filled()[before..]);
        }
        polled
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Watched<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

/// Serves one connection until it ends, times out, or its stream is cut off. Dropping the
/// connection drops its stream's body (`on_close` runs) and its request place.
async fn serve_connection<I>(io: I, shared: &Arc<Shared>, conn: Arc<Conn>)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let limits = &shared.limits;
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        // The watchdog keeps the head and idle deadlines (hyper's would run from the end of
        // the previous answer, idle time included).
        .header_read_timeout(None)
        .title_case_headers(true)
        .half_close(false)
        .keep_alive(true)
        .max_buf_size(limits.max_head.max(8192));
    let service = {
        let (shared, conn) = (shared.clone(), conn.clone());
        hyper::service::service_fn(move |request| handle(request, shared.clone(), conn.clone()))
    };
    let watched = Watched { io, conn: conn.clone() };
    // The socket comes back when hyper is done with it, to be closed here: lingering after a
    // refused body, politely otherwise.
    let connection = builder.serve_connection(TokioIo::new(watched), service).without_shutdown();
    tokio::select! {
        done = connection => {
            if let Ok(parts) = done {
                let mut io = parts.io.into_inner();
                if conn.linger.load(Ordering::SeqCst) {
                    // Its place goes back now: lingering has a budget of its own.
                    drop(conn.take_request_slot());
                    linger(io, shared).await;
                } else {
                    let _ = tokio::time::timeout(limits.body_timeout, io.shutdown()).await;
                }
            }
        }
        _ = conn.watchdog(limits) => {
            if conn.phase.load(Ordering::SeqCst) == STREAM {
                log::warn!(
                    "http: the stream to {} is cut off: its client took nothing for {:?}",
                    conn.peer,
                    limits.idle_timeout
                );
            }
        }
        _ = conn.abort.notified() => {}
    }
}

/// Closes a connection whose request was refused before its body was read (`413`) the way
/// nginx does: closing with the client's bytes unread would reset the connection, and a
/// client still sending its body would see the reset (`Broken pipe`, `Connection reset`)
/// instead of the answer. So the answer is followed by the end of what the server writes, then
/// what the client still sends is read and dropped until it closes, is silent for
/// [`LINGER_QUIET`], or [`Limits::body_timeout`] has passed; at most [`MAX_LINGERING`]
/// connections linger at once (with the refused ones), the others are closed at once.
async fn linger<I: AsyncRead + AsyncWrite + Unpin>(mut io: I, shared: &Shared) {
    if shared.lingering.fetch_add(1, Ordering::SeqCst) >= MAX_LINGERING {
        shared.lingering.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    struct Done<'a>(&'a Shared);
    impl Drop for Done<'_> {
        fn drop(&mut self) {
            self.0.lingering.fetch_sub(1, Ordering::SeqCst);
        }
    }
    let _done = Done(shared);
    let deadline = tokio::time::Instant::now() + shared.limits.body_timeout;
    let _ = tokio::time::timeout_at(deadline, io.shutdown()).await;
    let mut sink = vec![0u8; 16 << 10];
    loop {
        let quiet = (tokio::time::Instant::now() + LINGER_QUIET).min(deadline);
        match tokio::time::timeout_at(quiet, io.read(&mut sink)).await {
            Ok(Ok(n)) if n > 0 => {}
            _ => break,
        }
    }
}

/// The request was dropped unanswered: the connection closes without an answer.
#[derive(Debug, thiserror::Error)]
#[error("the request was not answered")]
struct Unanswered;

/// Reads one request's body, hands the request to the caller and waits for its answer.
async fn handle(
    request: hyper::Request<Incoming>,
    shared: Arc<Shared>,
    conn: Arc<Conn>,
) -> Result<hyper::Response<AnswerBody>, Unanswered> {
    conn.set_phase(BUSY);
    let mut idle_after = IdleOnDrop(Some(conn.clone()));
    let limits = &shared.limits;
    let declared = request
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let chunked = request.headers().contains_key(hyper::header::TRANSFER_ENCODING);
    conn.framing.lock().unwrap_or_else(|e| e.into_inner()).body(if chunked {
        None
    } else {
        Some(declared.unwrap_or(0))
    });
    if declared.is_some_and(|n| n > limits.max_body as u64) {
        conn.linger.store(true, Ordering::SeqCst);
        return Ok(refusal(413, &format!("the body is larger than {} bytes", limits.max_body)));
    }
    let (parts, body) = request.into_parts();
    let read = Limited::new(body, limits.max_body).collect();
    let body = match tokio::time::timeout(limits.body_timeout, read).await {
        Err(_) => return Ok(refusal(408, "the request body did not arrive in time")),
        Ok(Err(e)) if e.is::<LengthLimitError>() => {
            conn.linger.store(true, Ordering::SeqCst);
            return Ok(refusal(413, &format!("the body is larger than {} bytes", limits.max_body)));
        }
        Ok(Err(e)) => return Ok(refusal(400, &format!("cannot read the request body: {e}"))),
        Ok(Ok(collected)) => collected.to_bytes(),
    };
    let headers = parts
        .headers
        .iter()
        .map(|(n, v)| (n.as_str().to_owned(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect();
    let (reply, answer) = oneshot::channel();
    let request = Request {
        method: parts.method.as_str().to_owned(),
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().unwrap_or("").to_owned(),
        headers,
        body: String::from_utf8(Vec::from(body))
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
        reply,
        conn: conn.clone(),
        streams: StreamRoom {
            open: shared.streams.clone(),
            max: limits.max_streams,
            per_address: shared.streams_per_address.clone(),
            max_per_address: limits.max_streams_per_address,
            observers: shared.observer_streams.clone(),
            max_observers: limits.max_observer_streams,
            observer_budget: shared.observer_budget.clone(),
            queue: limits.stream_queue,
            queue_bytes: limits.stream_queue_bytes,
        },
    };
    if shared.requests.send(request).is_err() {
        return Ok(refusal(503, "the master is stopping"));
    }
    match answer.await {
        Ok(Reply::Whole(response)) => Ok(whole(response)),
        Ok(Reply::Stream(start)) => {
            // A stream has no idle deadline: it is cut off when its client stops reading.
            idle_after.0 = None;
            conn.set_phase(STREAM);
            Ok(streamed(start))
        }
        Err(_) => Err(Unanswered),
    }
}

/// An answer from the server itself (the request was refused), closing the connection.
fn refusal(status: u16, message: &str) -> hyper::Response<AnswerBody> {
    whole(Response::json(status, error_json(message)).with_header("Connection", "close"))
}

/// `headers` onto `response`, less those the server writes itself; a header that is not
/// valid HTTP is left out (a value loses its line breaks first).
fn add_headers<B>(response: &mut hyper::Response<B>, headers: Vec<(String, String)>) {
    for (name, value) in headers {
        if name.eq_ignore_ascii_case("content-length")
            || name.eq_ignore_ascii_case("transfer-encoding")
        {
            continue;
        }
        let value: String = value.chars().filter(|c| *c != '\r' && *c != '\n').collect();
        if let (Ok(n), Ok(v)) =
            (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(&value))
        {
            response.headers_mut().append(n, v);
        }
    }
}

fn status(code: u16) -> hyper::StatusCode {
    hyper::StatusCode::from_u16(code).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR)
}

fn whole(answer: Response) -> hyper::Response<AnswerBody> {
    let body = (!answer.body.is_empty()).then(|| Bytes::from(answer.body));
    let mut response = hyper::Response::new(AnswerBody::Whole(body));
    *response.status_mut() = status(answer.status);
    add_headers(&mut response, answer.headers);
    response
}

fn streamed(start: StreamStart) -> hyper::Response<AnswerBody> {
    let StreamStart { status: code, mut headers, body } = start;
    headers.retain(|(n, _)| !n.eq_ignore_ascii_case("connection"));
    headers.push(("Connection".into(), "close".into()));
    let mut response = hyper::Response::new(AnswerBody::Stream(body));
    *response.status_mut() = status(code);
    add_headers(&mut response, headers);
    response
}

/// A query string's, a form body's or a path segment's text decoded: `%2F` and the like, and `+`
/// for a space; an escape that is not two hex digits is kept as it is, and bytes that are not
/// UTF-8 become U+FFFD.
pub fn percent_decode(text: &str) -> String {
    let hex = |b: u8| (b as char).to_digit(16);
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%' && i + 2 < bytes.len())
            .then(|| Some(hex(bytes[i + 1])? * 16 + hex(bytes[i + 2])?))
            .flatten();
        match (escaped, bytes[i]) {
            (Some(b), _) => {
                out.push(b as u8);
                i += 3;
                continue;
            }
            (None, b'+') => out.push(b' '),
            (None, b) => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_escapes_and_plus_decode_and_a_broken_escape_stays() {
        assert_eq!(super::percent_decode("team%2Fml+a"), "team/ml a");
        assert_eq!(super::percent_decode("100%"), "100%");
        assert_eq!(super::percent_decode("%zz"), "%zz");
    }
    use std::io::{Read, Write};
    use std::net::TcpStream;

    fn limits() -> Limits {
        Limits {
            header_timeout: Duration::from_millis(300),
            body_timeout: Duration::from_millis(300),
            idle_timeout: Duration::from_millis(300),
            max_body: 1000,
            ..Limits::default()
        }
    }

    /// Answers `/header` with the request's `X-Test` header (and a `Mesos-Stream-Id` header),
    /// `/stream` with a stream of `a`, `bc` from another thread, and everything else with its
    /// body, echoed as a JSON string.
    fn echo_server() -> Server {
        let (server, rx) = Server::bind("127.0.0.1:0", limits()).unwrap();
        std::thread::spawn(move || {
            for r in rx {
                match r.path.as_str() {
                    "/header" => {
                        let seen = serde_json::json!(r.header("x-test")).to_string();
                        r.respond_with(
                            Response::json(200, seen).with_header("Mesos-Stream-Id", "s-1"),
                        );
                    }
                    "/text" => {
                        r.respond_with(Response::text(400, "Expecting 'type' to be present"))
                    }
                    "/stream" => {
                        let s =
                            r.stream(200, vec![("Mesos-Stream-Id".into(), "s-2".into())], || {});
                        std::thread::spawn(move || {
                            s.send(b"a").unwrap();
                            s.send(b"bc").unwrap();
                            s.close();
                        });
                    }
                    _ => {
                        let body = serde_json::Value::String(r.body.clone()).to_string();
                        r.respond(200, body);
                    }
                }
            }
        });
        server
    }

    fn connect(server: &Server) -> TcpStream {
        let s = TcpStream::connect(server.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s
    }

    fn exchange(server: &Server, raw: &[u8]) -> String {
        let mut s = connect(server);
        s.write_all(raw).unwrap();
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        answer
    }

    /// Reads one answer with a `Content-Length` body from `s`.
    fn read_answer(s: &mut TcpStream) -> String {
        let mut data = Vec::new();
        let mut byte = [0u8; 1];
        while !data.ends_with(b"\r\n\r\n") {
            assert_eq!(s.read(&mut byte).unwrap(), 1, "closed mid-head: {data:?}");
            data.push(byte[0]);
        }
        let head = String::from_utf8(data.clone()).unwrap();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .map(|v| v.trim().parse().unwrap())
            .unwrap();
        let mut body = vec![0u8; length];
        s.read_exact(&mut body).unwrap();
        head + &String::from_utf8(body).unwrap()
    }

    #[test]
    fn a_body_by_content_length_is_read() {
        let server = echo_server();
        let a = exchange(&server, b"POST /x HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello");
        assert!(a.starts_with("HTTP/1.1 200 OK") && a.ends_with("\"hello\""), "{a}");
    }

    #[test]
    fn a_chunked_body_is_read() {
        let server = echo_server();
        let a = exchange(
            &server,
            b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
        );
        assert!(a.ends_with("\"abcde\""), "{a}");
    }

    #[test]
    fn a_declared_body_over_the_limit_is_answered_413_at_once() {
        let server = echo_server();
        let a = exchange(&server, b"POST /x HTTP/1.1\r\nContent-Length: 100000\r\n\r\n");
        assert!(a.starts_with("HTTP/1.1 413"), "{a}");
    }

    #[test]
    fn a_body_over_the_limit_sent_whole_still_reads_its_413() {
        let server = echo_server();
        for _ in 0..5 {
            let mut s = TcpStream::connect(server.addr()).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let body = vec![b'x'; 2 << 20];
            let head = format!("POST /x HTTP/1.1\r\nContent-Length: {}\r\n\r\n", body.len());
            s.write_all(head.as_bytes()).unwrap();
            // Sent whole, as curl and most clients do before they read the answer.
            s.write_all(&body).expect("the server drains the body it refused");
            let mut answer = String::new();
            s.read_to_string(&mut answer).expect("the answer, not a reset");
            assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
        }
    }

    #[test]
    fn an_endless_chunked_body_is_cut_off_with_413() {
        let server = echo_server();
        let mut s = TcpStream::connect(server.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").unwrap();
        for _ in 0..100 {
            if s.write_all(b"100\r\n").is_err() || s.write_all(&[b'x'; 256]).is_err() {
                break;
            }
            let _ = s.write_all(b"\r\n");
        }
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    }

    #[test]
    fn a_body_that_stalls_is_answered_408_after_the_body_timeout() {
        let server = echo_server();
        let a = exchange(&server, b"POST /x HTTP/1.1\r\nContent-Length: 100\r\n\r\nx");
        assert!(a.starts_with("HTTP/1.1 408"), "{a}");
    }

    #[test]
    fn a_head_that_stalls_is_closed_after_the_header_timeout() {
        let server = echo_server();
        let start = Instant::now();
        let a = exchange(&server, b"GET /x HTTP/1.1\r\nHost: slow");
        assert_eq!(a, "", "closed without an answer");
        assert!(start.elapsed() >= Duration::from_millis(250), "{:?}", start.elapsed());
    }

    #[test]
    fn a_pipelined_partial_head_gets_the_header_timeout_not_the_idle_one() {
        let (server, rx) = Server::bind(
            "127.0.0.1:0",
            Limits {
                header_timeout: Duration::from_millis(300),
                idle_timeout: Duration::from_secs(5),
                ..limits()
            },
        )
        .unwrap();
        std::thread::spawn(move || {
            for r in rx {
                let body = format!("{:?}", r.body);
                r.respond(200, body);
            }
        });
        let closed_after = |raw: &[u8], answers: usize| {
            let mut s = connect(&server);
            s.write_all(raw).unwrap();
            for _ in 0..answers {
                assert!(read_answer(&mut s).starts_with("HTTP/1.1 200"));
            }
            let start = Instant::now();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut rest = Vec::new();
            let _ = s.read_to_end(&mut rest);
            start.elapsed()
        };
        // A complete request, a body, and the start of the next head, sent together.
        let partial = b"POST /a HTTP/1.1\r\nContent-Length: 4\r\n\r\nabcdGET /b HT";
        let waited = closed_after(partial, 1);
        assert!(waited < Duration::from_secs(2), "held for {waited:?}, not the header timeout");
        // Two whole requests: the connection is idle after them, and idle time is longer.
        let whole = b"GET /a HTTP/1.1\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 2\r\n\r\nxy";
        let waited = closed_after(whole, 2);
        assert!(waited >= Duration::from_secs(4), "idle, closed after only {waited:?}");
    }

    #[test]
    fn framing_finds_pipelined_heads_after_bodies() {
        let mut f = Framing::default();
        f.read(b"POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nab");
        f.body(Some(3));
        assert!(!f.next_head(), "the body is not over");
        f.read(b"cGET / HTTP/1.1\r\n");
        assert!(f.next_head());
        f.read(b"\r\n");
        f.body(Some(0));
        assert!(!f.next_head(), "a whole head, then nothing");
        f.read(b"GET /chunked HTTP/1.1\nTransfer-Encoding: chunked\n\n");
        f.body(None);
        f.read(b"0\r\n\r\nGET");
        assert!(!f.next_head(), "lost after a chunked body: idle as before");
    }

    /// A server of 3 request places (idle timeout 10 s) answering everything `200`.
    fn three_place_server() -> Server {
        let (server, rx) = Server::bind(
            "127.0.0.1:0",
            Limits {
                max_connections: 3,
                header_timeout: Duration::from_secs(10),
                idle_timeout: Duration::from_secs(10),
                ..limits()
            },
        )
        .unwrap();
        std::thread::spawn(move || {
            for r in rx {
                r.respond(200, "\"ok\"".into());
            }
        });
        server
    }

    fn is_closed(s: &mut TcpStream) -> bool {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        matches!(s.read(&mut [0u8; 64]), Ok(0) | Err(_))
    }

    #[test]
    fn under_pressure_the_longest_idle_connection_makes_room() {
        let server = three_place_server();
        let mut idle: Vec<TcpStream> = (0..3)
            .map(|_| {
                let mut s = connect(&server);
                s.write_all(b"GET /a HTTP/1.1\r\n\r\n").unwrap();
                assert!(read_answer(&mut s).starts_with("HTTP/1.1 200"));
                std::thread::sleep(Duration::from_millis(50));
                s
            })
            .collect();
        let a = exchange(&server, b"GET /new HTTP/1.1\r\nConnection: close\r\n\r\n");
        assert!(a.starts_with("HTTP/1.1 200"), "served, not refused: {a}");
        assert!(is_closed(&mut idle[0]), "the longest idle one made room");
        // The others are still open and served.
        idle[2].write_all(b"GET /b HTTP/1.1\r\n\r\n").unwrap();
        assert!(read_answer(&mut idle[2]).starts_with("HTTP/1.1 200"));
    }

    #[test]
    fn under_pressure_a_stalled_head_makes_room_but_a_fresh_one_does_not() {
        let server = three_place_server();
        let stalled: Vec<TcpStream> = (0..3)
            .map(|_| {
                let mut s = connect(&server);
                s.write_all(b"GET /a HTTP/1.1\r\nX-Slow: ").unwrap();
                s
            })
            .collect();
        // Their heads are fresh: nothing to close, the newcomer is refused.
        let a = exchange(&server, b"GET /new HTTP/1.1\r\nConnection: close\r\n\r\n");
        assert!(a.starts_with("HTTP/1.1 503"), "{a}");
        std::thread::sleep(STALLED + Duration::from_millis(300));
        let a = exchange(&server, b"GET /new HTTP/1.1\r\nConnection: close\r\n\r\n");
        assert!(a.starts_with("HTTP/1.1 200"), "a stalled head made room: {a}");
        drop(stalled);
    }

    /// A slowloris that sends one byte of its head every 200 ms is never quiet for a second,
    /// but a head still arriving a second after it began is stalled all the same: under
    /// pressure the longest in its head makes room (before, it was never closed).
    #[test]
    fn under_pressure_a_trickling_head_makes_room_after_a_second() {
        let server = three_place_server();
        let mut trickling: Vec<TcpStream> = (0..3)
            .map(|_| {
                let mut s = connect(&server);
                s.write_all(b"G").unwrap();
                std::thread::sleep(Duration::from_millis(50));
                s
            })
            .collect();
        let started = Instant::now();
        while started.elapsed() < STALLED + Duration::from_millis(400) {
            for s in &mut trickling {
                let _ = s.write_all(b"E");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let a = exchange(&server, b"GET /new HTTP/1.1\r\nConnection: close\r\n\r\n");
        assert!(a.starts_with("HTTP/1.1 200"), "a trickling head made room: {a}");
        assert!(is_closed(&mut trickling[0]), "the longest in its head made room");
        // The others still wait for their heads.
        trickling[2].set_read_timeout(Some(Duration::from_millis(100))).unwrap();
        assert!(trickling[2].read(&mut [0u8; 16]).is_err(), "the younger ones stay open");
    }

    #[test]
    fn an_idle_kept_alive_connection_is_closed_after_the_idle_timeout() {
        let server = echo_server();
        let mut s = connect(&server);
        s.write_all(b"POST /x HTTP/1.1\r\nContent-Length: 1\r\n\r\na").unwrap();
        assert!(read_answer(&mut s).ends_with("\"a\""));
        let start = Instant::now();
        assert_eq!(s.read(&mut [0u8; 16]).unwrap(), 0, "the server closes");
        assert!(start.elapsed() >= Duration::from_millis(250), "{:?}", start.elapsed());
    }

    #[test]
    fn a_chunk_size_that_never_arrives_or_overflows_is_refused_and_the_server_goes_on() {
        let server = echo_server();
        // `ffffffffffffffff` is a valid (huge) chunk size: the body times out (408);
        // one more digit overflows (400).
        let requests: Vec<TcpStream> = ["ffffffffffffffff", "1ffffffffffffffff"]
            .iter()
            .cycle()
            .take(40)
            .map(|size| {
                let mut s = connect(&server);
                let req = format!(
                    "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n{size}\r\nx\r\n0\r\n\r\n"
                );
                s.write_all(req.as_bytes()).unwrap();
                s
            })
            .collect();
        for mut s in requests {
            let mut a = String::new();
            let _ = s.read_to_string(&mut a);
            assert!(
                a.is_empty() || a.starts_with("HTTP/1.1 408") || a.starts_with("HTTP/1.1 400"),
                "{a}"
            );
        }
        let a = exchange(&server, b"POST /x HTTP/1.1\r\nContent-Length: 2\r\n\r\nok");
        assert!(a.starts_with("HTTP/1.1 200 OK"), "{a}");
    }

    #[test]
    fn connections_over_the_per_address_limit_are_answered_503_and_give_their_place_back() {
        let (server, rx) =
            Server::bind("127.0.0.1:0", Limits { max_connections_per_address: 3, ..limits() })
                .unwrap();
        std::thread::spawn(move || {
            for r in rx {
                r.respond(200, "{}".into());
            }
        });
        let held: Vec<TcpStream> = (0..3).map(|_| connect(&server)).collect();
        // Let the three be accepted before the fourth.
        std::thread::sleep(Duration::from_millis(100));
        let a = exchange(&server, b"GET /x HTTP/1.1\r\n\r\n");
        assert!(a.starts_with("HTTP/1.1 503"), "{a}");
        drop(held);
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let a = exchange(&server, b"GET /x HTTP/1.1\r\nConnection: close\r\n\r\n");
            if a.starts_with("HTTP/1.1 200") {
                break;
            }
            assert!(Instant::now() < deadline, "the places were not given back: {a}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn streams_do_not_count_against_request_connections() {
        let (server, streams) = stream_server(Limits { max_connections: 2, ..limits() });
        let mut kept = Vec::new();
        for _ in 0..5 {
            let mut s = connect(&server);
            s.write_all(b"GET /s HTTP/1.1\r\n\r\n").unwrap();
            let (stream, _closed) = streams.recv().unwrap();
            stream.send(b"x").unwrap();
            kept.push((s, stream));
        }
        for (s, _) in &mut kept {
            let mut head = [0u8; 15];
            s.read_exact(&mut head).unwrap();
            assert_eq!(&head, b"HTTP/1.1 200 OK");
        }
    }

    #[test]
    fn a_stream_over_the_stream_limit_is_answered_503_and_runs_on_close() {
        let (server, streams) = stream_server(Limits { max_streams: 1, ..limits() });
        let mut first = connect(&server);
        first.write_all(b"GET /s HTTP/1.1\r\n\r\n").unwrap();
        let (open, _closed) = streams.recv().unwrap();
        let a = exchange(&server, b"GET /s HTTP/1.1\r\n\r\n");
        assert!(a.starts_with("HTTP/1.1 503"), "{a}");
        let (refused, closed) = streams.recv().unwrap();
        assert!(refused.is_closed() && !open.is_closed());
        closed.recv_timeout(Duration::from_secs(1)).expect("on_close ran");
    }

    #[test]
    fn a_kept_alive_connection_serves_several_requests_in_turn() {
        let server = echo_server();
        let mut s = connect(&server);
        for word in ["one", "two", "three"] {
            let req = format!("POST /x HTTP/1.1\r\nContent-Length: {}\r\n\r\n{word}", word.len());
            s.write_all(req.as_bytes()).unwrap();
            let a = read_answer(&mut s);
            // Keep-alive is HTTP/1.1's default: no `Connection` header says so.
            assert!(!a.contains("Connection: close") && a.ends_with(&format!("\"{word}\"")), "{a}");
        }
    }

    #[test]
    fn pipelined_requests_are_answered_in_order() {
        let server = echo_server();
        let mut s = connect(&server);
        s.write_all(
            b"POST /x HTTP/1.1\r\nContent-Length: 1\r\n\r\naPOST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nb\r\n0\r\nX-Trailer: t\r\n\r\nPOST /x HTTP/1.1\r\nContent-Length: 1\r\n\r\nc",
        )
        .unwrap();
        for want in ["\"a\"", "\"b\"", "\"c\""] {
            let a = read_answer(&mut s);
            assert!(a.ends_with(want), "{a}");
        }
    }

    #[test]
    fn connection_close_ends_the_connection_after_the_answer() {
        let server = echo_server();
        let mut s = connect(&server);
        s.write_all(b"GET /x HTTP/1.1\r\nConnection: close\r\n\r\n").unwrap();
        let a = read_answer(&mut s);
        assert!(a.contains("Connection: close"), "{a}");
        assert_eq!(s.read(&mut [0u8; 16]).unwrap(), 0, "the server closes");
    }

    #[test]
    fn an_http_1_0_request_without_keep_alive_is_answered_and_closed() {
        let server = echo_server();
        let mut s = connect(&server);
        s.write_all(b"GET /x HTTP/1.0\r\n\r\n").unwrap();
        let a = read_answer(&mut s);
        assert!(a.starts_with("HTTP/1.0 200 OK") && !a.contains("keep-alive"), "{a}");
        assert_eq!(s.read(&mut [0u8; 16]).unwrap(), 0, "the server closes");
    }

    #[test]
    fn request_headers_are_readable_and_answer_headers_are_sent() {
        let server = echo_server();
        let a =
            exchange(&server, b"GET /header HTTP/1.1\r\nX-Test: v 1\r\nConnection: close\r\n\r\n");
        assert!(a.contains("\r\nMesos-Stream-Id: s-1\r\n") && a.ends_with("\"v 1\""), "{a}");
    }

    #[test]
    fn a_text_answer_is_plain_text_with_its_length() {
        let server = echo_server();
        let a = exchange(&server, b"POST /text HTTP/1.1\r\nConnection: close\r\n\r\n");
        assert!(a.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{a}");
        assert!(a.contains("\r\nContent-Type: text/plain; charset=utf-8\r\n"), "{a}");
        assert!(a.contains("\r\nContent-Length: 30\r\n"), "{a}");
        assert!(a.ends_with("\r\n\r\nExpecting 'type' to be present"), "{a}");
    }

    #[test]
    fn expect_100_continue_is_answered_before_the_body_is_read() {
        let server = echo_server();
        let mut s = connect(&server);
        s.write_all(b"POST /x HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n")
            .unwrap();
        let mut interim = [0u8; 25];
        s.read_exact(&mut interim).unwrap();
        assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n");
        s.write_all(b"ok").unwrap();
        assert!(read_answer(&mut s).ends_with("\"ok\""));
    }

    #[test]
    fn a_stream_sends_its_chunks_then_the_final_chunk_on_close() {
        let server = echo_server();
        let a = exchange(&server, b"POST /stream HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
        assert!(a.starts_with("HTTP/1.1 200 OK\r\n"), "{a}");
        assert!(a.contains("\r\nMesos-Stream-Id: s-2\r\n"), "{a}");
        assert!(a.contains("\r\nTransfer-Encoding: chunked\r\n"), "{a}");
        assert!(a.ends_with("\r\n\r\n1\r\na\r\n2\r\nbc\r\n0\r\n\r\n"), "{a:?}");
    }

    /// A server whose every request is answered with a stream, handed to the test with a
    /// channel that reports when the stream's `on_close` ran.
    fn stream_server(limits: Limits) -> (Server, mpsc::Receiver<(Stream, mpsc::Receiver<()>)>) {
        let (server, rx) = Server::bind("127.0.0.1:0", limits).unwrap();
        let (tx, streams) = mpsc::channel();
        std::thread::spawn(move || {
            for r in rx {
                let (closed_tx, closed_rx) = mpsc::channel();
                let s = r.stream(200, Vec::new(), move || {
                    let _ = closed_tx.send(());
                });
                let _ = tx.send((s, closed_rx));
            }
        });
        (server, streams)
    }

    #[test]
    fn a_client_that_goes_away_closes_its_stream_and_runs_on_close() {
        let (server, streams) = stream_server(limits());
        let mut s = connect(&server);
        s.write_all(b"GET /s HTTP/1.1\r\n\r\n").unwrap();
        let (stream, closed) = streams.recv().unwrap();
        drop(s);
        closed.recv_timeout(Duration::from_secs(10)).expect("on_close runs");
        assert!(stream.is_closed());
        assert_eq!(stream.send(b"late"), Err(StreamError::Closed));
    }

    #[test]
    fn a_stream_whose_client_does_not_read_is_cut_off_without_blocking_the_sender() {
        let (server, streams) = stream_server(Limits {
            stream_queue: 4,
            body_timeout: Duration::from_millis(200),
            ..limits()
        });
        let mut s = connect(&server);
        s.write_all(b"GET /s HTTP/1.1\r\n\r\n").unwrap();
        let (stream, closed) = streams.recv().unwrap();
        let chunk = vec![b'x'; 256 << 10];
        // The client never reads: socket buffers fill, then the queue, then the stream ends.
        let error = (0..100_000).find_map(|_| stream.send(&chunk).err());
        assert!(error.is_some(), "the stream was never cut off");
        closed.recv_timeout(Duration::from_secs(10)).expect("on_close runs");
        drop(s);
    }

    #[test]
    fn a_stream_whose_client_stops_reading_is_cut_off_even_when_nothing_more_is_sent() {
        let (server, streams) = stream_server(Limits {
            idle_timeout: Duration::from_millis(500),
            body_timeout: Duration::from_millis(500),
            ..limits()
        });
        let mut s = connect(&server);
        s.write_all(b"GET /s HTTP/1.1\r\n\r\n").unwrap();
        let (stream, closed) = streams.recv().unwrap();
        // Enough to fill the socket buffers of a client that never reads, then the close:
        // a few frames stay queued, and no more sends come to overflow the queue.
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..32 {
            if stream.send(&chunk).is_err() {
                break;
            }
        }
        stream.close();
        closed.recv_timeout(Duration::from_secs(10)).expect("cut off: on_close runs");
        drop(s);
    }

    #[test]
    fn a_stream_queue_is_bounded_in_bytes_not_only_in_chunks() {
        let (server, streams) = stream_server(Limits {
            stream_queue: 1_000_000,
            stream_queue_bytes: 1 << 20,
            body_timeout: Duration::from_millis(200),
            ..limits()
        });
        let mut s = connect(&server);
        s.write_all(b"GET /s HTTP/1.1\r\n\r\n").unwrap();
        let (stream, closed) = streams.recv().unwrap();
        let chunk = Chunk::from(vec![b'x'; 256 << 10]);
        // The client never reads: once the socket buffers are full, four chunks fill the
        // 1 MiB bound and the fifth cuts the stream off (a million chunks would never).
        let sent = (0..1000).take_while(|_| stream.send_chunk(&chunk).is_ok()).count();
        assert!(sent < 1000, "never cut off");
        assert_eq!(stream.send_chunk(&chunk), Err(StreamError::Closed));
        closed.recv_timeout(Duration::from_secs(10)).expect("on_close runs");
        drop(s);
    }

    #[test]
    fn one_chunk_larger_than_the_byte_bound_goes_through_an_empty_queue() {
        let (server, streams) = stream_server(Limits { stream_queue_bytes: 10, ..limits() });
        let mut s = connect(&server);
        s.write_all(b"GET /s HTTP/1.1\r\n\r\n").unwrap();
        let (stream, _closed) = streams.recv().unwrap();
        let big = Chunk::from("y".repeat(100));
        stream.send_chunk(&big).unwrap();
        stream.close();
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        assert!(answer.contains(&format!("64\r\n{}\r\n0\r\n", "y".repeat(100))), "{answer}");
    }

    #[test]
    fn one_chunk_sent_on_many_streams_is_shared_not_copied() {
        let chunk = Chunk::from(vec![7u8; 1000]);
        let copy = chunk.clone();
        assert_eq!(chunk.as_bytes().as_ptr(), copy.as_bytes().as_ptr());
        let (server, streams) = stream_server(limits());
        let mut clients = Vec::new();
        for _ in 0..3 {
            let mut s = connect(&server);
            s.write_all(b"GET /s HTTP/1.1\r\n\r\n").unwrap();
            let (stream, _) = streams.recv().unwrap();
            stream.send_chunk(&chunk).unwrap();
            stream.close();
            clients.push(s);
        }
        for mut s in clients {
            let mut answer = String::new();
            let _ = s.read_to_string(&mut answer);
            let body = format!("3e8\r\n{}\r\n0\r\n", "\u{7}".repeat(1000));
            assert!(answer.to_ascii_lowercase().contains(&body), "{answer:?}");
        }
    }

    /// Observer streams whose clients do not read hold at most
    /// [`Limits::observer_queue_bytes`] together (each chunk once): a chunk past it cuts off
    /// the stream holding the most unread bytes, which may be the one sent to, and a chunk
    /// shared with what is already held costs nothing.
    #[test]
    fn observer_streams_together_are_bounded_in_bytes() {
        let (server, rx) = Server::bind(
            "127.0.0.1:0",
            Limits {
                observer_queue_bytes: 24 << 20,
                stream_queue_bytes: 64 << 20,
                body_timeout: Duration::from_millis(200),
                // The clients here never read: with `limits()`'s 300 ms a stream whose client
                // took nothing for that long is closed as stalled, which raced with the sleeps
                // below (c was sometimes `Closed` before its second chunk, not `Overflow`).
                idle_timeout: Duration::from_secs(30),
                ..limits()
            },
        )
        .unwrap();
        let (tx, streams) = mpsc::channel();
        std::thread::spawn(move || {
            for r in rx {
                let (closed_tx, closed_rx) = mpsc::channel();
                let s = r.observer_stream(200, Vec::new(), move || {
                    let _ = closed_tx.send(());
                });
                let _ = tx.send((s, closed_rx));
            }
        });
        let open = || {
            let mut s = connect(&server);
            s.write_all(b"GET /observe HTTP/1.1\r\n\r\n").unwrap();
            let (stream, closed) = streams.recv().unwrap();
            (s, stream, closed)
        };
        let (a, b, c) = (open(), open(), open());
        // Larger than the socket buffers: a client that never reads keeps most of each held.
        let big = |fill: u8| Chunk::from(vec![fill; 16 << 20]);
        let shared = big(b'a');
        a.1.send_chunk(&shared).unwrap();
        b.1.send_chunk(&shared).unwrap();
        // 16 MiB held (once); 16 more would pass 24 MiB: the streams holding the most go, until
        // what they alone held (the shared chunk, once both go) makes room.
        c.1.send_chunk(&big(b'c')).unwrap();
        assert!(a.1.is_closed() && b.1.is_closed(), "the streams holding the most were cut off");
        a.2.recv_timeout(Duration::from_secs(10)).expect("a's on_close runs");
        b.2.recv_timeout(Duration::from_secs(10)).expect("b's on_close runs");
        assert!(!c.1.is_closed());
        // Now c holds the most: one more distinct chunk cuts it off.
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(c.1.send_chunk(&big(b'd')), Err(StreamError::Overflow));
        c.2.recv_timeout(Duration::from_secs(10)).expect("c's on_close runs");
        std::thread::sleep(Duration::from_millis(300));
        // Everything held was given back: a new observer takes a chunk larger than the budget.
        let d = open();
        d.1.send_chunk(&Chunk::from(vec![b'e'; 40 << 20])).unwrap();
        assert!(!d.1.is_closed());
        drop((a.0, b.0, c.0, d.0));
    }

    #[test]
    fn observer_streams_take_only_their_share_of_the_stream_places() {
        let (server, rx) = Server::bind(
            "127.0.0.1:0",
            Limits { max_streams: 3, max_observer_streams: 1, ..limits() },
        )
        .unwrap();
        let (tx, streams) = mpsc::channel();
        std::thread::spawn(move || {
            for r in rx {
                let s = if r.path == "/observe" {
                    r.observer_stream(200, Vec::new(), || {})
                } else {
                    r.stream(200, Vec::new(), || {})
                };
                let _ = tx.send(s);
            }
        });
        let mut held = Vec::new();
        for path in ["/observe", "/observe", "/observe", "/s", "/s"] {
            let mut s = connect(&server);
            s.write_all(format!("GET {path} HTTP/1.1\r\n\r\n").as_bytes()).unwrap();
            held.push((s, streams.recv().unwrap()));
        }
        let open: Vec<bool> = held.iter().map(|(_, stream)| !stream.is_closed()).collect();
        assert_eq!(open, [true, false, false, true, true], "one observer, then the others");
        let mut answer = String::new();
        let _ = held[1].0.read_to_string(&mut answer);
        assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
        // The observer's place comes back when it ends.
        held.swap_remove(0);
        std::thread::sleep(Duration::from_millis(200));
        let mut s = connect(&server);
        s.write_all(b"GET /observe HTTP/1.1\r\n\r\n").unwrap();
        assert!(!streams.recv().unwrap().is_closed());
    }

    #[test]
    fn one_address_cannot_take_every_stream_place() {
        let (server, streams) =
            stream_server(Limits { max_streams: 4, max_streams_per_address: 2, ..limits() });
        let mut held = Vec::new();
        for _ in 0..3 {
            let mut s = connect(&server);
            s.write_all(b"GET /s HTTP/1.1\r\n\r\n").unwrap();
            held.push((s, streams.recv().unwrap()));
        }
        assert!(!held[0].1.0.is_closed() && !held[1].1.0.is_closed());
        assert!(held[2].1.0.is_closed(), "a third stream from the same address is refused");
        let mut answer = String::new();
        let _ = held[2].0.read_to_string(&mut answer);
        assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    }

    #[test]
    fn dropping_every_stream_handle_ends_the_stream_cleanly() {
        let (server, streams) = stream_server(limits());
        let mut s = connect(&server);
        s.write_all(b"GET /s HTTP/1.1\r\n\r\n").unwrap();
        let (stream, closed) = streams.recv().unwrap();
        let other = stream.clone();
        stream.send(b"xyz").unwrap();
        drop(stream);
        drop(other);
        closed.recv_timeout(Duration::from_secs(10)).expect("on_close runs");
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        assert!(answer.ends_with("\r\n\r\n3\r\nxyz\r\n0\r\n\r\n"), "{answer:?}");
    }

    #[test]
    fn a_stalled_connection_does_not_hold_up_another() {
        let (server, rx) = Server::bind(
            "127.0.0.1:0",
            Limits { header_timeout: Duration::from_secs(30), ..limits() },
        )
        .unwrap();
        std::thread::spawn(move || {
            for r in rx {
                r.respond(200, "{}".into());
            }
        });
        let mut stalled = connect(&server);
        stalled.write_all(b"POST /x HTTP/1.1\r\nContent-").unwrap();
        let mut other = connect(&server);
        other.write_all(b"GET /x HTTP/1.1\r\n\r\n").unwrap();
        assert!(read_answer(&mut other).starts_with("HTTP/1.1 200 OK"));
        // The stalled one is still waiting for its head, unanswered.
        stalled.set_nonblocking(true).unwrap();
        let pending = stalled.read(&mut [0u8; 16]);
        assert!(
            matches!(&pending, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "{pending:?}"
        );
    }

    #[test]
    fn a_malformed_request_line_is_answered_400_and_closed() {
        let server = echo_server();
        let a = exchange(&server, b"NONSENSE\r\n\r\n");
        assert!(a.starts_with("HTTP/1.1 400") && a.contains("Connection: close"), "{a}");
    }
}
