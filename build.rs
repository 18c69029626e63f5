//! Link options for the gateway binary (issue #19, BENCHMARKS.md "Round two").
//!
//! **Packed relative relocations (DT_RELR).** A position-independent Rust binary carries one
//! relative relocation per pointer in its read-only data (vtables, string tables): 51,083 of
//! them in 1.2 MB of 24-byte entries, which the loader reads whole at every start. Packed,
//! they take a few kilobytes. glibc applies DT_RELR from 2.36 on, and the linker marks such a
//! binary with the version `GLIBC_ABI_DT_RELR`, so an older glibc refuses to load it by name
//! instead of running it unrelocated. So this is done only for a native x86-64 build on glibc
//! 2.36 or later (where the binary will run against that glibc or, in the Docker image, the
//! same Debian release); a cross build, another C library or an older glibc links as before.
//!
//! **The code that runs laid out together.** The kernel maps a binary's code in 64 KiB around
//! every page that is first executed, so a gateway that has only started and idles had most
//! of its `.text` resident although it ran a small part of it. `link/switchboard.order` names
//! the functions a profiled run executed (start-up, idling, turns; `link/order-symbols`
//! regenerates it), and the linker places them first, together. Names the file holds that a
//! build does not define (another toolchain, changed code) are skipped: such a build is laid
//! out as before, only less compactly. This needs LLVM's linker, which Rust uses by default
//! for this target from 1.90 on; a build that picks another linker links as before.
//!
//! **Stripping.** The release profile keeps symbols and this script asks the linker to drop
//! them on Linux, which is what `strip = true` would do; `SWITCHBOARD_KEEP_SYMBOLS=1` keeps
//! them for a profile or `cargo bloat` without changing the crates' symbol names (a profile
//! setting would: it is part of every crate's hash, and so of the names the order file holds).

use std::path::Path;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=link/switchboard.order");
    println!("cargo::rerun-if-env-changed=SWITCHBOARD_KEEP_SYMBOLS");
    let env = |name: &str| std::env::var(name).unwrap_or_default();
    let release = env("PROFILE") == "release";
    // Every Linux linker (GNU ld, gold, LLD) takes `--strip-all`; elsewhere the release
    // binary keeps its symbols.
    if release
        && env("CARGO_CFG_TARGET_OS") == "linux"
        && env("SWITCHBOARD_KEEP_SYMBOLS").is_empty()
    {
        println!("cargo::rustc-link-arg-bins=-Wl,--strip-all");
    }
    let linux_gnu_x86_64 = env("TARGET") == env("HOST")
        && env("CARGO_CFG_TARGET_ARCH") == "x86_64"
        && env("CARGO_CFG_TARGET_OS") == "linux"
        && env("CARGO_CFG_TARGET_ENV") == "gnu";
    if !linux_gnu_x86_64 {
        return;
    }
    if host_glibc().is_some_and(|version| version >= (2, 36)) {
        println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    let order = Path::new(&env("CARGO_MANIFEST_DIR")).join("link/switchboard.order");
    if release && order.exists() && links_with_lld(&env) {
        println!(
            "cargo::rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo::rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}

/// Whether rustc links this build with its own LLD, as it does by default for
/// x86_64-unknown-linux-gnu from Rust 1.90 on, unless a linker is configured.
fn links_with_lld(env: &dyn Fn(&str) -> String) -> bool {
    let flags = env("CARGO_ENCODED_RUSTFLAGS");
    let chosen_linker = flags
        .split('\x1f')
        .any(|flag| flag.contains("linker") || flag.contains("link-self-contained"))
        || !env("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_empty()
        || !env("RUSTC_LINKER").is_empty();
    !chosen_linker && rustc_minor(&env("RUSTC")).is_some_and(|minor| minor >= 90)
}

/// The minor version of the compiler building this (`rustc 1.95.0 (…)` gives 95).
fn rustc_minor(rustc: &str) -> Option<u32> {
    let output = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()?;
    let version = String::from_utf8(output.stdout).ok()?;
    let release = version.split_whitespace().nth(1)?;
    let mut parts = release.split('.');
    (parts.next()? == "1").then_some(())?;
    parts.next()?.parse().ok()
}

/// The glibc this build script runs on: for a native build, the one the binary links
/// against.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn host_glibc() -> Option<(u32, u32)> {
    use std::ffi::{CStr, c_char};
    unsafe extern "C" {
        fn gnu_get_libc_version() -> *const c_char;
    }
    // SAFETY: glibc returns a pointer to a static NUL-terminated string such as "2.36".
    let version = unsafe { CStr::from_ptr(gnu_get_libc_version()) }
        .to_str()
        .ok()?;
    let mut parts = version.split('.').map(|part| part.parse::<u32>().ok());
    Some((parts.next()??, parts.next()??))
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn host_glibc() -> Option<(u32, u32)> {
    None
}
