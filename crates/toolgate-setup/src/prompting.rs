//! Who answers an "ask": nobody, the terminal, a JSON-lines UI, or a front door's own channel
//! (MCP elicitation), with auto mode's classifier reviewing first.

use std::sync::Arc;

use toolgate_policy::settings::Settings;
use toolgate_policy::{
    AutoReviewer, DenyAllPrompter, Engine, JsonLinesSource, LazyJsonLinesPrompter, PolicyPrompter,
    TerminalPrompter, classifier_from,
};

/// Wraps the fallback prompter (the JSON-lines UI, or nobody) in a front door's own way of
/// asking; given the engine, for "allow always".
pub type WrapPrompter =
    Arc<dyn Fn(Arc<Engine>, Arc<dyn PolicyPrompter>) -> Arc<dyn PolicyPrompter> + Send + Sync>;

/// Who answers an ask.
#[derive(Clone, Default)]
pub enum Prompting {
    /// Nobody: asks are denied with a reason (exec, pipes, CI).
    #[default]
    Deny,
    /// The user at the controlling terminal.
    Terminal,
    /// A front door's own channel (`toolgate serve`: MCP elicitation when the client
    /// supports it), falling back to the JSON-lines UI when one is configured, else nobody.
    FrontDoor(WrapPrompter),
}

impl std::fmt::Debug for Prompting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Prompting::Deny => "Deny",
            Prompting::Terminal => "Terminal",
            Prompting::FrontDoor(_) => "FrontDoor",
        })
    }
}

/// The prompter for a session: a front door's channel when it has one, else a JSON-lines UI
/// when one is named, else the terminal when asked for and available, else deny-all; in
/// auto mode the classifier reviews first.
pub(crate) fn prompter(
    engine: &Arc<Engine>,
    prompting: &Prompting,
    settings: &Settings,
    ui: Option<JsonLinesSource>,
) -> Arc<dyn PolicyPrompter> {
    let classifier = classifier_from(settings.classifier.as_ref().map(|c| &c.value));
    let ui: Option<Arc<dyn PolicyPrompter>> = ui.map(|source| {
        Arc::new(LazyJsonLinesPrompter::new(Arc::clone(engine), source)) as Arc<dyn PolicyPrompter>
    });
    if let Prompting::FrontDoor(wrap) = prompting {
        let fallback = ui.unwrap_or_else(|| Arc::new(DenyAllPrompter));
        return Arc::new(AutoReviewer::new(
            classifier,
            wrap(Arc::clone(engine), fallback),
        ));
    }
    if let Some(ui) = ui {
        return Arc::new(AutoReviewer::new(classifier, ui));
    }
    if matches!(prompting, Prompting::Terminal) {
        match TerminalPrompter::open(Arc::clone(engine)) {
            Ok(terminal) => return Arc::new(AutoReviewer::new(classifier, terminal)),
            Err(e) => tracing::warn!(error = %e, "no terminal to ask on; asks are denied"),
        }
    }
    Arc::new(AutoReviewer::new(classifier, DenyAllPrompter))
}
