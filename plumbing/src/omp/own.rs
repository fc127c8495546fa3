//! oh-my-pi's own rules behind the seam ([`crate::host::own`]): the meter of what OMP's
//! `/shake` would free now, and what each of OMP's rewrites of a file changed, counted as OMP
//! counts for the session's model (`docs/omp.md`).

use std::path::Path;

use super::shake::{Kind, AGGRESSIVE, AUTO};
use super::{history, reading, session_tokenizer, OmpFile, OmpTokenizer};
use crate::host::error::{HostError, Result};
use crate::host::own::{Compared, History, OwnFigures, OwnMeter, Rules};
use crate::host::SessionFile;
use crate::tokens::cache::open_cached;
use crate::tokens::{Tokenizer, TokenizerName};
use crate::Context;

/// OMP's rules: its manual `/shake` and its auto-shake.
pub struct OmpRules;

/// Whether OMP counts with o200k for models without a tokenizer family (its
/// `PI_TOKENIZER_ACCURATE=1`).
fn accurate() -> bool {
    std::env::var_os("PI_TOKENIZER_ACCURATE").is_some_and(|v| v == "1")
}

impl OwnMeter for OmpRules {
    fn rules(&self, profile: Option<&str>, leaf: bool) -> Result<Rules> {
        let name = match profile {
            None => "omp",
            Some("omp-auto") => "omp-auto",
            Some(p) => {
                return Err(HostError::refused(format!(
                    "profile {p} is shake's; an oh-my-pi session meters OMP's /shake"
                ))
                .hint("omit --profile for the manual /shake, or pass --profile omp-auto for OMP's auto-shake"))
            }
        };
        if leaf {
            return Err(HostError::refused("OMP's /shake takes the branch of the last entry; a leaf cannot be chosen"));
        }
        Ok(Rules { name, key: accurate().to_string() })
    }

    fn measure(
        &self,
        ctx: &Context,
        path: &Path,
        rules: &Rules,
        seen: &mut dyn FnMut(&SessionFile),
    ) -> Result<OwnFigures> {
        let config = if rules.name == "omp-auto" { AUTO } else { AGGRESSIVE };
        let (file, read) = OmpFile::read_shared(path)?;
        // The session's model decides what counts (o200k, Claude's encoding), so its cache is
        // opened once the file is read (once a process: a later reading under --watch counts
        // through the same one), and saved when the reading ends.
        let (model, tok) = session_tokenizer(&file, accurate(), Tokenizer::new(TokenizerName::Pi));
        let cached = tok.counts_with().map(|name| open_cached(ctx, name));
        let tok = match &cached {
            Some(cached) => tok.with_cached(**cached),
            None => tok,
        };
        // The count (on every core, `shake::collect`) and the caller's use of the bytes read
        // (the store's import: a quarter of a cold meter) go side by side: neither reads what
        // the other makes. Both are done before the cache is saved.
        let r = std::thread::scope(|s| {
            let counting = s.spawn(|| reading(&file, &config, model, tok));
            seen(&read);
            counting.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
        });
        drop(read);
        drop(cached);
        let count = |kind| r.regions.iter().filter(|g| g.kind == kind).count();
        Ok(OwnFigures {
            tokens: r.freed,
            tool_results: count(Kind::ToolResult),
            blocks: count(Kind::Block),
            tokenizer: r.tokenizer.label(),
            exact: r.tokenizer.exact(),
            model: r.model,
            leaf_id: file.entries.last().and_then(|e| e.id()).map(str::to_string),
            suffix: r.suffix,
            turn: r.turn,
        })
    }
}

impl History for OmpRules {
    fn compare(&self, ctx: &Context, old: (&str, &SessionFile), new: (&str, &SessionFile)) -> Result<Compared> {
        let parse = |(name, file): (&str, &SessionFile)| {
            OmpFile::parse(file.path.clone(), file.raw().to_vec())
                .map_err(|e| HostError::refused(format!("{name}: {e}")).caused_by(e))
        };
        let (old, new) = (parse(old)?, parse(new)?);
        let tok = tokenizer(ctx, &old);
        Ok(Compared { rewrite: history::compare(&old, &new, &tok), tokenizer: tok.label(), exact: tok.exact() })
    }
}

/// The tokenizer OMP counts `file` with (the session's model), its o200k counts cached.
fn tokenizer(ctx: &Context, file: &OmpFile) -> OmpTokenizer {
    let o200k = open_cached(ctx, TokenizerName::O200k);
    session_tokenizer(file, accurate(), *o200k).1
}
