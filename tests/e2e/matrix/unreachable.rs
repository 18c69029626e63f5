//! A Matrix channel whose homeserver does not answer costs a request per retry: the SDK's
//! stores are not opened (nor their pools and threads set up and torn down) until the
//! homeserver answers, and `/readyz` says why the channel is not receiving. Needs no
//! Synapse.

use switchboard_standins::eventually;

use crate::app::TestApp;
use crate::helpers::WAIT;

#[tokio::test]
async fn while_the_homeserver_is_down_the_stores_stay_closed_and_readyz_says_why() {
    // Port 9 (discard) has no listener here: every connection is refused.
    let app = TestApp::builder()
        .config(
            "[channels.matrix]\nkind = \"matrix\"\nhomeserver = \"http://127.0.0.1:9\"\n\
             user_id = \"@bot:localhost\"\npassword = \"unused-test-password\"\n",
        )
        .start()
        .await;
    let body = eventually(
        WAIT,
        "/readyz to name the unanswering homeserver",
        async || {
            let body = reqwest::get(app.url("/readyz"))
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            if body.contains("the homeserver does not answer") {
                Ok(body)
            } else {
                Err(body)
            }
        },
    )
    .await;
    let account = app.config.gateway.data_dir.join("matrix/matrix");
    assert!(
        !account.join("store").exists(),
        "the SDK's stores were opened for a homeserver that never answered: {body}"
    );
    app.shutdown().await;
}
