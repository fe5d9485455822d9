//! Word-level helpers: ANSI-C decoding, escapes, brace expansion, IFS splitting and the
//! variable table. The walk over word pieces lives in `expand.rs`.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

use brush_parser::ParserOptions;
use brush_parser::word::{BraceExpressionMember, BraceExpressionOrText};

/// A word after expansion, as the command will receive it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Field {
    /// The text; unresolved pieces keep their source spelling (`$DIR`, `$(…)`).
    pub text: String,
    /// Contains something the analyzer could not resolve.
    pub dynamic: bool,
    /// Contains unquoted glob characters (`*`, `?`, `[`).
    pub glob: bool,
    /// Stands for a process substitution (`<(…)` / `>(…)`); the index of its producer.
    pub procsub: Option<usize>,
    /// Comes from the output of a download (`$(curl …)`).
    pub net: bool,
    /// Carries secret material: the output of a command that read a credentials file or
    /// printed credentials (`$(cat ~/.ssh/id_rsa)`, `$(gh auth token)`), or a variable
    /// assigned from one.
    pub secret: bool,
}

impl Field {
    /// A plain literal field.
    pub fn lit(s: impl Into<String>) -> Self {
        Self {
            text: s.into(),
            ..Self::default()
        }
    }
}

/// A variable's value as far as the analysis knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Val {
    /// A scalar value.
    Scalar(String),
    /// An indexed array.
    Array(Vec<String>),
    /// Assigned from something unknown (a substitution, `read`, a conditional branch).
    Unknown,
}

/// Variables assigned in the script, plus positional parameters when known.
#[derive(Debug, Clone, Default)]
pub(crate) struct Vars {
    /// Assigned variables.
    pub map: HashMap<String, Val>,
    /// `$1…` of the current function or `-c` body, when known.
    pub positional: Option<Vec<String>>,
    /// `$0` when known.
    pub arg0: Option<String>,
    /// Variables whose value carries secret material (see [`Field::secret`]).
    pub secret: std::collections::HashSet<String>,
    /// Set once the script did something that can assign variables the analysis cannot name
    /// (a nameref, `declare "$n=v"`, `source FILE`, a trap action): from then on every
    /// variable is unknown, so no earlier value is trusted.
    pub poisoned: bool,
    /// Set once a script the analysis could not read ran in this shell (`source ./x.sh`)
    /// or a trap action that assigns variables was set: every variable is unknown from
    /// then on, and reading one makes the call opaque (why is kept here). Unlike
    /// [`Vars::poisoned`] nothing is opaque until a variable is read.
    pub untrusted: Option<String>,
}

/// What every variable reads as once [`Vars::poisoned`] is set.
static UNKNOWN: Val = Val::Unknown;

impl Vars {
    /// Looks a variable up; `IFS` defaults to space, tab, newline.
    pub fn get(&self, name: &str) -> Option<&Val> {
        if self.poisoned || self.untrusted.is_some() {
            return Some(&UNKNOWN);
        }
        self.map.get(name)
    }

    /// Records an assignment. Inside a conditional context a new value that differs from the
    /// current one (or a first assignment) makes the variable unknown, since either may hold
    /// at run time.
    pub fn assign(&mut self, name: &str, val: Val, conditional: bool) {
        if conditional {
            // A variable the script never assigned may come from the environment.
            let differs = self.map.get(name).is_none_or(|old| *old != val);
            if differs {
                self.map.insert(name.to_owned(), Val::Unknown);
            }
            return;
        }
        self.map.insert(name.to_owned(), val);
    }

    /// Forgets every variable's value for the rest of this shell (see [`Vars::poisoned`]).
    pub fn poison(&mut self) {
        self.poisoned = true;
    }
}

/// The default field separators.
pub(crate) const DEFAULT_IFS: &str = " \t\n";

/// Decodes the body of an ANSI-C quoted string (`$'…'`), as bash does.
pub(crate) fn decode_ansi_c(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    let take_digits = |i: &mut usize, max: usize, radix: u32| -> Option<u32> {
        let mut v: u32 = 0;
        let mut n = 0;
        while n < max && *i < chars.len() {
            match chars[*i].to_digit(radix) {
                Some(d) => {
                    v = v.saturating_mul(radix).saturating_add(d);
                    *i += 1;
                    n += 1;
                }
                None => break,
            }
        }
        (n > 0).then_some(v)
    };
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if c != '\\' || i >= chars.len() {
            out.push(c);
            continue;
        }
        let e = chars[i];
        i += 1;
        match e {
            'a' => out.push('\u{7}'),
            'b' => out.push('\u{8}'),
            'e' | 'E' => out.push('\u{1b}'),
            'f' => out.push('\u{c}'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\u{b}'),
            '\\' | '\'' | '"' | '?' => out.push(e),
            'x' => match take_digits(&mut i, 2, 16) {
                Some(v) => out.push(char::from_u32(v).unwrap_or('\u{fffd}')),
                None => out.push_str("\\x"),
            },
            'u' | 'U' => {
                let max = if e == 'u' { 4 } else { 8 };
                match take_digits(&mut i, max, 16) {
                    Some(v) => out.push(char::from_u32(v).unwrap_or('\u{fffd}')),
                    None => {
                        out.push('\\');
                        out.push(e);
                    }
                }
            }
            'c' => {
                if i < chars.len() {
                    let ctl = (chars[i] as u32) & 0x1f;
                    out.push(char::from_u32(ctl).unwrap_or('\u{fffd}'));
                    i += 1;
                }
            }
            '0'..='7' => {
                i -= 1;
                let v = take_digits(&mut i, 3, 8).unwrap_or(0) & 0xff;
                out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    out
}

/// Decodes `echo -e` / `printf %b` style escapes (like ANSI-C, but octal is `\0NNN`).
pub(crate) fn decode_echo_escapes(s: &str) -> String {
    // `\0NNN` → `\NNN` so the ANSI-C decoder reads it; everything else is shared.
    let mut fixed = String::with_capacity(s.len());
    let mut it = s.char_indices().peekable();
    while let Some((_, c)) = it.next() {
        if c == '\\'
            && let Some(&(_, '0')) = it.peek()
        {
            it.next();
            fixed.push('\\');
            if !it.peek().is_some_and(|(_, d)| d.is_digit(8)) {
                fixed.push('0');
            }
            continue;
        }
        fixed.push(c);
    }
    decode_ansi_c(&fixed)
}

/// Text of an escape-sequence piece: `\x` → `x`; inside double quotes the backslash stays
/// unless it escapes `$`, `` ` ``, `"`, `\` or a newline.
pub(crate) fn unescape_piece(s: &str, in_dq: bool) -> String {
    let mut chars = s.chars();
    match (chars.next(), chars.next()) {
        (Some('\\'), Some('\n')) => String::new(),
        (Some('\\'), Some(c)) => {
            if in_dq && !matches!(c, '$' | '`' | '"' | '\\') {
                format!("\\{c}")
            } else {
                c.to_string()
            }
        }
        _ => s.to_owned(),
    }
}

/// Undoes the backslash escaping inside a backquoted substitution.
pub(crate) fn unescape_backquoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&n) = chars.peek()
            && matches!(n, '\\' | '`' | '$')
        {
            out.push(n);
            chars.next();
            continue;
        }
        out.push(c);
    }
    out
}

/// Whether unquoted text contains glob characters.
pub(crate) fn has_glob(s: &str) -> bool {
    s.contains(['*', '?']) || s.find('[').is_some_and(|i| s[i + 1..].contains(']'))
}

/// Expands brace expressions in a raw word (`{rm,-rf,/}`, `x{a,b}`, `{1..3}`).
///
/// Returns `None` when the word has no brace expression, `Some(Err(()))` when expansion
/// would exceed `limit` words or the parser failed.
pub(crate) fn expand_braces(raw: &str, limit: usize) -> Option<Result<Vec<String>, ()>> {
    if !raw.contains('{') || !(raw.contains(',') || raw.contains("..")) {
        return None;
    }
    if crate::parse::has_huge_number(raw)
        || crate::normalize::unclosed_braces(raw) > crate::normalize::MAX_UNCLOSED_PARENS
    {
        return Some(Err(()));
    }
    let opts = ParserOptions::default();
    let parsed = catch_unwind(AssertUnwindSafe(|| {
        brush_parser::word::parse_brace_expansions(raw, &opts)
    }));
    let pieces = match parsed {
        Ok(Ok(Some(p))) => p,
        Ok(Ok(None)) | Ok(Err(_)) => return None,
        Err(_) => return Some(Err(())),
    };
    if !pieces
        .iter()
        .any(|p| matches!(p, BraceExpressionOrText::Expr(_)))
    {
        return None;
    }
    Some(expand_seq(&pieces, limit))
}

fn expand_seq(pieces: &[BraceExpressionOrText], limit: usize) -> Result<Vec<String>, ()> {
    let mut acc = vec![String::new()];
    for p in pieces {
        let alts: Vec<String> = match p {
            BraceExpressionOrText::Text(t) => vec![t.clone()],
            BraceExpressionOrText::Expr(members) => {
                let mut v = Vec::new();
                for m in members {
                    v.extend(expand_member(m, limit)?);
                    if v.len() > limit {
                        return Err(());
                    }
                }
                v
            }
        };
        if acc.len().saturating_mul(alts.len()) > limit {
            return Err(());
        }
        let mut next = Vec::with_capacity(acc.len() * alts.len());
        for a in &acc {
            for b in &alts {
                next.push(format!("{a}{b}"));
            }
        }
        acc = next;
    }
    Ok(acc)
}

fn expand_member(m: &BraceExpressionMember, limit: usize) -> Result<Vec<String>, ()> {
    match m {
        BraceExpressionMember::Child(c) => expand_seq(c, limit),
        BraceExpressionMember::NumberSequence {
            start,
            end,
            increment,
        } => {
            let step = increment.unsigned_abs().max(1);
            let count = start.abs_diff(*end) / step + 1;
            if count > limit as u64 {
                return Err(());
            }
            let mut v = Vec::new();
            let mut x = *start;
            for _ in 0..count {
                v.push(x.to_string());
                x = if start <= end {
                    x.saturating_add(step as i64)
                } else {
                    x.saturating_sub(step as i64)
                };
            }
            Ok(v)
        }
        BraceExpressionMember::CharSequence {
            start,
            end,
            increment,
        } => {
            let (s, e) = (*start as u32, *end as u32);
            let step = u32::try_from(increment.unsigned_abs().max(1)).unwrap_or(1);
            let mut v = Vec::new();
            let mut x = s;
            loop {
                if let Some(c) = char::from_u32(x) {
                    v.push(c.to_string());
                }
                if v.len() > limit {
                    return Err(());
                }
                if x == e {
                    break;
                }
                let next = if s <= e {
                    x.saturating_add(step)
                } else {
                    x.saturating_sub(step)
                };
                if (s <= e && next > e) || (s > e && next < e) || next == x {
                    break;
                }
                x = next;
            }
            Ok(v)
        }
    }
}

/// Applies `${x,,}`-style case changes.
pub(crate) fn change_case(s: &str, upper: bool, first_only: bool) -> String {
    if first_only {
        let mut c = s.chars();
        match c.next() {
            Some(f) => {
                let f: String = if upper {
                    f.to_uppercase().collect()
                } else {
                    f.to_lowercase().collect()
                };
                f + c.as_str()
            }
            None => String::new(),
        }
    } else if upper {
        s.to_uppercase()
    } else {
        s.to_lowercase()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_ansi_c() {
        assert_eq!(decode_ansi_c(r"\x72\x6d"), "rm");
        assert_eq!(decode_ansi_c(r"\162m"), "rm");
        assert_eq!(decode_ansi_c(r"\u0072m"), "rm");
        assert_eq!(decode_ansi_c(r"a\nb\'"), "a\nb'");
        assert_eq!(decode_echo_escapes(r"\0162m"), "rm");
    }

    #[test]
    fn expands_braces() {
        let v = expand_braces("{rm,-rf,/}", 256);
        assert_eq!(v, Some(Ok(vec!["rm".into(), "-rf".into(), "/".into()])));
        assert_eq!(
            expand_braces("{r,}m", 256),
            Some(Ok(vec!["rm".into(), "m".into()]))
        );
        assert_eq!(
            expand_braces("{1..3}", 256),
            Some(Ok(vec!["1".into(), "2".into(), "3".into()]))
        );
        assert_eq!(expand_braces("{1..100000}", 256), Some(Err(())));
        assert_eq!(expand_braces("{}", 256), None);
        assert_eq!(expand_braces("'{a,b}'", 256), None);
    }

    #[test]
    fn conditional_assignment_blurs() {
        let mut v = Vars::default();
        v.assign("x", Val::Scalar("rm".into()), false);
        v.assign("x", Val::Scalar("ls".into()), true);
        assert_eq!(v.get("x"), Some(&Val::Unknown));
        // Never assigned before the branch: the environment's value or "a" afterwards.
        v.assign("y", Val::Scalar("a".into()), true);
        assert_eq!(v.get("y"), Some(&Val::Unknown));
        v.poison();
        assert_eq!(v.get("x"), Some(&Val::Unknown));
        assert_eq!(v.get("never_set"), Some(&Val::Unknown));
    }
}
