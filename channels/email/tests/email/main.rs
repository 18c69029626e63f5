//! The email channel against real mail servers (`tests/mail/start`): Dovecot for IMAP,
//! Postfix for submission and delivery, dnsmasq for `people.test`'s DKIM record.

mod refusals;
mod restart;
mod sending;
mod support;
mod threads;
