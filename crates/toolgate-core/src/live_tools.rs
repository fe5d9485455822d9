//! The tools of a gate while it runs: an upstream MCP server may offer a new tool, change
//! one or go away mid-session (`notifications/tools/list_changed`, a server that comes up
//! late or is restarted), so the registry a gate resolves calls against can be replaced.
//!
//! A replacement is one atomic swap with a new generation number. Each session's view is
//! rebuilt from the new registry the next time it is used (the view's options re-planned by
//! the gate's [`ViewPlanner`], so deny rules and deferral cover the new tools too), and
//! subscribers ([`ToolsHandle::subscribe`], e.g. an MCP server telling its clients
//! `notifications/tools/list_changed`) are woken. A call already resolved keeps the entry it
//! resolved; nothing in flight is disturbed.

use std::sync::{Arc, PoisonError, RwLock, Weak};

use crate::registry::{Registry, ViewOptions};

/// Plans a session's view over a registry: the parts of its options that depend on which
/// tools exist and on the policy (tools a bare-name deny rule removes, tools to defer).
/// Given by whoever compiles the policy (toolgate-setup), and applied to the session's own
/// options for every registry, so a tool that appears later is treated like one that was
/// there from the start. A policy reload that changes what the planner says bumps the
/// generation ([`ToolsHandle::replace`] with the same registry) to have views planned anew.
pub trait ViewPlanner: Send + Sync {
    /// The options for a view over `registry`, from the session's own options.
    fn plan(&self, registry: &Registry, options: &ViewOptions) -> ViewOptions;
}

/// The registry in force and its generation.
pub(crate) struct LiveTools {
    current: RwLock<(u64, Registry)>,
    changed: tokio::sync::watch::Sender<u64>,
    pub(crate) planner: Option<Arc<dyn ViewPlanner>>,
}

impl LiveTools {
    pub(crate) fn new(registry: Registry, planner: Option<Arc<dyn ViewPlanner>>) -> Self {
        Self {
            current: RwLock::new((0, registry)),
            changed: tokio::sync::watch::Sender::new(0),
            planner,
        }
    }

    /// The registry in force and its generation.
    pub(crate) fn current(&self) -> (u64, Registry) {
        let current = self.current.read().unwrap_or_else(PoisonError::into_inner);
        (current.0, current.1.clone())
    }

    /// The generation in force: cheaper than [`LiveTools::current`] for a staleness check.
    pub(crate) fn generation(&self) -> u64 {
        *self.changed.borrow()
    }

    fn replace(&self, registry: Registry) -> u64 {
        let generation = {
            let mut current = self.current.write().unwrap_or_else(PoisonError::into_inner);
            current.0 += 1;
            current.1 = registry;
            current.0
        };
        // After the swap: whoever wakes reads the new registry.
        self.changed.send_replace(generation);
        generation
    }
}

/// A handle on a gate's tools, shared by every session and clone of the gate: replace the
/// registry, or wait for it to be replaced. Get one with
/// [`Gate::tools_handle`](crate::Gate::tools_handle).
#[derive(Clone)]
pub struct ToolsHandle(pub(crate) Arc<LiveTools>);

impl std::fmt::Debug for ToolsHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolsHandle")
            .field("generation", &self.0.generation())
            .finish()
    }
}

impl ToolsHandle {
    /// The registry in force.
    pub fn registry(&self) -> Registry {
        self.0.current().1
    }

    /// How many times the registry was replaced.
    pub fn generation(&self) -> u64 {
        self.0.generation()
    }

    /// Puts `registry` in force for every session of the gate from their next use, and
    /// wakes the subscribers. Returns the new generation.
    pub fn replace(&self, registry: Registry) -> u64 {
        self.0.replace(registry)
    }

    /// A receiver that sees each new generation.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.0.changed.subscribe()
    }

    /// A handle that does not keep the gate's tools alive.
    pub fn downgrade(&self) -> WeakToolsHandle {
        WeakToolsHandle(Arc::downgrade(&self.0))
    }

    /// Whether `self` and `other` are handles on the same gate's tools.
    pub fn same(&self, other: &ToolsHandle) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// A [`ToolsHandle`] that does not keep the gate's tools alive (for whoever updates them
/// from outside, like toolgate-setup's upstream tracker).
#[derive(Clone, Debug)]
pub struct WeakToolsHandle(Weak<LiveTools>);

impl WeakToolsHandle {
    /// The handle, while the gate's tools exist.
    pub fn upgrade(&self) -> Option<ToolsHandle> {
        self.0.upgrade().map(ToolsHandle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::AllowAll;
    use crate::{Gate, SessionOptions, ToolContext, ToolError, TypedTool};
    use serde_json::{Value, json};
    use toolgate_protocol::{
        Concurrency, ErrorCode, Subject, TimeoutSpec, ToolAnnotations, ToolCall, ToolOutput,
        ToolSpec,
    };

    struct Named(ToolSpec);

    #[async_trait::async_trait]
    impl TypedTool for Named {
        type Input = Value;
        fn spec(&self) -> &ToolSpec {
            &self.0
        }
        async fn run(&self, _input: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::text(self.0.name.clone()))
        }
    }

    fn tool(name: &str) -> Named {
        Named(ToolSpec {
            name: name.into(),
            version: "1".into(),
            description: format!("{name} tool"),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations: ToolAnnotations::default(),
            concurrency: Concurrency::Shared,
            timeout: TimeoutSpec {
                default_ms: 1000,
                max_ms: 1000,
            },
            subject: Subject::None,
        })
    }

    fn registry(names: &[&str]) -> Registry {
        names
            .iter()
            .fold(Registry::builder(), |b, n| b.register(tool(n)))
            .build()
            .unwrap()
    }

    /// Hides every tool whose name contains "secret", as a deny rule would.
    struct HideSecrets;

    impl ViewPlanner for HideSecrets {
        fn plan(&self, registry: &Registry, options: &ViewOptions) -> ViewOptions {
            let mut options = options.clone();
            for e in registry.entries() {
                if e.spec().name.contains("secret") && !options.deny.contains(&e.spec().name) {
                    options.deny.push(e.spec().name.clone());
                }
            }
            options
        }
    }

    #[tokio::test]
    async fn a_replaced_registry_reaches_every_session_through_the_planner() {
        let dir = tempfile::tempdir().unwrap();
        let gate = Gate::builder()
            .workspace(dir.path())
            .registry(registry(&["old"]))
            .view_planner(Arc::new(HideSecrets))
            .policy(Arc::new(AllowAll))
            .build()
            .unwrap();
        let other = gate.new_session(SessionOptions::default(), None).unwrap();
        let handle = gate.tools_handle();
        let mut changes = handle.subscribe();
        // A call that resolved before the swap would keep its tool; one after sees the new.
        assert_eq!(handle.replace(registry(&["new", "new_secret"])), 1);
        assert!(changes.has_changed().unwrap());
        assert_eq!(changes.borrow_and_update().to_owned(), 1);
        for session in [&gate, &other] {
            let names: Vec<String> = session
                .view()
                .entries()
                .iter()
                .map(|e| e.spec().name.clone())
                .collect();
            assert_eq!(names, ["new"]);
            assert!(session.view().hidden().contains_key("new_secret"));
            let gone = session.execute(ToolCall::new("1", "old", json!({}))).await;
            assert_eq!(gone.error().map(|e| e.code), Some(ErrorCode::UnknownTool));
            let ran = session.execute(ToolCall::new("2", "new", json!({}))).await;
            assert_eq!(ran.output().unwrap().joined_text(), "new");
            let hidden = session
                .execute(ToolCall::new("3", "new_secret", json!({})))
                .await;
            assert_eq!(hidden.error().map(|e| e.code), Some(ErrorCode::Denied));
        }
    }
}
