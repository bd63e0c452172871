//! A small HTTP/1.1 server for `serve`: every connection is served on its own thread (at most
//! [`Limits::max_connections`] at once), with a deadline for the request head and one for the
//! body, and a body size limit (`413 Payload Too Large`). A slow or endless client only ever
//! holds its own connection.
//!
//! Each request is handed to the caller as a [`Request`] (method, path, body) on a channel;
//! the caller answers it with [`Request::respond`]. One request per connection
//! (`Connection: close`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The server's limits.
#[derive(Clone, Debug)]
pub struct Limits {
    /// The request line and headers must arrive within this long.
    pub header_timeout: Duration,
    /// The body must arrive within this long after the head.
    pub body_timeout: Duration,
    /// Largest body accepted, in bytes; larger gets `413`.
    pub max_body: usize,
    /// Largest request head (request line and headers), in bytes; larger gets `431`.
    pub max_head: usize,
    /// Connections served at once; more are answered `503` and closed.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            max_body: 1 << 20,
            max_head: 16 << 10,
            max_connections: 64,
        }
    }
}

/// A request read in full, waiting for its answer.
pub struct Request {
    /// `GET`, `POST`, … as sent.
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The body as text (UTF-8, lossily).
    pub body: String,
    reply: mpsc::Sender<(u16, String)>,
}

impl Request {
    /// Sends the answer (a JSON body) to the client.
    pub fn respond(self, status: u16, json: String) {
        let _ = self.reply.send((status, json));
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
            write_response(&mut stream, 503, &error_json("too many connections; try again"));
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

fn serve_connection(mut stream: TcpStream, tx: &mpsc::Sender<Request>, limits: &Limits) {
    let _ = stream.set_write_timeout(Some(limits.body_timeout));
    let (status, body) = match read_request(&mut stream, limits) {
        Err(Refusal(status, message)) => (status, error_json(&message)),
        Ok((method, path, body)) => {
            let (reply, answer) = mpsc::channel();
            if tx.send(Request { method, path, body, reply }).is_err() {
                return;
            }
            match answer.recv() {
                Ok(a) => a,
                Err(_) => return,
            }
        }
    };
    write_response(&mut stream, status, &body);
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Payload Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        _ => "Unknown",
    }
}

fn write_response(stream: &mut TcpStream, status: u16, body: &str) {
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        reason(status),
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).and_then(|_| stream.write_all(body.as_bytes()));
    let _ = stream.flush();
    let _ = stream.shutdown(std::net::Shutdown::Write);
}

/// Reads from `stream` into `buf` until `deadline`; `Ok(0)` at end of stream.
fn read_some(
    stream: &mut TcpStream,
    buf: &mut [u8],
    deadline: Instant,
    what: &str,
) -> Result<usize, Refusal> {
    let left = deadline.saturating_duration_since(Instant::now());
    let timeout = || Refusal(408, format!("the {what} did not arrive in time"));
    if left.is_zero() {
        return Err(timeout());
    }
    let _ = stream.set_read_timeout(Some(left));
    match stream.read(buf) {
        Ok(n) => Ok(n),
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

/// Reads one request: the head within `header_timeout`, the body (by `Content-Length` or
/// chunked) within `body_timeout` and at most `max_body` bytes.
fn read_request(
    stream: &mut TcpStream,
    limits: &Limits,
) -> Result<(String, String, String), Refusal> {
    let deadline = Instant::now() + limits.header_timeout;
    let mut data: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(p) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break p;
        }
        if data.len() > limits.max_head {
            return Err(Refusal(
                431,
                format!("the request head is larger than {} bytes", limits.max_head),
            ));
        }
        let n = read_some(stream, &mut chunk, deadline, "request head")?;
        if n == 0 {
            return Err(Refusal(400, "the connection closed before the request head ended".into()));
        }
        data.extend_from_slice(&chunk[..n]);
    };
    if head_end > limits.max_head {
        return Err(Refusal(
            431,
            format!("the request head is larger than {} bytes", limits.max_head),
        ));
    }
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let mut rest = data.split_off(head_end + 4);
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or("");
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(Refusal(400, "malformed request line".into()));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(Refusal(400, format!("unsupported protocol {version}")));
    }
    let mut length: Option<usize> = None;
    let mut chunked = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(Refusal(400, format!("malformed header line {line:?}")));
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            let n: usize = value.parse().map_err(|_| Refusal(400, "bad Content-Length".into()))?;
            length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            if !value.eq_ignore_ascii_case("chunked") {
                return Err(Refusal(501, format!("transfer encoding {value} is not supported")));
            }
            chunked = true;
        }
    }
    let too_large = || Refusal(413, format!("the body is larger than {} bytes", limits.max_body));
    let deadline = Instant::now() + limits.body_timeout;
    let body = if chunked {
        read_chunked(stream, rest, deadline, limits.max_body)?
    } else {
        let n = length.unwrap_or(0);
        if n > limits.max_body {
            return Err(too_large());
        }
        while rest.len() < n {
            let got = read_some(stream, &mut chunk, deadline, "request body")?;
            if got == 0 {
                return Err(Refusal(400, "the connection closed before the body ended".into()));
            }
            rest.extend_from_slice(&chunk[..got]);
        }
        rest.truncate(n);
        rest
    };
    let path = target.split('?').next().unwrap_or("").to_owned();
    Ok((method.to_owned(), path, String::from_utf8_lossy(&body).into_owned()))
}

/// Decodes a chunked body, refusing more than `max` bytes (counting what is on the wire, so an
/// endless body is cut off at the limit).
fn read_chunked(
    stream: &mut TcpStream,
    mut data: Vec<u8>,
    deadline: Instant,
    max: usize,
) -> Result<Vec<u8>, Refusal> {
    let too_large = || Refusal(413, format!("the body is larger than {max} bytes"));
    let mut body = Vec::new();
    let mut chunk = [0u8; 4096];
    let mut pos = 0;
    let mut fill = |data: &mut Vec<u8>, need: usize| -> Result<(), Refusal> {
        while data.len() < need {
            if data.len() > max + 64 {
                return Err(too_large());
            }
            let n = read_some(stream, &mut chunk, deadline, "request body")?;
            if n == 0 {
                return Err(Refusal(400, "the connection closed before the body ended".into()));
            }
            data.extend_from_slice(&chunk[..n]);
        }
        Ok(())
    };
    loop {
        // The size line.
        let line_end = loop {
            if let Some(p) = data[pos..].windows(2).position(|w| w == b"\r\n") {
                break pos + p;
            }
            if data.len() - pos > 64 {
                return Err(Refusal(400, "malformed chunk size".into()));
            }
            let need = data.len() + 1;
            fill(&mut data, need)?;
        };
        let size_text = String::from_utf8_lossy(&data[pos..line_end]);
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| Refusal(400, "malformed chunk size".into()))?;
        pos = line_end + 2;
        if size == 0 {
            return Ok(body);
        }
        if body.len() + size > max {
            return Err(too_large());
        }
        fill(&mut data, pos + size + 2)?;
        body.extend_from_slice(&data[pos..pos + size]);
        pos += size + 2;
        // Keep the buffer small: drop what was consumed.
        data.drain(..pos);
        pos = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            header_timeout: Duration::from_millis(300),
            body_timeout: Duration::from_millis(300),
            max_body: 1000,
            ..Limits::default()
        }
    }

    /// Answers every request with its body, echoed as a JSON string.
    fn echo_server() -> Server {
        let (server, rx) = Server::bind("127.0.0.1:0", limits()).unwrap();
        std::thread::spawn(move || {
            for r in rx {
                let body = serde_json::Value::String(r.body.clone()).to_string();
                r.respond(200, body);
            }
        });
        server
    }

    fn exchange(server: &Server, raw: &[u8]) -> String {
        let mut s = TcpStream::connect(server.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(raw).unwrap();
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        answer
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
}
