//! `TestEnv`: a private HOME, pi agent dir and shake store per test, and helpers to run `shake`
//! and pi's own code (the oracle) on the same files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A sandbox for one test: temp HOME with `.pi/agent`, a temp store, a working directory.
pub struct TestEnv {
    pub dir: tempfile::TempDir,
}

impl TestEnv {
    /// Creates an empty sandbox.
    pub fn new() -> TestEnv {
        // In memory where there is a tmpfs: shake fsyncs every write, which on a loaded disk
        // costs more than the rest of a test (the crash loops write thousands of files).
        let shm = std::path::Path::new("/dev/shm");
        let dir = match shm.is_dir() {
            true => tempfile::tempdir_in(shm).or_else(|_| tempfile::tempdir()),
            false => tempfile::tempdir(),
        }
        .expect("temp dir");
        std::fs::create_dir_all(dir.path().join("home/.pi/agent/sessions")).unwrap();
        std::fs::create_dir_all(dir.path().join("work")).unwrap();
        TestEnv { dir }
    }

    /// The sandbox's pi agent dir.
    pub fn agent_dir(&self) -> PathBuf {
        self.dir.path().join("home/.pi/agent")
    }

    /// The sandbox's store.
    pub fn store(&self) -> PathBuf {
        self.dir.path().join("store")
    }

    /// The working directory commands run in.
    pub fn cwd(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// Copies a fixture from `tests/fixtures/` into the sandbox and returns its path.
    pub fn fixture(&self, name: &str) -> PathBuf {
        let to = self.dir.path().join(name);
        std::fs::copy(fixture_path(name), &to).expect("copy fixture");
        settled(&to)
    }

    /// Writes a file into the sandbox and returns its path.
    pub fn write(&self, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let to = self.dir.path().join(name);
        std::fs::write(&to, bytes).unwrap();
        settled(&to)
    }

    /// Writes a session into pi's folder for the working directory, named as pi names it
    /// (`<timestamp>_<session id>.jsonl`), and returns its path.
    pub fn pi_session(&self, session_id: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let cwd = std::fs::canonicalize(self.cwd()).unwrap();
        let dir = self.agent_dir().join("sessions").join(shake_plumbing::pi::paths::encode_cwd(&cwd));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("2026-01-01T00-00-00-000Z_{session_id}.jsonl"));
        std::fs::write(&path, bytes).unwrap();
        settled(&path)
    }

    /// Returns a `shake` command set up to run in the sandbox.
    pub fn cmd(&self) -> Command {
        self.cmd_through(&[])
    }

    /// [`TestEnv::cmd`] run through `wrapper` (a program and its arguments, which then runs
    /// shake), e.g. `setpriv` to drop privileges.
    pub fn cmd_through(&self, wrapper: &[&str]) -> Command {
        let shake = env!("CARGO_BIN_EXE_shake");
        let mut cmd = match wrapper.split_first() {
            None => Command::new(shake),
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args).arg(shake);
                c
            }
        };
        cmd.current_dir(self.cwd())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.dir.path().join("home"))
            .env("SHAKE_DIR", self.store())
            .env("NO_COLOR", "1")
            .env("TZ", "UTC");
        cmd
    }

    /// Runs `shake ARGS…` and returns its output.
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().expect("run shake")
    }

    /// Runs `shake ARGS…`, asserts success, and returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "shake {args:?} failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8 stdout")
    }

    /// Runs `shake ARGS…`, asserts it fails with `code`, and returns stderr.
    pub fn fails(&self, args: &[&str], code: i32) -> String {
        let out = self.run(args);
        assert_eq!(out.status.code(), Some(code), "shake {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stderr).expect("utf-8 stderr")
    }
}

/// The wrapper under which shake meets file modes as their owner does: none for a user, and
/// for root (who reads and writes whatever the mode, by CAP_DAC_OVERRIDE and
/// CAP_DAC_READ_SEARCH; CI may run as root) `setpriv` dropping both from the bounding set, so
/// the shake it execs holds them in no set. `probe` is a command the mode must refuse (e.g.
/// `cat` of an unreadable file); it is checked to be refused under the wrapper.
pub fn without_dac(probe: &[&str]) -> &'static [&'static str] {
    const WITHOUT_DAC: &[&str] = &["setpriv", "--bounding-set", "-dac_override,-dac_read_search"];
    let refused = |wrapper: &[&str]| {
        let all: Vec<&str> = wrapper.iter().chain(probe).copied().collect();
        Command::new(all[0]).args(&all[1..]).output().is_ok_and(|o| !o.status.success())
    };
    if refused(&[]) {
        return &[];
    }
    assert!(
        refused(WITHOUT_DAC),
        "as root, this test needs util-linux's setpriv and CAP_SETPCAP to drop the DAC capabilities"
    );
    WITHOUT_DAC
}

/// The path of a checked-in fixture.
/// The first pack file (`*.pack`) in the folder `packs` (a store's, or a folder remote's).
pub fn first_pack(packs: &Path) -> PathBuf {
    std::fs::read_dir(packs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "pack"))
        .unwrap_or_else(|| panic!("no pack in {}", packs.display()))
}

pub fn fixture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// Every checked-in session fixture.
pub fn fixtures() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".jsonl"))
        .collect();
    names.sort();
    names
}

/// pi's own code, installed by `tests/oracle/setup` (npm, pinned by its lock file).
pub struct Oracle;

impl Oracle {
    fn dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracle")
    }

    /// Installs pi 1.6.0 if it is not there yet (`npm ci` from the lock file).
    pub fn ensure() {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            npm_ci(&Self::dir(), &[Path::new("node_modules/@earendil-works/pi-coding-agent/package.json")])
        });
    }

    /// Runs an oracle script (`project.mjs`, `append-check.mjs`, …) and returns stdout as JSON.
    pub fn run(script: &str, args: &[&str]) -> serde_json::Value {
        Self::ensure();
        let mut cmd = Command::new("node");
        cmd.arg(Self::dir().join(script)).args(args);
        json_stdout(cmd, &format!("oracle {script} {args:?}"))
    }
}

/// Runs `cmd` and parses its stdout as JSON, panicking with `what` and its stderr if it is not.
pub fn json_stdout(mut cmd: Command, what: &str) -> serde_json::Value {
    // stdout goes to a file, not a pipe: the scripts end with process.exit(), which drops
    // output still queued for a full pipe (seen under load), while file writes are synchronous.
    let mut sink = tempfile::tempfile().expect("temp file");
    let out = cmd.stdout(sink.try_clone().expect("dup")).output().expect(what);
    let mut stdout = Vec::new();
    std::io::Seek::rewind(&mut sink).and_then(|_| std::io::Read::read_to_end(&mut sink, &mut stdout)).expect("read");
    serde_json::from_slice(&stdout).unwrap_or_else(|e| panic!("{what}: {e}\n{}", String::from_utf8_lossy(&out.stderr)))
}

/// Runs `npm ci` in `dir` (from its lock file) unless every file in `ready` (relative to `dir`)
/// is already there.
pub fn npm_ci(dir: &Path, ready: &[&Path]) {
    if ready.iter().all(|f| dir.join(f).exists()) {
        return;
    }
    let status = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
        .current_dir(dir)
        .status()
        .expect("npm is needed to install pi for the tests");
    assert!(status.success(), "npm ci in {} failed", dir.display());
}

/// Dates `path` an hour back, as a session file no program has touched for a while looks: a
/// fold refuses to write into one another program wrote in the last 30 s (pi may have it
/// open). A test that plays pi writing just now writes after this.
pub fn settled(path: &Path) -> PathBuf {
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options().write(true).open(path).unwrap().set_modified(hour_ago).unwrap();
    path.to_path_buf()
}
