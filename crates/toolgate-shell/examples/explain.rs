//! Prints the analysis of each argument as JSON: `cargo run -p toolgate-shell --example explain -- 'cmd'`.
//!
//! `--brief` prints one line per command instead: the hook's answer (deny, ask or none), the
//! risk, the findings and opaque reasons. `@FILE` analyses the (lossily decoded) contents of
//! FILE, e.g. a fuzz artifact; `@@FILE` analyses each line of FILE as a command.
use toolgate_protocol::Risk;
use toolgate_shell::{Analysis, Context, analyze};

fn brief(cmd: &str, a: &Analysis) -> String {
    let answer = if a.risk == Risk::Catastrophic {
        "deny"
    } else if a.risk == Risk::High || !a.opaque.is_empty() {
        "ask"
    } else if a.is_read_only() {
        "read-only"
    } else {
        "none"
    };
    let mut why: Vec<String> = a
        .findings
        .iter()
        .filter(|f| f.risk >= Risk::High)
        .map(|f| f.reason.clone())
        .collect();
    why.extend(a.opaque.iter().map(|o| format!("opaque: {o}")));
    format!("{answer:9} {cmd}\n          {}", why.join("\n          "))
}

fn main() {
    let ctx = Context::new("/home/user/project").with_home("/home/user");
    let mut short = false;
    for arg in std::env::args().skip(1) {
        if arg == "--brief" {
            short = true;
            continue;
        }
        let cmds: Vec<String> = match arg.strip_prefix("@@") {
            Some(path) => std::fs::read_to_string(path)
                .unwrap_or_default()
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(str::to_owned)
                .collect(),
            None => vec![match arg.strip_prefix('@') {
                Some(path) => {
                    String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned()
                }
                None => arg,
            }],
        };
        for cmd in cmds {
            let t = std::time::Instant::now();
            let a = analyze(&cmd, &ctx);
            if short {
                println!("{}", brief(&cmd, &a));
                continue;
            }
            eprintln!("analysed in {:?}", t.elapsed());
            match serde_json::to_string_pretty(&a) {
                Ok(s) => println!("{s}"),
                Err(e) => eprintln!("{e}"),
            }
        }
    }
}
