//! Bash specifiers: the pattern language of `Bash(...)` rules, and the forms of a subcommand
//! that allow and deny rules are matched against.
//!
//! Allow rules see a subcommand with only Claude Code's safe wrappers and known-safe
//! environment assignments removed; deny and ask rules see through every wrapper, every
//! assignment, a program's directory and flag spelling (`rm -fr`, `rm -r -f`,
//! `rm --recursive --force` all match `Bash(rm -rf *)`). Deny sees more than allow, so a
//! spelling trick can only make a call ask, never let it through.

use std::collections::BTreeSet;

use regex::Regex;

/// A compiled `Bash(...)` pattern.
#[derive(Debug, Clone)]
pub(crate) struct BashPattern {
    /// The pattern after whitespace folding and `:*` rewriting.
    pub text: String,
    kind: Kind,
    /// The literal program name the pattern starts with, for indexing.
    pub first: Option<String>,
    /// Flag-insensitive form for deny/ask matching.
    flags: Option<FlagForm>,
    /// The longest literal piece a wildcard pattern requires: a cheap test before the
    /// regex.
    needle: Option<String>,
}

#[derive(Debug, Clone)]
enum Kind {
    Any,
    Exact(String),
    /// `prefix *`: the prefix alone or followed by a space and anything.
    Prefix(String),
    Regex(Regex),
}

/// `prog -xy --long rest…`: the program, its required flags and a pattern over the
/// remaining words.
#[derive(Debug, Clone)]
struct FlagForm {
    program: String,
    flags: BTreeSet<String>,
    rest: Box<BashPattern>,
}

impl BashPattern {
    /// Compiles a pattern. `Bash(*)`, `Bash()` and the empty pattern match everything.
    pub fn new(raw: &str) -> Result<Self, String> {
        let folded = fold_ws(raw);
        let mut text = folded.as_str();
        let rewritten;
        if let Some(stem) = text.strip_suffix(":*") {
            // Legacy `npm run test:*` ≡ `npm run test *`; a mid-pattern `:` stays literal.
            rewritten = format!("{} *", stem.trim_end());
            text = rewritten.as_str();
        }
        let text = text.to_owned();
        let kind = compile_kind(&text)?;
        let first = first_literal_word(&text);
        let flags = flag_form(&text)?;
        let needle = needle_of(&text, &kind);
        Ok(Self {
            text,
            kind,
            first,
            flags,
            needle,
        })
    }

    /// The regex of a general wildcard pattern (not exact, prefix or any).
    pub fn regex_str(&self) -> Option<&str> {
        match &self.kind {
            Kind::Regex(re) => Some(re.as_str()),
            _ => None,
        }
    }

    /// Whether the pattern is a wildcard (not an exact command).
    pub fn is_wildcard(&self) -> bool {
        !matches!(self.kind, Kind::Exact(_))
    }

    /// Whether the pattern matches everything.
    pub fn is_any(&self) -> bool {
        matches!(self.kind, Kind::Any)
    }

    /// Plain textual match.
    pub fn matches(&self, text: &str) -> bool {
        match &self.kind {
            Kind::Any => true,
            Kind::Exact(e) => e == text,
            Kind::Prefix(p) => text
                .strip_prefix(p.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(' ')),
            Kind::Regex(re) => {
                self.needle.as_deref().is_none_or(|n| text.contains(n)) && re.is_match(text)
            }
        }
    }

    /// Deny-side match: textual, or flag-insensitive on the words.
    pub fn matches_deny(&self, text: &str, words: &[String]) -> bool {
        if self.matches(text) {
            return true;
        }
        let Some(form) = &self.flags else {
            return false;
        };
        let Some((prog, rest)) = words.split_first() else {
            return false;
        };
        if basename(prog) != form.program {
            return false;
        }
        let (have, positional) = split_flags(&form.program, rest);
        if !form.flags.is_subset(&have) {
            return false;
        }
        form.rest.matches(&positional.join(" "))
    }
}

fn compile_kind(text: &str) -> Result<Kind, String> {
    if text.is_empty() || text == "*" {
        return Ok(Kind::Any);
    }
    if !text.contains('*') {
        return Ok(Kind::Exact(text.to_owned()));
    }
    if let Some(stem) = text.strip_suffix(" *")
        && !stem.contains('*')
    {
        return Ok(Kind::Prefix(stem.to_owned()));
    }
    let (body, tail) = match text.strip_suffix(" *") {
        Some(stem) => (stem, "(?: .*)?"),
        None => (text, ""),
    };
    let mut re = String::from("(?s)^");
    for (i, part) in body.split('*').enumerate() {
        if i > 0 {
            re.push_str(".*");
        }
        re.push_str(&regex::escape(part));
    }
    re.push_str(tail);
    re.push('$');
    Regex::new(&re)
        .map(Kind::Regex)
        .map_err(|e| format!("cannot compile the pattern: {e}"))
}

fn needle_of(text: &str, kind: &Kind) -> Option<String> {
    if !matches!(kind, Kind::Regex(_)) {
        return None;
    }
    let body = text.strip_suffix(" *").unwrap_or(text);
    body.split('*')
        .max_by_key(|p| p.len())
        .filter(|p| p.len() >= 2)
        .map(str::to_owned)
}

fn first_literal_word(text: &str) -> Option<String> {
    let word = text.split(' ').next()?;
    // A first word that is all there is and has no `*` is literal; so is one followed by a
    // space.
    if word.is_empty() || word.contains('*') {
        return None;
    }
    Some(word.to_owned())
}

fn flag_form(text: &str) -> Result<Option<FlagForm>, String> {
    let words: Vec<&str> = text.split(' ').collect();
    let Some((prog, rest)) = words.split_first() else {
        return Ok(None);
    };
    if prog.contains('*') || !rest.iter().any(|w| is_flag(w)) {
        return Ok(None);
    }
    let owned: Vec<String> = rest.iter().map(|w| (*w).to_owned()).collect();
    let (flags, positional) = split_flags(prog, &owned);
    if flags.is_empty() {
        return Ok(None);
    }
    let rest_text = positional.join(" ");
    let kind = compile_kind(&rest_text)?;
    let rest = BashPattern {
        needle: needle_of(&rest_text, &kind),
        text: rest_text,
        kind,
        first: None,
        flags: None,
    };
    Ok(Some(FlagForm {
        program: basename(prog).to_owned(),
        flags,
        rest: Box::new(rest),
    }))
}

fn is_flag(w: &str) -> bool {
    w.len() > 1 && w.starts_with('-') && !w.contains('*') && w != "--"
}

/// Long options and capital spellings that mean the same as a short flag, per program. Used
/// only on the deny side, where a broader match is the safe direction.
const FLAG_ALIASES: &[(&str, &str, &str)] = &[
    ("*", "--recursive", "r"),
    ("*", "--force", "f"),
    ("rm", "-R", "r"),
    ("cp", "-R", "r"),
    ("chmod", "-R", "r"),
    ("chown", "-R", "r"),
    ("chgrp", "-R", "r"),
    ("rm", "--no-preserve-root", "no-preserve-root"),
    ("git", "--force-with-lease", "f"),
    ("git", "--hard", "hard"),
];

/// Splits words into a set of flags (clusters exploded, aliases applied) and the positional
/// words. Everything after `--` is positional.
fn split_flags(program: &str, words: &[String]) -> (BTreeSet<String>, Vec<String>) {
    let prog = basename(program);
    let mut flags = BTreeSet::new();
    let mut positional = Vec::new();
    let mut after_dashdash = false;
    for w in words {
        if after_dashdash || !is_flag(w) {
            if w == "--" && !after_dashdash {
                after_dashdash = true;
                continue;
            }
            positional.push(w.clone());
            continue;
        }
        if let Some(&(_, _, canon)) = FLAG_ALIASES
            .iter()
            .find(|(p, spelled, _)| (*p == "*" || *p == prog) && spelled == w)
        {
            flags.insert(canon.to_owned());
        } else if let Some(long) = w.strip_prefix("--") {
            flags.insert(long.split('=').next().unwrap_or(long).to_owned());
        } else {
            for c in w.chars().skip(1) {
                let short = format!("-{c}");
                match FLAG_ALIASES
                    .iter()
                    .find(|(p, spelled, _)| (*p == "*" || *p == prog) && *spelled == short)
                {
                    Some(&(_, _, canon)) => flags.insert(canon.to_owned()),
                    None => flags.insert(c.to_string()),
                };
            }
        }
    }
    (flags, positional)
}

/// `/usr/bin/rm` → `rm`.
pub(crate) fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Collapses runs of whitespace into single spaces and trims.
pub(crate) fn fold_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> BashPattern {
        BashPattern::new(s).unwrap()
    }

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn pattern_forms() {
        assert!(p("npm run build").matches("npm run build"));
        assert!(!p("npm run build").matches("npm run build --prod"));
        assert!(p("ls *").matches("ls -la"));
        assert!(p("ls *").matches("ls"));
        assert!(!p("ls *").matches("lsof"));
        assert!(p("ls*").matches("lsof"));
        assert!(p("npm run test:*").matches("npm run test --watch"));
        assert!(!p("git:* push").matches("git push"));
        assert!(p("git:* push").matches("git:x push"));
        assert!(p("git * main").matches("git push origin main"));
        assert!(p("* install").matches("npm install"));
        assert!(p("*").matches("anything at all"));
        assert!(p("  npm   test ").matches("npm test"));
    }

    #[test]
    fn deny_is_flag_insensitive() {
        let rule = p("rm -rf *");
        for s in [
            "rm -fr x",
            "rm -r -f x",
            "rm --recursive --force x",
            "rm -Rf x",
            "rm -rfv x",
        ] {
            assert!(rule.matches_deny(s, &words(s)), "{s}");
        }
        assert!(!rule.matches_deny("rm -r x", &words("rm -r x")));
        assert!(!rule.matches_deny("rmdir -rf x", &words("rmdir -rf x")));
    }
}
