//! Several replicas on one PostgreSQL, in one test process: the store's leases and fencing
//! (on both databases), and two in-process gateways sharing one database.

mod choices;
mod poll;
mod replicas;
mod store;
