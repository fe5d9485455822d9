//! Database rules: destructive SQL (`DROP`, `TRUNCATE`, `DELETE` without `WHERE`, `UPDATE`
//! without `WHERE`, `GRANT ALL`) in client arguments, here-docs and piped input; Redis and Mongo
//! wipes; framework tasks that drop or reset databases.

use std::sync::OnceLock;

use regex::Regex;
use toolgate_protocol::Risk;

use super::{Rule, View};

fn sql_regex() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?i)\bdrop\s+(?:database|schema|table|keyspace|index|view|user|role|collection)\b|\btruncate\s+(?:table\s+)?\w|\bdelete\s+from\s+[\w.`\x22\[\]]+\s*(?:;|$)|\bflushall\b|\bflushdb\b|dropDatabase\s*\(|\.drop\s*\(\s*\)|\.(?:deleteMany|remove)\s*\(\s*\{\s*\}\s*\)|\balter\s+table\s+\S+\s+drop\b|\bupdate\s+[\w.`\x22]+\s+set\s+[^;]*?(?:;|$)|\bgrant\s+all\b|\.deleteMany\s*\(|\.drop(?:Collection|Index|Indexes)?\s*\(").ok()
    })
    .as_ref()
}

/// Destructive SQL or database command text, if any.
pub(crate) fn destructive_sql(text: &str) -> Option<String> {
    for m in sql_regex()?.find_iter(text) {
        let s = m.as_str().trim();
        // `UPDATE … SET … WHERE …` touches chosen rows only.
        if s.to_ascii_lowercase().starts_with("update")
            && s.to_ascii_lowercase().contains(" where ")
        {
            continue;
        }
        return Some(s.chars().take(60).collect());
    }
    None
}

fn db_destroy(v: &View<'_>) -> Option<String> {
    let p = v.program();
    // SQL or Redis typed straight into the shell.
    if matches!(
        p.to_ascii_lowercase().as_str(),
        "drop" | "truncate" | "delete" | "update" | "grant" | "alter"
    ) {
        let line = format!("{p} {}", v.args.join(" "));
        if let Some(s) = destructive_sql(&line) {
            return Some(format!(
                "is destructive SQL (`{s}`) typed as a shell command"
            ));
        }
    }
    if matches!(
        p,
        "FLUSHALL" | "FLUSHDB" | "SHUTDOWN" | "flushall" | "flushdb"
    ) {
        return Some(format!("is a Redis `{p}` typed as a shell command"));
    }
    if p == "pg_restore" && v.any_arg(&["--clean", "-c"]) {
        return Some("drops objects before restoring".into());
    }
    // Whole-database tools.
    match p {
        "dropdb" | "dropuser" => return Some(format!("`{p}` drops a database or role")),
        "mysqladmin" if v.any_arg(&["drop", "--force"]) && v.any_arg(&["drop"]) => {
            return Some("drops a database".into());
        }
        _ => {}
    }
    let joined_args = v.args.join(" ");
    let texts: Vec<&str> = v
        .args
        .iter()
        .copied()
        .chain(std::iter::once(joined_args.as_str()))
        .chain(v.rec.stdin.as_ref().map(|(t, _)| t.as_str()))
        .chain(v.rec.fed.as_deref())
        .collect();
    if crate::exec::DB_CLIENTS.contains(&p)
        || matches!(
            p,
            "bq" | "snowsql"
                | "trino"
                | "presto"
                | "spark-sql"
                | "hive"
                | "beeline"
                | "influx"
                | "cockroach"
                | "surreal"
                | "turso"
                | "wrangler"
                | "supabase"
                | "neonctl"
                | "planetscale"
                | "pscale"
        )
    {
        for t in texts {
            if let Some(s) = destructive_sql(t) {
                return Some(format!("runs destructive SQL `{s}`"));
            }
        }
        if p == "redis-cli"
            && v.args.iter().any(|a| {
                matches!(
                    a.to_ascii_uppercase().as_str(),
                    "FLUSHALL" | "FLUSHDB" | "SHUTDOWN" | "DEBUG"
                )
            })
        {
            return Some("wipes or stops the Redis server".into());
        }
    }
    framework_reset(v)
}

/// Framework and migration tools that drop or reset a database (`rails db:drop`, `prisma
/// migrate reset`, `manage.py flush`, `flyway clean`, …).
fn framework_reset(v: &View<'_>) -> Option<String> {
    let p = v.program();
    // Framework tasks that drop or reset databases.
    let joined = v.args.join(" ");
    const TASKS: &[&str] = &[
        "ecto.reset",
        "ecto.drop",
        "db:drop",
        "db:reset",
        "db:schema:load",
        "db:purge",
        "db:wipe",
        "migrate:fresh",
        "migrate:reset",
        "migrate:refresh",
        "db:seed:replant",
        "schema:drop",
        "doctrine:database:drop",
        "doctrine:schema:drop",
    ];
    if matches!(
        p,
        "rails"
            | "rake"
            | "bin/rails"
            | "php"
            | "artisan"
            | "bundle"
            | "npx"
            | "yarn"
            | "symfony"
            | "console"
            | "sequelize"
            | "typeorm"
            | "knex"
            | "mix"
            | "npm"
            | "pnpm"
    ) && let Some(t) = TASKS.iter().find(|t| joined.contains(**t))
    {
        return Some(format!("`{t}` drops or resets a database"));
    }
    if (joined.contains(".destroy_all") || joined.contains(".delete_all"))
        && (joined.contains("runner") || matches!(p, "rails" | "gitlab-rails" | "rake" | "bundle"))
    {
        return Some("mass-deletes records".into());
    }
    if (p == "prisma" || joined.contains("prisma"))
        && (joined.contains("migrate reset") || joined.contains("--force-reset"))
    {
        return Some("resets the database (prisma)".into());
    }
    if (p == "prisma" || joined.contains("prisma"))
        && joined.contains("db push")
        && v.any_arg(&["--accept-data-loss"])
    {
        return Some("pushes a schema that drops data (`--accept-data-loss`)".into());
    }
    if (joined.contains("manage.py") || p == "manage.py" || p == "django-admin")
        && v.args
            .iter()
            .any(|a| matches!(*a, "flush" | "reset_db" | "sqlflush"))
    {
        return Some("flushes the database (django)".into());
    }
    if matches!(p, "flyway" | "liquibase")
        && v.args
            .iter()
            .any(|a| matches!(*a, "clean" | "drop-all" | "dropAll"))
    {
        return Some("drops every object in the schema".into());
    }
    if p == "alembic" && v.args.contains(&"downgrade") && v.args.contains(&"base") {
        return Some("downgrades the schema to empty".into());
    }
    None
}

/// Database rules.
#[rustfmt::skip]
pub(crate) const RULES: &[Rule] = &[
    Rule { id: "db.destroy", category: "database_destruction", risk: Risk::High, programs: &[], test: db_destroy, matches: &["psql -c 'DROP DATABASE prod;'", "mysql -e 'DROP TABLE users'", "dropdb prod", "redis-cli FLUSHALL", "mongosh --eval 'db.dropDatabase()'", "rails db:drop", "echo 'DROP TABLE x;' | psql", "psql <<EOF\nTRUNCATE users;\nEOF", "sqlite3 app.db 'DELETE FROM users;'", "npx prisma migrate reset --force", "prisma db push --accept-data-loss", "python manage.py flush --noinput"], not_matches: &["psql -c 'SELECT 1'", "mysql -e 'DELETE FROM users WHERE id = 1'", "echo 'DROP TABLE x'", "git commit -m 'DROP TABLE'", "redis-cli GET x", "prisma db push"]},
];
