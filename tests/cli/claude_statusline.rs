//! `shake meter --statusline`, Claude Code's status line: on every fixture its line is the figure
//! `shake meter` prints for the same transcript; colour follows `NO_COLOR` and `--color`, not the
//! pipe; a bad input prints `✂ ?`, says why on stderr and exits 0. And in the real interactive
//! Claude Code 2.1.328 under tmux (offline, against the local API), the status bar shows the
//! meter's figure for the session it is in.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::claude_host::install;
use crate::claude_live::claude_oracle;
use crate::claude_project::claude_fixtures;
use crate::env::TestEnv;

/// Runs `shake meter --statusline ARGS` with `input` on stdin, from `cmd`.
fn statusline(mut cmd: Command, args: &[&str], input: &str) -> Output {
    let mut child = cmd
        .args(["meter", "--statusline"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run shake");
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

/// Claude Code's status-line object for a transcript, as 2.1.328 writes it (abridged).
fn claude_input(transcript: &Path, cwd: &Path) -> String {
    json!({
        "session_id": transcript.file_stem().unwrap().to_string_lossy(),
        "transcript_path": transcript,
        "cwd": cwd,
        "model": {"id": "claude-sonnet-4-5", "display_name": "Sonnet 4.5"},
        "workspace": {"current_dir": cwd, "project_dir": cwd, "added_dirs": []},
        "version": "2.1.328",
    })
    .to_string()
}

fn stdout(out: &Output) -> String {
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn the_line_is_the_meters_figure_on_every_fixture() {
    let mut figures = 0;
    for dir in claude_fixtures() {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let env = TestEnv::new();
        let path = install(&env, &dir);
        for profile in ["default", "claude-shake"] {
            let meter = env.ok(&["meter", path.to_str().unwrap(), "--profile", profile]);
            let input = claude_input(&path, &env.cwd());
            // Twice: measured, then recalled from the memo.
            for _ in 0..2 {
                let out = statusline(env.cmd(), &["--profile", profile], &input);
                let line = stdout(&out);
                let want = match meter.trim() {
                    "<1k shakeable" if meter_tokens(&env, &path, profile) == 0 => "✂ nothing to shake".to_string(),
                    m => format!("✂ {m}"),
                };
                assert_eq!(line, format!("{want}\n"), "{name} {profile}: {}", String::from_utf8_lossy(&out.stderr));
            }
            figures += usize::from(!meter.starts_with('<'));
        }
    }
    // Some fixtures have something to free: the figure is not always the empty line.
    assert!(figures >= 3, "only {figures} fixtures with a figure");
}

/// The meter's exact figure.
fn meter_tokens(env: &TestEnv, path: &Path, profile: &str) -> u64 {
    let out = env.ok(&["meter", "--json", path.to_str().unwrap(), "--profile", profile]);
    serde_json::from_str::<serde_json::Value>(&out).unwrap()["tokens"].as_u64().unwrap()
}

#[test]
fn colour_follows_no_color_and_the_flag_not_the_pipe() {
    let env = TestEnv::new();
    let fixture = claude_fixtures().into_iter().find(|d| d.ends_with("bash-read")).unwrap();
    let path = install(&env, &fixture);
    let input = claude_input(&path, &env.cwd());
    let mut coloured = env.cmd();
    coloured.env_remove("NO_COLOR");
    let line = stdout(&statusline(coloured, &[], &input));
    assert!(line.starts_with("\u{1b}[2m✂ \u{1b}[0m\u{1b}["), "{line:?}");
    let plain = stdout(&statusline(env.cmd(), &[], &input));
    assert!(!plain.contains('\u{1b}') && plain.starts_with("✂ "), "NO_COLOR: {plain:?}");
    let mut never = env.cmd();
    never.env_remove("NO_COLOR");
    assert_eq!(stdout(&statusline(never, &["--color", "never"], &input)), plain);
}

#[test]
fn bad_input_prints_a_short_line_says_why_and_exits_0() {
    let env = TestEnv::new();
    let not_claude = env.write("notes.jsonl", "hello\n");
    let cases = [
        ("not JSON", "{not json".to_string(), "✂ ?", "not Claude Code's status-line JSON"),
        ("no transcript_path", json!({"session_id": "x"}).to_string(), "✂ ?", "no \"transcript_path\""),
        ("a transcript_path that is no session", claude_input(&not_claude, &env.cwd()), "✂ ?", "notes.jsonl"),
        ("a session not written yet", claude_input(&env.cwd().join("new.jsonl"), &env.cwd()), "✂ nothing to shake", ""),
        ("empty input", String::new(), "✂ ?", "not Claude Code's status-line JSON"),
    ];
    for (what, input, line, why) in cases {
        let out = statusline(env.cmd(), &[], &input);
        assert_eq!(out.status.code(), Some(0), "{what}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{line}\n"), "{what}");
        let err = String::from_utf8_lossy(&out.stderr);
        match why {
            "" => assert!(err.is_empty(), "{what}: {err}"),
            why => assert!(err.starts_with("shake meter --statusline: ") && err.contains(why), "{what}: {err}"),
        }
    }
}

/// The meter's `--json` reading of `path` with these arguments, in `env`'s store.
fn reading(env: &TestEnv, path: &Path, extra: &[&str]) -> serde_json::Value {
    let out = env.ok(&[&["meter", "--json", path.to_str().unwrap()], extra].concat());
    serde_json::from_str(&out).unwrap()
}

/// `bash-read`, `parallel` (whose last turn holds results answering both rows of its message's
/// calls, the second's first) and `missing-parent` (its walk stands in for a parent) grown turn by turn from their middle (each turn: the
/// rows up to the next assistant row, what Claude Code has written when it runs the status line), for two tokenizers and
/// profiles: after every turn the meter's reading (the status line's memo) is what a fresh store
/// measures on the same bytes, and it was measured from the new rows alone: the old rows but
/// the last 8 KiB are blanked once the memo holds its first reading, so a whole measure would
/// read another transcript (checked: it gives another figure). A row branching off an older row
/// is measured whole: the reading is then the blanked file's.
/// A status line set up with `--tokenizer pi` on a Claude Code transcript says nothing on stderr,
/// turn after turn: the setting was chosen once, and Claude Code does not draw the status line's
/// stderr (so a warning each turn is work nobody reads). `shake meter` on the transcript says
/// what the figure is (pi's rule, not Claude Code's). Before: the warning on every turn.
#[test]
fn a_status_line_with_the_pi_estimate_does_not_warn_every_turn() {
    let fixture = claude_fixtures().into_iter().find(|d| d.ends_with("bash-read")).unwrap();
    let bytes = std::fs::read(fixture.join("transcript.jsonl")).unwrap();
    let ends: Vec<usize> = (bytes.iter().enumerate().filter(|(_, &b)| b == b'\n').map(|(i, _)| i + 1)).collect();
    let env = TestEnv::new();
    let path = env.dir.path().join("work/transcript.jsonl");
    let input = claude_input(&path, &env.cwd());
    // Turn after turn (the transcript grows), and once more unchanged (the memo).
    for &end in [&ends[ends.len() / 2..], &ends[ends.len() - 1..]].concat().iter() {
        std::fs::write(&path, &bytes[..end]).unwrap();
        let out = statusline(env.cmd(), &["--tokenizer", "pi"], &input);
        assert!(stdout(&out).starts_with("✂ "), "{out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "at byte {end}");
    }
    // (A fresh store: from the memo nothing is read again, and nothing said.)
    let out = TestEnv::new().cmd().args(["meter", path.to_str().unwrap(), "--tokenizer", "pi"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("--tokenizer pi counts pi's own estimate"), "{out:?}");
}

#[test]
fn each_turn_is_measured_from_its_new_rows_alone() {
    for name in ["bash-read", "parallel", "missing-parent"] {
        turns_are_measured_from_their_new_rows_alone(name);
    }
}

fn turns_are_measured_from_their_new_rows_alone(name: &str) {
    let fixture = claude_fixtures().into_iter().find(|d| d.ends_with(name)).unwrap();
    let bytes = std::fs::read(fixture.join("transcript.jsonl")).unwrap();
    let (mut ends, mut at) = (Vec::new(), 0);
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        at += line.len();
        if serde_json::from_slice::<serde_json::Value>(line).is_ok_and(|r| r["type"] == "assistant") {
            ends.push(at);
        }
    }
    let first = ends[ends.len() / 2];
    let blank_to = bytes[..first - 8192].iter().rposition(|&b| b == b'\n').unwrap();
    let mut blanked = bytes.clone();
    blanked[..blank_to].iter_mut().filter(|b| **b != b'\n').for_each(|b| *b = b' ');
    // `parallel`'s default plan frees nothing, blanked or not.
    let profile = if name == "parallel" { "aggressive" } else { "default" };
    for extra in [["--tokenizer", "pi", "--profile", "aggressive"], ["--tokenizer", "o200k", "--profile", profile]] {
        let env = TestEnv::new();
        let path = env.dir.path().join("work/transcript.jsonl");
        // A fresh store's reading of these bytes at `path` (the placeholder names its folder).
        let fresh = |content: &[u8]| {
            std::fs::write(&path, content).unwrap();
            reading(&TestEnv::new(), &path, &extra)
        };
        std::fs::write(&path, &bytes[..first]).unwrap();
        reading(&env, &path, &extra);
        let mut differs = 0;
        for &end in &ends[ends.len() / 2 + 1..] {
            let whole = fresh(&bytes[..end]);
            differs += usize::from(fresh(&blanked[..end])["tokens"] != whole["tokens"]);
            std::fs::write(&path, &blanked[..end]).unwrap();
            assert_eq!(reading(&env, &path, &extra), whole, "{name} {extra:?} at byte {end}");
        }
        assert!(differs > 0, "{name} {extra:?}: the blanked rows never changed the figure");
        // The status line says the same (from the same memo).
        let line = stdout(&statusline(env.cmd(), &extra, &claude_input(&path, &env.cwd())));
        let label = env.ok(&[&["meter", path.to_str().unwrap()], &extra[..]].concat());
        match label.trim() {
            "<1k shakeable" => assert!(line.starts_with("✂ "), "{line}"),
            label => assert_eq!(line, format!("✂ {label}\n")),
        }
        // A branch off an older row: measured whole (the blanked rows read as they are).
        let mut rows = bytes.split(|&b| b == b'\n').filter_map(|l| serde_json::from_slice::<serde_json::Value>(l).ok());
        let older = rows.find(|r| r["type"] == "user").unwrap();
        let mut branch = older.clone();
        branch["uuid"] = json!("0000aaaa-0000-4000-8000-00000000000b");
        branch["parentUuid"] = older["uuid"].clone();
        let mut grown = blanked.clone();
        grown.extend(format!("{branch}\n").as_bytes());
        let whole = fresh(&grown);
        std::fs::write(&path, &grown).unwrap();
        assert_eq!(reading(&env, &path, &extra), whole, "{name} {extra:?}: a branch");
    }
}

/// A tmux session, killed when dropped.
struct Tmux(String);

impl Tmux {
    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux").args(args).output().expect("tmux")
    }

    /// The pane's text (no escapes).
    fn pane(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-t", &self.0]).stdout).into_owned()
    }

    /// Waits (at most `limit`) until `found` holds for the pane's text; the last pane on time-out.
    fn wait_for(&self, limit: Duration, mut found: impl FnMut(&str) -> bool) -> std::result::Result<String, String> {
        let start = Instant::now();
        loop {
            let pane = self.pane();
            if found(&pane) {
                return Ok(pane);
            }
            if start.elapsed() > limit {
                return Err(pane);
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-session", "-t", &self.0]);
    }
}

/// The local API stand-in (`local-api.mjs PORT SCRIPT LOG`), killed when dropped.
struct Api(Child);

impl Drop for Api {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A port free now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The one transcript under a Claude Code config folder's `projects/`.
fn transcript(config: &Path) -> Option<PathBuf> {
    let projects = std::fs::read_dir(config.join("projects")).ok()?;
    let dir = projects.filter_map(|e| e.ok()).map(|e| e.path()).find(|p| p.is_dir())?;
    let file = std::fs::read_dir(dir).ok()?.filter_map(|e| e.ok()).map(|e| e.path());
    file.into_iter().find(|p| p.extension().is_some_and(|x| x == "jsonl"))
}

#[test]
fn the_real_claude_code_shows_the_figure_in_its_status_bar() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("skipped: tmux is not installed (the status bar needs an interactive Claude Code)");
        return;
    }
    let oracle = claude_oracle();
    let root = tempfile::tempdir().unwrap();
    let (home, config, cwd, store) =
        (root.path().join("home"), root.path().join("config"), root.path().join("project"), root.path().join("store"));
    for d in [&home, &config, &cwd] {
        std::fs::create_dir_all(d).unwrap();
    }
    let cwd = std::fs::canonicalize(&cwd).unwrap();
    let shake = env!("CARGO_BIN_EXE_shake");
    let errors = root.path().join("statusline.err");
    // The lines docs/claude-code.md gives, with a private store (a refresh too, so a figure
    // taken before Claude Code flushed its last row is taken again).
    let settings = json!({"statusLine": {
        "type": "command",
        "command": format!("SHAKE_DIR={} {shake} meter --statusline 2>>{}", store.display(), errors.display()),
        "refreshInterval": 1,
    }});
    std::fs::write(config.join("settings.json"), settings.to_string()).unwrap();
    // Past the first-run screens: onboarding done, the API key approved, the folder trusted.
    let state = json!({
        "hasCompletedOnboarding": true,
        "theme": "dark",
        "customApiKeyResponses": {"approved": ["sk-local"], "rejected": []},
        "projects": {cwd.to_string_lossy(): {"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}},
    });
    std::fs::write(config.join(".claude.json"), state.to_string()).unwrap();
    // Two turns: three Bash outputs of ~24 KB (under the 30,000 characters past which Claude
    // Code persists an output itself), then one of ~9 KB, so the first turn's are past the tail.
    let bash = |from: u32, to: u32| json!({"tool": "Bash", "input": {"command": format!("seq {from} {to}"), "description": "numbers"}});
    let steps = [
        bash(1, 5000),
        bash(2, 5000),
        bash(3, 5000),
        json!({"text": "all three done"}),
        bash(1, 2000),
        json!({"text": "the small one done"}),
    ];
    let script = root.path().join("script.jsonl");
    std::fs::write(&script, steps.iter().map(|s| format!("{s}\n")).collect::<String>()).unwrap();
    let port = free_port();
    let log = root.path().join("requests.jsonl");
    let api = Command::new("node")
        .arg(oracle.join("local-api.mjs"))
        .arg(port.to_string())
        .arg(&script)
        .arg(&log)
        .stdout(Stdio::null())
        .spawn()
        .expect("node");
    let _api = Api(api);
    let claude = oracle.join("node_modules/.bin/claude");
    let command = format!(
        "env -i PATH={path} TERM=xterm-256color HOME={home} CLAUDE_CONFIG_DIR={config} \
         ANTHROPIC_BASE_URL=http://127.0.0.1:{port} ANTHROPIC_API_KEY=sk-local \
         CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 TZ=UTC \
         {claude} --model claude-sonnet-4-5 --allowedTools Bash Read",
        path = std::env::var("PATH").unwrap_or_default(),
        home = home.display(),
        config = config.display(),
        claude = claude.display(),
    );
    let tmux = Tmux(format!("shake-statusline-{}", std::process::id()));
    let cwd_arg = cwd.to_string_lossy().into_owned();
    let started = tmux.run(&["new-session", "-d", "-s", &tmux.0, "-x", "150", "-y", "50", "-c", &cwd_arg, &command]);
    assert!(started.status.success(), "tmux: {}", String::from_utf8_lossy(&started.stderr));
    // Ready: the prompt, and the status line run once (no transcript yet: nothing to shake).
    let ready = tmux.wait_for(Duration::from_secs(60), |p| p.contains("✂ nothing to shake"));
    let ready = ready.unwrap_or_else(|p| panic!("Claude Code did not show the status line:\n{p}"));
    assert!(ready.contains("Claude Code v2.1.328"), "{ready}");
    let mut done = String::new();
    for (prompt, answer) in [("count for me", "all three done"), ("and a small one", "the small one done")] {
        tmux.run(&["send-keys", "-t", &tmux.0, prompt]);
        std::thread::sleep(Duration::from_millis(300));
        tmux.run(&["send-keys", "-t", &tmux.0, "Enter"]);
        let finished = tmux.wait_for(Duration::from_secs(90), |p| p.contains(answer));
        done = finished.unwrap_or_else(|p| panic!("the turn {prompt:?} did not finish:\n{p}"));
    }
    let path = transcript(&config).unwrap_or_else(|| panic!("no transcript written:\n{done}"));
    // The meter on the same transcript, as a person runs it, and the status bar showing it.
    let meter = |path: &Path| {
        let out = Command::new(shake).args(["meter", "--color", "never"]).arg(path).env("SHAKE_DIR", &store).output();
        format!("✂ {}", String::from_utf8(out.unwrap().stdout).unwrap().trim())
    };
    let mut want = String::new();
    let shown = tmux.wait_for(Duration::from_secs(30), |pane| {
        want = meter(&path);
        pane.lines().any(|l| l.trim() == want)
    });
    let pane = shown.unwrap_or_else(|p| {
        let errors = std::fs::read_to_string(&errors).unwrap_or_default();
        panic!("the status bar does not show {want:?}:\n{p}\nstatus line's stderr:\n{errors}")
    });
    // Priced too (issue 31): the turns just made keep the cache warm, so the verdict is a payback.
    assert!(want.contains("k shakeable · ") && !want.contains('<'), "three outputs of ~24 KB free thousands: {want}");
    assert!(want.contains("pays back in") || want.contains("not worth it yet"), "a warm cache: {want}");
    // The line sits below the prompt box, where Claude Code draws its status line.
    let prompt = pane.lines().position(|l| l.starts_with('❯')).expect("the prompt");
    let line = pane.lines().position(|l| l.trim() == want).unwrap();
    assert!(line > prompt, "{pane}");
}
