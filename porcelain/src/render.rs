//! Rendering for people: counts in words, thousands separators, and colour when the binary's
//! choice allows it (`--color`, a terminal, the environment: [`ColorChoice`]).

use shake_plumbing::regions::RegionKind;
use std::io::Write;
use std::path::Path;

use anstyle::{AnsiColor, Style};
use shake_plumbing::hosts::short_path;
use shake_plumbing::rev::Rev;
use shake_plumbing::Context;

pub use shake_plumbing::regions::thousands;

/// Returns `1 tool result`, `43 tool results`, `2 entries`.
pub fn plural(n: usize, noun: &str) -> String {
    match (n, noun.strip_suffix('y')) {
        (1, _) => format!("1 {noun}"),
        (_, Some(stem)) => format!("{n} {stem}ies"),
        _ => format!("{n} {noun}s"),
    }
}

/// Joins non-zero counts: `43 tool results + 1 block`; empty when all are zero.
pub fn counts(parts: &[(usize, &str)]) -> String {
    parts.iter().filter(|(n, _)| *n > 0).map(|(n, noun)| plural(*n, noun)).collect::<Vec<_>>().join(" + ")
}

/// What a fold folds, counted per kind with [`counts`]: `157 tool results (44 superseded reads)
/// + 1 block` (a superseded read is a tool result folded whole, and counted with them).
pub fn region_counts(count: impl Fn(RegionKind) -> usize, kinds: &[RegionKind]) -> String {
    let mut parts = Vec::new();
    for &kind in kinds {
        let n = count(kind);
        let part = match kind {
            RegionKind::ToolResult => {
                let stale =
                    if kinds.contains(&RegionKind::SupersededRead) { count(RegionKind::SupersededRead) } else { 0 };
                let all = plural(n + stale, "tool result");
                match stale {
                    0 => all,
                    _ => format!("{all} ({})", plural(stale, "superseded read")),
                }
            }
            RegionKind::SupersededRead if kinds.contains(&RegionKind::ToolResult) => continue,
            RegionKind::SupersededRead => plural(n, "superseded read"),
            RegionKind::Block => plural(n, "block"),
            RegionKind::Thinking => plural(n, "thinking block"),
            RegionKind::Image => plural(n, "image"),
            RegionKind::ToolInput => plural(n, "tool input"),
        };
        if !part.starts_with("0 ") {
            parts.push(part);
        }
    }
    parts.join(" + ")
}

/// The line a command for people starts with when the command line did not name the session's
/// file (the current session here, pi's or another host's, or a session id): `Session --home-dev-p--/2026-…_01f2….jsonl`,
/// the path short (under pi's sessions folder, else under `~`). `None` when a file was named.
pub fn session_line(ctx: &Context, rev: &Rev, path: &Path) -> Option<String> {
    let how = match rev.session.as_deref() {
        None => match shake_plumbing::rev::default_choice(ctx) {
            Ok((default, kind)) if default == path => format!(" ({}'s current session here)", kind.title()),
            _ => " (the current session here)".to_string(),
        },
        Some(s) if !Path::new(s).is_file() => String::new(),
        Some(_) => return None,
    };
    Some(format!("Session {}{how}", short_path(ctx, path)))
}

/// Writes [`session_line`], dimmed, when there is one.
pub fn write_session_line(out: &mut dyn Write, ctx: &Context, rev: &Rev, path: &Path) -> std::io::Result<()> {
    match session_line(ctx, rev, path) {
        Some(line) => writeln!(out, "{}", Paint::new(ctx).dim(&line)),
        None => Ok(()),
    }
}

/// The arguments of the commands that only read a leaf: which one, the tokenizer, JSON or not.
#[derive(clap::Args, Debug)]
pub struct ReadArgs {
    #[command(flatten)]
    pub rev: shake_plumbing::rev::RevArgs,
    /// Tokenizer for every token figure [default: Claude's own for the session's model when it is Claude, else o200k]
    #[arg(long, value_enum)]
    pub tokenizer: Option<shake_plumbing::tokens::TokenizerName>,
    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,
}

/// Styles text when colour is on.
#[derive(Clone, Copy, Debug)]
pub struct Paint {
    on: bool,
}

/// `--color`: when output for people is coloured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, as the environment allows (`NO_COLOR`, `CLICOLOR`, `CLICOLOR_FORCE`,
    /// `TERM=dumb`).
    #[default]
    Auto,
    /// Always, even into a pipe or a file, whatever the environment says.
    Always,
    /// Never.
    Never,
}

/// What the environment says about colour, by the usual conventions
/// (<https://no-color.org>, <https://bixense.com/clicolors/>).
#[derive(Clone, Copy, Debug, Default)]
pub struct ColorEnv {
    /// `NO_COLOR` set and not empty: off.
    pub no_color: bool,
    /// `CLICOLOR=0`: off.
    pub clicolor_off: bool,
    /// `CLICOLOR_FORCE` set and not empty: on, even into a pipe; beats the two above.
    pub clicolor_force: bool,
    /// `TERM=dumb`: a terminal that draws no colour.
    pub dumb: bool,
}

impl ColorEnv {
    /// Reads the process's environment.
    pub fn from_env() -> ColorEnv {
        ColorEnv {
            no_color: anstyle_query::no_color(),
            clicolor_off: anstyle_query::clicolor() == Some(false),
            clicolor_force: anstyle_query::clicolor_force(),
            dumb: std::env::var_os("TERM").is_some_and(|t| t == "dumb"),
        }
    }
}

impl ColorChoice {
    /// Decides colour for output going to a terminal or not. An explicit `--color` beats the
    /// environment (a flag is a per-instance choice, which no-color.org puts above `NO_COLOR`);
    /// under `auto`, `CLICOLOR_FORCE` turns colour on, else `NO_COLOR`, `CLICOLOR=0` and
    /// `TERM=dumb` turn it off, else it follows the terminal.
    pub fn decide(self, terminal: bool, env: ColorEnv) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto if env.clicolor_force => true,
            ColorChoice::Auto => terminal && !(env.no_color || env.clicolor_off || env.dumb),
        }
    }
}

impl Paint {
    /// Colour as the context says (decided once by the binary).
    pub fn new(ctx: &shake_plumbing::Context) -> Paint {
        Paint { on: ctx.color }
    }

    /// Tells whether colour is on.
    pub fn is_on(&self) -> bool {
        self.on
    }

    fn style(&self, style: Style, text: &str) -> String {
        if self.on {
            format!("{style}{text}{style:#}")
        } else {
            text.to_string()
        }
    }

    /// Bold, for the figure that matters.
    pub fn strong(&self, text: &str) -> String {
        self.style(Style::new().bold(), text)
    }

    /// Dim, for ids and secondary detail.
    pub fn dim(&self, text: &str) -> String {
        self.style(Style::new().dimmed(), text)
    }

    /// Bold red, for what a search matched (as grep and ripgrep colour it).
    pub fn matched(&self, text: &str) -> String {
        self.style(Style::new().bold().fg_color(Some(AnsiColor::Red.into())), text)
    }

    /// Yellow, for notices the user must act on.
    pub fn warn(&self, text: &str) -> String {
        self.style(Style::new().fg_color(Some(AnsiColor::Yellow.into())), text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_in_words() {
        assert_eq!(counts(&[(43, "tool result"), (1, "block")]), "43 tool results + 1 block");
        assert_eq!(counts(&[(0, "tool result"), (2, "block")]), "2 blocks");
        assert_eq!(counts(&[(0, "x")]), "");
        assert_eq!(plural(2, "entry"), "2 entries");
        let p = Paint { on: false };
        assert_eq!(p.strong("a"), "a");
        assert_eq!(Paint { on: true }.strong("a"), "\u{1b}[1ma\u{1b}[0m");
    }

    #[test]
    fn a_flag_beats_the_environment_and_auto_follows_the_conventions() {
        use ColorChoice::*;
        let plain = ColorEnv::default();
        assert!(Auto.decide(true, plain) && !Auto.decide(false, plain), "auto follows the terminal");
        let offs = [
            ColorEnv { no_color: true, ..plain },
            ColorEnv { clicolor_off: true, ..plain },
            ColorEnv { dumb: true, ..plain },
        ];
        for env in offs {
            assert!(!Auto.decide(true, env), "{env:?} turns auto off");
            assert!(Always.decide(false, env), "--color always beats {env:?}");
            assert!(!Never.decide(true, env));
        }
        for env in offs.iter().map(|e| ColorEnv { clicolor_force: true, ..*e }) {
            assert!(Auto.decide(false, env), "CLICOLOR_FORCE turns auto on: {env:?}");
            assert!(!Never.decide(true, env), "--color never beats CLICOLOR_FORCE");
        }
    }
}
