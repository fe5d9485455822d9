//! Prints the analysis of each argument as JSON: `cargo run -p toolgate-shell --example explain -- 'cmd'`.
use toolgate_shell::{Context, analyze};

fn main() {
    let ctx = Context::new("/home/user/project").with_home("/home/user");
    for cmd in std::env::args().skip(1) {
        let a = analyze(&cmd, &ctx);
        match serde_json::to_string_pretty(&a) {
            Ok(s) => println!("{s}"),
            Err(e) => eprintln!("{e}"),
        }
    }
}
