//! Carriers of network clients: `ssh -o ProxyCommand=…` (and `scp`/`sftp -o`), `curl -K`
//! configuration files, `wget -e` commands.

use crate::argv::part;
use crate::expand::clip;
use crate::words::Field;

use super::*;

/// `ssh -o` keys whose value is a local command (compared in lower case).
pub(super) const SSH_COMMAND_KEYS: &[&str] = &["proxycommand", "localcommand", "knownhostscommand"];

/// `ssh -o` keys that load a library (its code runs in ssh).
pub(super) const SSH_LIBRARY_KEYS: &[&str] = &["pkcs11provider", "securitykeyprovider"];

/// `ssh -o Key=Value` / `-oKey Value` with a command key; `-o` for `scp` and `sftp` too
/// (which take options after operands; ssh stops at the host).
pub(super) fn ssh_options(argv: &[Field], val_short: &str, out: &mut Vec<Carried>) {
    let grammar = crate::argv::Grammar {
        short_val: val_short,
        permute: !argv[0].text.ends_with("ssh"),
        ..crate::argv::Grammar::EMPTY
    };
    for item in grammar.parse(argv, 1).items {
        if let crate::argv::Item::Short {
            letter: 'o',
            value: Some(v),
            ..
        } = item
        {
            ssh_option(&argv[0].text, &v.text, &v, out);
        }
    }
}

/// One `-o` value: `Key=Value` or `Key Value`.
pub(super) fn ssh_option(prog: &str, option: &str, src: &Field, out: &mut Vec<Carried>) {
    let option = option.trim_start();
    let split = option
        .find(|c: char| c == '=' || c.is_whitespace())
        .unwrap_or(option.len());
    let key = option[..split].to_ascii_lowercase();
    let value = option[split..]
        .trim_start_matches(|c: char| c.is_whitespace())
        .trim_start_matches('=')
        .trim();
    if SSH_COMMAND_KEYS.contains(&key.as_str()) {
        if !value.eq_ignore_ascii_case("none") && !value.is_empty() {
            out.push(Carried::Shell(part(src, value)));
        }
    } else if SSH_LIBRARY_KEYS.contains(&key.as_str()) {
        out.push(Carried::Opaque(format!(
            "`{prog} -o {key}` loads a library, which runs its code"
        )));
    } else if src.dynamic && (split == option.len() || not_static(&option[..split])) {
        out.push(Carried::Opaque(format!(
            "`{prog} -o {option}` is not static (it may set ProxyCommand)"
        )));
    }
}

/// `curl -K FILE` / `--config FILE` reads more options from FILE (`upload-file = .env`,
/// `output = ~/.bashrc`), which the analyzer does not see.
pub(super) fn curl_config(argv: &[Field], out: &mut Vec<Carried>) {
    if crate::grammars::CURL
        .parse(argv, 1)
        .value('K', "--config")
        .is_some()
    {
        out.push(Carried::Opaque(
            "`curl -K` reads options from a file, which can name files to upload or write".into(),
        ));
    }
}

/// `wget -e CMD` / `--execute CMD` runs a wgetrc command: the ones that name a file to send,
/// write or read, or a program to run (`post_file=.env`, `output_document=…`,
/// `use_askpass=…`) are opaque; settings such as `robots=off` are not.
pub(super) fn wget_execute(argv: &[Field], out: &mut Vec<Carried>) {
    const FILE_KEYS: &[&str] = &[
        "postfile",
        "bodyfile",
        "outputdocument",
        "logfile",
        "appendoutput",
        "input",
        "useaskpass",
        "loadcookies",
        "savecookies",
        "hstsfile",
        "certificate",
        "privatekey",
        "cacertificate",
        "warcfile",
        "dirprefix",
        "configfile",
    ];
    for value in crate::grammars::WGET
        .parse(argv, 1)
        .values('e', "--execute")
    {
        let v = value.text.as_str();
        let key: String = v
            .split('=')
            .next()
            .unwrap_or("")
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        if value.dynamic || FILE_KEYS.contains(&key.as_str()) {
            out.push(Carried::Opaque(format!(
                "`wget -e {}` names a file or program the analyzer does not follow",
                clip(v)
            )));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::texts;

    #[test]
    fn ssh_options_carry_commands() {
        assert_eq!(texts("ssh -o ProxyCommand='nc %h %p' host"), ["nc %h %p"]);
        assert_eq!(texts("ssh -oProxyCommand=id host"), ["id"]);
        assert_eq!(texts("ssh -o 'proxycommand id' host"), ["id"]);
        assert_eq!(
            texts("ssh -o LocalCommand=id -o PermitLocalCommand=yes h"),
            ["id"]
        );
        assert_eq!(texts("ssh -o KnownHostsCommand=id h"), ["id"]);
        assert_eq!(texts("ssh -o ProxyCommand=none h"), Vec::<String>::new());
        assert_eq!(texts("ssh -o PKCS11Provider=/x.so h"), ["?"]);
        assert_eq!(
            texts("ssh -p 22 -o StrictHostKeyChecking=no h ls -o x"),
            Vec::<String>::new()
        );
        // After the host, `-o` belongs to the remote command.
        assert_eq!(texts("ssh h ls -o ProxyCommand=id"), Vec::<String>::new());
        assert_eq!(texts("scp -o ProxyCommand=id a h:"), ["id"]);
        assert_eq!(texts("sftp -oProxyCommand=id h"), ["id"]);
        assert_eq!(texts("ssh -vF cfg h"), ["?"]);
        assert_eq!(texts("ssh -vp 22 h"), Vec::<String>::new());
    }
}
