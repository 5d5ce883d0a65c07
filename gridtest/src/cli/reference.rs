//! The command-line reference in Markdown, generated from the clap command itself (so
//! `docs/cli.md` cannot drift from `--help`: a test regenerates it and compares).

use std::fmt::Write as _;

use clap::{Arg, ArgAction, Command};

/// The reference of `command`'s flags as Markdown: one table per help heading (flag, variable,
/// default, meaning), in the order `--help` shows them.
///
/// ```
/// use clap::{Args, Command};
///
/// let command = gridtest::RunArgs::augment_args(Command::new("sweep"));
/// let text = gridtest::cli::markdown_reference(&command);
/// assert!(text.contains("| `--rank-by <RANK_BY>` | `GRIDTEST_RANK_BY` |"));
/// ```
#[must_use]
pub fn markdown_reference(command: &Command) -> String {
    let mut headings: Vec<Option<&str>> = Vec::new();
    for arg in command.get_arguments() {
        if !headings.contains(&arg.get_help_heading()) {
            headings.push(arg.get_help_heading());
        }
    }
    let mut out = String::new();
    for heading in headings {
        let _ = writeln!(out, "### {}\n", heading.unwrap_or("Options"));
        out.push_str("| flag | variable | default | meaning |\n|---|---|---|---|\n");
        for arg in command
            .get_arguments()
            .filter(|a| a.get_help_heading() == heading && !a.is_hide_set())
        {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                flag(arg),
                arg.get_env()
                    .map_or_else(String::new, |e| format!("`{}`", e.to_string_lossy())),
                defaults(arg),
                meaning(arg)
            );
        }
        out.push('\n');
    }
    out
}

/// `--long <VALUE>` (with `-s, ` before it when it has a short form).
fn flag(arg: &Arg) -> String {
    let mut text = String::from("`");
    if let Some(short) = arg.get_short() {
        let _ = write!(text, "-{short}, ");
    }
    if let Some(long) = arg.get_long() {
        let _ = write!(text, "--{long}");
    }
    let takes_value = !matches!(
        arg.get_action(),
        ArgAction::SetTrue | ArgAction::SetFalse | ArgAction::Count | ArgAction::Help
    );
    if takes_value {
        let names = arg.get_value_names().map_or_else(
            || vec![arg.get_id().as_str().to_uppercase()],
            |n| n.iter().map(ToString::to_string).collect(),
        );
        let _ = write!(text, " <{}>", names.join("> <"));
    }
    text.push('`');
    text
}

/// The default value(s), if any.
fn defaults(arg: &Arg) -> String {
    let values: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| format!("`{}`", v.to_string_lossy()))
        .collect();
    values.join(", ")
}

/// The help text on one line (pipes escaped), with the accepted values of an enum.
fn meaning(arg: &Arg) -> String {
    let help = arg
        .get_long_help()
        .or_else(|| arg.get_help())
        .map(ToString::to_string)
        .unwrap_or_default();
    let mut text = help.split_whitespace().collect::<Vec<_>>().join(" ");
    let possible: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| format!("`{}`", v.get_name()))
        .collect();
    let takes_value = !matches!(
        arg.get_action(),
        ArgAction::SetTrue | ArgAction::SetFalse | ArgAction::Count | ArgAction::Help
    );
    if takes_value && !possible.is_empty() {
        let _ = write!(text, " (one of {})", possible.join(", "));
    }
    text.replace('|', "\\|")
}
