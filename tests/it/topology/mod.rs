//! Redis Cluster topologies of real redis-servers, for integration tests.
//!
//! [`Cluster::start`] runs `shards` primaries, each with `replicas` replicas. Every node
//! is a [`Server`] (module loaded, free loopback port, its own directory and a free
//! cluster bus port), and `redis-cli --cluster create` joins them. A cluster is ready
//! once every node reports `cluster_state:ok` with all 16384 slots served and every
//! replica's link is up. Dropping a [`Cluster`] kills every node, also when a test
//! fails. Clusters of one test binary run one at a time, so a test run keeps few
//! servers on the (shared) machine. Waits poll with deadlines.
//!
//! Use it from a test file with `use crate::topology::…`.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use redis::cluster::{ClusterClient, ClusterConnection};

use crate::common::{cmd, wait_for, Connection, Options, Server};

pub const SLOTS: u16 = 16384;

/// Short, so that a replica takes over a failed primary within seconds.
pub const NODE_TIMEOUT_MS: u64 = 2000;

/// How long forming a cluster or a failover may take before a test fails.
const DEADLINE: Duration = Duration::from_secs(30);

/// Held by each live [`Cluster`]: one cluster per test binary at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A node as `CLUSTER NODES` describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub id: String,
    pub port: u16,
    pub primary: bool,
    /// The id of the primary this replica follows.
    pub primary_id: Option<String>,
    /// Flagged `fail` (or `fail?`) by the node that was asked.
    pub failed: bool,
    /// Inclusive slot ranges this node serves.
    pub slots: Vec<(u16, u16)>,
}

impl Node {
    pub fn owns(&self, slot: u16) -> bool {
        self.slots.iter().any(|&(a, b)| (a..=b).contains(&slot))
    }

    pub fn first_slot(&self) -> u16 {
        self.slots
            .iter()
            .map(|r| r.0)
            .min()
            .expect("a node with slots")
    }

    pub fn last_slot(&self) -> u16 {
        self.slots
            .iter()
            .map(|r| r.1)
            .max()
            .expect("a node with slots")
    }

    /// Parses one line of `CLUSTER NODES`:
    /// `<id> <ip:port@cport> <flags> <primary> <ping> <pong> <epoch> <link> <slot>...`.
    fn parse(line: &str) -> Node {
        let fields: Vec<&str> = line.split_whitespace().collect();
        assert!(fields.len() >= 8, "unexpected CLUSTER NODES line: {line}");
        let port = fields[1]
            .split(['@', ','])
            .next()
            .and_then(|addr| addr.rsplit(':').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in CLUSTER NODES line: {line}"));
        let flags: Vec<&str> = fields[2].split(',').collect();
        let slots = fields[8..]
            .iter()
            // `[slot->-id]` and `[slot-<-id]` are slots being migrated: not served yet.
            .filter(|s| !s.starts_with('['))
            .map(|s| {
                let (a, b) = s.split_once('-').unwrap_or((s, s));
                let parse = |x: &str| -> u16 {
                    x.parse()
                        .unwrap_or_else(|_| panic!("bad slot {s} in: {line}"))
                };
                (parse(a), parse(b))
            })
            .collect();
        Node {
            id: fields[0].to_string(),
            port,
            primary: flags.contains(&"master"),
            primary_id: (fields[3] != "-").then(|| fields[3].to_string()),
            failed: flags.iter().any(|f| f.starts_with("fail")),
            slots,
        }
    }
}

/// A running Redis Cluster.
pub struct Cluster {
    /// Every node in creation order; None once killed.
    servers: Vec<Option<Server>>,
    // Declared last: released after every node is dead.
    _turn: MutexGuard<'static, ()>,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Fields `name:value` of an INFO-style reply.
fn field<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(str::trim)
}

fn cluster_info(c: &mut Connection) -> redis::RedisResult<String> {
    cmd("CLUSTER").arg("INFO").query(c)
}

fn cluster_nodes(c: &mut Connection) -> redis::RedisResult<Vec<Node>> {
    let text: String = cmd("CLUSTER").arg("NODES").query(c)?;
    Ok(text.lines().map(Node::parse).collect())
}

/// `cluster_state:ok` with every slot assigned and served by a node not failing.
fn healthy(info: &str) -> bool {
    let all = SLOTS.to_string();
    field(info, "cluster_state") == Some("ok")
        && field(info, "cluster_slots_assigned") == Some(all.as_str())
        && field(info, "cluster_slots_ok") == Some(all.as_str())
}

impl Cluster {
    /// `shards` primaries sharing the 16384 slots, each with `replicas` replicas.
    pub fn start(shards: usize, replicas: usize) -> Cluster {
        let turn = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
        // Built one by one: if a node fails to start, those already running are
        // dropped (killed) with the partial vector.
        let servers = (0..shards * (1 + replicas))
            .map(|_| Some(Server::with(node_options())))
            .collect();
        let cluster = Cluster {
            servers,
            _turn: turn,
        };
        cluster.create(replicas);
        cluster.wait_on_every_node("the cluster to form", |c| Self::formed(c, shards, replicas));
        cluster
    }

    /// Runs `redis-cli --cluster create` with a deadline.
    fn create(&self, replicas: usize) {
        let first = self.live().next().expect("a node");
        let log_path = first.dir.join("cluster-create.log");
        let log = std::fs::File::create(&log_path).expect("create log");
        let child = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(self.live().map(|s| format!("127.0.0.1:{}", s.port)))
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log handle"))
            .stderr(log)
            .spawn()
            .expect("run redis-cli");
        let mut child = KillOnDrop(child);
        let status = wait_for(DEADLINE, "redis-cli --cluster create", || {
            child.0.try_wait().expect("redis-cli status")
        });
        let output = std::fs::read_to_string(&log_path).unwrap_or_default();
        assert!(
            status.success() && output.contains("All 16384 slots covered"),
            "redis-cli --cluster create failed ({status}):\n{output}"
        );
    }

    /// This node serves all slots, says ok, sees the whole topology without failures
    /// (`shards` primaries with slots, `replicas` replicas each), and if it is a
    /// replica its link is up.
    fn formed(c: &mut Connection, shards: usize, replicas: usize) -> redis::RedisResult<bool> {
        let info = cluster_info(c)?;
        let nodes = cluster_nodes(c)?;
        let replication: String = cmd("INFO").arg("replication").query(c)?;
        let linked = field(&replication, "role") == Some("master")
            || field(&replication, "master_link_status") == Some("up");
        let primaries = nodes.iter().filter(|n| n.primary && !n.slots.is_empty());
        let followers = nodes.iter().filter(|n| n.primary_id.is_some());
        Ok(healthy(&info)
            && linked
            && nodes.len() == shards * (1 + replicas)
            && nodes.iter().all(|n| !n.failed)
            && primaries.count() == shards
            && followers.count() == shards * replicas)
    }

    /// Polls `check` on every live node until it holds on all of them, with one
    /// connection per node (opened again after an error).
    fn wait_on_every_node(
        &self,
        what: &str,
        mut check: impl FnMut(&mut Connection) -> redis::RedisResult<bool>,
    ) {
        let mut conns: Vec<(&Server, Option<Connection>)> =
            self.live().map(|s| (s, None)).collect();
        wait_for(DEADLINE, what, || {
            conns
                .iter_mut()
                .all(|(server, conn)| {
                    if conn.is_none() {
                        *conn = try_conn(server).ok();
                    }
                    let Some(c) = conn.as_mut() else {
                        return false;
                    };
                    check(c).unwrap_or_else(|_| {
                        *conn = None;
                        false
                    })
                })
                .then_some(())
        });
    }

    fn live(&self) -> impl Iterator<Item = &Server> {
        self.servers.iter().flatten()
    }

    /// Ports of the nodes still running.
    pub fn ports(&self) -> Vec<u16> {
        self.live().map(|s| s.port).collect()
    }

    pub fn server(&self, port: u16) -> &Server {
        self.live()
            .find(|s| s.port == port)
            .unwrap_or_else(|| panic!("no live node on port {port}"))
    }

    /// A plain (not cluster-aware) connection to one node.
    pub fn conn(&self, port: u16) -> Connection {
        self.server(port).conn()
    }

    /// A cluster-aware connection that knows every live node. It gives up after a
    /// few short retries, so a broken cluster fails a test instead of hanging it.
    pub fn client(&self) -> ClusterConnection {
        let urls: Vec<String> = self
            .ports()
            .iter()
            .map(|p| format!("redis://127.0.0.1:{p}/"))
            .collect();
        ClusterClient::builder(urls)
            .connection_timeout(Duration::from_secs(5))
            .response_timeout(Duration::from_secs(10))
            .retries(3)
            .min_retry_wait(50)
            .max_retry_wait(500)
            .build()
            .and_then(|client| client.get_connection())
            .expect("a cluster connection")
    }

    /// The cluster as the first live node sees it.
    pub fn nodes(&self) -> Vec<Node> {
        let mut c = self.conn(self.ports()[0]);
        cluster_nodes(&mut c).expect("CLUSTER NODES")
    }

    /// The primaries serving slots, ordered by their first slot.
    pub fn primaries(&self) -> Vec<Node> {
        let mut primaries: Vec<Node> = self
            .nodes()
            .into_iter()
            .filter(|n| n.primary && !n.failed && !n.slots.is_empty())
            .collect();
        primaries.sort_by_key(Node::first_slot);
        primaries
    }

    /// The primary serving `slot`.
    pub fn owner(&self, slot: u16) -> Node {
        self.primaries()
            .into_iter()
            .find(|n| n.owns(slot))
            .unwrap_or_else(|| panic!("no primary serves slot {slot}"))
    }

    /// A replica following `primary`.
    pub fn replica_of(&self, primary: &Node) -> Node {
        self.nodes()
            .into_iter()
            .find(|n| n.primary_id.as_deref() == Some(primary.id.as_str()))
            .unwrap_or_else(|| panic!("no replica follows {primary:?}"))
    }

    /// The slot of `key`, as the server computes it.
    pub fn keyslot(&self, key: &str) -> u16 {
        let mut c = self.conn(self.ports()[0]);
        cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(key)
            .query(&mut c)
            .expect("CLUSTER KEYSLOT")
    }

    /// Kills the node on `port` (SIGKILL, like a crash).
    pub fn kill(&mut self, port: u16) {
        let slot = self
            .servers
            .iter_mut()
            .find(|s| s.as_ref().is_some_and(|s| s.port == port))
            .unwrap_or_else(|| panic!("no live node on port {port}"));
        drop(slot.take());
    }

    /// Waits until every live node serves all slots with `cluster_state:ok` and
    /// agrees that `slot` is served by the primary on `port`.
    pub fn wait_for_owner(&self, slot: u16, port: u16) {
        let what = format!("slot {slot} served by port {port}");
        self.wait_on_every_node(&what, |c| {
            let served = cluster_nodes(c)?
                .iter()
                .any(|n| n.port == port && n.primary && !n.failed && n.owns(slot));
            Ok(served && healthy(&cluster_info(c)?))
        });
    }
}

/// One slot moving between primaries, step by step, as `redis-cli --cluster reshard`
/// moves it: the target imports, the source migrates, MIGRATE moves keys, and the
/// slot is then handed over on every node.
pub struct Migration<'a> {
    cluster: &'a Cluster,
    pub slot: u16,
    pub from: Node,
    pub to: Node,
}

impl<'a> Migration<'a> {
    /// Marks `slot` as moving from its owner to the primary on `to_port`.
    pub fn begin(cluster: &'a Cluster, slot: u16, to_port: u16) -> Migration<'a> {
        let from = cluster.owner(slot);
        let to = cluster
            .primaries()
            .into_iter()
            .find(|n| n.port == to_port)
            .unwrap_or_else(|| panic!("no primary on port {to_port}"));
        assert_ne!(from.port, to.port, "slot {slot} already there");
        let migration = Migration {
            cluster,
            slot,
            from,
            to,
        };
        migration.set_slot(migration.to.port, &["IMPORTING", &migration.from.id]);
        migration.set_slot(migration.from.port, &["MIGRATING", &migration.to.id]);
        migration
    }

    fn set_slot(&self, port: u16, args: &[&str]) {
        let _: () = cmd("CLUSTER")
            .arg("SETSLOT")
            .arg(self.slot)
            .arg(args)
            .query(&mut self.cluster.conn(port))
            .unwrap_or_else(|e| panic!("CLUSTER SETSLOT {} {args:?} on {port}: {e}", self.slot));
    }

    /// Moves `keys` (of this slot) to the target with MIGRATE.
    pub fn migrate(&self, keys: &[String]) {
        let reply: String = cmd("MIGRATE")
            .arg("127.0.0.1")
            .arg(self.to.port)
            .arg("")
            .arg(0)
            .arg(10_000)
            .arg("KEYS")
            .arg(keys)
            .query(&mut self.cluster.conn(self.from.port))
            .expect("MIGRATE");
        assert_eq!(reply, "OK", "MIGRATE {keys:?}");
    }

    /// Moves the slot's remaining keys, hands the slot to the target on every node
    /// and waits until the whole cluster agrees.
    pub fn finish(self) {
        let mut source = self.cluster.conn(self.from.port);
        loop {
            let keys: Vec<String> = cmd("CLUSTER")
                .arg("GETKEYSINSLOT")
                .arg(self.slot)
                .arg(100)
                .query(&mut source)
                .expect("CLUSTER GETKEYSINSLOT");
            if keys.is_empty() {
                break;
            }
            self.migrate(&keys);
        }
        // The target first, then the source, then the other primaries (replicas
        // refuse SETSLOT and learn it from their primaries).
        let others = self
            .cluster
            .primaries()
            .into_iter()
            .map(|n| n.port)
            .filter(|&p| p != self.to.port && p != self.from.port);
        let order: Vec<u16> = [self.to.port, self.from.port]
            .into_iter()
            .chain(others)
            .collect();
        for port in order {
            self.set_slot(port, &["NODE", &self.to.id]);
        }
        self.cluster.wait_for_owner(self.slot, self.to.port);
    }
}

/// A node of a cluster: short node timeout, its own bus port.
fn node_options() -> Options {
    let args = [
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        "nodes.conf",
        "--cluster-node-timeout",
        &NODE_TIMEOUT_MS.to_string(),
        // The default bus port (port + 10000) may be taken, or above 65535.
        "--cluster-port",
        &free_port().to_string(),
    ];
    Options {
        args: args.iter().map(|a| a.to_string()).collect(),
        ..Options::default()
    }
}

/// A connection that may fail while a node is starting, busy or gone.
fn try_conn(server: &Server) -> redis::RedisResult<Connection> {
    redis::Client::open(format!("redis://127.0.0.1:{}/", server.port))?
        .get_connection_with_timeout(Duration::from_secs(2))
}

/// A helper process that must not outlive a failed test.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
