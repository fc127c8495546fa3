//! The host seam (`docs/architecture.md`): a file's host is recognised from its content or forced
//! with `--host`; a file no host reads is refused, named, and never stored; nothing outside a
//! host's own module and the registry names it (nor pi's role strings); the porcelain asks a host
//! what it can do instead of comparing; and a host added as one module and the registry's lines
//! (the tests' toy host) runs the engine.

use std::path::{Path, PathBuf};

use crate::env::TestEnv;

const HEAD: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#;
const USER: &str = r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#;

/// What only the pi module (and the host registry) may name.
const PI_ONLY: [&str; 5] = ["pi::", "\"toolResult\"", "\"bashExecution\"", "\"branch_summary\"", "\"custom_message\""];

/// The source folders of the engine, the porcelain and the binary.
const SOURCES: [&str; 3] = ["plumbing/src", "porcelain/src", "src"];

/// The host folders that may name pi: pi's own, and oh-my-pi's, whose format is pi's plus a title
/// slot and whose host reads through pi's reader.
const HOST_FOLDERS: [&str; 2] = ["pi", "omp"];

/// The host registry: the one file outside the host folders that names the pi module.
const REGISTRY: &str = "plumbing/src/hosts.rs";

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// Tells whether `text` names one of `PI_ONLY`: `pi::` only as a whole path segment (not
/// `shake_pi::` or `api::`).
fn names_pi(text: &str) -> Option<&'static str> {
    PI_ONLY.into_iter().find(|needle| {
        text.match_indices(needle).any(|(at, _)| {
            *needle != "pi::" || !text[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    })
}

#[test]
fn nothing_outside_the_pi_module_names_pi() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in SOURCES {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 50, "the source folders moved: {} files", files.len());
    let leaks: Vec<String> = files
        .iter()
        .filter(|f| !f.components().any(|c| HOST_FOLDERS.contains(&c.as_os_str().to_str().unwrap_or(""))))
        .filter(|f| !f.ends_with(REGISTRY))
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            names_pi(&text).map(|what| format!("{} names {what}", f.strip_prefix(root).unwrap_or(f).display()))
        })
        .collect();
    assert!(leaks.is_empty(), "pi leaks out of plumbing/src/pi/ (put it behind the host seam):\n{}", leaks.join("\n"));
    // The check itself sees what it must.
    assert_eq!(names_pi("use crate::pi::Session;"), Some("pi::"));
    assert_eq!(names_pi("role == \"toolResult\""), Some("\"toolResult\""));
    assert_eq!(names_pi("shake_api::x; toolResult"), None);
}

/// The seam (`plumbing/src/host/`) and the floor below it (`output.rs`, `error.rs`,
/// `durable.rs`) name no host module and not the registry above them: the seam points one way
/// (`docs/architecture.md`). Doc comments may name them; code may not.
#[test]
fn the_seam_and_the_floor_name_no_host() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("plumbing/src/host"), &mut files);
    files.extend(["output.rs", "error.rs", "durable.rs"].map(|f| root.join("plumbing/src").join(f)));
    let names = |line: &str| {
        let code = line.trim_start();
        !code.starts_with("//")
            && ["pi", "claude", "omp", "hosts"].iter().any(|m| {
                [format!("crate::{m}::"), format!("super::{m}::"), format!("crate::{m};")]
                    .iter()
                    .any(|p| code.contains(p.as_str()))
            })
    };
    let leaks: Vec<String> = files
        .iter()
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            let at = f.strip_prefix(root).unwrap_or(f).display().to_string();
            text.lines()
                .enumerate()
                .filter(|(_, l)| names(l))
                .map(|(n, l)| format!("{at}:{}: {}", n + 1, l.trim()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(leaks.is_empty(), "the seam or the floor names a host:\n{}", leaks.join("\n"));
    assert!(names("    let h = crate::pi::Pi;") && names("use crate::hosts::HOSTS;") && !names("/// see crate::pi::x"));
}

/// The rooms below the seam: what `host/` may import, and what imports no room of `host/` but
/// the host's name (`host/kind.rs`, which `--host` in the context names).
const FLOOR: [&str; 9] = ["context", "error", "output", "durable", "proof", "time", "id", "js", "fault"];

/// The crate modules a code line of `text` imports or names by a path from the crate's root:
/// `crate::tokens::X` gives `tokens`; `use crate::{Context, Error}` gives the modules those root
/// names come from (`context`, `error`). Comments are left out (a doc may link anywhere).
fn crate_modules(text: &str) -> Vec<String> {
    let root_name = |name: &str| match name {
        "Context" => "context".to_string(),
        "Error" | "ErrorKind" | "Result" => "error".to_string(),
        other => other.split("::").next().unwrap_or(other).to_string(),
    };
    let mut out = Vec::new();
    for line in text.lines().map(|l| l.split("//").next().unwrap_or_default()) {
        for (at, _) in line.match_indices("crate::") {
            let rest = &line[at + "crate::".len()..];
            match rest.strip_prefix('{') {
                Some(list) => out.extend(list.split('}').next().unwrap_or("").split(',').map(|p| root_name(p.trim()))),
                None => out.push(root_name(
                    rest.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).next().unwrap_or(""),
                )),
            }
        }
    }
    out.retain(|m| !m.is_empty());
    out
}

/// No import circle runs through the seam (issue 34): `host/` imports only the floor below it
/// (never `tokens`, the registry or a host), the floor imports nothing of `host/`
/// but the host's name, and the hosts and their counting import nothing above them, so nothing
/// that `host/` reaches, or that reaches it, comes back.
#[test]
fn the_seam_stands_on_the_floor_alone() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("plumbing/src");
    let mut seam = Vec::new();
    rust_files(&src.join("host"), &mut seam);
    let mut leaks = Vec::new();
    for f in &seam {
        let at = f.strip_prefix(root).unwrap_or(f).display().to_string();
        for m in crate_modules(&std::fs::read_to_string(f).unwrap()) {
            if m != "host" && !FLOOR.contains(&m.as_str()) {
                leaks.push(format!("{at} imports {m}, above the seam"));
            }
        }
    }
    let mut floor = Vec::new();
    for room in FLOOR {
        match src.join(room).is_dir() {
            true => rust_files(&src.join(room), &mut floor),
            false => floor.push(src.join(format!("{room}.rs"))),
        }
    }
    floor.push(src.join("host/kind.rs"));
    for f in &floor {
        let at = f.strip_prefix(root).unwrap_or(f).display().to_string();
        let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{at}: {e}"));
        let up = text.lines().filter(|l| !l.trim_start().starts_with("//")).any(|l| {
            l.match_indices("crate::host").any(|(at, _)| !l[at..].starts_with("crate::host::kind::"))
                || (f.ends_with("host/kind.rs") && l.contains("crate::"))
        });
        if up {
            leaks.push(format!("{at} imports the seam from below it"));
        }
    }
    // Nor around it: a host and the counting it uses import nothing of the engine above them
    // (the registry, the store), so the registry's way down to a host never comes back up.
    let mut below = Vec::new();
    for room in ["pi", "claude", "omp", "tokens"] {
        rust_files(&src.join(room), &mut below);
    }
    below.push(src.join("tokens.rs"));
    for f in &below {
        let at = f.strip_prefix(root).unwrap_or(f).display().to_string();
        for m in crate_modules(&std::fs::read_to_string(f).unwrap()) {
            if ["hosts", "store", "rev", "remote", "search", "fork_record", "cmd"].contains(&m.as_str()) {
                leaks.push(format!("{at} imports {m}, above it"));
            }
        }
    }
    assert!(leaks.is_empty(), "an import runs back through host/:\n{}", leaks.join("\n"));
    // The check itself sees what it must.
    assert_eq!(crate_modules("use crate::{Context, Error, Result};"), ["context", "error", "error"]);
    assert_eq!(crate_modules("use crate::tokens::cache::CachedTokenizer; // crate::pi"), ["tokens"]);
    assert_eq!(crate_modules("/// [`crate::tokens::Pieces`]\nlet n = crate::tokens::count(x);"), ["tokens"]);
}

/// Every host and where it lives: its module path segment and its folder (or file) under
/// `plumbing/src`. The toy host is the tests' own (`fixture-host`), registered in one line.
const HOST_MODULES: [(&str, &str); 4] = [("pi", "pi"), ("claude", "claude"), ("omp", "omp"), ("toy", "hosts/toy.rs")];

/// The code lines of `text` (comments left out: a doc may name a host) that name host module
/// `host` by a path from a crate's root (`crate::claude::`, `shake_plumbing::omp;`, `use
/// crate::{pi, …}`), not a module of the same name elsewhere (`tokens::claude`).
fn names_host(text: &str, host: &str) -> Vec<String> {
    let word = |s: &str| s.starts_with(host) && !s[host.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_');
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .filter(|l| {
            ["crate::", "shake_plumbing::"].iter().any(|root| {
                l.match_indices(root).any(|(at, _)| {
                    let rest = &l[at + root.len()..];
                    word(rest)
                        || rest.strip_prefix('{').is_some_and(|list| list.split([',', '}']).any(|p| word(p.trim())))
                })
            })
        })
        .map(|l| l.trim().to_string())
        .collect()
}

/// For every host, no source file outside its own module and the registry names it (oh-my-pi's
/// module may read through pi's: its format is pi's plus a title slot); the porcelain matches on
/// what a host can do (`Host::writer`), never compares it, and sniffs no format (issue 34.7).
#[test]
fn no_file_outside_a_hosts_module_and_the_registry_names_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("plumbing/src");
    let mut files = Vec::new();
    for dir in SOURCES {
        rust_files(&root.join(dir), &mut files);
    }
    let mut leaks = Vec::new();
    for (host, module) in HOST_MODULES {
        assert!(src.join(module).exists(), "{host}: no module at plumbing/src/{module}");
        for f in files.iter().filter(|f| !f.starts_with(src.join(module)) && !f.ends_with(REGISTRY)) {
            let at = f.strip_prefix(root).unwrap_or(f).display().to_string();
            if host == "pi" && f.starts_with(src.join("omp")) {
                continue;
            }
            let text = std::fs::read_to_string(f).unwrap();
            leaks.extend(names_host(&text, host).into_iter().map(|l| format!("{at}: names {host}: {l}")));
        }
    }
    assert!(leaks.is_empty(), "a host named outside its module and the registry:\n{}", leaks.join("\n"));
    let mut porcelain = Vec::new();
    rust_files(&root.join("porcelain/src"), &mut porcelain);
    for f in &porcelain {
        let text = std::fs::read_to_string(f).unwrap();
        for what in ["write_back()", "WriteBack", "looks_like_omp", "is_omp"] {
            assert!(!text.contains(what), "{} holds {what}: match on Host::writer / ask the host", f.display());
        }
    }
    // The check itself sees what it must.
    assert_eq!(names_host("use shake_plumbing::claude::write;", "claude").len(), 1);
    assert_eq!(names_host("use crate::{hosts, omp};", "omp").len(), 1);
    assert!(names_host("crate::tokens::claude::for_model(x); // crate::pi::x", "claude").is_empty());
    assert!(names_host("use crate::pi_extension;", "pi").is_empty());
}

/// The messages fold and undo print about a host whose folds are new sessions take that host's
/// words (its title, [`Forks::file_word`]), never Claude Code's "transcript" for every such host
/// (issue 34.6: a second fork-writing host would inherit Claude Code's wording).
#[test]
fn fold_and_undo_messages_take_the_hosts_words() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut said = Vec::new();
    for file in ["porcelain/src/batch.rs", "porcelain/src/cmd/fold.rs", "porcelain/src/cmd/undo.rs"] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let code = text.lines().filter(|l| !l.trim_start().starts_with("//"));
        // A string literal naming one host's word for its files (comments and help may name it).
        said.extend(
            code.filter(|l| l.contains('"') && l.contains("transcript")).map(|l| format!("{file}: {}", l.trim())),
        );
    }
    assert!(said.is_empty(), "a message says Claude Code's word for every host:\n{}", said.join("\n"));
}

#[test]
fn a_file_no_host_reads_is_refused_and_not_stored() {
    let env = TestEnv::new();
    let binary = env.write("blob.jsonl", [0x7f, b'E', b'L', b'F', 0, 0, 1, 2, 0xff, 0xfe, b'\n', 0, 9]);
    let p = binary.to_str().unwrap();
    for cmd in [&["meter", p][..], &["import", p], &["fold", p, "--dry-run"], &["project", p]] {
        let err = env.fails(cmd, 1);
        assert!(err.contains(&format!("{p}: not a pi session")), "{cmd:?}: {err}");
        assert!(err.contains("binary data (13 bytes)"), "{cmd:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let text = env.write("notes.jsonl", "just some notes\nand more\n");
    let err = env.fails(&["meter", text.to_str().unwrap()], 1);
    assert!(err.contains("its first line is text, not JSON: just some notes"), "{err}");
    assert_eq!(env.ok(&["sessions", "--json"]).trim(), "[]", "nothing refused was stored");
    let objects: serde_json::Value = serde_json::from_str(&env.ok(&["count-objects", "--json"])).unwrap();
    assert_eq!(objects["objects"], 0, "no object of a refused file");
    // A session beside them is read and stored as before.
    let good = env.write("good.jsonl", format!("{HEAD}\n{USER}\n"));
    env.ok(&["meter", good.to_str().unwrap()]);
    assert_eq!(serde_json::from_str::<serde_json::Value>(&env.ok(&["sessions", "--json"])).unwrap()[0]["entries"], 1);
}

#[test]
fn host_is_recognised_or_forced() {
    let env = TestEnv::new();
    let good = env.write("good.jsonl", format!("{HEAD}\n{USER}\n"));
    let g = good.to_str().unwrap();
    let plain = env.ok(&["project", g, "--json"]);
    assert_eq!(env.ok(&["--host", "pi", "project", g, "--json"]), plain);
    let err = env.fails(&["--host", "claude", "project", g], 1);
    assert!(err.contains("good.jsonl:1: not a Claude Code transcript: its first row is a pi session header"), "{err}");
    // Forced, oh-my-pi reads a pi file as its own (OMP's format is pi's plus a title slot).
    assert_eq!(env.ok(&["--host", "omp", "project", g, "--json"]), plain);
    let err = env.fails(&["--host", "vim", "project", g], 2);
    assert!(err.contains("possible values: ") && ["pi", "claude", "omp"].iter().all(|h| err.contains(h)), "{err}");
}

/// `--tokenizer pi` on a session whose host has no estimate of its own (Claude Code) counts pi's
/// rule, as named (a count without tables), and says so on stderr; on pi's own
/// session it says nothing. Issue 34.2: it counted pi's rule on any host's session, silently.
#[test]
fn the_pi_estimate_on_another_hosts_session_is_said() {
    let env = TestEnv::new();
    let copy = |name: &str, to: &str| env.write(to, std::fs::read(crate::env::fixture_path(name)).unwrap());
    let claude = copy("claude/bash-read/transcript.jsonl", "transcript.jsonl");
    let pi = env.write("pi.jsonl", format!("{HEAD}\n{USER}\n"));
    for (path, host) in [(&claude, Some("Claude Code")), (&pi, None)] {
        let p = path.to_str().unwrap();
        for cmd in [&["meter", p, "--tokenizer", "pi"][..], &["fold", "--dry-run", p, "--tokenizer", "pi"]] {
            let out = env.cmd().args(cmd).output().unwrap();
            assert!(out.status.success(), "{cmd:?}: {out:?}");
            let err = String::from_utf8_lossy(&out.stderr);
            match host {
                Some(title) => assert!(
                    err.contains(&format!("{p}: --tokenizer pi counts pi's own estimate"))
                        && err.contains(&format!("not {title}'s")),
                    "{cmd:?}: {err}"
                ),
                None => assert!(!err.contains("--tokenizer pi"), "{cmd:?}: {err}"),
            }
        }
    }
}

/// A toy session: a user turn, a long tool result, the reply, and a long last turn (the tail).
fn toy_session() -> String {
    let listing: Vec<String> = (0..3000).map(|i| format!("file_{i}.rs  {} bytes", i * 37)).collect();
    let words: Vec<String> = (0..3000).map(|i| format!("word{i}")).collect();
    let rows = [
        serde_json::json!({"toy": 1, "session": "s1", "cwd": "/p"}),
        serde_json::json!({"id": "a", "parent": null, "role": "user", "content": "list the files"}),
        serde_json::json!({"id": "b", "parent": "a", "role": "tool", "tool": "bash",
            "content": [{"type": "text", "text": listing.join("\n")}]}),
        serde_json::json!({"id": "c", "parent": "b", "role": "assistant", "content": "Many files."}),
        serde_json::json!({"id": "d", "parent": "c", "role": "user", "content": words.join(" ")}),
    ];
    rows.iter().map(|r| format!("{r}\n")).collect()
}

/// The toy host, added as one module and the registry's lines (`plumbing/src/hosts/toy.rs`), is
/// read by the engine as any host is: detected, metered, planned (the dry run's figure is the
/// meter's), folded by appending, told by `status` and `log`, projected, and undone.
#[test]
fn a_host_added_as_one_module_runs_the_engine() {
    let env = TestEnv::new();
    let path = env.write("toy.jsonl", toy_session());
    let p = path.to_str().unwrap();
    let json = |args: &[&str]| serde_json::from_str::<serde_json::Value>(&env.ok(args)).unwrap();
    let meter = json(&["meter", "--json", p]);
    let dry = json(&["fold", "--dry-run", "--json", p]);
    assert!(meter["tokens"].as_u64().unwrap() > 10_000, "{meter}");
    assert_eq!(meter["tokens"], dry["tokensFreed"], "meter = fold --dry-run");
    let projected = json(&["project", p]);
    assert_eq!(projected.as_array().map(Vec::len), Some(4), "{projected}");
    assert!(env.ok(&["status", p]).contains("Nothing is folded"));
    let fold = json(&["fold", "--json", p]);
    assert_eq!(fold["tokensFreed"], dry["tokensFreed"], "the dry run is the real run");
    let status = json(&["status", "--json", p]);
    assert_eq!(status["tokensFreed"], fold["tokensFreed"], "status of the folded file");
    let projected = json(&["project", p]);
    let folded = projected[1]["content"][0]["text"].as_str().unwrap();
    assert!(folded.starts_with("[bash output omitted"), "{projected}");
    assert!(env.ok(&["log", p]).contains("fold elide/default: 1 tool result"));
    env.ok(&["undo", p]);
    assert_eq!(json(&["meter", "--json", p])["tokens"], meter["tokens"], "undo gives it all back");
    // Forced, and named among the hosts --host takes.
    assert_eq!(json(&["--host", "toy", "meter", "--json", p])["tokens"], meter["tokens"]);
    assert!(env.fails(&["--host", "vim", "meter", p], 2).contains("toy"));
}
