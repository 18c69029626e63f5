//! Cold start: process start → `/readyz` 200 on SQLite, polled every millisecond. Measured
//! on a new database (migrations run) and again on the same, existing database; with Slack
//! and web only, and with Telegram polling added (`poll_timeout_secs = 30`, Telegram's usual
//! long poll: the first `getUpdates` asks with timeout 0, so the channel is ready when it
//! answers, not after a whole long poll).

use super::{Env, READY_TIMEOUT, note};
use crate::child::{GatewayProcess, Options, Ready, Stands};
use crate::report::{Measurement, Target};
use crate::stats::ms;

const NAME: &str = "cold start";

/// One run: four starts.
pub async fn run(env: &Env) -> anyhow::Result<Vec<Measurement>> {
    let mut out = Vec::new();
    for telegram in [false, true] {
        let options = Options {
            telegram,
            ..env.options.clone()
        };
        let channels = if telegram {
            "Slack + web + Telegram"
        } else {
            "Slack + web"
        };
        let stands = Stands::start().await;
        let dir = tempfile::tempdir()?;
        let fresh = start(&stands, dir.path(), &options).await?;
        let again = start(&stands, dir.path(), &options).await?;
        note(format!(
            "{NAME} ({channels}): new database {:.1} ms (HTTP up {:.1} ms), existing {:.1} ms",
            ms(fresh.ready),
            ms(fresh.first_answer),
            ms(again.ready)
        ));
        let target = Target::AtMost(50.0);
        out.push(
            Measurement::new(
                NAME,
                format!("start → /readyz 200, new database, {channels}"),
                "ms",
                ms(fresh.ready),
            )
            .target(target),
        );
        out.push(
            Measurement::new(
                NAME,
                format!("start → /readyz 200, existing database, {channels}"),
                "ms",
                ms(again.ready),
            )
            .target(target),
        );
        if !telegram {
            out.push(Measurement::new(
                NAME,
                "start → first HTTP answer, new database",
                "ms",
                ms(fresh.first_answer),
            ));
        }
    }
    Ok(out)
}

async fn start(stands: &Stands, dir: &std::path::Path, options: &Options) -> anyhow::Result<Ready> {
    let mut gateway = GatewayProcess::spawn(stands, dir, options)?;
    gateway.wait_ready(READY_TIMEOUT).await
}
