//! Rendering for people: counts in words, thousands separators, and colour when the binary's
//! choice allows it (`--color`, a terminal, `NO_COLOR`: [`ColorChoice`]).

use std::io::Write;
use std::path::Path;

use anstyle::{AnsiColor, Style};
use shake_plumbing::output::short_path;
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
    /// Tokenizer for every token figure
    #[arg(long, value_enum, default_value_t = shake_plumbing::tokens::DEFAULT_TOKENIZER)]
    pub tokenizer: shake_plumbing::tokens::TokenizerName,
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
    /// On a terminal, unless `NO_COLOR` is set.
    #[default]
    Auto,
    /// Always, even into a pipe or a file (but never with `NO_COLOR`).
    Always,
    /// Never.
    Never,
}

impl ColorChoice {
    /// Decides colour for output going to a terminal or not; `NO_COLOR` (set and not empty)
    /// turns it off whatever the choice (<https://no-color.org>).
    pub fn decide(self, terminal: bool, no_color: bool) -> bool {
        !no_color
            && match self {
                ColorChoice::Auto => terminal,
                ColorChoice::Always => true,
                ColorChoice::Never => false,
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
    fn no_color_wins_and_auto_follows_the_terminal() {
        use ColorChoice::*;
        let table = [(Auto, true, false, true), (Auto, false, false, false), (Always, false, false, true)];
        for (choice, terminal, no_color, on) in table {
            assert_eq!(choice.decide(terminal, no_color), on, "{choice:?} terminal={terminal}");
        }
        for choice in [Auto, Always, Never] {
            assert!(!choice.decide(true, true), "NO_COLOR turns {choice:?} off");
        }
        assert!(!Never.decide(true, false));
    }
}
