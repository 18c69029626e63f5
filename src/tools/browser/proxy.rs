//! The browser's only way out: an HTTP proxy on the gateway's loopback that Chromium is
//! pointed at (and the sandbox lets it reach, by port, nothing else). `CONNECT host:port`
//! for https, absolute-URI requests for plain http; each request's host and port is checked
//! against `[tools.browser] allowed_hosts` and every address it resolves to with the checks
//! `http_fetch` makes (`crate::hosts`), and the connection goes only to an address that
//! passed. Redirects and subresources are requests like any other, so they are checked too.
//! A refused request answers 403 and is recorded, so the tool can tell the model.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::hosts::Allowed;

/// Largest request head read before the request is refused.
const MAX_HEAD: usize = 32 * 1024;

/// One refused request: its host and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// `host:port` as asked.
    pub target: String,
    /// The check that failed.
    pub reason: String,
}

/// A running proxy; dropping it stops it (connections already open run to their end).
pub struct Proxy {
    port: u16,
    refusals: Arc<Mutex<Vec<Refusal>>>,
    task: JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    /// Listen on `127.0.0.1:0`, allowing what `allowed` allows.
    pub async fn start(allowed: Allowed) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let refusals = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&refusals);
        let task = tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let (allowed, log) = (allowed.clone(), Arc::clone(&log));
                tokio::spawn(async move {
                    if let Err(refusal) = serve(conn, &allowed).await {
                        tracing::debug!(target = %refusal.target, reason = %refusal.reason, "browser proxy refused");
                        log.lock().unwrap_or_else(|e| e.into_inner()).push(refusal);
                    }
                });
            }
        });
        Ok(Self {
            port,
            refusals,
            task,
        })
    }

    /// The port Chromium is pointed at.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The refusals recorded since the last call, oldest first.
    pub fn take_refusals(&self) -> Vec<Refusal> {
        std::mem::take(&mut *self.refusals.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// A request as the proxy needs it: where it goes and what to send there.
struct Request {
    host: String,
    port: u16,
    /// `None` for CONNECT; otherwise the head rewritten for the origin server.
    forward: Option<Vec<u8>>,
    /// Bytes read past the head (the start of a body).
    rest: Vec<u8>,
}

/// Serve one client connection: one request, then the bytes both ways. A refusal is
/// answered 403 and returned.
async fn serve(mut conn: TcpStream, allowed: &Allowed) -> Result<(), Refusal> {
    let request = match read_request(&mut conn).await {
        Ok(Some(request)) => request,
        Ok(None) => return Ok(()),
        Err(reason) => {
            let _ = conn.write_all(&forbidden(&reason)).await;
            return Err(Refusal {
                target: "?".into(),
                reason,
            });
        }
    };
    let target = format!("{}:{}", request.host, request.port);
    let mut upstream = match connect(allowed, &request.host, request.port).await {
        Ok(upstream) => upstream,
        Err(reason) => {
            let _ = conn.write_all(&forbidden(&reason)).await;
            return Err(Refusal { target, reason });
        }
    };
    let sent = match &request.forward {
        None => conn
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await
            .is_ok(),
        Some(head) => upstream.write_all(head).await.is_ok(),
    };
    if sent && upstream.write_all(&request.rest).await.is_ok() {
        let _ = tokio::io::copy_bidirectional(&mut conn, &mut upstream).await;
    }
    Ok(())
}

/// Connect to the first address of `host:port` that passed every check.
async fn connect(allowed: &Allowed, host: &str, port: u16) -> Result<TcpStream, String> {
    let addrs: Vec<SocketAddr> = allowed.addresses(host, port).await?;
    let mut last = String::from("no address");
    for addr in addrs {
        match TcpStream::connect(addr).await {
            Ok(stream) => return Ok(stream),
            Err(e) => last = format!("connecting to {addr} failed: {e}"),
        }
    }
    Err(last)
}

fn forbidden(reason: &str) -> Vec<u8> {
    let body = format!("switchboard refused this request: {reason}\n");
    format!(
        "HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Read one request head; `None` when the client closed before sending one.
async fn read_request(conn: &mut TcpStream) -> Result<Option<Request>, String> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        if buf.len() > MAX_HEAD {
            return Err("request head too large".into());
        }
        let n = conn
            .read(&mut chunk)
            .await
            .map_err(|e| format!("reading the request: {e}"))?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let rest = buf.split_off(end);
    let head = String::from_utf8(buf).map_err(|_| "request head is not text".to_owned())?;
    parse_head(&head, rest).map(Some)
}

/// The target of a proxy request head, and the head to forward (origin-form, one request
/// per connection: a kept-alive proxy connection could carry a next request to another
/// host past the check).
fn parse_head(head: &str, rest: Vec<u8>) -> Result<Request, String> {
    let mut lines = head.split("\r\n");
    let first = lines.next().unwrap_or_default();
    let mut words = first.split(' ');
    let (Some(method), Some(target), Some(version)) = (words.next(), words.next(), words.next())
    else {
        return Err(format!("malformed request line {first:?}"));
    };
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = split_authority(target, None)?;
        return Ok(Request {
            host,
            port,
            forward: None,
            rest,
        });
    }
    let Some(after) = target.strip_prefix("http://") else {
        return Err(format!(
            "only http:// and CONNECT are proxied, not {target:?}"
        ));
    };
    let (authority, path) = match after.find(['/', '?']) {
        Some(i) => (&after[..i], &after[i..]),
        None => (after, "/"),
    };
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_owned()
    };
    let (host, port) = split_authority(authority, Some(80))?;
    let mut forward = format!("{method} {path} {version}\r\n");
    for line in lines.filter(|l| !l.is_empty()) {
        let name = line.split(':').next().unwrap_or_default().trim();
        let hop = [
            "connection",
            "proxy-connection",
            "keep-alive",
            "proxy-authorization",
        ];
        if !hop.iter().any(|h| name.eq_ignore_ascii_case(h)) {
            forward.push_str(line);
            forward.push_str("\r\n");
        }
    }
    forward.push_str("connection: close\r\n\r\n");
    Ok(Request {
        host,
        port,
        forward: Some(forward.into_bytes()),
        rest,
    })
}

/// `host:port` (or `[v6]:port`, or a bare host with `default`), the host lowercased.
fn split_authority(text: &str, default: Option<u16>) -> Result<(String, u16), String> {
    let text = text.rsplit_once('@').map_or(text, |(_, host)| host);
    let (host, port) = match text.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => {
            let port = port
                .parse::<u16>()
                .map_err(|_| format!("bad port in {text:?}"))?;
            (host, port)
        }
        _ => (
            text,
            default.ok_or_else(|| format!("{text:?} names no port"))?,
        ),
    };
    if host.is_empty() {
        return Err(format!("{text:?} names no host"));
    }
    Ok((host.to_ascii_lowercase(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_absolute_uri_request_is_forwarded_in_origin_form_and_closed_after_one_request() {
        let head = "GET http://Example.com:8080/a?b=1 HTTP/1.1\r\nHost: example.com:8080\r\nProxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n";
        let req = parse_head(head, Vec::new()).unwrap();
        assert_eq!((req.host.as_str(), req.port), ("example.com", 8080));
        let forward = String::from_utf8(req.forward.unwrap()).unwrap();
        assert!(forward.starts_with("GET /a?b=1 HTTP/1.1\r\n"), "{forward}");
        assert!(
            !forward.to_ascii_lowercase().contains("keep-alive"),
            "{forward}"
        );
        assert!(forward.ends_with("connection: close\r\n\r\n"), "{forward}");
    }

    #[test]
    fn connect_names_its_host_and_port_and_other_schemes_are_refused() {
        let req = parse_head("CONNECT [::1]:443 HTTP/1.1\r\n\r\n", Vec::new()).unwrap();
        assert_eq!((req.host.as_str(), req.port), ("[::1]", 443));
        assert!(req.forward.is_none());
        assert!(parse_head("GET ftp://x/ HTTP/1.1\r\n\r\n", Vec::new()).is_err());
        assert!(parse_head("GET /relative HTTP/1.1\r\n\r\n", Vec::new()).is_err());
    }
}
