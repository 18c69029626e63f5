//! Who is writing. A From header proves nothing, so before a mail becomes an event its sender
//! is authenticated (`sender_auth`): by default a DKIM signature (verified by `mail-auth`,
//! keys read from DNS through the configured resolver) whose signing domain is the From
//! address's domain — DMARC's DKIM alignment; or the `Authentication-Results` header a
//! trusted receiving server added. A mail that fails is never delivered, so `allowed_users`,
//! approvers and pairing codes only ever meet authenticated senders, and nothing is mailed
//! back to a forged From.

use std::net::SocketAddr;

use mail_auth::hickory_resolver::config::{
    ConnectionConfig, NameServerConfig, ResolverConfig, ResolverOpts,
};
use mail_auth::{AuthenticatedMessage, DkimResult, MessageAuthenticator};

use crate::config::{EmailConfig, SenderAuth};

/// The authentication step: the rule configured and what it needs.
pub(crate) struct Verifier {
    rule: SenderAuth,
    /// The DNS client DKIM keys are read with (only for [`SenderAuth::Dkim`]).
    dns: Option<MessageAuthenticator>,
    /// The authserv-id whose `Authentication-Results` are believed.
    authserv_id: Option<String>,
}

impl Verifier {
    /// The verifier `config` asks for.
    pub(crate) fn new(config: &EmailConfig) -> Result<Self, String> {
        let dns = match config.sender_auth {
            SenderAuth::Dkim => Some(authenticator(config.dns_resolver.as_deref())?),
            _ => None,
        };
        Ok(Self {
            rule: config.sender_auth,
            dns,
            authserv_id: config.trusted_authserv_id.clone(),
        })
    }

    /// The rule, for logs.
    pub(crate) fn rule(&self) -> &'static str {
        match self.rule {
            SenderAuth::Dkim => "dkim",
            SenderAuth::AuthenticationResults => "authentication_results",
            SenderAuth::None => "none",
        }
    }

    /// `Ok` when `raw`'s From address `from` is authenticated, else why not.
    pub(crate) async fn check(&self, raw: &[u8], from: &str) -> Result<(), String> {
        let domain = from
            .rsplit_once('@')
            .map(|(_, d)| d.to_ascii_lowercase())
            .ok_or("the From header has no address")?;
        match self.rule {
            SenderAuth::None => Ok(()),
            SenderAuth::Dkim => self.dkim(raw, &domain).await,
            SenderAuth::AuthenticationResults => {
                let id = self.authserv_id.as_deref().unwrap_or_default();
                authentication_results(raw, id, &domain)
            }
        }
    }

    async fn dkim(&self, raw: &[u8], domain: &str) -> Result<(), String> {
        let dns = self.dns.as_ref().ok_or("no DNS resolver")?;
        let message = AuthenticatedMessage::parse(raw).ok_or("the mail cannot be parsed")?;
        let outputs = dns.verify_dkim(&message).await;
        if outputs.is_empty() {
            return Err("the mail has no DKIM signature".into());
        }
        let mut reasons = Vec::new();
        for output in &outputs {
            let signer = output.signature().map(|s| s.d.to_ascii_lowercase());
            match (output.result(), signer) {
                (DkimResult::Pass, Some(d)) if aligned(&d, domain) => return Ok(()),
                (DkimResult::Pass, Some(d)) => {
                    reasons.push(format!("signed by {d}, not by the From domain {domain}"));
                }
                (result, d) => reasons.push(format!(
                    "DKIM {} ({})",
                    describe(result),
                    d.unwrap_or_default()
                )),
            }
        }
        Err(reasons.join("; "))
    }
}

fn describe(result: &DkimResult) -> String {
    match result {
        DkimResult::Pass => "pass".into(),
        DkimResult::Neutral(e) => format!("neutral: {e}"),
        DkimResult::Fail(e) => format!("fail: {e}"),
        DkimResult::PermError(e) => format!("permerror: {e}"),
        DkimResult::TempError(e) => format!("temperror: {e}"),
        DkimResult::None => "none".into(),
    }
}

/// DMARC's relaxed alignment, without a public-suffix list: the signing domain is the From
/// domain or a parent of it that is not a top-level domain.
fn aligned(signer: &str, from: &str) -> bool {
    signer == from || (signer.contains('.') && from.ends_with(&format!(".{signer}")))
}

/// The DNS client: the configured server, or the system's configuration.
fn authenticator(server: Option<&str>) -> Result<MessageAuthenticator, String> {
    let Some(server) = server else {
        return MessageAuthenticator::new_system_conf().map_err(|e| format!("dns: {e}"));
    };
    let addr: SocketAddr = server
        .parse()
        .map_err(|_| format!("dns_resolver {server:?} is not an address:port"))?;
    let mut udp = ConnectionConfig::udp();
    udp.port = addr.port();
    let mut tcp = ConnectionConfig::tcp();
    tcp.port = addr.port();
    let server = NameServerConfig::new(addr.ip(), true, vec![udp, tcp]);
    let config = ResolverConfig::from_name_servers(vec![server]);
    MessageAuthenticator::new(config, ResolverOpts::default()).map_err(|e| format!("dns: {e}"))
}

/// The verdict of the topmost `Authentication-Results` header from `authserv_id` (a server
/// below it in the chain could have been forged by the sender).
fn authentication_results(raw: &[u8], authserv_id: &str, domain: &str) -> Result<(), String> {
    let message = mail_parser::MessageParser::default()
        .parse(raw)
        .ok_or("the mail cannot be parsed")?;
    let header = message
        .header_values("Authentication-Results")
        .filter_map(|v| v.as_text())
        .find(|v| {
            v.split(';')
                .next()
                .is_some_and(|id| id.trim().eq_ignore_ascii_case(authserv_id))
        })
        .ok_or_else(|| format!("no Authentication-Results header from {authserv_id}"))?
        .to_ascii_lowercase();
    let results: Vec<&str> = header.split(';').skip(1).map(str::trim).collect();
    let dmarc_pass = results.iter().any(|r| r.starts_with("dmarc=pass"));
    let dkim_pass = results.iter().any(|r| {
        r.starts_with("dkim=pass")
            && r.split_whitespace().any(|w| {
                w.strip_prefix("header.d=")
                    .or_else(|| w.strip_prefix("header.i=@"))
                    .is_some_and(|d| aligned(d, domain))
            })
    });
    if dmarc_pass || dkim_pass {
        Ok(())
    } else {
        Err(format!(
            "{authserv_id} did not authenticate {domain}: {header}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alignment_accepts_the_domain_and_its_parents_only() {
        assert!(aligned("people.test", "people.test"));
        assert!(aligned("people.test", "mail.people.test"));
        assert!(!aligned("evil.test", "people.test"));
        assert!(!aligned("test", "people.test"));
        assert!(!aligned("ple.test", "people.test"));
    }

    #[test]
    fn only_the_trusted_servers_header_counts() {
        let raw = b"Authentication-Results: mx.example.org; dkim=pass header.d=people.test\r\n\
Authentication-Results: forged.example; dmarc=pass\r\nFrom: a@people.test\r\n\r\nhi\r\n";
        assert!(authentication_results(raw, "mx.example.org", "people.test").is_ok());
        assert!(authentication_results(raw, "mx.example.org", "other.test").is_err());
        let forged = b"Authentication-Results: forged.example; dmarc=pass\r\nFrom: a@people.test\r\n\r\nhi\r\n";
        assert!(authentication_results(forged, "mx.example.org", "people.test").is_err());
    }
}
