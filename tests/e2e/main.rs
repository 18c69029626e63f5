//! End-to-end tests: the real gateway (store, actors, providers, drafts, HTTP) against the
//! in-process stand-ins in `tests/support`.

#![allow(
    clippy::too_many_lines,
    reason = "a test reads as one story (set up, act, check); the 60-line rule is for the code under test"
)]

mod access;
mod access_store;
mod admin;
mod agent_loop;
mod app;
mod approval_secrets;
mod approval_store;
mod approvals;
mod attach;
mod audit;
mod backup;
mod browser;
mod browser_tool;
mod budget;
mod cluster;
mod config;
mod config_flag;
mod config_migrate;
mod db_faults;
mod delegation;
mod docker_image;
mod doctor;
mod email;
mod full_disk;
mod helpers;
mod holdback;
mod leak;
mod logs;
mod matrix;
mod mcp;
mod memory;
mod memory_meaning;
mod memory_ops;
mod memory_store;
mod offload;
mod pause;
mod plan;
mod policy_bash;
mod profiles;
mod providers;
mod release;
mod replicas;
mod rewind;
mod rewind_store;
mod sandbox;
mod sandbox_bounds;
mod sandbox_closed_parent;
mod sandbox_escapes;
mod sandbox_limits;
mod schedules;
mod selfhost;
mod signal;
mod skills;
mod slack;
mod slack_threads;
mod spine;
mod store_contract;
mod stored_secrets;
mod telegram;
mod tools;
mod upgrade;
mod voice;
mod web;
mod whatsapp;

/// Unix seconds now.
fn helpers_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}
