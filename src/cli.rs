//! The command line: one enum naming every command, and the dispatch to its `run`.

use std::io::Write;
use std::path::PathBuf;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use shake_plumbing::cmd as plumbing;
use shake_plumbing::{Context, Result};
use shake_porcelain as porcelain;

/// Fold stale heavy content out of coding-agent sessions (pi, Claude Code, oh-my-pi), and put it
/// back exactly
#[derive(Parser, Debug)]
#[command(
    name = "shake",
    version = env!("SHAKE_VERSION"),
    about,
    max_term_width = 100,
    after_help = people_help()
)]
pub struct Cli {
    /// The store folder (default: $SHAKE_DIR, else <pi agent dir>/shake for a pi user, else the data folder's shake/)
    #[arg(long, global = true, value_name = "DIR", help_heading = GLOBAL)]
    pub store: Option<PathBuf>,
    /// Colour the output for people: auto (on a terminal; NO_COLOR, CLICOLOR=0 and TERM=dumb turn it off, CLICOLOR_FORCE on), always, never
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = porcelain::render::ColorChoice::Auto, help_heading = GLOBAL, hide_possible_values = true)]
    pub color: porcelain::render::ColorChoice,
    /// Do not page long output (log, show, diff, sessions) through $SHAKE_PAGER, $PAGER or less
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub no_pager: bool,
    /// Read session files as this host's: pi, claude (Claude Code) or omp (oh-my-pi); default: recognised from each file's content
    #[arg(long, global = true, value_parser = host_parser(), value_name = "HOST", help_heading = GLOBAL, hide_possible_values = true)]
    pub host: Option<shake_plumbing::host::HostKind>,
    /// None: `shake` alone, which prints a short usage ([`short_usage`]).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// `--host`'s values: the names of the registered hosts (`shake_plumbing::hosts`).
fn host_parser() -> impl clap::builder::TypedValueParser<Value = shake_plumbing::host::HostKind> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(shake_plumbing::hosts::names()).try_map(|name| {
        shake_plumbing::hosts::named(&name).map(|h| h.kind()).ok_or_else(|| format!("no host is named {name}"))
    })
}

/// The heading the options every command takes stand under, apart from the command's own.
const GLOBAL: &str = "Global Options";

/// The commands for people, in `shake --help` order: their text may change between releases
/// (`meter`'s `--json` and `--statusline` are a contract too, for status bars and scripts). Every
/// other command is plumbing, its output a contract documented in `docs/plumbing.md`. The one
/// list the help, `docs/plumbing.md` and its test (`plumbing_doc`) follow.
pub const FOR_PEOPLE: &[&str] =
    &["meter", "fold", "undo", "status", "log", "show", "drop", "pi-extension", "completions", "man"];

/// The help's closing paragraph, from [`FOR_PEOPLE`].
fn people_help() -> String {
    format!(
        "For people: {}. The rest are plumbing for scripts, with output documented as a contract in docs/plumbing.md.",
        FOR_PEOPLE.join(", ")
    )
}

/// The command line's definition: the derived one, with each command for people's examples
/// after its flags (`--help`, and the man pages' EXAMPLES).
pub fn command() -> clap::Command {
    let mut cmd = Cli::command();
    // In place (`mut_subcommand` would move each to the end of the list, and of the help).
    for sub in cmd.get_subcommands_mut() {
        if let Some(examples) = crate::manual::examples_help(sub.get_name()) {
            *sub = std::mem::replace(sub, clap::Command::new("")).after_long_help(examples);
        }
    }
    cmd
}

/// Parses the process's arguments against [`command`]; a usage error exits 2, as clap's does.
pub fn parse() -> Cli {
    Cli::from_arg_matches(&command().get_matches()).unwrap_or_else(|e| e.exit())
}

/// What `shake` alone prints (on stderr, exit 2): the usage and the commands a person starts
/// with, not the whole help.
pub fn short_usage() -> String {
    let cmd = command();
    let people = FOR_PEOPLE.iter().filter_map(|name| cmd.find_subcommand(name));
    let width = FOR_PEOPLE.iter().map(|n| n.len()).max().unwrap_or(0);
    let lines: Vec<String> = people
        .map(|sub| {
            format!("  {:width$}  {}", sub.get_name(), sub.get_about().map(|a| a.to_string()).unwrap_or_default())
        })
        .collect();
    format!(
        "Usage: shake [OPTIONS] <COMMAND>\n\nCommands for people:\n{}\n\n`shake --help` lists every command, the plumbing for scripts too.\n",
        lines.join("\n")
    )
}

/// Every shake command.
#[derive(Subcommand, Debug)]
pub enum Command {
    // For people first (git's porcelain, [`FOR_PEOPLE`]), then the plumbing, whose output is a contract.
    Meter(porcelain::meter::MeterArgs),
    Fold(porcelain::fold::FoldArgs),
    Undo(porcelain::undo::UndoArgs),
    Status(porcelain::status::StatusArgs),
    Log(porcelain::log::LogArgs),
    Show(porcelain::show::ShowArgs),
    Drop(porcelain::drop::DropArgs),
    PiExtension(porcelain::pi_extension::PiExtensionArgs),
    Completions(crate::cmd::completions::CompletionsArgs),
    Man(crate::cmd::man::ManArgs),
    Audit(porcelain::audit::AuditArgs),
    CatObject(plumbing::cat_object::CatObjectArgs),
    CatSession(plumbing::cat_session::CatSessionArgs),
    CountObjects(plumbing::count_objects::CountObjectsArgs),
    CountTokens(plumbing::count_tokens::CountTokensArgs),
    Diff(porcelain::diff::DiffArgs),
    Export(plumbing::export::ExportArgs),
    Fetch(plumbing::fetch::FetchArgs),
    Fsck(plumbing::fsck::FsckArgs),
    Gc(plumbing::gc::GcArgs),
    #[command(hide = true)]
    GenerateSession(plumbing::generate_session::GenerateSessionArgs),
    Grep(porcelain::grep::GrepArgs),
    HashEntry(plumbing::hash_entry::HashEntryArgs),
    Import(plumbing::import::ImportArgs),
    LsEntries(plumbing::ls_entries::LsEntriesArgs),
    LsLeaves(plumbing::ls_leaves::LsLeavesArgs),
    Project(plumbing::project::ProjectArgs),
    Push(plumbing::push::PushArgs),
    Regions(porcelain::regions::RegionsArgs),
    Remote(plumbing::remote::RemoteArgs),
    Restore(plumbing::restore::RestoreArgs),
    RevParse(plumbing::rev_parse::RevParseArgs),
    Scan(porcelain::scan::ScanArgs),
    Sessions(plumbing::sessions::SessionsArgs),
    ShowRef(plumbing::show_ref::ShowRefArgs),
    Tokens(plumbing::tokens::TokensArgs),
    UpdateRef(plumbing::update_ref::UpdateRefArgs),
}

impl Command {
    /// Tells whether the output is drawn by a terminal even through a pipe: `meter
    /// --statusline`'s line is shown by Claude Code's status bar, which renders ANSI colour.
    pub fn drawn_by_terminal(&self) -> bool {
        matches!(self, Command::Meter(args) if args.statusline)
    }

    /// Tells whether the command prints a long table for people, paged on a terminal.
    pub fn pages(&self) -> bool {
        match self {
            Command::Log(args) => !args.json,
            Command::Show(args) => !args.read.json,
            Command::Diff(args) => args.output.for_people(),
            Command::Sessions(args) => args.output.for_people(),
            _ => false,
        }
    }

    /// Runs the command, writing its output to `out`.
    pub fn run(&self, ctx: &Context, out: &mut dyn Write) -> Result {
        match self {
            Command::Audit(args) => porcelain::audit::run(ctx, args, out),
            Command::CatObject(args) => plumbing::cat_object::run(ctx, args, out),
            Command::CatSession(args) => plumbing::cat_session::run(ctx, args, out),
            Command::Completions(args) => crate::cmd::completions::run(args, command(), out),
            Command::CountObjects(args) => plumbing::count_objects::run(ctx, args, out),
            Command::CountTokens(args) => plumbing::count_tokens::run(ctx, args, out),
            Command::Diff(args) => porcelain::diff::run(ctx, args, out),
            Command::Drop(args) => porcelain::drop::run(ctx, args, out),
            Command::Export(args) => plumbing::export::run(ctx, args, out),
            Command::Fetch(args) => plumbing::fetch::run(ctx, args, out),
            Command::Fold(args) => porcelain::fold::run(ctx, args, out),
            Command::Fsck(args) => plumbing::fsck::run(ctx, args, out, &porcelain::overlay::recompute),
            Command::Gc(args) => plumbing::gc::run(ctx, args, out),
            Command::GenerateSession(args) => plumbing::generate_session::run(ctx, args, out),
            Command::Grep(args) => porcelain::grep::run(ctx, args, out),
            Command::HashEntry(args) => plumbing::hash_entry::run(ctx, args, out),
            Command::Import(args) => plumbing::import::run(ctx, args, out),
            Command::Log(args) => porcelain::log::run(ctx, args, out),
            Command::LsEntries(args) => plumbing::ls_entries::run(ctx, args, out),
            Command::LsLeaves(args) => plumbing::ls_leaves::run(ctx, args, out),
            Command::Man(args) => crate::cmd::man::run(args, command(), out),
            Command::Meter(args) => porcelain::meter::run(ctx, args, out),
            Command::PiExtension(args) => porcelain::pi_extension::run(ctx, args, out),
            Command::Project(args) => plumbing::project::run(ctx, args, out),
            // The pre-push check (issue 33 part 2's secret scan) plugs in here.
            Command::Push(args) => {
                // The secret scan decides what may leave (docs/search.md); nothing is sent first.
                let allow = porcelain::scan::allow_list(ctx, &args.allow)?;
                plumbing::push::run(ctx, args, out, &|store, leaving| {
                    porcelain::scan::before_push(store, leaving, &allow)
                })
            }
            Command::Regions(args) => porcelain::regions::run(ctx, args, out),
            Command::Remote(args) => plumbing::remote::run(ctx, args, out),
            Command::Restore(args) => plumbing::restore::run(ctx, args, out),
            Command::RevParse(args) => plumbing::rev_parse::run(ctx, args, out),
            Command::Scan(args) => porcelain::scan::run(ctx, args, out),
            Command::Sessions(args) => plumbing::sessions::run(ctx, args, out),
            Command::Show(args) => porcelain::show::run(ctx, args, out),
            Command::ShowRef(args) => plumbing::show_ref::run(ctx, args, out),
            Command::Status(args) => porcelain::status::run(ctx, args, out),
            Command::Tokens(args) => plumbing::tokens::run(ctx, args, out),
            Command::Undo(args) => porcelain::undo::run(ctx, args, out),
            Command::UpdateRef(args) => plumbing::update_ref::run(ctx, args, out),
        }
    }
}
