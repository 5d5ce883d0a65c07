//! Starting this process's `NodeServer` and following its session events.

use ractor::{Actor, ActorRef};
use ractor_cluster::node::NodeServerSessionInformation;
use ractor_cluster::{NodeEventSubscription, NodeServer, NodeServerMessage};
use tokio::sync::mpsc;

use super::config::ClusterConfig;

/// A session event, with the peer's node name when known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeEvent {
    /// A connection opened (not yet authenticated).
    Opened {
        /// Peer address.
        peer_addr: String,
    },
    /// The peer proved it knows the cookie.
    Authenticated {
        /// Peer node name.
        peer: String,
    },
    /// The session ended.
    Disconnected {
        /// Peer node name, if it got that far.
        peer: Option<String>,
        /// Peer address.
        peer_addr: String,
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
        });
    }

    fn node_session_disconnected(&self, s: NodeServerSessionInformation) {
        let _ = self.0.send(NodeEvent::Disconnected {
            peer: node_name(&s),
            peer_addr: s.peer_addr,
        });
    }

    fn node_session_authenticated(&self, s: NodeServerSessionInformation) {
        if let Some(peer) = node_name(&s) {
            let _ = self.0.send(NodeEvent::Authenticated { peer });
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

/// Starts the node server (its own listener is bound to an unused loopback port: connections
/// come from [`super::transport`]) and subscribes to its events.
///
/// # Errors
/// A message if the actor cannot start.
pub async fn start(config: &ClusterConfig) -> Result<Node, String> {
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
        None,
        None,
    )
    .with_listen_addr(std::net::Ipv4Addr::LOCALHOST.into())
    .with_max_inbound_frame_size(config.max_frame_bytes);
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
