//! The deployment examples docs/deploy.md points at stay true: the compose file, the
//! Kubernetes sketch and the collector config parse as YAML, every flag they give
//! `toolgate serve` is one `toolgate serve --help` lists, the policies they ship load, and
//! docs/deploy.md names every restart-only settings key.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    c.env_remove("TOOLGATE_LOG").env("NO_COLOR", "1").env(
        "XDG_CONFIG_HOME",
        std::env::temp_dir().join("toolgate-tests-no-user-config"),
    );
    c
}

/// Each YAML document of a file, merge keys (`<<: *anchor`) applied, as JSON.
fn yaml_documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|doc| {
            let mut value = <serde_yaml_ng::Value as serde::Deserialize>::deserialize(doc)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            value.apply_merge().unwrap();
            serde_json::to_value(value).unwrap()
        })
        .collect()
}

/// The long options `toolgate serve --help` lists.
fn serve_flags() -> BTreeSet<String> {
    let out = bin().args(["serve", "--help"]).output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    help.split(|c: char| c.is_whitespace() || c == ',' || c == '[' || c == '=')
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(str::to_owned)
        .collect()
}

/// Checks a `toolgate` argument list: `serve`, then only flags `serve` has.
fn check_args(what: &str, args: &Value, known: &BTreeSet<String>) -> usize {
    let args: Vec<&str> = args
        .as_array()
        .unwrap_or_else(|| panic!("{what}: no argument list"))
        .iter()
        .map(|a| {
            a.as_str()
                .unwrap_or_else(|| panic!("{what}: {a} is not a string"))
        })
        .collect();
    assert_eq!(args.first(), Some(&"serve"), "{what}: {args:?}");
    let flags: Vec<&str> = args
        .iter()
        .filter(|a| a.starts_with("--"))
        .map(|a| a.split('=').next().unwrap_or(a))
        .collect();
    for flag in &flags {
        assert!(
            known.contains(*flag),
            "{what}: `{flag}` is not an option of `toolgate serve`"
        );
    }
    for required in ["--http", "--audit", "--state", "--settings", "--watch"] {
        assert!(flags.contains(&required), "{what}: no {required}");
    }
    flags.len()
}

#[test]
fn the_compose_file_parses_and_uses_only_real_serve_flags() {
    let dir = repo().join("examples/deploy");
    let docs = yaml_documents(&dir.join("compose.yaml"));
    assert_eq!(docs.len(), 1);
    let known = serve_flags();
    let services = docs[0]["services"].as_object().unwrap();
    let replicas: Vec<(&String, &Value)> = services
        .iter()
        .filter(|(_, s)| {
            s["image"]
                .as_str()
                .is_some_and(|i| i.starts_with("toolgate"))
        })
        .collect();
    assert_eq!(replicas.len(), 4, "four replicas");
    for (name, service) in &replicas {
        assert!(check_args(name, &service["command"], &known) > 5);
        let volumes = service["volumes"].to_string();
        assert!(
            volumes.contains("/var/lib/toolgate"),
            "{name}: no volume for its log"
        );
    }
    for other in ["postgres", "redis", "otel-collector", "toolgate"] {
        assert!(services.contains_key(other), "no {other} service");
    }
    // Each replica keeps its local log on a volume of its own.
    let logs: BTreeSet<String> = replicas
        .iter()
        .flat_map(|(_, s)| s["volumes"].as_array().unwrap().iter())
        .filter_map(|v| v.as_str())
        .filter(|v| v.ends_with(":/var/lib/toolgate"))
        .map(str::to_owned)
        .collect();
    assert_eq!(logs.len(), 4, "{logs:?}");
    // The files it mounts are here, and the collector's config parses.
    for file in [
        "fleet-settings.json",
        "haproxy.cfg",
        "otel-collector.yaml",
        "Dockerfile",
    ] {
        assert!(dir.join(file).is_file(), "{file}");
    }
    let collector = yaml_documents(&dir.join("otel-collector.yaml"));
    assert!(collector[0]["receivers"]["otlp"]["protocols"]["http"].is_object());
}

#[test]
fn the_kubernetes_sketch_parses_and_uses_only_real_serve_flags() {
    let docs = yaml_documents(&repo().join("examples/deploy/kubernetes.yaml"));
    let kinds: Vec<&str> = docs.iter().filter_map(|d| d["kind"].as_str()).collect();
    assert_eq!(kinds, ["ConfigMap", "Secret", "StatefulSet", "Service"]);
    let set = &docs[2];
    let container = &set["spec"]["template"]["spec"]["containers"][0];
    check_args("StatefulSet", &container["args"], &serve_flags());
    assert!(set["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "audit");
    // The policy the ConfigMap ships loads.
    let policy = docs[0]["data"]["fleet-settings.json"].as_str().unwrap();
    let out = bin()
        .args(["config", "--json", "--settings", policy])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn the_compose_policy_loads() {
    let ws = tempfile::tempdir().unwrap();
    let out = bin()
        .args(["config", "--json", "--workspace"])
        .arg(ws.path())
        .arg("--settings")
        .arg(repo().join("examples/deploy/fleet-settings.json"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn the_deploy_doc_names_every_restart_only_key() {
    let doc = std::fs::read_to_string(repo().join("docs/deploy.md")).unwrap();
    for row in toolgate_setup::RESTART_ONLY {
        assert!(
            doc.contains(row.key),
            "docs/deploy.md does not name `{}`",
            row.key
        );
    }
}
