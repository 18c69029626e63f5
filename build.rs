//! Link the gateway with packed relative relocations (DT_RELR) where the C library that will
//! load it knows them. A position-independent Rust binary carries one relative relocation
//! per pointer in its read-only data (vtables, string tables): 51,083 of them in 1.2 MB of
//! 24-byte entries, which the loader reads whole at every start. Packed, they take a few
//! kilobytes (issue #19, BENCHMARKS.md "Packed relative relocations").
//!
//! glibc applies DT_RELR from 2.36 on, and the linker marks such a binary with the version
//! `GLIBC_ABI_DT_RELR`, so an older glibc refuses to load it by name instead of running it
//! unrelocated. So this is done only for a native x86-64 build on glibc 2.36 or later (where
//! the binary will run against that glibc or, in the Docker image, the same Debian release);
//! a cross build, another C library or an older glibc links as before.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    if packs_relative_relocations() {
        println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

fn packs_relative_relocations() -> bool {
    let env = |name: &str| std::env::var(name).unwrap_or_default();
    let native = env("TARGET") == env("HOST");
    native
        && env("CARGO_CFG_TARGET_ARCH") == "x86_64"
        && env("CARGO_CFG_TARGET_OS") == "linux"
        && env("CARGO_CFG_TARGET_ENV") == "gnu"
        && host_glibc().is_some_and(|version| version >= (2, 36))
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
