//! Terminal-aware output: colour and tables on a terminal, JSON when piped.

use std::io::{self, IsTerminal, Write};

/// Whether stdout is a terminal that gets human-friendly output.
pub fn stdout_is_terminal() -> bool {
    io::stdout().is_terminal()
}

/// Whether to use colour: a terminal, and `NO_COLOR` unset.
pub fn use_colour() -> bool {
    stdout_is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// ANSI styles used by the CLI.
#[derive(Debug, Clone, Copy)]
pub enum Style {
    /// Success.
    Green,
    /// Denials and errors.
    Red,
    /// Warnings, asks.
    Yellow,
    /// Headers.
    Bold,
    /// Secondary text.
    Dim,
}

/// Wraps `text` in the style's escape codes when `colour` is on.
pub fn paint(text: &str, style: Style, colour: bool) -> String {
    if !colour {
        return text.to_owned();
    }
    let code = match style {
        Style::Green => "32",
        Style::Red => "31",
        Style::Yellow => "33",
        Style::Bold => "1",
        Style::Dim => "2",
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}

/// Renders rows as an aligned table (first row is the header).
pub fn table(rows: &[Vec<String>], colour: bool) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0; cols];
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for (r, row) in rows.iter().enumerate() {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            let pad = widths[i].saturating_sub(cell.chars().count());
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad + 2));
            }
        }
        if r == 0 {
            line = paint(&line, Style::Bold, colour);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Writes `text` to stdout; a closed stdout is reported as an error, never a panic.
pub fn print(text: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// Prints a JSON value (pretty on a terminal, compact otherwise) with a newline.
pub fn print_json(value: &serde_json::Value) -> io::Result<()> {
    let text = if stdout_is_terminal() {
        serde_json::to_string_pretty(value)
    } else {
        serde_json::to_string(value)
    }
    .map_err(io::Error::other)?;
    print(&format!("{text}\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_aligns_columns() {
        let rows = vec![
            vec!["name".to_owned(), "x".to_owned()],
            vec!["Read".to_owned(), "yes".to_owned()],
        ];
        assert_eq!(table(&rows, false), "name  x\nRead  yes\n");
    }
}
