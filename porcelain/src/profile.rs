//! Fold policy, part two: the profiles (a tail to protect and a block minimum), and which one a
//! fold uses and where that choice came from: `--profile`, else
//! `"shake": {"profile": …}` in `<cwd>/.pi/settings.json`, else in `<agent dir>/settings.json`,
//! else the built-in default.

use std::fmt;
use std::path::{Path, PathBuf};

use shake_plumbing::Context;

use crate::config::ConfigError;

/// The built-in profiles (DESIGN §5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Profile {
    /// Protect the last 4,000 tokens; blocks of 400 tokens or more
    Default,
    /// Protect the last 8,000 tokens; blocks of 800 tokens or more
    Conservative,
    /// Protect the last 2,000 tokens; blocks of 200 tokens or more
    Aggressive,
    /// oh-my-pi's automatic shake: protect the last 16,000 tokens; blocks of 400 tokens or more
    OmpAuto,
    /// claude-shake's selection: keep the newest 16,000 tokens of tool output; fold tool results over 2,000 characters, only when that frees 15% of the context
    ClaudeShake,
}

impl Profile {
    /// Returns the profile's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Default => "default",
            Profile::Conservative => "conservative",
            Profile::Aggressive => "aggressive",
            Profile::OmpAuto => "omp-auto",
            Profile::ClaudeShake => "claude-shake",
        }
    }

    /// Parses a profile name (as in settings files).
    pub fn parse(s: &str) -> Option<Profile> {
        [Profile::Default, Profile::Conservative, Profile::Aggressive, Profile::OmpAuto, Profile::ClaudeShake]
            .into_iter()
            .find(|p| p.as_str() == s)
    }

    /// The protect window, in tokens, measured from the newest entry back (claude-shake's counts
    /// tool-result text only, at 0.34 tokens a character: [`shake_plumbing::regions::claude_shake`]).
    pub fn tail(self) -> u64 {
        match self {
            Profile::Default => 4_000,
            Profile::Conservative => 8_000,
            Profile::Aggressive => 2_000,
            Profile::OmpAuto | Profile::ClaudeShake => 16_000,
        }
    }

    /// The smallest block (fenced or XML) worth folding, in tokens.
    pub fn block_min(self) -> u64 {
        match self {
            Profile::Default => 400,
            Profile::Conservative => 800,
            Profile::Aggressive => 200,
            Profile::OmpAuto => 400,
            // claude-shake folds whole tool results only: no block is small enough.
            Profile::ClaudeShake => u64::MAX,
        }
    }
}

/// Where the profile came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProfileSource {
    /// `--profile` on the command line.
    Flag,
    /// The project's `.pi/settings.json`.
    Project(PathBuf),
    /// pi's agent-directory `settings.json`.
    Agent(PathBuf),
    /// Nothing set it.
    BuiltIn,
}

impl ProfileSource {
    /// The source's name in JSON output: `flag`, `project`, `agent` or `builtin`.
    pub fn key(&self) -> &'static str {
        match self {
            ProfileSource::Flag => "flag",
            ProfileSource::Project(_) => "project",
            ProfileSource::Agent(_) => "agent",
            ProfileSource::BuiltIn => "builtin",
        }
    }
}

impl fmt::Display for ProfileSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProfileSource::Flag => "--profile",
            ProfileSource::Project(_) => "settings.json (project)",
            ProfileSource::Agent(_) => "settings.json (agent directory)",
            ProfileSource::BuiltIn => "built-in",
        })
    }
}

/// Resolves the profile: the flag, else the settings files, else the default.
pub fn resolve(ctx: &Context, flag: Option<Profile>) -> Result<(Profile, ProfileSource), ConfigError> {
    if let Some(p) = flag {
        return Ok((p, ProfileSource::Flag));
    }
    let project = ctx.cwd.join(".pi/settings.json");
    if let Some(p) = from_settings(ctx, &project)? {
        return Ok((p, ProfileSource::Project(project)));
    }
    let agent = ctx.agent_dir.join("settings.json");
    if let Some(p) = from_settings(ctx, &agent)? {
        return Ok((p, ProfileSource::Agent(agent)));
    }
    Ok((Profile::Default, ProfileSource::BuiltIn))
}

/// Reads `shake.profile` from a settings file. A missing or unreadable file sets nothing (pi
/// itself tolerates a broken settings file); an unknown profile name is an error.
fn from_settings(ctx: &Context, path: &Path) -> Result<Option<Profile>, ConfigError> {
    let Ok(text) = std::fs::read_to_string(path) else { return Ok(None) };
    let value: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            ctx.warn(format_args!("{}: not valid JSON ({e}); its shake settings are ignored", path.display()));
            return Ok(None);
        }
    };
    let Some(name) = value.get("shake").and_then(|s| s.get("profile")) else { return Ok(None) };
    let parsed = name.as_str().and_then(Profile::parse);
    parsed.map(Some).ok_or_else(|| ConfigError::UnknownProfile { path: path.to_path_buf(), name: name.to_string() })
}

/// A context in a test's folder: the project `proj/`, home the folder itself, pi's agent
/// directory `agent/` (for the tests of what settings and config files choose).
#[cfg(test)]
pub(crate) fn sandbox_ctx(dir: &Path) -> Context {
    Context {
        cwd: dir.join("proj"),
        home: dir.to_path_buf(),
        agent_dir: dir.join("agent"),
        custom_session_dir: None,
        store_dir: dir.join("store"),
        color: false,
        host: None,
        model: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(dir: &Path) -> Context {
        sandbox_ctx(dir)
    }

    #[test]
    fn flag_then_project_then_agent_then_builtin() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path());
        assert_eq!(resolve(&c, None).unwrap(), (Profile::Default, ProfileSource::BuiltIn));
        std::fs::create_dir_all(dir.path().join("agent")).unwrap();
        std::fs::write(dir.path().join("agent/settings.json"), r#"{"shake":{"profile":"aggressive"}}"#).unwrap();
        assert_eq!(resolve(&c, None).unwrap().0, Profile::Aggressive);
        std::fs::create_dir_all(dir.path().join("proj/.pi")).unwrap();
        std::fs::write(dir.path().join("proj/.pi/settings.json"), r#"{"shake":{"profile":"conservative"}}"#).unwrap();
        let (p, source) = resolve(&c, None).unwrap();
        assert_eq!((p, source.to_string()), (Profile::Conservative, "settings.json (project)".to_string()));
        assert_eq!(resolve(&c, Some(Profile::Default)).unwrap().1, ProfileSource::Flag);
        std::fs::write(dir.path().join("proj/.pi/settings.json"), r#"{"shake":{"profile":"wild"}}"#).unwrap();
        assert!(resolve(&c, None).unwrap_err().to_string().contains("unknown shake profile \"wild\""));
    }
}
