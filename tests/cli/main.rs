//! The one integration-test binary: each module tests one command or one property end to end,
//! running the real `shake` binary against a private store and pi session folder.

mod append;
mod audit;
mod bad_input;
mod claude_audit;
mod claude_content;
mod claude_fold;
mod claude_fork_live;
mod claude_host;
mod claude_in_place;
mod claude_live;
mod claude_project;
mod claude_real;
mod claude_statusline;
mod claude_tokenizer;
mod claude_tokens;
mod conformance;
mod default_tokenizer;
mod diff;
mod drop;
mod env;
mod export;
mod family;
mod fault_claude;
mod fault_pi;
mod fault_reads;
mod fault_remote;
mod fault_store;
mod fault_study;
mod floor;
mod fold;
mod generate;
mod grep;
mod home;
mod host_plan;
mod inspect;
mod lifecycle;
mod messages;
mod meter;
mod omp;
mod omp_extension;
mod omp_host;
mod omp_undo;
mod pi_live;
mod pipe;
mod price;
mod project;
mod readme;
mod recent;
mod remote;
mod remote_garage;
mod restore;
mod rules;
mod scan;
mod seam;
mod sessions;
mod store;
mod store_damage;
mod synthetic;
mod terminal;
mod tokens;
mod tree;

/// `27838` → `27,838`, as shake prints counts.
pub fn render_thousands(n: u64) -> String {
    shake_porcelain::render::thousands(n)
}

/// Every `.rs` file in `tests/cli/` is a module of this binary (`autotests = false`: a file
/// nobody registered would never run), and every registered module has its file.
#[test]
fn every_test_file_is_part_of_the_test_binary() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli");
    let main = std::fs::read_to_string(dir.join("main.rs")).unwrap();
    let declared: std::collections::BTreeSet<String> =
        main.lines().filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';').map(str::to_string)).collect();
    let files: std::collections::BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".rs").map(str::to_string))
        .filter(|n| n != "main")
        .collect();
    assert_eq!(files, declared, "tests/cli/*.rs and the mod lines of tests/cli/main.rs differ");
    // Other test folders are reached through this binary too: no stray Rust test files.
    let tests = dir.parent().unwrap();
    let stray: Vec<_> = std::fs::read_dir(tests)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    assert!(stray.is_empty(), "Rust files outside tests/cli are never compiled: {stray:?}");
}
