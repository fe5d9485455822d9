//! Remote and shared state: what a command changes somewhere other people (or other
//! programs) depend on — a database server, a cache, a load balancer, a process it did not
//! start, a system service, a host reached over ssh. Reading any of them is fine; changing
//! them asks.

use std::sync::OnceLock;

use regex::Regex;
use toolgate_protocol::Risk;

use super::{Rule, View};
use crate::argv::{Grammar, Item};
use crate::types::Origin;

/// Database clients that talk to a server (a local `sqlite3`/`duckdb` file is the
/// workspace's business).
const SERVER_CLIENTS: &[&str] = &[
    "psql",
    "mysql",
    "mariadb",
    "mongo",
    "mongosh",
    "cqlsh",
    "clickhouse-client",
    "sqlcmd",
    "cockroach",
    "influx",
    "pgcli",
    "mycli",
    "usql",
    "snowsql",
    "bq",
    "trino",
    "presto",
];

/// The options of each client whose value is a query or a script file.
const QUERY_OPTIONS: &[(&str, &[&str], &[&str])] = &[
    ("psql", &["-c", "--command"], &["-f", "--file"]),
    ("pgcli", &["-c"], &[]),
    ("mysql", &["-e", "--execute"], &[]),
    ("mariadb", &["-e", "--execute"], &[]),
    ("mycli", &["-e", "--execute"], &[]),
    ("mongo", &["--eval"], &[]),
    ("mongosh", &["--eval"], &["-f", "--file"]),
    ("cqlsh", &["-e", "--execute"], &["-f", "--file"]),
    ("clickhouse-client", &["-q", "--query"], &["--queries-file"]),
    ("sqlcmd", &["-Q", "-q"], &["-i"]),
    ("cockroach", &["-e", "--execute"], &["-f", "--file"]),
    ("influx", &["-execute"], &["-import"]),
    ("usql", &["-c", "--command"], &["-f", "--file"]),
    ("snowsql", &["-q", "--query"], &["-f", "--filename"]),
    ("trino", &["--execute"], &["-f", "--file"]),
    ("presto", &["--execute"], &["-f", "--file"]),
];

/// Statements that change data or schema, after quoted literals are removed.
fn sql_write() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"(?i)(?:^|[;(\s])(insert|update|delete|merge|upsert|replace\s+into|alter|drop|truncate|create|grant|revoke|rename|copy|load\s+data|call|exec(?:ute)?|vacuum\s+full|reindex|cluster|comment\s+on|set\s+global)\b",
        )
        .ok()
    })
    .as_ref()
}

/// MongoDB shell calls that change data, indexes or the server.
fn mongo_write() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"\.(insert\w*|update\w*|delete\w*|remove|drop\w*|replace\w*|bulkWrite|findAndModify|findOneAnd\w+|createIndex\w*|createCollection|renameCollection|save|shutdownServer|runCommand|adminCommand|grantRolesToUser|createUser|dropUser)\s*\(",
        )
        .ok()
    })
    .as_ref()
}

/// Text without its single- and double-quoted literals, so that `WHERE name = 'drop'` is
/// not a statement.
fn without_literals(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None => out.push(c),
        }
    }
    out
}

/// The statement that writes, if `text` (SQL or MongoDB shell code) has one.
fn writing_statement(prog: &str, text: &str) -> Option<String> {
    let plain = without_literals(text);
    let re = if prog.starts_with("mongo") {
        mongo_write()?
    } else {
        sql_write()?
    };
    re.captures(&plain)
        .and_then(|c| c.get(1))
        .map(|m| m.as_str().to_ascii_uppercase())
}

fn db_mutation(v: &View<'_>) -> Option<String> {
    let prog = v.program();
    if !SERVER_CLIENTS.contains(&prog) {
        return None;
    }
    if let Some((_, query, file)) = QUERY_OPTIONS.iter().find(|(p, _, _)| *p == prog) {
        let mut queries = Vec::new();
        super::option_values(&v.rec.argv[1..], query, &mut queries);
        for q in &queries {
            if q.dynamic {
                return Some(format!(
                    "runs a query the analyzer cannot see (`{}`)",
                    q.text
                ));
            }
            if let Some(s) = writing_statement(prog, &q.text) {
                return Some(format!("changes the database (`{s}`)"));
            }
        }
        let mut files = Vec::new();
        super::option_values(&v.rec.argv[1..], file, &mut files);
        if let Some(f) = files.first() {
            return Some(format!("runs the script {} against the database", f.text));
        }
        if !queries.is_empty() {
            return None;
        }
    }
    // Statements fed on stdin: a here-document, a pipe, a file.
    let fed = v
        .rec
        .stdin
        .as_ref()
        .map(|(t, _)| t.as_str())
        .or(v.rec.fed.as_deref());
    if let Some(text) = fed {
        return writing_statement(prog, text).map(|s| format!("changes the database (`{s}`)"));
    }
    v.rec
        .redirects
        .iter()
        .find(|r| r.read && r.public.fd.is_none_or(|fd| fd == 0))
        .map(|r| format!("runs the script {} against the database", r.target.text))
}

/// Redis commands that only read; anything else changes the server.
const REDIS_READS: &[&str] = &[
    "GET",
    "MGET",
    "KEYS",
    "SCAN",
    "EXISTS",
    "TTL",
    "PTTL",
    "TYPE",
    "STRLEN",
    "HGET",
    "HMGET",
    "HGETALL",
    "HKEYS",
    "HVALS",
    "HLEN",
    "HEXISTS",
    "HSCAN",
    "LRANGE",
    "LLEN",
    "LINDEX",
    "SMEMBERS",
    "SCARD",
    "SISMEMBER",
    "SSCAN",
    "ZRANGE",
    "ZRANGEBYSCORE",
    "ZREVRANGE",
    "ZCARD",
    "ZSCORE",
    "ZRANK",
    "ZSCAN",
    "ZCOUNT",
    "INFO",
    "PING",
    "DBSIZE",
    "MONITOR",
    "ECHO",
    "TIME",
    "LASTSAVE",
    "SELECT",
    "AUTH",
    "XRANGE",
    "XREVRANGE",
    "XLEN",
    "XREAD",
    "XINFO",
    "PUBSUB",
    "SUBSCRIBE",
    "PSUBSCRIBE",
    "OBJECT",
    "MEMORY",
    "SLOWLOG",
    "LATENCY",
    "CLIENT",
    "CONFIG",
    "COMMAND",
    "ROLE",
    "HELLO",
    "GETRANGE",
    "BITCOUNT",
    "GEOPOS",
    "GEODIST",
    "PFCOUNT",
    "DUMP",
    "RANDOMKEY",
    "CLUSTER",
];

/// Sub-words of read-list commands that write (`CONFIG SET`, `CLIENT KILL`).
const REDIS_WRITING_SUBS: &[&str] = &[
    "SET",
    "REWRITE",
    "RESETSTAT",
    "KILL",
    "PAUSE",
    "RESET",
    "FLUSHSLOTS",
    "FAILOVER",
    "DELSLOTS",
    "FORGET",
    "ADDSLOTS",
    "MEET",
    "REPLICATE",
];

/// redis-cli's options that take a value.
const REDIS_CLI: Grammar<'static> = Grammar {
    short_val: "hpsanurixdcet",
    long_val: &[
        "--user",
        "--pass",
        "--askpass",
        "--cacert",
        "--cacertdir",
        "--cert",
        "--key",
        "--sni",
        "--tls-ciphers",
        "--rdb",
        "--functions-rdb",
        "--pipe-timeout",
        "--pattern",
        "--count",
        "--quoted-pattern",
        "--memkeys-samples",
        "--eval",
        "--cluster",
    ],
    permute: false,
    ..Grammar::EMPTY
};

fn redis_mutation(v: &View<'_>) -> Option<String> {
    let parsed = REDIS_CLI.parse(&v.rec.argv, 1);
    if parsed.items.iter().any(|it| {
        matches!(
            it,
            Item::Long {
                name: "eval" | "pipe",
                ..
            }
        )
    }) {
        return Some("runs a script or a stream of commands on the server".into());
    }
    let words: Vec<String> = parsed
        .operands()
        .map(|i| v.rec.argv[i].text.to_ascii_uppercase())
        .collect();
    let cmd = words.first()?;
    let read = REDIS_READS.contains(&cmd.as_str())
        && !words
            .get(1)
            .is_some_and(|s| REDIS_WRITING_SUBS.contains(&s.as_str()));
    (!read).then(|| format!("changes the Redis server (`{cmd}`)"))
}

/// Lines of a raw protocol that change the server at the other end: Redis, memcached,
/// HAProxy's admin socket.
fn raw_write() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"(?im)^\s*(flushall|flushdb|set|setex|del|unlink|expire|config\s+set|shutdown|slaveof|replicaof|hset|hdel|lpush|rpush|sadd|zadd|incr|decr|flush_all|add|replace|delete|append|prepend|cas|touch|disable\s+(?:server|frontend|health|agent)|enable\s+server|shutdown\s+(?:sessions|session|frontend)|set\s+(?:server|weight|maxconn|map|table|var)|clear\s+(?:table|counters|map|acl)|del\s+(?:map|acl|server)|add\s+(?:map|acl|server))\b",
        )
        .ok()
    })
    .as_ref()
}

fn raw_mutation(v: &View<'_>) -> Option<String> {
    let fed = v
        .rec
        .stdin
        .as_ref()
        .map(|(t, _)| t.as_str())
        .or(v.rec.fed.as_deref())?;
    raw_write()?.captures(fed).and_then(|c| c.get(1)).map(|m| {
        format!(
            "sends `{}` to a server over a raw connection",
            m.as_str().trim()
        )
    })
}

/// `kill` of processes the command did not start: a literal pid or a looked-up one (`$!`,
/// `%1` and the command's own jobs are its own).
/// A server administration tool's command that changes the server (flushes, reloads,
/// kills, shuts down, purges): everything but its read-only commands.
fn server_admin(v: &View<'_>) -> Option<String> {
    const READS: &[&str] = &[
        "status",
        "extended-status",
        "processlist",
        "variables",
        "version",
        "ping",
        "list",
        "show",
        "help",
    ];
    const VALUED: &[&str] = &[
        "-u",
        "--user",
        "-h",
        "--host",
        "-P",
        "--port",
        "-S",
        "--socket",
        "-c",
        "--count",
        "-i",
        "--sleep",
        "-w",
        "--wait",
        "-H",
        "-V",
        "--vhost",
        "-U",
        "--username",
        "-N",
        "--node",
        "-c",
        "--config",
    ];
    if v.args
        .iter()
        .any(|a| matches!(*a, "--help" | "-?" | "--version"))
    {
        return None;
    }
    let verb = crate::argv::operand_indices(&v.args, VALUED)
        .first()
        .map(|&i| v.args[i])?;
    (!READS.contains(&verb.to_ascii_lowercase().as_str()))
        .then(|| format!("`{} {verb}` changes the state of the server", v.program()))
}

fn kill_pid(v: &View<'_>) -> Option<String> {
    if v.program() == "fuser" {
        return (v.short('k') || v.long("--kill"))
            .then(|| "kills every process using the file or port".into());
    }
    let args = &v.rec.argv[1..];
    if args.iter().any(|a| {
        matches!(
            a.text.as_str(),
            "-l" | "-L" | "--list" | "--table" | "-0" | "-s0"
        )
    }) {
        return None;
    }
    if args
        .windows(2)
        .any(|w| matches!(w[0].text.as_str(), "-s" | "-n" | "--signal") && w[1].text == "0")
    {
        return None;
    }
    let mut skip_value = false;
    args.iter().find_map(|a| {
        let t = a.text.as_str();
        if std::mem::take(&mut skip_value) {
            return None;
        }
        if matches!(t, "-s" | "-n" | "--signal") {
            skip_value = true;
            return None;
        }
        if t.starts_with('-') && !a.dynamic || t.starts_with('%') || t == "$!" {
            return None;
        }
        Some(if a.dynamic {
            format!("signals `{t}`, a process the analyzer cannot tell was started here")
        } else {
            format!("signals process {t}, which this command did not start")
        })
    })
}

/// A command run on another host (`ssh host CMD`) that is not read-only changes that host.
fn remote_exec(v: &View<'_>) -> Option<String> {
    if v.rec.origin != Origin::Remote {
        return None;
    }
    (super::readonly::baseline(v) != Risk::ReadOnly)
        .then(|| "changes state on the remote host it runs on".into())
}

/// Shared-state rules.
#[rustfmt::skip]
pub(crate) const RULES: &[Rule] = &[
    Rule { id: "db.mutation", category: "shared_state", risk: Risk::High, programs: SERVER_CLIENTS, test: db_mutation, matches: &["psql -c 'UPDATE users SET admin = true'", "psql -h db -f migrate.sql", "mysql -e 'INSERT INTO t VALUES (1)' app", "mongosh app --eval 'db.users.updateMany({}, {$set: {a: 1}})'", "mysql app < dump.sql", "psql <<EOF\nALTER TABLE t ADD c int;\nEOF", "clickhouse-client -q 'TRUNCATE TABLE events'"], not_matches: &["psql -c 'select count(*) from users'", "mysql -e 'SHOW TABLES' app", "psql -c \"select * from t where name = 'delete'\"", "mongosh --eval 'db.users.countDocuments()'", "psql -l"]},
    Rule { id: "redis.mutation", category: "shared_state", risk: Risk::High, programs: &["redis-cli", "valkey-cli", "keydb-cli"], test: redis_mutation, matches: &["redis-cli -h cache DEL session:1", "redis-cli SET k v", "redis-cli CONFIG SET dir /tmp", "redis-cli --eval x.lua"], not_matches: &["redis-cli GET k", "redis-cli -h c -p 6379 KEYS '*'", "redis-cli INFO", "redis-cli --scan --pattern 'u:*'"]},
    Rule { id: "raw.mutation", category: "shared_state", risk: Risk::High, programs: &["nc", "ncat", "netcat", "socat", "telnet", "openssl"], test: raw_mutation, matches: &["printf 'FLUSHALL\\r\\n' | nc localhost 6379", "echo 'flush_all' | nc memcached 11211", "echo 'disable server backend/web1' | socat stdio /var/run/haproxy.sock", "nc redis 6379 <<EOF\nDEL k\nEOF"], not_matches: &["echo 'show stat' | socat stdio /var/run/haproxy.sock", "printf 'PING\\r\\n' | nc localhost 6379", "nc -z host 80"]},
    Rule { id: "db.admin", category: "shared_state", risk: Risk::High, programs: &["mysqladmin", "mariadb-admin", "rabbitmqadmin"], test: server_admin, matches: &["mysqladmin flush-privileges", "mysqladmin -u root -h db shutdown", "mysqladmin --user=root flush-hosts", "rabbitmqadmin purge queue name=jobs"], not_matches: &["mysqladmin status", "mysqladmin -u root -h db ping", "rabbitmqadmin list queues", "mysqladmin --help"]},
    Rule { id: "proc.kill_pid", category: "process_kill", risk: Risk::High, programs: &["kill", "fuser"], test: kill_pid, matches: &["kill -9 1234", "kill -KILL 4242", "kill 1234", "kill -s TERM 99", "kill $(pgrep node)", "fuser -k 8080/tcp"], not_matches: &["kill %1", "sleep 9 & kill $!", "kill -0 1234", "kill -l", "fuser 8080/tcp", "pid=$!; kill $pid"]},
    Rule { id: "remote.exec", category: "remote_mutation", risk: Risk::High, programs: &[], test: remote_exec, matches: &["ssh web1 sudo systemctl restart nginx", "ssh prod 'rm -rf /var/www/app'", "ssh h 'cat >> .ssh/authorized_keys'"], not_matches: &["ssh web1 uptime", "ssh h 'df -h; free -m'", "ssh h"]},
];
