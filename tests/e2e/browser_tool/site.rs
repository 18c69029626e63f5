//! The pages the browser tool's tests open: a small HTTP/1.1 server on 127.0.0.1 that
//! answers by path and counts every request it gets, so a test can say a refused request
//! never reached it.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One answer: status line, extra headers, body (HTML unless a header says otherwise).
pub struct Page {
    pub status: &'static str,
    pub headers: Vec<String>,
    pub body: String,
}

impl Page {
    /// A 200 HTML page.
    pub fn html(body: impl Into<String>) -> Self {
        Self {
            status: "200 OK",
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// A 302 to `location`.
    pub fn redirect(location: &str) -> Self {
        Self {
            status: "302 Found",
            headers: vec![format!("location: {location}")],
            body: String::new(),
        }
    }

    /// The same page with one more header.
    pub fn with_header(mut self, header: impl Into<String>) -> Self {
        self.headers.push(header.into());
        self
    }
}

/// The request a route sees: its path (with query) and its `Cookie` header.
pub struct Asked {
    pub path: String,
    pub cookie: String,
}

type Route = dyn Fn(&Asked) -> Page + Send + Sync;

/// A running site; `hits` lists every path requested, in order.
#[derive(Clone)]
pub struct Site {
    pub port: u16,
    hits: Arc<Mutex<Vec<String>>>,
}

impl Site {
    /// Serve `route` on a free loopback port.
    pub async fn start(route: impl Fn(&Asked) -> Page + Send + Sync + 'static) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(Mutex::new(Vec::new()));
        let (log, route): (_, Arc<Route>) = (Arc::clone(&hits), Arc::new(route));
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                tokio::spawn(answer(conn, Arc::clone(&route), Arc::clone(&log)));
            }
        });
        Self { port, hits }
    }

    /// Every path requested so far.
    pub fn hits(&self) -> Vec<String> {
        self.hits.lock().unwrap().clone()
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

async fn answer(mut conn: tokio::net::TcpStream, route: Arc<Route>, log: Arc<Mutex<Vec<String>>>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let path = head.split(' ').nth(1).unwrap_or("/").to_owned();
    let cookie = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("cookie")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_default();
    log.lock().unwrap().push(path.clone());
    let page = route(&Asked { path, cookie });
    let mut reply = format!(
        "HTTP/1.1 {}\r\ncontent-length: {}\r\nconnection: close\r\n",
        page.status,
        page.body.len()
    );
    if !page
        .headers
        .iter()
        .any(|h| h.to_ascii_lowercase().starts_with("content-type"))
    {
        reply.push_str("content-type: text/html; charset=utf-8\r\n");
    }
    for header in &page.headers {
        reply.push_str(header);
        reply.push_str("\r\n");
    }
    reply.push_str("\r\n");
    reply.push_str(&page.body);
    let _ = conn.write_all(reply.as_bytes()).await;
    let _ = conn.shutdown().await;
}
