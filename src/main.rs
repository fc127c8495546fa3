//! The `shake` binary: parse the command line, run the command, map errors to exit codes.

mod cli;
mod cmd;
mod manual;
mod pager;
#[cfg(test)]
mod plumbing_doc;
#[cfg(test)]
mod reference;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::parse();
    let Some(command) = &cli.command else {
        let _ = std::io::stderr().write_all(cli::short_usage().as_bytes());
        return ExitCode::from(2);
    };
    let mut ctx = match shake_plumbing::Context::from_env(cli.store.clone()) {
        Ok(ctx) => shake_plumbing::Context { host: cli.host, ..ctx },
        Err(e) => return fail(&shake_plumbing::Error::io("cannot read the working directory", e)),
    };
    let terminal = std::io::stdout().is_terminal();
    let env = shake_porcelain::render::ColorEnv::from_env();
    ctx.color = cli.color.decide(terminal || command.drawn_by_terminal(), env);
    let pager = (terminal && !cli.no_pager && command.pages()).then(pager::Pager::start).flatten();
    let (pager, sink): (Option<pager::Pager>, Box<dyn Write>) = match pager {
        Some((pager, stdin)) => (Some(pager), Box::new(stdin)),
        None => (None, stdout()),
    };
    let mut out = std::io::BufWriter::new(Stdout(sink));
    // The answer is decided before the output is flushed: a closed pipe does not change it.
    let result = command.run(&ctx, &mut out).and_then(|code| shake_plumbing::output::answer(Ok(code), out.flush()));
    drop(out);
    if let Some(pager) = pager {
        pager.wait();
    }
    match result {
        Ok(code) => ExitCode::from(code),
        // A closed pipe (`shake log | head`) is not a failure.
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

/// Standard output without std's line buffering under `main`'s own buffer: the line writer
/// searched every big write for its last newline (~4% of `project --json` on many small entries).
fn stdout() -> Box<dyn Write> {
    #[cfg(unix)]
    if let Ok(fd) = std::os::fd::AsFd::as_fd(&std::io::stdout()).try_clone_to_owned() {
        return Box::new(std::fs::File::from(fd));
    }
    Box::new(std::io::stdout().lock())
}

/// The command's output, whose write errors say where the write went (`cannot write to standard
/// output: No space left on device`), keeping the error's kind so a closed pipe is still one.
struct Stdout(Box<dyn Write>);

impl Stdout {
    fn named(e: std::io::Error) -> std::io::Error {
        std::io::Error::new(e.kind(), format!("cannot write to standard output: {e}"))
    }
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf).map_err(Stdout::named)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush().map_err(Stdout::named)
    }
}

fn fail(e: &shake_plumbing::Error) -> ExitCode {
    let mut err = std::io::stderr().lock();
    // Exit 3 says what it is, in the words of every other corrupt-store message.
    let corrupt = e.kind == shake_plumbing::ErrorKind::Corrupt && !e.message.contains("corrupt");
    let _ = writeln!(err, "shake: error: {}{}", if corrupt { "corrupt store: " } else { "" }, e.message);
    for hint in &e.hints {
        let _ = writeln!(err, "hint: {hint}");
    }
    ExitCode::from(e.kind.exit_code())
}
