// The page: the session list from /ws/list, and the open session in an
// xterm.js terminal fed by /ws/term/ID. The terminal keeps the session's
// own size; the browser's never resizes the session.
'use strict';
(() => {
  const token = new URLSearchParams(location.search).get('token');
  const query = token ? '?token=' + encodeURIComponent(token) : '';
  const wsURL = path => (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + path + query;
  const encoder = new TextEncoder();
  const $ = id => document.getElementById(id);

  // Exposed for tests and for a look from the console.
  const app = window.agentpty = { sessions: [], typing: false, id: null, term: null, shown: null, connected: false, socket: null };
  let termSocket = null;

  app.screenText = () => {
    const t = app.term;
    if (!t) return '';
    const b = t.buffer.active, lines = [];
    for (let y = 0; y < t.rows; y++) {
      const line = b.getLine(b.baseY + y);
      // Trailing blanks are cut as Session.Screen cuts them: a redraw
      // writes them as spaces, which translateToString keeps.
      lines.push(line ? line.translateToString(true).replace(/ +$/, '') : '');
    }
    while (lines.length && lines[lines.length - 1] === '') lines.pop();
    return lines.join('\n');
  };

  function status(text) { $('status').textContent = text; }

  // render updates the list's rows in place: a row stays the same element
  // while its session lives, so a click lands on the row it was aimed at.
  const columns = ['id', 'command', 'state', 'foreground', 'size', 'viewers'];
  function render() {
    const body = $('list');
    const rows = new Map([...body.rows].map(tr => [tr.dataset.id, tr]));
    let next = body.firstElementChild;
    for (const s of app.sessions) {
      let tr = rows.get(s.id);
      rows.delete(s.id);
      if (!tr) {
        tr = document.createElement('tr');
        tr.dataset.id = s.id;
        for (const cls of columns) {
          const td = document.createElement('td');
          td.className = cls;
          tr.appendChild(td);
        }
        tr.addEventListener('click', () => open(s.id, true));
      }
      if (tr !== next) body.insertBefore(tr, next);
      next = tr.nextElementSibling;
      tr.classList.toggle('open', s.id === app.id);
      tr.classList.toggle('exited', s.state === 'exited');
      let state = s.state;
      if (s.exit_code != null) state += ' (' + s.exit_code + ')';
      if (s.signal) state += ' (' + s.signal + ')';
      if (s.state_guessed) state += ' (guessed)';
      const texts = [s.id, s.command, state, s.foreground, s.cols + '×' + s.rows, String(s.viewers)];
      columns.forEach((cls, i) => {
        const td = tr.cells[i];
        if (td.textContent !== texts[i]) td.textContent = texts[i];
        if (cls === 'command') td.title = texts[i];
      });
    }
    for (const tr of rows.values()) tr.remove();
    $('empty').hidden = app.sessions.length > 0;
    const mode = $('mode');
    mode.textContent = app.typing ? 'typing allowed' : 'watching';
    mode.classList.toggle('typing', app.typing);
  }

  // follow opens a session on first load, and reopens the open one when
  // the session was resized, so its screen is redrawn at the new size.
  function follow() {
    if (!app.id) {
      const m = location.pathname.match(/^\/s\/(pty-\d+)$/);
      const id = m ? m[1] : (app.sessions.find(s => s.state !== 'exited') || {}).id;
      if (id) open(id, false);
      return;
    }
    const s = app.sessions.find(s => s.id === app.id);
    const shown = app.shown;
    if (s && shown && s.state !== 'exited' && (s.cols !== shown.cols || s.rows !== shown.rows)) open(app.id, false);
  }

  function listen() {
    const ws = new WebSocket(wsURL('/ws/list'));
    ws.onmessage = ev => {
      const msg = JSON.parse(ev.data);
      app.sessions = msg.sessions;
      app.typing = msg.typing;
      render();
      follow();
    };
    ws.onclose = () => status('disconnected from the server');
  }

  function terminal() {
    if (app.term) return app.term;
    const t = new Terminal({ cols: 80, rows: 24, scrollback: 1000, disableStdin: true, fontSize: 14,
      fontFamily: 'DejaVu Sans Mono, Menlo, Consolas, monospace' });
    t.open($('terminal'));
    const send = data => {
      if (app.typing && termSocket && termSocket.readyState === WebSocket.OPEN) termSocket.send(data);
    };
    // onData carries the person's keys, pastes and mouse, but also
    // xterm.js's own answers to the program's queries (device attributes,
    // cursor position, modes, colours, focus reports), which the library
    // already gives: only what xterm.js marks as user input is sent. Its
    // core fires onUserInput just before such data; an xterm.js without
    // that hook sends nothing rather than its answers.
    const core = t._core && t._core.coreService;
    let fromPerson = false;
    if (core && core.onUserInput) core.onUserInput(() => { fromPerson = true; });
    else console.error('agentpty: this xterm.js does not mark user input; typing is off');
    t.onData(d => {
      const person = fromPerson;
      fromPerson = false;
      if (person) send(encoder.encode(d));
    });
    t.onBinary(d => send(Uint8Array.from(d, c => c.charCodeAt(0))));
    return app.term = t;
  }

  function open(id, push) {
    if (termSocket) {
      termSocket.onclose = null;
      termSocket.close();
    }
    if (push) history.pushState(null, '', '/s/' + id + query);
    app.id = id;
    app.connected = false;
    app.shown = null;
    render();
    $('title').textContent = id;
    const t = terminal();
    const ws = termSocket = app.socket = new WebSocket(wsURL('/ws/term/' + encodeURIComponent(id)));
    ws.binaryType = 'arraybuffer';
    ws.onmessage = ev => {
      if (typeof ev.data === 'string') {
        const h = JSON.parse(ev.data);
        t.reset();
        t.resize(h.cols, h.rows);
        t.options.disableStdin = !h.typing;
        app.shown = h;
        app.connected = true;
        status(h.exited ? id + ' has exited: its last screen' : (h.typing ? 'connected; your keys are typed' : 'connected; watching'));
        if (h.typing) t.focus();
        return;
      }
      t.write(new Uint8Array(ev.data));
    };
    ws.onclose = ev => {
      if (termSocket !== ws) return;
      app.connected = false;
      status(ev.code === 1000 ? id + ': the program has ended' : id + ': disconnected (' + (ev.reason || ev.code) + ')');
    };
  }

  window.addEventListener('popstate', () => {
    const m = location.pathname.match(/^\/s\/(pty-\d+)$/);
    if (m) open(m[1], false);
  });
  render();
  listen();
})();
