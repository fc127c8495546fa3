//! The words the help and the man pages share beyond the flags: each command for people's
//! examples, and `shake.1`'s ENVIRONMENT, EXIT STATUS and FILES. One source, so `shake fold
//! --help` and `man shake-fold` show the same examples.

/// Examples of a command for people: `(command line, what it does)`.
pub fn examples(command: &str) -> &'static [(&'static str, &'static str)] {
    match command {
        "shake" => &[
            ("shake meter", "how much a fold would free in the session you are in (pi, Claude Code or oh-my-pi)"),
            ("shake fold", "fold it; on Claude Code, a fork to resume"),
            ("shake status", "what is folded now"),
            ("shake undo", "put it all back"),
        ],
        "meter" => &[
            ("shake meter", "how much a fold would free in the session you are in"),
            ("shake meter --json", "the same as one JSON object, for a script"),
            ("shake meter --statusline", "the one-line label for Claude Code's status line"),
        ],
        "fold" => &[
            ("shake fold --example", "fold a private copy of the bundled session: a safe first try"),
            ("shake fold --dry-run", "what a fold of the session you are in would do, changing nothing"),
            ("shake fold", "fold it: old tool output and big blocks become short placeholders"),
            ("shake fold --scope thinking", "drop the thinking blocks instead"),
            ("shake fold SESSION --profile aggressive", "fold a named session, keeping only the last 2,000 tokens"),
        ],
        "undo" => &[
            ("shake undo", "put back everything folded in the session you are in"),
            ("shake undo --last", "put back only the most recent fold"),
        ],
        "drop" => &[
            (
                "shake drop 2ae52f18",
                "remove the fork a fold of a Claude Code transcript wrote (its bytes stay in the store)",
            ),
            ("shake drop --dry-run 2ae52f18", "say whether it would be dropped, and why not"),
        ],
        "status" => &[
            ("shake status", "what is folded now, what it frees, and folds stranded on other branches"),
            ("shake status --json", "the same for a script"),
        ],
        "log" => &[
            ("shake log", "the folds and undos on the current branch, newest first"),
            ("shake log --all", "on every branch of the file"),
        ],
        "show" => &[
            ("shake show", "the context the model sees now, entry by entry"),
            ("shake show SESSION:ID", "one entry, or one fold's log entry with its targets"),
        ],
        "pi-extension" => &[("shake pi-extension --install", "put shake's /shake command and footer inside pi")],
        "completions" => &[("shake completions bash > ~/.local/share/bash-completion/completions/shake", "")],
        "man" => &[("shake man --dir ~/.local/share/man/man1", "install shake.1 and one page per command")],
        _ => &[],
    }
}

/// The examples as the help shows them after the flags (`--help` only), or `None`: each
/// command line, then what it does below it (a line of its own, so no terminal wraps them).
pub fn examples_help(command: &str) -> Option<String> {
    let examples = examples(command);
    let lines = examples.iter().map(|(line, what)| match what.is_empty() {
        true => format!("  {line}"),
        false => format!("  {line}\n      {what}"),
    });
    (!examples.is_empty()).then(|| format!("Examples:\n{}", lines.collect::<Vec<_>>().join("\n")))
}

/// Every environment variable shake reads, with what it does.
pub const ENVIRONMENT: &[(&str, &str)] = &[
    ("SHAKE_DIR", "The store folder (after --store). See FILES."),
    ("SHAKE_PAGER, PAGER, LESS", "The pager for long output (log, show, diff, sessions) on a terminal; else less."),
    ("SHAKE_QUIET", "Set: no warnings on standard error."),
    ("SHAKE_MACHINE", "The name this store's machine goes by on remotes, read once, when the store first pushes or fetches; else the host name (docs/remotes.md)."),
    (
        "AWS_*, GOOGLE_*, AZURE_*",
        "A remote's credentials and endpoint, read by each service's own client (object_store's from_env), never stored by shake (docs/remotes.md).",
    ),
    ("SHAKE_TIMESTAMP", "The time now: written into appended entries (reproducible files), and the meter's clock for the prompt cache's lifetime (a fixed now for its verdict)."),
    (
        "NO_COLOR, CLICOLOR, CLICOLOR_FORCE, TERM",
        "Colour under --color auto: NO_COLOR, CLICOLOR=0 and TERM=dumb turn it off, CLICOLOR_FORCE on.",
    ),
    ("HOME", "The home folder; when unset, the account database's."),
    ("XDG_DATA_HOME", "The data folder whose shake/ holds the store of a user without pi."),
    (
        "PI_CODING_AGENT_DIR",
        "pi's agent folder (default ~/.pi/agent): its sessions/, settings.json, and the store's default place.",
    ),
    ("PI_CODING_AGENT_SESSION_DIR", "A flat folder pi keeps every session in."),
    ("PI_CONFIG_DIR", "oh-my-pi's configuration folder name under home (default .omp)."),
    ("PI_TOKENIZER_ACCURATE", "Set to 1, as for oh-my-pi: its meter counts with o200k."),
    ("CLAUDE_CONFIG_DIR", "Claude Code's folder (default ~/.claude): its projects/ hold the transcripts."),
    ("CLAUDE_CODE_DISABLE_PRECOMPACT_SKIP", "As for Claude Code: no size gate when reading a long transcript."),
    ("CLAUDE_CODE_ENABLE_TODO_TOOLS", "As for Claude Code: its task reminders are sent to every model."),
];

/// The exit codes (`docs/plumbing.md`, "Exit codes").
pub const EXIT_STATUS: &[(&str, &str)] = &[
    ("0", "Success; for diff and audit: no difference."),
    ("1", "An error of the input (a bad revision, a file no host reads, a refusal); for diff and audit: a difference."),
    ("2", "A usage error; for diff and audit: any error."),
    ("3", "The store is damaged (fsck names what)."),
    ("4", "The system refused: permission denied, disk full, an I/O error."),
];

/// Where shake keeps things (`docs/format.md`, "Location").
pub const FILES: &[(&str, &str)] = &[
    (
        "~/.pi/agent/shake/",
        "The store of a pi user: packs of every session version, refs, caches. Else $XDG_DATA_HOME/shake/ \
         (~/.local/share/shake/; ~/Library/Application Support/shake/ on macOS).",
    ),
    ("~/.pi/agent/sessions/", "pi's sessions, read and appended to."),
    ("~/.claude/projects/", "Claude Code's transcripts, read; a fold writes a new one beside its source."),
    ("~/.omp/agent/sessions/", "oh-my-pi's sessions, read only."),
];

#[cfg(test)]
mod tests {
    /// Every command for people has examples, and each example runs a command that exists.
    #[test]
    fn every_command_for_people_has_examples_of_real_commands() {
        let cli = crate::cli::command();
        for name in crate::cli::FOR_PEOPLE {
            let examples = super::examples(name);
            assert!(!examples.is_empty(), "{name} has no examples");
            for (line, _) in examples {
                let words: Vec<&str> = line.split_whitespace().collect();
                assert_eq!(words.get(..2), Some(&["shake", name][..]), "{line}");
                assert!(cli.find_subcommand(name).is_some(), "{line}");
            }
        }
    }

    /// Every variable the code reads is in ENVIRONMENT (tests' own variables aside).
    #[test]
    fn every_variable_read_is_documented() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let listed: String = super::ENVIRONMENT.iter().map(|(names, _)| format!("{names}, ")).collect();
        let mut missing = Vec::new();
        for dir in ["plumbing/src", "porcelain/src", "src"] {
            for entry in walkdir::WalkDir::new(root.join(dir)).into_iter().filter_map(Result::ok) {
                let Ok(text) = std::fs::read_to_string(entry.path()) else { continue };
                let reads = ["var_os(\"", "var(\"", " env(\""]
                    .map(|p| text.match_indices(p).map(|(at, _)| at).collect::<Vec<_>>());
                for at in reads.concat() {
                    let rest = &text[at..];
                    let name = &rest[rest.find('"').unwrap() + 1..];
                    let name = &name[..name.find('"').unwrap_or(0)];
                    let ours = name.chars().all(|c| c.is_ascii_uppercase() || c == '_') && !name.is_empty();
                    if ours
                        && !name.starts_with("SHAKE_TEST")
                        && name != "SHAKE_BLESS"
                        && !listed.contains(&format!("{name},"))
                    {
                        missing.push(format!("{}: {name}", entry.path().display()));
                    }
                }
            }
        }
        assert!(missing.is_empty(), "variables read but not in manual::ENVIRONMENT: {missing:?}");
    }
}
