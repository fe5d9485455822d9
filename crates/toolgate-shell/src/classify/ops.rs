//! Operations rules: cloud, Kubernetes and IaC destruction, containers, databases, package
//! publishing, and destructive verbs on any other CLI with subcommands.

use toolgate_protocol::Risk;

use super::{DATA_PROGRAMS, Rule, View};

/// Subcommand words that destroy something.
const DESTRUCTIVE_VERBS: &[&str] = &[
    "delete",
    "destroy",
    "remove",
    "rm",
    "rmi",
    "rb",
    "purge",
    "drop",
    "truncate",
    "terminate",
    "flush",
    "flushall",
    "flushdb",
    "wipe",
    "nuke",
    "prune",
    "revoke",
    "deprovision",
    "uninstall",
    "teardown",
    "erase",
    "unpublish",
    "deregister",
    "decommission",
    "reset",
    "del",
    "clear",
    "obliterate",
    "discard",
    "expunge",
    "kill",
    "empty",
    "shred",
    "archive",
    "unregister",
    "disable",
    "cancel",
    "rollback",
    "undeploy",
    "untag",
    "unsubscribe",
    "unset",
    "detach",
    "forget",
    "deactivate",
    "suspend",
    "stop",
    "evict",
    "force_reset",
    "force-unlock",
];

/// Programs whose subcommand words are not destructive in this sense, or that have their own rules.
const VERB_EXEMPT: &[&str] = &[
    "git",
    "rsync",
    "cmake",
    "rm",
    "rmdir",
    "find",
    "npm",
    "yarn",
    "pnpm",
    "bun",
    "pip",
    "pip3",
    "pipx",
    "uv",
    "poetry",
    "cargo",
    "go",
    "gem",
    "bundle",
    "composer",
    "conda",
    "mamba",
    "brew",
    "make",
    "just",
    "task",
    "rake",
    "docker-compose",
    "trash",
    "history",
    "nix",
    "rustup",
    "asdf",
    "mise",
    "ollama",
    "hf",
    "huggingface-cli",
    "kill",
    "pkill",
    "killall",
    "docker",
    "podman",
    "gradle",
    "gradlew",
    "mvn",
    "mvnw",
    "ant",
    "sbt",
    "dotnet",
    "flutter",
    "xcodebuild",
    "swift",
    "systemctl",
    "service",
    "launchctl",
    "crontab",
    "ssh-keygen",
    "ssh-add",
    "kubectl",
    "helm",
    "terraform",
    "redis-cli",
    "tmux",
    "screen",
    "pm2",
    "supervisorctl",
    "brew",
    "apt",
    "apt-get",
    "dnf",
    "yum",
    "pacman",
    "snap",
    "ip",
    "ufw",
];

pub(crate) fn is_destructive_word(w: &str) -> bool {
    const PARTS: &[&str] = &[
        "delete",
        "destroy",
        "remove",
        "purge",
        "drop",
        "terminate",
        "wipe",
        "truncate",
        "deregister",
        "revoke",
        "nuke",
        "flushall",
        "flushdb",
        "unpublish",
        "decommission",
        "deprovision",
        "prune",
        "uninstall",
        "teardown",
        "expunge",
        "kill",
        "rm",
        "reset",
        "unset",
        "deletion",
        "disable",
        "archive",
        "detach",
        "unregister",
        "undeploy",
        "untag",
        "unsubscribe",
        "rollback",
        "forget",
        "deactivate",
        "evict",
        "cancel",
        "clear",
    ];
    let w = w.to_ascii_lowercase();
    let w = w.trim_start_matches("--");
    // Verbs are plain words; resource names (`repo::archive`, `a/b`, `x.y`) are not.
    if w.contains("::")
        || !w
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_:".contains(&b))
    {
        return false;
    }
    DESTRUCTIVE_VERBS.contains(&w)
        || w.split([':', '-', '_', '.'])
            .any(|part| PARTS.contains(&part))
}

fn destructive_verb(v: &View<'_>) -> Option<String> {
    // Commands that run other commands: the inner command is classified on its own.
    if matches!(v.program(), "parallel" | "xargs" | "ssh" | "watch" | "eval")
        || crate::unwrap::WRAPPERS
            .iter()
            .any(|w| w.name == v.program())
    {
        return None;
    }
    let p = v.program();
    if VERB_EXEMPT.contains(&p)
        || DATA_PROGRAMS.contains(&p)
        || super::readonly::READ_ONLY
            .iter()
            .any(|r| r.program == p && r.subs.is_empty())
        || v.dry_run()
        || crate::exec::SHELLS.contains(&p)
        || crate::interp::interp_of(p).is_some()
    {
        return None;
    }
    // Subcommand positions: the first three positionals, or `--delete`-style action flags.
    let pos = v.positionals(&[
        "-n",
        "--namespace",
        "--profile",
        "--region",
        "--project",
        "--context",
        "-p",
        "-c",
        "--config",
        "-o",
        "--output",
        "-f",
        "--file",
    ]);
    if let Some(w) = pos.iter().take(3).find(|w| is_destructive_word(w)) {
        return Some(format!("`{w}` destroys resources"));
    }
    let flag = v.args.iter().take_while(|a| **a != "--").find(|a| {
        a.starts_with("--")
            && !matches!(
                **a,
                "--rm" | "--remove-orphans" | "--clear-screen" | "--no-delete"
            )
            && is_destructive_word(a.split('=').next().unwrap_or(a))
    });
    flag.map(|f| format!("`{f}` destroys resources"))
}

fn kube_destroy(v: &View<'_>) -> Option<String> {
    if v.dry_run() {
        return None;
    }
    let pos = v.positionals(&[
        "-n",
        "--namespace",
        "--context",
        "--kubeconfig",
        "-l",
        "--selector",
        "-o",
        "-f",
        "--filename",
        "--cluster",
        "--user",
        "-c",
    ]);
    match pos.first().copied()? {
        "delete" => Some(format!(
            "deletes cluster resources ({})",
            pos.get(1..).map(|r| r.join(" ")).unwrap_or_default()
        )),
        "drain" | "cordon" | "taint" => Some(format!("`{}` disrupts a node", pos[0])),
        "replace" if v.long("--force") => Some("force-replaces resources".into()),
        "scale" if v.args.contains(&"--replicas=0") => Some("scales to zero".into()),
        "uninstall" | "rollback" if v.program() == "helm" => {
            Some(format!("`helm {}` changes a release", pos[0]))
        }
        _ => None,
    }
}

fn iac_destroy(v: &View<'_>) -> Option<String> {
    let pos = v.positionals(&[
        "-chdir",
        "-var",
        "-var-file",
        "-target",
        "--stack",
        "-s",
        "--app",
        "-c",
    ]);
    let sub = pos.first().copied()?;
    match (v.program(), sub) {
        (_, "destroy") => Some("destroys all managed infrastructure".into()),
        ("terraform" | "tofu" | "terragrunt", "apply") if v.any_arg(&["-destroy", "--destroy"]) => {
            Some("destroys infrastructure (`apply -destroy`)".into())
        }
        ("terraform" | "tofu" | "terragrunt", "apply")
            if v.any_arg(&["-auto-approve", "--auto-approve"]) =>
        {
            Some("applies infrastructure changes without review".into())
        }
        ("terraform" | "tofu", "state")
            if pos
                .get(1)
                .is_some_and(|s| matches!(*s, "rm" | "push" | "replace-provider")) =>
        {
            Some("edits infrastructure state".into())
        }
        ("terraform" | "tofu", "workspace") if pos.get(1) == Some(&"delete") => {
            Some("deletes a workspace".into())
        }
        ("pulumi", "stack") if pos.get(1) == Some(&"rm") => Some("removes a stack".into()),
        (
            "pulumi" | "cdk" | "cdktf" | "serverless" | "sls" | "sst" | "amplify",
            "remove" | "delete",
        ) => Some("removes a deployed stack".into()),
        _ => None,
    }
}

fn cloud_destroy(v: &View<'_>) -> Option<String> {
    if v.dry_run() {
        return None;
    }
    let pos = v.positionals(&[
        "--profile",
        "--region",
        "--project",
        "--output",
        "--query",
        "--zone",
        "--format",
        "--subscription",
        "-g",
        "--resource-group",
        "--account",
        "--endpoint-url",
    ]);
    if let Some(w) = pos.iter().take(4).find(|w| is_destructive_word(w)) {
        return Some(format!("`{w}` destroys cloud resources"));
    }
    if pos.first() == Some(&"s3") && pos.get(1).is_some_and(|s| matches!(*s, "rm" | "rb" | "mv")) {
        return Some("removes S3 objects or buckets".into());
    }
    if pos.first() == Some(&"s3") && pos.get(1) == Some(&"sync") && v.long("--delete") {
        return Some("syncs with deletion".into());
    }
    None
}

fn container_destroy(v: &View<'_>) -> Option<String> {
    if v.any_arg(&["-H", "--host", "--context"])
        || v.args.iter().any(|a| {
            a.starts_with("--host=")
                || a.starts_with("--context=")
                || a.starts_with("-H=")
                || a.starts_with("-c=")
        })
    {
        return Some("talks to a remote Docker daemon".into());
    }
    let pos = v.positionals(&[
        "-f",
        "--file",
        "-p",
        "--project-name",
        "--filter",
        "-e",
        "--env",
        "-v",
        "--volume",
        "--name",
        "-u",
        "--user",
        "-w",
        "--workdir",
        "--network",
        "--env-file",
        "-t",
        "--tag",
        "--format",
    ]);
    let sub = pos.first().copied()?;
    let second = pos.get(1).copied().unwrap_or("");
    match sub {
        "system" | "image" | "container" | "volume" | "network" | "builder" | "buildx"
            if second == "prune" || (second == "rm" && sub == "volume") =>
        {
            Some(format!("`{sub} {second}` deletes data"))
        }
        "rm" | "rmi" => Some(format!("removes containers or images (`{sub}`)")),
        "network" | "image" | "container" if matches!(second, "rm" | "remove") => {
            Some(format!("removes a {sub}"))
        }
        "volume" if second == "rm" => Some("removes volumes".into()),
        "compose" | "down"
            if (sub == "down" || second == "down")
                && (v.short('v') || v.long("--volumes") || v.long("--rmi")) =>
        {
            Some("removes compose volumes or images".into())
        }
        "run" | "create"
            if v.long("--privileged")
                || v.args.iter().any(|a| {
                    a.starts_with("/:/")
                        || a.starts_with("/var/run/docker.sock")
                        || *a == "--pid=host"
                        || *a == "--net=host" && v.long("--privileged")
                }) =>
        {
            Some("runs a container with host privileges or the host's root".into())
        }
        "kill" | "stop" => Some(format!("`{sub}` stops containers")),
        _ => None,
    }
}

fn publish(v: &View<'_>) -> Option<String> {
    if v.dry_run() {
        return None;
    }
    let pos = v.positionals(&[
        "--registry",
        "--tag",
        "--access",
        "--otp",
        "-r",
        "--repository",
        "--token",
        "-p",
        "--package",
        "--index",
        "--config",
        "--username",
        "--password",
        "-u",
    ]);
    let sub = pos.first().copied().unwrap_or("");
    let hit = match v.program() {
        "yarn" if sub == "npm" => pos
            .get(1)
            .is_some_and(|s| matches!(*s, "publish" | "unpublish" | "tag")),
        "npm" | "yarn" | "pnpm" | "bun" => {
            matches!(sub, "publish" | "unpublish" | "deprecate")
                || (sub == "dist-tag" && pos.get(1).is_some_and(|s| *s != "ls"))
                || (sub == "owner" && pos.get(1).is_some_and(|s| matches!(*s, "add" | "rm")))
        }
        "cargo" => matches!(sub, "publish" | "yank" | "owner"),
        "twine" => sub == "upload",
        "poetry" | "flit" | "hatch" | "uv" | "pdm" | "maturin" => sub == "publish",
        "gem" => matches!(sub, "push" | "yank" | "owner"),
        "mvn" | "mvnw" | "./mvnw" => pos
            .iter()
            .any(|p| *p == "deploy" || p.starts_with("deploy:") || *p == "release:perform"),
        "gradle" | "gradlew" => pos
            .iter()
            .any(|p| p.starts_with("publish") && !p.contains("ToMavenLocal")),
        "dotnet" => sub == "nuget" && pos.get(1) == Some(&"push"),
        "nuget" => sub == "push",
        "docker" | "podman" => sub == "push" || (sub == "image" && pos.get(1) == Some(&"push")),
        "helm" => sub == "push",
        "vsce" | "ovsx" => sub == "publish",
        "pod" => sub == "trunk" && pos.get(1) == Some(&"push"),
        "gh" => {
            sub == "release"
                && pos
                    .get(1)
                    .is_some_and(|s| matches!(*s, "create" | "delete" | "upload"))
        }
        _ => false,
    };
    hit.then(|| {
        format!(
            "publishes or changes a released package (`{} {sub}`)",
            v.program()
        )
    })
}

fn http_delete(v: &View<'_>) -> Option<String> {
    const PATH_WORDS: &[&str] = &[
        "delete",
        "destroy",
        "remove",
        "purge",
        "drop",
        "truncate",
        "wipe",
        "_close",
        "flush",
        "shutdown",
        "reset",
        "_forcemerge",
    ];
    let httpie_method = v
        .args
        .iter()
        .find(|a| matches!(**a, "DELETE" | "POST" | "PUT" | "PATCH"))
        .copied();
    let method = v
        .value(&["-X", "--request", "--method"])
        .or(httpie_method)
        .map(str::to_ascii_uppercase);
    let data = v
        .value(&["-d", "--data", "--data-raw", "--data-binary", "--json"])
        .is_some();
    let method = method.or_else(|| data.then(|| "POST".to_owned()));
    let urls: Vec<String> = v
        .args
        .iter()
        .filter(|a| a.contains("://") || a.starts_with(':') || a.starts_with("localhost"))
        .map(|a| a.to_ascii_lowercase())
        .collect();
    match method.as_deref() {
        Some("DELETE") => Some("sends an HTTP DELETE".into()),
        Some("POST" | "PUT" | "PATCH") => {
            let path_hit = urls.iter().find(|u| {
                let path = u.split("://").nth(1).unwrap_or(u);
                let path = path.split_once('/').map_or("", |(_, p)| p);
                PATH_WORDS.iter().any(|w| path.contains(w))
            });
            let body_hit = v
                .args
                .iter()
                .any(|a| a.contains("mutation") && a.to_ascii_lowercase().contains("delete"));
            let admin = urls
                .iter()
                .any(|u| u.contains("/_cluster/settings") || u.contains("/admin/"));
            (path_hit.is_some() || body_hit || admin)
                .then(|| "sends a destructive or administrative HTTP request".into())
        }
        _ => None,
    }
}

/// Operations rules.
#[rustfmt::skip]
/// `nsupdate` sends dynamic DNS updates (adds and deletes records); only `-V` is harmless.
fn dns_update(v: &View<'_>) -> Option<String> {
    (v.args != ["-V"]).then(|| "sends dynamic DNS updates that can delete or redirect records".into())
}

/// Restoring a backup over a live service replaces its data.
fn backup_restore(v: &View<'_>) -> Option<String> {
    v.args
        .iter()
        .find(|a| {
            let a = a.to_ascii_lowercase();
            a.contains("backup:restore") || a == "restore"
        })
        .map(|a| format!("`{a}` overwrites the service's data with a backup"))
}

pub(crate) const RULES: &[Rule] = &[
    Rule {
        id: "dns.update",
        category: "cloud_destruction",
        risk: Risk::High,
        programs: &["nsupdate"],
        test: dns_update,
        matches: &[
            "nsupdate -l",
            "echo 'delete example.com' | nsupdate",
            "nsupdate -k key.private cmds.txt",
        ],
        not_matches: &["nsupdate -V", "dig example.com"],
    },
    Rule {
        id: "service.backup_restore",
        category: "database_destruction",
        risk: Risk::High,
        programs: &["gitlab-rake", "gitlab-backup"],
        test: backup_restore,
        matches: &[
            "gitlab-rake gitlab:backup:restore",
            "sudo gitlab-backup restore BACKUP=x",
        ],
        not_matches: &["gitlab-rake gitlab:backup:create", "gitlab-backup create"],
    },
    Rule {
        id: "k8s.destroy",
        category: "cloud_destruction",
        risk: Risk::High,
        programs: &[
            "kubectl",
            "k",
            "oc",
            "helm",
            "kubectl.exe",
            "microk8s.kubectl",
            "k3s",
        ],
        test: kube_destroy,
        matches: &[
            "kubectl delete namespace prod",
            "kubectl -n x delete pod y",
            "k drain node01",
            "helm uninstall my-release",
            "kubectl delete pods --all",
        ],
        not_matches: &[
            "kubectl get pods",
            "kubectl delete ns staging --dry-run=client",
            "helm list",
        ],
    },
    Rule {
        id: "iac.destroy",
        category: "cloud_destruction",
        risk: Risk::High,
        programs: &[
            "terraform",
            "tofu",
            "terragrunt",
            "pulumi",
            "cdk",
            "cdktf",
            "serverless",
            "sls",
            "sst",
            "amplify",
            "vagrant",
            "packer",
        ],
        test: iac_destroy,
        matches: &[
            "terraform destroy",
            "terraform apply -destroy",
            "terraform apply -auto-approve",
            "pulumi destroy --yes",
            "cdk destroy",
            "terraform state rm x",
            "vagrant destroy -f",
        ],
        not_matches: &["terraform plan", "terraform apply", "pulumi preview"],
    },
    Rule {
        id: "cloud.destroy",
        category: "cloud_destruction",
        risk: Risk::High,
        programs: &[
            "aws",
            "gcloud",
            "az",
            "gsutil",
            "doctl",
            "oci",
            "ibmcloud",
            "linode-cli",
            "hcloud",
            "scw",
            "heroku",
            "fly",
            "flyctl",
            "vercel",
            "netlify",
            "railway",
            "render",
            "firebase",
            "wrangler",
            "s3cmd",
            "rclone",
            "mc",
            "gh",
            "glab",
            "vault",
            "consul",
            "nomad",
            "stripe",
            "upstash",
        ],
        test: cloud_destroy,
        matches: &[
            "aws s3 rm s3://b --recursive",
            "aws ec2 terminate-instances --instance-ids i-1",
            "gcloud compute instances delete vm1",
            "az group delete -n rg",
            "heroku apps:destroy x",
            "aws s3 rb s3://b --force",
            "gh repo delete x",
            "vault lease revoke -prefix secret/",
            "rclone purge remote:bucket",
        ],
        not_matches: &[
            "aws s3 ls",
            "gcloud projects list",
            "az vm list",
            "aws s3 cp a s3://b/a",
            "heroku logs",
        ],
    },
    Rule {
        id: "container.destroy",
        category: "container_destruction",
        risk: Risk::High,
        programs: &["docker", "podman", "nerdctl", "docker-compose"],
        test: container_destroy,
        matches: &[
            "docker system prune -af",
            "docker rm -f web",
            "docker volume rm data",
            "docker image prune -a",
            "docker -H tcp://x:2375 ps",
            "docker compose down -v",
            "docker run --privileged -it ubuntu",
            "docker run -v /:/host ubuntu",
        ],
        not_matches: &[
            "docker ps",
            "docker compose up -d",
            "docker run --rm alpine echo hi",
            "docker compose down",
        ],
    },
    Rule {
        id: "publish.package",
        category: "package_publishing",
        risk: Risk::High,
        programs: &[
            "npm", "yarn", "pnpm", "bun", "cargo", "twine", "poetry", "flit", "hatch", "uv", "pdm",
            "maturin", "gem", "mvn", "mvnw", "gradle", "gradlew", "dotnet", "nuget", "docker",
            "podman", "helm", "vsce", "ovsx", "pod", "gh",
        ],
        test: publish,
        matches: &[
            "npm publish",
            "cargo publish",
            "twine upload dist/*",
            "poetry publish --build",
            "gem push x.gem",
            "docker push me/img",
            "npm unpublish x",
            "gh release create v1",
        ],
        not_matches: &[
            "npm publish --dry-run",
            "cargo publish --dry-run",
            "npm install",
            "cargo build",
            "docker pull x",
        ],
    },
    Rule {
        id: "http.delete",
        category: "remote_deletion",
        risk: Risk::High,
        programs: &["curl", "http", "https", "xh", "wget"],
        test: http_delete,
        matches: &[
            "curl -X DELETE https://api.example.com/v1/x",
            "curl --request DELETE https://x",
            "curl -X POST http://localhost:9200/idx/_delete_by_query -d '{}'",
        ],
        not_matches: &[
            "curl -X GET https://api.example.com",
            "curl https://example.com",
        ],
    },
    Rule {
        id: "cli.destructive_verb",
        category: "resource_destruction",
        risk: Risk::High,
        programs: &[],
        test: destructive_verb,
        matches: &[
            "stripe customers delete cus_1",
            "op group delete x",
            "kafka-topics --bootstrap-server x --delete --topic t",
            "rabbitmqctl reset",
            "borg delete repo::a",
            "flipt flag delete f",
            "heroku access:remove x",
        ],
        not_matches: &[
            "echo delete",
            "grep delete x.txt",
            "npm uninstall left-pad",
            "make clean",
            "stripe customers list",
            "ls delete",
        ],
    },
];
