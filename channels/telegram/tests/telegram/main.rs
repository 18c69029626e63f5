//! Telegram channel tests: the real teloxide client against the in-process fake Bot API.

mod buttons;
mod conflict;
mod helpers;
mod ready;
mod receive;
mod send;
mod webhook;
