//! Remote-resource CLIs (cloud, cluster, IaC, SaaS): anything that is not a read changes
//! resources outside the sandbox, so it is `High` unless it only simulates. Each CLI lists the
//! verbs that read.

use toolgate_protocol::Risk;

use super::{Rule, View};

/// A CLI that manages remote resources and the subcommand words that only read.
pub(crate) struct RemoteCli {
    /// Program basenames.
    pub programs: &'static [&'static str],
    /// Read verbs (exact words, or prefixes ending in `-` or `:`).
    pub read: &'static [&'static str],
    /// How many leading positionals to look at for a verb.
    pub depth: usize,
}

const COMMON_READ: &[&str] = &[
    "describe",
    "describe-",
    "list",
    "list-",
    "ls",
    "get",
    "get-",
    "show",
    "view",
    "status",
    "info",
    "help",
    "version",
    "--version",
    "whoami",
    "search",
    "logs",
    "log",
    "tail",
    "validate",
    "plan",
    "diff",
    "lookup",
    "check",
    "query",
    "scan",
    "select",
    "head",
    "wait",
    "explain",
    "preview",
    "inspect",
    "history",
    "top",
    "events",
    "find",
    "browse",
    "stats",
    "current",
    "print",
    "output",
    "outputs",
    "graph",
    "providers",
    "fmt",
    "lint",
    "template",
    "test-",
    "estimate-",
    "batch-get-",
    "search-",
    "filter-",
    "simulate-",
    "can-i",
    "api-resources",
    "api-versions",
    "cluster-info",
    "config",
    "completion",
    "auth",
    "login",
    "logout",
    "init",
    "doctor",
    "context",
    "contexts",
    "verify",
    "cat",
    "size",
    "lsd",
    "lsl",
    "lsf",
    "md5sum",
    "sha1sum",
    "about",
    "listremotes",
    "tree",
    "snapshots",
    "watch",
    "checks",
    "download",
    "dump",
    "export",
    "env:list",
    "config:get",
    "apps:info",
    "ps",
    "releases",
    "domains",
    "open",
    "dev",
    "serve",
    "build",
    "read",
    "report",
    "health",
    "exists",
    "url",
    "hash",
    "presign",
    "evaluate",
    "convert",
    "alias",
];

/// Verbs that change a resource even after a word that can name a read (`version`,
/// `config`, `status`).
const MUTATING_VERBS: &[&str] = &[
    "activate",
    "deactivate",
    "deploy",
    "promote",
    "rollback",
    "purge",
    "publish",
    "scale",
    "restart",
    "stop",
    "shutdown",
    "create",
    "update",
    "upload",
    "apply",
    "import",
    "enable",
    "disable",
];

/// Remote CLIs.
#[rustfmt::skip]
pub(crate) const REMOTE_CLIS: &[RemoteCli] = &[
    RemoteCli { programs: &["aws"], read: &["s3:ls", "configure", "sts"], depth: 2},
    RemoteCli { programs: &["gcloud", "az", "doctl", "oci", "ibmcloud", "linode-cli", "hcloud", "scw", "exo"], read: &[], depth: 4},
    RemoteCli { programs: &["gsutil", "s3cmd", "azcopy", "mc", "rclone"], read: &["du", "stat", "lsb", "lsjson", "lsf", "ncdu", "cat"], depth: 2},
    RemoteCli { programs: &["kubectl", "k", "oc", "microk8s.kubectl", "kubectx", "kubens", "k9s", "stern", "kustomize"], read: &["port-forward", "proxy", "exec", "cp", "attach", "debug", "kustomize", "plugin", "alpha", "certificate"], depth: 1},
    RemoteCli { programs: &["helm"], read: &["repo", "dependency", "dep", "package", "pull", "env", "plugin", "registry", "create", "verify"], depth: 1},
    RemoteCli { programs: &["terraform", "tofu", "terragrunt"], read: &["workspace", "console", "providers", "state:list", "state:show", "state:pull", "get", "modules", "test", "metadata", "login"], depth: 2},
    RemoteCli { programs: &["pulumi", "cdk", "cdktf", "serverless", "sls", "sst", "amplify"], read: &["stack:ls", "stack:output", "stack:select", "stack:init", "synth", "ls", "new", "about", "whoami", "config:get", "package"], depth: 2},
    RemoteCli { programs: &["heroku", "fly", "flyctl", "vercel", "netlify", "railway", "render", "firebase", "wrangler", "supabase", "surge", "now"], read: &["link", "pull", "local", "functions:serve", "emulators:start", "env:ls", "secrets:list", "status", "open", "deploy:list", "apps:list", "logs", "whoami"], depth: 2},
    RemoteCli { programs: &["gh", "glab", "hub"], read: &["pr:checkout", "pr:list", "pr:view", "pr:diff", "pr:checks", "pr:status", "issue:list", "issue:view", "issue:status", "run:list", "run:view", "run:watch", "run:download", "repo:view", "repo:clone", "repo:list", "release:list", "release:view", "release:download", "workflow:list", "workflow:view", "api", "auth", "search", "browse", "gist:view", "gist:list", "label:list", "cache:list", "codespace:list", "ssh-key:list", "secret:list", "variable:list", "mr:list", "mr:view", "mr:diff", "mr:checkout", "ci:view", "ci:list", "ci:status", "extension:list", "pr:create", "pr:comment", "pr:edit", "pr:ready", "pr:review", "pr:reopen", "issue:create", "issue:comment", "issue:edit", "issue:reopen", "run:rerun", "repo:fork", "gist:create", "label:create", "mr:create", "mr:note", "mr:update", "issue:note"], depth: 2},
    RemoteCli { programs: &["fastly"], read: &[], depth: 3},
    RemoteCli { programs: &["vault", "consul", "nomad", "doppler", "op", "bw", "infisical", "sops", "stripe", "algolia", "flarectl", "twilio", "sentry-cli", "datadog-ci", "newrelic", "ldcli", "unleash", "flipt", "restic", "borg", "rabbitmqctl", "kafka-topics", "kafka-configs", "kafka-acls", "kafka-consumer-groups", "kafka-delete-records", "gitlab-runner", "deck", "kong", "splunk"], read: &["kv:get", "read", "secrets:list", "policy:read", "run", "setup", "item:get", "list_queues", "list_users", "list_exchanges", "list_bindings", "list_permissions", "cluster_status", "environment", "ping", "--list", "--describe", "check", "mount", "extract", "snapshots", "stats", "restore", "verify", "--version", "backup", "create", "unlock", "lsjson", "init", "key"], depth: 2},
];

fn verb_is_read(verb: &str, extra: &[&str]) -> bool {
    let v = verb.to_ascii_lowercase();
    let tail = v.rsplit(':').next().unwrap_or(&v).to_owned();
    let head = v.split(['-', '_']).next().unwrap_or(&v).to_owned();
    if COMMON_READ
        .iter()
        .chain(extra)
        .any(|r| !r.ends_with('-') && !r.contains(':') && *r == head)
    {
        return true;
    }
    COMMON_READ
        .iter()
        .chain(extra)
        .filter(|r| !r.contains(':'))
        .any(|r| {
            if r.ends_with('-') {
                v.starts_with(r) || tail.starts_with(r)
            } else {
                v == *r || tail == *r
            }
        })
}

/// Whether a copy's positionals (`s3 cp SRC DST`, `cp SRC DST`) copy from a remote source
/// to a local destination.
pub(crate) fn is_download(pos: &[&str]) -> bool {
    let Some(verb) = pos
        .iter()
        .position(|w| matches!(*w, "cp" | "sync" | "copy" | "copyto" | "rsync" | "download"))
    else {
        return false;
    };
    let ops = &pos[verb + 1..];
    let remote = |w: &str| {
        w.contains("://")
            || w.split_once(':')
                .is_some_and(|(h, _)| !h.is_empty() && !h.contains('/') && !h.starts_with('.'))
    };
    match ops.split_last() {
        Some((dst, srcs)) => !srcs.is_empty() && !remote(dst) && srcs.iter().all(|s| remote(s)),
        None => false,
    }
}

fn remote_mutation(v: &View<'_>) -> Option<String> {
    let prog = v.program();
    let cli = REMOTE_CLIS.iter().find(|c| c.programs.contains(&prog))?;
    if v.any_arg(&["--help", "-h", "help"]) {
        return None;
    }
    if v.dry_run() || v.args.is_empty() || v.args.iter().all(|a| a.starts_with('-')) {
        return None;
    }
    let pos = v.positionals(&[
        "-n",
        "--namespace",
        "--profile",
        "--region",
        "--project",
        "--context",
        "--kubeconfig",
        "-o",
        "--output",
        "--query",
        "--zone",
        "--format",
        "--subscription",
        "-g",
        "--resource-group",
        "--account",
        "-c",
        "--config",
        "--app",
        "-a",
        "--site",
        "--scope",
        "-R",
        "--repo",
        "--cluster",
        "-l",
        "--selector",
        "-chdir",
        "--stack",
        "-s",
        "-f",
        "--filename",
        "-H",
        "--hostname",
        "--env",
        "-e",
        "--team",
        "--org",
        "--token",
        "--bootstrap-server",
        "--topic",
        "--group",
        "-p",
        "--vhost",
        "--entity-type",
        "--entity-name",
        "--repo-path",
    ]);
    // A copy from the remote side to this machine (`aws s3 cp s3://b/x .`) reads there and
    // writes here; where it writes is a path fact.
    if is_download(&pos) {
        return None;
    }
    // Pairs such as `s3:ls` or `pr:view` allow reads scoped to a group.
    let pair = match (pos.first(), pos.get(1)) {
        (Some(a), Some(b)) => format!("{a}:{b}"),
        _ => String::new(),
    };
    if cli.read.iter().any(|r| r.contains(':') && pair == *r) {
        return None;
    }
    let verbs: Vec<&str> = pos.iter().take(cli.depth).copied().collect();
    if verbs.iter().any(|w| super::ops::is_destructive_word(w)) {
        return Some(format!(
            "`{prog} {}` destroys remote resources",
            verbs.join(" ")
        ));
    }
    // A read word counts unless a mutating verb follows it (`fastly service version
    // activate`: `version` is the resource there, `activate` the action).
    if let Some(i) = verbs.iter().position(|w| verb_is_read(w, cli.read))
        && !verbs[i + 1..]
            .iter()
            .any(|w| MUTATING_VERBS.contains(&w.to_ascii_lowercase().as_str()))
    {
        return None;
    }
    // Flag-only reads (`kafka-topics --list`).
    if v.args
        .iter()
        .any(|a| cli.read.contains(a) && a.starts_with("--"))
    {
        return None;
    }
    let what = verbs.join(" ");
    Some(format!("`{prog} {what}` changes remote resources"))
}

/// Remote-resource rules.
pub(crate) const RULES: &[Rule] = &[Rule {
    id: "remote.mutation",
    category: "remote_mutation",
    risk: Risk::High,
    programs: &[],
    test: remote_mutation,
    matches: &[
        "aws secretsmanager put-secret-value --secret-id x --secret-string y",
        "terraform apply",
        "pulumi up --yes",
        "kubectl apply -f x.yaml",
        "kubectl rollout restart deploy/x",
        "gh repo archive o/r",
        "fly secrets unset X",
        "heroku ps:stop",
        "gcloud run deploy svc",
        "helm upgrade --install x ./chart",
        "vault secrets disable kv/",
        "restic forget --prune",
        "fastly service version activate --version 5",
    ],
    not_matches: &[
        "aws s3 ls",
        "aws ec2 describe-instances",
        "kubectl get pods",
        "gh pr list",
        "gh pr view 3",
        "terraform plan",
        "gcloud projects list",
        "helm list",
        "heroku logs --tail",
        "vercel env ls",
        "kubectl apply -f x.yaml --dry-run=client",
        "restic snapshots",
        "aws s3 cp s3://bucket/data.csv .",
        "fastly service version list --service-id x",
        "gcloud config set project p",
        "gsutil cp gs://bucket/file ./data/",
        "gh pr create --title x --body y",
    ],
}];
