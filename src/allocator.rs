//! glibc's allocator set up for a long-running gateway: its per-thread caches off.
//!
//! glibc keeps up to seven freed chunks of each small size (up to 1 KiB) per thread in a
//! cache of that thread's own (tcache). A cached chunk is free, but to its arena it is in use,
//! so `malloc_trim` (`conversation/trim.rs`) cannot return its page. After a burst, the
//! caches of the runtime's workers and of SQLite's connection threads held chunks on pages
//! nothing else used: read with `loadgen/heap-walk.py` after 10,000 conversations retired,
//! 729 cached chunks on sparsely used pages, and 584 pages (2.3 MB) kept by them alone. With
//! the caches off, RSS after retirement was 4 MB lower and at the end of the soak 5 MB lower,
//! at no measurable cost in turns or ingest per second (BENCHMARKS.md, "Round two, eighth
//! pass").
//!
//! glibc reads its tunables from `GLIBC_TUNABLES` only when a program starts, so `run`
//! executes itself again, once, with `glibc.malloc.tcache_count=0` added, before anything
//! else has started. The re-executed process puts the operator's `GLIBC_TUNABLES` back in
//! its environment (tools and MCP servers start with a cleared one anyway). An operator who
//! sets `glibc.malloc.tcache_count` themselves keeps their value, and no re-execution happens.

use std::ffi::{OsStr, OsString};

/// Added to `GLIBC_TUNABLES` by the re-execution.
const NO_TCACHE: &str = "glibc.malloc.tcache_count=0";
/// The tunable's name: present in the operator's value, theirs is kept.
const TCACHE_COUNT: &str = "glibc.malloc.tcache_count=";
/// Set by the re-execution: the operator's `GLIBC_TUNABLES` (empty when it was unset).
const OPERATORS: &str = "SWITCHBOARD_OPERATOR_GLIBC_TUNABLES";

/// What [`tune`] does, decided from the environment alone.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    /// Execute again with `GLIBC_TUNABLES` set to this.
    Reexec(OsString),
    /// Already re-executed: restore the operator's value (`None`: it was unset).
    Restore(Option<OsString>),
    /// The operator chose the cache size, or the value cannot be extended: run as started.
    Keep,
}

fn step(tunables: Option<&OsStr>, operators: Option<&OsStr>) -> Step {
    if let Some(value) = operators {
        return Step::Restore((!value.is_empty()).then(|| value.to_owned()));
    }
    let Some(current) = tunables.map(OsStr::to_str) else {
        return Step::Reexec(NO_TCACHE.into());
    };
    match current {
        Some(current) if current.contains(TCACHE_COUNT) => Step::Keep,
        Some("") => Step::Reexec(NO_TCACHE.into()),
        Some(current) => Step::Reexec(format!("{current}:{NO_TCACHE}").into()),
        None => Step::Keep,
    }
}

/// Turn glibc's per-thread caches off for this process (see the module's text): executes the
/// program again with the same arguments and returns only in the re-executed process, or if
/// the re-execution is not possible (then nothing changes). Call it first thing in `main`,
/// while the process has one thread; elsewhere than glibc on Linux it does nothing.
pub fn tune() {
    if !cfg!(all(target_os = "linux", target_env = "gnu")) {
        return;
    }
    let tunables = std::env::var_os("GLIBC_TUNABLES");
    let operators = std::env::var_os(OPERATORS);
    match step(tunables.as_deref(), operators.as_deref()) {
        Step::Keep => {}
        Step::Restore(value) => {
            // SAFETY: called from `main` before any thread starts (see above), so nothing
            // reads the environment concurrently.
            unsafe {
                std::env::remove_var(OPERATORS);
                match value {
                    Some(value) => std::env::set_var("GLIBC_TUNABLES", value),
                    None => std::env::remove_var("GLIBC_TUNABLES"),
                }
            }
        }
        Step::Reexec(value) => reexec(&value, tunables.unwrap_or_default()),
    }
}

#[cfg(unix)]
fn reexec(tunables: &OsStr, operators: OsString) {
    use std::os::unix::process::CommandExt;
    // `current_exe`, not `/proc/self/exe`: under valgrind (link/order-symbols) only the
    // former names the gateway rather than the tool.
    let Ok(program) = std::env::current_exe() else {
        return;
    };
    let mut args = std::env::args_os();
    let Some(arg0) = args.next() else {
        return;
    };
    // `exec` returns only on failure: the gateway then runs with glibc's defaults.
    let _failed = std::process::Command::new(program)
        .arg0(arg0)
        .args(args)
        .env("GLIBC_TUNABLES", tunables)
        .env(OPERATORS, operators)
        .exec();
}

#[cfg(not(unix))]
fn reexec(_: &OsStr, _: OsString) {}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(s: &str) -> Option<&OsStr> {
        Some(OsStr::new(s))
    }

    #[test]
    fn the_cache_goes_off_alongside_the_operators_tunables_and_theirs_come_back_after() {
        assert_eq!(step(None, None), Step::Reexec(NO_TCACHE.into()));
        assert_eq!(step(os(""), None), Step::Reexec(NO_TCACHE.into()));
        assert_eq!(
            step(os("glibc.malloc.arena_max=2"), None),
            Step::Reexec("glibc.malloc.arena_max=2:glibc.malloc.tcache_count=0".into())
        );
        // The re-executed process: the operator's value back, or none.
        assert_eq!(
            step(os("x:glibc.malloc.tcache_count=0"), os("x")),
            Step::Restore(Some("x".into()))
        );
        assert_eq!(step(os(NO_TCACHE), os("")), Step::Restore(None));
    }

    #[test]
    fn an_operators_own_cache_size_is_kept_without_re_executing() {
        assert_eq!(step(os("glibc.malloc.tcache_count=3"), None), Step::Keep);
        assert_eq!(
            step(
                os("glibc.malloc.arena_max=2:glibc.malloc.tcache_count=7"),
                None
            ),
            Step::Keep
        );
    }
}
