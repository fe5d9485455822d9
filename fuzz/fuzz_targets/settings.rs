//! Fuzz target: settings text (what `--settings '{…}'` and every settings file hold) through
//! the same set-up every front door uses: load and merge, select the profile, compile the
//! permission engine, hooks, constraints, sandbox and web settings, build the gate, and
//! render what `toolgate config` prints. Any input is either a gate or a clear error; a
//! panic, a hang or an unbounded allocation is a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolgate_fuzz::{fixture, setup};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // `--settings` takes a file name unless the text is inline JSON; only the JSON form is
    // fuzzed (a name would make the fuzzer read files of the machine).
    if !text.trim_start().starts_with('{') {
        return;
    }
    let _ = fixture();
    let mut s = setup();
    s.settings.files = vec![text.to_owned()];
    let loaded = match s.load() {
        Ok(loaded) => loaded,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    // What `toolgate config` shows.
    let _ = loaded.settings.to_json();
    let _ = loaded.settings.render(loaded.engine.warnings());
    let _ = toolgate_setup::hook_config(&loaded.settings);
    // Each profile compiled, and the gate built as the first one.
    let profiles: Vec<String> = loaded.settings.profiles.keys().cloned().collect();
    for name in &profiles {
        let _ = loaded.settings.profile(name);
    }
    let _ = s.build();
    if let Some(first) = profiles.first() {
        s.settings.profile = Some(first.clone());
        let _ = s.build();
    }
});
