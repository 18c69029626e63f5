//! What runs inside the page: the reader that turns the DOM into text with numbered
//! references to its links, buttons and fields (kept in the page as
//! `window.__switchboardRefs`, so a later click or type names one by number), and the
//! small scripts the actions use. Each script is one expression evaluated by
//! `Runtime.evaluate` and returns JSON.

use serde_json::Value;

/// The reader: `{title, url, text, refs: [{kind, password}]}` for the visible page.
pub const READ: &str = r#"(() => {
  const refs = [], kinds = [], out = [];
  const wanted = 'a[href],button,input,select,textarea,[role=button],[role=link],[contenteditable=true],summary';
  const skip = new Set(['SCRIPT','STYLE','NOSCRIPT','TEMPLATE','HEAD','SVG','IFRAME']);
  const clean = s => (s || '').replace(/\s+/g, ' ').trim();
  const label = el => clean(el.getAttribute('aria-label') || el.innerText || el.getAttribute('placeholder')
    || el.getAttribute('title') || el.getAttribute('name') || el.getAttribute('alt') || '').slice(0, 100);
  const shown = el => { const s = getComputedStyle(el);
    return s.display !== 'none' && s.visibility !== 'hidden' && (el.getClientRects().length > 0 || s.display === 'contents'); };
  const describe = (el, n) => {
    const tag = el.tagName;
    if (tag === 'A') return `[${n}] link "${label(el)}" -> ${el.href}`;
    if (tag === 'SELECT') {
      const opts = [...el.options].map(o => (o.selected ? '*' : '') + JSON.stringify(clean(o.text))).join(', ');
      return `[${n}] select "${label(el) || el.name}" options: ${opts}`;
    }
    if (tag === 'TEXTAREA') return `[${n}] field (textarea) "${label(el)}" value: ${JSON.stringify(el.value)}`;
    if (tag === 'INPUT') {
      const t = (el.type || 'text').toLowerCase();
      if (['submit','button','reset','image'].includes(t)) return `[${n}] button "${clean(el.value) || label(el)}"`;
      if (t === 'checkbox' || t === 'radio') return `[${n}] ${t} "${label(el)}" ${el.checked ? 'checked' : 'unchecked'}`;
      if (t === 'hidden') return null;
      const value = t === 'password' ? (el.value ? '(filled)' : '(empty)') : JSON.stringify(el.value);
      return `[${n}] field (${t}) "${label(el) || el.name}" value: ${value}`;
    }
    if (el.isContentEditable) return `[${n}] field (editable) "${label(el)}"`;
    return `[${n}] button "${label(el)}"`;
  };
  const walk = node => {
    if (node.nodeType === 3) { const t = clean(node.textContent); if (t) out.push(t + ' '); return; }
    if (node.nodeType !== 1 || skip.has(node.tagName.toUpperCase()) || !shown(node)) return;
    const el = node, display = getComputedStyle(el).display;
    const block = !display.startsWith('inline') && display !== 'contents';
    if (block) out.push('\n');
    if (el.matches(wanted)) {
      const line = describe(el, refs.length + 1);
      if (line !== null) {
        refs.push(el);
        kinds.push({ password: el.tagName === 'INPUT' && (el.type || '').toLowerCase() === 'password',
                     kind: el.tagName.toLowerCase() });
        out.push('\n' + line + '\n');
        if (el.tagName !== 'SELECT' && !el.matches('[contenteditable=true]') && el.children.length < 4) return;
      }
    }
    if (/^H[1-6]$/.test(el.tagName)) out.push('#'.repeat(+el.tagName[1]) + ' ');
    for (const child of el.childNodes) walk(child);
    if (block) out.push('\n');
  };
  if (document.body) walk(document.body);
  window.__switchboardRefs = refs;
  const text = out.join('').split('\n').map(l => l.trim()).filter(l => l).join('\n');
  return { title: document.title, url: location.href, text, refs: kinds };
})()"#;

/// A script running `body` with `el` bound to reference `n`, or answering an error object
/// when there is no such reference.
pub fn on_ref(n: u64, body: &str) -> String {
    format!(
        "(() => {{ const el = (window.__switchboardRefs || [])[{n} - 1]; \
         if (!el || !el.isConnected) return {{ error: 'no element [{n}] on this page: read the page again' }}; \
         {body} }})()"
    )
}

/// Scroll reference `n` into view and answer the middle of its box (for a real click).
pub fn center(n: u64) -> String {
    on_ref(
        n,
        "el.scrollIntoView({block: 'center', inline: 'center'}); const r = el.getBoundingClientRect(); \
         return { x: r.left + r.width / 2, y: r.top + r.height / 2 };",
    )
}

/// Focus reference `n` (a field) and select its content, so typed text replaces it.
pub fn focus(n: u64) -> String {
    on_ref(
        n,
        "el.scrollIntoView({block: 'center'}); el.focus(); if (el.select) el.select(); \
         return { password: el.tagName === 'INPUT' && (el.type || '').toLowerCase() === 'password' };",
    )
}

/// Choose the option of select `n` whose text or value is `choice`.
pub fn select(n: u64, choice: &str) -> String {
    let choice = Value::String(choice.to_owned()).to_string();
    on_ref(
        n,
        &format!(
            "if (el.tagName !== 'SELECT') return {{ error: '[{n}] is not a select' }}; \
             const want = {choice}; const opt = [...el.options].find(o => o.value === want || o.text.trim() === want); \
             if (!opt) return {{ error: 'no option ' + JSON.stringify(want) + ' in [{n}]' }}; \
             el.value = opt.value; el.dispatchEvent(new Event('input', {{bubbles: true}})); \
             el.dispatchEvent(new Event('change', {{bubbles: true}})); return {{ chosen: opt.text.trim() }};"
        ),
    )
}

/// Scroll the page by one screen, `down` or up.
pub fn scroll(down: bool) -> String {
    let sign = if down { "" } else { "-" };
    format!(
        "(() => {{ window.scrollBy(0, {sign}window.innerHeight * 0.9); return {{ y: window.scrollY }}; }})()"
    )
}
