//! Long-running servers and watchers (shell-safety §7), recognised on the parsed command —
//! program, subcommand and flags — not by regex over the text, so `repair` is not `air` and
//! `docker compose up -d` (detached) is not long-running.

use crate::walk::Rec;

/// A server rule: how to recognise one kind of long-running command.
pub(crate) struct ServerRule {
    /// Rule id reported in [`crate::ServerMatch::rule`].
    pub id: &'static str,
    /// Program basenames.
    pub programs: &'static [&'static str],
    /// The test over the arguments.
    pub test: fn(&[&str]) -> bool,
    /// Commands that must match.
    pub matches: &'static [&'static str],
    /// Look-alikes that must not.
    pub not_matches: &'static [&'static str],
}

fn positionals<'a>(args: &[&'a str]) -> Vec<&'a str> {
    args.iter()
        .copied()
        .filter(|a| !a.starts_with('-'))
        .collect()
}

fn first_is(args: &[&str], subs: &[&str]) -> bool {
    positionals(args).first().is_some_and(|s| subs.contains(s))
}

fn pkg_script(args: &[&str]) -> bool {
    let pos = positionals(args);
    let script = match pos.first() {
        Some(&"run") | Some(&"run-script") => pos.get(1).copied(),
        other => other.copied(),
    };
    script.is_some_and(|s| {
        matches!(
            s,
            "dev" | "start" | "serve" | "watch" | "preview" | "develop" | "server"
        ) || s.starts_with("dev:")
            || s.starts_with("start:")
            || s.starts_with("serve:")
            || s.ends_with(":watch")
            || s.ends_with(":dev")
    })
}

fn not_detached(args: &[&str]) -> bool {
    !args
        .iter()
        .any(|a| matches!(*a, "-d" | "--detach" | "--wait"))
        && !args.iter().any(|a| a.starts_with("--detach="))
}

fn python(args: &[&str]) -> bool {
    let m = args
        .iter()
        .position(|a| *a == "-m")
        .and_then(|i| args.get(i + 1))
        .copied();
    match m {
        Some(
            "http.server" | "SimpleHTTPServer" | "uvicorn" | "gunicorn" | "hypercorn" | "flask"
            | "django" | "streamlit" | "jupyter" | "mkdocs" | "fastapi" | "aiohttp.web" | "daphne"
            | "waitress",
        ) => !matches!(m, Some("flask")) || args.contains(&"run"),
        _ => {
            let pos = positionals(args);
            pos.first().is_some_and(|f| f.ends_with("manage.py"))
                && pos.get(1).is_some_and(|s| *s == "runserver")
                || pos.first().is_some_and(|f| {
                    matches!(
                        *f,
                        "app.py" | "server.py" | "main.py" | "wsgi.py" | "asgi.py"
                    ) && pos.len() == 1
                })
        }
    }
}

fn cargo(args: &[&str]) -> bool {
    first_is(args, &["watch", "leptos", "shuttle"])
        && (positionals(args).first() != Some(&"shuttle") || args.contains(&"run"))
}

fn go(args: &[&str]) -> bool {
    let pos = positionals(args);
    pos.first() == Some(&"run")
        && pos
            .iter()
            .skip(1)
            .any(|p| p.contains("server") || p.contains("serve") || p.contains("cmd/"))
}

fn node(args: &[&str]) -> bool {
    positionals(args).first().is_some_and(|f| {
        let name = f.rsplit('/').next().unwrap_or(f);
        name.starts_with("server.")
            || name == "app.js"
            || name == "index.js" && f.contains("server")
            || name.starts_with("dev-server")
    })
}

fn gradle(args: &[&str]) -> bool {
    args.iter().any(|a| {
        matches!(*a, "bootRun" | "run" | "appRun" | "quarkusDev") || a.ends_with(":bootRun")
    }) || args.contains(&"--continuous")
        || args.contains(&"-t")
}

fn mvn(args: &[&str]) -> bool {
    args.iter().any(|a| {
        matches!(
            *a,
            "spring-boot:run" | "quarkus:dev" | "jetty:run" | "tomcat7:run" | "exec:java"
        )
    })
}

fn compose(args: &[&str]) -> bool {
    let pos = positionals(args);
    let up = pos.first() == Some(&"up")
        || (pos.first() == Some(&"compose") && pos.get(1) == Some(&"up"))
        || (pos.first() == Some(&"compose") && pos.get(1) == Some(&"watch"))
        || pos.first() == Some(&"watch");
    up && not_detached(args)
}

fn php(args: &[&str]) -> bool {
    args.contains(&"-S")
        || (positionals(args).first() == Some(&"artisan") && args.contains(&"serve"))
}

/// All server rules.
#[rustfmt::skip]
pub(crate) const SERVER_RULES: &[ServerRule] = &[
    ServerRule { id: "js_package_script", programs: &["npm", "yarn", "pnpm", "bun"], test: pkg_script, matches: &["npm run dev", "yarn start", "pnpm dev", "bun run serve", "npm start"], not_matches: &["npm run build", "npm test", "yarn install"]},
    ServerRule { id: "vite", programs: &["vite"], test: |a| { positionals(a) .first() .is_none_or(|s| matches!(*s, "dev" | "serve" | "preview")) }, matches: &["vite", "vite dev", "npx vite"], not_matches: &["vite build"]},
    ServerRule { id: "next", programs: &["next", "nuxt", "nuxi", "astro", "remix", "gatsby", "svelte-kit", "ng", "expo", "react-scripts", "vue-cli-service", "parcel", "storybook", "docusaurus", "eleventy", "hexo"], test: |a| { first_is(a, &["dev", "start", "serve", "develop", "preview"]) || a.contains(&"--watch") || a.contains(&"--serve") }, matches: &["next dev", "nuxt dev", "ng serve", "astro dev", "gatsby develop"], not_matches: &["next build", "ng build", "next lint"]},
    ServerRule { id: "webpack", programs: &["webpack", "webpack-dev-server", "rollup", "esbuild", "tsc", "tsup", "babel", "sass", "tailwindcss", "jest", "vitest"], test: |a| { a.iter().any(|x| { matches!(*x, "serve" | "--watch" | "-w" | "--serve" | "--servedir" | "watch") }) }, matches: &["webpack serve", "tsc --watch", "esbuild app.ts --watch", "vitest watch"], not_matches: &["webpack", "tsc", "vitest run"]},
    ServerRule { id: "watcher", programs: &["nodemon", "ts-node-dev", "live-server", "http-server", "serve", "browser-sync", "json-server", "lite-server", "pm2-runtime", "air", "reflex", "watchexec", "entr", "fswatch", "uvicorn", "gunicorn", "hypercorn", "daphne", "waitress-serve", "ngrok", "localtunnel", "lt", "redis-server", "mongod", "sanic"], test: |a| { !a.iter().any(|x| { matches!(*x, "--version" | "-v" | "-V" | "--help" | "-h" | "init" | "build" | "version" | "help") }) }, matches: &["nodemon app.js", "uvicorn main:app --reload", "gunicorn app:app", "air", "http-server .", "serve -s dist"], not_matches: &["nodemon --version", "air init", "repair"]},
    ServerRule { id: "serve_subcommand", programs: &["hugo", "jekyll", "rails", "bin/rails", "flask", "streamlit", "jupyter", "jupyter-lab", "mkdocs", "wrangler", "fastapi", "caddy", "tsx", "django-admin", "mix", "hexo", "zola", "mdbook", "sphinx-autobuild", "firebase", "netlify", "vercel", "supabase", "func", "sam", "amplify", "ionic", "quasar", "remix", "shopify", "functions-framework"], test: |a| { let pos = positionals(a); match pos.first().copied() { Some("server" | "s" | "serve" | "dev" | "run" | "lab" | "notebook" | "watch" | "start" | "phx.server" | "emulators:start") => true, Some("local") => pos.get(1) == Some(&"start-api"), _ => false} }, matches: &["flask run", "rails server", "rails s", "hugo server", "jekyll serve", "bundle exec jekyll serve", "streamlit run app.py", "mkdocs serve", "jupyter lab", "wrangler dev", "mix phx.server"], not_matches: &["rails routes", "hugo", "flask --version", "jekyll build", "mkdocs build", "caddy version"]},
    ServerRule { id: "python_server", programs: &["python", "python3", "python2", "py", "pypy3"], test: python, matches: &["python -m http.server 8000", "python3 manage.py runserver", "python -m uvicorn app:app", "python -m flask run", "python app.py"], not_matches: &["python -m pytest", "python manage.py migrate", "python script.py arg"]},
    ServerRule { id: "cargo_watch", programs: &["cargo"], test: cargo, matches: &["cargo watch -x run", "cargo leptos watch"], not_matches: &["cargo run", "cargo build", "cargo test"]},
    ServerRule { id: "go_run_server", programs: &["go"], test: go, matches: &["go run ./cmd/server", "go run server.go"], not_matches: &["go run main.go", "go build ./..."]},
    ServerRule { id: "node_server", programs: &["node", "bun", "deno", "ts-node"], test: node, matches: &["node server.js", "node src/server.ts", "node app.js"], not_matches: &["node scripts/serverless-deploy.js", "node build.js"]},
    ServerRule { id: "jvm_server", programs: &["gradle", "gradlew", "./gradlew"], test: gradle, matches: &["./gradlew bootRun", "gradle run"], not_matches: &["gradle build"]},
    ServerRule { id: "maven_server", programs: &["mvn", "mvnw", "./mvnw"], test: mvn, matches: &["mvn spring-boot:run", "./mvnw quarkus:dev"], not_matches: &["mvn package"]},
    ServerRule { id: "compose_up", programs: &["docker", "docker-compose", "podman", "podman-compose"], test: compose, matches: &["docker compose up", "docker-compose up", "docker compose watch"], not_matches: &["docker compose up -d", "docker compose down", "docker ps"]},
    ServerRule { id: "php_server", programs: &["php"], test: php, matches: &["php -S localhost:8000", "php artisan serve"], not_matches: &["php -v", "php artisan migrate"]},
    ServerRule { id: "tail_follow", programs: &["tail", "journalctl", "less"], test: |a| { a.iter() .any(|x| matches!(*x, "-f" | "-F" | "--follow" | "+F")) }, matches: &["tail -f log.txt", "journalctl -f"], not_matches: &["tail -n 5 log.txt"]},
    ServerRule { id: "logs_follow", programs: &["kubectl", "docker", "podman", "stern"], test: |a| { a.iter().any(|x| matches!(*x, "-f" | "--follow")) && positionals(a).first().is_some_and(|s| *s == "logs") }, matches: &["kubectl logs -f pod", "docker logs -f web"], not_matches: &["kubectl logs pod", "kubectl apply -f x.yaml"]},
];

/// The first server rule matching a record.
pub(crate) fn detect(rec: &Rec) -> Option<&'static ServerRule> {
    let args: Vec<&str> = rec.argv.iter().skip(1).map(|f| f.text.as_str()).collect();
    let prog = rec.program.as_str();
    SERVER_RULES
        .iter()
        .find(|r| r.programs.contains(&prog) && (r.test)(&args))
}

#[cfg(test)]
mod tests {
    use crate::{Context, analyze};

    #[test]
    fn server_rules_walk_their_examples() {
        let ctx = Context::new("/w");
        for r in super::SERVER_RULES {
            for m in r.matches {
                let a = analyze(m, &ctx);
                assert!(a.server.is_some(), "{} should match {m}", r.id);
            }
            for m in r.not_matches {
                let a = analyze(m, &ctx);
                assert!(
                    a.server.as_ref().is_none_or(|s| s.rule != r.id),
                    "{} should not match {m}: {:?}",
                    r.id,
                    a.server
                );
            }
        }
    }
}
