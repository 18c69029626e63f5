//! Every class of provider failure against the LLM stand-in (and, for connection failures,
//! a closed port, an unresolvable `.invalid` host and a plain-HTTP server spoken to over
//! TLS): the error the provider returns, and the one line the person in the chat gets.

use std::time::Duration;

use switchboard::config::{EnvString, ProviderConfig, ProviderKind, Secret};
use switchboard::provider::{self, ConnectKind, ProviderError};
use switchboard_standins::{FakeLlm, Reply};

use super::{config, request};
use crate::helpers::{TestApp, key, wait_transcript};

const BOTH: [ProviderKind; 2] = [ProviderKind::Openai, ProviderKind::Anthropic];

/// One call through a provider built from `config`; its error.
async fn fail(config: &ProviderConfig) -> ProviderError {
    let provider = provider::from_config(config).unwrap();
    let mut stream = match provider.stream(&request()).await {
        Ok(stream) => stream,
        Err(err) => return err,
    };
    while let Some(event) = stream.next().await {
        if let Err(err) = event {
            return err;
        }
    }
    panic!("the call succeeded");
}

/// The error `reply` turns into, on protocol `kind`, with no retries.
async fn error_for(kind: ProviderKind, llm: &FakeLlm, reply: Reply) -> ProviderError {
    llm.push(reply);
    fail(&ProviderConfig {
        max_retries: 0,
        ..config(kind, llm)
    })
    .await
}

#[tokio::test]
async fn a_missing_and_a_wrong_key_are_told_apart() {
    for kind in BOTH {
        let llm = FakeLlm::start().await;
        llm.require_key("the-right-test-key");
        let keyless = ProviderConfig {
            api_key: Secret::default(),
            ..config(kind, &llm)
        };
        let err = fail(&keyless).await;
        assert!(
            matches!(err, ProviderError::NoKey { .. }),
            "{kind:?}: {err:?}"
        );
        let err = fail(&config(kind, &llm)).await;
        assert!(
            matches!(err, ProviderError::KeyRejected { status: 401, .. }),
            "{kind:?}: {err:?}"
        );
        assert_eq!(
            llm.requests().len(),
            2,
            "{kind:?}: a key error is not retried"
        );
        let err = error_for(kind, &FakeLlm::start().await, Reply::Status(403, None)).await;
        assert!(
            matches!(err, ProviderError::KeyRejected { status: 403, .. }),
            "{kind:?}: {err:?}"
        );
    }
}

#[tokio::test]
async fn an_unknown_model_a_long_prompt_and_rate_limits_are_classified_on_both_protocols() {
    for kind in BOTH {
        let llm = FakeLlm::start().await;
        let err = error_for(kind, &llm, Reply::Status(404, None)).await;
        assert!(
            matches!(&err, ProviderError::ModelNotFound { model, .. } if model == "gpt-4o-mini"),
            "{kind:?}: {err:?}"
        );
        let err = error_for(kind, &llm, Reply::ContextTooLong).await;
        assert!(
            matches!(err, ProviderError::ContextTooLong(_)),
            "{kind:?}: {err:?}"
        );
        let err = error_for(kind, &llm, Reply::Status(429, Some(20))).await;
        assert_eq!(
            err,
            ProviderError::RateLimited {
                status: 429,
                retry_after: Some(Duration::from_secs(20))
            },
            "{kind:?}"
        );
        let err = error_for(kind, &llm, Reply::Status(529, None)).await;
        assert!(
            matches!(err, ProviderError::RateLimited { status: 529, .. }),
            "{kind:?}: {err:?}"
        );
    }
}

#[tokio::test]
async fn an_overloaded_error_event_inside_the_stream_counts_as_overloaded() {
    for (kind, error) in [
        (ProviderKind::Anthropic, "overloaded_error"),
        (ProviderKind::Openai, "rate_limit_exceeded"),
    ] {
        let llm = FakeLlm::start().await;
        let err = error_for(kind, &llm, Reply::StreamError(error)).await;
        assert!(
            matches!(err, ProviderError::RateLimited { .. }),
            "{kind:?}: {err:?}"
        );
    }
}

#[tokio::test]
async fn a_wait_longer_than_the_retry_cap_is_reported_with_the_wait_and_not_retried() {
    let llm = FakeLlm::start().await;
    llm.push(Reply::Status(429, Some(120)));
    let err = fail(&config(ProviderKind::Openai, &llm)).await;
    assert_eq!(
        err,
        ProviderError::RateLimited {
            status: 429,
            retry_after: Some(Duration::from_secs(120))
        }
    );
    assert_eq!(llm.requests().len(), 1);
}

fn pointed_at(url: &str) -> ProviderConfig {
    ProviderConfig {
        kind: ProviderKind::Openai,
        base_url: Some(EnvString(url.to_owned())),
        api_key: Secret::new("test-key-not-real"),
        timeout_secs: 5,
        max_retries: 0,
        ..ProviderConfig::default()
    }
}

#[tokio::test]
async fn connection_failures_say_refused_dns_or_tls_and_keep_the_cause_chain() {
    let closed = crate::helpers::free_port();
    let plain_http = FakeLlm::start().await;
    let tls_to_plain = plain_http.openai_url().replace("http://", "https://");
    let cases = [
        (
            format!("http://127.0.0.1:{closed}/v1"),
            ConnectKind::Refused,
            "refused",
        ),
        ("http://llm.invalid/v1".to_owned(), ConnectKind::Dns, "dns"),
        (tls_to_plain, ConnectKind::Tls, ""),
    ];
    for (url, want, in_detail) in cases {
        let err = fail(&pointed_at(&url)).await;
        let ProviderError::Connect { kind, detail, host } = &err else {
            panic!("{url}: {err:?}");
        };
        assert_eq!(*kind, want, "{url}: {err}");
        assert!(detail.to_lowercase().contains(in_detail), "{url}: {detail}");
        assert!(
            detail.contains(": "),
            "the chain below reqwest's own words: {detail}"
        );
        assert!(!host.is_empty() && url.contains(host.as_str()), "{host}");
    }
}

#[tokio::test]
async fn a_hosted_api_without_a_key_fails_at_once_without_a_request() {
    for kind in BOTH {
        let config = ProviderConfig {
            kind,
            api_key: Secret::default(),
            ..ProviderConfig::default()
        };
        let err = fail(&config).await;
        let ProviderError::NoKey { hint } = &err else {
            panic!("{kind:?}: {err:?}");
        };
        let variable = match kind {
            ProviderKind::Openai => "OPENAI_API_KEY",
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
        };
        assert!(hint.contains(variable), "{hint}");
    }
}

#[tokio::test]
async fn a_stalled_response_is_a_timeout() {
    let llm = FakeLlm::start().await;
    let config = ProviderConfig {
        timeout_secs: 1,
        max_retries: 0,
        ..config(ProviderKind::Anthropic, &llm)
    };
    llm.push(Reply::Stall(Duration::from_secs(5)));
    assert_eq!(
        fail(&config).await,
        ProviderError::Timeout(Duration::from_secs(1))
    );
}

#[tokio::test]
async fn each_failure_reaches_the_chat_as_one_line_that_says_what_to_do_with_a_trace_id() {
    let app = TestApp::spawn().await;
    let cases = [
        (Reply::Status(401, None), "rejected its API key (HTTP 401)"),
        (Reply::Status(404, None), "has no model named `fake-model`"),
        (
            Reply::Status(429, Some(90)),
            "rate limited right now; please try again in 90 s",
        ),
        (
            Reply::Status(529, Some(45)),
            "overloaded right now; please try again in 45 s",
        ),
        (Reply::ContextTooLong, "too long for the model; send /new"),
    ];
    for (i, (reply, line)) in cases.into_iter().enumerate() {
        let chat = key(&format!("err{i}"));
        app.llm.push(reply);
        app.channel.say(&chat, "u1", "hello").await.unwrap();
        let transcript = wait_transcript(&app.channel, &chat, |t| !t.is_empty()).await;
        let said = &transcript[0];
        assert!(said.contains(line), "{said}");
        assert!(said.contains("(trace "), "{said}");
        assert_eq!(said.lines().count(), 1, "{said}");
    }
}
