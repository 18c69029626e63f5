// The dashboard's only script: it follows the live stream of what waits for the operator,
// keeps the navigation's badges current, and reloads the list on the approvals, access and
// health pages when an item comes or goes (on any replica). Everything works without it.
"use strict";

(function () {
  const body = document.body;
  const url = body.dataset.events;
  const page = body.dataset.page;
  const live = document.getElementById("live");
  if (!url || !window.EventSource) return;
  let version = null;

  function badge(name, count) {
    for (const el of document.querySelectorAll('[data-count="' + name + '"]')) {
      el.textContent = String(count);
      el.hidden = count === 0;
    }
  }

  async function reload() {
    const response = await fetch(window.location.href, { credentials: "same-origin" });
    if (!response.ok) return;
    const doc = new DOMParser().parseFromString(await response.text(), "text/html");
    const fresh = doc.getElementById("main");
    const main = document.getElementById("main");
    if (fresh && main) main.replaceChildren(...fresh.childNodes);
  }

  const source = new EventSource(url);
  source.addEventListener("open", () => live && live.classList.add("on"));
  source.addEventListener("error", () => live && live.classList.remove("on"));
  source.addEventListener("waiting", (event) => {
    const now = JSON.parse(event.data);
    badge("approvals", now.approvals);
    badge("pairing", now.pairing);
    // The first event reloads too: an item may have come or gone between rendering this
    // page and opening the stream (an approval decided just after its redirect), and the
    // list would then never catch up.
    const changed = version !== now.version;
    version = now.version;
    if (changed && ["/", "/approvals", "/access"].includes(page)) reload();
  });
})();
