//! Answers out (`lettre`, SMTP submission with TLS or STARTTLS and AUTH): one mail per
//! answer, threaded (`In-Reply-To` the person's newest mail, `References` the thread, `Re:`
//! subject), `multipart/alternative` with the Markdown as the text part and the safe HTML
//! the web chat uses as the HTML part, files the turn posted attached, and
//! `Auto-Submitted: auto-replied` so other robots do not answer back (RFC 3834).
//! A 4xx or a lost connection is `Transient` (the draft's final delivery retries it); a 5xx
//! is `Fatal`: logged, shown in `/readyz`, not retried.

use std::time::Duration;

use lettre::message::header::{ContentType, HeaderName, HeaderValue};
use lettre::message::{Attachment, Mailbox, MultiPart, SinglePart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use switchboard_channel::{Button, ChannelError, OutboundFile, Target, render};
use tokio_rustls::rustls::pki_types::CertificateDer;

use crate::config::{EmailConfig, TlsMode};
use crate::state::Thread;

/// The SMTP client and the bot's own address.
pub(crate) struct Smtp {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    /// The domain of the bot's address, for its Message-IDs.
    domain: String,
}

impl Smtp {
    /// The client `config` describes, trusting the web roots and `extra`.
    pub(crate) fn new(
        config: &EmailConfig,
        extra: &[CertificateDer<'static>],
    ) -> Result<Self, String> {
        let smtp = &config.smtp;
        let mut params = TlsParameters::builder(smtp.host.clone());
        for cert in extra {
            let cert =
                Certificate::from_der(cert.to_vec()).map_err(|e| format!("tls_ca_file: {e}"))?;
            params = params.add_root_certificate(cert);
        }
        let params = params.build_rustls().map_err(|e| format!("smtp: {e}"))?;
        let tls = match smtp.tls {
            TlsMode::Tls => Tls::Wrapper(params),
            TlsMode::Starttls => Tls::Required(params),
            TlsMode::None => Tls::None,
        };
        let transport = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(smtp.host.as_str())
            .port(smtp.port_or(465, 587))
            .tls(tls)
            .credentials(Credentials::new(
                smtp.user.clone(),
                smtp.password.expose().unwrap_or_default().to_owned(),
            ))
            .timeout(Some(Duration::from_secs(60)))
            .build();
        let from: Mailbox = config
            .address
            .parse()
            .map_err(|e| format!("address: {e}"))?;
        let domain = config
            .address
            .rsplit_once('@')
            .map(|(_, d)| d.to_owned())
            .unwrap_or_default();
        Ok(Self {
            transport,
            from,
            domain,
        })
    }

    /// A fresh Message-ID (without angle brackets) on the bot's domain.
    pub(crate) fn new_id(&self) -> String {
        let random: [u8; 16] = rand_bytes();
        format!("{}@{}", crate::inbound::hex(&random), self.domain)
    }

    /// Whether the server accepts a connection and the login (for `check --probe`).
    pub(crate) async fn probe(&self) -> Result<bool, String> {
        self.transport
            .test_connection()
            .await
            .map_err(|e| e.to_string())
    }

    /// Send `message`.
    pub(crate) async fn send(&self, message: Message) -> Result<(), ChannelError> {
        match self.transport.send(message).await {
            Ok(_) => Ok(()),
            Err(err) if err.is_permanent() => Err(ChannelError::Fatal(format!(
                "SMTP refused the answer: {err}"
            ))),
            Err(err) => Err(ChannelError::Transient(format!("SMTP: {err}"))),
        }
    }

    /// The mail answering `thread` with `text` (Markdown), the choices of `buttons` named
    /// under it, and `files` attached.
    pub(crate) fn compose(
        &self,
        to: &str,
        thread: Option<&Thread>,
        id: &str,
        text: &str,
        buttons: &[Button],
        files: &[OutboundFile],
    ) -> Result<Message, ChannelError> {
        let to: Mailbox = to
            .parse()
            .map_err(|e| ChannelError::Fatal(format!("recipient {to:?}: {e}")))?;
        let subject = thread
            .map(|t| format!("Re: {}", t.subject))
            .filter(|s| s != "Re: ")
            .unwrap_or_else(|| "Re: your mail".to_owned());
        let mut builder = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(subject)
            .message_id(Some(format!("<{id}>")))
            .raw_header(HeaderValue::new(
                HeaderName::new_from_ascii_str("Auto-Submitted"),
                "auto-replied".to_owned(),
            ));
        if let Some(thread) = thread.filter(|t| !t.last_id.is_empty()) {
            let refs: Vec<String> = thread.references.iter().map(|r| format!("<{r}>")).collect();
            builder = builder
                .in_reply_to(format!("<{}>", thread.last_id))
                .references(refs.join(" "));
        }
        let text = with_choices(text, buttons);
        let html = format!(
            "<!doctype html><html><body>{}</body></html>",
            render(&text, Target::WebHtml)
        );
        let body = MultiPart::alternative_plain_html(text, html);
        let body = if files.is_empty() {
            body
        } else {
            files
                .iter()
                .fold(MultiPart::mixed().multipart(body), |mixed, file| {
                    mixed.singlepart(attachment(file))
                })
        };
        builder
            .multipart(body)
            .map_err(|e| ChannelError::Fatal(format!("composing the answer: {e}")))
    }
}

fn attachment(file: &OutboundFile) -> SinglePart {
    let mime = file
        .mime
        .as_deref()
        .and_then(|m| ContentType::parse(m).ok())
        .unwrap_or_else(|| ContentType::parse("application/octet-stream").expect("a valid type"));
    Attachment::new(file.name.clone()).body(file.bytes.clone(), mime)
}

/// The text, and for a prompt the words a reply's first line may be.
fn with_choices(text: &str, buttons: &[Button]) -> String {
    if buttons.is_empty() {
        return text.to_owned();
    }
    let words: Vec<String> = buttons
        .iter()
        .map(|b| {
            let word = b
                .label
                .split_whitespace()
                .next()
                .unwrap_or(&b.label)
                .to_lowercase();
            format!("**{word}** ({})", b.label)
        })
        .collect();
    format!(
        "{text}\n\nReply to this mail with one word on the first line: {}.",
        words.join(", ")
    )
}

fn rand_bytes() -> [u8; 16] {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    // The system's random source failing is not something a Message-ID can recover from; a
    // zeroed id is still unique enough with the time mixed in below.
    if ring::rand::SystemRandom::new().fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        bytes.copy_from_slice(&nanos.to_le_bytes());
    }
    bytes
}
