//! Every command example in the documentation runs: each ```sh (or ```bash, ```shell)
//! block of `docs/*.md` and `README.md` is run by bash against the built binary in a
//! scratch workspace, and each `$ ` line of a ```console block too, so the docs cannot
//! drift from the binary unnoticed.
//!
//! Markers, in an HTML comment on the line before the fence:
//! - `<!-- not-tested: REASON -->`: the block cannot run here (it needs the network, another
//!   program such as Claude Code's CLI, or it builds and installs); the test lists these.
//! - `<!-- file: NAME -->`: the block is a file's content, not commands; it is checked with
//!   `sh -n`.
//! - `<!-- exit: N -->`: the exit status the block ends with, when it is not 0.
//!
//! In a console block, a `(exit N)` at the end of an output line gives the status of the
//! command above it. Output is not compared: a transcript shows one machine's numbers.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one example may run before it counts as hung.
const EXAMPLE_TIMEOUT: Duration = Duration::from_secs(60);

/// Fence languages whose blocks are commands.
const SHELL_LANGS: [&str; 3] = ["sh", "bash", "shell"];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One fenced block and the marker comment before it.
struct Block {
    file: String,
    line: usize,
    lang: String,
    body: String,
    marker: Option<String>,
}

fn blocks(file: &Path) -> Vec<Block> {
    let text = std::fs::read_to_string(file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(lang) = lines[i].strip_prefix("```") else {
            i += 1;
            continue;
        };
        let start = i;
        let end = (start + 1..lines.len())
            .find(|&j| lines[j].starts_with("```"))
            .unwrap_or_else(|| panic!("{}:{}: unclosed fence", file.display(), start + 1));
        let marker = lines[..start]
            .iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .and_then(|l| l.trim().strip_prefix("<!--"))
            .and_then(|l| l.strip_suffix("-->"))
            .map(|m| m.trim().to_owned());
        out.push(Block {
            file: file
                .strip_prefix(repo())
                .unwrap_or(file)
                .display()
                .to_string(),
            line: start + 1,
            lang: lang.trim().to_owned(),
            body: lines[start + 1..end].join("\n"),
            marker,
        });
        i = end + 1;
    }
    out
}

/// A scratch world for one example: a copy of `examples/workspace` (the cwd) with the audit
/// log of the bundled demo session, a home with a project in `~/src/app`, and `toolgate` on
/// `PATH`.
struct Scratch {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    env: Vec<(String, String)>,
}

impl Scratch {
    fn new() -> Scratch {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let home = dir.path().join("home");
        let bin = dir.path().join("bin");
        for d in [&ws, &home.join("src/app"), &bin, &dir.path().join("config")] {
            std::fs::create_dir_all(d).unwrap();
        }
        copy_dir(&repo().join("examples/workspace"), &ws);
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_toolgate"), bin.join("toolgate")).unwrap();
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let env = vec![
            ("PATH".to_owned(), path),
            ("HOME".to_owned(), home.display().to_string()),
            (
                "XDG_CONFIG_HOME".to_owned(),
                dir.path().join("config").display().to_string(),
            ),
            ("NO_COLOR".to_owned(), "1".to_owned()),
        ];
        let scratch = Scratch { _dir: dir, ws, env };
        // An audit log to verify and query, from the demo session.
        let session = std::fs::File::open(repo().join("examples/session.jsonl")).unwrap();
        let out = scratch
            .command("toolgate exec --workspace . --mode acceptEdits --audit .toolgate/audit.jsonl")
            .stdin(session)
            .output()
            .unwrap();
        assert!(out.status.success(), "setting up the audit log: {out:?}");
        scratch
    }

    fn command(&self, script: &str) -> Command {
        let mut c = Command::new("bash");
        c.args(["-e", "-o", "pipefail", "-c", script])
            .current_dir(&self.ws)
            .env_remove("TOOLGATE_LOG")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("TOOLGATE_MCP_TOKEN")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null());
        c
    }

    /// Runs `script`; its exit status, or why it did not finish.
    fn run(&self, script: &str) -> Result<(i32, String), String> {
        use std::os::unix::process::CommandExt;
        let mut child = self
            .command(script)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|e| e.to_string())?;
        let started = Instant::now();
        loop {
            if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                let out = child.wait_with_output().map_err(|e| e.to_string())?;
                let text = format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
                return Ok((status.code().unwrap_or(128), text));
            }
            if started.elapsed() > EXAMPLE_TIMEOUT {
                let pgid = i32::try_from(child.id()).unwrap_or(0);
                // SAFETY: kill(2) with a negative pid signals the example's process group.
                unsafe { libc::kill(-pgid, libc::SIGKILL) };
                let _ = child.wait();
                return Err(format!("still running after {EXAMPLE_TIMEOUT:?}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// The `$ ` commands of a console block, each with the status its output declares.
fn console_commands(body: &str) -> Vec<(String, i32)> {
    let mut out: Vec<(String, i32)> = Vec::new();
    for line in body.lines() {
        if let Some(cmd) = line.strip_prefix("$ ") {
            out.push((cmd.to_owned(), 0));
        } else if let Some(code) = line
            .trim_end()
            .strip_suffix(')')
            .and_then(|l| l.rsplit_once("(exit "))
            .and_then(|(_, n)| n.parse().ok())
            && let Some(last) = out.last_mut()
        {
            last.1 = code;
        }
    }
    out
}

#[test]
fn every_command_example_in_the_docs_runs() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    files.push(repo().join("README.md"));
    let mut ran = 0;
    let mut not_tested = Vec::new();
    let mut failures = Vec::new();
    for block in files.iter().flat_map(|f| blocks(f)) {
        let shell = SHELL_LANGS.contains(&block.lang.as_str());
        if !shell && block.lang != "console" {
            continue;
        }
        let at = format!("{}:{}", block.file, block.line);
        let marker = block.marker.as_deref().unwrap_or("");
        if let Some(reason) = marker.strip_prefix("not-tested:") {
            not_tested.push(format!("{at}: {}", reason.trim()));
            continue;
        }
        let scratch = Scratch::new();
        if let Some(name) = marker.strip_prefix("file:") {
            let path = scratch.ws.join(name.trim());
            std::fs::write(&path, &block.body).unwrap();
            let script = format!("sh -n '{}'", path.display());
            match scratch.run(&script) {
                Ok((0, _)) => ran += 1,
                other => failures.push(format!("{at}: the file does not parse: {other:?}")),
            }
            continue;
        }
        let steps = if shell {
            let expected = marker
                .strip_prefix("exit:")
                .map(|n| {
                    n.trim()
                        .parse()
                        .unwrap_or_else(|_| panic!("{at}: {marker}"))
                })
                .unwrap_or(0);
            vec![(block.body.clone(), expected)]
        } else {
            console_commands(&block.body)
        };
        assert!(
            !steps.is_empty(),
            "{at}: a console block without `$ ` lines"
        );
        for (script, expected) in steps {
            ran += 1;
            match scratch.run(&script) {
                Ok((code, _)) if code == expected => {}
                Ok((code, output)) => failures.push(format!(
                    "{at}: exit {code}, expected {expected}:\n{script}\n--- output:\n{output}"
                )),
                Err(why) => failures.push(format!("{at}: {why}:\n{script}")),
            }
        }
    }
    eprintln!(
        "{ran} examples ran; {} marked not-tested:",
        not_tested.len()
    );
    for n in &not_tested {
        eprintln!("  {n}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // The walk found the examples (a broken parser would find none and pass).
    assert!(ran >= 5, "only {ran} examples ran");
}
