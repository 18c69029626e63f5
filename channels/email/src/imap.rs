//! The IMAP side (`async-imap`): connecting (TLS, STARTTLS, or plain on loopback) and
//! logging in, and one look at the mailbox (`Mailbox::step`): new mail after the cursor is
//! fetched without marking it read (`BODY.PEEK[]`), triaged, delivered, and only once the
//! inbox holds it is the cursor moved and the mail marked `\Seen`. A UIDVALIDITY that is not
//! the cursor's (a first start, a rebuilt mailbox) re-reads the unread mail: what was stored
//! before is dropped by the inbox's Message-ID dedup, so nothing is answered twice.

use std::sync::Arc;
use std::time::Duration;

use futures::TryStreamExt;
use switchboard_channel::{EventSink, SinkError};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_util::either::Either;

use crate::config::{ServerConfig, TlsMode};
use crate::inbound::Triage;
use crate::state::Cursor;

/// The connection under an IMAP session.
pub(crate) type Stream = Either<TcpStream, tokio_rustls::client::TlsStream<TcpStream>>;
/// A logged-in IMAP session.
pub(crate) type Session = async_imap::Session<Stream>;

/// Longest wait for a connection or a greeting.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How talking to the IMAP server failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Failure {
    /// The login was refused: retrying with the same password cannot help.
    #[error("IMAP login refused: {0}")]
    Login(String),
    /// The network, TLS or the server failed; try again later.
    #[error("IMAP: {0}")]
    Server(String),
    /// The inbox could not store a mail (or this replica stopped leading).
    #[error("{0}")]
    Sink(#[from] SinkError),
}

impl From<async_imap::error::Error> for Failure {
    fn from(err: async_imap::error::Error) -> Self {
        Self::Server(err.to_string())
    }
}

impl From<std::io::Error> for Failure {
    fn from(err: std::io::Error) -> Self {
        Self::Server(err.to_string())
    }
}

/// Connect to `server` and log in.
pub(crate) async fn connect(server: &ServerConfig, tls: &TlsConnector) -> Result<Session, Failure> {
    let port = server.port_or(993, 143);
    let tcp = tokio::time::timeout(
        CONNECT_TIMEOUT,
        TcpStream::connect((server.host.as_str(), port)),
    )
    .await
    .map_err(|_| Failure::Server(format!("no connection to {}:{port} in 30 s", server.host)))??;
    let name = ServerName::try_from(server.host.clone())
        .map_err(|e| Failure::Server(format!("host {}: {e}", server.host)))?;
    let client = match server.tls {
        TlsMode::None => greeted(Either::Left(tcp)).await?,
        TlsMode::Tls => greeted(Either::Right(tls.connect(name, tcp).await?)).await?,
        TlsMode::Starttls => {
            let mut plain = greeted(Either::Left(tcp)).await?;
            plain.run_command_and_check_ok("STARTTLS", None).await?;
            let Either::Left(tcp) = plain.into_inner() else {
                return Err(Failure::Server("STARTTLS on a TLS connection".into()));
            };
            async_imap::Client::new(Either::Right(tls.connect(name, tcp).await?))
        }
    };
    client
        .login(&server.user, server.password.expose().unwrap_or_default())
        .await
        .map_err(|(err, _)| Failure::Login(err.to_string()))
}

async fn greeted(stream: Stream) -> Result<async_imap::Client<Stream>, Failure> {
    let mut client = async_imap::Client::new(stream);
    match tokio::time::timeout(CONNECT_TIMEOUT, client.read_response()).await {
        Ok(Ok(Some(_))) => Ok(client),
        Ok(Ok(None)) => Err(Failure::Server("closed before its greeting".into())),
        Ok(Err(err)) => Err(err.into()),
        Err(_) => Err(Failure::Server("no greeting in 30 s".into())),
    }
}

/// Whether the session's server offers IDLE.
pub(crate) async fn has_idle(session: &mut Session) -> Result<bool, Failure> {
    Ok(session.capabilities().await?.has_str("IDLE"))
}

/// What one look at the mailbox needs besides the session.
pub(crate) struct Mailbox<'a> {
    pub(crate) inner: &'a crate::shared::Inner,
    pub(crate) sink: &'a Arc<dyn EventSink>,
}

impl Mailbox<'_> {
    /// Select the mailbox, read what is new after the cursor, deliver it, move the cursor.
    /// Returns how many mails were handled.
    pub(crate) async fn step(&self, session: &mut Session) -> Result<usize, Failure> {
        let inner = self.inner;
        let selected = session.select(inner.config.mailbox()).await?;
        let validity = selected.uid_validity.unwrap_or(0);
        let uid_next = selected.uid_next.unwrap_or(1);
        let cursor = self.cursor().await?;
        let known = cursor.filter(|c| c.uid_validity == validity);
        if let Some(old) = cursor.filter(|c| c.uid_validity != validity) {
            tracing::warn!(
                channel = %inner.name, old = old.uid_validity, new = validity,
                "the mailbox's UIDVALIDITY changed; re-reading its unread mail (mail already stored is not answered again)"
            );
        }
        let query = match known {
            Some(c) => format!("UID {}:*", c.last_uid.saturating_add(1)),
            None => "UNSEEN".to_owned(),
        };
        let mut uids: Vec<u32> = session
            .uid_search(&query)
            .await?
            .into_iter()
            .filter(|uid| known.is_none_or(|c| *uid > c.last_uid))
            .collect();
        uids.sort_unstable();
        let mut last = known.map_or(uid_next.saturating_sub(1), |c| c.last_uid);
        for uid in &uids {
            self.one(session, *uid).await?;
            last = last.max(*uid);
            self.save(Cursor {
                uid_validity: validity,
                last_uid: last,
            })
            .await?;
            session
                .uid_store(uid.to_string(), "+FLAGS (\\Seen)")
                .await?
                .try_collect::<Vec<_>>()
                .await?;
        }
        if known.is_none() {
            self.save(Cursor {
                uid_validity: validity,
                last_uid: last,
            })
            .await?;
        }
        inner.health.received();
        Ok(uids.len())
    }

    /// Fetch, triage and deliver the mail `uid`.
    async fn one(&self, session: &mut Session, uid: u32) -> Result<(), Failure> {
        let fetched: Vec<_> = session
            .uid_fetch(uid.to_string(), "(UID BODY.PEEK[])")
            .await?
            .try_collect()
            .await?;
        let Some(raw) = fetched.iter().find_map(|f| f.body()) else {
            return Ok(()); // expunged in the meantime
        };
        let inner = self.inner;
        match inner.reader().read(raw).await {
            Triage::Deliver(event) => {
                if let Err(bad) = event.check_ids() {
                    tracing::warn!(channel = %inner.name, uid, reason = %bad, "skipped a mail with a bad id");
                    return Ok(());
                }
                let delivery = self.sink.deliver(*event).await?;
                tracing::debug!(channel = %inner.name, uid, ?delivery, "mail handed to the inbox");
            }
            Triage::Skip(why) => {
                tracing::info!(channel = %inner.name, uid, "mail left unanswered: {why}");
            }
        }
        Ok(())
    }

    /// The saved cursor: a leader's (in the database) when there is one, else the file's.
    async fn cursor(&self) -> Result<Option<Cursor>, Failure> {
        Ok(match self.sink.cursor().await? {
            Some(packed) => Some(Cursor::unpacked(packed)),
            None => self.inner.state.cursor(),
        })
    }

    async fn save(&self, cursor: Cursor) -> Result<(), Failure> {
        self.inner
            .state
            .save_cursor(cursor)
            .map_err(|e| Failure::Sink(SinkError(format!("saving the cursor: {e}"))))?;
        self.sink.save_cursor(cursor.packed()).await?;
        Ok(())
    }
}
