//! Matrix with the gateway's database on the full disk: messages that arrive while it
//! cannot write are not confirmed (the sync token is not saved past them), and once space
//! returns each is answered exactly once, without a restart.
//!
//! The bot's SDK stores stay in `data_dir`, on a disk with room, so saving the token would
//! succeed: only the channel's order (store the batch, then save its token) keeps these
//! messages. Were the token saved past a batch the inbox refused, they would be gone.

use switchboard_standins::eventually;

use super::{SmallDisk, asked, echo, readyz, wait_ready};
use crate::helpers::{WAIT, wait_inbox_idle};
use crate::matrix::{bot_messages, dm_built, synapse, wait_bot};

/// Messages sent while the disk is full: more than the database's free pages might take.
const WHILE_FULL: usize = 5;

#[tokio::test]
async fn on_a_full_disk_matrix_confirms_nothing_unstored_and_answers_all_once_space_returns() {
    let Some(hs) = synapse() else { return };
    let Some(disk) = SmallDisk::mount() else {
        return;
    };
    let database = format!("sqlite://{}/test.db", disk.path().display());
    let t = dm_built(&hs, false, |_| String::new(), |b| b.database(&database)).await;
    let bot = &t.bot.account.id;
    t.alice.say(&t.room, "mx-before").await;
    wait_bot(&t.room, bot, |s| {
        s.iter().any(|m| m.text == echo("mx-before"))
    })
    .await;

    disk.fill();
    let texts: Vec<String> = (0..WHILE_FULL).map(|i| format!("mx-full-{i}")).collect();
    for text in &texts {
        t.alice.say(&t.room, text).await;
    }
    eventually(WAIT, "/readyz to report the full disk", async || {
        let (status, body) = readyz(&t.app).await;
        if status == 503 { Ok(()) } else { Err(body) }
    })
    .await;

    disk.free();
    wait_ready(&t.app).await;
    let all_answered = |seen: &[crate::matrix::Seen]| {
        texts
            .iter()
            .all(|text| seen.iter().any(|m| m.text == echo(text)))
    };
    wait_bot(&t.room, bot, all_answered).await;
    wait_inbox_idle(&t.app.store()).await;
    let seen = bot_messages(&t.room, bot).await;
    for text in &texts {
        let answers = seen.iter().filter(|m| m.text == echo(text)).count();
        assert_eq!(answers, 1, "{text} answered once in the room: {seen:#?}");
        assert_eq!(asked(&t.app, text), 1, "{text} asked of the model once");
    }
}
