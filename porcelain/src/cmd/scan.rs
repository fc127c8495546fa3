//! `shake scan [SESSION…]`: the secret scan `push` runs before anything leaves, run now on
//! stored sessions (all of them, or those named): cloud keys, tokens, private keys, `.env`
//! secrets, by gitleaks' rules and shake's (`docs/search.md`, "The secret scan"). Exit 0 when
//! nothing was found, 1 when something was, 2 when the scan could not run.

use std::io::Write;

use serde_json::json;
use shake_plumbing::output::write_json;
use shake_plumbing::remote::machine_of;
use shake_plumbing::remote::push::Leaving;
use shake_plumbing::search::secrets::{self, Allow, Finding, Rules};
use shake_plumbing::store::{SessionInfo, Store};
use shake_plumbing::{Context, Error, Result};

use super::grep;
use crate::render::{plural, Paint};

/// Scan stored sessions for secrets (cloud keys, tokens, private keys, .env lines), as push does
#[derive(clap::Args, Debug)]
pub struct ScanArgs {
    /// Sessions to scan: a file path or a session id or unique prefix [default: every stored session]
    pub sessions: Vec<String>,
    /// Let a kind of secret through (a rule id, e.g. aws-access-token) or one secret (fp:<12 hex>, as printed); repeat for more; adds to [scan] allow in .shake.toml
    #[arg(long, value_name = "KIND|fp:HEX")]
    pub allow: Vec<String>,
    /// List the rule ids (the kinds --allow takes) and exit
    #[arg(long)]
    pub list_rules: bool,
    /// Print JSON: {"sessions","findings":[{"session","path","machine","entry","line","kind","excerpt","fingerprint"}]}
    #[arg(long)]
    pub json: bool,
}

/// Runs `shake scan`.
pub fn run(ctx: &Context, args: &ScanArgs, out: &mut dyn Write) -> Result {
    scan(ctx, args, out).map_err(Error::trouble)
}

fn scan(ctx: &Context, args: &ScanArgs, out: &mut dyn Write) -> Result {
    let rules = Rules::builtin();
    if args.list_rules {
        for kind in rules.kinds() {
            writeln!(out, "{kind}")?;
        }
        return Ok(0);
    }
    let allow = allow_list(ctx, &args.allow)?;
    let store = Store::open(ctx)?;
    let sessions: Vec<SessionInfo> = match args.sessions.is_empty() {
        true => store.sessions()?,
        false => {
            args.sessions.iter().map(|s| store.find_session(ctx, s).map_err(Error::from)).collect::<Result<_>>()?
        }
    };
    let findings = secrets::scan_sessions(&store, &sessions, &allow)?;
    if args.json {
        let items: Vec<_> = findings.iter().map(|f| to_json(ctx, f)).collect();
        write_json(out, &json!({"sessions": sessions.len(), "findings": items}))?;
    } else {
        let paint = Paint::new(ctx);
        for f in &findings {
            let entry = f.entry.clone().unwrap_or_else(|| format!("line {}", f.hit.line));
            writeln!(
                out,
                "{}:{}: {} {}",
                paint.strong(&grep::shown(
                    ctx,
                    &f.path,
                    f.session.as_deref(),
                    machine_of(&ctx.store_dir, &f.path).as_deref()
                )),
                paint.dim(&entry),
                paint.warn(&f.hit.kind),
                paint.dim(&f.hit.fingerprint)
            )?;
            writeln!(out, "    {}", f.hit.excerpt)?;
        }
        let what = plural(sessions.len(), "session");
        match findings.len() {
            0 => writeln!(out, "No secrets found in {what}.")?,
            n => writeln!(
                out,
                "{} in {what}. Allow a kind with --allow KIND, one secret with --allow fp:…, or list them under [scan] allow in .shake.toml.",
                plural(n, "secret")
            )?,
        }
    }
    Ok(if findings.is_empty() { 0 } else { 1 })
}

/// The check `push` runs before anything leaves: every version going up is scanned (the newest
/// whole, and each older one since the last push that is not a prefix of it: what a rewrite
/// such as OMP's `/shake` took out still leaves in the older version); any finding refuses the
/// whole push, naming session, entry and kind.
pub fn before_push(store: &Store, leaving: &[Leaving<'_>], allow: &Allow) -> Result<()> {
    let known = store.sessions()?;
    let mut versions = Vec::new();
    for going in leaving {
        // A session the scan cannot find is refused, never let through unscanned.
        let Some(info) = known.iter().find(|s| s.path.to_str() == Some(going.path)) else {
            return Err(Error::user(format!("{}: not among the stored sessions; nothing was pushed", going.path)));
        };
        // The newest version's bytes are rebuilt here only when an older one is to be compared.
        let mut newest: Option<Vec<u8>> = None;
        for id in store.version_chain(&going.version)? {
            if Some(id) == going.pushed {
                break;
            }
            if id != going.version {
                let older = store.version_bytes(&id)?;
                let newest = match &mut newest {
                    Some(bytes) => bytes,
                    empty => empty.insert(store.version_bytes(&going.version)?),
                };
                if newest.starts_with(&older) {
                    continue;
                }
            }
            versions.push(SessionInfo { version: id, ..info.clone() });
        }
    }
    let findings = secrets::scan_sessions(store, &versions, allow)?;
    match findings.is_empty() {
        true => Ok(()),
        false => Err(secrets::refusal(findings).into()),
    }
}

/// The allow list: `--allow` and the config files' `[scan] allow`, each name checked.
pub fn allow_list(ctx: &Context, flags: &[String]) -> Result<Allow> {
    let config = crate::config::load(ctx)?;
    let names = flags.iter().chain(&config.config.scan.allow).map(String::as_str);
    Ok(Allow::new(Rules::builtin(), names)?)
}

fn to_json(ctx: &Context, f: &Finding) -> serde_json::Value {
    json!({
        "session": f.session, "path": f.path.to_string_lossy(),
        "machine": machine_of(&ctx.store_dir, &f.path), "entry": f.entry, "line": f.hit.line,
        "kind": f.hit.kind, "excerpt": f.hit.excerpt, "fingerprint": f.hit.fingerprint,
    })
}
