//! Rendering for people: counts in words, thousands separators, and colour only when stdout is a
//! terminal and `NO_COLOR` is unset.

use std::io::IsTerminal;

use anstyle::{AnsiColor, Style};

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

impl Paint {
    /// Colour for stdout: on only for a terminal without `NO_COLOR`.
    pub fn stdout() -> Paint {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Paint { on: !no_color && std::io::stdout().is_terminal() }
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
    }
}
