//! toolgate-audit: placeholder; filled in by its issue.
