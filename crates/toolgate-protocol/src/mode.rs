use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A permission mode, as Claude Code names them (hook stdin reports these names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum PermissionMode {
    /// Reads run; other tools ask on first use. Alias `manual`.
    #[default]
    #[serde(rename = "default", alias = "manual")]
    Default,
    /// File edits inside the roots are approved.
    #[serde(rename = "acceptEdits")]
    AcceptEdits,
    /// Read and explore only; writing tools are hidden.
    #[serde(rename = "plan")]
    Plan,
    /// A classifier reviews actions.
    #[serde(rename = "auto")]
    Auto,
    /// Anything that would ask is denied.
    #[serde(rename = "dontAsk")]
    DontAsk,
    /// Prompts are skipped; deny and ask rules and the risk floor still apply.
    #[serde(rename = "bypassPermissions")]
    BypassPermissions,
}

impl PermissionMode {
    /// Every mode.
    pub const ALL: [PermissionMode; 6] = [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
        PermissionMode::Auto,
        PermissionMode::DontAsk,
        PermissionMode::BypassPermissions,
    ];

    /// The canonical name.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::Plan => "plan",
            PermissionMode::Auto => "auto",
            PermissionMode::DontAsk => "dontAsk",
            PermissionMode::BypassPermissions => "bypassPermissions",
        }
    }
}

impl PermissionMode {
    /// How much the mode lets through on its own, least first: `plan` (reads only; edits
    /// refused, other commands ask) < `dontAsk` (what would ask is refused) < `default` <
    /// `acceptEdits` (also edits inside the roots) < `auto` (also what a classifier
    /// approves) < `bypassPermissions`. Each mode approves on its own no more than the next
    /// one does, which is what lets [`Self::at_most`] pick a mode that never widens.
    pub fn permissiveness(self) -> u8 {
        match self {
            PermissionMode::Plan => 0,
            PermissionMode::DontAsk => 1,
            PermissionMode::Default => 2,
            PermissionMode::AcceptEdits => 3,
            PermissionMode::Auto => 4,
            PermissionMode::BypassPermissions => 5,
        }
    }

    /// This mode, unless it is more permissive than `ceiling`: then `ceiling`. A sub-agent
    /// asking for `acceptEdits` under a parent in `plan` gets `plan`.
    pub fn at_most(self, ceiling: PermissionMode) -> PermissionMode {
        if self.permissiveness() <= ceiling.permissiveness() {
            self
        } else {
            ceiling
        }
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A mode name that is not one of the known modes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown permission mode `{0}`: use default, acceptEdits, plan, auto, dontAsk or bypassPermissions (claw-code names read-only, workspace-write, danger-full-access are accepted too)"
)]
pub struct UnknownMode(pub String);

impl FromStr for PermissionMode {
    type Err = UnknownMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "default" | "manual" => PermissionMode::Default,
            "acceptEdits" | "workspace-write" => PermissionMode::AcceptEdits,
            "plan" | "read-only" => PermissionMode::Plan,
            "auto" => PermissionMode::Auto,
            "dontAsk" => PermissionMode::DontAsk,
            "bypassPermissions" | "danger-full-access" => PermissionMode::BypassPermissions,
            other => return Err(UnknownMode(other.to_owned())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_never_widens() {
        for a in PermissionMode::ALL {
            for ceiling in PermissionMode::ALL {
                let got = a.at_most(ceiling);
                assert!(
                    got.permissiveness() <= ceiling.permissiveness(),
                    "{a} under {ceiling}"
                );
                assert!(got == a || got == ceiling);
            }
        }
        assert_eq!(
            PermissionMode::AcceptEdits.at_most(PermissionMode::Plan),
            PermissionMode::Plan
        );
        assert_eq!(
            PermissionMode::Plan.at_most(PermissionMode::BypassPermissions),
            PermissionMode::Plan
        );
    }
}
