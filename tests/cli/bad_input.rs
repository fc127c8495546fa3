//! Bad input: every kind of damage a session file can have gets a clear warning or error naming
//! the file and line, never a panic; where pi itself gets through, shake reads what pi reads.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::env::{Oracle, TestEnv};

const HEAD: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#;
const USER: &str = r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#;

/// Writes a session from lines (each followed by a newline).
fn session(env: &TestEnv, name: &str, lines: &[&str]) -> PathBuf {
    env.write(name, lines.iter().map(|l| format!("{l}\n")).collect::<String>())
}

/// A message entry with `content`, child of `parent`.
fn message(id: &str, parent: &str, content: &str) -> String {
    format!(
        r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"2026-01-01T00:00:02.000Z","message":{{"role":"user","content":{content},"timestamp":2}}}}"#
    )
}

/// Runs `shake project --json`, asserting success, and returns (output, stderr).
fn project(env: &TestEnv, path: &str) -> (Value, String) {
    let out = env.run(&["project", path, "--json"]);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{stderr}");
    (serde_json::from_slice(&out.stdout).unwrap(), stderr)
}

/// Asserts shake projects the file as pi does, and returns shake's warnings.
fn same_as_pi(env: &TestEnv, path: &Path) -> String {
    let p = path.to_str().unwrap();
    let (ours, stderr) = project(env, p);
    assert_eq!(ours, Oracle::run("project.mjs", &[p, "--compact"]), "{p}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

/// Asserts every tree command fails with exit 1 and says `what`; returns project's stderr.
fn all_fail(env: &TestEnv, path: &str, what: &str) -> String {
    for cmd in ["rev-parse", "ls-entries", "ls-leaves", "project"] {
        let stderr = env.fails(&[cmd, path], 1);
        assert!(stderr.contains(what), "{cmd}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    env.fails(&["project", path], 1)
}

#[test]
fn malformed_lines_are_skipped_with_a_warning() {
    let env = TestEnv::new();
    let two_objects = format!("{}{}", message("x1", "a1", "\"lost\""), message("x2", "a1", "\"lost\""));
    let path = session(&env, "m.jsonl", &[HEAD, USER, "{not json}", &two_objects, &message("b1", "a1", "\"ok\"")]);
    let stderr = same_as_pi(&env, &path);
    let p = path.display();
    assert!(stderr.contains(&format!("{p}:3: malformed JSON")), "{stderr}");
    assert!(stderr.contains(&format!("{p}:4: malformed JSON (trailing characters")), "{stderr}");
}

#[test]
fn a_partial_last_line_is_reported() {
    let env = TestEnv::new();
    let path = env.write("p.jsonl", format!("{HEAD}\n{USER}\n{{\"type\":\"message\",\"id\":\"b"));
    let stderr = same_as_pi(&env, &path);
    assert!(stderr.contains(&format!("{}:3: partial last line", path.display())), "{stderr}");
}

#[test]
fn unknown_entry_types_load_and_warn() {
    let env = TestEnv::new();
    let odd = r#"{"type":"wormhole","id":"w1","parentId":"a1","timestamp":"2026-01-01T00:00:01.000Z","payload":[1]}"#;
    let path = session(&env, "u.jsonl", &[HEAD, USER, odd, &message("b1", "w1", "\"after\"")]);
    let stderr = same_as_pi(&env, &path);
    assert!(stderr.contains(&format!("{}:3: entry w1: unknown type \"wormhole\"", path.display())), "{stderr}");
    let listed = env.ok(&["ls-entries", path.to_str().unwrap()]);
    assert_eq!(listed.lines().nth(1).unwrap().split('\t').take(2).collect::<Vec<_>>(), ["w1", "wormhole"]);
}

#[test]
fn orphans_start_their_own_branch() {
    let env = TestEnv::new();
    let path = session(&env, "o.jsonl", &[HEAD, USER, &message("o1", "gone", "\"orphan\"")]);
    let stderr = same_as_pi(&env, &path);
    assert!(stderr.contains(&format!("{}:3: entry o1: parent \"gone\" not found", path.display())), "{stderr}");
    let p = path.to_str().unwrap();
    assert_eq!(env.ok(&["ls-entries", p]).lines().count(), 1);
    assert_eq!(env.ok(&["ls-leaves", p]).lines().count(), 2);
}

#[test]
fn cycles_are_named_not_followed() {
    let env = TestEnv::new();
    let path = session(&env, "c.jsonl", &[HEAD, USER, &message("c1", "c2", "\"x\""), &message("c2", "c1", "\"y\"")]);
    let p = path.to_str().unwrap();
    all_fail(&env, p, &format!("{p}: parentId cycle through entry c2 (line 4); pi would hang"));
    assert!(env.fails(&["rev-parse", p], 1).contains("hint: repair the parentId"));
    // An entry that is its own parent.
    let path = session(&env, "self.jsonl", &[HEAD, USER, &message("s1", "s1", "\"x\"")]);
    let p = path.to_str().unwrap();
    all_fail(&env, p, "parentId cycle through entry s1 (line 3)");
    // Branches that do not reach the loop still work; listing every tip reaches it.
    assert!(env.ok(&["rev-parse", &format!("{p}:a1")]).ends_with(" a1\n"));
    let path =
        session(&env, "self-mid.jsonl", &[HEAD, USER, &message("s1", "s1", "\"x\""), &message("b1", "a1", "\"y\"")]);
    let p = path.to_str().unwrap();
    assert!(env.ok(&["project", p, "--json"]).contains("\"b1\""));
    assert!(env.fails(&["ls-leaves", p], 1).contains("parentId cycle through entry s1 (line 3)"));
}

#[test]
fn a_20_mb_line_is_read_like_any_other() {
    let env = TestEnv::new();
    let big = format!("\"{}\"", "x".repeat(20 << 20));
    let path = session(&env, "big.jsonl", &[HEAD, USER, &message("b1", "a1", &big)]);
    let (ours, _) = project(&env, path.to_str().unwrap());
    assert_eq!(ours["messages"][1]["content"].as_str().map(str::len), Some(20 << 20));
    assert_eq!(env.ok(&["ls-entries", path.to_str().unwrap()]).lines().count(), 2);
    // A 20 MB broken line is named, not printed.
    let broken = format!("{{\"type\":\"message\",\"id\":\"b2\",\"junk\":{}", "x".repeat(20 << 20));
    let path = session(&env, "bigbad.jsonl", &[HEAD, USER, &broken, &message("b3", "a1", "\"ok\"")]);
    let (_, stderr) = project(&env, path.to_str().unwrap());
    assert!(stderr.contains(&format!("{}:3: malformed JSON", path.display())), "{stderr}");
    assert!(stderr.len() < 1000, "the warning quotes the line");
}

#[test]
fn invalid_utf8_is_decoded_as_pi_decodes_it() {
    let env = TestEnv::new();
    let mut bytes = format!("{HEAD}\n{USER}\n").into_bytes();
    bytes.extend_from_slice(message("b1", "a1", "\"bad \u{1}\u{1} bytes\"").replace('\u{1}', "\u{fffd}").as_bytes());
    // Replace the two U+FFFD by an invalid byte and a truncated 3-byte sequence.
    let text = String::from_utf8(bytes).unwrap();
    let mut bytes = text.replacen('\u{fffd}', "\u{1}", 1).replacen('\u{fffd}', "\u{2}", 1).into_bytes();
    for b in &mut bytes {
        *b = match *b {
            1 => 0xff,
            2 => 0xe2,
            other => other,
        };
    }
    bytes.push(b'\n');
    let path = env.write("utf8.jsonl", bytes);
    let stderr = same_as_pi(&env, &path);
    assert!(stderr.contains(&format!("{}:3: invalid UTF-8", path.display())), "{stderr}");
}

#[test]
fn the_header_must_be_the_first_json_line() {
    let env = TestEnv::new();
    // Garbage before the header is fine for pi.
    let path = session(&env, "g.jsonl", &["garbage", HEAD, USER]);
    assert!(same_as_pi(&env, &path).contains(&format!("{}:1: malformed JSON", path.display())));
    for (name, first) in
        [("entry-first.jsonl", USER), ("array-first.jsonl", "[1,2]"), ("note.jsonl", r#"{"type":"note","id":"n"}"#)]
    {
        let path = session(&env, name, &[first, HEAD, USER]);
        let p = path.to_str().unwrap();
        let stderr =
            all_fail(&env, p, &format!("{p}:1: not a pi session: the first JSON line is not a session header"));
        assert!(!stderr.contains("panicked"));
        assert!(Oracle::run("project.mjs", &[p]).get("error").is_some(), "pi refuses {name} too");
    }
    let path = session(&env, "none.jsonl", &["nothing", "here"]);
    all_fail(&env, path.to_str().unwrap(), "not a pi session: no line is valid JSON");
}

#[test]
fn an_empty_file_has_no_leaf() {
    let env = TestEnv::new();
    let path = env.write("empty.jsonl", "");
    let p = path.to_str().unwrap();
    let stderr = same_as_pi(&env, &path);
    assert!(stderr.contains(&format!("{p}: empty file")), "{stderr}");
    let err = env.fails(&["rev-parse", p], 1);
    assert!(err.contains(&format!("{p}: the session has no entries")), "{err}");
    assert_eq!(env.ok(&["ls-leaves", p]), "");
}

#[test]
fn a_context_edit_without_replacement_is_an_error_where_pi_throws() {
    let env = TestEnv::new();
    let edit =
        r#"{"type":"context_edit","id":"e1","parentId":"a1","timestamp":"2026-01-01T00:00:03.000Z","targetId":"a1"}"#;
    let path = session(&env, "e.jsonl", &[HEAD, USER, edit]);
    let p = path.to_str().unwrap();
    let err = env.fails(&["project", p], 1);
    assert!(err.contains(&format!("{p}:3: context_edit e1 has no \"replacement\"")), "{err}");
    // The tree commands do not project, so they still work.
    assert_eq!(env.ok(&["ls-entries", p, "--context"]).lines().count(), 2);
    assert!(env.ok(&["rev-parse", p]).ends_with(" e1\n"));
}

#[test]
fn duplicate_ids_resolve_to_the_later_entry_like_pi() {
    let env = TestEnv::new();
    let path = session(
        &env,
        "d.jsonl",
        &[
            HEAD,
            USER,
            &message("b1", "a1", "\"first\""),
            &message("b1", "a1", "\"second\""),
            &message("c1", "b1", "\"child\""),
        ],
    );
    same_as_pi(&env, &path);
    let p = path.to_str().unwrap();
    let listed = env.ok(&["ls-entries", p, "--json"]);
    assert_eq!(serde_json::from_str::<Value>(&listed).unwrap()["entries"][1]["line"], 4);
}

#[test]
fn duplicate_keys_take_the_last_value_like_javascript() {
    let env = TestEnv::new();
    let twice = r#"{"type":"message","id":"x1","id":"b1","parentId":null,"parentId":"a1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"user","content":"old","content":"new","timestamp":2}}"#;
    let path = session(&env, "k.jsonl", &[HEAD, USER, twice]);
    let stderr = same_as_pi(&env, &path);
    assert!(stderr.is_empty(), "{stderr}");
    assert!(env.ok(&["rev-parse", path.to_str().unwrap()]).ends_with(" b1\n"));
}

#[test]
fn a_custom_message_timestamp_with_non_ascii_characters_is_read_like_pi() {
    let env = TestEnv::new();
    let lines: Vec<String> = ["2026-01-01T00:00é", "2026-01-01T00:00:00é", "2026-01-01T00:00:00+0é00", "2026-01-01T00:00:00.5é"]
        .iter()
        .enumerate()
        .map(|(i, ts)| {
            format!(
                r#"{{"type":"custom_message","customType":"note","content":"n{i}","display":true,"id":"c{i}","parentId":"{}","timestamp":"{ts}"}}"#,
                if i == 0 { "a1".to_string() } else { format!("c{}", i - 1) }
            )
        })
        .collect();
    let all: Vec<&str> = [HEAD, USER].into_iter().chain(lines.iter().map(String::as_str)).collect();
    let path = session(&env, "ts.jsonl", &all);
    same_as_pi(&env, &path);
}

#[test]
fn a_warning_to_a_closed_stderr_is_dropped_not_a_panic() {
    let env = TestEnv::new();
    let path = session(&env, "m.jsonl", &[HEAD, USER, "{not json"]);
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = env.cmd().args(["project", path.to_str().unwrap(), "--json"]).stderr(writer).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(!out.stdout.is_empty());
}

/// An id with a lone surrogate is read (as U+FFFD), with a warning naming the line: two ids that
/// differ only in their surrogate are one id to shake, as pi would tell them apart.
#[test]
fn a_lone_surrogate_in_an_id_is_read_with_a_warning() {
    let env = TestEnv::new();
    let odd = message("b\\ud800", "a1", "\"one\"");
    let child = message("c1", "b\\ud800", "\"two\"");
    let path = session(&env, "id.jsonl", &[HEAD, USER, &odd, &child]);
    let (ours, stderr) = project(&env, path.to_str().unwrap());
    assert_eq!(ours["leafId"], "c1");
    assert_eq!(ours["messages"].as_array().unwrap().len(), 3, "the path runs through the odd id");
    let p = path.display();
    assert!(stderr.contains(&format!("{p}:3: \"id\" holds a lone surrogate escape")), "{stderr}");
    assert!(stderr.contains(&format!("{p}:4: \"parentId\" holds a lone surrogate escape")), "{stderr}");
}

/// An entry id holding U+0000: `-z` refuses to print it (a NUL would end the field early), every
/// command that prints ids with `-z` fails naming it, line output quotes it, JSON escapes it.
#[test]
fn an_id_holding_nul_is_refused_by_z_quoted_in_lines_and_escaped_in_json() {
    let env = TestEnv::new();
    let head = HEAD.replace("\"id\":\"s1\"", "\"id\":\"s\\u0000x\"");
    let path =
        session(&env, "nul.jsonl", &[&head, USER, &message("z\\u0000b", "a1", "\"x\""), &message("c1", "a1", "\"y\"")]);
    let p = path.to_str().unwrap();
    // An argument cannot hold a NUL: the id is named by its prefix.
    let (tip_a, tip_c) = (format!("{p}:z"), format!("{p}:c1"));
    let refused = |args: &[&str], code: i32| {
        let stderr = env.fails(args, code);
        assert!(stderr.contains("-z cannot print a field holding U+0000"), "{args:?}: {stderr}");
        assert!(stderr.contains("\\000"), "{args:?}: the field is named, quoted: {stderr}");
    };
    refused(&["ls-entries", &tip_a, "-z"], 1);
    refused(&["ls-leaves", p, "-z"], 1);
    refused(&["diff", &tip_a, &tip_c, "-z"], 2);
    refused(&["audit", "rewind", p, "-z"], 2);
    env.ok(&["import", p]);
    refused(&["sessions", "-z"], 1);
    // Line output quotes it; JSON escapes it.
    assert!(env.ok(&["ls-leaves", p]).contains("\"z\\000b\""));
    assert!(env.ok(&["sessions", "--porcelain"]).contains("\"s\\000x\""));
    assert!(env.ok(&["ls-leaves", p, "--json"]).contains("\"z\\u0000b\""));
    assert!(env.ok(&["rev-parse", &tip_a]).ends_with(" \"z\\000b\"\n"));
}

/// Paths with a newline, a TAB or bytes that are not UTF-8 are quoted in every text output (one
/// field, one line, the exact bytes as octal), and verbatim with `-z`.
#[test]
fn odd_paths_are_quoted_in_text_output_and_verbatim_with_z() {
    use std::ffi::{OsStr, OsString};
    use std::os::unix::ffi::OsStrExt;
    let env = TestEnv::new();
    let text: String =
        [HEAD, USER, "{broken", &message("b1", "a1", "\"x\"")].iter().map(|l| format!("{l}\n")).collect();
    let dir = env.dir.path().display();
    let run = |args: &[&OsStr], ok: bool| {
        let out = env.cmd().args(args).output().unwrap();
        assert_eq!(out.status.success(), ok, "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        (out.stdout, String::from_utf8(out.stderr).unwrap())
    };
    let os = |s: &str| OsString::from(s);
    // Not UTF-8 (arguments must be UTF-8, so it comes from a folder walk): the store refuses it,
    // naming it quoted.
    let folder = env.dir.path().join("walked");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join(OsStr::from_bytes(b"bad\xff.jsonl")), &text).unwrap();
    let (_, stderr) = run(&[&os("import"), folder.as_os_str()], false);
    assert!(stderr.contains(&format!("\"{dir}/walked/bad\\377.jsonl\": shake needs UTF-8 paths")), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    // A newline and a TAB.
    let path = env.dir.path().join("odd\nna\tme.jsonl");
    std::fs::write(&path, &text).unwrap();
    let file = path.as_os_str();
    let quoted = format!("\"{dir}/odd\\nna\\tme.jsonl\"");
    // import: its line and its warning.
    let (stdout, stderr) = run(&[&os("import"), file], true);
    let stdout = String::from_utf8(stdout).unwrap();
    assert!(stdout.starts_with(&format!("imported {quoted}: 2 entries")), "{stdout}");
    assert_eq!(stderr, format!("shake: warning: {quoted}:3: malformed JSON; pi skips this line\n"));
    // sessions: the table and --porcelain quote, -z gives the bytes.
    let (table, _) = run(&[&os("sessions")], true);
    assert!(String::from_utf8(table).unwrap().contains(&quoted));
    let (records, _) = run(&[&os("sessions"), &os("--porcelain")], true);
    assert!(String::from_utf8(records).unwrap().trim_end().ends_with(&quoted));
    let (z, _) = run(&[&os("sessions"), &os("-z")], true);
    let field = [file.as_bytes(), b"\0"].concat();
    assert!(z.windows(field.len()).any(|w| w == field), "-z prints the path verbatim");
    // fold names the session; restore names what it wrote.
    let (fold, _) = run(&[&os("fold"), file], true);
    let fold = String::from_utf8(fold).unwrap();
    assert!(!fold.contains("na\tme") && !fold.contains("odd\n"), "{fold}");
    let target = env.dir.path().join("back\nhere.jsonl");
    let (restored, _) = run(&[&os("restore"), file, &os("-o"), target.as_os_str()], true);
    let restored = String::from_utf8(restored).unwrap();
    assert!(restored.trim_end().ends_with(&format!("\"{dir}/back\\nhere.jsonl\"")), "{restored}");
    assert_eq!(restored.lines().count(), 1);
}

/// A FIFO, a device and a symlink loop are named for what they are ("not a regular file"),
/// never "no such session file", and shake never opens them (a FIFO's open would wait for a
/// writer forever).
#[test]
fn a_fifo_a_device_and_a_symlink_loop_are_not_regular_files() {
    let env = TestEnv::new();
    let dir = env.dir.path();
    let fifo = dir.join("fifo.jsonl");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    std::os::unix::fs::symlink(dir.join("loop-b.jsonl"), dir.join("loop-a.jsonl")).unwrap();
    std::os::unix::fs::symlink(dir.join("loop-a.jsonl"), dir.join("loop-b.jsonl")).unwrap();
    for (path, what) in [
        (fifo.to_str().unwrap(), "a FIFO"),
        ("/dev/zero", "a character device"),
        (dir.join("loop-a.jsonl").to_str().unwrap(), "a symlink loop"),
    ] {
        for cmd in ["status", "project", "fold"] {
            let err = env.fails(&[cmd, path], 1);
            assert!(err.contains(&format!("{path}: not a regular file ({what})")), "{cmd} {path}: {err}");
        }
    }
}

/// A byte order mark makes line 1 unreadable to pi (`JSON.parse` refuses U+FEFF): the error
/// names line 1 and says why.
#[test]
fn a_byte_order_mark_is_named_on_line_1() {
    let env = TestEnv::new();
    let text = format!("\u{feff}{}", crate::append::small());
    let path = env.write("bom.jsonl", text);
    let path = path.to_str().unwrap();
    let err = env.fails(&["status", path], 1);
    assert!(err.contains(&format!("{path}:1: ")) && err.contains("byte order mark"), "{err}");
}

/// A `message` entry without its `message` (one flipped bit in the key) or with `null` there:
/// pi throws when it builds the context of a branch holding it (it reads `message.role` of every
/// message entry on the path), so shake refuses to project that branch, naming the line, as
/// for an edit without `replacement`; the tree commands still work.
#[test]
fn a_message_entry_without_its_message_is_an_error_where_pi_throws() {
    let env = TestEnv::new();
    for (name, broken) in [("flipped", r#""Message":{"role":"user","content":"x"}"#), ("null", r#""message":null"#)] {
        let line = format!(
            r#"{{"type":"message","id":"b1","parentId":"a1","timestamp":"2026-01-01T00:00:02.000Z",{broken}}}"#
        );
        let path = session(&env, &format!("{name}.jsonl"), &[HEAD, USER, &line]);
        let p = path.to_str().unwrap();
        let pi = &Oracle::run("load-many.mjs", &[p])[0];
        assert_eq!(pi["accepted"], false, "{pi}");
        let err = env.fails(&["project", p], 1);
        assert!(err.contains(&format!("{p}:3: message entry b1 has no \"message\"")), "{err}");
        assert_eq!(env.ok(&["ls-entries", p]).lines().count(), 2);
    }
}
