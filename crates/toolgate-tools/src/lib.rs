//! toolgate-tools: placeholder; filled in by its issue.
