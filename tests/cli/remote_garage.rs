//! Remotes on a real S3-compatible server: Garage 2.5.0 (`tests/garage-oracle/setup.sh` installs
//! it), one node on loopback per test, from a small config in a temp folder (free ports, its
//! own data), its layout applied, a key and a bucket made with the `garage` CLI; shake reads the
//! key from `AWS_*` as object_store reads them. Two stores push to and fetch from one bucket;
//! a push killed at its pauses never leaves a manifest naming a missing pack, and the next push
//! completes.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::remote::{fetched_path, folded_session, fork_of, same_answers, stderr, Machine};

/// The Garage binary `tests/garage-oracle/setup.sh` installs, installed on first use when it is
/// not there (as every oracle is: README, "Building and testing").
fn binary() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/garage-oracle");
    let bin = dir.join("root/bin/garage");
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if !bin.is_file() {
            let status = Command::new("bash").arg(dir.join("setup.sh")).status().expect("bash");
            assert!(status.success(), "tests/garage-oracle/setup.sh failed");
        }
    });
    assert!(bin.is_file(), "{} is missing after tests/garage-oracle/setup.sh", bin.display());
    bin
}

/// A Garage cluster on loopback (one node, or three), every node stopped (killed) when dropped.
pub struct Garage {
    nodes: Vec<Option<Child>>,
    dir: tempfile::TempDir,
    s3_port: u16,
    key: (String, String),
    /// From its start to its bucket ready.
    pub started_in: Duration,
}

/// Free loopback ports: bound together, then released for Garage to take.
fn free_ports(n: usize) -> Vec<u16> {
    let held: Vec<TcpListener> = (0..n).map(|_| TcpListener::bind("127.0.0.1:0").unwrap()).collect();
    held.iter().map(|l| l.local_addr().unwrap().port()).collect()
}

impl Garage {
    /// Starts a single node with a bucket `shake` and a key that may read and write it.
    pub fn start() -> Garage {
        Garage::cluster(1)
    }

    /// Starts `n` nodes (each object on every node: `replication_factor = n`), connected, in one
    /// layout, with a bucket `shake` and a key that may read and write it; shake talks to the
    /// first node's S3 port.
    pub fn cluster(n: usize) -> Garage {
        let started = Instant::now();
        let dir = tempfile::tempdir().unwrap();
        let ports = free_ports(3 * n);
        let secret: String = (0..32).map(|i| format!("{:02x}", (i * 37 + ports[0] as usize) % 256)).collect();
        let mut garage =
            Garage { nodes: Vec::new(), dir, s3_port: ports[0], key: Default::default(), started_in: Duration::ZERO };
        for i in 0..n {
            let (s3_port, rpc_port, admin_port) = (ports[3 * i], ports[3 * i + 1], ports[3 * i + 2]);
            let config = format!(
                r#"metadata_dir = "{d}/meta{i}"
data_dir = "{d}/data{i}"
db_engine = "sqlite"
replication_factor = {n}
rpc_bind_addr = "127.0.0.1:{rpc_port}"
rpc_public_addr = "127.0.0.1:{rpc_port}"
rpc_secret = "{secret}"

[s3_api]
s3_region = "garage"
api_bind_addr = "127.0.0.1:{s3_port}"
root_domain = ".s3.garage.localhost"

[admin]
api_bind_addr = "127.0.0.1:{admin_port}"
"#,
                d = garage.dir.path().display()
            );
            std::fs::write(garage.config(i), config).unwrap();
            garage.nodes.push(None);
            garage.run_node(i);
        }
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut ids = Vec::new();
        for i in 0..n {
            while !garage.cli_on(i, &["status"]).status.success() {
                assert!(Instant::now() < deadline, "garage node {i} did not start: {}", garage.log());
                std::thread::sleep(Duration::from_millis(100));
            }
            let id = String::from_utf8(garage.ok_on(i, &["node", "id", "-q"])).unwrap();
            ids.push(id.trim().to_string());
        }
        for id in &ids[1..] {
            garage.ok(&["node", "connect", id]);
        }
        for id in &ids {
            garage.ok(&["layout", "assign", "-z", "dc1", "-c", "1G", id.split('@').next().unwrap()]);
        }
        garage.ok(&["layout", "apply", "--version", "1"]);
        let key: Value = serde_json::from_slice(&garage.ok(&["json-api", "CreateKey", r#"{"name":"shake"}"#])).unwrap();
        let id = key["accessKeyId"].as_str().unwrap().to_string();
        garage.key = (id.clone(), key["secretAccessKey"].as_str().unwrap().to_string());
        // A new layout settles on every node before the bucket is there for all of them.
        while !garage.cli(&["bucket", "create", "shake"]).status.success() {
            assert!(Instant::now() < deadline, "no bucket: {}", garage.log());
            std::thread::sleep(Duration::from_millis(200));
        }
        garage.ok(&["bucket", "allow", "--read", "--write", "--owner", "shake", "--key", &id]);
        garage.started_in = started.elapsed();
        garage
    }

    fn config(&self, node: usize) -> PathBuf {
        self.dir.path().join(format!("garage{node}.toml"))
    }

    /// Starts node `i` from its config (its data kept), its log appended to.
    fn run_node(&mut self, i: usize) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join(format!("garage{i}.log")))
            .unwrap();
        let child = Command::new(binary())
            .arg("-c")
            .arg(self.config(i))
            .arg("server")
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.nodes[i] = Some(child);
    }

    /// Starts node `i` again after [`Garage::stop`], and waits until it answers.
    pub fn restart(&mut self, i: usize) {
        self.run_node(i);
        let deadline = Instant::now() + Duration::from_secs(120);
        while !self.cli_on(i, &["bucket", "info", "shake"]).status.success() {
            assert!(Instant::now() < deadline, "garage node {i} did not restart: {}", self.log());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stops node `i` (SIGKILL), as a machine that goes down.
    pub fn stop(&mut self, i: usize) {
        if let Some(mut child) = self.nodes[i].take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }

    fn cli(&self, args: &[&str]) -> std::process::Output {
        self.cli_on(0, args)
    }

    fn ok(&self, args: &[&str]) -> Vec<u8> {
        self.ok_on(0, args)
    }

    fn ok_on(&self, node: usize, args: &[&str]) -> Vec<u8> {
        let out = self.cli_on(node, args);
        assert!(out.status.success(), "garage {args:?}: {}\n{}", stderr(&out), self.log());
        out.stdout
    }

    fn cli_on(&self, node: usize, args: &[&str]) -> std::process::Output {
        Command::new(binary()).arg("-c").arg(self.config(node)).args(args).stdin(Stdio::null()).output().unwrap()
    }

    fn log(&self) -> String {
        let logs = (0..self.nodes.len()).map(|i| self.dir.path().join(format!("garage{i}.log")));
        logs.map(|p| std::fs::read_to_string(p).unwrap_or_default()).collect::<Vec<_>>().join("\n")
    }

    /// The environment a shake needs to reach the bucket, as object_store reads it.
    pub fn vars(&self) -> Vec<(String, String)> {
        [
            ("AWS_ACCESS_KEY_ID", self.key.0.clone()),
            ("AWS_SECRET_ACCESS_KEY", self.key.1.clone()),
            ("AWS_ENDPOINT", format!("http://127.0.0.1:{}", self.s3_port)),
            ("AWS_REGION", "garage".to_string()),
            ("AWS_ALLOW_HTTP", "true".to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// Two machines with the bucket added as `origin`.
    pub fn machines(&self) -> (Machine, Machine) {
        let (a, b) = (Machine::new("alpha", &self.vars()), Machine::new("beta", &self.vars()));
        for m in [&a, &b] {
            m.ok(&["remote", "add", "origin", "s3://shake/team"]);
        }
        (a, b)
    }
}

impl Drop for Garage {
    fn drop(&mut self) {
        for child in self.nodes.iter_mut().flatten() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The issue's "done when": two stores push to and fetch from one Garage bucket, every read
/// command answers the same on a fetched session as on its origin, and a fork pushed from the
/// second store adds only its new objects to the bucket.
#[test]
fn two_stores_share_a_garage_bucket() {
    let garage = Garage::start();
    eprintln!("garage: single node ready in {:?}", garage.started_in);
    let (a, b) = garage.machines();
    let id = "0199aaaa-5555";
    let a_path = folded_session(&a, id);
    let first = a.json(&["push", "--json"]);
    assert_eq!(first["packs"], 1, "{first}");
    assert_eq!(b.json(&["fetch", "--json"])["machines"][0]["machine"], "alpha");
    let b_path = fetched_path(&b, "alpha", id);
    same_answers(&a, &b, id, &a_path, &b_path, &crate::synthetic::rich().side_leaf);

    let text = std::fs::read_to_string(&b_path).unwrap();
    let fork = b.env.pi_session("0199bbbb-6666", fork_of(&text, "0199bbbb-6666"));
    b.ok(&["import", fork.to_str().unwrap()]);
    let second = b.json(&["push", "--json"]);
    let (sent, whole) = (second["objects"].as_u64().unwrap(), first["objects"].as_u64().unwrap());
    assert!(
        second["packs"] == 1 && sent < 10 && whole > 50,
        "the fork sends its new objects only: {second} after {first}"
    );
    let fsck = a.json(&["fsck", "--remote", "origin", "--json"]);
    assert_eq!(
        (fsck["ok"].as_bool(), fsck["manifests"].as_u64(), fsck["packs"].as_u64()),
        (Some(true), Some(2), Some(2)),
        "{fsck}"
    );
    assert_eq!(a.json(&["fetch", "--json"])["machines"][0]["machine"], "beta");
    a.ok(&["show", "beta/0199bbbb"]);
}

/// A push killed after its pack and index are up but before its manifest leaves a remote whose
/// manifests name only packs that are there (the pack is counted as named by nobody); the next
/// push completes, and the other machine fetches it. (Killed between its pack and its index:
/// `remote::a_push_killed_between_its_pack_and_its_index_is_finished_by_the_next`.)
#[test]
fn a_killed_push_leaves_no_manifest_naming_a_missing_pack_and_the_next_one_completes() {
    let garage = Garage::start();
    let (a, b) = garage.machines();
    folded_session(&a, "0199aaaa-7777");
    a.ok(&["push"]);
    // A second session: a new pack and a new manifest to write.
    let more = a.env.pi_session("0199aaaa-8888", fork_of(&crate::synthetic::rich().text, "0199aaaa-8888"));
    a.ok(&["import", more.to_str().unwrap()]);
    let mut push = a.cmd_through(&[]);
    push.env(shake_plumbing::remote::PAUSE_MANIFEST_ENV, "600000").args(["push"]).stdout(Stdio::null());
    let mut child = push.stderr(Stdio::null()).spawn().unwrap();
    // Its pack and index are up once a reader counts a pack no manifest names.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let fsck = b.json(&["fsck", "--remote", "origin", "--json"]);
        assert_eq!(fsck["ok"], true, "{fsck}");
        if fsck["unnamed"] == 1 {
            break;
        }
        assert!(Instant::now() < deadline && child.try_wait().unwrap().is_none(), "the push never paused: {fsck}");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let fsck = b.json(&["fsck", "--remote", "origin", "--json"]);
    assert_eq!((fsck["ok"].as_bool(), fsck["manifests"].as_u64()), (Some(true), Some(1)), "{fsck}");
    // The first push's sessions are fetched whole meanwhile.
    assert_eq!(b.json(&["fetch", "--json"])["machines"][0]["sessions"], 1);
    let done = a.json(&["push", "--json"]);
    assert_eq!((done["packs"].as_u64(), done["manifest"].as_bool()), (Some(0), Some(true)), "the pack was up: {done}");
    let fsck = b.json(&["fsck", "--remote", "origin", "--json"]);
    assert_eq!((fsck["ok"].as_bool(), fsck["unnamed"].as_u64()), (Some(true), Some(0)), "{fsck}");
    assert_eq!(b.json(&["fetch", "--json"])["machines"][0]["sessions"], 2);
    let out = b.run(&["show", "alpha/0199aaaa-8888"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// Three nodes, every object on each: a node stopped while a push waits before its manifest
/// leaves a push that completes (a quorum of two writes), a remote `fsck` that passes, and a
/// fetch that reads the session, all through the first node.
#[test]
fn a_node_stopped_during_a_push_of_a_three_node_cluster() {
    let mut garage = Garage::cluster(3);
    eprintln!("garage: three nodes ready in {:?}", garage.started_in);
    let (a, b) = garage.machines();
    let origin = folded_session(&a, "0199aaaa-aaaa");
    let mut push = a.cmd_through(&[]);
    push.env(shake_plumbing::remote::PAUSE_MANIFEST_ENV, "3000").args(["push", "--json"]);
    let child = push.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while b.json(&["fsck", "--remote", "origin", "--json"])["unnamed"] != 1 {
        assert!(Instant::now() < deadline, "the push never reached its manifest");
        std::thread::sleep(Duration::from_millis(50));
    }
    garage.stop(2);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let fsck = b.json(&["fsck", "--remote", "origin", "--json"]);
    assert_eq!(
        (fsck["ok"].as_bool(), fsck["manifests"].as_u64(), fsck["unnamed"].as_u64()),
        (Some(true), Some(1), Some(0)),
        "{fsck}"
    );
    assert_eq!(b.json(&["fetch", "--json"])["machines"][0]["sessions"], 1);
    let path = fetched_path(&b, "alpha", "0199aaaa-aaaa");
    assert_eq!(std::fs::read(path).unwrap(), std::fs::read(origin).unwrap());
}

/// Two machines push the same session at once (the same bytes imported in each): both pushes
/// complete, each machine's manifest names packs that are there, and a third machine fetches
/// the session from both, byte for byte.
#[test]
fn two_machines_push_the_same_session_at_once_to_a_three_node_cluster() {
    let garage = Garage::cluster(3);
    let (a, b) = garage.machines();
    let c = Machine::new("gamma", &garage.vars());
    c.ok(&["remote", "add", "origin", "s3://shake/team"]);
    let text = fork_of(&crate::synthetic::rich().text, "0199cccc-cccc");
    for m in [&a, &b] {
        let path = m.env.pi_session("0199cccc-cccc", &text);
        m.ok(&["import", path.to_str().unwrap()]);
    }
    let spawn = |m: &Machine| {
        m.cmd_through(&[]).args(["push", "--json"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
    };
    let (pa, pb) = (spawn(&a), spawn(&b));
    for out in [pa.wait_with_output().unwrap(), pb.wait_with_output().unwrap()] {
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let fsck = c.json(&["fsck", "--remote", "origin", "--json"]);
    assert_eq!((fsck["ok"].as_bool(), fsck["manifests"].as_u64()), (Some(true), Some(2)), "{fsck}");
    let fetched = c.json(&["fetch", "--json"]);
    assert_eq!(fetched["machines"].as_array().unwrap().len(), 2, "{fetched}");
    for machine in ["alpha", "beta"] {
        let path = fetched_path(&c, machine, "0199cccc-cccc");
        assert_eq!(std::fs::read_to_string(path).unwrap(), text, "{machine}'s copy");
    }
}

/// A push to a server that is gone (a dropped connection) fails in bounded time with exit 4,
/// naming the remote, and leaves nothing half done: once the server is back, the next push
/// completes and another machine fetches it.
#[test]
fn a_push_to_a_server_gone_fails_with_exit_4_and_the_next_one_completes() {
    let mut garage = Garage::start();
    let (a, b) = garage.machines();
    folded_session(&a, "0199aaaa-dddd");
    garage.stop(0);
    // `timeout`'s 124 would be a push that keeps retrying for minutes.
    let out = a.cmd_through(&["timeout", "60"]).arg("push").output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains("remote s3://shake/team"), "{}", stderr(&out));
    garage.restart(0);
    a.ok(&["push"]);
    assert_eq!(b.json(&["fetch", "--json"])["machines"][0]["sessions"], 1);
}

/// A pack larger than one upload part goes up in parts (a multipart upload, streamed from the
/// file) and comes down streamed to a file: the session reads back byte for byte in B, on Garage
/// and on a folder remote.
#[test]
fn a_pack_larger_than_a_part_goes_up_in_parts_and_reads_back() {
    let garage = Garage::start();
    let (a, b) = garage.machines();
    // A third machine fetches from the folder (B has every object once it fetched from Garage).
    let c = Machine::new("gamma", &[]);
    let folder = tempfile::tempdir().unwrap();
    for m in [&a, &c] {
        m.ok(&["remote", "add", "nas", folder.path().to_str().unwrap()]);
    }
    let text = a.ok(&["generate-session", "--seed", "7", "--size", "12M"]);
    let path = a.env.pi_session("0199bbbb-ffff", fork_of(&text, "0199bbbb-ffff"));
    a.ok(&["import", path.to_str().unwrap()]);
    for (remote, b) in [("origin", &b), ("nas", &c)] {
        let pushed = a.json(&["push", remote, "--json"]);
        let bytes = pushed["bytes"].as_u64().unwrap();
        assert!(bytes > shake_plumbing::remote::transport::PART as u64, "{pushed}");
        let fsck = b.json(&["fsck", "--remote", remote, "--json"]);
        assert_eq!(fsck["ok"], true, "{fsck}");
        assert_eq!(b.json(&["fetch", remote, "--json"])["bytes"], bytes, "{remote}");
        let copy = fetched_path(b, "alpha", "0199bbbb-ffff");
        assert!(std::fs::read(&copy).unwrap() == std::fs::read(&path).unwrap(), "{remote}: the copy differs");
    }
}
