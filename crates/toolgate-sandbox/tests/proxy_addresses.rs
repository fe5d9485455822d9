//! The allow-list proxy's address and port policy, from inside a sandboxed command started
//! by `toolgate-sandbox-helper run --allow-domain …` (the front door): with `*` allowed, the
//! command still cannot reach the host's own addresses, private or link-local ranges, or
//! ports other than 80/443, however the address is spelled; listing the address (and port)
//! itself lets it through.

mod common;

use std::io::Read;
use std::net::{IpAddr, TcpListener};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{Fixture, HELPER, require};
use toolgate_protocol::net::local_addresses;
use toolgate_sandbox::Layer;

fn tier() {
    require(&[Layer::UserNs, Layer::MountNs, Layer::PidNs, Layer::NetNs]);
}

/// A TCP server on every interface (`0.0.0.0`) counting the connections it accepts.
struct Server {
    port: u16,
    accepted: Arc<AtomicUsize>,
}

impl Server {
    fn start() -> Server {
        let listener = TcpListener::bind("0.0.0.0:0").unwrap_or_else(|e| panic!("{e}"));
        let port = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("{e}"))
            .port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&accepted);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { return };
                count.fetch_add(1, Ordering::SeqCst);
                let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
                let _ = conn.read(&mut [0u8; 64]);
            }
        });
        Server { port, accepted }
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

/// Runs a bash script in the sandbox with these `--allow-domain` entries; `req TARGET` in
/// the script prints the proxy's status line for `CONNECT TARGET`.
fn run(f: &Fixture, allow: &[&str], script: &str) -> Output {
    let mut cmd = Command::new(HELPER);
    cmd.args(["run", "--workspace"]).arg(&f.ws);
    for a in allow {
        cmd.args(["--allow-domain", a]);
    }
    let script = format!(
        "req() {{ exec 3<>/dev/tcp/127.0.0.1/3128 || {{ echo NO-PROXY; return; }}; \
         printf 'CONNECT %s HTTP/1.1\\r\\n\\r\\n' \"$1\" >&3; \
         IFS= read -r line <&3; echo \"$1 => ${{line%$'\\r'}}\"; exec 3<&-; }}\n{script}"
    );
    cmd.args(["--", "bash", "-c", &script])
        .current_dir(&f.ws)
        .env("HOME", &f.home)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn status_of<'a>(out: &'a str, target: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("{target} => ")))
        .unwrap_or_else(|| panic!("no answer for {target} in:\n{out}"))
}

/// A non-loopback address of this host, for the "own address" case.
fn own_address() -> IpAddr {
    local_addresses()
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .find(|a| !a.is_loopback() && !matches!(a, IpAddr::V6(v6) if v6.segments()[0] == 0xfe80))
        .unwrap_or_else(|| panic!("this host has no non-loopback address to test with"))
}

#[test]
fn a_wildcard_does_not_reach_internal_or_own_addresses() {
    tier();
    let f = Fixture::new();
    let server = Server::start();
    let p = server.port;
    let own = match own_address() {
        IpAddr::V4(a) => format!("{a}:{p}"),
        IpAddr::V6(a) => format!("[{a}]:{p}"),
    };
    let targets = [
        own.clone(),
        format!("127.0.0.1:{p}"),
        format!("0x7f.1:{p}"),
        format!("2130706433:{p}"),
        format!("0177.0.0.1:{p}"),
        format!("[::ffff:127.0.0.1]:{p}"),
        format!("[::1]:{p}"),
        format!("localhost:{p}"),
        "169.254.169.254:80".to_owned(),
        "10.255.255.1:443".to_owned(),
        "[fd00:ec2::254]:80".to_owned(),
        "100.100.100.200:80".to_owned(),
    ];
    let script: String = targets.iter().map(|t| format!("req '{t}'\n")).collect();
    // `*:*`: every host on every port — the address check alone must hold.
    let out = run(&f, &["*:*"], &script);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    for t in &targets {
        let status = status_of(&stdout, t);
        assert!(
            status.starts_with("HTTP/1.1 403"),
            "{t}: {status}\nstderr: {stderr}"
        );
    }
    assert_eq!(
        server.accepted(),
        0,
        "a refused connection reached the server"
    );
    // Each was allowed by the lists and refused by the address check (the proxy's log line
    // names the address and its range), not by an unmatched pattern.
    for t in &targets {
        let logged = t.replace(['[', ']'], "");
        let line = stderr
            .lines()
            .find(|l| l.contains(&format!(" {logged} (")))
            .unwrap_or_else(|| panic!("no decision for {t}:\n{stderr}"));
        assert!(
            line.contains("matches allowedDomains `*:*`") && line.contains(", but "),
            "{t}: {line}"
        );
    }
    assert!(
        stderr.contains("`0x7f.1` is the address 127.0.0.1"),
        "{stderr}"
    );
    let own_line = stderr
        .lines()
        .find(|l| l.contains(&own.replace(['[', ']'], "")));
    assert!(
        own_line.is_some_and(|l| l.contains("an address of this host")),
        "{own_line:?}"
    );
}

#[test]
fn ports_other_than_80_and_443_need_listing() {
    tier();
    let f = Fixture::new();
    let server = Server::start();
    let p = server.port;
    let target = format!("127.0.0.1:{p}");
    // The address listed without a port: 80 and 443 only.
    let out = run(&f, &["127.0.0.1"], &format!("req '{target}'"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        status_of(&stdout, &target).starts_with("HTTP/1.1 403"),
        "{stdout}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("port {p} is not allowed")),
        "{stderr}"
    );
    // A wildcard host on a public-looking address: refused for the port before connecting.
    let out = run(&f, &["*"], "req '198.18.0.1:22'; req 'example.invalid:25'");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    for t in ["198.18.0.1:22", "example.invalid:25"] {
        assert!(
            status_of(&stdout, t).starts_with("HTTP/1.1 403"),
            "{stdout}"
        );
    }
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("port 25 is not allowed"),
        "{out:?}"
    );
    assert_eq!(server.accepted(), 0);
    // The address and port listed: the user chose it, so it is reached.
    let out = run(&f, &[&target], &format!("req '{target}'"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        status_of(&stdout, &target).starts_with("HTTP/1.1 200"),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(server.accepted(), 1);
}
