//! `shake man`: the roff man pages generated from the clap definitions: `shake.1` on stdout, or
//! with `--dir DIR` one page per command (`shake.1`, `shake-fold.1`, `shake-audit-fork.1`, …), the
//! pages `shake.1` refers to. Beyond clap_mangen's sections, each page has its command's EXAMPLES
//! and `shake.1` the ENVIRONMENT, EXIT STATUS and FILES (`crate::manual`).

use std::io::Write;
use std::path::PathBuf;

use roff::{bold, roman, Roff};
use shake_plumbing::durable::FileError;
use shake_plumbing::Result;

use crate::manual;

/// Print the man page (roff), e.g. `shake man > shake.1`; or write one page per command with --dir
#[derive(clap::Args, Debug)]
pub struct ManArgs {
    /// Write shake.1 and one page per command (shake-fold.1, …) into DIR, and list them
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Runs `shake man` for the command line `cli` (handed in: the definitions are the binary's top,
/// which this command's arguments are part of).
pub fn run(args: &ManArgs, cli: clap::Command, out: &mut dyn Write) -> Result {
    // No `help` subcommand: it has no page of its own. Built, so each subcommand's display name
    // is its page's (`shake-fold`).
    let mut cmd = cli.disable_help_subcommand(true);
    cmd.build();
    let Some(dir) = &args.dir else {
        out.write_all(&page(&cmd, true))?;
        return Ok(0);
    };
    std::fs::create_dir_all(dir).map_err(FileError::at(dir, "create"))?;
    let mut pages = Vec::new();
    let mut todo = vec![(cmd, true)];
    while let Some((cmd, top)) = todo.pop() {
        todo.extend(cmd.get_subcommands().filter(|s| !s.is_hide_set()).map(|s| (s.clone(), false)));
        let path = dir.join(clap_mangen::Man::new(cmd.clone()).get_filename());
        std::fs::write(&path, page(&cmd, top)).map_err(FileError::at(&path, "write"))?;
        pages.push(path);
    }
    pages.sort();
    for page in pages {
        writeln!(out, "{}", page.display())?;
    }
    Ok(0)
}

/// One command's page: clap_mangen's sections, then EXAMPLES, and on the top page (`top`) the
/// sections that concern every command.
fn page(cmd: &clap::Command, top: bool) -> Vec<u8> {
    let man = clap_mangen::Man::new(cmd.clone());
    let mut out = Vec::new();
    type Section<'f> = &'f dyn Fn(&clap_mangen::Man, &mut dyn Write) -> std::io::Result<()>;
    let mut render = |f: Section<'_>| {
        // Into memory: it cannot fail.
        let _ = f(&man, &mut out);
    };
    render(&clap_mangen::Man::render_title);
    render(&clap_mangen::Man::render_name_section);
    render(&clap_mangen::Man::render_synopsis_section);
    render(&clap_mangen::Man::render_description_section);
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        render(&clap_mangen::Man::render_options_section);
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        render(&clap_mangen::Man::render_subcommands_section);
    }
    let mut roff = Roff::new();
    let examples = manual::examples(cmd.get_name());
    if !examples.is_empty() {
        roff.control("SH", ["EXAMPLES"]);
        for (line, what) in examples {
            roff.control("TP", []).text([bold(*line)]).text([roman(*what)]);
        }
    }
    if top {
        for (title, items) in
            [("ENVIRONMENT", manual::ENVIRONMENT), ("EXIT STATUS", manual::EXIT_STATUS), ("FILES", manual::FILES)]
        {
            roff.control("SH", [title]);
            for (name, what) in items {
                roff.control("TP", []).text([bold(*name)]).text([roman(*what)]);
            }
        }
    }
    render(&|_: &clap_mangen::Man, w: &mut dyn Write| roff.to_writer(w));
    if cmd.get_version().is_some() {
        render(&clap_mangen::Man::render_version_section);
    }
    out
}
