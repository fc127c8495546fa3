//! `shake meter` and `--watch`: print a reading (and log it); watching, poll the file's stat and
//! print a new reading whenever it changed (its [`FileState`]).

use std::io::Write;
use std::time::Duration;

use crate::profile::Profile;
use crate::rules::Rules;
use shake_plumbing::{Context, Result};

use super::log::append_log;
use super::memo::reading;
use super::stamp::FileState;
use super::{Counting, MeterArgs};

/// How often `--watch` looks at the session file.
const POLL: Duration = Duration::from_millis(500);

/// Prints one reading of the session `args` names, or with `--watch` one per change of its file.
pub(super) fn run(
    ctx: &Context,
    args: &MeterArgs,
    profile: Profile,
    rules: &Rules,
    counting: &Counting<'_>,
    out: &mut dyn Write,
) -> Result {
    let color = !args.json && ctx.color;
    let mut state = FileState::of(ctx, &args.rev)?;
    loop {
        let reading = reading(ctx, &args.rev, &state, (profile, rules), counting)?;
        if args.json {
            writeln!(out, "{}", reading.json())?;
        } else {
            writeln!(out, "{}", reading.render(color))?;
        }
        out.flush()?;
        if let Some(log) = &args.log {
            append_log(log, reading.json())?;
        }
        if !args.watch {
            return Ok(0);
        }
        // A watching meter runs for hours: keep what it learnt after every reading.
        counting.save();
        // Poll: a stat every half second; read again only when the file changed.
        loop {
            std::thread::sleep(POLL);
            let now = FileState::of(ctx, &args.rev)?;
            if now != state {
                state = now;
                break;
            }
        }
    }
}
