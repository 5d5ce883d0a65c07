//! Starting this process's `NodeServer` and following its session events.

use std::sync::Arc;

use ractor::{Actor, ActorId, ActorRef};
use ractor_cluster::node::NodeServerSessionInformation;
use ractor_cluster::{
    IncomingEncryptionMode, NodeEventSubscription, NodeServer, NodeServerMessage,
    NodeSessionMessage,
};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::sync::mpsc;

use super::config::ClusterConfig;
use crate::actors::messages::SCOPE;

/// A session event, with the peer's node name when known and the session it concerns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeEvent {
    /// A connection opened (not yet authenticated).
    Opened {
        /// Peer address.
        peer_addr: String,
        /// Whether the peer dialled this node (else this node dialled it).
        inbound: bool,
        /// The session; stopping it closes the connection.
        session: ActorRef<NodeSessionMessage>,
    },
    /// The peer proved it knows the cookie.
    Authenticated {
        /// Peer node name.
        peer: String,
        /// Peer address.
        peer_addr: String,
        /// The session's actor.
        session: ActorId,
    },
    /// The session ended.
    Disconnected {
        /// Peer node name, if it got that far.
        peer: Option<String>,
        /// Peer address.
        peer_addr: String,
        /// The session's actor.
        session: ActorId,
    },
}

/// The node name part of a session peer name (`name@host`).
fn node_name(s: &NodeServerSessionInformation) -> Option<String> {
    s.peer_name
        .as_ref()
        .map(|n| n.name.split('@').next().unwrap_or_default().to_owned())
}

struct Forward(mpsc::UnboundedSender<NodeEvent>);

impl NodeEventSubscription for Forward {
    fn node_session_opened(&self, s: NodeServerSessionInformation) {
        let _ = self.0.send(NodeEvent::Opened {
            peer_addr: s.peer_addr,
            inbound: s.is_server,
            session: s.actor,
        });
    }

    fn node_session_disconnected(&self, s: NodeServerSessionInformation) {
        let _ = self.0.send(NodeEvent::Disconnected {
            peer: node_name(&s),
            session: s.actor.get_id(),
            peer_addr: s.peer_addr,
        });
    }

    fn node_session_authenticated(&self, s: NodeServerSessionInformation) {
        if let Some(peer) = node_name(&s) {
            let _ = self.0.send(NodeEvent::Authenticated {
                peer,
                session: s.actor.get_id(),
                peer_addr: s.peer_addr,
            });
        }
    }
}

/// A running node server and its event stream.
pub struct Node {
    /// The node server.
    pub server: ActorRef<NodeServerMessage>,
    /// Session events.
    pub events: mpsc::UnboundedReceiver<NodeEvent>,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node").finish_non_exhaustive()
    }
}

/// A TLS acceptor that refuses every handshake (no certificate to present). ractor_cluster's
/// `NodeServer` always opens a listener of its own; connections reach the node only through
/// [`crate::transport`] (TLS, socket tuning, authentication deadline), so that listener is made
/// a dead end: a connection to it never reaches a session, cookie or not.
fn refuse_every_connection() -> IncomingEncryptionMode {
    #[derive(Debug)]
    struct NoCertificate;
    impl ResolvesServerCert for NoCertificate {
        fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
            None
        }
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("the default protocol versions are supported")
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(NoCertificate));
    IncomingEncryptionMode::Tls(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// Starts the node server (its own listener, bound to an unused loopback port, refuses every
/// connection: they come from [`crate::transport`]) and subscribes to its events. Its sessions
/// exchange the process groups of `scope` only, which peers know as the cluster's
/// [`SCOPE`]: a node of several in one process (`--nodes-per-process`) keeps its actors in a
/// scope of its own, and its session carries no other node's actors.
///
/// # Errors
/// A message if the actor cannot start.
pub async fn start(config: &ClusterConfig, scope: &str) -> Result<Node, String> {
    let host = config
        .listen
        .as_deref()
        .and_then(|l| l.rsplit_once(':').map(|(h, _)| h.to_owned()))
        .unwrap_or_else(|| "0.0.0.0".to_owned());
    let server = NodeServer::new(
        0,
        config.cookie.clone(),
        config.node_name.clone(),
        host,
        Some(refuse_every_connection()),
        None,
    )
    .with_listen_addr(std::net::Ipv4Addr::LOCALHOST.into())
    .with_max_inbound_frame_size(config.max_frame_bytes)
    .with_scope(scope.to_owned(), SCOPE.to_owned());
    let (server, _) = Actor::spawn(None, server, ())
        .await
        .map_err(|e| format!("cannot start the node server: {e}"))?;
    let (tx, events) = mpsc::unbounded_channel();
    server
        .cast(NodeServerMessage::SubscribeToEvents {
            id: "gridtest".to_owned(),
            subscription: Box::new(Forward(tx)),
        })
        .map_err(|e| format!("cannot subscribe to node events: {e}"))?;
    Ok(Node { server, events })
}

#[cfg(test)]
mod tests;
