//! A live `allocator-master serve` for tests: started on a free loopback port (the address
//! comes back on stderr), spoken to over HTTP/1.1, stopped with SIGTERM (so that its summary
//! and recording are finished) or killed when dropped.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::{master, workspace_root};

/// A running `allocator-master serve`; killed when dropped.
pub struct Serve {
    child: Child,
    /// `HOST:PORT` it listens on.
    pub addr: String,
}

impl Serve {
    /// Starts `allocator-master serve --listen 127.0.0.1:0` with `args` in the workspace root
    /// and waits for its address. Its stderr is drained so it never blocks on a full pipe.
    pub fn start(args: &[&str]) -> Serve {
        Serve::start_with_stderr(args).0
    }

    /// As [`Serve::start`], with the master's stderr lines after its address as they come.
    pub fn start_with_stderr(args: &[&str]) -> (Serve, std::sync::mpsc::Receiver<String>) {
        Serve::start_as("serve", args)
    }

    /// As [`Serve::start_with_stderr`], for `subcommand` (`serve`, or `kube`, which takes
    /// `serve`'s flags).
    pub fn start_as(subcommand: &str, args: &[&str]) -> (Serve, std::sync::mpsc::Receiver<String>) {
        let mut child = Command::new(master())
            .args([subcommand, "--listen", "127.0.0.1:0"])
            .args(args)
            .current_dir(workspace_root())
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start allocator-master serve");
        let lines = crate::stderr_lines(&mut child);
        let addr = loop {
            let line =
                lines.recv_timeout(Duration::from_secs(60)).expect("serve announces its address");
            let addr = line.split("http://").nth(1).or_else(|| line.split("https://").nth(1));
            if let Some(addr) = addr {
                break addr.trim().to_owned();
            }
        };
        (Serve { child, addr }, lines)
    }

    /// The master's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// One request with a JSON body; the status and the body.
    pub fn request(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        let (status, _, payload) =
            self.request_with(method, path, &["Content-Type: application/json"], body);
        (status, payload)
    }

    /// One request with extra `headers` (each `Name: value`) and `body`, sent as is (no
    /// `Content-Type` unless given); the status, the response headers and the body.
    pub fn request_with(
        &self,
        method: &str,
        path: &str,
        headers: &[&str],
        body: &str,
    ) -> (u16, Vec<(String, String)>, String) {
        let mut s = self.send(method, path, &[&["Connection: close"], headers].concat(), body);
        s.set_read_timeout(Some(Duration::from_secs(60))).expect("a timeout");
        let mut answer = String::new();
        s.read_to_string(&mut answer).expect("read the answer");
        let (head, payload) = answer.split_once("\r\n\r\n").expect("headers and body");
        let (status, headers) = parse_head(head);
        (status, headers, payload.to_owned())
    }

    /// Connects and sends one request with `headers` (each `Name: value`) and `body`.
    fn send(&self, method: &str, path: &str, headers: &[&str], body: &str) -> TcpStream {
        let mut s = TcpStream::connect(&self.addr).expect("connect");
        let extra: String = headers.iter().map(|h| format!("{h}\r\n")).collect();
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\n{extra}Content-Length: {}\r\n\r\n{body}",
            self.addr,
            body.len()
        )
        .expect("send the request");
        s
    }

    /// Sends a request whose answer is a stream (a scheduler `SUBSCRIBE`) and reads only the
    /// answer's head: the status, the headers and the open connection (the stream's chunks
    /// follow on it).
    pub fn open_stream(
        &self,
        path: &str,
        headers: &[&str],
        body: &str,
    ) -> (u16, Vec<(String, String)>, BufReader<TcpStream>) {
        let s = self.send("POST", path, headers, body);
        s.set_read_timeout(Some(Duration::from_secs(30))).expect("a timeout");
        let mut reader = BufReader::new(s);
        let mut head = String::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).expect("read the head") == 0 || line == "\r\n" {
                break;
            }
            head.push_str(&line);
        }
        let (status, headers) = parse_head(head.trim_end());
        (status, headers, reader)
    }

    /// One request with a JSON body from local address `from` (any of 127.0.0.0/8 reaches
    /// loopback on Linux): the status and the body, or why there was none.
    pub fn request_from(
        &self,
        from: IpAddr,
        method: &str,
        path: &str,
        body: &str,
    ) -> std::io::Result<(u16, String)> {
        let mut s = connect_from(from, &self.addr)?;
        s.set_read_timeout(Some(Duration::from_secs(20)))?;
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.addr,
            body.len()
        )?;
        let mut answer = String::new();
        s.read_to_string(&mut answer)?;
        let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, answer.clone());
        let (head, payload) = answer.split_once("\r\n\r\n").ok_or_else(bad)?;
        let status = head.split(' ').nth(1).and_then(|c| c.parse().ok()).ok_or_else(bad)?;
        Ok((status, payload.to_owned()))
    }

    /// Stops it with SIGTERM, as an operator does, and waits for it to end.
    pub fn stop(mut self) -> ExitStatus {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status().expect("run kill");
        assert!(sent.success(), "kill -TERM {pid}");
        self.child.wait().expect("serve ends")
    }

    /// Waits for it to stop by itself (`--duration`).
    pub fn wait(mut self) -> ExitStatus {
        self.child.wait().expect("serve ends")
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The status and headers of an answer's head.
fn parse_head(head: &str) -> (u16, Vec<(String, String)>) {
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .expect("a status line");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    (status, headers)
}

/// The value of header `name` (case-insensitive) among `headers`.
pub fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
}

/// A TCP connection to `addr` from local address `from` (port chosen by the system), within
/// 5 s.
pub fn connect_from(from: IpAddr, addr: &str) -> std::io::Result<TcpStream> {
    use std::net::ToSocketAddrs;
    let to: SocketAddr = addr
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, addr.to_owned()))?;
    let socket =
        socket2::Socket::new(socket2::Domain::for_address(to), socket2::Type::STREAM, None)?;
    socket.bind(&SocketAddr::new(from, 0).into())?;
    socket.connect_timeout(&to.into(), Duration::from_secs(5))?;
    Ok(socket.into())
}

/// One offer of an event stream: (time in microseconds, framework, role, agent, resources).
pub type StreamOffer = (i64, String, String, String, String);

/// The offers of an event stream written with `--output`, in order.
pub fn offers_in(path: &Path) -> Vec<StreamOffer> {
    let text = std::fs::read_to_string(path).expect("an event stream");
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("JSON lines"))
        .filter(|v| v["event"] == "offer")
        .map(|v| {
            let s = |k: &str| v[k].as_str().expect("text field").to_owned();
            let t = (v["time"].as_f64().expect("time") * 1e6).round() as i64;
            (t, s("framework"), s("role"), s("agent"), s("resources"))
        })
        .collect()
}

/// The python of a virtualenv with pymesos (and avmesos-cli): `$ALLOCATOR_MASTER_PYTHON`, else
/// `target/pyenv/bin/python`, which is made on first use by `tests/python/setup-venv.sh`
/// (needs `python3` and PyPI). A test never passes without running: when the venv cannot be
/// had, this panics saying why and how to make it. (`Option` for the callers' `let … else`.)
pub fn pymesos_python() -> Option<PathBuf> {
    static PYTHON: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    let found = PYTHON.get_or_init(|| {
        if let Some(p) = std::env::var_os("ALLOCATOR_MASTER_PYTHON").filter(|p| !p.is_empty()) {
            let p = PathBuf::from(p);
            return if p.exists() {
                Ok(p)
            } else {
                Err(format!("ALLOCATOR_MASTER_PYTHON names {}, which does not exist", p.display()))
            };
        }
        let target = crate::target_dir();
        let venv = target.parent().unwrap_or(&target).join("pyenv");
        let python = venv.join("bin/python");
        // The script keeps a venv that has everything (one import), and makes it otherwise.
        let out = Command::new("bash")
            .arg("tests/python/setup-venv.sh")
            .arg(&venv)
            .current_dir(workspace_root())
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| format!("cannot run tests/python/setup-venv.sh: {e}"))?;
        if out.status.success() && python.exists() {
            Ok(python)
        } else {
            Err(format!("tests/python/setup-venv.sh {} failed ({})", venv.display(), out.status))
        }
    });
    match found {
        Ok(p) => Some(p.clone()),
        Err(why) => panic!(
            "no pymesos virtualenv: {why}. Make it with `bash tests/python/setup-venv.sh` (needs python3 with venv and PyPI), or name one with ALLOCATOR_MASTER_PYTHON"
        ),
    }
}

/// What an open stream (an event stream's chunks) brings within `seconds`, as text.
pub fn read_for(stream: &mut BufReader<TcpStream>, seconds: f64) -> String {
    let until = std::time::Instant::now() + Duration::from_secs_f64(seconds);
    let mut text = Vec::new();
    let mut buf = [0u8; 65536];
    while std::time::Instant::now() < until {
        let left = until.saturating_duration_since(std::time::Instant::now());
        stream.get_ref().set_read_timeout(Some(left.max(Duration::from_millis(10)))).ok();
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => text.extend_from_slice(&buf[..n]),
            Err(_) => {}
        }
    }
    String::from_utf8_lossy(&text).into_owned()
}
