//! The `browser` tool against real Chromium, started by the gateway in the tool sandbox and
//! reaching pages only through its proxy. Pages are served by the test on 127.0.0.1
//! (`site.rs`), allowed with `private = true` for these tests only. Without Chromium the
//! tests are skipped with a NOTICE, unless `SWITCHBOARD_REQUIRE_BROWSER=1` (CI).

mod guarded;
mod site;

use serde_json::{Value, json};

use crate::helpers::TestApp;
use crate::sandbox::call;
use site::{Page, Site};

/// Whether Chromium is here; `false` (with a NOTICE) skips a test, unless it is required.
pub(super) fn chromium_present() -> bool {
    let present = std::path::Path::new("/usr/lib/chromium/chromium-headless-shell").exists();
    if !present {
        let required = std::env::var("SWITCHBOARD_REQUIRE_BROWSER").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "Chromium's headless shell is required (SWITCHBOARD_REQUIRE_BROWSER=1) but missing; run tests/browser/install.sh"
        );
        eprintln!("NOTICE: chromium-headless-shell not found; skipping the browser tool test");
    }
    present
}

/// A gateway whose browser may reach `entries` (TOML array items), in autonomous mode. An
/// action's `timeout_secs` stays under the tests' 15 s wait for an answer, so a slow action
/// ends in its own error rather than in the test's timeout.
async fn gateway(entries: &str, extra: &str) -> TestApp {
    TestApp::spawn_with(&format!(
        "[tools]\nenabled = [\"browser\", \"file_read\"]\n\
         [tools.browser]\nallowed_hosts = [{entries}]\ntimeout_secs = 12\n{extra}\n\
         [policy]\nmode = \"autonomous\"\n"
    ))
    .await
}

/// The `allowed_hosts` entry for `site` on 127.0.0.1.
pub(super) fn private(site: &Site) -> String {
    format!("{{ host = \"127.0.0.1:{}\", private = true }}", site.port)
}

/// One browser action in `chat`; the tool message the model got back.
async fn act(app: &TestApp, chat: &str, args: Value) -> String {
    call(app, chat, "browser", args).await
}

/// The reference number of the line of `page` that mentions `label`.
fn reference(page: &str, label: &str) -> u64 {
    let line = page
        .lines()
        .find(|l| l.starts_with('[') && l.contains(label))
        .unwrap_or_else(|| panic!("no reference for {label:?} in:\n{page}"));
    line[1..line.find(']').unwrap()].parse().unwrap()
}

fn home_site_route(asked: &site::Asked) -> Page {
    match asked.path.split('?').next().unwrap_or_default() {
        "/" => Page::html(
            "<title>Home</title><h1>Welcome home</h1><p>Some text to read.</p>\
             <a href=\"/form\">To the form</a>",
        ),
        "/form" => Page::html(
            "<title>Form</title><form action=\"/done\" method=\"get\">\
             <label>Name <input name=\"who\"></label>\
             <select name=\"color\"><option>red</option><option>green</option></select>\
             <button type=\"submit\">Send it</button></form>",
        ),
        "/done" => Page::html(format!("<title>Done</title><p>Got {}</p>", asked.path)),
        _ => Page::html("<title>Missing</title>nothing here"),
    }
}

#[tokio::test]
async fn the_browser_opens_reads_follows_a_link_and_submits_a_form() {
    if !chromium_present() {
        return;
    }
    let site = Site::start(home_site_route).await;
    let app = gateway(&private(&site), "").await;
    let home = act(&app, "b1", json!({"action": "open", "url": site.url("/")})).await;
    assert!(
        home.contains("title: Home") && home.contains("Welcome home"),
        "{home}"
    );
    let link = reference(&home, "To the form");
    let form = act(&app, "b1", json!({"action": "click", "ref": link})).await;
    assert!(form.contains("title: Form"), "{form}");
    let field = reference(&form, "field (text)");
    let typed = act(
        &app,
        "b1",
        json!({"action": "type", "ref": field, "text": "Ada"}),
    )
    .await;
    assert!(typed.contains("\"Ada\""), "{typed}");
    let select = reference(&typed, "select");
    let chosen = act(
        &app,
        "b1",
        json!({"action": "select", "ref": select, "option": "green"}),
    )
    .await;
    assert!(chosen.contains("*\"green\""), "{chosen}");
    let send = reference(&chosen, "Send it");
    let done = act(&app, "b1", json!({"action": "click", "ref": send})).await;
    assert!(
        done.contains("Got /done?who=Ada&amp;color=green")
            || done.contains("Got /done?who=Ada&color=green"),
        "{done}"
    );
    let back = act(&app, "b1", json!({"action": "back"})).await;
    assert!(back.contains("title: Form"), "{back}");
    let shot = act(&app, "b1", json!({"action": "screenshot"})).await;
    assert!(shot.contains("screenshots/page-"), "{shot}");
    let sent = app.llm.requests().last().unwrap().to_string();
    assert!(!sent.contains("image_url"), "no vision, no image: {sent}");
    app.shutdown().await;
}

#[tokio::test]
async fn a_screenshot_reaches_a_model_that_reads_images() {
    if !chromium_present() {
        return;
    }
    let site = Site::start(home_site_route).await;
    let config = format!(
        "[tools]\nenabled = [\"browser\"]\n[tools.browser]\nallowed_hosts = [{}]\n\
         timeout_secs = 12\n[policy]\nmode = \"autonomous\"\n",
        private(&site)
    );
    let builder = TestApp::builder().config(&config);
    let app = builder.edit(|c| c.provider.vision = true).start().await;
    act(&app, "v1", json!({"action": "open", "url": site.url("/")})).await;
    let shot = act(&app, "v1", json!({"action": "screenshot"})).await;
    assert!(shot.contains("screenshots/page-"), "{shot}");
    let requests = app.llm.requests();
    let messages = requests.last().unwrap()["messages"].as_array().unwrap();
    let tool = messages.iter().rposition(|m| m["role"] == "tool").unwrap();
    let parts = messages[tool + 1]["content"]
        .as_array()
        .expect("images after the result");
    let url = parts
        .iter()
        .find_map(|p| p["image_url"]["url"].as_str())
        .expect("an image part");
    let data = url.strip_prefix("data:image/png;base64,").expect("a PNG");
    use base64::Engine;
    let png = base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert!((width, height) > (0, 0) && u64::from(width) * u64::from(height) <= 1568 * 1568);
    app.shutdown().await;
}

#[tokio::test]
async fn requests_to_hosts_not_allowed_are_refused_at_the_proxy_and_reported() {
    if !chromium_present() {
        return;
    }
    let elsewhere = Site::start(|_| Page::html("should never be asked")).await;
    let app_port = std::sync::Arc::new(std::sync::Mutex::new(0u16));
    let gateway_port = std::sync::Arc::clone(&app_port);
    let other = elsewhere.port;
    let site = Site::start(move |asked| {
        let gw = *gateway_port.lock().unwrap();
        match asked.path.as_str() {
            "/away" => Page::redirect(&format!("http://127.0.0.1:{other}/redirected")),
            "/metadata" => Page::redirect("http://169.254.169.254/latest/meta-data/"),
            _ => Page::html(format!(
                "<title>Mixed</title><p>main text</p>\
                 <img src=\"http://127.0.0.1:{other}/pixel.png\">\
                 <img src=\"http://169.254.169.254/latest/meta-data/\">\
                 <script>fetch('http://127.0.0.1:{gw}/healthz').catch(() => {{}});\
                 fetch('http://127.0.0.1:{other}/fetched').catch(() => {{}});</script>"
            )),
        }
    })
    .await;
    let app = gateway(&private(&site), "").await;
    *app_port.lock().unwrap() = app.gateway().addr().port();
    let gw = app.gateway().addr().port();
    let mixed = act(&app, "r1", json!({"action": "open", "url": site.url("/")})).await;
    assert!(mixed.contains("main text"), "{mixed}");
    for target in [
        format!("refused: 127.0.0.1:{other}"),
        format!("refused: 127.0.0.1:{gw}"),
        "refused: 169.254.169.254:80".to_owned(),
    ] {
        assert!(mixed.contains(&target), "{target} in:\n{mixed}");
    }
    let away = act(
        &app,
        "r1",
        json!({"action": "open", "url": site.url("/away")}),
    )
    .await;
    assert!(
        away.contains(&format!("refused: 127.0.0.1:{other}")),
        "{away}"
    );
    let metadata = act(
        &app,
        "r1",
        json!({"action": "open", "url": site.url("/metadata")}),
    )
    .await;
    assert!(
        metadata.contains("refused: 169.254.169.254:80"),
        "{metadata}"
    );
    let direct = act(
        &app,
        "r1",
        json!({"action": "open", "url": format!("http://127.0.0.1:{gw}/metrics")}),
    )
    .await;
    assert!(
        direct.contains(&format!("port {gw}")) && !direct.contains("switchboard_"),
        "{direct}"
    );
    assert_eq!(
        elsewhere.hits(),
        Vec::<String>::new(),
        "the host not allowed was reached"
    );
    app.shutdown().await;
}

#[tokio::test]
async fn a_name_resolving_to_loopback_without_private_is_refused() {
    if !chromium_present() {
        return;
    }
    let site = Site::start(|_| Page::html("<title>Loopback</title>reached")).await;
    let app = gateway(&format!("\"localhost:{}\"", site.port), "").await;
    let out = act(
        &app,
        "l1",
        json!({"action": "open", "url": format!("http://localhost:{}/", site.port)}),
    )
    .await;
    assert!(
        out.contains("loopback") && !out.contains("title: Loopback"),
        "{out}"
    );
    assert!(site.hits().is_empty(), "{:?}", site.hits());
    app.shutdown().await;
}

#[tokio::test]
async fn a_second_conversation_does_not_see_the_first_ones_cookies() {
    if !chromium_present() {
        return;
    }
    let site = Site::start(|asked| match asked.path.as_str() {
        "/set" => Page::html("<title>Set</title>cookie set")
            .with_header("set-cookie: sid=first-secret; path=/"),
        _ => Page::html(format!(
            "<title>Show</title><p>cookie=[{}]</p>",
            asked.cookie
        )),
    })
    .await;
    let app = gateway(&private(&site), "").await;
    act(
        &app,
        "c1",
        json!({"action": "open", "url": site.url("/set")}),
    )
    .await;
    let own = act(
        &app,
        "c1",
        json!({"action": "open", "url": site.url("/show")}),
    )
    .await;
    assert!(own.contains("cookie=[sid=first-secret]"), "{own}");
    let other = act(
        &app,
        "c2",
        json!({"action": "open", "url": site.url("/show")}),
    )
    .await;
    assert!(other.contains("cookie=[]"), "{other}");
    app.shutdown().await;
}

#[tokio::test]
async fn a_browser_killed_by_its_memory_cap_ends_the_action_with_an_error() {
    if !chromium_present() {
        return;
    }
    let site = Site::start(|_| {
        Page::html(
            "<title>Hog</title><script>const keep = []; \
             setInterval(() => { for (let i = 0; i < 40; i++) keep.push(new Array(1 << 20).fill(Math.random())); }, 10);</script>hog",
        )
    })
    .await;
    let app = gateway(&private(&site), "memory_mb = 300").await;
    let started = std::time::Instant::now();
    let mut seen = vec![act(&app, "m1", json!({"action": "open", "url": site.url("/")})).await];
    // On a loaded machine the page may still be filling its cap when an action times out.
    while !seen.last().unwrap().contains("memory cap") && seen.len() < 10 {
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        seen.push(act(&app, "m1", json!({"action": "read"})).await);
    }
    let last = seen.last().unwrap();
    assert!(
        last.starts_with("error:")
            && (last.contains("crashed") || last.contains("exited"))
            && last.contains("memory cap"),
        "{seen:#?}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(90),
        "{:?}",
        started.elapsed()
    );
    app.shutdown().await;
}
