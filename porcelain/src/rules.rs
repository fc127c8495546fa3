//! Fold policy, part three: the rules besides a profile's tail and block minimum (issue 31):
//! tools never folded, the last N tool uses kept, superseded reads folded even in the tail, and
//! a floor under which nothing is folded. Each comes from a flag, else the config file
//! ([`crate::config`]), else the profile's default ([`Rules::of`]).

use std::fmt;

use shake_plumbing::regions::thousands;
use shake_plumbing::Context;

use crate::config::{self, ConfigError, FloorValue};
use crate::profile::Profile;

/// The smallest fold worth writing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Floor {
    /// At least this many tokens.
    Tokens(u64),
    /// At least this share of the context, in hundredths of a percent (`15%` is 1,500).
    Share(u32),
}

impl Floor {
    /// Parses `4000`, `4,000` or `15%` / `12.5%`.
    pub fn parse(s: &str) -> Option<Floor> {
        let s = s.trim();
        if let Some(p) = s.strip_suffix('%') {
            let share: f64 = p.trim().parse().ok()?;
            return (0.0..=100.0).contains(&share).then(|| Floor::Share((share * 100.0).round() as u32));
        }
        s.replace(',', "").parse().ok().map(Floor::Tokens)
    }

    /// Whether a fold freeing `freed` tokens of a context of `context` tokens passes.
    pub fn passes(self, freed: u64, context: u64) -> bool {
        match self {
            Floor::Tokens(n) => freed >= n,
            // As claude-shake compares (a share of the context as a float), so its preset's floor
            // is the very rule it had.
            Floor::Share(bp) => freed as f64 >= f64::from(bp) / 10_000.0 * context as f64,
        }
    }
}

impl fmt::Display for Floor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Floor::Tokens(n) => write!(f, "{} tokens", thousands(n)),
            Floor::Share(bp) if bp % 100 == 0 => write!(f, "{}% of the context", bp / 100),
            Floor::Share(bp) => write!(f, "{}% of the context", f64::from(bp) / 100.0),
        }
    }
}

/// The rules a fold plans with, besides the profile.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Rules {
    /// Tool names whose results are never folded.
    pub exclude_tools: Vec<String>,
    /// The last N tool uses are protected besides the token tail (0: none).
    pub keep_tool_uses: usize,
    /// Fold a read whose file was read again, written or edited later, even inside the tail.
    pub superseded_reads: bool,
    /// Fold nothing unless the fold frees at least this much.
    pub floor: Option<Floor>,
    /// Fold the big arguments of a tool call whose result is folded or whose file was changed or
    /// read whole later (opt-in; `elide` only).
    pub fold_tool_inputs: bool,
}

impl Rules {
    /// The profile's defaults: superseded reads on, except for the peers' presets (`omp-auto`,
    /// `claude-shake`), which keep their peers' selection; claude-shake's floor of 15%.
    pub fn of(profile: Profile) -> Rules {
        let peer = matches!(profile, Profile::OmpAuto | Profile::ClaudeShake);
        Rules {
            exclude_tools: Vec::new(),
            keep_tool_uses: 0,
            superseded_reads: !peer,
            floor: (profile == Profile::ClaudeShake).then(|| {
                Floor::Share(
                    (shake_plumbing::regions::claude_shake::ClaudeShake::default().floor_share * 10_000.0).round()
                        as u32,
                )
            }),
            fold_tool_inputs: false,
        }
    }

    /// Tells whether results of tool `name` are never folded.
    pub fn excludes(&self, name: &str) -> bool {
        self.exclude_tools.iter().any(|t| t == name)
    }

    /// A short text naming every rule, for the meter's memo key (a reading is kept per rules).
    pub fn key(&self) -> String {
        format!(
            "x={} k={} s={} f={} i={}",
            self.exclude_tools.join("\u{1f}"),
            self.keep_tool_uses,
            self.superseded_reads,
            self.floor.map(|f| f.to_string()).unwrap_or_default(),
            self.fold_tool_inputs
        )
    }
}

impl Default for Rules {
    fn default() -> Rules {
        Rules::of(Profile::Default)
    }
}

/// The rules' flags (on `fold`, `meter` and `regions`): each wins over the config file.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct RuleArgs {
    /// Never fold results of this tool (repeat for more; default: none, or `exclude-tools` in the config)
    #[arg(long = "exclude-tool", value_name = "NAME")]
    pub exclude_tools: Vec<String>,
    /// Protect the last N tool uses besides the token tail (0: none)
    #[arg(long, value_name = "N")]
    pub keep_tool_uses: Option<usize>,
    /// Fold a read whose file was read again, written or edited later, even in the tail (default: true, but false for omp-auto and claude-shake)
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub superseded_reads: Option<bool>,
    /// Fold only when it frees at least N tokens or P% of the context (e.g. 4000, 15%)
    #[arg(long, value_name = "N|P%", value_parser = parse_floor)]
    pub floor: Option<Floor>,
    /// Fold the big arguments of a tool call whose result is folded or whose file was changed or read whole later (default: false)
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub fold_tool_inputs: Option<bool>,
}

/// Parses `--floor`.
fn parse_floor(s: &str) -> std::result::Result<Floor, String> {
    Floor::parse(s).ok_or_else(|| format!("{s:?} is neither a number of tokens nor a percentage like 15%"))
}

/// Resolves the rules: each flag, else the config file, else the profile's default.
pub fn resolve(ctx: &Context, args: &RuleArgs, profile: Profile) -> Result<Rules, ConfigError> {
    let loaded = config::load(ctx)?;
    let f = &loaded.config.fold;
    let mut rules = Rules::of(profile);
    if !args.exclude_tools.is_empty() {
        rules.exclude_tools = args.exclude_tools.clone();
    } else if let Some(tools) = &f.exclude_tools {
        rules.exclude_tools = tools.clone();
    }
    rules.keep_tool_uses = args.keep_tool_uses.or(f.keep_tool_uses).unwrap_or(rules.keep_tool_uses);
    rules.superseded_reads = args.superseded_reads.or(f.superseded_reads).unwrap_or(rules.superseded_reads);
    let from_config = match &f.floor {
        None => None,
        Some(FloorValue::Tokens(n)) => Some(Floor::Tokens(*n)),
        Some(FloorValue::Text(t)) => Some(Floor::parse(t).ok_or_else(|| ConfigError::BadFloor {
            file: loaded.files.first().cloned().unwrap_or_default(),
            floor: t.clone(),
        })?),
    };
    rules.floor = args.floor.or(from_config).or(rules.floor);
    rules.fold_tool_inputs = args.fold_tool_inputs.or(f.fold_tool_inputs).unwrap_or(rules.fold_tool_inputs);
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floors_parse_and_pass() {
        assert_eq!(Floor::parse("4,000"), Some(Floor::Tokens(4_000)));
        assert_eq!(Floor::parse("15%"), Some(Floor::Share(1_500)));
        assert_eq!(Floor::parse("12.5 %"), Some(Floor::Share(1_250)));
        assert_eq!(Floor::parse("150%"), None);
        assert_eq!(Floor::parse("lots"), None);
        assert!(Floor::Tokens(4_000).passes(4_000, 1));
        assert!(!Floor::Tokens(4_000).passes(3_999, 1));
        assert!(Floor::Share(1_500).passes(15, 100) && !Floor::Share(1_500).passes(14, 100));
        assert_eq!(Floor::Share(1_250).to_string(), "12.5% of the context");
        assert_eq!(Floor::Tokens(4_000).to_string(), "4,000 tokens");
    }

    #[test]
    fn peers_presets_keep_their_selection() {
        assert!(Rules::of(Profile::Default).superseded_reads);
        assert!(!Rules::of(Profile::ClaudeShake).superseded_reads);
        assert_eq!(Rules::of(Profile::ClaudeShake).floor, Some(Floor::Share(1_500)));
        assert_eq!(Rules::of(Profile::Aggressive).floor, None);
    }
}
