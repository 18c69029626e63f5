//! `send_file` with an image on Telegram: posted with `sendPhoto` (shown inline), not
//! `sendDocument`, with its caption and every byte intact.

use switchboard_standins::files::tiny_png;

use super::telegram::send_file_through_telegram;

#[tokio::test]
async fn send_file_posts_an_image_with_send_photo_its_caption_and_the_bytes_intact() {
    let sent = send_file_through_telegram("chart.png", &tiny_png(), "Your chart").await;
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].method, "sendPhoto", "an image is shown inline");
    assert_eq!(sent[0].bytes, tiny_png(), "every byte arrived");
    assert_eq!(sent[0].caption.as_deref(), Some("Your chart"));
    assert_eq!(sent[0].chat_id, super::telegram::ALICE);
}
