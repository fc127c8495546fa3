//! The CLI reference in `docs/cli.md`, rendered from the clap definitions; a test keeps the file
//! equal to what the code says (`SHAKE_BLESS=1 cargo test` rewrites it).

/// Renders every command's long help as Markdown.
pub fn render() -> String {
    let mut root = crate::cli::command().term_width(100);
    root.build();
    let mut doc = String::from(
        "# shake command reference\n\nGenerated from the command-line definitions by `cargo test` \
         (`SHAKE_BLESS=1 cargo test reference` rewrites it); do not edit by hand.\n\n",
    );
    doc.push_str(&format!("## shake\n\n```text\n{}```\n\n", root.render_long_help()));
    for sub in root.get_subcommands_mut() {
        let name = sub.get_name().to_string();
        let help = sub.clone().bin_name(format!("shake {name}")).render_long_help();
        doc.push_str(&format!("## shake {name}\n\n```text\n{help}```\n\n"));
        // Groups (`shake audit`): each subcommand's own flags, too.
        for nested in sub.get_subcommands_mut().filter(|n| n.get_name() != "help") {
            let full = format!("shake {name} {}", nested.get_name());
            let help = nested.clone().bin_name(&full).render_long_help();
            doc.push_str(&format!("## {full}\n\n```text\n{help}```\n\n"));
        }
    }
    doc.trim_end().to_string() + "\n"
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    #[test]
    fn docs_cli_md_matches_the_code() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/cli.md");
        let now = super::render();
        if std::env::var_os("SHAKE_BLESS").is_some() {
            std::fs::write(&path, &now).unwrap();
        }
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(on_disk == now, "docs/cli.md is stale: run `SHAKE_BLESS=1 cargo test reference`");
    }

    #[test]
    fn clap_definitions_are_consistent() {
        crate::cli::command().debug_assert();
    }
}
