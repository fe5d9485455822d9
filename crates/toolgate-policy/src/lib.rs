//! toolgate-policy: placeholder; filled in by its issue.
