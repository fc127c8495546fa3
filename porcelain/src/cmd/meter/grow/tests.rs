//! The append shortcut's tests: a grown file measured from its new bytes gives what a whole
//! reading gives, and a change the shortcut cannot follow falls back to the whole reading.

use std::path::PathBuf;

use shake_plumbing::regions::RegionKind;
use shake_plumbing::tokens::TokenizerName;

use super::*;
use crate::cmd::meter::memo::MemoEntry;
use crate::fingerprint::{Bloom, Proof};
use crate::plan::plan_with_wall;

/// The full plan of a session's bytes: tokens freed, tool results, blocks, and the tokens
/// from the first folded entry on.
fn planned(bytes: &[u8], fold: &FoldOptions) -> (u64, usize, usize, u64) {
    let whole = SessionFile::from_bytes(PathBuf::from("w.jsonl"), bytes.to_vec());
    let session = shake_plumbing::hosts::load(&whole, None).unwrap();
    let view = View::at(&session, session.default_leaf()).unwrap();
    plan_of(&view, fold)
}

fn plan_of(projection: &View<'_, '_>, fold: &FoldOptions) -> (u64, usize, usize, u64) {
    let tokens = shake_plumbing::tokens::context_tokens(projection, &fold.tokenizer);
    let plan = plan_with_wall(projection, &Wall::at(projection), fold, &tokens);
    let suffix = crate::price::suffix_of(projection, &plan, &tokens);
    (plan.tokens_freed, plan.tool_results(), plan.count(RegionKind::Block), suffix)
}

/// The pi part of a growth.
fn entries(g: &mut Growth) -> &mut Entries {
    match &mut g.follow {
        Follow::Entries(e) => e,
        Follow::Host { .. } => panic!("a pi session is followed entry by entry"),
    }
}

/// What measuring the whole file gives and the memo keeps.
fn measured(state: &FileState, bytes: &[u8], fold: &FoldOptions) -> Measured {
    try_measured(state, bytes, fold).expect("a session")
}

/// [`measured`], `None` when the bytes are no session yet.
fn try_measured(state: &FileState, bytes: &[u8], fold: &FoldOptions) -> Option<Measured> {
    let whole = SessionFile::from_bytes(state.path.clone(), bytes.to_vec());
    let session = shake_plumbing::hosts::load(&whole, None).ok()?;
    let projection = View::at(&session, session.default_leaf()).unwrap();
    let leaf = session.default_leaf().map(|l| session.entries[l].id().to_string());
    let turn = LastTurn::of(&projection);
    Some(Measured {
        reading: reading_of(state, fold.tokenizer.name, fold.profile, plan_of(&projection, fold), leaf, turn.clone()),
        at_last: true,
        growth: Growth::of(&projection, &Wall::at(&projection), fold, true, &turn).map(|(g, _)| g),
        proof: Proof::of(bytes),
    })
}

const HEADER: &str = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#;

/// A pi message line.
fn message(id: &str, parent: &str, message: &str) -> String {
    format!(
        r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"2026-01-01T00:00:00.000Z","message":{message}}}"#
    )
}

/// An assistant message calling tools by these ids.
fn calling(ids: impl Iterator<Item = String>) -> String {
    let calls: Vec<String> =
        ids.map(|id| format!(r#"{{"type":"toolCall","id":"{id}","name":"bash","arguments":{{}}}}"#)).collect();
    format!(r#"{{"role":"assistant","content":[{}],"stopReason":"toolUse","timestamp":1}}"#, calls.join(","))
}

/// A tool result of a call (a pi message: its template is kept out of the source by the seam).
fn result(call: &str, text: &str) -> String {
    include_str!("../../../testdata/tool-result-message.json").trim_end().replace("CALL", call).replace("TEXT", text)
}

/// Grows a memo of `bytes` (at `path`) by `lines`, one at a time, on disk.
fn grow_by(path: &Path, memo: MemoEntry, lines: &[String], fold: &FoldOptions) -> Vec<Option<MemoEntry>> {
    let mut memo = Some(memo);
    let mut out = Vec::new();
    for line in lines {
        let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
        std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes()).unwrap();
        let len = std::fs::metadata(path).unwrap().len();
        let state = FileState { path: path.to_path_buf(), len, mtime_ns: 0, inode: 1 };
        let grown =
            memo.as_ref().and_then(|m| m.grow(&state, None, (fold.profile, &fold.rules), fold.tokenizer, false));
        memo = grown.map(|m| MemoEntry::new("k", &state, &m));
        out.push(memo.clone());
    }
    out
}

/// A session with more ids than the old 128 KiB filters held (450,000 tool calls): those
/// said "maybe" of about one new id in five, and such an append was measured whole (here
/// the 16th). Each of 40 appends calling a new tool is measured from its new bytes, with the
/// full plan's figures.
#[test]
fn a_session_of_many_ids_keeps_the_shortcut() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let fold = pi_fold();
    let calls = calling((0..450_000).map(|i| format!("c{i:07}")));
    let mut lines = vec![HEADER.to_string(), message("a0", "", r#"{"role":"user","content":"go","timestamp":1}"#)];
    lines.push(message("a1", "a0", &calls));
    lines.push(message("a2", "a1", &result("c0000000", "done")));
    let bytes = format!("{}\n", lines.join("\n")).into_bytes();
    std::fs::write(&path, &bytes).unwrap();
    let state = FileState { path: path.clone(), len: bytes.len() as u64, mtime_ns: 0, inode: 1 };
    let mut memo = MemoEntry::new("k", &state, &measured(&state, &bytes, &fold));
    let g = entries(memo.growth.as_mut().expect("a growth"));
    assert!(g.exact && g.calls.len_bytes() <= Bloom::MAX_BYTES);
    let mut new = Vec::new();
    let mut parent = "a2".to_string();
    for turn in 0..40 {
        let (call, answer) = (format!("n{turn:07}"), format!("b{turn}"));
        new.push(message(&answer, &parent, &calling([call].into_iter())));
        parent = answer;
    }
    let grown = grow_by(&path, memo, &new, &fold);
    assert!(
        grown.iter().all(Option::is_some),
        "measured whole after {:?} appends",
        grown.iter().position(Option::is_none)
    );
    let last = grown.last().unwrap().as_ref().unwrap();
    assert_eq!(
        (last.tokens, last.tool_results, last.blocks, last.suffix),
        planned(&std::fs::read(&path).unwrap(), &fold)
    );
}

/// A filter saying "maybe" of everything: a new id is looked for in the old bytes, so an
/// append of new ids keeps the shortcut and one reusing an old id (on the path, or a call's)
/// does not; nor does anything when an old id is written with an escape (not findable).
#[test]
fn a_maybe_is_checked_in_the_old_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let fold = pi_fold();
    let start = |name: &str, first_id: &str| {
        let path = dir.path().join(name);
        let lines = [
            HEADER.to_string(),
            message(first_id, "", r#"{"role":"user","content":"go","timestamp":1}"#),
            message("a1", "a0", &calling(["c1".to_string()].into_iter())),
            message("a2", "a1", &result("c1", "done")),
        ];
        let bytes = format!("{}\n", lines.join("\n")).into_bytes();
        std::fs::write(&path, &bytes).unwrap();
        let state = FileState { path: path.clone(), len: bytes.len() as u64, mtime_ns: 0, inode: 1 };
        let mut memo = MemoEntry::new("k", &state, &measured(&state, &bytes, &fold));
        let g = entries(memo.growth.as_mut().unwrap());
        (g.path_ids, g.calls) = (g.path_ids.saturated(), g.calls.saturated());
        (path, memo)
    };
    let user = r#"{"role":"user","content":"more","timestamp":1}"#;
    let fresh = [message("b1", "a2", user), message("b2", "b1", &calling(["c2".to_string()].into_iter()))];
    let (path, memo) = start("fresh.jsonl", "a0");
    let grown = grow_by(&path, memo, &fresh, &fold);
    assert!(grown.iter().all(Option::is_some));
    let last = grown[1].as_ref().unwrap();
    assert_eq!(
        (last.tokens, last.tool_results, last.blocks, last.suffix),
        planned(&std::fs::read(&path).unwrap(), &fold)
    );
    for reused in [message("a0", "a2", user), message("b1", "a2", &calling(["c1".to_string()].into_iter()))] {
        let (path, memo) = start("reused.jsonl", "a0");
        assert!(grow_by(&path, memo, std::slice::from_ref(&reused), &fold)[0].is_none(), "{reused}");
    }
    let (path, memo) = start("escaped.jsonl", r"\u0061\u0030");
    let mut memo = memo;
    assert!(!entries(memo.growth.as_mut().unwrap()).exact);
    assert!(grow_by(&path, memo, &fresh[..1], &fold)[0].is_none());
}

/// The shortcut against the full plan: each generated session is measured at a prefix cut at
/// a line, then grown by the lines after it, again and again from the grown memo (so the tail
/// kept one position at a time moves on); where the shortcut is taken (plain entries) its
/// figures are the plan of the file as it is then, and it is taken on most cuts. A memo whose
/// file was rewritten (not only grown) is never grown.
#[test]
fn growing_a_prefix_equals_planning_the_whole() {
    let dir = tempfile::tempdir().unwrap();
    let mut taken = 0;
    for seed in 1..=10u64 {
        let options = shake_plumbing::hosts::generate::Options {
            seed,
            limit: shake_plumbing::hosts::generate::Limit::Default,
            cwd: None,
        };
        let bytes = shake_plumbing::hosts::generate::generate(&options);
        let ends: Vec<usize> = bytes.iter().enumerate().filter(|(_, &b)| b == b'\n').map(|(i, _)| i + 1).collect();
        let profile = [Profile::Default, Profile::Aggressive, Profile::Conservative][seed as usize % 3];
        let tok = Tokenizer::new(TokenizerName::Pi);
        let mut fold = FoldOptions::new(Scope::Elide, profile, tok);
        // The rules besides the tail, in turn (issue 31): the growth follows each.
        match seed % 4 {
            1 => fold.rules.keep_tool_uses = 3,
            2 => fold.rules.floor = Some(crate::rules::Floor::Tokens(2_000)),
            3 => fold.rules.exclude_tools = vec!["bash".into()],
            _ => fold.rules.superseded_reads = false,
        }
        let path = dir.path().join(format!("s{seed}.jsonl"));
        let state_at = |cut: usize| {
            std::fs::write(&path, &bytes[..cut]).unwrap();
            FileState { path: path.clone(), len: cut as u64, mtime_ns: 0, inode: 1 }
        };
        let mut memo: Option<MemoEntry> = None;
        for &cut in ends.iter().skip(3).step_by(7) {
            let state = state_at(cut);
            let grown = memo.as_ref().and_then(|m| m.grow(&state, None, (profile, &fold.rules), tok, false));
            if let Some(m) = &grown {
                taken += 1;
                let r = &m.reading;
                assert_eq!(
                    (r.tokens, r.tool_results, r.blocks, r.suffix),
                    planned(&bytes[..cut], &fold),
                    "seed {seed} cut {cut}"
                );
                assert_eq!(m.proof, Proof::of(&bytes[..cut]));
            }
            let m = grown.unwrap_or_else(|| measured(&state, &bytes[..cut], &fold));
            let mut m = m;
            if let Some(g) = &mut m.growth {
                let kept = g.tally.tokens.len();
                assert!(kept <= 400, "the memo keeps the tail only: {kept} positions");
                assert!(entries(g).exact, "seed {seed}: pi's ids are in the file as written");
            }
            memo = Some(MemoEntry::new("k", &state, &m));
        }
        // The same length but other bytes before the end: no growth, and no recall.
        let last = memo.unwrap();
        let cut = last.seen.len as usize;
        let mut other = bytes[..cut].to_vec();
        other[cut / 2] ^= 0x20;
        std::fs::write(&path, &other).unwrap();
        let state = FileState { path: path.clone(), len: cut as u64, mtime_ns: 1, inode: 1 };
        assert!(last.recall(&state, None, profile).is_none());
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let (_, proven) = last.recall(&state, None, profile).expect("same bytes, touched");
        assert!(proven);
    }
    assert!(taken >= 20, "the shortcut was taken {taken} times");
}

/// The Claude Code fixtures' transcripts.
fn claude_fixtures() -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/claude"));
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let path = e.ok()?.path().join("transcript.jsonl");
            let name = path.parent()?.file_name()?.to_string_lossy().into_owned();
            Some((name, std::fs::read(&path).ok()?))
        })
        .collect();
    out.sort();
    out
}

/// A fixture's lines, and each parsed (every line of `missing-parent` and `parallel` is JSON).
fn fixture_rows(name: &str) -> (Vec<Vec<u8>>, Vec<serde_json::Value>) {
    let (_, bytes) = claude_fixtures().into_iter().find(|(n, _)| n == name).unwrap();
    let lines: Vec<Vec<u8>> = bytes.split_inclusive(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    let rows = lines.iter().map(|l| serde_json::from_slice(l).unwrap()).collect();
    (lines, rows)
}

/// The default profile, counted as pi does.
fn pi_fold() -> FoldOptions {
    FoldOptions::new(Scope::Elide, Profile::Default, Tokenizer::new(TokenizerName::Pi))
}

/// The byte offsets just after each line.
fn line_ends(bytes: &[u8]) -> Vec<usize> {
    bytes.iter().enumerate().filter(|(_, &b)| b == b'\n').map(|(i, _)| i + 1).collect()
}

/// Replays `bytes` cut at `cuts` (in order) at `path`: each cut is measured by growing the
/// memo of the cut before (kept as the meter keeps it: grown, else measured whole) and, when
/// the shortcut is taken, checked against a whole measure of the same bytes. Returns how many
/// cuts were grown, and the cuts measured whole (not those before the transcript's first row).
fn replay(path: &Path, bytes: &[u8], cuts: &[usize], fold: &FoldOptions, name: &str) -> (usize, Vec<usize>) {
    let state_at = |cut: usize| {
        std::fs::write(path, &bytes[..cut]).unwrap();
        FileState { path: path.to_path_buf(), len: cut as u64, mtime_ns: 0, inode: 1 }
    };
    let (mut grown, mut whole) = (0, Vec::new());
    let mut memo: Option<MemoEntry> = None;
    for &cut in cuts {
        let state = state_at(cut);
        let m = match memo
            .as_ref()
            .and_then(|m| m.grow(&state, None, (fold.profile, &fold.rules), fold.tokenizer, false))
        {
            Some(m) => {
                grown += 1;
                let fresh = measured(&state, &bytes[..cut], fold);
                assert_eq!(m.reading, fresh.reading, "{name}: grown to byte {cut} ({:?})", fold.profile);
                assert_eq!(m.proof, fresh.proof);
                m
            }
            None => {
                let Some(m) = try_measured(&state, &bytes[..cut], fold) else { continue };
                whole.push(cut);
                m
            }
        };
        if let Some(g) = &m.growth {
            let size = bincode::serde::encode_to_vec(g, bincode::config::standard()).unwrap().len();
            assert!(size <= 2 * Bloom::MAX_BYTES, "{name}: a growth of {size} bytes");
        }
        memo = Some(MemoEntry::new("k", &state, &m));
    }
    (grown, whole)
}

/// Every Claude Code fixture, cut after every line (the big ones in their last 300 lines) and
/// grown line by line, then again two, three and five lines at a time, each cut with a
/// profile of its own: every grown reading is the whole measure's (tokens, results, blocks,
/// leaf) and the proof of the same bytes. The transcripts that only grow turn by turn
/// (`thinking`'s messages carried on over rows, `parallel`'s results hanging from each of
/// their message's rows, not only the last) and the compactions (`compact`, `big-*`: their
/// boundary, summary and first row under the anchor restart the chain from the rows that
/// survive them) are measured whole only the first time; the rows that join old ones are
/// measured whole (each `duplicate-uuids` row after the first copy reuses a uuid), and so is
/// the row whose parent is missing (`missing-parent`'s walk stands in for it).
#[test]
fn claude_transcripts_grown_line_by_line_are_measured_whole() {
    let dir = tempfile::tempdir().unwrap();
    let profiles = [Profile::Default, Profile::Aggressive, Profile::Conservative];
    for (k, (name, bytes)) in claude_fixtures().into_iter().enumerate() {
        let ends = line_ends(&bytes);
        let ends = &ends[if bytes.len() > 4 << 20 { ends.len().saturating_sub(300) } else { 0 }..];
        for (j, lines) in [1, 2, 3, 5].into_iter().enumerate() {
            let cuts: Vec<usize> = ends.iter().copied().step_by(lines).collect();
            let fold = FoldOptions::new(Scope::Elide, profiles[(k + j) % 3], Tokenizer::new(TokenizerName::Pi));
            let path = dir.path().join(format!("{name}-{lines}.jsonl"));
            let (grown, whole) = replay(&path, &bytes, &cuts, &fold, &name);
            assert!(grown > 0, "{name}: never grown");
            let at = format!("{name}, {lines} lines at a time: measured whole at {whole:?}");
            match name.as_str() {
                // Reused uuids: measured whole where they come.
                "duplicate-uuids" => {}
                // The row whose parent is missing (its walk stands in for it), then no more.
                "missing-parent" => assert!(whole.len() <= 2, "{at}"),
                // A compaction's rows restart the chain from the rows that survive it.
                _ => assert_eq!(whole.len(), 1, "{at}"),
            }
        }
    }
}

/// Transcripts grown turn by turn (the rows up to the next assistant row, as Claude Code
/// runs the status line after a message; `parallel`'s turns hold results answering every row
/// of their message), counted with o200k: the same readings, measured whole only the first
/// time.
#[test]
fn claude_turns_counted_with_o200k_are_measured_whole() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = claude_fixtures().into_iter().filter(|(n, _)| n == "bash-read" || n == "parallel");
    for (name, bytes) in fixtures {
        claude_turns_with_o200k(dir.path(), &name, &bytes);
    }
}

fn claude_turns_with_o200k(dir: &Path, name: &str, bytes: &[u8]) {
    let ends = line_ends(bytes);
    let starts = std::iter::once(0).chain(ends.iter().copied());
    let kind =
        |line: &[u8]| serde_json::from_slice::<serde_json::Value>(line).ok()?["type"].as_str().map(str::to_string);
    let cuts: Vec<usize> = starts
        .zip(&ends)
        .filter(|&(a, &b)| kind(&bytes[a..b]).as_deref() == Some("assistant"))
        .map(|(_, &b)| b)
        .collect();
    let fold = FoldOptions::new(Scope::Elide, Profile::Default, Tokenizer::new(TokenizerName::O200k));
    let (grown, whole) = replay(&dir.join(format!("{name}.jsonl")), bytes, &cuts, &fold, name);
    assert!(cuts.len() >= 8 && whole == cuts[..1], "{name}: {grown} grown; measured whole at {whole:?}");
}

/// `old` measured whole, then grown by `append` alone: the grown measure, checked against a
/// whole measure of the longer file (`None`: it is measured whole).
fn grown_by(path: &Path, old: &[u8], append: &[u8], fold: &FoldOptions) -> Option<Measured> {
    std::fs::write(path, old).unwrap();
    let state = FileState { path: path.to_path_buf(), len: old.len() as u64, mtime_ns: 0, inode: 1 };
    let memo = MemoEntry::new("k", &state, &measured(&state, old, fold));
    let all = [old, append].concat();
    std::fs::write(path, &all).unwrap();
    let state = FileState { path: path.to_path_buf(), len: all.len() as u64, mtime_ns: 0, inode: 1 };
    let grown = memo.grow(&state, None, (fold.profile, &fold.rules), fold.tokenizer, false);
    grown.inspect(|m| assert_eq!(m.reading, measured(&state, &all, fold).reading))
}

/// A transcript growing past 5 MiB by one row: followed when it holds no compaction boundary
/// the size gate cuts at (`bash-read`; `compact`, whose boundary has anchors: the whole
/// measure's reading), measured whole when it does (`big-unanchored` without its padding:
/// the gate then drops the rows before it).
#[test]
fn claude_growing_past_5_mib_is_followed_unless_the_gate_cuts() {
    use serde_json::{json, Value};
    let dir = tempfile::tempdir().unwrap();
    let fixtures = claude_fixtures();
    let fixture = |name: &str| fixtures.iter().find(|(n, _)| n == name).unwrap().1.clone();
    let unpadded: Vec<u8> = fixture("big-unanchored")
        .split_inclusive(|&b| b == b'\n')
        .filter(|l| !l.starts_with(br#"{"type":"x-shake-padding""#))
        .flatten()
        .copied()
        .collect();
    let fold = pi_fold();
    let path = dir.path().join("t.jsonl");
    for (old, gated) in [(fixture("bash-read"), false), (fixture("compact"), false), (unpadded, true)] {
        assert!(old.len() < 5 << 20);
        let rows: Vec<Value> = old.split(|&b| b == b'\n').filter_map(|l| serde_json::from_slice(l).ok()).collect();
        let last = rows.iter().rev().find(|r| r["type"] == "assistant").unwrap();
        let user = |text: String| {
            let mut r = rows.iter().rev().find(|r| r["type"] == "user").unwrap().clone();
            r["uuid"] = json!("0000aaaa-0000-4000-8000-000000000001");
            r["parentUuid"] = last["uuid"].clone();
            r["message"] = json!({"role": "user", "content": text});
            format!("{r}\n").into_bytes()
        };
        assert!(grown_by(&path, &old, &user("more".to_string()), &fold).is_some(), "gated {gated}: a row");
        let past = grown_by(&path, &old, &user("x".repeat(6 << 20)), &fold);
        assert_eq!(past.is_none(), gated, "gated {gated}: a row past 5 MiB");
    }
}

/// `missing-parent` cut after its row whose parent is missing (the walk stands in for it),
/// grown by a row hanging from the tip: followed when it is later than that row, measured
/// whole when it is as old (a row no later could stand in for the missing parent).
#[test]
fn claude_rows_as_old_as_a_stood_in_parent_are_measured_whole() {
    use serde_json::{json, Value};
    let dir = tempfile::tempdir().unwrap();
    let (lines, rows) = fixture_rows("missing-parent");
    let uuids: Vec<&Value> = rows.iter().map(|r| &r["uuid"]).collect();
    let orphan = rows.iter().position(|r| r["parentUuid"].is_string() && !uuids.contains(&&r["parentUuid"])).unwrap();
    let at = (orphan + 1..rows.len()).find(|&i| rows[i]["type"] == "assistant").unwrap();
    let fold = pi_fold();
    let path = dir.path().join("t.jsonl");
    let user = |timestamp: &Value| {
        let mut r = rows[..at].iter().rev().find(|r| r["type"] == "user").unwrap().clone();
        r["uuid"] = json!("0000aaaa-0000-4000-8000-000000000001");
        r["parentUuid"] = rows[at]["uuid"].clone();
        r["timestamp"] = timestamp.clone();
        r["message"] = json!({"role": "user", "content": "more"});
        format!("{r}\n").into_bytes()
    };
    let old = lines[..=at].concat();
    assert!(grown_by(&path, &old, &user(&rows[at]["timestamp"]), &fold).is_some(), "a later row");
    assert!(grown_by(&path, &old, &user(&rows[orphan]["timestamp"]), &fold).is_none(), "as old as the orphan");
}

/// `compact` grown across its compaction: the boundary, the summary (the relink's anchor)
/// and the row under it restart the chain from the rows that survive (the preserved row, and
/// those from the boundary on), with the whole measure's reading; appends whose restart the
/// rows read again could not prove are measured whole.
#[test]
fn claude_compactions_restart_unless_other_rows_would_survive() {
    use serde_json::{json, Value};
    let dir = tempfile::tempdir().unwrap();
    let (lines, rows) = fixture_rows("compact");
    let boundary = rows.iter().position(|r| r["subtype"] == "compact_boundary").unwrap();
    let summary = boundary + 1;
    assert_eq!(rows[summary]["isCompactSummary"], true);
    assert_eq!(rows[boundary]["compactMetadata"]["preservedSegment"]["anchorUuid"], rows[summary]["uuid"]);
    let fold = pi_fold();
    let path = dir.path().join("t.jsonl");
    let cut = |at: usize| lines[..at].concat();
    let grow = |at: usize, append: &[u8]| grown_by(&path, &cut(at), append, &fold);
    // Cut before the boundary, after it, after the summary: grown by each next row, or all
    // of them up to the next assistant row.
    let next = (summary + 1..rows.len()).find(|&i| rows[i]["type"] == "assistant").unwrap();
    for at in [boundary, summary, summary + 1] {
        assert!(grow(at, &lines[at]).is_some(), "cut before line {}: the next row", at + 1);
        assert!(grow(at, &lines[at..=next].concat()).is_some(), "cut before line {}: a turn", at + 1);
    }
    let line = |r: &Value| format!("{r}\n").into_bytes();
    let edited = |i: usize, edit: &dyn Fn(&mut Value)| {
        let mut r = rows[i].clone();
        edit(&mut r);
        line(&r)
    };
    let first = rows.iter().find(|r| r["type"] == "user").unwrap()["uuid"].clone();
    let dropped = rows[..boundary].iter().rev().find(|r| r["type"] == "user").unwrap()["uuid"].clone();
    let unlisted = |r: &mut Value| {
        r["compactMetadata"]["preservedMessages"]["uuids"] = json!(["0000aaaa-0000-4000-8000-000000000009"]);
        r["compactMetadata"]["preservedSegment"]["tailUuid"] = json!("0000aaaa-0000-4000-8000-000000000009");
    };
    let unanchored = |r: &mut Value| {
        let meta = r["compactMetadata"].as_object_mut().unwrap();
        meta.remove("preservedSegment");
        meta.remove("preservedMessages");
    };
    let fresh = |r: &mut Value| r["uuid"] = json!("0000aaaa-0000-4000-8000-000000000001");
    let cases: [(&str, usize, Vec<u8>); 4] = [
        ("a boundary preserving a row no file has (no relink)", boundary, edited(boundary, &unlisted)),
        (
            "a boundary without anchors under 5 MiB, no boundary with them before",
            boundary,
            edited(boundary, &unanchored),
        ),
        (
            "a row after the boundary taking an old uuid",
            boundary,
            [lines[boundary].clone(), lines[summary].clone(), edited(summary + 1, &|r| r["uuid"] = first.clone())]
                .concat(),
        ),
        (
            "a row hanging from a dropped row (the relink moves it under the preserved rows)",
            summary + 1,
            edited(summary + 1, &|r| (fresh(r), r["parentUuid"] = dropped.clone()).1),
        ),
    ];
    for (what, at, append) in cases {
        assert!(grow(at, &append).is_none(), "{what}: grown");
    }
}

/// `parallel` cut inside its second message (local_41: a text row, then two tool calls, then
/// their results, the second call's first): results may hang from any row of the message the
/// chain ends with, the rows Claude Code writes take the shortcut, and rows that would make
/// the chain other than the old one followed by them are measured whole.
#[test]
fn claude_results_answer_only_the_open_message() {
    use serde_json::{json, Value};
    let dir = tempfile::tempdir().unwrap();
    let (lines, rows) = fixture_rows("parallel");
    let message = |i: usize| rows[i]["message"]["id"].as_str().unwrap_or("");
    // The message's rows (44-46: text, call, call) and its results (47 under 46, 48 under 45).
    let first = (0..rows.len()).find(|&i| message(i) == "msg_local_41").unwrap();
    let (text, call, last) = (first, first + 1, first + 2);
    let (late, early) = (last + 1, last + 2);
    assert_eq!(rows[late]["parentUuid"], rows[last]["uuid"]);
    assert_eq!(rows[early]["parentUuid"], rows[call]["uuid"]);
    let fold = pi_fold();
    let path = dir.path().join("t.jsonl");
    let cut = |at: usize| lines[..=at].concat();
    let grow = |at: usize, append: &[u8]| grown_by(&path, &cut(at), append, &fold);
    // The real rows, cut after each row of the message.
    for at in [text, call, last, late] {
        for end in at + 1..lines.len() {
            assert!(grow(at, &lines[at + 1..=end].concat()).is_some(), "cut at {at}, grown to {end}");
        }
    }
    assert!(grow(last, &lines[early]).is_some(), "the first call's result alone");
    let edited = |i: usize, n: u8, edit: &dyn Fn(&mut Value)| {
        let mut r = rows[i].clone();
        r["uuid"] = json!(format!("0000aaaa-0000-4000-8000-00000000000{n}"));
        edit(&mut r);
        format!("{r}\n").into_bytes()
    };
    let older = (0..first).rev().find(|&i| rows[i]["type"] == "assistant").unwrap();
    let rows = &rows;
    let under = |parent: usize| move |r: &mut Value| r["parentUuid"] = rows[parent]["uuid"].clone();
    let more = |r: &mut Value| {
        r["parentUuid"] = rows[late]["uuid"].clone();
        r["message"]["content"] = json!([{"type": "text", "text": "and so on"}]);
    };
    let cases: [(&str, usize, Vec<u8>); 4] = [
        ("a result under an older message's row", last, edited(early, 1, &under(older))),
        ("an attachment under a row before the tip", last, edited(early + 1, 1, &under(call))),
        ("a row of the message after a result under it", late, edited(last, 1, &more)),
        (
            "a result under the message after a row that ends it",
            late,
            [edited(early + 1, 1, &under(late)), edited(early, 2, &|_| {})].concat(),
        ),
    ];
    for (what, at, append) in cases {
        assert!(grow(at, &append).is_none(), "{what}: grown");
    }
}

/// `bash-read` cut after its second tool call (the first answered, the second not), grown by
/// one append each: the real rows that follow (the pending call's result, then the next
/// assistant row), a result of the pending call and a row carrying on the tip's message take
/// the shortcut with the whole measure's reading; every append that may change how old rows
/// load or count is measured whole.
#[test]
fn claude_appends_that_may_change_old_rows_are_measured_whole() {
    use serde_json::{json, Value};
    let dir = tempfile::tempdir().unwrap();
    let (_, bytes) = claude_fixtures().into_iter().find(|(n, _)| n == "bash-read").unwrap();
    let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
    let rows: Vec<Option<Value>> = lines.iter().map(|l| serde_json::from_slice(l).ok()).collect();
    let uses_tool = |r: &Value| r["type"] == "assistant" && r["message"]["content"][0]["type"] == "tool_use";
    let at = rows.iter().enumerate().filter(|(_, r)| r.as_ref().is_some_and(uses_tool)).nth(1).unwrap().0;
    let (call, answered) = (&rows[at].as_ref().unwrap()["message"]["content"][0]["id"], "toolu_local_1");
    let tip = rows[at].as_ref().unwrap().clone();
    let result = rows.iter().skip(at).flatten().find(|r| r["type"] == "user").unwrap().clone();
    assert_eq!(&result["message"]["content"][0]["tool_use_id"], call);
    let old: Vec<u8> = lines[..=at].concat();
    let fold = pi_fold();
    let path = dir.path().join("t.jsonl");
    let grow = |append: &[u8]| grown_by(&path, &old, append, &fold);
    // The real rows: the pending call's result (and what Claude Code writes around it), then
    // up to the next assistant row.
    let next = (at + 1..lines.len()).find(|&i| rows[i].as_ref().is_some_and(|r| r["type"] == "assistant")).unwrap();
    assert!(grow(&lines[at + 1..next].concat()).is_some(), "the pending call's result");
    assert!(grow(&lines[at + 1..=next].concat()).is_some(), "a turn");
    let row = |template: &Value, edit: &dyn Fn(&mut Value)| {
        let mut r = template.clone();
        r["uuid"] = json!("0000aaaa-0000-4000-8000-000000000001");
        r["parentUuid"] = tip["uuid"].clone();
        edit(&mut r);
        format!("{r}\n").into_bytes()
    };
    assert!(grow(&row(&result, &|_| {})).is_some(), "a result of the pending call");
    let text = json!([{"type": "text", "text": "and so on"}]);
    assert!(grow(&row(&tip, &|r| r["message"]["content"] = text.clone())).is_some(), "more of the tip's message");
    let older = rows[..at].iter().flatten().find(|r| r["type"] == "assistant").unwrap()["message"]["id"].clone();
    let first = rows.iter().flatten().find(|r| r["uuid"].is_string()).unwrap()["uuid"].clone();
    let cases: [(&str, Vec<u8>); 8] = [
        (
            "a row of an older message",
            row(&tip, &|r| (r["message"]["id"], r["message"]["content"]) = (older.clone(), text.clone())),
        ),
        (
            "a result of an answered call",
            row(&result, &|r| r["message"]["content"][0]["tool_use_id"] = json!(answered)),
        ),
        (
            "a compaction boundary",
            row(
                &tip,
                &|r| *r = json!({"type": "system", "subtype": "compact_boundary", "uuid": r["uuid"], "parentUuid": r["parentUuid"], "sessionId": r["sessionId"]}),
            ),
        ),
        ("a summary", row(&result, &|r| r["isCompactSummary"] = json!(true))),
        ("a branch off an older row", row(&result, &|r| r["parentUuid"] = first.clone())),
        ("an old uuid again", row(&result, &|r| r["uuid"] = first.clone())),
        ("a side-chain row", row(&result, &|r| r["isSidechain"] = json!(true))),
        ("a new call with an old id", row(&tip, &|r| r["message"]["id"] = json!("msg_new"))),
    ];
    for (what, append) in cases {
        assert!(grow(&append).is_none(), "{what}: grown");
    }
}
