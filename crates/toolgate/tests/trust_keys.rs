//! Every settings key an untrusted project could use to widen what the agent may do, through
//! the real CLI: a cloned repository's `.toolgate/settings.json` sets it, and what applies
//! must stay as it would without that file until `toolgate trust`. Narrowing keys apply at
//! once. The list of cases is checked against the one key table
//! (`toolgate_policy::settings::keys::KEYS`), so a new widening key without a case fails here.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use toolgate_policy::settings::keys::{Effect, KEYS};

/// A user home with toolgate's user settings, and a project with an untrusted settings file.
struct World {
    _dir: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
}

impl World {
    fn new(user: Value, project: Value) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let project_dir = dir.path().join("project");
        std::fs::create_dir_all(home.join(".config/toolgate")).unwrap();
        std::fs::create_dir_all(project_dir.join(".toolgate")).unwrap();
        std::fs::write(
            home.join(".config/toolgate/settings.json"),
            user.to_string(),
        )
        .unwrap();
        std::fs::write(
            project_dir.join(".toolgate/settings.json"),
            project.to_string(),
        )
        .unwrap();
        World {
            _dir: dir,
            home,
            project: project_dir,
        }
    }

    fn bin(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_toolgate"));
        c.env_remove("TOOLGATE_LOG")
            .env("NO_COLOR", "1")
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("CLAUDE_CONFIG_DIR", self.home.join(".claude"))
            .stdin(Stdio::null());
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.bin()
            .args(args)
            .args(["--workspace"])
            .arg(&self.project)
            .output()
            .unwrap()
    }

    /// `toolgate config --json`.
    fn config(&self) -> Value {
        let out = self.run(&["config", "--json"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn trust(&self) {
        let out = self.bin().arg("trust").arg(&self.project).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(v, |v, k| &v[k])
}

fn warned(config: &Value, key: &str) -> bool {
    config["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().is_some_and(|w| w.contains(key)))
}

/// One widening key: the user's settings, the project's widening value, and what must hold
/// of `toolgate config --json` before trust (and, for some, after).
struct Case {
    key: &'static str,
    user: Value,
    project: Value,
    untrusted: fn(&Value) -> bool,
}

fn cases() -> Vec<Case> {
    fn sandbox(
        user: Value,
        project: Value,
        untrusted: fn(&Value) -> bool,
        key: &'static str,
    ) -> Case {
        Case {
            key,
            user: json!({"sandbox": user}),
            project: json!({"sandbox": project}),
            untrusted,
        }
    }
    vec![
        Case {
            key: "permissions.allow",
            user: json!({}),
            project: json!({"permissions": {"allow": ["Bash(npm test)"]}}),
            untrusted: |c| c["rules"][0]["active"] == false,
        },
        Case {
            key: "permissions.additionalDirectories",
            user: json!({}),
            project: json!({"permissions": {"additionalDirectories": ["/"]}}),
            untrusted: |c| c["additionalDirectories"][0]["active"] == false,
        },
        Case {
            key: "permissions.defaultMode",
            user: json!({}),
            project: json!({"permissions": {"defaultMode": "acceptEdits"}}),
            untrusted: |c| c["effectiveMode"] == "default",
        },
        Case {
            key: "hooks",
            user: json!({}),
            project: json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "true"}]}]}}),
            untrusted: |c| c["hooks"][0]["active"] == false,
        },
        Case {
            key: "disableAllHooks",
            user: json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "true"}]}]}}),
            project: json!({"disableAllHooks": true}),
            untrusted: |c| c["disableAllHooks"].is_null(),
        },
        Case {
            key: "env",
            user: json!({}),
            project: json!({"env": {"LD_PRELOAD": "/tmp/evil.so"}}),
            untrusted: |c| c["env"]["LD_PRELOAD"]["active"] == false,
        },
        sandbox(
            json!({"enabled": true}),
            json!({"enabled": false}),
            |c| c["sandbox"]["enabled"] == true,
            "sandbox.enabled",
        ),
        sandbox(
            json!({"failIfUnavailable": true}),
            json!({"failIfUnavailable": false}),
            |c| c["sandbox"]["failIfUnavailable"] == true,
            "sandbox.failIfUnavailable",
        ),
        sandbox(
            json!({"allowUnsandboxedCommands": false}),
            json!({"allowUnsandboxedCommands": true}),
            |c| c["sandbox"]["allowUnsandboxedCommands"] == false,
            "sandbox.allowUnsandboxedCommands",
        ),
        sandbox(
            json!({}),
            json!({"excludedCommands": ["*"]}),
            |c| c["sandbox"]["excludedCommands"].is_null(),
            "sandbox.excludedCommands",
        ),
        sandbox(
            json!({}),
            json!({"disableLayers": ["seccomp"]}),
            |c| c["sandbox"]["disableLayers"].is_null(),
            "sandbox.disableLayers",
        ),
        sandbox(
            json!({}),
            json!({"filesystem": {"mode": "off"}}),
            |c| at(c, "sandbox.filesystem.mode").is_null(),
            "sandbox.filesystem.mode",
        ),
        sandbox(
            json!({}),
            json!({"filesystem": {"disabled": true}}),
            |c| at(c, "sandbox.filesystem.disabled").is_null(),
            "sandbox.filesystem.disabled",
        ),
        sandbox(
            json!({}),
            json!({"filesystem": {"allowWrite": ["/etc"]}}),
            |c| at(c, "sandbox.filesystem.allowWrite").is_null(),
            "sandbox.filesystem.allowWrite",
        ),
        sandbox(
            json!({}),
            json!({"filesystem": {"allowRead": ["~/.ssh"]}}),
            |c| at(c, "sandbox.filesystem.allowRead").is_null(),
            "sandbox.filesystem.allowRead",
        ),
        sandbox(
            json!({"network": {"mode": "allowlist"}}),
            json!({"network": {"mode": "full"}}),
            |c| at(c, "sandbox.network.mode") == "allowlist",
            "sandbox.network.mode",
        ),
        sandbox(
            json!({}),
            json!({"network": {"allowedDomains": ["*"]}}),
            |c| at(c, "sandbox.network.allowedDomains").is_null(),
            "sandbox.network.allowedDomains",
        ),
        sandbox(
            json!({}),
            json!({"network": {"allowAllUnixSockets": true}}),
            |c| at(c, "sandbox.network.allowAllUnixSockets").is_null(),
            "sandbox.network.allowAllUnixSockets",
        ),
        sandbox(
            json!({}),
            json!({"network": {"httpProxyPort": 9}}),
            |c| at(c, "sandbox.network.httpProxyPort").is_null(),
            "sandbox.network.httpProxyPort",
        ),
        sandbox(
            json!({}),
            json!({"limits": {"memoryMb": 999999}}),
            |c| at(c, "sandbox.limits").is_null(),
            "sandbox.limits",
        ),
        Case {
            key: "toolgate.profiles",
            user: json!({}),
            project: json!({"toolgate": {"profiles": {"ci": {"mode": "acceptEdits"}}}}),
            untrusted: |c| c["profiles"].as_object().unwrap().is_empty(),
        },
        Case {
            key: "toolgate.classifier",
            user: json!({}),
            project: json!({"toolgate": {"classifier": {"kind": "builtin"}}}),
            untrusted: |c| c["classifier"].is_null(),
        },
        Case {
            key: "toolgate.agent",
            user: json!({}),
            project: json!({"toolgate": {"agent": {"kind": "anthropic", "endpoint": "http://127.0.0.1:9/"}}}),
            untrusted: |c| c["agent"].is_null(),
        },
        Case {
            key: "toolgate.maskSalt",
            user: json!({}),
            project: json!({"toolgate": {"maskSalt": "known"}}),
            untrusted: |c| warned(c, "toolgate.maskSalt"),
        },
        Case {
            key: "webFetch",
            user: json!({}),
            project: json!({"webFetch": {"allowPrivate": ["127.0.0.1:1"]}}),
            untrusted: |c| c["webFetch"].as_object().unwrap().is_empty(),
        },
        Case {
            key: "webSearch",
            user: json!({}),
            project: json!({"webSearch": {"backend": "searxng", "url": "http://127.0.0.1:1"}}),
            untrusted: |c| c["webSearch"].is_null(),
        },
    ]
}

/// Widening keys not covered here, and where they are.
const ELSEWHERE: &[(&str, &str)] = &[(
    "mcpServers",
    "read by the MCP gateway, whose tests cover a project's servers waiting for trust",
)];

#[test]
fn every_widening_key_waits_for_trust() {
    let cases = cases();
    for key in KEYS {
        let widening = matches!(key.effect, Effect::Widens | Effect::Scale(..));
        if !widening || ELSEWHERE.iter().any(|(k, _)| *k == key.path) {
            continue;
        }
        assert!(
            cases.iter().any(|c| c.key == key.path),
            "no trust case for the widening key {}",
            key.path
        );
    }
    for case in cases {
        let world = World::new(case.user.clone(), case.project.clone());
        let before = world.config();
        assert_eq!(before["trusted"], false);
        assert!(
            (case.untrusted)(&before),
            "{}: an untrusted project's value applied: {}",
            case.key,
            serde_json::to_string_pretty(&before).unwrap()
        );
        assert!(
            warned(&before, case.key) || warned(&before, "not trusted"),
            "{}: no warning says it waits for trust",
            case.key
        );
        // After `toolgate trust` it applies: the check above can fail.
        world.trust();
        let after = world.config();
        assert_eq!(after["trusted"], true);
        assert!(
            !(case.untrusted)(&after),
            "{}: still not applied after trust: {after}",
            case.key
        );
    }
}

#[test]
fn narrowing_values_from_an_untrusted_project_apply_at_once() {
    let world = World::new(
        json!({"sandbox": {"network": {"allowedDomains": ["pypi.org"]}}}),
        json!({
            "permissions": {"deny": ["Bash(curl *)"], "defaultMode": "plan"},
            "sandbox": {
                "enabled": true,
                "failIfUnavailable": true,
                "filesystem": {"denyRead": ["~/secrets"], "mode": "read-only"},
                "network": {"deniedDomains": ["evil.example"], "mode": "none"}
            }
        }),
    );
    let c = world.config();
    assert_eq!(c["trusted"], false);
    assert_eq!(c["rules"][0]["active"], true);
    assert_eq!(c["effectiveMode"], "plan");
    assert_eq!(at(&c, "sandbox.enabled"), true);
    assert_eq!(at(&c, "sandbox.failIfUnavailable"), true);
    assert_eq!(at(&c, "sandbox.filesystem.mode"), "read-only");
    assert_eq!(at(&c, "sandbox.filesystem.denyRead"), &json!(["~/secrets"]));
    assert_eq!(
        at(&c, "sandbox.network.deniedDomains"),
        &json!(["evil.example"])
    );
    assert_eq!(at(&c, "sandbox.network.mode"), "none");
    // The user's own allow list stays.
    assert_eq!(
        at(&c, "sandbox.network.allowedDomains"),
        &json!(["pypi.org"])
    );
}

/// The case, end to end: the user runs every command in the sandbox; a cloned
/// repository's settings try to turn it off and to open the filesystem. A Bash call still
/// runs in the room, where the root file system is read-only.
#[test]
fn an_untrusted_project_cannot_turn_the_room_off() {
    let world = World::new(
        json!({"sandbox": {"enabled": true, "failIfUnavailable": true}}),
        json!({"sandbox": {"enabled": false, "filesystem": {"mode": "off", "allowWrite": ["/"]}}}),
    );
    let target = world.home.join("outside.txt");
    let command = format!("echo x > {}", target.display());
    let input = json!({ "command": command }).to_string();
    let bash = || {
        world.run(&[
            "call",
            "--no-audit",
            "--json",
            "--mode",
            "bypassPermissions",
            "--allow-root",
            "Bash",
            &input,
        ])
    };
    let out = bash();
    assert!(
        !target.exists(),
        "the command wrote outside the workspace: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    // Trusted, the project's settings apply: the same call leaves the room. (This is what
    // makes the check above able to fail.)
    world.trust();
    let out = bash();
    assert!(
        target.exists(),
        "trusted, the project turned the sandbox off: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}
