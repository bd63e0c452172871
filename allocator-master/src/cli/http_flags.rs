//! `serve`'s HTTP flags: TLS (`--ssl_cert_file`, `--ssl_key_file`) and the HTTP server's
//! limits and timeouts (hidden flags, for tests and operators who need them; the defaults are
//! [`allocator_http::Limits::default`]).

use std::path::PathBuf;
use std::time::Duration;

use allocator_http::{Limits, TlsFiles};
use clap::builder::TypedValueParser as _;

/// The HTTP server's flags (flattened into `serve`'s).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct HttpFlags {
    /// Serve HTTPS with this certificate chain (PEM, leaf first); needs --ssl_key_file.
    #[arg(long = "ssl_cert_file", alias = "ssl-cert-file", value_name = "FILE")]
    pub ssl_cert_file: Option<PathBuf>,
    /// The private key (PEM) of --ssl_cert_file's certificate; needs --ssl_cert_file.
    #[arg(long = "ssl_key_file", alias = "ssl-key-file", value_name = "FILE")]
    pub ssl_key_file: Option<PathBuf>,
    /// Seconds a request head may take from its first byte (default 10).
    #[arg(
        long = "http_header_timeout",
        alias = "http-header-timeout",
        hide = true,
        value_name = "SECS",
        value_parser = crate::duration::seconds
    )]
    pub header_timeout: Option<f64>,
    /// Seconds a request body may take after its head (default 10).
    #[arg(
        long = "http_body_timeout",
        alias = "http-body-timeout",
        hide = true,
        value_name = "SECS",
        value_parser = crate::duration::seconds
    )]
    pub body_timeout: Option<f64>,
    /// Seconds an idle keep-alive connection stays open (default 60).
    #[arg(
        long = "http_idle_timeout",
        alias = "http-idle-timeout",
        hide = true,
        value_name = "SECS",
        value_parser = crate::duration::seconds
    )]
    pub idle_timeout: Option<f64>,
    /// Request connections open at once, streams not included (default 1024).
    #[arg(
        long = "http_max_connections",
        alias = "http-max-connections",
        hide = true,
        value_name = "N"
    )]
    pub max_connections: Option<usize>,
    /// Request connections open at once from one client address (default 128).
    #[arg(
        long = "http_max_connections_per_address",
        alias = "http-max-connections-per-address",
        hide = true,
        value_name = "N"
    )]
    pub max_connections_per_address: Option<usize>,
    /// Scheduler API streams open at once (default 1024).
    #[arg(long = "http_max_streams", alias = "http-max-streams", hide = true, value_name = "N")]
    pub max_streams: Option<usize>,
    /// Operator API event streams open at once, a share of --http_max_streams (default a
    /// quarter of it, rounded down), so that anonymous subscribers cannot take the frameworks' places.
    #[arg(
        long = "http_max_operator_streams",
        alias = "http-max-operator-streams",
        hide = true,
        value_name = "N"
    )]
    pub max_operator_streams: Option<usize>,
    /// Bytes an event stream may hold for a client that does not read them; past this it is
    /// cut off (a warning says so) [default: 16777216].
    #[arg(
        long = "http_stream_queue_bytes",
        alias = "http-stream-queue-bytes",
        value_name = "BYTES",
        value_parser = clap::value_parser!(u64).range(1024..).map(|n| n as usize)
    )]
    pub stream_queue_bytes: Option<usize>,
    /// Bytes every operator event stream together may hold for clients that have not read
    /// them (an event held by several counts once); past this the streams holding the most are
    /// cut off (a warning says so) [default: 134217728].
    #[arg(
        long = "http_operator_streams_bytes",
        alias = "http-operator-streams-bytes",
        value_name = "BYTES",
        value_parser = clap::value_parser!(u64).range(1024..).map(|n| n as usize)
    )]
    pub operator_streams_bytes: Option<usize>,
}

impl HttpFlags {
    /// The server's limits: the defaults with the flags given. `Err` is a one-line message.
    pub fn limits(&self) -> Result<Limits, String> {
        let secs = |flag: &str, v: Option<f64>, default: Duration| match v {
            None => Ok(default),
            Some(s) if s.is_finite() && s > 0.0 && s < 1e9 => Ok(Duration::from_secs_f64(s)),
            Some(s) => Err(format!("--{flag} must be a positive number of seconds, not {s}")),
        };
        let d = Limits::default();
        let max_streams = self.max_streams.unwrap_or(d.max_streams);
        Ok(Limits {
            header_timeout: secs("http_header_timeout", self.header_timeout, d.header_timeout)?,
            body_timeout: secs("http_body_timeout", self.body_timeout, d.body_timeout)?,
            idle_timeout: secs("http_idle_timeout", self.idle_timeout, d.idle_timeout)?,
            max_connections: self.max_connections.unwrap_or(d.max_connections),
            max_connections_per_address: self
                .max_connections_per_address
                .unwrap_or(d.max_connections_per_address),
            max_streams,
            max_observer_streams: self.max_operator_streams.unwrap_or(max_streams / 4),
            stream_queue_bytes: self.stream_queue_bytes.unwrap_or(d.stream_queue_bytes),
            observer_queue_bytes: self.operator_streams_bytes.unwrap_or(d.observer_queue_bytes),
            ..d
        })
    }

    /// The TLS files: both flags or neither. `Err` is a one-line message.
    pub fn tls(&self) -> Result<Option<TlsFiles>, String> {
        match (&self.ssl_cert_file, &self.ssl_key_file) {
            (Some(cert), Some(key)) => Ok(Some(TlsFiles { cert: cert.clone(), key: key.clone() })),
            (None, None) => Ok(None),
            (Some(_), None) => {
                Err("--ssl_cert_file needs --ssl_key_file (give both or neither)".into())
            }
            (None, Some(_)) => {
                Err("--ssl_key_file needs --ssl_cert_file (give both or neither)".into())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_takes_both_files_or_neither() {
        let mut f = HttpFlags::default();
        assert_eq!(f.tls(), Ok(None));
        f.ssl_cert_file = Some("c.pem".into());
        assert!(f.tls().unwrap_err().contains("--ssl_key_file"));
        f.ssl_key_file = Some("k.pem".into());
        assert_eq!(f.tls().unwrap().unwrap().key, PathBuf::from("k.pem"));
        f.ssl_cert_file = None;
        assert!(f.tls().unwrap_err().contains("--ssl_cert_file"));
    }

    #[test]
    fn limits_default_and_refuse_bad_timeouts() {
        let mut f = HttpFlags::default();
        assert_eq!(f.limits().unwrap().idle_timeout, Duration::from_secs(60));
        f.header_timeout = Some(0.5);
        f.max_connections_per_address = Some(4);
        let l = f.limits().unwrap();
        assert_eq!(
            (l.header_timeout, l.max_connections_per_address),
            (Duration::from_millis(500), 4)
        );
        f.idle_timeout = Some(-1.0);
        assert!(f.limits().unwrap_err().contains("--http_idle_timeout"));
    }

    #[test]
    fn operator_streams_get_a_quarter_of_the_stream_places_and_queues_a_byte_bound() {
        let mut f = HttpFlags::default();
        let l = f.limits().unwrap();
        assert_eq!((l.max_streams, l.max_observer_streams), (1024, 256));
        assert_eq!(l.stream_queue_bytes, 16 << 20);
        assert_eq!(l.observer_queue_bytes, 128 << 20);
        f.operator_streams_bytes = Some(1 << 20);
        assert_eq!(f.limits().unwrap().observer_queue_bytes, 1 << 20);
        f.max_streams = Some(8);
        f.stream_queue_bytes = Some(4096);
        let l = f.limits().unwrap();
        assert_eq!((l.max_observer_streams, l.stream_queue_bytes), (2, 4096));
        f.max_operator_streams = Some(5);
        assert_eq!(f.limits().unwrap().max_observer_streams, 5);
    }
}
