//! The client to the API server: kube-rs's [`Client`] over HTTP/2 where the server offers it.
//!
//! kube-rs builds its client on hyper with HTTP/1.1 only, so every request in flight holds a
//! TLS connection of its own: at a thousand bindings a second, each one is a write and a read
//! system call and a wake-up of its own. kube-scheduler's Go client speaks HTTP/2, one
//! connection carrying every watch and write, frames of many requests leaving in one write. This
//! module builds the same service stack kube-rs builds from a [`Config`] (the cluster's base
//! URI, authentication, extra headers, retries of 5xx/429 answers, connection timeouts) on the
//! same crates, with HTTP/2 offered by ALPN next to HTTP/1.1: an API server that does not take
//! it is spoken to in HTTP/1.1, as before.

use std::time::Duration;

use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use kube::client::ConfigExt;
use kube::client::retry::RetryPolicy;
use kube::{Client, Config};
use tower::retry::RetryLayer;
use tower::{BoxError, ServiceBuilder};

/// Why no client could be made.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The configuration's TLS or authentication settings cannot be used.
    #[error("{0}")]
    Config(#[from] kube::Error),
    /// The TLS server name is not a DNS name or an address.
    #[error("the TLS server name '{0}' is not a valid server name")]
    ServerName(String),
}

/// The client for `config`: HTTP/2 where the API server takes it, HTTP/1.1 otherwise, over
/// rustls with the configuration's certificates, with the timeouts, authentication, headers
/// and retries kube-rs's own client has. An HTTP proxy in the configuration is not supported
/// here: such a configuration gets kube-rs's own client.
pub fn client(config: Config) -> Result<Client, ClientError> {
    if config.proxy_url.is_some() {
        return Ok(Client::try_from(config)?);
    }
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    let tls = config.rustls_client_config()?;
    let builder = hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls).https_or_http();
    let builder = match &config.tls_server_name {
        None => builder,
        Some(name) => {
            let name = rustls::pki_types::ServerName::try_from(name.clone())
                .map_err(|_| ClientError::ServerName(name.clone()))?;
            builder.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(name))
        }
    };
    let https = builder.enable_all_versions().wrap_connector(http);
    let mut connector = hyper_timeout::TimeoutConnector::new(https);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    let hyper = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        // Watches are long streams: flow-control windows that grow with what is read keep
        // a re-list of thousands of pods from stalling on the default 64 KiB.
        .http2_adaptive_window(true)
        // A connection that stopped answering is found within 45 s, as client-go finds it
        // (a ping after 30 s without a frame, 15 s for its answer), and every request on it
        // fails over to a new one, instead of the watches waiting out the read timeout.
        .timer(TokioTimer::new())
        .http2_keep_alive_interval(Duration::from_secs(30))
        .http2_keep_alive_timeout(Duration::from_secs(15))
        .build(connector);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.default_retry.then(|| RetryLayer::new(RetryPolicy::server_retry())))
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(BoxError::from)
        .service(hyper);
    Ok(Client::new(service, config.default_namespace))
}
