//! Sockets between nodes. gridtest owns them (instead of letting ractor_cluster open them) so
//! that it knows the bound port, sets TCP keepalive and `TCP_USER_TIMEOUT` (a partitioned peer
//! is dropped after seconds, not after the kernel's ~15 minute retransmission limit), and does
//! the TLS handshake itself. Established streams are handed to the `NodeServer`, which runs the
//! cookie authentication and the session.
//!
//! The settings and errors are here in every build; the sockets, with the `cluster` feature.

#[cfg(feature = "cluster")]
mod sockets;

use std::path::PathBuf;

#[cfg(feature = "cluster")]
pub use sockets::{AUTH_TIMEOUT, Tls, dial, listen};

/// TLS material.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// Certificate chain.
    pub cert: PathBuf,
    /// Private key.
    pub key: PathBuf,
    /// CA bundle.
    pub ca: PathBuf,
    /// Expected server name.
    pub server_name: String,
}

/// Errors of the transport.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// A socket operation failed.
    #[error("{what} {addr}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The address.
        addr: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// TLS material is unusable.
    #[error("TLS: {0}")]
    Tls(String),
    /// The node server is gone.
    #[error("the node server is not running")]
    NodeServer,
    /// This node never joined the cluster within its join timeout.
    #[error("could not join the cluster: {0}")]
    Join(String),
}
