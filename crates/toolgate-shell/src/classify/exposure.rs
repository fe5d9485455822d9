//! Network exposure: tunnels that open this machine (or the networks it reaches) to
//! others, and file servers that publish a directory outside the workspace on every
//! interface.

use toolgate_protocol::Risk;

use super::{Rule, View};
use crate::argv::{Grammar, Item};
use crate::feed::is_loopback_url;

/// Programs whose only job is to publish a local port on the internet.
const TUNNEL_SERVICES: &[&str] = &[
    "ngrok",
    "cloudflared",
    "lt",
    "localtunnel",
    "bore",
    "frpc",
    "chisel",
    "pagekite",
    "localxpose",
    "loophole",
    "tunnelto",
    "zrok",
    "expose",
];

/// Whether an `-L`/`-R` forward's destination (`[bind:]port:host:hostport`) is this
/// machine's loopback.
fn forward_to_loopback(spec: &str) -> bool {
    let parts: Vec<&str> = spec.split(':').collect();
    // `port:host:hostport` or `bind:port:host:hostport`; a socket path is local.
    match parts.len() {
        3 => is_loopback_url(parts[1]),
        4 => is_loopback_url(parts[2]),
        _ => spec.starts_with('/'),
    }
}

fn tunnel(v: &View<'_>) -> Option<String> {
    let p = v.program();
    if TUNNEL_SERVICES.contains(&p) {
        // `cloudflared` also has non-tunnel subcommands (`update`, `version`).
        if p == "cloudflared" && !v.args.contains(&"tunnel") {
            return None;
        }
        return Some(format!("`{p}` publishes a local service on the internet"));
    }
    let grammar: Grammar<'static> = match p {
        "ssh" => crate::grammars::SSH,
        "autossh" => crate::grammars::AUTOSSH,
        _ => return None,
    };
    for item in grammar.parse(&v.rec.argv, 1).items {
        let Item::Short {
            letter,
            value: Some(value),
            ..
        } = item
        else {
            continue;
        };
        match letter {
            'R' => {
                return Some(format!(
                    "opens a port on the remote host into this machine (`-R {}`)",
                    value.text
                ));
            }
            'D' => return Some("runs a SOCKS proxy through the remote host (`-D`)".into()),
            'w' => return Some("opens a network tunnel device (`-w`)".into()),
            'L' if !forward_to_loopback(&value.text) => {
                return Some(format!(
                    "forwards a local port to a host behind the remote one (`-L {}`)",
                    value.text
                ));
            }
            'o' => {
                let key = value
                    .text
                    .split(['=', ' '])
                    .next()
                    .unwrap_or("")
                    .to_ascii_lowercase();
                if matches!(key.as_str(), "remoteforward" | "dynamicforward" | "tunnel") {
                    return Some(format!("sets up a tunnel (`-o {}`)", value.text));
                }
            }
            _ => {}
        }
    }
    None
}

/// A static file server's directory and bind address, as far as the command says.
struct Served {
    dir: Option<String>,
    bind: Option<String>,
}

/// What a file-server command serves: `python -m http.server [--bind A] [-d DIR]`, `php -S
/// ADDR -t DIR`, `ruby -run -e httpd DIR`, `http-server DIR -a A`, `busybox httpd -h DIR`,
/// `twistd web --path DIR`.
fn served(v: &View<'_>) -> Option<Served> {
    let p = v.program();
    let args = &v.args;
    let value = |names: &[&str]| -> Option<String> {
        args.iter().enumerate().find_map(|(i, a)| {
            names.iter().find_map(|n| {
                if a == n {
                    args.get(i + 1).map(|s| (*s).to_owned())
                } else {
                    a.strip_prefix(n)
                        .and_then(|r| r.strip_prefix('='))
                        .map(str::to_owned)
                }
            })
        })
    };
    match p {
        _ if crate::interp::interp_of(p) == Some(crate::interp::Interp::Python)
            && args
                .windows(2)
                .any(|w| w[0] == "-m" && matches!(w[1], "http.server" | "SimpleHTTPServer")) =>
        {
            Some(Served {
                dir: value(&["-d", "--directory"]),
                bind: value(&["-b", "--bind"]),
            })
        }
        "php" if args.contains(&"-S") => Some(Served {
            dir: value(&["-t"]),
            bind: value(&["-S"])
                .map(|a| a.rsplit_once(':').map_or(a.clone(), |(h, _)| h.to_owned())),
        }),
        "ruby" if args.contains(&"httpd") => Some(Served {
            dir: args
                .iter()
                .skip_while(|a| **a != "httpd")
                .nth(1)
                .filter(|d| !d.starts_with('-'))
                .map(|d| (*d).to_owned()),
            bind: value(&["--bind-address", "-b"]),
        }),
        "http-server" | "serve" | "live-server" => Some(Served {
            dir: args
                .iter()
                .enumerate()
                .find(|(i, a)| {
                    !(a.starts_with('-')
                        || *i > 0 && matches!(args[i - 1], "-p" | "--port" | "-a" | "-l"))
                })
                .map(|(_, d)| (*d).to_owned()),
            bind: value(&["-a", "--address", "--host"]),
        }),
        "busybox" | "httpd" if args.contains(&"-h") || p == "httpd" => Some(Served {
            dir: value(&["-h"]),
            bind: None,
        }),
        "twistd" if args.contains(&"web") => Some(Served {
            dir: value(&["--path"]),
            bind: None,
        }),
        _ => None,
    }
}

fn serve_dir(v: &View<'_>) -> Option<String> {
    let s = served(v)?;
    // `0.0.0.0` reaches this machine as a destination but binds every interface.
    if s.bind
        .as_deref()
        .is_some_and(|b| is_loopback_url(b) && !b.starts_with("0.0.0.0") && b != "::")
    {
        return None;
    }
    let home = v.ctx.home.as_deref();
    let dir = match &s.dir {
        Some(d) => crate::paths::resolve_word(d, v.rec.cwd.as_deref(), home)?,
        None => v.rec.cwd.clone()?,
    };
    if crate::paths::inside_roots(&dir, &v.ctx.roots, &v.ctx.cwd) {
        return None;
    }
    Some(format!(
        "serves {} to every network it can reach{}",
        dir.display(),
        s.bind.map_or(String::new(), |b| format!(" (bound to {b})"))
    ))
}

/// Network-exposure rules.
#[rustfmt::skip]
pub(crate) const RULES: &[Rule] = &[
    Rule { id: "net.tunnel", category: "network_exposure", risk: Risk::High, programs: &[], test: tunnel, matches: &["ssh -R 8080:localhost:22 user@x.example", "ssh -N -R 0.0.0.0:2222:localhost:22 relay", "ssh -L 5432:db.internal:5432 bastion", "ssh -D 1080 -N h", "ngrok http 8000", "cloudflared tunnel --url http://localhost:8000", "autossh -M 0 -R 9000:localhost:22 h", "ssh -o RemoteForward='8080 localhost:80' h"], not_matches: &["ssh -L 8080:localhost:80 devbox", "ssh devbox uptime", "ssh -p 2222 h", "cloudflared update"]},
    Rule { id: "net.serve_dir", category: "network_exposure", risk: Risk::High, programs: &[], test: serve_dir, matches: &["python3 -m http.server --bind 0.0.0.0 8000 --directory ~", "cd ~ && python3 -m http.server 8000", "python3 -m http.server 9000 -d /", "php -S 0.0.0.0:8000 -t ~", "ruby -run -e httpd ~ -p 8000", "npx http-server ~ -p 8080"], not_matches: &["python3 -m http.server 8000", "python3 -m http.server --bind 127.0.0.1 8000 -d ~", "php -S localhost:8000 -t /", "python3 -m http.server -d docs"]},
];
