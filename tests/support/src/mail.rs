//! The real mail servers `tests/mail/start` runs (Dovecot, Postfix, dnsmasq) for the email
//! channel's tests and the gateway's: test accounts taken by lock, and the person on the
//! other side: a real SMTP
//! client (lettre, authenticated submission over STARTTLS) that DKIM-signs their mail with
//! `people.test`'s key, and a real IMAP client (async-imap) reading their own mailbox.

use std::fs::File;
use std::path::PathBuf;
use std::time::Duration;

use futures::TryStreamExt;
use lettre::address::Envelope;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use mail_auth::common::crypto::Ed25519Key;
use mail_auth::common::headers::HeaderWriter;
use mail_auth::dkim::DkimSigner;

/// The servers, from the environment `tests/mail/start` prints.
pub struct Servers {
    pub dir: PathBuf,
    pub imap_port: u16,
    pub smtp_port: u16,
    pub dns: String,
    pub ca: PathBuf,
    pub dkim_key: PathBuf,
    pub password: String,
}

/// The servers, or `None` (with a notice) when none run and none are required.
pub fn servers() -> Option<Servers> {
    let var = |k: &str| std::env::var(format!("SWITCHBOARD_TEST_MAIL_{k}")).ok();
    let found = (|| {
        Some(Servers {
            dir: var("DIR")?.into(),
            imap_port: var("IMAP_PORT")?.parse().ok()?,
            smtp_port: var("SMTP_PORT")?.parse().ok()?,
            dns: var("DNS")?,
            ca: var("CA")?.into(),
            dkim_key: var("DKIM_KEY")?.into(),
            password: var("PASSWORD")?,
        })
    })();
    if found.is_none() {
        let required = std::env::var("SWITCHBOARD_REQUIRE_MAIL").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "mail servers are required (SWITCHBOARD_REQUIRE_MAIL=1) but SWITCHBOARD_TEST_MAIL_* is unset; \
             run `eval \"$(tests/mail/start)\"` first (as root)"
        );
        eprintln!(
            "SKIPPED: no mail servers (start them with `eval \"$(tests/mail/start)\"`, as root, to run the email tests)"
        );
    }
    found
}

/// A test account `uNN`, held by an advisory lock until dropped.
pub struct Account {
    pub user: String,
    _lock: File,
}

impl Servers {
    /// A free account, its mailbox emptied.
    pub async fn account(&self) -> Account {
        for i in 1..=60 {
            let user = format!("u{i:02}");
            let path = self.dir.join("locks").join(&user);
            let file = File::create(&path).expect("lock file");
            if rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive)
                .is_ok()
            {
                let account = Account { user, _lock: file };
                self.empty(&account.user).await;
                return account;
            }
        }
        panic!("all 60 test accounts are in use");
    }

    async fn imap(&self, user: &str) -> async_imap::Session<tokio::net::TcpStream> {
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", self.imap_port))
            .await
            .expect("IMAP connects");
        let mut client = async_imap::Client::new(tcp);
        client.read_response().await.expect("greeting");
        client
            .login(user, &self.password)
            .await
            .map_err(|(e, _)| e)
            .expect("IMAP login")
    }

    async fn empty(&self, user: &str) {
        let mut s = self.imap(user).await;
        s.select("INBOX").await.expect("select");
        let all = s.uid_search("ALL").await.expect("search");
        if !all.is_empty() {
            let _: Vec<_> = s
                .uid_store("1:*", "+FLAGS (\\Deleted)")
                .await
                .unwrap()
                .try_collect()
                .await
                .unwrap();
            let _: Vec<_> = s.expunge().await.unwrap().try_collect().await.unwrap();
        }
        let _ = s.logout().await;
    }

    /// Mark every mail in `user`'s INBOX unread again (as a restore that lost the flags).
    pub async fn mark_unread(&self, user: &str) {
        let mut s = self.imap(user).await;
        s.select("INBOX").await.expect("select");
        let _: Vec<_> = s
            .uid_store("1:*", "-FLAGS (\\Seen)")
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        let _ = s.logout().await;
    }

    /// Every mail in `user`'s INBOX, oldest first.
    pub async fn inbox(&self, user: &str) -> Vec<Vec<u8>> {
        let mut s = self.imap(user).await;
        s.select("INBOX").await.expect("select");
        let fetched: Vec<_> = s
            .fetch("1:*", "BODY.PEEK[]")
            .await
            .map(|stream| stream.try_collect::<Vec<_>>())
            .expect("fetch")
            .await
            .unwrap_or_default();
        let _ = s.logout().await;
        let mut mails: Vec<(u32, Vec<u8>)> = fetched
            .iter()
            .filter_map(|f| Some((f.message, f.body()?.to_vec())))
            .collect();
        mails.sort_by_key(|(n, _)| *n);
        mails.into_iter().map(|(_, m)| m).collect()
    }

    /// Settings (an email channel's table, as JSON) for a bot reading `bot`'s mailbox at
    /// `uNN@bot.test`, letting `allowed` in.
    pub fn config(&self, bot: &Account, allowed: &[&str]) -> serde_json::Value {
        serde_json::json!({
            "address": format!("{}@bot.test", bot.user),
            "imap": {"host": "127.0.0.1", "port": self.imap_port, "tls": "none",
                     "user": bot.user, "password": self.password},
            "smtp": {"host": "127.0.0.1", "port": self.smtp_port, "tls": "starttls",
                     "user": bot.user, "password": self.password},
            "tls_ca_file": self.ca,
            "dns_resolver": self.dns,
            "allowed_users": allowed,
            "dm_policy": "allowlist",
            "poll_interval_secs": 2,
        })
    }

    /// The same settings as a `[channels.<name>]` TOML table, for a gateway's config.
    pub fn table(&self, name: &str, bot: &Account, allowed: &[&str]) -> String {
        table(name, self.config(bot, allowed))
    }

    /// A person at `uNN@people.test` sending through their own authenticated submission.
    pub fn person(&self, account: &Account) -> Person<'_> {
        Person {
            servers: self,
            user: account.user.clone(),
            address: format!("{}@people.test", account.user),
        }
    }
}

/// `config` (an email channel's settings as JSON) as a `[channels.<name>]` TOML table.
pub fn table(name: &str, mut config: serde_json::Value) -> String {
    let object = config.as_object_mut().expect("an object");
    let imap = object.remove("imap").expect("imap");
    let smtp = object.remove("smtp").expect("smtp");
    let top: toml::Table = serde_json::from_value(config).expect("a table");
    let imap: toml::Table = serde_json::from_value(imap).expect("a table");
    let smtp: toml::Table = serde_json::from_value(smtp).expect("a table");
    format!(
        "[channels.{name}]\nkind = \"email\"\n{top}\n[channels.{name}.imap]\n{imap}\n[channels.{name}.smtp]\n{smtp}\n"
    )
}

/// A person writing to the bot.
pub struct Person<'a> {
    servers: &'a Servers,
    pub user: String,
    pub address: String,
}

/// One mail a person writes.
#[derive(Default, Clone)]
pub struct Draft {
    pub from: Option<String>,
    pub subject: String,
    pub body: String,
    pub in_reply_to: Option<String>,
    pub references: Vec<String>,
    pub extra_headers: String,
    /// `(name, bytes)` attached as application/octet-stream.
    pub attachment: Option<(String, Vec<u8>)>,
    pub unsigned: bool,
}

impl Person<'_> {
    /// Send `draft` to `to` (DKIM-signed for people.test unless `unsigned`); its Message-ID.
    pub async fn send(&self, to: &str, draft: Draft) -> String {
        let id = format!("{}.{}@people.test", self.user, unique());
        let from = draft.from.clone().unwrap_or_else(|| self.address.clone());
        let mut raw = format!(
            "From: {from}\r\nTo: {to}\r\nSubject: {}\r\nMessage-ID: <{id}>\r\nDate: Mon, 07 Dec 2026 12:00:00 +0000\r\n",
            draft.subject
        );
        if let Some(parent) = &draft.in_reply_to {
            raw.push_str(&format!("In-Reply-To: <{parent}>\r\n"));
        }
        if !draft.references.is_empty() {
            let refs: Vec<String> = draft.references.iter().map(|r| format!("<{r}>")).collect();
            raw.push_str(&format!("References: {}\r\n", refs.join(" ")));
        }
        raw.push_str(&draft.extra_headers);
        raw.push_str("MIME-Version: 1.0\r\n");
        match &draft.attachment {
            None => raw.push_str(&format!(
                "Content-Type: text/plain; charset=utf-8\r\n\r\n{}\r\n",
                draft.body
            )),
            Some((name, bytes)) => raw.push_str(&format!(
                "Content-Type: multipart/mixed; boundary=\"sb-b\"\r\n\r\n--sb-b\r\n\
                 Content-Type: text/plain; charset=utf-8\r\n\r\n{}\r\n--sb-b\r\n\
                 Content-Type: application/octet-stream\r\n\
                 Content-Disposition: attachment; filename=\"{name}\"\r\n\
                 Content-Transfer-Encoding: base64\r\n\r\n{}\r\n--sb-b--\r\n",
                draft.body,
                base64_lines(bytes)
            )),
        }
        let raw = if draft.unsigned {
            raw
        } else {
            self.signed(&raw)
        };
        let envelope = Envelope::new(
            Some(self.address.parse().unwrap()),
            vec![to.parse().unwrap()],
        )
        .unwrap();
        self.transport()
            .send_raw(&envelope, raw.as_bytes())
            .await
            .expect("the person's SMTP server takes the mail");
        id
    }

    fn signed(&self, raw: &str) -> String {
        let pem = std::fs::read(&self.servers.dkim_key).expect("DKIM key");
        let der = rustls_pemfile::private_key(&mut pem.as_slice())
            .expect("PEM")
            .expect("a private key");
        let key =
            Ed25519Key::from_pkcs8_maybe_unchecked_der(der.secret_der()).expect("Ed25519 key");
        let signature = DkimSigner::from_key(key)
            .domain("people.test")
            .selector("sb")
            .headers([
                "From",
                "To",
                "Subject",
                "Message-ID",
                "In-Reply-To",
                "References",
            ])
            .sign(raw.as_bytes())
            .expect("signs");
        format!("{}{raw}", signature.to_header())
    }

    fn transport(&self) -> AsyncSmtpTransport<Tokio1Executor> {
        let ca = std::fs::read(&self.servers.ca).unwrap();
        let params = TlsParameters::builder("127.0.0.1".into())
            .add_root_certificate(Certificate::from_pem(&ca).unwrap())
            .build_rustls()
            .unwrap();
        AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous("127.0.0.1")
            .port(self.servers.smtp_port)
            .tls(Tls::Required(params))
            .credentials(Credentials::new(
                self.user.clone(),
                self.servers.password.clone(),
            ))
            .build()
    }

    /// The mails in the person's own mailbox.
    pub async fn inbox(&self) -> Vec<Vec<u8>> {
        self.servers.inbox(&self.user).await
    }

    /// Wait until the person's mailbox holds `n` mails; they, oldest first.
    pub async fn wait_inbox(&self, n: usize) -> Vec<Vec<u8>> {
        crate::eventually(
            Duration::from_secs(30),
            &format!("{n} mails in the person's mailbox"),
            async || {
                let inbox = self.inbox().await;
                if inbox.len() == n {
                    Ok(inbox)
                } else {
                    Err(inbox.len())
                }
            },
        )
        .await
    }
}

fn unique() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{nanos}.{}", NEXT.fetch_add(1, Ordering::SeqCst))
}

fn base64_lines(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for (i, chunk) in bytes.chunks(3).enumerate() {
        if i > 0 && i % 19 == 0 {
            out.push_str("\r\n");
        }
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for j in 0..4 {
            if j <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * j) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The value of header `name` in `raw` (unfolded), if present.
pub fn header(raw: &[u8], name: &str) -> Option<String> {
    let message = mail_parser::MessageParser::default().parse(raw)?;
    message
        .header_raw(name)
        .map(|v| v.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// The HTML part of `raw`, if it has one.
pub fn html_body(raw: &[u8]) -> Option<String> {
    let message = mail_parser::MessageParser::default().parse(raw)?;
    message.body_html(0).map(std::borrow::Cow::into_owned)
}
