//! Grants and pairing requests at the store level, on both databases: a person waits once
//! per channel, only a few wait at a time, an expired code lets nobody in, an accepted code
//! becomes a grant exactly once, and grants are listed and revoked per channel.

use std::sync::Arc;

use switchboard::store::{AccessRole, Grant, Pairing, PairingRequest, Store};

use crate::store_contract::on_both_databases;

const HOUR: i64 = 3_600_000;

fn request(user: &str, code: &str, now: i64) -> PairingRequest {
    PairingRequest {
        channel: "tg".into(),
        user_id: user.into(),
        user_name: Some(format!("@{user}")),
        code: code.into(),
        created_at: now,
        expires_at: now + HOUR,
    }
}

#[tokio::test]
async fn a_pairing_code_is_made_once_per_person_and_accepted_once_before_it_expires() {
    on_both_databases(pairing).await;
}

async fn pairing(store: Arc<dyn Store>) {
    let now = 1_000;
    let first = store
        .request_pairing(&request("7", "AAAA2222", now), 2)
        .await
        .unwrap();
    assert_eq!(first, Pairing::Created("AAAA2222".into()));
    let again = store
        .request_pairing(&request("7", "BBBB3333", now + 5), 2)
        .await
        .unwrap();
    assert_eq!(
        again,
        Pairing::Waiting,
        "a repeated message makes no new code"
    );
    let second = store
        .request_pairing(&request("8", "CCCC4444", now), 2)
        .await
        .unwrap();
    assert_eq!(second, Pairing::Created("CCCC4444".into()));
    let full = store
        .request_pairing(&request("9", "DDDD5555", now), 2)
        .await
        .unwrap();
    assert_eq!(full, Pairing::Full);
    let waiting = store.pairing_requests(now).await.unwrap();
    let codes: Vec<&str> = waiting.iter().map(|r| r.code.as_str()).collect();
    assert_eq!(codes, ["AAAA2222", "CCCC4444"]);

    assert_eq!(
        store
            .accept_pairing("tg", "CCCC4444", now + HOUR + 1)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .accept_pairing("slack", "AAAA2222", now)
            .await
            .unwrap(),
        None
    );
    let accepted = store
        .accept_pairing("tg", "AAAA2222", now + 10)
        .await
        .unwrap();
    assert_eq!(accepted.map(|r| r.user_id), Some("7".to_owned()));
    assert_eq!(
        store
            .accept_pairing("tg", "AAAA2222", now + 11)
            .await
            .unwrap(),
        None
    );
    assert!(store.has_grant("tg", "7", AccessRole::User).await.unwrap());
    assert!(
        !store
            .has_grant("tg", "7", AccessRole::Approver)
            .await
            .unwrap()
    );

    let later = now + HOUR + 1;
    let fresh = store
        .request_pairing(&request("9", "EEEE6666", later), 2)
        .await
        .unwrap();
    assert_eq!(
        fresh,
        Pairing::Created("EEEE6666".into()),
        "expired requests make room"
    );
}

#[tokio::test]
async fn grants_are_listed_per_channel_and_revoked_together() {
    on_both_databases(grants).await;
}

async fn grants(store: Arc<dyn Store>) {
    for (channel, role) in [
        ("tg", AccessRole::User),
        ("tg", AccessRole::Approver),
        ("slack", AccessRole::User),
    ] {
        let grant = Grant {
            channel: channel.into(),
            user_id: "42".into(),
            user_name: None,
            role,
            granted_at: 5,
        };
        store.grant(&grant).await.unwrap();
        store.grant(&grant).await.unwrap();
    }
    let listed: Vec<(String, AccessRole)> = store
        .grants()
        .await
        .unwrap()
        .into_iter()
        .map(|g| (g.channel, g.role))
        .collect();
    assert_eq!(
        listed,
        [
            ("slack".to_owned(), AccessRole::User),
            ("tg".to_owned(), AccessRole::Approver),
            ("tg".to_owned(), AccessRole::User),
        ]
    );
    assert_eq!(store.revoke("tg", "42").await.unwrap(), 2);
    assert!(!store.has_grant("tg", "42", AccessRole::User).await.unwrap());
    assert!(
        store
            .has_grant("slack", "42", AccessRole::User)
            .await
            .unwrap()
    );
}
