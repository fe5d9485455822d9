//! Property tests: lexical normalisation and the path-class table.
//!
//! Every layer judges a path after [`normalize_lexically`] (or [`Workspace::absolutize`]),
//! and `classify` promises to work on that normal form. So:
//!
//! - the normal form is absolute, holds no `.` or `..`, and normalising again changes nothing;
//! - inserting `./` or `NAME/../` anywhere in a path changes neither its normal form nor its
//!   classes (protected / secret / personal);
//! - a relative path whose `..` never climbs above its start stays inside the root it is
//!   joined to, and a normalised path is inside a root only if it is below it;
//! - names compare ASCII case-insensitively below the anchor (`.GIT/hooks` is `.git/hooks`).

use std::path::{Component, Path, PathBuf};

use proptest::prelude::*;
use toolgate_core::Workspace;
use toolgate_core::session::normalize_lexically;
use toolgate_protocol::paths::{Classes, EXAMPLE_HOME, EXAMPLE_ROOT, classify};

/// Names that the path-class table cares about, and plain ones.
const NAMES: &[&str] = &[
    ".git",
    "hooks",
    "config",
    ".ssh",
    "id_ed25519",
    ".env",
    ".bashrc",
    ".aws",
    "credentials",
    ".toolgate",
    "settings.json",
    ".cargo",
    "src",
    "a",
    "b",
    ".env.example",
    "Documents",
    ".vscode",
    "node_modules",
    ".npmrc",
];

#[derive(Debug, Clone)]
enum Part {
    Name(&'static str),
    Cur,
    Parent,
}

fn part() -> impl Strategy<Value = Part> {
    prop_oneof![
        6 => prop::sample::select(NAMES).prop_map(Part::Name),
        1 => Just(Part::Cur),
        2 => Just(Part::Parent),
    ]
}

/// One of the anchors the table's examples use, or `/`.
fn base() -> impl Strategy<Value = &'static str> {
    prop::sample::select(&[EXAMPLE_ROOT, EXAMPLE_HOME, "/", "/etc", "/w/sub"][..])
}

fn join(base: &str, parts: &[Part]) -> PathBuf {
    let mut s = base.trim_end_matches('/').to_owned();
    for p in parts {
        s.push('/');
        s.push_str(match p {
            Part::Name(n) => n,
            Part::Cur => ".",
            Part::Parent => "..",
        });
    }
    if s.is_empty() {
        s.push('/');
    }
    PathBuf::from(s)
}

fn classes_of(
    path: &Path,
) -> (
    Option<&'static str>,
    Option<&'static str>,
    Option<&'static str>,
) {
    let roots = [Path::new(EXAMPLE_ROOT)];
    let c: Classes = classify(path, &roots, Some(Path::new(EXAMPLE_HOME)));
    (
        c.protected.map(|e| e.kind),
        c.secret.map(|e| e.kind),
        c.personal.map(|e| e.kind),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn the_normal_form_is_absolute_clean_and_stable(
        base in base(),
        parts in prop::collection::vec(part(), 0..10),
    ) {
        let n = normalize_lexically(&join(base, &parts));
        prop_assert!(n.is_absolute(), "{}", n.display());
        prop_assert!(
            n.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_))),
            "{}", n.display()
        );
        prop_assert_eq!(normalize_lexically(&n), n.clone());
    }

    #[test]
    fn dot_and_name_dot_dot_insertions_change_nothing(
        base in base(),
        parts in prop::collection::vec(part(), 0..8),
        at in any::<prop::sample::Index>(),
        insert_name in prop::sample::select(NAMES),
        cur in any::<bool>(),
    ) {
        let original = join(base, &parts);
        let i = at.index(parts.len() + 1);
        let mut longer = parts.clone();
        if cur {
            longer.insert(i, Part::Cur);
        } else {
            longer.insert(i, Part::Parent);
            longer.insert(i, Part::Name(insert_name));
        }
        let changed = join(base, &longer);
        let (a, b) = (normalize_lexically(&original), normalize_lexically(&changed));
        prop_assert_eq!(&a, &b, "{} vs {}", original.display(), changed.display());
        prop_assert_eq!(classes_of(&a), classes_of(&b));
    }

    #[test]
    fn climbing_no_higher_than_the_start_stays_inside_the_root(
        parts in prop::collection::vec(part(), 0..12),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        let mut rel = PathBuf::new();
        // How far the `..`s climb above the root at their highest.
        let (mut depth, mut lowest) = (0i32, 0i32);
        for p in &parts {
            match p {
                Part::Name(n) => { rel.push(n); depth += 1; }
                Part::Cur => rel.push("."),
                Part::Parent => { rel.push(".."); depth -= 1; lowest = lowest.min(depth); }
            }
        }
        let abs = Workspace::absolutize(ws.root(), &rel);
        if lowest >= 0 {
            prop_assert!(ws.contains(&abs), "{} left {}", rel.display(), ws.root().display());
        }
        if ws.contains(&abs) {
            prop_assert!(abs.starts_with(ws.root()));
            prop_assert!(abs.components().all(|c| !matches!(c, Component::ParentDir | Component::CurDir)));
        }
    }

    #[test]
    fn names_below_the_anchor_compare_without_ascii_case(
        base in prop::sample::select(&[EXAMPLE_ROOT, EXAMPLE_HOME][..]),
        parts in prop::collection::vec(prop::sample::select(NAMES), 1..6),
        upper in prop::collection::vec(any::<bool>(), 6),
    ) {
        let lower = join(base, &parts.iter().map(|n| Part::Name(n)).collect::<Vec<_>>());
        let mut mixed = PathBuf::from(base);
        for (n, up) in parts.iter().zip(&upper) {
            mixed.push(if *up { n.to_ascii_uppercase() } else { (*n).to_owned() });
        }
        let (l, m) = (classes_of(&lower), classes_of(&mixed));
        // Home entries are anchored at the home directory by path, the rest by name.
        prop_assert_eq!(l.0.is_some(), m.0.is_some(), "{} vs {}", lower.display(), mixed.display());
        prop_assert_eq!(l.1.is_some(), m.1.is_some(), "{} vs {}", lower.display(), mixed.display());
    }
}
