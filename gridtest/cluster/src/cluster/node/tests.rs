//! Several nodes in one process, each with its own session to one peer: each session carries
//! its own node's process groups only (the scope patch of `vendor/ractor-cluster`), over real
//! TCP sessions on 127.0.0.1.

use std::time::{Duration, Instant};

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use ractor_cluster::RactorClusterMessage;

use super::*;
use crate::cluster::Role;
use crate::transport;

#[derive(RactorClusterMessage)]
enum Probe {
    #[rpc]
    Name(RpcReplyPort<String>),
}

/// Answers its name.
struct Named;

impl Actor for Named {
    type Msg = Probe;
    type State = String;
    type Arguments = (String, String, String);

    async fn pre_start(
        &self,
        myself: ActorRef<Probe>,
        (name, scope, group): Self::Arguments,
    ) -> Result<String, ActorProcessingErr> {
        ractor::pg::join_scoped(scope, group, vec![myself.get_cell()]);
        Ok(name)
    }

    async fn handle(
        &self,
        _: ActorRef<Probe>,
        Probe::Name(reply): Probe,
        name: &mut String,
    ) -> Result<(), ActorProcessingErr> {
        let _ = reply.send(name.clone());
        Ok(())
    }
}

fn config(name: &str) -> ClusterConfig {
    ClusterConfig {
        role: Role::Worker,
        role_reason: "test".into(),
        warnings: Vec::new(),
        listen: None,
        seeds: Vec::new(),
        cookie: "scopes".into(),
        node_name: name.into(),
        nodes_per_process: 1,
        results: None,
        heartbeat: Duration::from_secs(1),
        node_timeout: Duration::from_secs(5),
        drain_grace: Duration::from_secs(1),
        join_timeout: Duration::from_secs(10),
        max_frame_bytes: 1 << 20,
        tls: None,
    }
}

async fn spawn_named(name: &str, scope: &str, group: &str) -> ActorRef<Probe> {
    let args = (name.to_owned(), scope.to_owned(), group.to_owned());
    Actor::spawn(None, Named, args).await.unwrap().0
}

/// The names answered by the members of `scope`/`group`, sorted, once `expect` of them are
/// there (or whatever is there after 10 s).
async fn names(scope: &str, group: &str, expect: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let members = ractor::pg::get_scoped_members(&scope.to_owned(), &group.to_owned());
        if members.len() == expect || Instant::now() > deadline {
            let mut names = Vec::new();
            for member in members {
                let probe = ActorRef::<Probe>::from(member);
                let name = ractor::call_t!(probe, Probe::Name, 5_000).unwrap();
                names.push(name);
            }
            names.sort();
            return names;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_of_one_process_each_carry_only_their_own_groups() {
    // The head: its supervisor stand-in in the cluster's scope.
    let head = start(&config("head"), SCOPE).await.unwrap();
    let addr = transport::listen(head.server.clone(), "127.0.0.1:0", None)
        .await
        .unwrap()
        .to_string();
    let _supervisor = spawn_named("supervisor", SCOPE, "supervisors").await;
    // Two nodes of one (this) process, each with its agent stand-in in a scope of its own.
    let a = start(&config("w.0"), "gridtest@w.0").await.unwrap();
    let b = start(&config("w.1"), "gridtest@w.1").await.unwrap();
    let _x = spawn_named("agent of w.0", "gridtest@w.0", "agents").await;
    let _y = spawn_named("agent of w.1", "gridtest@w.1", "agents").await;
    transport::dial(&a.server, &addr, None).await.unwrap();
    transport::dial(&b.server, &addr, None).await.unwrap();

    // The head sees each node's agent once, through that node's session, in its own scope.
    assert_eq!(
        names(SCOPE, "agents", 2).await,
        ["agent of w.0", "agent of w.1"]
    );
    // Each node sees the head's supervisor once, in its own scope, and reaches it.
    for (scope, agent) in [
        ("gridtest@w.0", "agent of w.0"),
        ("gridtest@w.1", "agent of w.1"),
    ] {
        assert_eq!(
            names(scope, "supervisors", 1).await,
            ["supervisor"],
            "{scope}"
        );
        assert_eq!(
            names(scope, "agents", 1).await,
            [agent],
            "{scope}: its own only"
        );
    }
    // A node's session ending takes its agent away from the head, and nothing of the other's.
    a.server.stop(None);
    assert_eq!(names(SCOPE, "agents", 1).await, ["agent of w.1"]);
    assert_eq!(
        names("gridtest@w.1", "supervisors", 1).await,
        ["supervisor"]
    );
    b.server.stop(None);
    head.server.stop(None);
}
