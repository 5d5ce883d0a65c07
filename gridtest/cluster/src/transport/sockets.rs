//! The sockets: listening, dialling, TLS handshakes and the authentication deadline.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ractor::ActorRef;
use ractor_cluster::{NetworkStream, NodeServerMessage};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use socket2::{SockRef, TcpKeepalive};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::{TlsAcceptor, TlsConnector};

use super::{TlsFiles, TransportError};

/// Keepalive probes start after this idle time.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(2);
/// Unacknowledged data is given up after this long.
const USER_TIMEOUT: Duration = Duration::from_secs(10);
/// A TLS handshake must finish within this.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// An accepted connection that has not authenticated (cookie challenge) within this is closed.
pub const AUTH_TIMEOUT: Duration = Duration::from_secs(5);

fn tune(stream: &TcpStream) {
    let _ = stream.set_nodelay(true);
    let sock = SockRef::from(stream);
    let _ = sock.set_tcp_keepalive(
        &TcpKeepalive::new()
            .with_time(KEEPALIVE_IDLE)
            .with_interval(Duration::from_secs(1)),
    );
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let _ = sock.set_tcp_user_timeout(Some(USER_TIMEOUT));
}

/// TLS configuration of a node: mutual TLS, both sides present a certificate chaining to the CA.
#[derive(Clone)]
pub struct Tls {
    acceptor: TlsAcceptor,
    connector: TlsConnector,
    server_name: ServerName<'static>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

impl Tls {
    /// Loads the certificate, key and CA files.
    ///
    /// # Errors
    /// [`TransportError::Tls`] naming the file that is missing or malformed.
    pub fn load(files: &TlsFiles) -> Result<Self, TransportError> {
        let tls = |what: &str, path: &std::path::Path, e: &dyn std::fmt::Display| {
            TransportError::Tls(format!("{what} {}: {e}", path.display()))
        };
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&files.cert)
            .map_err(|e| tls("certificate", &files.cert, &e))?
            .collect::<Result<_, _>>()
            .map_err(|e| tls("certificate", &files.cert, &e))?;
        let key =
            PrivateKeyDer::from_pem_file(&files.key).map_err(|e| tls("key", &files.key, &e))?;
        let mut roots = rustls::RootCertStore::empty();
        for ca in CertificateDer::pem_file_iter(&files.ca).map_err(|e| tls("CA", &files.ca, &e))? {
            roots
                .add(ca.map_err(|e| tls("CA", &files.ca, &e))?)
                .map_err(|e| tls("CA", &files.ca, &e))?;
        }
        let roots = Arc::new(roots);
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::clone(&roots),
            Arc::clone(&provider),
        )
        .build()
        .map_err(|e| TransportError::Tls(e.to_string()))?;
        let server = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| TransportError::Tls(e.to_string()))?
            .with_client_cert_verifier(verifier)
            .with_single_cert(certs.clone(), key.clone_key())
            .map_err(|e| tls("certificate", &files.cert, &e))?;
        let client = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| TransportError::Tls(e.to_string()))?
            .with_root_certificates(roots)
            .with_client_auth_cert(certs, key)
            .map_err(|e| tls("certificate", &files.cert, &e))?;
        let server_name = ServerName::try_from(files.server_name.clone())
            .map_err(|e| TransportError::Tls(format!("server name {}: {e}", files.server_name)))?;
        Ok(Self {
            acceptor: TlsAcceptor::from(Arc::new(server)),
            connector: TlsConnector::from(Arc::new(client)),
            server_name,
        })
    }
}

/// Binds `addr` and hands every accepted connection to the node server; returns the bound
/// address (useful with port 0). A connection that has not authenticated within
/// [`AUTH_TIMEOUT`] of being accepted is closed, so idle or stalled strangers hold nothing.
///
/// # Errors
/// [`TransportError::Io`] if the address cannot be bound.
pub async fn listen(
    node: ActorRef<NodeServerMessage>,
    addr: &str,
    tls: Option<Tls>,
) -> Result<SocketAddr, TransportError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| TransportError::Io {
            what: "cannot listen on",
            addr: addr.to_owned(),
            source,
        })?;
    let bound = listener.local_addr().map_err(|source| TransportError::Io {
        what: "cannot read the address of",
        addr: addr.to_owned(),
        source,
    })?;
    tokio::spawn(async move {
        loop {
            let (stream, peer_addr) = match listener.accept().await {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            tune(&stream);
            let local_addr = stream.local_addr().unwrap_or(bound);
            let node = node.clone();
            let tls = tls.clone();
            if let Ok(socket) = SockRef::from(&stream).try_clone() {
                tokio::spawn(close_unless_authenticated(node.clone(), socket, peer_addr));
            }
            tokio::spawn(async move {
                let network = match tls {
                    None => NetworkStream::Raw {
                        peer_addr,
                        local_addr,
                        stream,
                    },
                    Some(tls) => {
                        match tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.acceptor.accept(stream))
                            .await
                        {
                            Ok(Ok(stream)) => NetworkStream::TlsServer {
                                peer_addr,
                                local_addr,
                                stream,
                            },
                            Ok(Err(e)) => {
                                tracing::warn!(peer = %peer_addr, error = %e, "TLS handshake refused");
                                return;
                            }
                            Err(_) => {
                                tracing::warn!(peer = %peer_addr, "TLS handshake timed out");
                                return;
                            }
                        }
                    }
                };
                let _ = node.cast(NodeServerMessage::ConnectionOpened {
                    stream: Box::new(network),
                    is_server: true,
                });
            });
        }
    });
    Ok(bound)
}

/// After [`AUTH_TIMEOUT`], shuts `socket` (a duplicate of an accepted connection's) down unless
/// the node server holds an authenticated session with its peer.
async fn close_unless_authenticated(
    node: ActorRef<NodeServerMessage>,
    socket: socket2::Socket,
    peer_addr: SocketAddr,
) {
    tokio::time::sleep(AUTH_TIMEOUT).await;
    let peer = peer_addr.to_string();
    let authenticated = ractor::call_t!(node, NodeServerMessage::GetSessions, 2_000)
        .is_ok_and(|sessions| sessions.values().any(|s| s.peer_addr == peer));
    if !authenticated && socket.shutdown(std::net::Shutdown::Both).is_ok() {
        tracing::warn!(peer = %peer_addr, timeout = ?AUTH_TIMEOUT,
            "closed a connection that did not authenticate in time");
    }
}

/// Dials `addr` (resolving it afresh) and hands the connection to the node server.
///
/// # Errors
/// [`TransportError::Io`] if the connection or the TLS handshake fails.
pub async fn dial(
    node: &ActorRef<NodeServerMessage>,
    addr: &str,
    tls: Option<&Tls>,
) -> Result<(), TransportError> {
    let io = |what, source| TransportError::Io {
        what,
        addr: addr.to_owned(),
        source,
    };
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|e| io("cannot connect to", e))?;
    tune(&stream);
    let peer_addr = stream.peer_addr().map_err(|e| io("cannot connect to", e))?;
    let local_addr = stream
        .local_addr()
        .map_err(|e| io("cannot connect to", e))?;
    let network = match tls {
        None => NetworkStream::Raw {
            peer_addr,
            local_addr,
            stream,
        },
        Some(tls) => {
            let stream = tokio::time::timeout(
                HANDSHAKE_TIMEOUT,
                tls.connector.connect(tls.server_name.clone(), stream),
            )
            .await
            .map_err(|_| {
                io(
                    "TLS handshake timed out with",
                    std::io::ErrorKind::TimedOut.into(),
                )
            })?
            .map_err(|e| io("TLS handshake failed with", e))?;
            NetworkStream::TlsClient {
                peer_addr,
                local_addr,
                stream,
            }
        }
    };
    node.cast(NodeServerMessage::ConnectionOpened {
        stream: Box::new(network),
        is_server: false,
    })
    .map_err(|_| TransportError::NodeServer)
}
