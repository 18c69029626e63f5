//! Fuzz the credential scrubber: any text must scrub without panicking, and scrubbing is
//! idempotent (a second pass changes nothing).
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use switchboard::scrub::Scrubber;

static SCRUBBER: LazyLock<Scrubber> = LazyLock::new(|| Scrubber::new(["fuzz-configured-secret"]));

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let once = SCRUBBER.scrub(text).into_owned();
    let twice = SCRUBBER.scrub(&once).into_owned();
    assert_eq!(once, twice);
});
