//! The `shake` binary: parse the command line, run the command, map errors to exit codes.

mod cli;
mod cmd;
#[cfg(test)]
mod plumbing_doc;
#[cfg(test)]
mod reference;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let ctx = match shake_plumbing::Context::from_env(cli.store.clone()) {
        Ok(ctx) => shake_plumbing::Context { host: cli.host, ..ctx },
        Err(e) => return fail(&shake_plumbing::Error::io("cannot read the working directory", e)),
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let result = cli.command.run(&ctx, &mut out).and_then(|code| {
        out.flush()?;
        Ok(code)
    });
    match result {
        Ok(code) => ExitCode::from(code),
        // A closed pipe (`shake log | head`) is not a failure.
        Err(e) if e.message.contains("Broken pipe") => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

fn fail(e: &shake_plumbing::Error) -> ExitCode {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "shake: error: {}", e.message);
    for hint in &e.hints {
        let _ = writeln!(err, "hint: {hint}");
    }
    ExitCode::from(e.kind.exit_code())
}
