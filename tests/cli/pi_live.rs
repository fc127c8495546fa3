//! shake live inside pi: pi 1.6.0's own CLI (Node 22 and pi from `tests/pi-e2e/package-lock.json`)
//! runs in print mode with the extension installed by `shake pi-extension --install` and a faux
//! model (`tests/pi-e2e/faux.ts`) that records every request, so each test sees exactly what the
//! model was sent after `/shake` and `/shake undo`, then checks the file with pi's own projection.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::env::{npm_ci, Oracle, TestEnv};

/// pi's CLI and Node 22, installed into `tests/pi-e2e/node_modules` by `npm ci` on first use.
struct PiCli;

impl PiCli {
    fn dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pi-e2e")
    }

    fn node() -> PathBuf {
        Self::dir().join("node_modules/node/bin/node")
    }

    fn cli() -> PathBuf {
        Self::dir().join("node_modules/@earendil-works/pi-coding-agent/dist/cli.js")
    }

    /// Installs the pinned packages unless they are there (idempotent; `.ci/run` does it too).
    fn ensure() {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| npm_ci(&Self::dir(), &[&Self::node(), &Self::cli()]));
    }
}

/// What one pi run left behind.
struct PiRun {
    stderr: String,
    /// The messages of every provider request, in order.
    requests: Vec<Vec<Value>>,
    /// The session file pi wrote.
    session: PathBuf,
}

impl PiRun {
    /// The request whose last message is the user prompt `text`.
    fn request_for(&self, text: &str) -> &[Value] {
        self.requests
            .iter()
            .find(|msgs| msgs.last().is_some_and(|m| m["role"] == "user" && user_text(m) == text))
            .unwrap_or_else(|| panic!("no request ends with the prompt {text:?}; stderr:\n{}", self.stderr))
    }

    /// The session file's entries.
    fn entries(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.session).unwrap();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    /// The id of the message entry holding the user prompt `text`.
    fn entry_of(&self, text: &str) -> String {
        let entries = self.entries();
        let entry = entries
            .iter()
            .find(|e| e["type"] == "message" && e["message"]["role"] == "user" && user_text(&e["message"]) == text)
            .unwrap_or_else(|| panic!("no entry for the prompt {text:?}"));
        entry["id"].as_str().unwrap().to_string()
    }

    /// Asserts that pi, loading the file now, projects for the prompt `text` exactly the messages
    /// the model was sent with it.
    fn assert_file_projects_request(&self, text: &str) {
        let leaf = self.entry_of(text);
        let pi = Oracle::run("project.mjs", &[self.session.to_str().unwrap(), &leaf, "--llm"]);
        assert_eq!(pi["llmMessages"].as_array().unwrap(), self.request_for(text), "pi's projection at {text:?}");
    }
}

/// The text of a user message (string or text blocks).
fn user_text(m: &Value) -> String {
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect(),
        _ => String::new(),
    }
}

/// The texts of the tool results in a request, in order.
fn tool_results(request: &[Value]) -> Vec<String> {
    request.iter().filter(|m| m["role"] == "toolResult").map(user_text).collect()
}

/// A sandbox with the extension installed the way a user would, and a big file to read.
fn sandbox() -> TestEnv {
    let env = TestEnv::new();
    env.ok(&["pi-extension", "--install"]);
    let big: String = (1..=800).map(|i| format!("line of big file number {i}\n")).collect();
    std::fs::write(env.cwd().join("big.txt"), big).unwrap();
    env
}

/// A user message of plain prose (nothing to fold) long enough to push older content out of the
/// default profile's 4,000-token tail.
fn filler() -> String {
    "This is a long plain message that shake never folds. ".repeat(400)
}

/// Node 22 running `script` (pi's CLI or a driver) in the sandbox, with the faux model loaded and
/// this build of shake as the extension's CLI.
fn node_in(env: &TestEnv, script: &Path) -> Command {
    PiCli::ensure();
    let mut cmd = Command::new(PiCli::node());
    cmd.arg(script)
        .args(["-e", PiCli::dir().join("faux.ts").to_str().unwrap(), "--model", "faux/faux-1"])
        .current_dir(env.cwd())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.dir.path().join("home"))
        .env("SHAKE_DIR", env.store())
        .env("SHAKE_BIN", env!("CARGO_BIN_EXE_shake"));
    cmd
}

/// Runs `pi -p PROMPTS…` in the sandbox with the faux model; `vars` adds environment variables.
fn pi(env: &TestEnv, vars: &[(&str, &str)], prompts: &[&str]) -> PiRun {
    let record = env.dir.path().join("requests.jsonl");
    let _ = std::fs::remove_file(&record);
    let out: Output = node_in(env, &PiCli::cli())
        .arg("-p")
        .args(prompts)
        .env("SHAKE_E2E_RECORD", &record)
        .envs(vars.iter().copied())
        .output()
        .expect("run pi");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "pi failed ({}):\n{stderr}", out.status);
    let requests = std::fs::read_to_string(&record)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let r: Value = serde_json::from_str(l).unwrap();
            r["messages"].as_array().unwrap().clone()
        })
        .collect();
    let sessions = env.agent_dir().join("sessions");
    let session = walk_jsonl(&sessions).pop().unwrap_or_else(|| panic!("pi wrote no session; stderr:\n{stderr}"));
    PiRun { stderr, requests, session }
}

fn walk_jsonl(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk_jsonl(&path));
        } else if path.extension().is_some_and(|x| x == "jsonl") {
            files.push(path);
        }
    }
    files
}

#[test]
fn pi_extension_installs_the_copy_the_binary_carries() {
    let env = TestEnv::new();
    let path = env.ok(&["pi-extension", "--install", "--print-path"]);
    let path = PathBuf::from(path.trim_end());
    assert_eq!(path, env.agent_dir().join("extensions/shake.ts"));
    let source =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("integrations/pi/shake.ts")).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), source);
    assert!(env.ok(&["pi-extension", "--install"]).starts_with("Already installed"));
    std::fs::write(&path, "old").unwrap();
    assert!(env.ok(&["pi-extension", "--install"]).starts_with("Updated"));
    assert_eq!(env.ok(&["pi-extension"]), source);
}

/// A symlink at the extension's place (to a checkout) is refused with the porcelain's own
/// error, said at the command boundary: exit 1, the path, the hint (issue 34.4 moved it).
#[test]
fn pi_extension_leaves_a_symlink_alone() {
    let env = TestEnv::new();
    let path = env.agent_dir().join("extensions/shake.ts");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let checkout = env.agent_dir().join("checkout.ts");
    std::fs::write(&checkout, "mine").unwrap();
    std::os::unix::fs::symlink(&checkout, &path).unwrap();
    let err = env.fails(&["pi-extension", "--install"], 1);
    let want = format!(
        "shake: error: {} is a symlink; leaving it alone\nhint: remove it first to install the copy this shake carries\n",
        path.display()
    );
    assert_eq!(err, want);
    assert_eq!(std::fs::read_to_string(&checkout).unwrap(), "mine");
}

#[test]
fn extension_parses_completes_and_labels_like_pi_will_load_it() {
    PiCli::ensure();
    let out = Command::new(PiCli::node()).arg(PiCli::dir().join("unit.mjs")).output().expect("run unit.mjs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn shake_in_pi_says_why_it_cannot_run() {
    let env = sandbox();
    let run = pi(&env, &[], &["/shake", "hello", "/shake bogus"]);
    assert!(run.stderr.contains("shake: this session is not on disk yet"), "{}", run.stderr);
    assert!(run.stderr.contains("shake: unknown argument \"bogus\""), "{}", run.stderr);

    let env = sandbox();
    let run = pi(&env, &[("SHAKE_BIN", "/nonexistent/shake")], &["hello", "/shake"]);
    assert!(run.stderr.contains("`/nonexistent/shake` binary was not found"), "{}", run.stderr);
    assert_eq!(run.requests.len(), 1, "a failed /shake sends nothing to the model");
}

/// The scenario every route runs: read a big file, bury it under a long message, fold, ask,
/// undo, ask.
fn fold_undo_scenario(vars: &[(&str, &str)]) -> (TestEnv, PiRun) {
    let env = sandbox();
    let filler = filler();
    let run = pi(
        &env,
        vars,
        &["READ big.txt", &filler, "/shake", "after fold", "/shake status", "/shake undo", "after undo"],
    );
    let before = run.request_for(&filler);
    let folded = run.request_for("after fold");
    let restored = run.request_for("after undo");
    let original = &tool_results(before)[0];
    assert!(original.starts_with("line of big file number 1\n"), "{original}");

    // The very next request after /shake carries the placeholder, and nothing else changed.
    let placeholder = &tool_results(folded)[0];
    assert!(placeholder.contains("omitted") && placeholder.len() < 100, "{placeholder}");
    let unfolded: Vec<&Value> = folded.iter().filter(|m| m["role"] != "toolResult").collect();
    assert_eq!(
        unfolded[..unfolded.len() - 2],
        before.iter().filter(|m| m["role"] != "toolResult").collect::<Vec<_>>()[..]
    );

    // After /shake undo the model sees the original again, byte for byte.
    assert_eq!(&tool_results(restored)[0], original);
    assert_eq!(restored[..before.len()], *before);

    // pi loading the file projects exactly what each request carried.
    for text in [filler.as_str(), "after fold", "after undo"] {
        run.assert_file_projects_request(text);
    }
    (env, run)
}

/// `shake status` and `shake log` on the file pi wrote agree with what happened: one fold of the
/// read result, then one undo, each with the figure the fold reported in pi.
fn assert_status_and_log(env: &TestEnv, run: &PiRun) {
    let file = run.session.to_str().unwrap();
    let folded_leaf = format!("{file}:{}", run.entry_of("after fold"));
    let status_folded: Value = serde_json::from_str(&env.ok(&["status", &folded_leaf, "--json"])).unwrap();
    let status_now: Value = serde_json::from_str(&env.ok(&["status", file, "--json"])).unwrap();
    let log: Value = serde_json::from_str(&env.ok(&["log", file, "--json"])).unwrap();
    let ops: Vec<(&str, u64)> =
        log.as_array().unwrap().iter().map(|e| (e["op"].as_str().unwrap(), e["tokens"].as_u64().unwrap())).collect();
    let tokens = status_folded["tokensFreed"].as_u64().unwrap();
    assert_eq!(ops, [("undo", tokens), ("fold", tokens)], "{log}");
    assert_eq!((status_folded["entries"].as_u64(), status_folded["byKind"]["toolResult"].as_u64()), (Some(1), Some(1)));
    assert_eq!(
        (status_now["entries"].as_u64(), status_now["tokensFreed"].as_u64()),
        (Some(0), Some(0)),
        "{status_now}"
    );
    assert!(status_now["halfWritten"].as_array().unwrap().is_empty(), "{status_now}");
    let said = format!("shake: Shook 1 tool result (~{} tokens).", crate::render_thousands(tokens));
    assert!(run.stderr.contains(&said), "{said} in\n{}", run.stderr);
    // `/shake status`, run between the fold and the undo, showed `shake status` at pi's leaf then.
    let asked = run.entry_of("after fold");
    let entries = run.entries();
    let reply = entries.iter().find(|e| e["parentId"] == asked.as_str()).unwrap()["id"].as_str().unwrap();
    let shown = format!("shake: 1 entry folded at {reply}: ~{} tokens freed.", crate::render_thousands(tokens));
    assert!(run.stderr.contains(&shown), "{shown} in\n{}", run.stderr);
}

/// The batch as written, with the ids that differ between writers blanked: the log entry's data
/// and each edit's target and replacement, in file order.
fn batch_of(entries: &[Value]) -> Vec<Value> {
    let mut batch: Vec<Value> = entries
        .iter()
        .filter(|e| e["type"] == "context_edit" || e["customType"] == "shake")
        .map(|e| match e["type"].as_str() {
            Some("context_edit") => serde_json::json!({"targetId": e["targetId"], "replacement": e["replacement"]}),
            _ => {
                let mut data = e["data"].clone();
                for t in data["targets"].as_array_mut().unwrap() {
                    t["edit"] = Value::Null;
                }
                data
            }
        })
        .collect();
    // shake writes the log entry first, pi after the edits; the order is not part of the format.
    batch.sort_by_key(|v| v.to_string());
    batch
}

/// Asserts that each batch pi wrote (the edits, then the log entry) is what `shake fold` /
/// `shake undo` write themselves on the file as it was just before, but for ids.
fn assert_batches_equal_the_clis(env: &TestEnv, run: &PiRun) {
    let entries = run.entries();
    let text = std::fs::read_to_string(&run.session).unwrap();
    let logs: Vec<usize> =
        entries.iter().enumerate().filter(|(_, e)| e["customType"] == "shake").map(|(i, _)| i).collect();
    assert_eq!(logs.len(), 2, "a fold and an undo");
    for (log, verb) in logs.into_iter().zip(["fold", "undo"]) {
        let start = (0..log).rev().take_while(|&i| entries[i]["type"] == "context_edit").last().unwrap();
        let head: String = text.lines().take(start).map(|l| format!("{l}\n")).collect();
        let copy = env.write(&format!("before-{verb}.jsonl"), head);
        env.ok(&[verb, copy.to_str().unwrap()]);
        let by_shake: Vec<Value> =
            std::fs::read_to_string(&copy).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(batch_of(&entries[start..=log]), batch_of(&by_shake[start..]), "{verb}");
    }
}

#[test]
fn fold_and_undo_through_pis_writer() {
    let (env, run) = fold_undo_scenario(&[]);
    assert_status_and_log(&env, &run);
    assert_batches_equal_the_clis(&env, &run);
}

#[test]
fn fold_and_undo_by_the_cli_with_a_session_reload() {
    let (env, run) = fold_undo_scenario(&[("SHAKE_PI_WRITER", "cli")]);
    assert!(run.stderr.contains("(session reloaded)"), "{}", run.stderr);
    assert_status_and_log(&env, &run);
}

#[test]
fn fold_while_busy_applies_before_the_next_request_of_the_run() {
    let env = sandbox();
    let filler = filler();
    let until = "applies at the end of this turn";
    let run = pi(&env, &[("SHAKE_E2E_STEER_UNTIL", until)], &["READ big.txt", &filler, "STEER /shake"]);
    assert!(run.stderr.contains(until), "{}", run.stderr);
    // The run: [.., "STEER /shake"] -> steer tool call; [.., steer result] is the next request.
    let last = run.requests.last().unwrap();
    assert_eq!(last.last().unwrap()["role"], "toolResult");
    let results = tool_results(last);
    assert!(results[0].contains("omitted"), "{results:?}");
    assert!(results[1].starts_with("steered: shake: pi is busy"), "{results:?}");
}

/// The figure of a fold message, `Shook … (~N tokens).`, and what it shook (`1 tool result`).
fn shook(line: &str) -> (String, u64) {
    let rest = line.split_once("Shook ").unwrap_or_else(|| panic!("no fold in {line:?}")).1;
    let (what, rest) = rest.split_once(" (~").unwrap();
    let tokens = rest.split_once(" tokens)").unwrap().0.replace(',', "");
    (what.to_string(), tokens.parse().unwrap())
}

/// Issue 12's race: a `/shake` queued while a run is busy, pi's threshold compaction at the end of
/// that run (`_handlePostAgentRun`, before `agent_settled`), then the queued write. The faux model's
/// `session_before_compact` hook sends the `/shake` and holds the compaction until the extension has
/// planned and queued it, so the plan was made on the file before the compaction, deterministically.
/// The plan then folded two reads; the compaction summarises the first away, and what is written
/// must fold the second only, with the toast, `shake status` and `shake log` all saying so.
#[test]
fn fold_queued_before_a_threshold_compaction_edits_only_what_survived_it() {
    let env = sandbox();
    let medium: String = (1..=400).map(|i| format!("line of medium file number {i}\n")).collect();
    std::fs::write(env.cwd().join("medium.txt"), medium).unwrap();
    // pi counts the faux model's context as the request's characters / 4: ~15k tokens after the
    // second read, ~20k after the last long message; compact past 18k, keeping ~9.5k (the second
    // read and what follows it; the first read is summarised away).
    std::fs::write(
        env.agent_dir().join("settings.json"),
        r#"{"compaction":{"reserveTokens":182000,"keepRecentTokens":9500}}"#,
    )
    .unwrap();
    let first = filler();
    let last = "Another long plain message on the main line. ".repeat(450);
    let until = "applies at the end of this turn";
    let run = pi(
        &env,
        &[("SHAKE_E2E_COMPACT_SEND", "/shake"), ("SHAKE_E2E_STEER_UNTIL", until)],
        &["READ big.txt", &first, "READ medium.txt", &last, "after"],
    );
    let said: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("shake: ")).collect();
    assert_eq!(said.len(), 2, "queued, then written: {said:?}");
    assert!(said[0].starts_with("shake: pi is busy: Shook") && said[0].contains(until), "{said:?}");
    assert!(said[1].ends_with("(applied when pi settled)"), "{said:?}");
    // The race happened: the queued plan folded both reads, made before the compaction.
    assert_eq!(shook(said[0]).0, "2 tool results", "{said:?}");

    let entries = run.entries();
    let compaction = entries.iter().position(|e| e["type"] == "compaction").expect("pi compacted");
    let asked_last = entries.iter().position(|e| user_text(&e["message"]) == last).unwrap();
    let asked_after = entries.iter().position(|e| user_text(&e["message"]) == "after").unwrap();
    assert!(asked_last < compaction, "the compaction ran at the end of the last long message's run");
    let edits: Vec<(usize, &Value)> = entries.iter().enumerate().filter(|(_, e)| e["type"] == "context_edit").collect();
    assert!(!edits.is_empty(), "{said:?}");
    assert!(
        edits.iter().all(|&(i, _)| compaction < i && i < asked_after),
        "written after the compaction, before the next prompt"
    );

    // No edit targets an entry the compaction summarised away: each target is in pi's own
    // projection at the fold's log entry.
    let file = run.session.to_str().unwrap();
    let log_entry = entries.iter().rfind(|e| e["customType"] == "shake").unwrap()["id"].as_str().unwrap();
    let projected = Oracle::run("project.mjs", &[file, log_entry, "--compact"]);
    let visible: Vec<&str> =
        projected["entries"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap()).collect();
    for (_, edit) in &edits {
        let target = edit["targetId"].as_str().unwrap();
        assert!(visible.contains(&target), "edit {} targets {target}, summarised away", edit["id"]);
    }

    // The toast, `shake log` and `shake status` claim the same tokens and the same entries.
    let (what, claimed) = shook(said[1]);
    assert_eq!(what, "1 tool result", "{said:?}");
    let status: Value = serde_json::from_str(&env.ok(&["status", file, "--json"])).unwrap();
    let log: Value = serde_json::from_str(&env.ok(&["log", file, "--json"])).unwrap();
    let ops: Vec<(&str, u64)> =
        log.as_array().unwrap().iter().map(|e| (e["op"].as_str().unwrap(), e["tokens"].as_u64().unwrap())).collect();
    assert_eq!(ops, [("fold", claimed)], "{log}");
    assert_eq!(status["tokensFreed"].as_u64(), Some(claimed), "{status}");
    assert_eq!((status["entries"].as_u64(), status["byKind"]["toolResult"].as_u64()), (Some(1), Some(1)), "{status}");

    // The next request carries the fold: the second read folded, the first summarised.
    let after = run.request_for("after");
    let results = tool_results(after);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].contains("omitted") && results[0].len() < 100, "{results:?}");
    run.assert_file_projects_request("after");
}

/// A `SHAKE_BIN` wrapper script in the sandbox: it appends its arguments to `shake-wrapper.log`,
/// then runs `body` (`$SHAKE_REAL` is the real binary).
fn wrapper(env: &TestEnv, body: &str) -> PathBuf {
    let path = env.write("shake-wrapper", format!("#!/bin/sh\necho \"$*\" >> \"$0.log\"\n{body}"));
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path
}

/// An idle `/shake` whose leaf moves while the CLI plans is planned again at the new leaf, not
/// written from the old one. `SHAKE_BIN` is a wrapper that logs each start and holds the first
/// `fold --plan`: it creates `shake-wrapper.held`, on which the faux extension's
/// `/e2e-append-when` appends an entry to the session, and waits until that entry is in the file.
#[test]
fn fold_planned_again_when_pis_leaf_moves_under_the_plan() {
    let env = sandbox();
    let wrapper = wrapper(
        &env,
        r#"if [ "$1 $2" = "fold --plan" ] && [ ! -e "$0.held" ]; then
  : > "$0.held"
  for rev; do :; done
  i=0
  while ! grep -q '"customType":"e2e"' "${rev%:*}" && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done
fi
exec "$SHAKE_REAL" "$@"
"#,
    );
    let vars = [("SHAKE_BIN", wrapper.to_str().unwrap()), ("SHAKE_REAL", env!("CARGO_BIN_EXE_shake"))];
    let filler = filler();
    let held = format!("/e2e-append-when {}.held", wrapper.display());
    let run = pi(&env, &vars, &["READ big.txt", &filler, &held, "/shake", "after"]);
    let log = std::fs::read_to_string(env.dir.path().join("shake-wrapper.log")).unwrap();
    let plans = log.lines().filter(|l| l.starts_with("fold --plan")).count();
    assert_eq!(plans, 2, "planned, the leaf moved, planned again: {log}");
    let entries = run.entries();
    let moved = entries.iter().find(|e| e["customType"] == "e2e").expect("the leaf moved")["id"].as_str().unwrap();
    let edit = entries.iter().find(|e| e["type"] == "context_edit").unwrap();
    assert_eq!(edit["parentId"], moved, "written at the leaf it was planned at");
    let said: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("shake: ")).collect();
    assert_eq!(said.len(), 1, "{said:?}");
    let (what, claimed) = shook(said[0]);
    assert_eq!(what, "1 tool result");
    let file = run.session.to_str().unwrap();
    let status: Value = serde_json::from_str(&env.ok(&["status", file, "--json"])).unwrap();
    assert_eq!(status["tokensFreed"].as_u64(), Some(claimed), "{status}");
    assert!(tool_results(run.request_for("after"))[0].contains("omitted"));
    run.assert_file_projects_request("after");
}

/// Runs pi in RPC mode through `tests/pi-e2e/rpc.mjs`; returns the extension UI records with one
/// `settled`/`handled` marker per prompt.
fn pi_rpc(env: &TestEnv, prompts: &[&str]) -> Vec<Value> {
    pi_rpc_with(env, &[], prompts)
}

/// [`pi_rpc`] with more environment variables.
fn pi_rpc_with(env: &TestEnv, vars: &[(&str, &str)], prompts: &[&str]) -> Vec<Value> {
    let out = node_in(env, &PiCli::dir().join("rpc.mjs"))
        .arg("--")
        .args(prompts)
        .envs(vars.iter().copied())
        .output()
        .expect("run rpc.mjs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "rpc.mjs failed ({}):\n{stderr}", out.status);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("rpc.mjs output: {e}\n{stderr}"))
}

/// The footer text `shake meter` gives for `tokens`, as the extension draws it (without colour).
fn footer_for(tokens: u64) -> String {
    match tokens {
        0..1000 => "✂ <1k shakeable".to_string(),
        n => format!("✂ ~{}k shakeable", crate::render_thousands((n + 500) / 1000)),
    }
}

#[test]
fn footer_meter_follows_settles_and_commands_not_tool_turns() {
    let env = sandbox();
    // Let pi compact a small session: keep only the last 2,000 tokens.
    std::fs::write(env.agent_dir().join("settings.json"), r#"{"compaction":{"keepRecentTokens":2000}}"#).unwrap();
    let filler = filler();
    let compact = r#"{"type":"compact"}"#;
    let records =
        pi_rpc(&env, &["READ big.txt", &filler, "/shake", "/shake undo", compact, "/e2e-tree This is a long"]);
    // Per prompt: the footer texts set before its marker, and the messages shown.
    let mut steps: Vec<(Vec<String>, Vec<String>)> = vec![Default::default()];
    for r in &records {
        match (r["type"].as_str(), r["method"].as_str()) {
            (Some("extension_ui_request"), Some("setStatus")) => {
                assert_eq!(r["statusKey"], "shake");
                let text = r["statusText"].as_str().unwrap();
                // Strip the theme's colour codes.
                let plain: String = text.split('\u{1b}').map(|s| s.split_once('m').map_or(s, |(_, t)| t)).collect();
                steps.last_mut().unwrap().0.push(plain);
            }
            (Some("extension_ui_request"), Some("notify")) => {
                steps.last_mut().unwrap().1.push(r["message"].as_str().unwrap().to_string());
            }
            _ => steps.push(Default::default()),
        }
    }
    steps.pop();
    assert_eq!(steps.len(), 6, "{records:#?}");
    // One refresh per settled run, though the first run took two model turns, one per command,
    // one per compaction and one per tree move.
    for (footers, _) in &steps {
        assert_eq!(footers.len(), 1, "{steps:?}");
    }
    let footer = |step: usize| steps[step].0[0].as_str();
    let file = walk_jsonl(&env.agent_dir().join("sessions")).pop().unwrap();
    let entries: Vec<Value> =
        std::fs::read_to_string(&file).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let meter_at = |id: &str| -> u64 {
        let rev = format!("{}:{id}", file.display());
        let m: Value = serde_json::from_str(&env.ok(&["meter", &rev, "--json"])).unwrap();
        m["tokens"].as_u64().unwrap()
    };
    // The footer is the meter's own label there, its verdict included (issue 31).
    let label_at = |id: &str| format!("✂ {}", env.ok(&["meter", &format!("{}:{id}", file.display())]).trim());
    let undo_log = entries.iter().rfind(|e| e["customType"] == "shake").unwrap()["id"].as_str().unwrap();
    let compaction = entries.iter().rfind(|e| e["type"] == "compaction").expect("pi compacted")["id"].as_str().unwrap();
    assert_ne!(footer(2), footer(1), "the fold lowers the meter");
    // The fold reports the very figure the footer showed (same leaf, same tokenizer).
    let folded_at = entries.iter().find(|e| e["type"] == "context_edit").unwrap()["parentId"].as_str().unwrap();
    let shown = meter_at(folded_at);
    assert_eq!(label_at(folded_at), footer(1));
    assert!(footer(1).starts_with(&footer_for(shown)), "{}", footer(1));
    let said = format!("shake: Shook 1 tool result (~{} tokens).", crate::render_thousands(shown));
    assert!(steps[2].1[0].starts_with(&said), "{said} / {steps:?}");
    assert_eq!(footer(3), footer(1), "undo gives back what the fold took");
    assert_eq!(footer(3), label_at(undo_log), "after undo: `shake meter` there");
    assert_eq!(footer(4), label_at(compaction), "after compaction: `shake meter` there");
    assert_ne!(footer(4), footer(3), "the compaction summarised the file away");
    // Back before the long message (pi's leaf, in memory only), the file is inside the tail again.
    assert_eq!(footer(5), "✂ <1k shakeable");
}

#[test]
fn shake_plans_at_pis_leaf_after_a_tree_move() {
    let env = sandbox();
    let side = filler();
    let main = "Another long plain message on the main line. ".repeat(450);
    // The side branch buries the file; /tree goes back to before it, in pi's memory only: the
    // file's last line is still the side branch's reply.
    let run = pi(
        &env,
        &[],
        &[
            "READ big.txt",
            "tiny",
            &side,
            "/e2e-tree This is a long",
            "/shake",
            "back on the main line",
            &main,
            "/shake",
            "folded on the main line",
        ],
    );
    let back = run.request_for("back on the main line");
    assert!(tool_results(back)[0].starts_with("line of big file number 1\n"), "nothing to fold at pi's leaf");
    assert!(!back.iter().any(|m| user_text(m) == side), "the side branch is not in context");
    let folded = run.request_for("folded on the main line");
    assert!(tool_results(folded)[0].contains("omitted"), "{:?}", tool_results(folded));
    assert!(!folded.iter().any(|m| user_text(m) == side));
    run.assert_file_projects_request("folded on the main line");
    let logs = run.entries().iter().filter(|e| e["type"] == "custom" && e["customType"] == "shake").count();
    assert_eq!(logs, 1, "one fold, on the main line");
}

/// The footer texts each prompt's run set, without colour, from [`pi_rpc`]'s records.
fn footers(records: &[Value]) -> Vec<Vec<String>> {
    let mut steps: Vec<Vec<String>> = vec![Vec::new()];
    for r in records {
        match (r["type"].as_str(), r["method"].as_str()) {
            (Some("extension_ui_request"), Some("setStatus")) => {
                let text = r["statusText"].as_str().unwrap_or_default();
                let plain: String = text.split('\u{1b}').map(|s| s.split_once('m').map_or(s, |(_, t)| t)).collect();
                steps.last_mut().unwrap().push(plain);
            }
            (Some("extension_ui_request"), _) => {}
            _ => steps.push(Vec::new()),
        }
    }
    steps.pop();
    steps
}

/// The footer asks one `shake meter --serve` child per session; when a reading hangs, the child
/// is dropped for a single `shake meter` run, and when that hangs too the footer keeps its last
/// figure marked stale. `SHAKE_BIN` is a wrapper that logs each start and, from the third
/// reading on, hangs.
#[test]
fn footer_reads_one_meter_child_and_marks_a_stale_figure() {
    let env = sandbox();
    let wrapper = wrapper(
        &env,
        r#"if [ "$1 $2" = "meter --serve" ]; then
  n=0
  while IFS= read -r line; do
    n=$((n+1))
    if [ $n -gt 2 ]; then sleep 20; fi
    printf '%s\n' "$line" | "$SHAKE_REAL" meter --serve
  done
  exit 0
fi
if [ "$1" = meter ]; then exec sleep 20; fi
exec "$SHAKE_REAL" "$@"
"#,
    );
    let vars = [
        ("SHAKE_BIN", wrapper.to_str().unwrap()),
        ("SHAKE_REAL", env!("CARGO_BIN_EXE_shake")),
        // Long enough for a reading on a loaded machine (a new process per line here), short
        // enough against the wrapper's hang.
        ("SHAKE_METER_TIMEOUT_MS", "8000"),
    ];
    let records = pi_rpc_with(&env, &vars, &["hello", "READ big.txt", "again"]);
    let steps = footers(&records);
    assert_eq!(steps.len(), 3, "{records:#?}");
    let file = walk_jsonl(&env.agent_dir().join("sessions")).pop().unwrap();
    let read_at = |text: &str| {
        let entries: Vec<Value> =
            std::fs::read_to_string(&file).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let asked = entries.iter().position(|e| user_text(&e["message"]) == text).unwrap();
        // The reply that settled the run: the last message before the next prompt.
        let end = entries[asked + 1..]
            .iter()
            .position(|e| e["message"]["role"] == "user")
            .map_or(entries.len(), |i| asked + 1 + i);
        let rev = format!("{}:{}", file.display(), entries[end - 1]["id"].as_str().unwrap());
        // The meter's own label there, its verdict included (issue 31).
        format!("✂ {}", env.ok(&["meter", &rev]).trim())
    };
    assert_eq!(steps[0], [read_at("hello")]);
    assert_eq!(steps[1], [read_at("READ big.txt")]);
    assert_eq!(steps[2], [format!("{} (stale)", steps[1][0])]);
    let log = std::fs::read_to_string(env.dir.path().join("shake-wrapper.log")).unwrap();
    let meters: Vec<&str> = log.lines().filter(|l| l.starts_with("meter")).collect();
    assert_eq!(meters.len(), 2, "one child, then one single run: {log}");
    assert_eq!(meters[0], "meter --serve");
    assert!(meters[1].starts_with("meter --json "), "{log}");
}
