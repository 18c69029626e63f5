//! Fuzz the prompt-guided tool-call parser and the draft guard: any model output must parse
//! without panicking, and no call marker may survive into the text the guard releases.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard::agent::{DraftGuard, parse_tool_calls};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let parsed = parse_tool_calls(text, &["shell", "file_read"]);
    for call in &parsed.calls {
        assert!(!call.id.is_empty());
    }
    // Stream it in uneven chunks through the guard.
    let mut guard = DraftGuard::new(&["shell", "file_read"]);
    let mut shown = String::new();
    let mut rest = text;
    let mut step = 1;
    while !rest.is_empty() {
        let mut cut = step.min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        shown.push_str(&guard.push(&rest[..cut]));
        rest = &rest[cut..];
        step = step % 7 + 1;
    }
    shown.push_str(&guard.finish());
    assert!(!shown.contains("<tool_call"), "marker leaked: {shown:?}");
});
