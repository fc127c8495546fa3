//! The shake config file (TOML): the fold rules (`[fold]`) and the prices the meter reads when
//! a session records none (`[prices.<model family>]`). Two places, the project's over the
//! user's, key by key: `<cwd>/.shake.toml`, then `<home>/.config/shake/config.toml`. Flags win
//! over both, and both over the profile's defaults (`docs/folding.md`, "Rules").

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use shake_plumbing::Context;

/// The `[fold]` table: every key optional (absent: the next place, else the profile's default).
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct FoldConfig {
    /// Tools whose results are never folded.
    pub exclude_tools: Option<Vec<String>>,
    /// Tool uses protected from the newest back, besides the token tail.
    pub keep_tool_uses: Option<usize>,
    /// Fold superseded reads, even inside the tail.
    pub superseded_reads: Option<bool>,
    /// The floor: a number of tokens, or a share of the context as `"15%"`.
    pub floor: Option<FloorValue>,
    /// Fold the big arguments of tool calls whose result is folded or whose file changed later.
    pub fold_tool_inputs: Option<bool>,
    /// The priced meter's horizon: a fold that pays back within this many turns is worth it.
    pub payback_turns: Option<u64>,
}

/// A floor as written: `4000` or `"15%"` (or `"4000"`).
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(untagged)]
pub enum FloorValue {
    /// A number of tokens.
    Tokens(u64),
    /// Tokens or a percentage, as text.
    Text(String),
}

/// One model family's prices, in US dollars per million tokens.
#[derive(Clone, Copy, Debug, PartialEq, serde::Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct PriceConfig {
    /// Uncached input.
    pub input: f64,
    /// Writing the cache (5-minute lifetime).
    pub cache_write: f64,
    /// Reading the cache.
    pub cache_read: f64,
    /// Writing the cache with the 1-hour lifetime (default: twice the input price).
    pub cache_write_1h: Option<f64>,
}

/// The `[scan]` table: what the secret scan allows (`docs/search.md`, "The secret scan").
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ScanConfig {
    /// Rule ids (`aws-access-token`) and fingerprints (`fp:<12 hex>`) of secrets to let through.
    #[serde(default)]
    pub allow: Vec<String>,
}

/// The whole file.
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Config {
    /// The fold rules.
    #[serde(default)]
    pub fold: FoldConfig,
    /// Prices per model family (a prefix of the model's name, e.g. `claude-sonnet-4`).
    #[serde(default)]
    pub prices: BTreeMap<String, PriceConfig>,
    /// The secret scan's allow list.
    #[serde(default)]
    pub scan: ScanConfig,
}

/// The config in force: the project's keys over the user's, and the files read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Loaded {
    /// The merged config.
    pub config: Config,
    /// The files that set something, project first.
    pub files: Vec<PathBuf>,
}

/// The two places, project first.
pub fn places(ctx: &Context) -> [PathBuf; 2] {
    [ctx.cwd.join(".shake.toml"), ctx.home.join(".config/shake/config.toml")]
}

/// Reads the config files: a missing file sets nothing; an unreadable or invalid one is an
/// error naming it (and, for TOML, the line).
pub fn load(ctx: &Context) -> Result<Loaded, ConfigError> {
    let mut loaded = Loaded::default();
    // The user's first, the project's over it.
    for path in places(ctx).iter().rev() {
        let Some(config) = read(path)? else { continue };
        let fold = &mut loaded.config.fold;
        let f = config.fold;
        fold.exclude_tools = f.exclude_tools.or(fold.exclude_tools.take());
        fold.keep_tool_uses = f.keep_tool_uses.or(fold.keep_tool_uses);
        fold.superseded_reads = f.superseded_reads.or(fold.superseded_reads);
        fold.floor = f.floor.or(fold.floor.take());
        fold.payback_turns = f.payback_turns.or(fold.payback_turns);
        fold.fold_tool_inputs = f.fold_tool_inputs.or(fold.fold_tool_inputs);
        loaded.config.prices.extend(config.prices);
        // Both places' allow lists add up: the user's and the project's.
        loaded.config.scan.allow.extend(config.scan.allow);
        loaded.files.insert(0, path.clone());
    }
    Ok(loaded)
}

/// Reads one config file (`None`: there is none).
fn read(path: &Path) -> Result<Option<Config>, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(ConfigError::Unreadable { path: path.to_path_buf(), source }),
    };
    toml::from_str(&text).map(Some).map_err(|source| ConfigError::Invalid { path: path.to_path_buf(), source })
}

/// Why the settings that choose the fold's rules cannot be used: the config files
/// (`.shake.toml`, `~/.config/shake/config.toml`) and the profile named in pi's settings. The
/// commands give the exit code and the hints (`cmd/command_error.rs`).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A config file is there but cannot be read.
    #[error("{}: cannot read the config file: {source}", path.display())]
    Unreadable {
        /// The config file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A config file is not TOML, or has a key or a value shake does not know.
    #[error("{}: not a valid shake config: {}", path.display(), one_line(source))]
    Invalid {
        /// The config file.
        path: PathBuf,
        /// The TOML reader's words (with the line).
        source: toml::de::Error,
    },
    /// The config's `floor` is text that is not a floor.
    #[error("{}: floor {floor:?} is neither a number of tokens nor a percentage like \"15%\"", file.display())]
    BadFloor {
        /// The config file that set it (empty if none is known).
        file: PathBuf,
        /// The floor written.
        floor: String,
    },
    /// A settings file names a profile shake does not have.
    #[error("{}: unknown shake profile {name}", path.display())]
    UnknownProfile {
        /// The settings file.
        path: PathBuf,
        /// The value found, as JSON.
        name: String,
    },
}

/// The TOML reader's message on one line (it spans several, with a caret under the column).
fn one_line(e: &toml::de::Error) -> String {
    e.to_string().replace('\n', " ").trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::sandbox_ctx as ctx;

    #[test]
    fn the_project_overrides_the_user_key_by_key() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path());
        assert_eq!(load(&c).unwrap(), Loaded::default());
        std::fs::create_dir_all(dir.path().join(".config/shake")).unwrap();
        std::fs::create_dir_all(dir.path().join("proj")).unwrap();
        std::fs::write(
            dir.path().join(".config/shake/config.toml"),
            "[fold]\nkeep-tool-uses = 3\nfloor = \"15%\"\n[prices.claude-sonnet-4]\ninput = 3\ncache-write = 3.75\ncache-read = 0.3\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("proj/.shake.toml"), "[fold]\nfloor = 4000\n").unwrap();
        let l = load(&c).unwrap();
        assert_eq!(l.config.fold.keep_tool_uses, Some(3));
        assert_eq!(l.config.fold.floor, Some(FloorValue::Tokens(4000)));
        assert_eq!(l.config.prices["claude-sonnet-4"].cache_read, 0.3);
        assert_eq!(l.files.len(), 2);
    }

    #[test]
    fn a_bad_file_is_named_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proj")).unwrap();
        std::fs::write(dir.path().join("proj/.shake.toml"), "[fold]\nkeep-tool-uses = 3\nwild = 1\n").unwrap();
        let e = load(&ctx(dir.path())).unwrap_err().to_string();
        assert!(e.contains(".shake.toml: not a valid shake config") && e.contains("line 3"), "{e}");
    }
}
