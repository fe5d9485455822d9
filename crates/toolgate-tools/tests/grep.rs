//! Grep, through the Gate, checked against `rg` on a generated tree (skipped when `rg` is
//! not installed).

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use serde_json::{Value, json};
use toolgate_protocol::ErrorCode;

fn rg_available() -> bool {
    Command::new("rg")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A deterministic tree with ignored, hidden, binary, CRLF and unicode files.
fn make_tree(env: &Env) {
    std::fs::create_dir_all(env.path(".git")).unwrap();
    env.write(".gitignore", "target/\n*.log\n");
    env.write(
        "src/main.rs",
        "use std::io;\nuse crate::util;\n\n// TODO: handle errors\nfn main() {\n    let e = ParseError::new();\n    println!(\"hello\");\n}\n\nstruct Point {\n    x: i32,\n    y: i32,\n}\n",
    );
    env.write(
        "src/lib.rs",
        "pub mod util;\n/// todo: document\npub fn parse(s: &str) -> Result<(), IoError> {\n    // TODO later\n    Ok(())\n}\n",
    );
    env.write(
        "src/util/mod.rs",
        "pub fn helper() -> u32 {\n    42\n}\n// Grüße aus Köln: GRÜSSE\n",
    );
    env.write("src/crlf.rs", "fn windows() {}\r\n// TODO crlf\r\n");
    env.write("docs/readme.md", "# Title\nSome TODO text.\nfn in docs\n");
    env.write(
        "scripts/tool.py",
        "def main():\n    # TODO python\n    raise ValueError('x')\n",
    );
    env.write("weird name.txt", "TODO with spaces\n");
    env.write("target/out.rs", "fn ignored() {} // TODO\n");
    env.write("app.log", "TODO in a log\n");
    env.write(".hidden/secret.rs", "fn hidden() {} // TODO\n");
    std::fs::write(env.path("bin.dat"), b"no match here\0TODO after nul\n").unwrap();
    for i in 0..40 {
        let body: String = (0..60)
            .map(|j| match (i * 7 + j) % 9 {
                0 => format!("fn generated_{i}_{j}() {{}}\n"),
                1 => format!("// TODO item {i} {j}\n"),
                2 => format!("let value{j} = KeyError::from({i});\n"),
                _ => format!("line {i}.{j} plain text\n"),
            })
            .collect();
        env.write(&format!("gen/d{}/file{i:02}.rs", i % 5), &body);
    }
}

fn rg(cwd: &Path, args: &[&str]) -> String {
    let out = Command::new("rg")
        .args(args)
        .current_dir(cwd)
        .env_remove("RIPGREP_CONFIG_PATH")
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

fn sorted(text: &str) -> Vec<String> {
    let mut v: Vec<String> = text.lines().map(str::to_owned).collect();
    v.sort();
    v
}

/// Compares line by line, reporting the first difference.
fn same(ours: &str, theirs: &str, input: &Value) {
    let (a, b): (Vec<&str>, Vec<&str>) = (ours.split('\n').collect(), theirs.split('\n').collect());
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(x, y, "query {input}: line {i} differs");
    }
    assert_eq!(
        a.len(),
        b.len(),
        "query {input}: ours has {} lines, rg {}",
        a.len(),
        b.len()
    );
}

/// Runs one query both ways and compares.
async fn check(env: &Env, input: Value, rg_args: &[&str]) {
    let ws = env.ws();
    let mut input = input;
    input["head_limit"] = json!(0);
    let mode = input["output_mode"]
        .as_str()
        .unwrap_or("files_with_matches")
        .to_owned();
    let ours = env.ok("Grep", input.clone()).await;
    let target = input["path"]
        .as_str()
        .map_or_else(|| ws.display().to_string(), str::to_owned);
    let mut args: Vec<&str> = rg_args.to_vec();
    args.push("--");
    args.push(input["pattern"].as_str().unwrap());
    args.push(&target);
    match mode.as_str() {
        "files_with_matches" => {
            args.insert(0, "-l");
            let theirs = rg(&ws, &args);
            let ours_list = if ours == "No files found" {
                String::new()
            } else {
                ours.split_once('\n')
                    .map_or(String::new(), |(_, rest)| rest.to_owned())
            };
            assert_eq!(sorted(&ours_list), sorted(&theirs), "query {input}");
        }
        "count" => {
            args.splice(0..0, ["-c", "--sort", "path"]);
            let theirs = rg(&ws, &args);
            let ours_counts = if ours == "No matches found" {
                String::new()
            } else {
                ours.split("\n\nFound ").next().unwrap().to_owned() + "\n"
            };
            same(&ours_counts, &theirs, &input);
        }
        _ => {
            args.splice(0..0, ["--sort", "path"]);
            if input["-n"] != json!(false) {
                args.insert(0, "-n");
            }
            let theirs = rg(&ws, &args);
            let ours_text = if ours == "No matches found" {
                String::new()
            } else {
                ours + "\n"
            };
            same(&ours_text, &theirs, &input);
        }
    }
}

#[tokio::test]
async fn results_equal_rg() {
    if !rg_available() {
        eprintln!("skipped: rg is not installed");
        return;
    }
    let env = Env::new();
    make_tree(&env);
    let c = "content";
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (json!({"pattern": "TODO"}), vec![]),
        (json!({"pattern": "fn \\w+"}), vec![]),
        (json!({"pattern": "TODO", "output_mode": c}), vec![]),
        (
            json!({"pattern": "TODO", "output_mode": c, "-n": false}),
            vec![],
        ),
        (json!({"pattern": "TODO", "output_mode": "count"}), vec![]),
        (
            json!({"pattern": "todo", "-i": true, "output_mode": c}),
            vec!["-i"],
        ),
        (
            json!({"pattern": "todo", "-i": true, "output_mode": "count"}),
            vec!["-i"],
        ),
        (
            json!({"pattern": "[A-Z][a-z]+Error", "output_mode": c}),
            vec![],
        ),
        (json!({"pattern": "[A-Z][a-z]+Error"}), vec![]),
        (json!({"pattern": "^use ", "output_mode": c}), vec![]),
        (json!({"pattern": "\\)\\s*\\{$", "output_mode": c}), vec![]),
        (
            json!({"pattern": "TODO", "output_mode": c, "-C": 2}),
            vec!["-C", "2"],
        ),
        (
            json!({"pattern": "TODO", "output_mode": c, "context": 1}),
            vec!["-C", "1"],
        ),
        (
            json!({"pattern": "Error", "output_mode": c, "-A": 1}),
            vec!["-A", "1"],
        ),
        (
            json!({"pattern": "Error", "output_mode": c, "-B": 3}),
            vec!["-B", "3"],
        ),
        (
            json!({"pattern": "[A-Z]\\w+Error", "output_mode": c, "-o": true}),
            vec!["-o"],
        ),
        (
            json!({"pattern": "TODO", "glob": "*.rs", "output_mode": c}),
            vec!["--glob", "*.rs"],
        ),
        (
            json!({"pattern": "TODO", "glob": "*.{md,py}"}),
            vec!["--glob", "*.{md,py}"],
        ),
        (
            json!({"pattern": "TODO", "type": "py", "output_mode": c}),
            vec!["--type", "py"],
        ),
        (
            json!({"pattern": "TODO", "type": "rust", "output_mode": "count"}),
            vec!["--type", "rust"],
        ),
        (
            json!({"pattern": "grüße", "-i": true, "output_mode": c}),
            vec!["-i"],
        ),
        (
            json!({"pattern": "struct \\w+ \\{.*?\\}", "multiline": true, "output_mode": c}),
            vec!["-U", "--multiline-dotall"],
        ),
        (
            json!({"pattern": "x: i32,\\n\\s+y", "multiline": true}),
            vec!["-U", "--multiline-dotall"],
        ),
    ];
    for (input, args) in cases {
        check(&env, input, &args).await;
    }
    // A single file as the path: no path prefix, as rg prints it.
    let file = env.path("src/main.rs").display().to_string();
    check(
        &env,
        json!({"pattern": "i32", "path": file, "output_mode": c}),
        &[],
    )
    .await;
    check(
        &env,
        json!({"pattern": "i32", "path": file, "output_mode": "count"}),
        &[],
    )
    .await;
    let sub = env.path("gen/d1").display().to_string();
    check(
        &env,
        json!({"pattern": "KeyError", "path": sub, "output_mode": c}),
        &[],
    )
    .await;
}

#[tokio::test]
async fn default_mode_head_limit_and_offset() {
    let env = Env::new();
    make_tree(&env);
    let out = env.ok("Grep", json!({"pattern": "TODO"})).await;
    assert!(out.starts_with("Found "), "{out}");
    assert!(!out.contains("target/out.rs") && !out.contains("app.log") && !out.contains(".hidden"));
    let all = env
        .ok(
            "Grep",
            json!({"pattern": "TODO", "output_mode": "content", "head_limit": 0}),
        )
        .await;
    let all: Vec<&str> = all.lines().collect();
    assert!(all.len() > 250, "{}", all.len());
    let first = env
        .ok("Grep", json!({"pattern": "TODO", "output_mode": "content"}))
        .await;
    let body: Vec<&str> = first.lines().take_while(|l| !l.is_empty()).collect();
    assert_eq!(body, all[..250]);
    assert!(
        first.contains(&format!(
            "Showing 250 of {} entries after offset 0; use offset=250",
            all.len()
        )),
        "{first}"
    );
    let page = env
        .ok(
            "Grep",
            json!({"pattern": "TODO", "output_mode": "content", "offset": 5, "head_limit": 3}),
        )
        .await;
    let body: Vec<&str> = page.lines().take(3).collect();
    assert_eq!(body, all[5..8]);
}

#[tokio::test]
async fn errors_name_the_problem() {
    let env = Env::new();
    env.write("a.txt", "x\n");
    let e = env.err("Grep", json!({"pattern": "a(b"})).await;
    assert_code(&e, ErrorCode::InvalidRequest, "regex parse error");
    assert!(e.message.contains("unclosed group"), "{}", e.message);
    let e = env.err("Grep", json!({"pattern": "a\\nb"})).await;
    assert_code(&e, ErrorCode::InvalidRequest, "multiline");
    let e = env
        .err("Grep", json!({"pattern": "x", "type": "nosuchtype"}))
        .await;
    assert_code(&e, ErrorCode::InvalidRequest, "nosuchtype");
    let e = env
        .err("Grep", json!({"pattern": "x", "output_mode": "lines"}))
        .await;
    assert_eq!(e.code, ErrorCode::InvalidInput);
    let e = env
        .err("Grep", json!({"pattern": "x", "path": "missing"}))
        .await;
    assert_code(&e, ErrorCode::InvalidRequest, "does not exist");
    assert_eq!(
        env.ok("Grep", json!({"pattern": "zzz", "output_mode": "content"}))
            .await,
        "No matches found"
    );
}
