// Switchboard web chat client. The server renders every message to safe HTML; this script
// only places it (upsert by id), adds copy buttons to code blocks and real buttons under
// messages, and keeps a WebSocket open: it reconnects with backoff and resends the frames the
// server has not acknowledged, reusing their ids so nothing is stored or shown twice. Files
// (the Attach button, or dropped on the chat) are uploaded first, one POST each, shown as
// chips; the next message names them by the ids the server answered.
(function () {
  'use strict';

  var log = document.getElementById('log');
  var input = document.getElementById('input');
  var statusEl = document.getElementById('status');
  var banner = document.getElementById('banner');
  var typing = document.getElementById('typing');
  var chips = document.getElementById('chips');
  var picker = document.getElementById('file');
  var files = []; // {chip, name, id (once uploaded), failed}
  var nodes = new Map(); // message id -> element
  var pending = new Map(); // client frame id -> frame not yet acknowledged
  var presses = new Map(); // button press id -> id of the message carrying the button
  var ws = null;
  var attempt = 0;
  var maxChars = 8000;
  var typingTimer = null;
  var NEW_COMMAND = /^\s*\/(new|reset)(@\S*)?(\s|$)/i;
  var icons = window.SwitchboardIcons; // icons.js: drawn icons instead of emoji

  // `el` shows a paperclip and `text` (a file name, never iconized).
  function clipped(el, text) {
    el.replaceChildren(icons.draw('\u{1f4ce}'), ' ' + text);
  }

  function uuid() {
    if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
    var b = crypto.getRandomValues(new Uint8Array(16));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    var h = Array.prototype.map.call(b, function (x) { return x.toString(16).padStart(2, '0'); }).join('');
    return [h.slice(0, 8), h.slice(8, 12), h.slice(12, 16), h.slice(16, 20), h.slice(20)].join('-');
  }

  function setStatus(text, kind) {
    statusEl.textContent = text;
    statusEl.className = 'status' + (kind ? ' ' + kind : '');
  }

  function showBanner(text) {
    banner.textContent = text;
    banner.hidden = false;
  }

  function nearBottom() {
    return log.scrollHeight - log.scrollTop - log.clientHeight < 80;
  }

  function scrollDown(was) {
    if (was) log.scrollTop = log.scrollHeight;
  }

  function copyText(text, button) {
    function done() {
      button.textContent = 'Copied';
      setTimeout(function () { button.textContent = 'Copy'; }, 1500);
    }
    function fallback() {
      var area = document.createElement('textarea');
      area.value = text;
      document.body.appendChild(area);
      area.select();
      try { document.execCommand('copy'); done(); } catch (e) { /* nothing more to try */ }
      area.remove();
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, fallback);
    } else {
      fallback();
    }
  }

  function decorateCode(body) {
    body.querySelectorAll('pre').forEach(function (pre) {
      var wrap = document.createElement('div');
      wrap.className = 'code';
      pre.replaceWith(wrap);
      wrap.appendChild(pre);
      var button = document.createElement('button');
      button.type = 'button';
      button.className = 'copy';
      button.textContent = 'Copy';
      button.addEventListener('click', function () { copyText(pre.textContent, button); });
      wrap.appendChild(button);
    });
  }

  // Fill `el` with message `m`. `m.html` comes from the server's renderer, never from input.
  function fill(el, m) {
    var body = document.createElement('div');
    body.className = 'body';
    body.innerHTML = m.html;
    decorateCode(body);
    icons.iconize(body);
    el.replaceChildren(body);
    if (m.buttons && m.buttons.length) {
      var row = document.createElement('div');
      row.className = 'buttons';
      m.buttons.forEach(function (b) {
        var button = document.createElement('button');
        button.type = 'button';
        icons.setText(button, b.label);
        button.addEventListener('click', function () { press(m.id, b.payload, row); });
        row.appendChild(button);
      });
      el.appendChild(row);
    }
    if (m.notice) setNotice(el, m.notice);
  }

  function setNotice(el, text) {
    var notice = el.querySelector(':scope > .notice');
    if (!notice) {
      notice = document.createElement('div');
      notice.className = 'notice';
      el.appendChild(notice);
    }
    icons.setText(notice, text);
  }

  function element(id, role) {
    var el = nodes.get(id);
    if (!el) {
      el = document.createElement('article');
      el.className = 'msg ' + role;
      el.dataset.id = id;
      nodes.set(id, el);
      log.appendChild(el);
    }
    return el;
  }

  function upsert(m, reorder) {
    var el = nodes.get(m.id);
    if (el && reorder) log.appendChild(el);
    el = element(m.id, m.role);
    el.classList.remove('pending', 'failed');
    fill(el, m);
    if (m.role === 'bot') hideTyping();
  }

  function remove(id) {
    var el = nodes.get(id);
    if (el) el.remove();
    nodes.delete(id);
  }

  function isPending(id) {
    return id.slice(0, 2) === 'u-' && pending.has(id.slice(2));
  }

  function sync(frame) {
    maxChars = frame.max_message_chars || maxChars;
    var keep = new Set(frame.messages.map(function (m) { return m.id; }));
    Array.from(nodes.keys()).forEach(function (id) {
      if (!keep.has(id) && !isPending(id)) remove(id);
    });
    frame.messages.forEach(function (m) { upsert(m, true); });
    Array.from(nodes.keys()).forEach(function (id) {
      if (!keep.has(id)) log.appendChild(nodes.get(id)); // unsent messages stay last
    });
  }

  function showTyping() {
    typing.hidden = false;
    clearTimeout(typingTimer);
    typingTimer = setTimeout(hideTyping, 6000);
  }

  function hideTyping() {
    typing.hidden = true;
    clearTimeout(typingTimer);
  }

  function refused(frame) {
    pending.delete(frame.id);
    var target = nodes.get('u-' + frame.id) || nodes.get(presses.get(frame.id));
    presses.delete(frame.id);
    if (!target) {
      showBanner(frame.reason);
      return;
    }
    if (target.classList.contains('user')) target.classList.add('failed');
    setNotice(target, frame.reason);
  }

  function handle(frame) {
    var was = nearBottom();
    switch (frame.type) {
      case 'sync': sync(frame); break;
      case 'send':
      case 'edit': upsert(frame.message, false); break;
      case 'delete': remove(frame.id); break;
      case 'ack':
        pending.delete(frame.id);
        presses.delete(frame.id);
        var el = nodes.get('u-' + frame.id);
        if (el) el.classList.remove('pending');
        break;
      case 'refused': refused(frame); break;
      case 'typing': showTyping(); break;
      default: break;
    }
    scrollDown(was);
  }

  function transmit(frame) {
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(frame));
  }

  function press(messageId, payload, row) {
    row.querySelectorAll('button').forEach(function (b) { b.disabled = true; });
    var frame = { type: 'button', id: uuid(), message: messageId, payload: payload };
    pending.set(frame.id, frame);
    presses.set(frame.id, messageId);
    transmit(frame);
  }

  function renderChips() {
    chips.hidden = files.length === 0;
  }

  function chip(name) {
    var el = document.createElement('span');
    el.className = 'chip uploading';
    var label = document.createElement('span');
    clipped(label, name + ' …');
    var drop = document.createElement('button');
    drop.type = 'button';
    drop.title = 'Remove';
    drop.textContent = '✕';
    el.append(label, drop);
    chips.appendChild(el);
    return { el: el, label: label, drop: drop };
  }

  // Upload one file; its chip shows progress, then the name, or the server's one-line refusal.
  function upload(file) {
    var c = chip(file.name);
    var entry = { chip: c.el, name: file.name, id: null, failed: false };
    files.push(entry);
    renderChips();
    c.drop.addEventListener('click', function () {
      files = files.filter(function (f) { return f !== entry; });
      c.el.remove();
      renderChips();
    });
    fetch('upload', {
      method: 'POST',
      credentials: 'same-origin',
      headers: {
        'Content-Type': file.type || 'application/octet-stream',
        'X-File-Name': encodeURIComponent(file.name)
      },
      body: file
    }).then(function (response) {
      if (response.ok) return response.json();
      return response.text().then(function (text) { throw new Error(text.trim() || ('HTTP ' + response.status)); });
    }).then(function (answer) {
      entry.id = answer.id;
      c.el.classList.remove('uploading');
      clipped(c.label, answer.name);
    }, function (error) {
      entry.failed = true;
      c.el.classList.remove('uploading');
      c.el.classList.add('failed');
      clipped(c.label, file.name + ': ' + error.message);
      showBanner(file.name + ': ' + error.message);
    });
  }

  function addFiles(list) {
    Array.prototype.forEach.call(list, upload);
  }

  function sendText(text) {
    if (files.some(function (f) { return !f.id && !f.failed; })) {
      showBanner('Wait until the files are uploaded.');
      return false;
    }
    var ready = files.filter(function (f) { return f.id; });
    if (!text.trim() && !ready.length) return false;
    var length = Array.from(text).length;
    if (length > maxChars) {
      showBanner('Message too long: ' + length + ' characters, the limit is ' + maxChars + '.');
      return false;
    }
    banner.hidden = true;
    var frame = { type: 'message', id: uuid(), text: text };
    if (ready.length) frame.files = ready.map(function (f) { return f.id; });
    files.forEach(function (f) { f.chip.remove(); });
    files = [];
    renderChips();
    pending.set(frame.id, frame);
    if (!NEW_COMMAND.test(text)) {
      var el = element('u-' + frame.id, 'user');
      el.classList.add('pending');
      var p = document.createElement('p');
      p.className = 'typed';
      p.textContent = text;
      var body = document.createElement('div');
      body.className = 'body';
      if (text) body.appendChild(p);
      ready.forEach(function (f) {
        var line = document.createElement('div');
        clipped(line, f.name);
        body.appendChild(line);
      });
      el.replaceChildren(body);
      log.scrollTop = log.scrollHeight;
    }
    transmit(frame);
    return true;
  }

  function socketUrl() {
    var url = new URL('ws', location.href);
    url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
    url.search = '';
    url.hash = '';
    return url.href;
  }

  function connect() {
    setStatus('connecting…');
    var socket = new WebSocket(socketUrl());
    ws = socket;
    socket.onopen = function () {
      attempt = 0;
      setStatus('connected', 'ok');
      pending.forEach(function (frame) { socket.send(JSON.stringify(frame)); });
    };
    socket.onmessage = function (event) {
      var frame;
      try { frame = JSON.parse(event.data); } catch (e) { return; }
      handle(frame);
    };
    socket.onclose = function (event) {
      if (ws === socket) ws = null;
      if (event.code === 1008 || event.code === 1009) {
        showBanner('The server closed the connection: ' + (event.reason || event.code));
        pending.forEach(function (frame, id) {
          if (frame.text && Array.from(frame.text).length > maxChars) pending.delete(id);
        });
      }
      var delay = Math.min(10000, 500 * Math.pow(2, attempt)) * (0.75 + Math.random() / 2);
      attempt += 1;
      setStatus('reconnecting in ' + Math.ceil(delay / 1000) + ' s…', 'down');
      setTimeout(connect, delay);
    };
  }

  document.getElementById('send').addEventListener('click', function () {
    if (sendText(input.value)) input.value = '';
    input.focus();
  });
  input.addEventListener('keydown', function (event) {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      if (sendText(input.value)) input.value = '';
    }
  });
  document.getElementById('attach').addEventListener('click', function () { picker.click(); });
  picker.addEventListener('change', function () {
    addFiles(picker.files);
    picker.value = '';
  });
  var dragDepth = 0;
  document.addEventListener('dragenter', function (event) {
    if (!event.dataTransfer || Array.prototype.indexOf.call(event.dataTransfer.types, 'Files') < 0) return;
    dragDepth += 1;
    document.body.classList.add('dropping');
  });
  document.addEventListener('dragleave', function () {
    dragDepth = Math.max(0, dragDepth - 1);
    if (!dragDepth) document.body.classList.remove('dropping');
  });
  document.addEventListener('dragover', function (event) { event.preventDefault(); });
  document.addEventListener('drop', function (event) {
    event.preventDefault();
    dragDepth = 0;
    document.body.classList.remove('dropping');
    if (event.dataTransfer && event.dataTransfer.files.length) addFiles(event.dataTransfer.files);
  });
  document.getElementById('stop').addEventListener('click', function () { sendText('/stop'); });
  document.getElementById('new').addEventListener('click', function () { sendText('/new'); });

  connect();
})();
