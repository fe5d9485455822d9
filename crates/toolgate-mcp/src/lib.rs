//! toolgate-mcp: placeholder; filled in by its issue.
