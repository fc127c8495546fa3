//! `shake generate-session` (hidden): writes a seeded, realistic pi v3 session for tests and
//! benchmarks (`docs/generate-session.md`); with `--host omp`, the same session as oh-my-pi
//! writes it (`crate::hosts::generate_session`).

use std::io::Write;
use std::path::PathBuf;

use crate::durable::FileError;
use crate::hosts::generate::Limit;
use crate::{Context, Result};

/// Write a seeded, realistic pi v3 session (a development and benchmark tool)
#[derive(clap::Args, Debug)]
pub struct GenerateSessionArgs {
    /// Seed: the same seed and size always give the same bytes
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Generate at least this many bytes (K, M, G suffixes are powers of 1024), e.g. 50M
    #[arg(long, value_name = "SIZE", value_parser = parse_size, conflicts_with = "entries")]
    pub size: Option<u64>,
    /// Generate at least this many entries (header excluded)
    #[arg(long, value_name = "N")]
    pub entries: Option<u64>,
    /// The header's cwd
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<String>,
    /// With `--host omp`: the model every assistant names, `provider/id`
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// Write to FILE instead of standard output
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Runs `shake generate-session`.
pub fn run(ctx: &Context, args: &GenerateSessionArgs, out: &mut dyn Write) -> Result {
    let limit = match (args.size, args.entries) {
        (Some(bytes), _) => Limit::Bytes(bytes),
        (None, Some(n)) => Limit::Entries(n),
        (None, None) => Limit::Default,
    };
    let bytes = crate::hosts::generate_session(ctx.host, args.seed, limit, args.cwd.clone(), args.model.clone())?;
    match &args.output {
        Some(path) => {
            std::fs::write(path, &bytes).map_err(FileError::at(path, "write"))?;
            crate::own_write::record(ctx, path);
        }
        None => out.write_all(&bytes)?,
    }
    Ok(0)
}

/// Parses `123`, `64K`, `50M`, `1G` (powers of 1024).
fn parse_size(s: &str) -> std::result::Result<u64, String> {
    let (digits, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => s.split_at(i),
        None => (s, ""),
    };
    let shift = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        _ => return Err(format!("unknown size unit {unit:?} (use K, M or G)")),
    };
    let n: u64 = digits.parse().map_err(|_| format!("not a size: {s:?}"))?;
    n.checked_mul(1 << shift).ok_or_else(|| format!("size too large: {s:?}"))
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("123"), Ok(123));
        assert_eq!(parse_size("50M"), Ok(50 << 20));
        assert_eq!(parse_size("2k"), Ok(2048));
        assert!(parse_size("5X").is_err());
        assert!(parse_size("M").is_err());
    }
}
