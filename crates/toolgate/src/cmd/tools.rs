//! `toolgate tools`: the tool definitions of a session's view.

use std::process::ExitCode;

use toolgate_protocol::wire::Format;

use crate::cli::{DefinitionFormat, ToolsArgs};
use crate::cmd::usage_error;
use crate::output;
use crate::setup;

/// Runs `toolgate tools`.
pub fn run(args: ToolsArgs) -> ExitCode {
    let loaded = match setup::load(&args.session) {
        Ok(l) => l,
        Err(e) => return usage_error("tools", e),
    };
    let registry = match setup::registry(args.session.tools_snapshot.as_deref(), &loaded.settings) {
        Ok(r) => r,
        Err(e) => return usage_error("tools", e),
    };
    if let Some(path) = &args.write_snapshot {
        if let Err(e) = registry.snapshot().save(path) {
            eprintln!("toolgate tools: cannot write {}: {e}", path.display());
            return ExitCode::from(1);
        }
        eprintln!(
            "wrote {} tools to {}",
            registry.entries().len(),
            path.display()
        );
        // Writing the snapshot is the job; the listing only when asked for by a format.
        if args.format.is_none() && !args.json {
            return ExitCode::SUCCESS;
        }
    }
    let options = match setup::view_options(&args.session, &loaded, &registry) {
        Ok(o) => o,
        Err(e) => return usage_error("tools", e),
    };
    let view = match registry.view(&options) {
        Ok(v) => v,
        Err(e) => return usage_error("tools", e),
    };
    let printed = if args.format.is_some() || args.json || !output::stdout_is_terminal() {
        let format = match args.format.unwrap_or(DefinitionFormat::Anthropic) {
            DefinitionFormat::Anthropic => Format::Anthropic,
            DefinitionFormat::Openai => Format::OpenAi,
            DefinitionFormat::Mcp => Format::Mcp,
        };
        output::print_json(&view.listing(format))
    } else {
        let colour = output::use_colour();
        let mut rows = vec![vec![
            "TOOL".to_owned(),
            "ACCESS".to_owned(),
            "CONCURRENCY".to_owned(),
            "DESCRIPTION".to_owned(),
        ]];
        for entry in view.entries() {
            let spec = entry.spec();
            let a = spec.annotations;
            let access = if a.read_only {
                "read-only"
            } else if a.destructive {
                "destructive"
            } else {
                "writes"
            };
            let first_line = spec.description.lines().next().unwrap_or_default();
            let short: String = first_line.chars().take(60).collect();
            rows.push(vec![
                spec.name.clone(),
                access.to_owned(),
                serde_json::json!(spec.concurrency)
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                short,
            ]);
        }
        let mut text = output::table(&rows, colour);
        for (name, hidden) in view.hidden() {
            text.push_str(&output::paint(
                &format!("hidden: {name}: {}\n", hidden.reason),
                output::Style::Dim,
                colour,
            ));
        }
        output::print(&text)
    };
    match printed {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("toolgate tools: cannot write the output: {e}");
            ExitCode::from(1)
        }
    }
}
