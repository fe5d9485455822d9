//! A policy that follows its settings: reloaded when a settings file or a settings URL
//! changes, without dropping or disturbing a call in flight.
//!
//! [`LivePolicy::start`] loads the settings once and builds the first gate; every gate it
//! builds after that (`serve`'s profile gates, [`LivePolicy::gate_for_profile`]) comes from
//! the **same** version, so sessions of different profiles never run different versions of
//! one policy. [`LivePolicy::check`] — called every interval by [`LivePolicy::watch`] —
//! looks for a new version:
//!
//! 1. **Fetch.** Each settings URL is asked again with `If-None-Match` (see
//!    [`crate::policy_url`]); `304` reuses the text in force.
//! 2. **Load.** Every source is read again (managed, `--settings`, project, user — the
//!    same discovery as at start), merged and hashed. The same hash as the version in
//!    force is no change; files are polled rather than watched, because a Kubernetes
//!    ConfigMap, an editor's save-by-rename or a network file system replace a file in
//!    ways inotify on the file misses, and reading a few KiB every interval costs nothing
//!    measurable.
//! 3. **Check.** A version that changes a [restart-only key](crate::restart_only) is
//!    rejected whole; so is one that does not parse or compile, and a fetch that fails.
//! 4. **Swap.** The stages of every gate are rebuilt from the new version, all before
//!    any is swapped, then each gate's set is replaced atomically
//!    ([`Gate::replace_stages`]): calls in flight finish under the version they started
//!    with, calls that start now run under the new one. Rate windows counted in memory
//!    carry on when the constraints did not change; approvals given for the session are
//!    taken over by the new engine.
//!
//! Each outcome other than "unchanged" is a log line and a `kind: "reload"` audit record
//! (docs/audit.md): `accepted` with the new and previous version, or `rejected` with the
//! reason. A rejected version is reported once, not at every poll, and the version in force
//! is kept — there is no state in which a bad version, or none, is in force.

use std::str::FromStr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use toolgate_core::Gate;
use toolgate_policy::settings::{self, Served, Settings, is_settings_url};
use toolgate_protocol::{CallRecord, CallStatus, ErrorCode, RecordKind};

use crate::policy_url::{Fetched, Fetcher};
use crate::stages::Parts;
use crate::{Built, Opened, Setup, SetupError, compile, restart_only};

/// How often `--watch` looks for a new version by default: a policy change reaches every
/// replica within this, and a poll (a few small file reads, one conditional GET) is cheap
/// enough to do this often.
pub const DEFAULT_WATCH_INTERVAL: Duration = Duration::from_secs(5);

/// The shortest interval `--watch-interval` accepts: faster polling buys nothing and would
/// turn a fleet into a load test of its policy server.
pub const MIN_WATCH_INTERVAL: Duration = Duration::from_millis(100);

/// What one [`LivePolicy::check`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reload {
    /// The settings are the version in force (or one already rejected).
    Unchanged,
    /// A new version is in force.
    Accepted {
        /// Its name (a digest of the effective settings).
        version: String,
        /// The version it replaced.
        previous: String,
    },
    /// A new version, or the attempt to get one, was refused; the version in force stays.
    Rejected {
        /// Why, for the log and the audit record.
        reason: String,
        /// The restart-only keys it changed, if that was why.
        restart_required: Vec<&'static str>,
    },
}

/// One settings URL's text in force and its `ETag`.
#[derive(Debug, Clone)]
struct UrlState {
    url: String,
    text: String,
    etag: Option<String>,
}

struct Current {
    settings: Arc<Settings>,
    version: String,
    urls: Vec<UrlState>,
    /// What was last reported as rejected, so a bad version is reported once.
    rejected: Option<String>,
}

/// A gate built from the policy, with its profile and the parts its stages came from.
struct Tracked {
    profile: Option<String>,
    gate: Gate,
    parts: Parts,
    /// Plans the gate's views with the engine in force.
    planner: Arc<crate::Planner>,
}

/// The policy of a front door that may be reloaded; see the module doc.
pub struct LivePolicy {
    setup: Setup,
    opened: Opened,
    /// Whether stages carry their version (into each call's record): with a watch.
    versioned: bool,
    fetcher: Option<Fetcher>,
    /// The session id reload records are written under: the first gate's.
    audit_session: String,
    current: Mutex<Current>,
    gates: Mutex<Vec<Tracked>>,
    /// One reload at a time.
    reloading: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for LivePolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LivePolicy")
            .field("version", &self.version())
            .finish_non_exhaustive()
    }
}

impl LivePolicy {
    /// Loads `setup`'s settings (fetching its URLs), opens its audit sink and state store,
    /// and builds its gate. `versioned` labels every call's record with the version that
    /// decided it; give it when the policy will be reloaded.
    pub fn start(setup: Setup, versioned: bool) -> Result<(Arc<Self>, Built), SetupError> {
        crate::check_workspace(&setup.workspace)?;
        if let Some(mode) = &setup.mode {
            toolgate_protocol::PermissionMode::from_str(mode)?;
        }
        let urls = settings_urls(&setup);
        let fetched = crate::policy_url::fetch_all_blocking(&urls)?;
        let urls: Vec<UrlState> = fetched
            .into_iter()
            .filter_map(|(url, f)| match f {
                Fetched::Body { text, etag } => Some(UrlState { url, text, etag }),
                Fetched::NotModified => None,
            })
            .collect();
        let settings = load_blocking(&setup, &urls)?;
        let version = digest(&settings);
        let opened = Opened::open(&setup)?;
        let loaded = compile(
            settings.clone(),
            setup.settings.profile.as_deref(),
            setup.settings.allow_root,
        )?;
        let profile = loaded.profile.clone();
        let engine = Arc::new(loaded.engine);
        let parts = Parts::build(
            &setup,
            &loaded.settings,
            profile.as_ref(),
            &engine,
            &opened,
            None,
        )?;
        let label = versioned.then(|| Arc::from(version.as_str()));
        let built = crate::build_with_parts(
            &setup,
            loaded.settings,
            loaded.mode,
            parts.clone(),
            &opened,
            label,
        )?;
        let fetcher = if urls.is_empty() {
            None
        } else {
            Some(Fetcher::new()?)
        };
        let live = Arc::new(Self {
            audit_session: built.gate.session().id().to_owned(),
            setup: setup.clone(),
            opened,
            versioned,
            fetcher,
            current: Mutex::new(Current {
                settings: Arc::new(settings),
                version,
                urls,
                rejected: None,
            }),
            gates: Mutex::new(vec![Tracked {
                profile: setup.settings.profile.clone(),
                gate: built.gate.clone(),
                parts,
                planner: Arc::clone(&built.planner),
            }]),
            reloading: tokio::sync::Mutex::new(()),
        });
        Ok((live, built))
    }

    /// The version in force.
    pub fn version(&self) -> String {
        lock(&self.current).version.clone()
    }

    /// The effective settings in force.
    pub fn settings(&self) -> Arc<Settings> {
        Arc::clone(&lock(&self.current).settings)
    }

    /// A gate for the sessions of profile `name`, from the version in force, reloaded with
    /// the others from now on.
    pub fn gate_for_profile(&self, name: &str) -> Result<Gate, SetupError> {
        let mut gates = lock(&self.gates);
        let settings = Settings::clone(&lock(&self.current).settings);
        let version = self
            .versioned
            .then(|| Arc::from(lock(&self.current).version.as_str()));
        let loaded = compile(settings, Some(name), self.setup.settings.allow_root)?;
        let engine = Arc::new(loaded.engine);
        let parts = Parts::build(
            &self.setup,
            &loaded.settings,
            loaded.profile.as_ref(),
            &engine,
            &self.opened,
            None,
        )?;
        let built = crate::build_with_parts(
            &self.setup,
            loaded.settings,
            loaded.mode,
            parts.clone(),
            &self.opened,
            version,
        )?;
        gates.push(Tracked {
            profile: Some(name.to_owned()),
            gate: built.gate.clone(),
            parts,
            planner: Arc::clone(&built.planner),
        });
        Ok(built.gate)
    }

    /// Polls every `every` until the task is dropped.
    pub async fn watch(self: Arc<Self>, every: Duration) {
        let mut ticks = tokio::time::interval(every.max(MIN_WATCH_INTERVAL));
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            self.check().await;
        }
    }

    /// Looks for a new version once, and puts it in force if it is good (see the module
    /// doc). Logged and audited unless unchanged.
    pub async fn check(&self) -> Reload {
        let _one = self.reloading.lock().await;
        let (urls, previous) = {
            let current = lock(&self.current);
            (current.urls.clone(), current.version.clone())
        };
        let outcome = match self.next_version(urls).await {
            Ok(Some((settings, urls))) => self.put_in_force(settings, urls, &previous),
            Ok(None) => Ok(None),
            Err(reason) => Err((reason, Vec::new())),
        };
        let reload = match outcome {
            Ok(None) => return Reload::Unchanged,
            Ok(Some(accepted)) => accepted,
            Err((reason, restart_required)) => {
                let mut current = lock(&self.current);
                if current.rejected.as_deref() == Some(reason.as_str()) {
                    return Reload::Unchanged;
                }
                current.rejected = Some(reason.clone());
                Reload::Rejected {
                    reason,
                    restart_required,
                }
            }
        };
        self.report(&reload, &previous).await;
        reload
    }

    /// Fetches and loads the settings; `None` when they are the version in force.
    async fn next_version(
        &self,
        mut urls: Vec<UrlState>,
    ) -> Result<Option<(Settings, Vec<UrlState>)>, String> {
        if let Some(fetcher) = &self.fetcher {
            for url in &mut urls {
                match fetcher.fetch(&url.url, url.etag.as_deref()).await {
                    Ok(Fetched::NotModified) => {}
                    Ok(Fetched::Body { text, etag }) => {
                        url.text = text;
                        url.etag = etag;
                    }
                    Err(e) => return Err(e.to_string()),
                }
            }
        }
        let setup = self.setup.clone();
        let served = urls.clone();
        let settings = tokio::task::spawn_blocking(move || load_blocking(&setup, &served))
            .await
            .map_err(|e| format!("the settings could not be loaded: {e}"))?
            .map_err(|e| e.to_string())?;
        let mut current = lock(&self.current);
        if digest(&settings) == current.version {
            // The ETags may be new even when the text is not. And the sources serve the
            // version in force again, so a failure after this is a new one, reported anew.
            current.urls = urls;
            current.rejected = None;
            return Ok(None);
        }
        drop(current);
        Ok(Some((settings, urls)))
    }

    /// Builds every gate's stages from `settings` and swaps them in, or none of them.
    fn put_in_force(
        &self,
        settings: Settings,
        urls: Vec<UrlState>,
        previous: &str,
    ) -> Result<Option<Reload>, (String, Vec<&'static str>)> {
        let version = digest(&settings);
        let mut gates = lock(&self.gates);
        let old = Arc::clone(&lock(&self.current).settings);
        let restart: Vec<&'static str> = restart_only::changed(&old, &settings)
            .iter()
            .map(|r| r.key)
            .collect();
        if !restart.is_empty() {
            return Err((
                format!(
                    "version {version} changes {} — that takes a restart; the version in \
                     force is kept",
                    restart.join(", ")
                ),
                restart,
            ));
        }
        let mut next = Vec::with_capacity(gates.len());
        for tracked in gates.iter() {
            let loaded = compile(
                settings.clone(),
                tracked.profile.as_deref(),
                self.setup.settings.allow_root,
            )
            .map_err(|e| (format!("version {version}: {e}"), Vec::new()))?;
            let engine = loaded.engine;
            // Answers the user gave in this process carry over.
            let approved = tracked.parts.engine().approved();
            if !approved.is_empty() {
                engine
                    .remember(&approved, false)
                    .map_err(|e| (format!("version {version}: {e}"), Vec::new()))?;
            }
            let parts = Parts::build(
                &self.setup,
                &settings,
                loaded.profile.as_ref(),
                &Arc::new(engine),
                &self.opened,
                Some(&tracked.parts),
            )
            .map_err(|e| (format!("version {version}: {e}"), Vec::new()))?;
            next.push(parts);
        }
        let label = self.versioned.then(|| Arc::from(version.as_str()));
        for (tracked, parts) in gates.iter_mut().zip(next) {
            tracked
                .gate
                .replace_stages(parts.clone().into_stage_set(label.clone()));
            // Views follow the new rules too (a bare-name deny hides a tool, its removal
            // shows it again): planned anew from the same registry, and `serve`'s clients
            // are told the list changed.
            tracked.planner.set_engine(Arc::clone(parts.engine()));
            let handle = tracked.gate.tools_handle();
            handle.replace(handle.registry());
            tracked.parts = parts;
        }
        let mut current = lock(&self.current);
        current.settings = Arc::new(settings);
        current.version.clone_from(&version);
        current.urls = urls;
        current.rejected = None;
        Ok(Some(Reload::Accepted {
            version,
            previous: previous.to_owned(),
        }))
    }

    /// The log line and the audit record of a reload.
    async fn report(&self, reload: &Reload, previous: &str) {
        let sources: Vec<Value> = {
            let current = lock(&self.current);
            current
                .settings
                .sources
                .iter()
                .map(|s| {
                    let etag = current
                        .urls
                        .iter()
                        .find(|u| u.url == s.label)
                        .and_then(|u| u.etag.clone());
                    json!({"source": s.label, "kind": s.kind.as_str(), "etag": etag})
                })
                .collect()
        };
        let (input, ok) = match reload {
            Reload::Unchanged => return,
            Reload::Accepted { version, previous } => {
                tracing::info!(%version, %previous, "settings reloaded: a new policy version is in force");
                (
                    json!({"status": "accepted", "version": version, "previous": previous,
                           "sources": sources}),
                    true,
                )
            }
            Reload::Rejected {
                reason,
                restart_required,
            } => {
                tracing::warn!(in_force = %previous, %reason, "settings reload rejected; the policy in force is kept");
                (
                    json!({"status": "rejected", "in_force": previous, "error": reason,
                           "restart_required": restart_required, "sources": sources}),
                    false,
                )
            }
        };
        let Some(audit) = &self.opened.audit else {
            return;
        };
        let record = CallRecord {
            kind: RecordKind::Reload,
            ts: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            session_id: self.audit_session.clone(),
            call_id: format!("reload-{}", uuid::Uuid::new_v4()),
            client: None,
            parent_call_id: None,
            mode_change: None,
            tool: String::new(),
            input,
            stages: Vec::new(),
            hooks: Vec::new(),
            verdict: None,
            status: if ok {
                CallStatus::Ok
            } else {
                CallStatus::Error
            },
            code: (!ok).then_some(ErrorCode::InvalidRequest),
            duration_us: 0,
            input_bytes: 0,
            output_bytes: 0,
        };
        if let Err(e) = audit.record(&record).await {
            tracing::error!(error = %e, "the reload could not be recorded in the audit log");
        }
    }
}

/// The `--settings` values that are URLs.
fn settings_urls(setup: &Setup) -> Vec<String> {
    setup
        .settings
        .files
        .iter()
        .filter(|s| is_settings_url(s))
        .cloned()
        .collect()
}

/// Reads every settings source, the URLs' texts given.
fn load_blocking(setup: &Setup, urls: &[UrlState]) -> Result<Settings, SetupError> {
    let mut opts = setup.load_options();
    opts.cli.served = urls
        .iter()
        .map(|u| Served {
            url: u.url.clone(),
            text: u.text.clone(),
        })
        .collect();
    Ok(settings::load(&opts)?)
}

/// A version's name: the first 16 hex digits of the sha256 of the effective settings.
fn digest(settings: &Settings) -> String {
    let bytes = serde_json::to_vec(settings).unwrap_or_default();
    let hash = hex::encode(Sha256::digest(&bytes));
    hash.get(..16).unwrap_or(&hash).to_owned()
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
