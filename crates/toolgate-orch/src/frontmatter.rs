//! The YAML front matter of `SKILL.md` and agent definition files: the subset those files
//! use — `key: value` with plain or quoted scalars, `[a, b]` and `- item` lists, and `|` /
//! `>` block scalars — parsed strictly enough that a mistake is reported with its file and
//! line instead of being read as something else.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use thiserror::Error;

/// The largest definition file read: a skill's instructions, not a document store.
pub const MAX_DEFINITION_BYTES: u64 = 256 * 1024;

/// A front matter value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A scalar.
    Text(String),
    /// A list of scalars.
    List(Vec<String>),
}

impl Value {
    /// The value as a list: a list as it is, a scalar split at top-level commas
    /// (`Read, Grep, Bash(git add:*)`).
    pub fn items(&self) -> Vec<String> {
        match self {
            Value::List(l) => l.clone(),
            Value::Text(t) => split_commas(t),
        }
    }

    /// The value as text (a list joined with `, `).
    pub fn text(&self) -> String {
        match self {
            Value::Text(t) => t.clone(),
            Value::List(l) => l.join(", "),
        }
    }
}

/// A definition file: its front matter and its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// The keys, in any order.
    pub fields: BTreeMap<String, Value>,
    /// The Markdown after the front matter.
    pub body: String,
}

/// Why a definition file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{}:{line}: {message}", path.display())]
pub struct FrontMatterError {
    /// The file.
    pub path: PathBuf,
    /// The 1-based line (0: the file as a whole).
    pub line: usize,
    /// What is wrong, and what to write instead.
    pub message: String,
}

/// Reads and parses `path`.
pub fn read(path: &Path) -> Result<Document, FrontMatterError> {
    let err = |line: usize, message: String| FrontMatterError {
        path: path.to_path_buf(),
        line,
        message,
    };
    let meta = std::fs::metadata(path).map_err(|e| err(0, format!("cannot read: {e}")))?;
    if meta.len() > MAX_DEFINITION_BYTES {
        return Err(err(
            0,
            format!(
                "the file is {} bytes, over the {MAX_DEFINITION_BYTES} byte limit",
                meta.len()
            ),
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| err(0, format!("cannot read: {e}")))?;
    parse(&text).map_err(|(line, message)| err(line, message))
}

/// Parses a document; the error is `(line, message)`.
pub fn parse(text: &str) -> Result<Document, (usize, String)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines: Vec<&str> = text.lines().collect();
    if lines.first().map(|l| l.trim_end()) != Some("---") {
        return Err((
            1,
            "the file must start with YAML front matter: a `---` line, `name:` and `description:` lines, and a closing `---`".into(),
        ));
    }
    let Some(close) = lines
        .iter()
        .skip(1)
        .position(|l| l.trim_end() == "---")
        .map(|i| i + 1)
    else {
        return Err((
            lines.len(),
            "the front matter is not closed: add a `---` line after it".into(),
        ));
    };
    let mut fields = BTreeMap::new();
    let mut i = 1;
    while i < close {
        let line = lines[i];
        let lineno = i + 1;
        i += 1;
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            return Err((
                lineno,
                "unexpected indentation: each key starts a line (`key: value`)".into(),
            ));
        }
        let Some((key, rest)) = line.split_once(':') else {
            return Err((lineno, format!("`{}` is not `key: value`", line.trim())));
        };
        let key = key.trim();
        if key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err((lineno, format!("`{key}` is not a valid key")));
        }
        let rest = rest.trim();
        let value = if rest.is_empty() {
            // A block list on the following, indented lines.
            let mut items = Vec::new();
            while i < close && (lines[i].starts_with([' ', '\t']) || lines[i].trim().is_empty()) {
                let item = lines[i].trim();
                i += 1;
                if item.is_empty() {
                    continue;
                }
                let Some(item) = item
                    .strip_prefix("- ")
                    .or_else(|| (item == "-").then_some(""))
                else {
                    return Err((i, format!("`{item}` is not a list item (`- value`)")));
                };
                items.push(scalar(item.trim()).map_err(|m| (i, m))?);
            }
            if items.is_empty() {
                Value::Text(String::new())
            } else {
                Value::List(items)
            }
        } else if rest == "|" || rest == ">" || rest == "|-" || rest == ">-" {
            let mut block = Vec::new();
            while i < close && (lines[i].starts_with([' ', '\t']) || lines[i].trim().is_empty()) {
                block.push(lines[i].trim());
                i += 1;
            }
            let sep = if rest.starts_with('|') { "\n" } else { " " };
            Value::Text(block.join(sep).trim().to_owned())
        } else if let Some(inner) = rest.strip_prefix('[') {
            let Some(inner) = inner.strip_suffix(']') else {
                return Err((
                    lineno,
                    format!("the list of `{key}` is not closed with `]`"),
                ));
            };
            Value::List(
                split_commas(inner)
                    .iter()
                    .map(|s| scalar(s))
                    .collect::<Result<_, _>>()
                    .map_err(|m| (lineno, m))?,
            )
        } else {
            Value::Text(scalar(rest).map_err(|m| (lineno, m))?)
        };
        if fields.insert(key.to_owned(), value).is_some() {
            return Err((lineno, format!("`{key}` is given twice")));
        }
    }
    let body = lines[close + 1..].join("\n");
    Ok(Document {
        fields,
        body: body.trim_start_matches('\n').to_owned(),
    })
}

/// A plain or quoted scalar.
fn scalar(s: &str) -> Result<String, String> {
    for q in ['"', '\''] {
        if let Some(inner) = s.strip_prefix(q) {
            return inner
                .strip_suffix(q)
                .map(|v| {
                    if q == '"' {
                        v.replace("\\\"", "\"")
                    } else {
                        v.replace("''", "'")
                    }
                })
                .ok_or_else(|| format!("the quoted value {s} is not closed with {q}"));
        }
    }
    // ` #` starts a comment after a plain value.
    let plain = s.split(" #").next().unwrap_or(s).trim();
    Ok(plain.to_owned())
}

/// Splits at commas outside parentheses: `Read, Bash(git add:*, x)` has two items.
fn split_commas(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth <= 0 => {
                let item = cur.trim();
                if !item.is_empty() {
                    out.push(item.to_owned());
                }
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    let item = cur.trim();
    if !item.is_empty() {
        out.push(item.to_owned());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_forms_skill_files_use() {
        let doc = parse(
            "---\nname: pdf\ndescription: \"Fill PDF forms: the fields\"\nallowed-tools: Read, Bash(python3 fill.py:*), Grep\nlist:\n  - a\n  - 'b c'\ninline: [x, \"y\"]\nlong: >\n  one\n  two\n---\n\n# Body\ntext\n",
        )
        .unwrap();
        assert_eq!(doc.fields["name"], Value::Text("pdf".into()));
        assert_eq!(
            doc.fields["description"].text(),
            "Fill PDF forms: the fields"
        );
        assert_eq!(
            doc.fields["allowed-tools"].items(),
            vec!["Read", "Bash(python3 fill.py:*)", "Grep"]
        );
        assert_eq!(
            doc.fields["list"],
            Value::List(vec!["a".into(), "b c".into()])
        );
        assert_eq!(doc.fields["inline"].items(), vec!["x", "y"]);
        assert_eq!(doc.fields["long"].text(), "one two");
        assert_eq!(doc.body, "# Body\ntext");
    }

    #[test]
    fn mistakes_name_their_line() {
        for (text, line) in [
            ("no front matter", 1),
            ("---\nname: x\n", 2),
            ("---\nname x\n---\n", 2),
            ("---\nname: x\n  indented: y\n---\n", 3),
            ("---\nname: \"x\n---\n", 2),
            ("---\nname: x\nname: y\n---\n", 3),
            ("---\ntools: [a, b\n---\n", 2),
            ("---\ntools:\n  a\n---\n", 3),
        ] {
            let got = parse(text).map(|_| ()).unwrap_err();
            assert_eq!(got.0, line, "{text:?}: {}", got.1);
        }
    }
}
