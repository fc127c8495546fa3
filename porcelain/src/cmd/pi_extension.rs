//! `shake pi-extension`: the pi extension (`integrations/pi/shake.ts`), carried inside the binary
//! and installed into pi's extensions folder so a user sets up the live integration with one command.

use std::io::Write;
use std::path::{Path, PathBuf};

use shake_plumbing::durable::FileError;
use shake_plumbing::{Context, Result};

/// The extension's source, exactly as in `integrations/pi/shake.ts`.
pub const SOURCE: &str = include_str!("../../../integrations/pi/shake.ts");

/// The file name pi loads it under (pi loads every `*.ts` in its extensions folder).
const FILE_NAME: &str = "shake.ts";

/// Print or install the pi extension that puts shake inside a running pi session
///
/// With no flag, prints the extension's source. pi loads it from `<agent dir>/extensions/` at start
/// (run `/reload` in a running pi); `pi -e FILE` loads it for one run.
#[derive(clap::Args, Debug)]
pub struct PiExtensionArgs {
    /// Write the extension to <pi agent dir>/extensions/shake.ts (replacing an older copy)
    #[arg(long)]
    pub install: bool,
    /// Print only the path the extension is (or would be) installed at
    #[arg(long)]
    pub print_path: bool,
}

/// Runs `shake pi-extension`.
pub fn run(ctx: &Context, args: &PiExtensionArgs, out: &mut dyn Write) -> Result {
    let path = install_path(ctx);
    if args.install {
        let verb = install(&path)?;
        if !args.print_path {
            writeln!(out, "{verb} the pi extension at {}", shake_plumbing::output::path(&path))?;
            writeln!(out, "Restart pi, or type /reload in a running pi, to load it.")?;
            return Ok(0);
        }
    }
    if args.print_path {
        writeln!(out, "{}", shake_plumbing::output::path(&path))?;
    } else {
        out.write_all(SOURCE.as_bytes())?;
    }
    Ok(0)
}

/// `<agent dir>/extensions/shake.ts`: pi's global extensions folder (honours `PI_CODING_AGENT_DIR`).
pub fn install_path(ctx: &Context) -> PathBuf {
    ctx.agent_dir.join("extensions").join(FILE_NAME)
}

/// Why the extension was not installed. The commands give the exit code and the hint
/// (`cmd/command_error.rs`).
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The extension's place is a symlink (to a checkout, say): it is left alone.
    #[error("{} is a symlink; leaving it alone", path.display())]
    Symlink {
        /// The extension's place.
        path: PathBuf,
    },
    /// Writing the file failed.
    #[error(transparent)]
    Write(#[from] FileError),
}

/// Writes the extension atomically and durably and says what happened.
fn install(path: &Path) -> Result<&'static str, InstallError> {
    let verb = match std::fs::read(path) {
        Ok(old) if old == SOURCE.as_bytes() => return Ok("Already installed:"),
        Ok(_) => "Updated",
        Err(_) => "Installed",
    };
    // A symlink someone made to a checkout is replaced by the embedded copy only if they ask: refuse.
    if path.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(InstallError::Symlink { path: path.to_path_buf() });
    }
    shake_plumbing::durable::write(path, SOURCE.as_bytes())?;
    Ok(verb)
}
