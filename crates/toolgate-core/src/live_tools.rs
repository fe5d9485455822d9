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

/// Re-plans a session's view options for a new registry: the parts that depend on which
/// tools exist (tools a bare-name deny rule removes, tools to defer). Given by whoever built
/// the first options (toolgate-setup), so a tool that appears later is treated like one
/// that was there from the start.
pub trait ViewPlanner: Send + Sync {
    /// The options for a view over `registry`, from the options the session had.
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
