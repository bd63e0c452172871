//! A small HTTP/1.1 server for `serve`: every connection is served on its own thread (at most
//! [`Limits::max_connections`] at once), with a deadline for each request head and one for its
//! body, and a body size limit (`413 Payload Too Large`). A slow or endless client only ever
//! holds its own connection.
//!
//! * **Requests.** Each request is handed to the caller as a [`Request`] (method, path, query,
//!   headers, body) on the channel [`Server::bind`] returns. Bodies come by `Content-Length`
//!   or chunked (`Transfer-Encoding: chunked`, trailers ignored); `Expect: 100-continue` is
//!   honoured.
//! * **Keep-alive.** HTTP/1.1 connections stay open for further requests (HTTP/1.0 ones only
//!   with `Connection: keep-alive`) until the client sends `Connection: close`, closes, or stays
//!   silent for [`Limits::idle_timeout`]. Requests on one connection are answered in order; a
//!   request that cannot be read is answered (400, 408, 413, 431, 501) and its connection closed.
//! * **Answers.** [`Request::respond`] (a JSON body), [`Request::respond_with`] (any
//!   [`Response`]: status, headers, body) or [`Request::stream`]: a long-lived
//!   `Transfer-Encoding: chunked` answer that the returned [`Stream`] handle keeps writing to,
//!   from any thread, one chunk per [`Stream::send`] (what the Mesos scheduler API's
//!   `SUBSCRIBE` needs). A stream's chunks are written by its connection's thread: `send` never
//!   blocks; a client that stops reading fills its stream's queue ([`Limits::stream_queue`]
//!   chunks), and the stream is then cut off ([`StreamError::Overflow`]) rather than holding
//!   up the sender. A stream ends when [`Stream::close`] is called, every handle is dropped,
//!   the client closes its connection, or a write fails; its `on_close` callback then runs
//!   once, on the connection's thread.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The server's limits.
#[derive(Clone, Debug)]
pub struct Limits {
    /// A request line and headers must arrive within this long of their first byte (of the
    /// connection's start, for its first request).
    pub header_timeout: Duration,
    /// The body must arrive within this long after the head; also the longest a write to the
    /// client may block.
    pub body_timeout: Duration,
    /// A kept-alive connection with no new request for this long is closed.
    pub idle_timeout: Duration,
    /// Largest body accepted, in bytes; larger gets `413`.
    pub max_body: usize,
    /// Largest request head (request line and headers), in bytes; larger gets `431`.
    pub max_head: usize,
    /// Connections served at once (streams included); more are answered `503` and closed.
    pub max_connections: usize,
    /// Chunks a [`Stream`] queues for a client that does not read them before it is cut off.
    pub stream_queue: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(600),
            max_body: 1 << 20,
            max_head: 16 << 10,
            max_connections: 256,
            stream_queue: 4096,
        }
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

/// What a connection's thread is told to answer.
enum Reply {
    Whole(Response),
    Stream(StreamStart),
}

/// A streamed answer, handed to the connection's thread.
struct StreamStart {
    status: u16,
    headers: Vec<(String, String)>,
    chunks: mpsc::Receiver<Frame>,
    closed: Arc<AtomicBool>,
    on_close: Box<dyn FnOnce() + Send>,
}

/// One item of a stream's queue.
enum Frame {
    Chunk(Vec<u8>),
    End,
}

/// Runs a callback when dropped (so `on_close` runs however the stream's thread ends).
struct OnDrop(Option<Box<dyn FnOnce() + Send>>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
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
    /// The headers in the order sent, names as sent (look them up with [`Request::header`]).
    pub headers: Vec<(String, String)>,
    /// The body as text (UTF-8, lossily).
    pub body: String,
    reply: mpsc::Sender<Reply>,
    limits: Limits,
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
    /// once when it ends, for whatever reason, on the connection's thread. When the client is
    /// already gone, the stream returned is closed and `on_close` has run.
    pub fn stream(
        self,
        status: u16,
        headers: Vec<(String, String)>,
        on_close: impl FnOnce() + Send + 'static,
    ) -> Stream {
        let (tx, chunks) = mpsc::sync_channel(self.limits.stream_queue.max(1));
        let closed = Arc::new(AtomicBool::new(false));
        let start = StreamStart {
            status,
            headers,
            chunks,
            closed: closed.clone(),
            on_close: Box::new(on_close),
        };
        if let Err(mpsc::SendError(Reply::Stream(start))) = self.reply.send(Reply::Stream(start)) {
            closed.store(true, Ordering::SeqCst);
            (start.on_close)();
        }
        Stream { tx, closed }
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

/// The server's handle on a streamed answer ([`Request::stream`]): cheap to clone, usable
/// from any thread. The stream ends when [`Stream::close`] is called or every handle is
/// dropped (the final empty chunk is then written), or when the client goes.
#[derive(Clone)]
pub struct Stream {
    tx: mpsc::SyncSender<Frame>,
    closed: Arc<AtomicBool>,
}

impl Stream {
    /// Queues `data` as one chunk; never blocks. Empty data is ignored (an empty chunk would
    /// end the stream). `Err` once the stream has ended; a full queue cuts the stream off.
    pub fn send(&self, data: &[u8]) -> Result<(), StreamError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(StreamError::Closed);
        }
        if data.is_empty() {
            return Ok(());
        }
        match self.tx.try_send(Frame::Chunk(data.to_vec())) {
            Ok(()) => Ok(()),
            Err(mpsc::TrySendError::Full(_)) => {
                self.closed.store(true, Ordering::SeqCst);
                Err(StreamError::Overflow)
            }
            Err(mpsc::TrySendError::Disconnected(_)) => {
                self.closed.store(true, Ordering::SeqCst);
                Err(StreamError::Closed)
            }
        }
    }

    /// `true` once the stream has ended (or is being cut off); nothing more will reach the
    /// client.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Ends the stream after the chunks already queued (the final empty chunk is written and
    /// the connection closed). Later sends fail with [`StreamError::Closed`].
    pub fn close(&self) {
        if self.tx.try_send(Frame::End).is_err() {
            // Full or gone: cut off at once.
            self.closed.store(true, Ordering::SeqCst);
        }
        self.closed.store(true, Ordering::SeqCst);
    }
}

/// A listening server; requests arrive on the channel returned by [`Server::bind`].
pub struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    acceptor: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Listens on `addr` and serves connections on their own threads.
    pub fn bind(addr: &str, limits: Limits) -> std::io::Result<(Server, mpsc::Receiver<Request>)> {
        let addrs: Vec<SocketAddr> = addr.to_socket_addrs()?.collect();
        let listener = TcpListener::bind(&addrs[..])?;
        let addr = listener.local_addr()?;
        let (tx, rx) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let acceptor = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("http-accept".into())
                .spawn(move || accept_loop(listener, tx, limits, &stop))?
        };
        Ok((Server { addr, stop, acceptor: Some(acceptor) }, rx))
    }

    /// The address listened on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the acceptor with one last connection.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.acceptor.take() {
            let _ = t.join();
        }
    }
}

fn accept_loop(
    listener: TcpListener,
    tx: mpsc::Sender<Request>,
    limits: Limits,
    stop: &AtomicBool,
) {
    let open = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(mut stream) = stream else { continue };
        if open.load(Ordering::SeqCst) >= limits.max_connections {
            let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
            let busy = Response::json(503, error_json("too many connections; try again"));
            write_response(&mut stream, &busy, false);
            continue;
        }
        open.fetch_add(1, Ordering::SeqCst);
        let (tx, limits, open_for_thread) = (tx.clone(), limits.clone(), open.clone());
        let spawned = std::thread::Builder::new().name("http-conn".into()).spawn(move || {
            serve_connection(stream, &tx, &limits);
            open_for_thread.fetch_sub(1, Ordering::SeqCst);
        });
        if spawned.is_err() {
            open.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

fn error_json(message: &str) -> String {
    serde_json::json!({ "error": message }).to_string()
}

/// Why a request could not be read: the status and message to answer with.
struct Refusal(u16, String);

/// One connection: the socket and what was read from it but not yet used.
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

/// A request as read, before it is handed on.
struct ReadRequest {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    keep_alive: bool,
}

fn serve_connection(stream: TcpStream, tx: &mpsc::Sender<Request>, limits: &Limits) {
    let _ = stream.set_write_timeout(Some(limits.body_timeout));
    let _ = stream.set_nodelay(true);
    let mut conn = Conn { stream, buf: Vec::new() };
    let mut first = true;
    loop {
        if !first && !conn.wait_for_data(limits.idle_timeout) {
            return;
        }
        first = false;
        let read = match read_request(&mut conn, limits) {
            Ok(r) => r,
            Err(Refusal(status, message)) => {
                write_response(
                    &mut conn.stream,
                    &Response::json(status, error_json(&message)),
                    false,
                );
                return;
            }
        };
        let (path, query) = match read.target.split_once('?') {
            Some((p, q)) => (p.to_owned(), q.to_owned()),
            None => (read.target.clone(), String::new()),
        };
        let (reply, answer) = mpsc::channel();
        let request = Request {
            method: read.method,
            path,
            query,
            headers: read.headers,
            body: String::from_utf8_lossy(&read.body).into_owned(),
            reply,
            limits: limits.clone(),
        };
        if tx.send(request).is_err() {
            return;
        }
        match answer.recv() {
            Ok(Reply::Whole(response)) => {
                if !write_response(&mut conn.stream, &response, read.keep_alive) || !read.keep_alive
                {
                    return;
                }
            }
            Ok(Reply::Stream(start)) => return run_stream(conn.stream, start),
            Err(_) => return,
        }
    }
}

impl Conn {
    /// Waits up to `idle` for the next request's first byte; `false` when the client closed
    /// or stayed silent.
    fn wait_for_data(&mut self, idle: Duration) -> bool {
        if !self.buf.is_empty() {
            return true;
        }
        let mut chunk = [0u8; 4096];
        let _ = self.stream.set_read_timeout(Some(idle.max(Duration::from_millis(1))));
        match self.stream.read(&mut chunk) {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                true
            }
        }
    }

    /// Reads more into the buffer before `deadline`; `Err` on timeout, error or end of stream.
    fn fill(&mut self, deadline: Instant, what: &str) -> Result<(), Refusal> {
        let mut chunk = [0u8; 4096];
        let left = deadline.saturating_duration_since(Instant::now());
        let timeout = || Refusal(408, format!("the {what} did not arrive in time"));
        if left.is_zero() {
            return Err(timeout());
        }
        let _ = self.stream.set_read_timeout(Some(left));
        match self.stream.read(&mut chunk) {
            Ok(0) => Err(Refusal(400, format!("the connection closed before the {what} ended"))),
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                Ok(())
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                Err(timeout())
            }
            Err(e) => Err(Refusal(400, format!("cannot read the {what}: {e}"))),
        }
    }

    /// Reads until the buffer holds a CRLF at or after `from` (and at most `max` bytes past
    /// `from` without one); the CRLF's position.
    fn line_end(
        &mut self,
        from: usize,
        max: usize,
        deadline: Instant,
        what: &str,
        too_long: impl Fn() -> Refusal,
    ) -> Result<usize, Refusal> {
        loop {
            if let Some(p) = self.buf[from..].windows(2).position(|w| w == b"\r\n") {
                return Ok(from + p);
            }
            if self.buf.len() - from > max {
                return Err(too_long());
            }
            self.fill(deadline, what)?;
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        202 => "Accepted",
        204 => "No Content",
        307 => "Temporary Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Payload Too Large",
        415 => "Unsupported Media Type",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        _ => "Unknown",
    }
}

/// The status line and `headers`, without the blank line that ends the head.
fn head(status: u16, headers: &[(String, String)]) -> String {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (name, value) in headers {
        // A header value never carries a line break into the head.
        let value: String = value.chars().filter(|c| *c != '\r' && *c != '\n').collect();
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head
}

/// Writes `response`; `false` when the write failed. Without `keep_alive` the connection is
/// then shut down for writing.
fn write_response(stream: &mut TcpStream, response: &Response, keep_alive: bool) -> bool {
    let mut text = head(response.status, &response.headers);
    text.push_str(&format!(
        "Content-Length: {}\r\nConnection: {}\r\n\r\n",
        response.body.len(),
        if keep_alive { "keep-alive" } else { "close" }
    ));
    let mut bytes = text.into_bytes();
    bytes.extend_from_slice(&response.body);
    let ok = stream.write_all(&bytes).and_then(|_| stream.flush()).is_ok();
    if !keep_alive {
        let _ = stream.shutdown(std::net::Shutdown::Write);
    }
    ok
}

/// How often a stream's writer looks for a client that went away while nothing was sent.
const STREAM_POLL: Duration = Duration::from_millis(200);

/// Writes a streamed answer until it ends, then runs its `on_close`.
fn run_stream(mut stream: TcpStream, start: StreamStart) {
    let StreamStart { status, mut headers, chunks, closed, on_close } = start;
    let _on_close = OnDrop(Some(on_close));
    // Whatever ends the stream marks it closed for the senders.
    struct MarkClosed(Arc<AtomicBool>);
    impl Drop for MarkClosed {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let _mark = MarkClosed(closed.clone());
    headers.retain(|(n, _)| {
        !n.eq_ignore_ascii_case("content-length")
            && !n.eq_ignore_ascii_case("transfer-encoding")
            && !n.eq_ignore_ascii_case("connection")
    });
    let mut text = head(status, &headers);
    text.push_str("Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
    if stream.write_all(text.as_bytes()).and_then(|_| stream.flush()).is_err() {
        return;
    }
    // A reader notices the client closing its end (it sends nothing more on a stream).
    let watcher = stream.try_clone().ok().map(|mut reader| {
        let closed = closed.clone();
        std::thread::spawn(move || {
            let _ = reader.set_read_timeout(None);
            let mut sink = [0u8; 1024];
            while let Ok(n) = reader.read(&mut sink) {
                if n == 0 {
                    break;
                }
            }
            closed.store(true, Ordering::SeqCst);
        })
    });
    let ended_cleanly = loop {
        match chunks.recv_timeout(STREAM_POLL) {
            Ok(Frame::Chunk(data)) => {
                let mut bytes = format!("{:x}\r\n", data.len()).into_bytes();
                bytes.extend_from_slice(&data);
                bytes.extend_from_slice(b"\r\n");
                if stream.write_all(&bytes).and_then(|_| stream.flush()).is_err() {
                    break false;
                }
            }
            Ok(Frame::End) | Err(mpsc::RecvTimeoutError::Disconnected) => break true,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if closed.load(Ordering::SeqCst) {
                    // Cut off (overflow) or the client went away; a close() queued behind
                    // chunks still drains them above.
                    break false;
                }
            }
        }
    };
    closed.store(true, Ordering::SeqCst);
    if ended_cleanly {
        let _ = stream.write_all(b"0\r\n\r\n").and_then(|_| stream.flush());
    }
    let _ = stream.shutdown(std::net::Shutdown::Both);
    if let Some(w) = watcher {
        let _ = w.join();
    }
}

/// A parsed head: method, target, whether it is HTTP/1.0, headers.
type Head = (String, String, bool, Vec<(String, String)>);

/// Parses a request line and headers (the head, without its blank line).
fn parse_head(head: &str) -> Result<Head, Refusal> {
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or("");
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Refusal(400, "malformed request line".into()));
    };
    if method.is_empty() || target.is_empty() || !version.starts_with("HTTP/1.") {
        return Err(Refusal(400, format!("malformed request line or protocol {version:?}")));
    }
    let mut headers = Vec::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(Refusal(400, format!("malformed header line {line:?}")));
        };
        if name.is_empty() || name.contains(|c: char| c.is_whitespace()) {
            return Err(Refusal(400, format!("malformed header name {name:?}")));
        }
        headers.push((name.to_owned(), value.trim().to_owned()));
    }
    Ok((method.to_owned(), target.to_owned(), version == "HTTP/1.0", headers))
}

/// Whether the connection stays open after this request (HTTP/1.1 unless `Connection:
/// close`; HTTP/1.0 only with `Connection: keep-alive`).
fn keeps_alive(http10: bool, headers: &[(String, String)]) -> bool {
    let tokens = headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("connection"))
        .flat_map(|(_, v)| v.split(','))
        .map(|t| t.trim().to_ascii_lowercase())
        .collect::<Vec<_>>();
    if tokens.iter().any(|t| t == "close") {
        return false;
    }
    !http10 || tokens.iter().any(|t| t == "keep-alive")
}

/// Reads one request from `conn`: the head within `header_timeout`, the body (by
/// `Content-Length` or chunked) within `body_timeout` and at most `max_body` bytes. Bytes past
/// the request stay in `conn.buf` for the next one.
fn read_request(conn: &mut Conn, limits: &Limits) -> Result<ReadRequest, Refusal> {
    let deadline = Instant::now() + limits.header_timeout;
    let too_big_head =
        || Refusal(431, format!("the request head is larger than {} bytes", limits.max_head));
    let head_end = loop {
        if let Some(p) = conn.buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p;
        }
        if conn.buf.len() > limits.max_head {
            return Err(too_big_head());
        }
        conn.fill(deadline, "request head")?;
    };
    if head_end > limits.max_head {
        return Err(too_big_head());
    }
    let head = String::from_utf8_lossy(&conn.buf[..head_end]).into_owned();
    conn.buf.drain(..head_end + 4);
    let (method, target, http10, headers) = parse_head(&head)?;
    let mut length: Option<usize> = None;
    let mut chunked = false;
    let mut expect_continue = false;
    for (name, value) in &headers {
        if name.eq_ignore_ascii_case("content-length") {
            let n: usize = value.parse().map_err(|_| Refusal(400, "bad Content-Length".into()))?;
            if length.is_some_and(|m| m != n) {
                return Err(Refusal(400, "conflicting Content-Length headers".into()));
            }
            length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            if !value.eq_ignore_ascii_case("chunked") {
                return Err(Refusal(501, format!("transfer encoding {value} is not supported")));
            }
            chunked = true;
        } else if name.eq_ignore_ascii_case("expect") && value.eq_ignore_ascii_case("100-continue")
        {
            expect_continue = true;
        }
    }
    if chunked && length.is_some() {
        return Err(Refusal(400, "both Content-Length and chunked encoding".into()));
    }
    let too_large = || Refusal(413, format!("the body is larger than {} bytes", limits.max_body));
    if length.is_some_and(|n| n > limits.max_body) {
        return Err(too_large());
    }
    if expect_continue && (chunked || length.is_some_and(|n| n > 0)) {
        let _ = conn.stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
    }
    let deadline = Instant::now() + limits.body_timeout;
    let body = if chunked {
        read_chunked(conn, deadline, limits.max_body)?
    } else {
        let n = length.unwrap_or(0);
        while conn.buf.len() < n {
            conn.fill(deadline, "request body")?;
        }
        conn.buf.drain(..n).collect()
    };
    let keep_alive = keeps_alive(http10, &headers);
    Ok(ReadRequest { method, target, headers, body, keep_alive })
}

/// Decodes a chunked body from `conn`, refusing more than `max` bytes (counting what is on the
/// wire, so an endless body is cut off at the limit). Trailers are read and dropped.
fn read_chunked(conn: &mut Conn, deadline: Instant, max: usize) -> Result<Vec<u8>, Refusal> {
    let too_large = || Refusal(413, format!("the body is larger than {max} bytes"));
    let bad_size = || Refusal(400, "malformed chunk size".into());
    let mut body = Vec::new();
    loop {
        let line_end = conn.line_end(0, 64, deadline, "request body", bad_size)?;
        let size_text = String::from_utf8_lossy(&conn.buf[..line_end]);
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| bad_size())?;
        conn.buf.drain(..line_end + 2);
        if size == 0 {
            // Trailers, up to the blank line.
            loop {
                let end = conn.line_end(0, 8 << 10, deadline, "request body", || {
                    Refusal(431, "the chunked body's trailers are too large".into())
                })?;
                conn.buf.drain(..end + 2);
                if end == 0 {
                    return Ok(body);
                }
            }
        }
        if body.len() + size > max {
            return Err(too_large());
        }
        while conn.buf.len() < size + 2 {
            conn.fill(deadline, "request body")?;
        }
        if &conn.buf[size..size + 2] != b"\r\n" {
            return Err(Refusal(400, "a chunk does not end in CRLF".into()));
        }
        body.extend(conn.buf.drain(..size));
        conn.buf.drain(..2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_head_that_stalls_is_answered_408_after_the_header_timeout() {
        let server = echo_server();
        let a = exchange(&server, b"GET /x HTTP/1.1\r\nHost: slow");
        assert!(a.starts_with("HTTP/1.1 408"), "{a}");
    }

    #[test]
    fn a_kept_alive_connection_serves_several_requests_in_turn() {
        let server = echo_server();
        let mut s = connect(&server);
        for word in ["one", "two", "three"] {
            let req = format!("POST /x HTTP/1.1\r\nContent-Length: {}\r\n\r\n{word}", word.len());
            s.write_all(req.as_bytes()).unwrap();
            let a = read_answer(&mut s);
            assert!(
                a.contains("Connection: keep-alive") && a.ends_with(&format!("\"{word}\"")),
                "{a}"
            );
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
        assert!(a.contains("Connection: close"), "{a}");
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
