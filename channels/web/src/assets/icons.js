// The gateway's icons as inline SVG, so the page needs no emoji font: a kiosk, a server's
// browser or headless Chromium without one would show ⏸ 🔐 ⏳ 📊 as empty boxes. The core
// writes the same characters to every platform (Slack, Telegram and Discord draw them); here
// each known one is swapped for its drawing, outside code, where text must stay as written.
// Each drawing keeps its character as its <title>: read aloud, in a tooltip, and in
// textContent. Characters the host's ordinary fonts have (✓ ✕ → ☐ ☑ ●) are left alone, and
// so is any other emoji an answer contains, which is the model's text, not the page's.
(function () {
  'use strict';
  var NS = 'http://www.w3.org/2000/svg';
  var RED = '#dc2626', GREEN = '#16a34a', AMBER = '#b45309', BLUE = '#2563eb', GREY = '#6b7280';

  // Each shape: [tag, attributes]; strokes are round and 1.6 wide unless they say otherwise.
  function line(d, color, width) {
    return ['path', { d: d, fill: 'none', stroke: color, 'stroke-width': width || 1.6 }];
  }
  function solid(d, color) { return ['path', { d: d, fill: color }]; }
  function circle(r, color) {
    return ['circle', { cx: 8, cy: 8.5, r: r, fill: 'none', stroke: color, 'stroke-width': 1.6 }];
  }

  var HOURGLASS = [line('M4 2h8M4 14h8M5 2c0 3.5 3 4 3 6s-3 2.5-3 6M11 2c0 3.5-3 4-3 6s3 2.5 3 6', AMBER)];
  var CLOCK = [circle(5.5, BLUE), line('M8 5.5v3l2 1.5', BLUE)];
  var ICONS = {
    '\u2705': [solid('M3 1h10a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H3a2 2 0 0 1-2-2V3a2 2 0 0 1 2-2z', GREEN),
      line('M4.5 8.3l2.4 2.4 4.6-5', '#fff', 2)],                               // ✅
    '\u274c': [line('M4 4l8 8M12 4l-8 8', RED, 2.2)],                             // ❌
    '\u23f3': HOURGLASS,                                                        // ⏳
    '\u231b': HOURGLASS,                                                        // ⌛
    '\u{1f4ce}': [line('M11 4.5l-5.2 5.2a1.6 1.6 0 0 0 2.3 2.3l5.3-5.3a3 3 0 0 0-4.2-4.2L3.6 8.1a4.3 4.3 0 0 0 6.1 6.1l3.8-3.8', GREY)], // 📎
    '\u23ea': [solid('M8 3v10L2 8zM15 3v10L9 8z', BLUE)],                       // ⏪
    '\u23f8': [solid('M4 3h3v10H4zM9 3h3v10H9z', AMBER)],                        // ⏸
    '\u23f9': [solid('M3.5 3.5h9v9h-9z', GREY)],                                 // ⏹
    '\u25b6': [solid('M4.5 2.5l9 5.5-9 5.5z', BLUE)],                           // ▶
    '\u23f0': CLOCK.concat([line('M2.5 3.5l2-2M13.5 3.5l-2-2', BLUE)]),          // ⏰
    '\u{1f552}': CLOCK,                                                         // 🕒
    '\u{1f504}': [line('M13 8.5a5 5 0 1 1-1.6-3.7M13.2 2v3.2H10', BLUE)],       // 🔄
    '\u{1f500}': [line('M1.5 4.5h3c3.5 0 3.5 7 7 7h3M1.5 11.5h3c3.5 0 3.5-7 7-7h3M12.5 2.5l2 2-2 2M12.5 9.5l2 2-2 2', BLUE)], // 🔀
    '\u{1f4cb}': [line('M4.5 3h-1v11.5h9V3h-1M6 1.8h4v2.4H6zM5.8 8h4.4M5.8 10.8h4.4', GREY)], // 📋
    '\u{1f3a4}': [line('M8 1.5a2 2 0 0 1 2 2v4a2 2 0 0 1-4 0v-4a2 2 0 0 1 2-2zM4 7.5a4 4 0 0 0 8 0M8 11.5v3M5.5 14.5h5', GREY)], // 🎤
    '\u2b1c': [line('M3 3h10v10H3z', GREY, 1.4)],                               // ⬜
    '\u26a0': [solid('M8 1.5l7 12.5H1z', '#f59e0b'), line('M8 6v4M8 11.8v.2', '#1f2937', 1.8)], // ⚠
    '\u{1f9f9}': [line('M13.5 1.5L8.5 7M5.5 7.5l3.5 3.5M5.5 7.5c-2 1-3.4 3.6-4 7 3.4-.6 6-2 7.5-3.5M4 12l1.5-1.5', AMBER)], // 🧹
    '\u{1f6d1}': [solid('M5.3 1h5.4L15 5.3v5.4L10.7 15H5.3L1 10.7V5.3z', RED), line('M4.5 8h7', '#fff', 2)], // 🛑
    '\u{1f6ab}': [circle(6, RED), line('M3.8 4.3l8.4 8.4', RED)],               // 🚫
    '\u{1f5d1}': [line('M2.5 4h11M6 4V2.3h4V4M4 4l.8 10.2h6.4L12 4M6.6 6.5v5M9.4 6.5v5', GREY)], // 🗑
    '\u{1f510}': [line('M5.2 7V5a2.8 2.8 0 0 1 5.6 0v2', AMBER), solid('M3 7h10v7.5H3z', AMBER),
      solid('M7.2 9.5h1.6v3H7.2z', '#fff')],                                    // 🔐
    '\u{1f4ca}': [line('M1.5 14.5h13', GREY), solid('M3 8h2.5v6H3zM7 3.5h2.5V14H7zM11 10h2.5v4H11z', BLUE)], // 📊
    '\u{1f195}': [solid('M8 1.3l1.8 4.3 4.6.4-3.5 3 1.1 4.5L8 11.1l-4 2.4 1.1-4.5-3.5-3 4.6-.4z', BLUE)] // 🆕
  };
  var VARIATION = '\ufe0f';
  var WANTED = new RegExp('[' + Object.keys(ICONS).join('') + ']', 'u');

  function draw(char) {
    var svg = document.createElementNS(NS, 'svg');
    svg.setAttribute('class', 'icon');
    svg.setAttribute('viewBox', '0 0 16 16');
    svg.setAttribute('role', 'img');
    var title = document.createElementNS(NS, 'title');
    title.textContent = char;
    svg.appendChild(title);
    ICONS[char].forEach(function (shape) {
      var el = document.createElementNS(NS, shape[0]);
      Object.keys(shape[1]).forEach(function (name) { el.setAttribute(name, shape[1][name]); });
      if (el.getAttribute('stroke')) {
        el.setAttribute('stroke-linecap', 'round');
        el.setAttribute('stroke-linejoin', 'round');
      }
      svg.appendChild(el);
    });
    return svg;
  }

  // Swap one text node's known characters for their drawings.
  function swap(node) {
    var text = node.nodeValue;
    if (!WANTED.test(text)) return;
    var parts = document.createDocumentFragment();
    var plain = '';
    for (var i = 0; i < text.length;) {
      var char = String.fromCodePoint(text.codePointAt(i));
      i += char.length;
      if (!ICONS[char]) { plain += char; continue; }
      if (text[i] === VARIATION) i += 1;
      if (plain) { parts.appendChild(document.createTextNode(plain)); plain = ''; }
      parts.appendChild(draw(char));
    }
    if (plain) parts.appendChild(document.createTextNode(plain));
    node.replaceWith(parts);
  }

  // Draw the icons in `root`'s text, except inside code, an icon already drawn, or a
  // message the person typed (shown exactly as typed).
  function iconize(root) {
    var walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
      acceptNode: function (node) {
        var skip = node.parentElement && node.parentElement.closest('code, pre, svg, .typed');
        return skip ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT;
      }
    });
    var found = [];
    while (walker.nextNode()) found.push(walker.currentNode);
    found.forEach(swap);
  }

  // Set `el`'s text to `text` with its icons drawn.
  function setText(el, text) {
    el.textContent = text;
    iconize(el);
  }

  window.SwitchboardIcons = { draw: draw, iconize: iconize, setText: setText };
})();
