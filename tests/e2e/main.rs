//! End-to-end tests: the real gateway (store, actors, providers, drafts, HTTP) against the
//! in-process stand-ins in `tests/support`.

mod agent_loop;
mod config;
mod helpers;
mod providers;
mod spine;
mod store_contract;
