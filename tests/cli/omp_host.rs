//! oh-my-pi sessions through the `shake` binary: the read commands work on OMP's files, the meter
//! prints OMP's own `/shake` figure (equal to OMP's code where the count is exact), writes are
//! refused, and bad OMP input gets an error naming the file and line, changing nothing.

use serde_json::Value;
use shake_plumbing::hosts::generate::Limit;
use shake_plumbing::omp::generate;

use crate::env::TestEnv;
use crate::omp::{omp_encoding, OmpOracle};

fn gpt_session(env: &TestEnv, seed: u64) -> std::path::PathBuf {
    let opts =
        generate::Options { seed, limit: Limit::Entries(400), model: "openai/gpt-5.1-codex".into(), title: "t".into() };
    env.write(
        &format!("2026-01-01T00-00-00-000Z_0194f5a0-0000-7000-8000-00000000000{seed}.jsonl"),
        generate::generate(&opts),
    )
}

#[test]
fn omp_read_commands_work_on_omp_files() {
    let env = TestEnv::new();
    let fixture =
        env.write("omp.jsonl", std::fs::read(crate::env::fixture_path("omp/omp-large-session.jsonl")).unwrap());
    let f = fixture.to_str().unwrap();
    let out = env.cmd().args(["import", f]).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("1019 entries"), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).is_empty(), "no warning for OMP's own title slot and types");
    assert!(env.ok(&["sessions", "--porcelain"]).contains("d703a1a9-1b7b-4fb1-b512-c9738b1fe617"));
    assert_eq!(env.ok(&["ls-entries", f]).lines().count(), 1019);
    assert_eq!(env.ok(&["ls-leaves", f]).lines().count(), 1);
    let projected: Value = serde_json::from_str(&env.ok(&["project", f])).unwrap();
    assert_eq!(projected["leafId"], "c7739972");
    assert!(env.ok(&["count-tokens", f]).contains("total (o200k)"));
    assert!(env.ok(&["show", f]).contains("Context at c7739972"));
    // Read-only: a fold is refused and the file is untouched.
    let before = std::fs::read(&fixture).unwrap();
    let err = env.fails(&["fold", f], 1);
    assert!(err.contains("oh-my-pi sessions are read-only") && err.contains(f), "{err}");
    // A dry run says what the real run does: the same refusal, not a plan (issue 32.2).
    assert_eq!(env.fails(&["fold", f, "--dry-run"], 1), err);
    // --in-place is refused for what the host is (read-only), not as if it appended (issue 34.2:
    // it said "a oh-my-pi session is always written in place, by appending").
    assert_eq!(env.fails(&["fold", f, "--in-place", "--force"], 1), err);
    assert_eq!(std::fs::read(&fixture).unwrap(), before);
}

#[test]
fn omp_meter_prints_omps_own_figure() {
    let env = TestEnv::new();
    let paths: Vec<_> = (1..=3).map(|seed| gpt_session(&env, seed)).collect();
    for auto in [false, true] {
        let jobs: Vec<_> = paths.iter().map(|p| (p.as_path(), Some("openai/gpt-5.1-codex"), auto)).collect();
        let want = OmpOracle::regions(&jobs, &[]);
        for (path, want) in paths.iter().zip(&want) {
            let mut args = vec!["meter", "--json", path.to_str().unwrap()];
            if auto {
                args.extend(["--profile", "omp-auto"]);
            }
            let got: Value = serde_json::from_str(&env.ok(&args)).unwrap();
            assert_eq!(got["tokens"], want["freed"], "{}", path.display());
            let regions = want["regions"].as_array().unwrap();
            let kind = |k: &str| regions.iter().filter(|r| r["kind"] == k).count();
            assert_eq!(got["toolResults"], kind("toolResult"));
            assert_eq!(got["blocks"], kind("block"));
            assert_eq!((got["tokenizer"].as_str(), got["exact"].as_bool()), (Some("bytes/4"), Some(true)));
            assert_eq!(got["model"], "openai/gpt-5.1-codex");
        }
    }
    // Every run imported the file: its version is in the store.
    assert_eq!(env.ok(&["sessions", "--porcelain"]).lines().count(), 3);
    let err = env.fails(&["meter", paths[0].to_str().unwrap(), "--profile", "default"], 1);
    assert!(err.contains("omit --profile"), "{err}");
}

/// On OMP's own session (Claude Sonnet 4.5) and on sessions of every Claude family the meter
/// prints OMP's figure to the token, counted with OMP's own Claude encoding, and names it.
#[test]
fn omp_meter_prints_omps_own_figure_for_claude_models() {
    let env = TestEnv::new();
    let mut sessions =
        vec![env.write("omp.jsonl", std::fs::read(crate::env::fixture_path("omp/omp-large-session.jsonl")).unwrap())];
    let models = [
        "anthropic/claude-opus-4-7",
        "amazon-bedrock/anthropic.claude-opus-5",
        "amazon-bedrock/anthropic.claude-sonnet-5",
    ];
    for (seed, model) in models.iter().enumerate() {
        let opts = generate::Options {
            seed: seed as u64,
            limit: Limit::Entries(400),
            model: model.to_string(),
            title: "t".into(),
        };
        sessions.push(env.write(&format!("claude-{seed}.jsonl"), generate::generate(&opts)));
    }
    let named: Vec<&str> = ["anthropic/claude-sonnet-4-5"].into_iter().chain(models).collect();
    let jobs: Vec<_> = sessions.iter().zip(&named).map(|(p, m)| (p.as_path(), Some(*m), false)).collect();
    let want = OmpOracle::regions(&jobs, &[]);
    for (path, want) in sessions.iter().zip(&want) {
        let got: Value = serde_json::from_str(&env.ok(&["meter", "--json", path.to_str().unwrap()])).unwrap();
        assert_eq!(got["tokens"], want["freed"], "{}", path.display());
        // OMP's catalog family is `claude-v3` …, but OMP counts it with its own port of ctok
        // (ctok 1.0.0's vocabulary): the output names that encoding, not ctok 1.3.0's.
        assert_eq!(got["tokenizer"].as_str(), omp_encoding(&want["encoding"]), "{}", path.display());
        assert_eq!(got["exact"], true);
    }
}

/// OMP reads its file as JavaScript does: the bytes decoded as UTF-8 with U+FFFD for what is
/// not (`readFileSync(file, "utf8")`), each line by `JSON.parse`, which takes a lone surrogate
/// escape (`JSON.stringify` writes one for half an emoji cut by a tool's output). So such an
/// entry is on the branch, and the meter prints OMP's figure for it. Before, shake skipped
/// both lines as malformed: the branch ended there and the meter printed a fifth of the figure.
#[test]
fn omp_meter_reads_lines_as_javascript_does() {
    let env = TestEnv::new();
    let source = std::fs::read_to_string(crate::env::fixture_path("omp/omp-large-session.jsonl")).unwrap();
    let lines: Vec<&str> = source.split('\n').collect();
    let results: Vec<usize> = (0..lines.len()).filter(|&i| lines[i].contains(r#""role":"toolResult""#)).collect();
    let (a, b) = (results[results.len() / 3], results[results.len() / 2]);
    let mut surrogate: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    surrogate[a] = lines[a].replacen(r#""text":""#, r#""text":"half an emoji \ud83d, "#, 1);
    let mut broken: Vec<Vec<u8>> = lines.iter().map(|l| l.as_bytes().to_vec()).collect();
    let at = broken[b].windows(8).position(|w| w == br#""text":""#).unwrap() + 8;
    // A byte that is no UTF-8 on its own (0xe5 opens a three-byte character), inside a text.
    broken[b].insert(at, 0xe5);
    let broken = broken.join(&b'\n');
    let sessions = [env.write("surrogate.jsonl", surrogate.join("\n")), env.write("not-utf8.jsonl", broken)];
    let model = "anthropic/claude-sonnet-4-5";
    let jobs: Vec<_> = sessions.iter().map(|p| (p.as_path(), Some(model), false)).collect();
    let want = OmpOracle::regions(&jobs, &[]);
    for (path, want) in sessions.iter().zip(&want) {
        assert_eq!(want["branch"].as_u64(), Some(lines.iter().filter(|l| l.contains(r#""parentId""#)).count() as u64));
        let got: Value = serde_json::from_str(&env.ok(&["meter", "--json", path.to_str().unwrap()])).unwrap();
        assert_eq!(got["tokens"], want["freed"], "{}", path.display());
    }
}

#[test]
fn omp_bad_input_names_file_and_line_and_changes_nothing() {
    let env = TestEnv::new();
    let good = std::fs::read(gpt_session(&env, 4)).unwrap();
    // A torn title slot: an overwrite of the slot cut short.
    let mut torn = good.clone();
    torn[60..70].copy_from_slice(b"\0\0\0\0\0\0\0\0\0\0");
    let path = env.write("torn.jsonl", &torn);
    // The store keeps its bytes all the same (nothing lost), and says what is wrong.
    let out = env.cmd().args(["import", path.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("torn.jsonl:1: torn title slot"), "{out:?}");
    for cmd in ["meter", "ls-entries", "count-tokens"] {
        let err = env.fails(&[cmd, path.to_str().unwrap()], 1);
        assert!(err.contains("torn.jsonl:1: torn title slot"), "{cmd}: {err}");
    }
    assert_eq!(std::fs::read(&path).unwrap(), torn);
    // No header after the title slot.
    let header_end = good.iter().enumerate().filter(|(_, b)| **b == b'\n').nth(1).unwrap().0 + 1;
    let mut headless = good[..256].to_vec();
    headless.extend_from_slice(&good[header_end..]);
    let path = env.write("headless.jsonl", &headless);
    let err = env.fails(&["meter", path.to_str().unwrap()], 1);
    assert!(err.contains("headless.jsonl: no session header"), "{err}");
}

/// Stamps `prunedAt` on tool results of a generated session with content of every shape OMP's
/// join treats apart (several text blocks around an image, empty texts, no text), and one
/// unpruned result with two text blocks.
fn pruned_shapes(bytes: &[u8]) -> Vec<u8> {
    let text = |s: &str| serde_json::json!({"type": "text", "text": s});
    let image = serde_json::json!({"type": "image", "data": "blob:sha256:00", "mimeType": "image/png"});
    let shapes = [
        (serde_json::json!([text("first\n"), image, text(""), text("second")]), true),
        (serde_json::json!([text(""), text("")]), true),
        (serde_json::json!([image]), true),
        (serde_json::json!([text("kept "), text("apart")]), false),
    ];
    // The newest results, so they are in the context after any compaction.
    let mut lines: Vec<Vec<u8>> = bytes.split_inclusive(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
    let mut k = 0;
    for line in lines.iter_mut().skip(1).rev() {
        let Ok(mut v) = serde_json::from_slice::<Value>(line) else { continue };
        let message = &mut v["message"];
        if k == 4 * shapes.len() || message["role"] != "toolResult" || message.get("prunedAt").is_some() {
            continue;
        }
        let (content, pruned) = &shapes[k % shapes.len()];
        message["content"] = content.clone();
        if *pruned {
            message["prunedAt"] = 1_790_000_000_000u64.into();
        }
        k += 1;
        *line = format!("{v}\n").into_bytes();
    }
    let out = lines.concat();
    assert_eq!(k, 4 * shapes.len(), "enough tool results to stamp");
    out
}

#[test]
fn omp_project_sends_pruned_results_as_omp_does() {
    let env = TestEnv::new();
    let path = env.write("pruned.jsonl", pruned_shapes(&std::fs::read(gpt_session(&env, 5)).unwrap()));
    let want = OmpOracle::run("sent.ts", &[path.to_str().unwrap()], &[]);
    let projected: Value = serde_json::from_str(&env.ok(&["project", path.to_str().unwrap()])).unwrap();
    let ours: std::collections::HashMap<&str, &Value> = projected["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| Some((e["id"].as_str()?, &e["messages"].get(0)?["content"])))
        .collect();
    // The oracle gives the whole branch; the context starts at the newest compaction's boundary.
    let want: Vec<&Value> =
        want.as_array().unwrap().iter().filter(|w| ours.contains_key(w["entryId"].as_str().unwrap())).collect();
    assert!(want.len() > 20, "{}", want.len());
    let mut joined = 0;
    for w in want {
        let id = w["entryId"].as_str().unwrap();
        assert_eq!(ours[id], &w["content"], "tool result {id}");
        joined += usize::from(w["content"].to_string().contains("first\\nsecond"));
    }
    assert_eq!(joined, 4, "every joined shape was on the branch and checked");
}

/// Writes `bytes` as an OMP session of the sandbox's working directory, where OMP keeps it
/// (`~/.omp/agent/sessions/<OMP's folder name>/<ts>_<uuidv7>.jsonl`).
fn omp_session_here(env: &TestEnv, bytes: &[u8]) -> std::path::PathBuf {
    let canonical = |p: &std::path::Path| std::fs::canonicalize(p).unwrap();
    let home = env.dir.path().join("home");
    let name = shake_plumbing::omp::paths::session_dir_name(
        &canonical(&env.cwd()),
        &canonical(&home),
        &canonical(std::path::Path::new("/tmp")),
    );
    let dir = home.join(".omp/agent/sessions").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("2026-01-01T00-00-00-000Z_0194f5a0-0000-7000-8000-0000000000aa.jsonl");
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn omp_session_is_the_default_where_pi_has_none() {
    let env = TestEnv::new();
    // Nothing here: pi's error, saying OMP was looked at too.
    let err = env.fails(&["meter"], 1);
    assert!(
        err.contains("no pi session for") && err.contains("no oh-my-pi or Claude Code session here either"),
        "{err}"
    );
    let omp = omp_session_here(&env, &std::fs::read(gpt_session(&env, 6)).unwrap());
    let got: Value = serde_json::from_str(&env.ok(&["meter", "--json"])).unwrap();
    assert_eq!((got["host"].as_str(), got["session"].as_str()), (Some("omp"), omp.to_str()));
    let log = env.ok(&["log"]);
    assert!(log.starts_with("Session ") && log.contains("(oh-my-pi's current session here)"), "{log}");
    assert!(log.contains("1 version imported; no rewrite by oh-my-pi."), "{log}");
    assert_eq!(env.run(&["diff", "@1", "@1"]).status.code(), Some(0));
    // Claude Code's session too: the one modified last of the two, whichever host it is.
    let set_age = |p: &std::path::Path, secs: u64| {
        let when = std::time::SystemTime::now() - std::time::Duration::from_secs(secs);
        std::fs::File::options().write(true).open(p).unwrap().set_modified(when).unwrap();
    };
    let claude = crate::claude_host::install(&env, &crate::env::fixture_path("claude/bash-read"));
    set_age(&omp, 60);
    let parsed: Value = serde_json::from_str(&env.ok(&["rev-parse", "--json"])).unwrap();
    assert_eq!(parsed["file"].as_str(), claude.to_str());
    assert!(env.ok(&["status"]).contains("(Claude Code's current session here)"));
    set_age(&claude, 120);
    let parsed: Value = serde_json::from_str(&env.ok(&["rev-parse", "--json"])).unwrap();
    assert_eq!(parsed["file"].as_str(), omp.to_str());
    // A pi session here wins, even when the OMP one was written after it.
    let pi = env.pi_session("0199aaaa-2222", crate::synthetic::rich().text);
    std::fs::write(&omp, std::fs::read(&omp).unwrap()).unwrap();
    let parsed: Value = serde_json::from_str(&env.ok(&["rev-parse", "--json"])).unwrap();
    assert_eq!(parsed["file"].as_str(), pi.to_str());
    // --host omp takes OMP's choice all the same.
    let parsed: Value = serde_json::from_str(&env.ok(&["--host", "omp", "rev-parse", "--json"])).unwrap();
    assert_eq!(parsed["file"].as_str(), omp.to_str());
}

/// The OMP meter remembers its reading as pi's does: a settled file metered again is answered
/// by its stamp alone (a same-size rewrite behind the same stamp still gets the first figure),
/// a new stamp is checked against the bytes measured (the same bytes: recalled and stamped
/// anew; other bytes: measured again).
#[test]
fn omp_meter_answers_an_unchanged_settled_file_from_its_memo() {
    let env = TestEnv::new();
    let path = gpt_session(&env, 3);
    let p = path.to_str().unwrap();
    // `--host omp`: with its header blanked the file no longer looks like OMP's.
    let set_mtime = |t: std::time::SystemTime| {
        std::fs::File::options().write(true).open(&path).unwrap().set_modified(t).unwrap();
    };
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    set_mtime(hour_ago);
    let first = env.ok(&["--host", "omp", "meter", "--json", p]);
    let intact = std::fs::read(&path).unwrap();
    // The session header (the line after OMP's title slot) blanked: same size, unreadable.
    let mut blanked = intact.clone();
    let mut ends = blanked.iter().enumerate().filter(|(_, &b)| b == b'\n').map(|(i, _)| i);
    let (title_end, header_end) = (ends.next().unwrap(), ends.next().unwrap());
    blanked[title_end + 1..header_end].fill(b' ');
    std::fs::write(&path, &blanked).unwrap();
    set_mtime(hour_ago);
    assert_eq!(env.ok(&["--host", "omp", "meter", "--json", p]), first, "the stamp alone answers");
    // The intact bytes under a new stamp: proven, recalled, and remembered with that stamp.
    std::fs::write(&path, &intact).unwrap();
    set_mtime(hour_ago + std::time::Duration::from_secs(1));
    assert_eq!(env.ok(&["--host", "omp", "meter", "--json", p]), first);
    std::fs::write(&path, &blanked).unwrap();
    set_mtime(hour_ago + std::time::Duration::from_secs(1));
    assert_eq!(env.ok(&["--host", "omp", "meter", "--json", p]), first, "the new stamp answers");
    // Other bytes under another stamp are measured: the blanked header shows.
    set_mtime(hour_ago + std::time::Duration::from_secs(2));
    env.fails(&["--host", "omp", "meter", "--json", p], 1);
    // Another preset is another reading.
    std::fs::write(&path, &intact).unwrap();
    set_mtime(hour_ago);
    let auto = env.ok(&["--host", "omp", "meter", "--json", p, "--profile", "omp-auto"]);
    assert!(auto.contains("\"profile\":\"omp-auto\""), "{auto}");
}

/// `shake log` on an OMP file tells a rewrite by OMP from a restore by shake, and counts the
/// tokens that came back (issue 34.6: a `shake restore` was listed as one more rewrite by
/// oh-my-pi, with nothing that left and nothing said of what came back).
#[test]
fn omp_log_tells_a_restore_by_shake_from_a_rewrite_by_omp() {
    let env = TestEnv::new();
    let original = std::fs::read(crate::env::fixture_path("omp/omp-large-session.jsonl")).unwrap();
    let path = env.write("omp.jsonl", &original);
    let p = path.to_str().unwrap();
    env.ok(&["meter", p]);
    // A rewrite as OMP's /shake makes one: the longest tool result's text replaced in place.
    let text = String::from_utf8(original.clone()).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let longest = (0..lines.len())
        .filter(|&i| lines[i].contains(r#""role":"toolResult""#))
        .max_by_key(|&i| lines[i].len())
        .unwrap();
    let mut entry: Value = serde_json::from_str(&lines[longest]).unwrap();
    entry["message"]["content"] = serde_json::json!([{"type": "text", "text": "[shaken ~9,000 tokens]"}]);
    lines[longest] = entry.to_string();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    env.ok(&["meter", p]);
    env.ok(&["restore", p, "--version", "1", "--force"]);
    assert_eq!(std::fs::read(&path).unwrap(), original);
    env.ok(&["meter", p]);

    let log: Value = serde_json::from_str(&env.ok(&["log", "--json", p])).unwrap();
    let log = log.as_array().unwrap();
    assert_eq!(log.len(), 2, "{log:?}");
    let (restore, rewrite) = (&log[0], &log[1]);
    assert_eq!((rewrite["by"].as_str(), rewrite["restored"].as_u64()), (Some("omp"), None));
    assert_eq!((restore["by"].as_str(), restore["restored"].as_u64()), (Some("shake"), Some(1)));
    let removed = rewrite["tokensRemoved"].as_u64().unwrap();
    assert!(removed > 1_000, "{rewrite}");
    assert_eq!(restore["tokensRestored"].as_u64(), Some(removed), "what left came back");
    let text = env.ok(&["log", p]);
    assert!(text.contains("3 versions imported; 1 rewrite by oh-my-pi, 1 restore by shake."), "{text}");
    assert!(text.contains("version 2 → 3: version 1 restored by shake; ~"), "{text}");
    assert!(text.contains("tokens came back to the context"), "{text}");
}
