//! Budgets that keep [`crate::analyze`] bounded in time and memory.
//!
//! Every limit that is hit turns the analysis *opaque* (never safe) with a reason naming the
//! limit, so a budget can only make toolgate ask more, never allow more.

/// Largest command, in bytes, the analyzer parses.
///
/// Claude Code prompts for any command over 10,000 characters; a here-doc that writes a source
/// file can legitimately be tens of kilobytes, so we parse up to 100 KB and call anything larger
/// opaque. Parsing is roughly linear, so this also bounds time (well under 50 ms).
pub const MAX_BYTES: usize = 100_000;

/// Deepest lexical nesting (`(`, `{`, `$(`, `${`, backticks, `if`/`case`/loops) accepted before
/// handing text to brush-parser.
///
/// brush-parser recurses once per level and overflows a 2 MiB stack (Rust's default for spawned
/// threads, which is where a server runs us) somewhere between 100 and 200 levels in a debug
/// build. Real commands rarely go past 6; 32 leaves a wide margin on both sides.
pub const MAX_NESTING: usize = 32;

/// Deepest semantic recursion: `bash -c` inside `eval` inside `$(…)` inside a function call …
///
/// Each level re-parses a string; 16 levels is far beyond anything a person writes and keeps the
/// worst case (16 nested parses of ≤ [`MAX_NESTING`] each) inside the stack budget.
pub const MAX_DEPTH: usize = 16;

/// Most leaf commands recorded for one analysis.
///
/// Bounds memory and the work of the classifier; a 100 KB script with more than 2,000
/// commands is not something a person reviews command by command anyway.
pub const MAX_COMMANDS: usize = 2_000;

/// Most words one brace expansion may produce (`{1..100000}` is cut here).
///
/// Brace expansion is exponential in the number of brace groups (`{a,b}{c,d}…`); 256 words is
/// more than any legitimate command line uses and keeps one word from exploding.
pub const MAX_BRACE_WORDS: usize = 256;

/// Most bytes a tracked variable value, a decoded payload or an evaluated `echo`/`printf`
/// output may hold.
///
/// Values are re-parsed as code when fed to a shell; bounding them bounds that work.
pub const MAX_VALUE_BYTES: usize = 64 * 1024;

/// Most times a shell function body is re-analysed at its call sites.
///
/// `f(){ rm -rf "$1"; }; f /` needs one; recursive or many calls would otherwise multiply work.
pub const MAX_FUNCTION_CALLS: usize = 64;

/// Most times loop bodies are walked once per value (`for f in a b c`), over the whole
/// analysis, and most times trap actions are walked again when a variable they read changes.
///
/// Each walk re-analyses a body; nested loops multiply (eight values at each of ten levels
/// would be a billion walks), so past this budget a loop's body is walked once with its
/// variable unknown, and a trap action is not walked again.
pub const MAX_REWALKS: usize = 256;

/// Budgets for one analysis. The defaults are the named constants of this module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// See [`MAX_BYTES`].
    pub max_bytes: usize,
    /// See [`MAX_NESTING`].
    pub max_nesting: usize,
    /// See [`MAX_DEPTH`].
    pub max_depth: usize,
    /// See [`MAX_COMMANDS`].
    pub max_commands: usize,
    /// See [`MAX_BRACE_WORDS`].
    pub max_brace_words: usize,
    /// See [`MAX_VALUE_BYTES`].
    pub max_value_bytes: usize,
    /// See [`MAX_FUNCTION_CALLS`].
    pub max_function_calls: usize,
    /// See [`MAX_REWALKS`].
    pub max_rewalks: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_bytes: MAX_BYTES,
            max_nesting: MAX_NESTING,
            max_depth: MAX_DEPTH,
            max_commands: MAX_COMMANDS,
            max_brace_words: MAX_BRACE_WORDS,
            max_value_bytes: MAX_VALUE_BYTES,
            max_function_calls: MAX_FUNCTION_CALLS,
            max_rewalks: MAX_REWALKS,
        }
    }
}
