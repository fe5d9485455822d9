//! Prints the analysis of each argument as JSON: `cargo run -p toolgate-shell --example explain -- 'cmd'`.
use toolgate_shell::{Context, analyze};

fn main() {
    let ctx = Context::new("/home/user/project").with_home("/home/user");
    for arg in std::env::args().skip(1) {
        // `@FILE` analyses the (lossily decoded) contents of FILE, e.g. a fuzz artifact.
        let cmd = match arg.strip_prefix('@') {
            Some(path) => {
                String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned()
            }
            None => arg,
        };
        let t = std::time::Instant::now();
        let a = analyze(&cmd, &ctx);
        eprintln!("analysed in {:?}", t.elapsed());
        match serde_json::to_string_pretty(&a) {
            Ok(s) => println!("{s}"),
            Err(e) => eprintln!("{e}"),
        }
    }
}
