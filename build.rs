//! Rebuild when a migration is added: `sqlx::migrate!` embeds the files of `migrations/` at
//! compile time, and cargo does not otherwise notice a new file there.

fn main() {
    println!("cargo::rerun-if-changed=migrations");
}
