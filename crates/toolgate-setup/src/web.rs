//! The web tools from settings: WebFetch always, WebSearch when `webSearch` names a backend,
//! and WebFetch's summaries from `webFetch.model` over the classifier's model client.

use std::sync::Arc;

use async_trait::async_trait;
use toolgate_core::Tool;
use toolgate_policy::classifier::ClassifierKind;
use toolgate_policy::{ClassifierConfig, ModelClient, Settings};
use toolgate_web::{
    SUMMARY_INSTRUCTIONS, SUMMARY_MAX_TOKENS, Summarizer, SummaryError, WEB_SEARCH_HOWTO, WebError,
    WebFetchConfig, WebSearchConfig, web_tools,
};

/// Answers WebFetch prompts with the model `webFetch.model` names.
struct ModelSummarizer(ModelClient);

#[async_trait]
impl Summarizer for ModelSummarizer {
    fn name(&self) -> String {
        self.0.name()
    }

    async fn summarize(&self, url: &str, page: &str, prompt: &str) -> Result<String, SummaryError> {
        let user = format!("The page {url}:\n{page}\n\nThe question: {prompt}");
        self.0
            .complete(SUMMARY_INSTRUCTIONS, &user, SUMMARY_MAX_TOKENS)
            .await
            .map_err(|e| SummaryError(e.to_string()))
    }
}

fn summarizer(settings: &Settings) -> Result<Option<Arc<dyn Summarizer>>, WebError> {
    let Some(model) = settings.web_fetch.get("model") else {
        return Ok(None);
    };
    let bad = |why: String| WebError::Settings {
        key: "webFetch.model".into(),
        why,
    };
    let config: ClassifierConfig =
        serde_json::from_value(model.clone()).map_err(|e| bad(e.to_string()))?;
    if config.kind == ClassifierKind::Builtin || config.endpoint.is_none() {
        return Err(bad(
            "needs \"kind\": \"anthropic\" or \"openai\" and an \"endpoint\" (the same shape as toolgate.classifier)".into(),
        ));
    }
    Ok(Some(Arc::new(ModelSummarizer(ModelClient::from_config(
        &config,
    )))))
}

/// WebFetch (and WebSearch, when configured) for a session with these settings.
pub fn tools(settings: &Settings) -> Result<Vec<Arc<dyn Tool>>, WebError> {
    let fetch = WebFetchConfig::from_settings(&settings.web_fetch)?;
    let search = match &settings.web_search {
        Some(s) => WebSearchConfig::from_settings(&s.value)?,
        None => None,
    };
    Ok(web_tools(fetch, search, summarizer(settings)?))
}

/// What `toolgate config` says about the web tools.
pub fn status(settings: &Settings) -> String {
    let search = match settings
        .web_search
        .as_ref()
        .map(|s| WebSearchConfig::from_settings(&s.value))
    {
        Some(Ok(Some(c))) => format!(
            "WebSearch: {} at {}{}",
            c.backend.name(),
            c.url,
            c.api_key_env
                .map(|v| format!(" (key from ${v})"))
                .unwrap_or_default()
        ),
        Some(Err(e)) => format!("WebSearch: misconfigured: {e}"),
        _ => format!("WebSearch: not offered (no backend); to enable it, {WEB_SEARCH_HOWTO}"),
    };
    let fetch = match summarizer(settings) {
        Ok(Some(s)) => format!("WebFetch: prompts answered by {}", s.name()),
        Ok(None) => "WebFetch: page text returned with the prompt (no webFetch.model)".to_owned(),
        Err(e) => format!("WebFetch: misconfigured: {e}"),
    };
    format!("{fetch}\n{search}\n")
}
