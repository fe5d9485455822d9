//! Ask or deny: an irreversible operation that skips its own safety net is denied.
//!
//! Destroying infrastructure, dropping a database, deleting a repository or unpublishing a
//! package is risky but legitimate work, so a rule of its own asks. Each of these tools
//! also asks on its own before it destroys anything — unless told not to (`-auto-approve`,
//! `--yes`, `--force`, `--quiet`, `--confirm NAME`, `--accept-data-loss`). Such a command
//! has removed the last question between the agent and the loss, and a user in a permissive
//! mode or with a broad allow rule (`Bash(terraform *)`) would not see it: it is
//! catastrophic, which every mode denies.

use toolgate_protocol::{Finding, Risk};

use super::View;

/// The finding categories of the rules whose operations are irreversible.
const DESTRUCTIVE_CATEGORIES: &[&str] = &[
    "cloud_destruction",
    "database_destruction",
    "resource_destruction",
    "container_destruction",
    "package_publishing",
    "remote_deletion",
];

/// Words of the command that name the destroying operation (a subcommand, `-destroy`, or a
/// verb inside a compound subcommand such as `apps:destroy`).
const DESTROY_WORDS: &[&str] = &[
    "destroy",
    "delete",
    "drop",
    "reset",
    "unpublish",
    "rb",
    "purge",
    "terminate",
    "remove",
    "rm",
    "wipe",
    "erase",
    "truncate",
    "prune",
];

/// One tool family and the flags that skip its confirmation.
pub(crate) struct SkipFlags {
    /// Program basenames.
    pub programs: &'static [&'static str],
    /// Flags (exact, or as `FLAG=VALUE`) that skip the confirmation.
    pub flags: &'static [&'static str],
    /// Commands that must be denied.
    pub matches: &'static [&'static str],
    /// Commands that must not be (they still ask when their own rule does).
    pub not_matches: &'static [&'static str],
}

/// Per tool, the flags that answer its "are you sure?" in advance.
#[rustfmt::skip]
pub(crate) const SKIP_FLAGS: &[SkipFlags] = &[
    SkipFlags { programs: &["terraform", "tofu", "terragrunt"], flags: &["-auto-approve", "--auto-approve"], matches: &["terraform destroy -auto-approve", "terraform -chdir=infra apply -destroy -auto-approve", "tofu destroy --auto-approve"], not_matches: &["terraform destroy", "terraform apply -auto-approve", "terraform plan -destroy"]},
    SkipFlags { programs: &["pulumi"], flags: &["--yes", "-y", "--skip-confirmation"], matches: &["pulumi destroy --yes", "pulumi destroy -y -s prod"], not_matches: &["pulumi destroy", "pulumi up --yes"]},
    SkipFlags { programs: &["cdk", "cdktf", "serverless", "sls", "amplify", "vagrant"], flags: &["--force", "-f", "--auto-approve", "--yes", "-y"], matches: &["cdk destroy --force", "vagrant destroy -f", "serverless remove --force"], not_matches: &["cdk destroy", "vagrant destroy"]},
    SkipFlags { programs: &["gh", "glab"], flags: &["--yes", "-y", "--confirm"], matches: &["gh repo delete org/app --yes", "glab repo delete g/p -y"], not_matches: &["gh repo delete org/app", "gh pr merge --yes"]},
    SkipFlags { programs: &["npm", "pnpm", "yarn", "bun"], flags: &["--force", "-f"], matches: &["npm unpublish my-pkg --force", "pnpm unpublish -f x"], not_matches: &["npm unpublish my-pkg@1.0.0", "npm install --force"]},
    SkipFlags { programs: &["prisma"], flags: &["--force", "-f", "--accept-data-loss"], matches: &["prisma migrate reset --force", "npx prisma db push --accept-data-loss"], not_matches: &["prisma migrate reset", "prisma db push"]},
    SkipFlags { programs: &["gcloud"], flags: &["--quiet", "-q"], matches: &["gcloud projects delete my-proj --quiet", "gcloud sql instances delete db -q"], not_matches: &["gcloud projects delete my-proj", "gcloud compute instances list -q"]},
    SkipFlags { programs: &["az"], flags: &["--yes", "-y"], matches: &["az group delete -n rg --yes"], not_matches: &["az group delete -n rg", "az vm list -y"]},
    SkipFlags { programs: &["heroku"], flags: &["--confirm"], matches: &["heroku apps:destroy --app app --confirm app"], not_matches: &["heroku apps:destroy --app app"]},
    SkipFlags { programs: &["fly", "flyctl", "railway", "vercel"], flags: &["--yes", "-y"], matches: &["fly apps destroy app --yes", "vercel remove app --yes"], not_matches: &["fly apps destroy app", "fly deploy --yes"]},
    SkipFlags { programs: &["netlify", "firebase", "doctl", "aws"], flags: &["--force", "-f"], matches: &["aws s3 rb s3://bucket --force", "doctl compute droplet delete web --force", "firebase projects:delete p --force"], not_matches: &["aws s3 rb s3://bucket", "doctl compute droplet list"]},
    SkipFlags { programs: &["kubectl", "k", "oc"], flags: &["--force", "--grace-period=0", "--now"], matches: &["kubectl delete namespace prod --force --grace-period=0", "kubectl --context prod delete ns x --now"], not_matches: &["kubectl delete namespace prod", "kubectl apply --force -f x.yaml"]},
    SkipFlags { programs: &["supabase"], flags: &["--yes", "-y"], matches: &["supabase db reset --linked --yes"], not_matches: &["supabase db reset --linked"]},
    SkipFlags { programs: &["dropdb", "dropuser"], flags: &["--force", "-f"], matches: &["dropdb --if-exists -f prod"], not_matches: &["dropdb prod"]},
    SkipFlags { programs: &["docker", "podman"], flags: &["--force", "-f"], matches: &["docker volume prune -f", "docker system prune -af --volumes"], not_matches: &["docker volume prune", "docker system prune -af"]},
];

/// Whether the command names a destroying operation; for docker, only one that loses
/// volume data (`volume prune/rm`, `prune --volumes`), since images and stopped containers
/// can be rebuilt.
fn destroys(v: &View<'_>) -> bool {
    if v.program().starts_with("drop") || v.args.contains(&"--accept-data-loss") {
        return true;
    }
    if matches!(v.program(), "docker" | "podman") {
        return v.args.iter().any(|a| *a == "volume" || *a == "--volumes");
    }
    v.args.iter().any(|a| {
        let a = a.trim_start_matches('-').to_ascii_lowercase();
        a.split([':', '-', '_', '.'])
            .any(|w| DESTROY_WORDS.contains(&w))
    })
}

/// A catastrophic finding when `v` already has an irreversible finding and skips the
/// program's own confirmation.
pub(crate) fn unattended(v: &View<'_>, findings: &[(Finding, &'static str)]) -> Option<Finding> {
    let destructive = findings.iter().find(|(f, _)| {
        f.risk >= Risk::High && DESTRUCTIVE_CATEGORIES.contains(&f.category.as_str())
    })?;
    let entry = SKIP_FLAGS
        .iter()
        .find(|s| s.programs.contains(&v.program()))?;
    let flag = v.args.iter().take_while(|a| **a != "--").find(|a| {
        entry.flags.iter().any(|f| {
            *a == f
                || a.strip_prefix(f).is_some_and(|r| r.starts_with('='))
                // A short flag inside a bundle: `-af` has `-f`.
                || (f.len() == 2
                    && !f.starts_with("--")
                    && a.len() > 2
                    && a.starts_with('-')
                    && !a.starts_with("--")
                    && a[1..].contains(&f[1..]))
        })
    })?;
    if !destroys(v) {
        return None;
    }
    Some(Finding {
        risk: Risk::Catastrophic,
        category: destructive.0.category.clone(),
        reason: format!(
            "`{}` (rule destroy.unattended): `{flag}` removes {}'s own safety net (its \
             confirmation, or its refusal) before this irreversible operation ({})",
            v.text(),
            v.program(),
            destructive.1
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Context, analyze};

    #[test]
    fn skip_flags_walk_their_examples() {
        let ctx = Context::new("/home/u/proj").with_home("/home/u");
        let fired = |cmd: &str| {
            analyze(cmd, &ctx)
                .findings
                .iter()
                .any(|f| f.reason.contains("(rule destroy.unattended)"))
        };
        for s in SKIP_FLAGS {
            for m in s.matches {
                assert!(fired(m), "should deny: {m}");
            }
            for m in s.not_matches {
                assert!(!fired(m), "should not deny: {m}");
            }
        }
    }
}
