//! Keeps `docs/plumbing.md` covering every plumbing command: each command in the clap tree (each
//! subcommand of a group, like `audit fork`) that is not for people has a "## `shake NAME`"
//! section, and every section names a command that exists or is marked `<!-- pending: … -->`.

use std::collections::BTreeSet;
use std::path::Path;

use crate::cli::FOR_PEOPLE;

/// Every visible command path (`diff`, `audit fork`), groups replaced by their subcommands.
fn commands() -> BTreeSet<String> {
    fn walk(cmd: &clap::Command, prefix: &str, out: &mut BTreeSet<String>) {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
            let name = format!("{prefix}{}", sub.get_name());
            if sub.has_subcommands() {
                walk(sub, &format!("{name} "), out);
            } else {
                out.insert(name);
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(&crate::cli::command(), "", &mut out);
    out
}

/// The documented command names, each with whether its section is marked pending.
fn sections(doc: &str) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = Vec::new();
    for line in doc.lines() {
        if let Some(name) = line.strip_prefix("## `shake ").and_then(|rest| rest.strip_suffix('`')) {
            out.push((name.to_string(), false));
        } else if line.starts_with("<!-- pending:") {
            if let Some(last) = out.last_mut() {
                last.1 = true;
            }
        }
    }
    out
}

#[test]
fn docs_plumbing_md_has_a_section_per_plumbing_command() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/plumbing.md")).unwrap();
    let sections = sections(&doc);
    let documented: BTreeSet<&str> = sections.iter().map(|(n, _)| n.as_str()).collect();
    let commands = commands();
    let missing: Vec<&String> =
        commands.iter().filter(|c| !FOR_PEOPLE.contains(&c.as_str()) && !documented.contains(c.as_str())).collect();
    assert!(
        missing.is_empty(),
        "plumbing commands without a \"## `shake NAME`\" section in docs/plumbing.md: {missing:?}"
    );
    let stale: Vec<&str> =
        sections.iter().filter(|(n, pending)| !pending && !commands.contains(n)).map(|(n, _)| n.as_str()).collect();
    assert!(stale.is_empty(), "docs/plumbing.md documents commands that do not exist: {stale:?}");
}

#[test]
fn one_list_of_commands_for_people_in_the_help_and_the_docs() {
    // --help lists them first, in the list's order.
    let cli = crate::cli::command();
    let names: Vec<&str> = cli.get_subcommands().map(|s| s.get_name()).collect();
    assert_eq!(&names[..FOR_PEOPLE.len()], FOR_PEOPLE, "shake --help lists the commands for people first");
    // docs/plumbing.md's opening names the same ones.
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/plumbing.md")).unwrap();
    let listed = doc.split("The commands for people (").nth(1).and_then(|r| r.split(')').next()).unwrap_or_default();
    let listed: Vec<&str> = listed.split(", ").map(|n| n.trim_matches('`')).collect();
    assert_eq!(listed, FOR_PEOPLE, "docs/plumbing.md: \"The commands for people (…)\"");
}

#[test]
fn sections_and_commands_are_read_as_documented() {
    let doc = "## `shake a`\ntext\n## `shake b c`\n<!-- pending: x -->\n## Other\n";
    assert_eq!(sections(doc), vec![("a".to_string(), false), ("b c".to_string(), true)]);
    let commands = commands();
    assert!(commands.contains("audit fork") && commands.contains("diff"));
    assert!(!commands.contains("audit") && !commands.contains("generate-session"));
}
