//! toolgate-shell: placeholder; filled in by its issue.
