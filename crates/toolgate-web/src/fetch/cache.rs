//! The per-session page cache: 15 minutes by default, bounded in bytes, oldest out first.
//!
//! Kept in the session's extensions, so sessions never see each other's pages (a page
//! fetched for one client is not served to another). Keyed by the URL as requested after
//! the http upgrade; what is kept is the page text, before any summary.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// A page as the cache keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CachedPage {
    /// The URL that answered.
    pub final_url: String,
    /// HTTP status.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: Option<String>,
    /// What the body was read as (`html`, …).
    pub kind: &'static str,
    /// Bytes on the wire.
    pub wire_bytes: usize,
    /// The page text (not yet truncated).
    pub text: String,
}

impl CachedPage {
    fn size(&self) -> usize {
        self.text.len() + self.final_url.len() + 64
    }
}

#[derive(Debug, Default)]
struct Inner {
    pages: HashMap<String, (Instant, Arc<CachedPage>)>,
    order: VecDeque<String>,
    bytes: usize,
}

/// One session's cache.
#[derive(Debug, Default)]
pub(crate) struct PageCache(Mutex<Inner>);

impl PageCache {
    /// The page for `url` if fetched less than `ttl` ago.
    pub(crate) fn get(&self, url: &str, ttl: Duration) -> Option<Arc<CachedPage>> {
        let inner = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        inner
            .pages
            .get(url)
            .filter(|(at, _)| at.elapsed() < ttl)
            .map(|(_, p)| Arc::clone(p))
    }

    /// Keeps `page` for `url`, dropping the oldest pages beyond `max_bytes` (a page larger
    /// than the whole cache is not kept).
    pub(crate) fn put(&self, url: &str, page: Arc<CachedPage>, max_bytes: usize) {
        let size = page.size();
        if size > max_bytes {
            return;
        }
        let mut inner = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, old)) = inner.pages.remove(url) {
            inner.bytes -= old.size();
            inner.order.retain(|u| u != url);
        }
        while inner.bytes + size > max_bytes {
            let Some(oldest) = inner.order.pop_front() else {
                break;
            };
            if let Some((_, old)) = inner.pages.remove(&oldest) {
                inner.bytes -= old.size();
            }
        }
        inner.bytes += size;
        inner.order.push_back(url.to_owned());
        inner.pages.insert(url.to_owned(), (Instant::now(), page));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(text: &str) -> Arc<CachedPage> {
        Arc::new(CachedPage {
            final_url: "u".into(),
            status: 200,
            content_type: None,
            kind: "text",
            wire_bytes: 0,
            text: text.into(),
        })
    }

    #[test]
    fn bounded_and_expiring() {
        let c = PageCache::default();
        let ttl = Duration::from_secs(60);
        let one = page(&"a".repeat(100)).size();
        c.put("a", page(&"a".repeat(100)), one * 2);
        c.put("b", page(&"b".repeat(100)), one * 2);
        c.put("c", page(&"c".repeat(100)), one * 2);
        assert!(
            c.get("a", ttl).is_none(),
            "the oldest page stays beyond the bound"
        );
        assert!(c.get("b", ttl).is_some() && c.get("c", ttl).is_some());
        assert!(
            c.get("b", Duration::ZERO).is_none(),
            "an expired page is served"
        );
        c.put("huge", page(&"h".repeat(1000)), one * 2);
        assert!(c.get("huge", ttl).is_none());
        let inner = c.0.lock().unwrap_or_else(PoisonError::into_inner);
        assert!(inner.bytes <= one * 2);
    }
}
