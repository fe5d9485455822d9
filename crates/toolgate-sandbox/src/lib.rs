//! toolgate-sandbox: placeholder; filled in by its issue.
