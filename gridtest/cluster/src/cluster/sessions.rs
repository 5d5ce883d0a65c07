//! The head's view of its sessions: which node each authenticated connection is, and what a
//! session event means for the sweep. Only an authenticated session may affect leases.

use super::node::NodeEvent;

/// What a session event means for the sweep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SessionChange {
    /// A node authenticated (and whether another connected node has the same name).
    Joined {
        node: String,
        duplicate_of: Option<String>,
    },
    /// The last authenticated session of a node ended: its leases go back.
    Lost { node: String },
    /// A connection ended without authenticating: it affects nothing, whatever name it claimed.
    Refused {
        peer_addr: String,
        claimed: Option<String>,
    },
}

/// The head's view of its sessions: only an authenticated session may affect leases, so a
/// stranger claiming a worker's name (wrong cookie, or a duplicate name refused by the node
/// server) cannot make the head requeue that worker's units.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    /// Authenticated sessions: peer address → node name.
    authenticated: std::collections::HashMap<String, String>,
}

impl Sessions {
    pub(crate) fn is_connected(&self, node: &str) -> bool {
        self.authenticated.values().any(|n| n == node)
    }

    pub(crate) fn follow(&mut self, event: NodeEvent) -> Option<SessionChange> {
        match event {
            NodeEvent::Opened { .. } => None,
            NodeEvent::Authenticated {
                peer, peer_addr, ..
            } => {
                let duplicate_of = self
                    .authenticated
                    .iter()
                    .find(|(addr, n)| **n == peer && **addr != peer_addr)
                    .map(|(addr, _)| addr.clone());
                self.authenticated.insert(peer_addr, peer.clone());
                Some(SessionChange::Joined {
                    node: peer,
                    duplicate_of,
                })
            }
            NodeEvent::Disconnected {
                peer, peer_addr, ..
            } => {
                match self.authenticated.remove(&peer_addr) {
                    // Another session of the same name still stands: the node is not lost.
                    Some(node) if self.is_connected(&node) => None,
                    Some(node) => Some(SessionChange::Lost { node }),
                    None => Some(SessionChange::Refused {
                        peer_addr,
                        claimed: peer,
                    }),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(peer: &str, addr: &str) -> NodeEvent {
        NodeEvent::Authenticated {
            peer: peer.into(),
            peer_addr: addr.into(),
            session: ractor::ActorId::Local(0),
        }
    }

    fn gone(peer: Option<&str>, addr: &str) -> NodeEvent {
        NodeEvent::Disconnected {
            peer: peer.map(Into::into),
            peer_addr: addr.into(),
            session: ractor::ActorId::Local(0),
        }
    }

    #[test]
    fn strangers_claiming_a_name_affect_nothing() {
        let mut s = Sessions::default();
        s.follow(auth("w1", "10.0.0.1:1"));
        // A wrong-cookie process calling itself w1 connects and is refused.
        assert_eq!(
            s.follow(gone(Some("w1"), "10.0.0.9:5")),
            Some(SessionChange::Refused {
                peer_addr: "10.0.0.9:5".into(),
                claimed: Some("w1".into())
            })
        );
        assert!(s.is_connected("w1"));
        // The real w1 going away is a loss.
        assert_eq!(
            s.follow(gone(Some("w1"), "10.0.0.1:1")),
            Some(SessionChange::Lost { node: "w1".into() })
        );
    }

    #[test]
    fn duplicate_names_are_reported_and_a_node_is_lost_with_its_last_session() {
        let mut s = Sessions::default();
        s.follow(auth("w", "a:1"));
        assert_eq!(
            s.follow(auth("w", "b:2")),
            Some(SessionChange::Joined {
                node: "w".into(),
                duplicate_of: Some("a:1".into())
            })
        );
        assert_eq!(s.follow(gone(Some("w"), "a:1")), None);
        assert_eq!(
            s.follow(gone(Some("w"), "b:2")),
            Some(SessionChange::Lost { node: "w".into() })
        );
    }
}
