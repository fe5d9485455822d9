//! The protected-path list lives in three crates (file tools, shell analyzer, policy floor),
//! each close to the code that uses it. This test keeps them from drifting apart: every
//! example path any of the three lists gives is judged the same way by all three.

use std::path::Path;

fn verdicts(path: &str) -> [bool; 3] {
    let p = Path::new(path);
    [
        toolgate_tools::paths::is_protected_path(p),
        toolgate_shell::is_protected_path(p, &[], None),
        toolgate_policy::floor::is_protected(p),
    ]
}

#[test]
fn the_three_protected_path_lists_agree_on_every_example() {
    let mut examples: Vec<&str> = Vec::new();
    for e in toolgate_tools::paths::PROTECTED_PATHS {
        examples.extend(e.matches.iter().chain(e.near_misses));
    }
    for e in toolgate_shell::PROTECTED_PATHS {
        examples.extend(e.matches.iter().chain(e.not_matches));
    }
    for e in toolgate_policy::floor::PROTECTED {
        examples.extend(e.matches.iter().chain(e.not_matches));
    }
    assert!(examples.len() > 150, "{}", examples.len());
    let mut disagreements = Vec::new();
    for ex in examples {
        // The file tools' examples are relative to a root; judge both forms.
        for path in [ex.to_owned(), format!("/w/{}", ex.trim_start_matches('/'))] {
            let v = verdicts(&path);
            if v[0] != v[1] || v[1] != v[2] {
                disagreements.push(format!(
                    "{path}: tools={} shell={} policy={}",
                    v[0], v[1], v[2]
                ));
            }
        }
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}
