//! The first hour again, with the checkout under a directory only its owner may enter, as
//! `/root/switchboard` on a VPS where the gateway runs as root and its tools as another
//! user: the approved command still runs and its result reaches the page.

use std::os::unix::fs::PermissionsExt;

#[tokio::test]
async fn with_the_checkout_under_a_closed_directory_a_newcomer_still_gets_the_approved_command_run()
{
    let closed = tempfile::tempdir().unwrap();
    std::fs::set_permissions(closed.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let checkout = tempfile::Builder::new().tempdir_in(closed.path()).unwrap();
    super::first_hour::first_hour(checkout).await;
}
