use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a tool returns on success.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolOutput {
    /// Content blocks for the model, in order.
    pub content: Vec<Content>,
    /// Machine-readable result matching the tool's `output_schema`, where it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// Protocol metadata the tool's own source attached (an upstream MCP result's `_meta`),
    /// passed on to MCP clients beside toolgate's own `toolgate/…` keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<serde_json::Map<String, Value>>,
}

impl ToolOutput {
    /// An output made of one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::Text { text: text.into() }],
            structured: None,
            meta: None,
        }
    }

    /// Adds a structured result.
    pub fn with_structured(mut self, value: Value) -> Self {
        self.structured = Some(value);
        self
    }

    /// All text blocks joined with newlines (images are skipped).
    pub fn joined_text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let Content::Text { text } = block {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(text);
            }
        }
        out
    }

    /// Bytes of content: text length plus base64 image length.
    pub fn size_bytes(&self) -> u64 {
        self.content
            .iter()
            .map(|c| match c {
                Content::Text { text } => text.len() as u64,
                Content::Image { data, .. } => data.len() as u64,
            })
            .sum()
    }
}

/// One content block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// MIME type (`image/png`, …).
        media_type: String,
        /// Base64 data.
        data: String,
    },
}
