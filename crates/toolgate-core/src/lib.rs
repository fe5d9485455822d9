//! toolgate-core: placeholder; filled in by its issue.
