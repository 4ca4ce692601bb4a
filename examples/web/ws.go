package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/agentpty/agentpty"
)

// hub tells every open list that the Manager reported an event. A poke
// never blocks: a list busy sending keeps one pending poke and sends the
// newest list when it is done, so a slow browser delays only itself.
type hub struct {
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

func newHub() *hub { return &hub{subs: map[chan struct{}]struct{}{}} }

// event is the Manager's OnEvent.
func (h *hub) event(agentpty.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (h *hub) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.subs, ch)
		h.mu.Unlock()
	}
}

// sendTimeout bounds one list message to a browser that stopped reading.
const sendTimeout = 10 * time.Second

// refreshEvery also refreshes the list for what no event reports: a
// program that went quiet to wait for input, a new foreground program, a
// resize.
const refreshEvery = time.Second

// watchList sends the session list now, after every Manager event, and
// every refreshEvery when it changed.
func (s *server) watchList(w http.ResponseWriter, r *http.Request) {
	s.conns.Add(1)
	defer s.conns.Done()
	pokes, unsubscribe := s.list.subscribe()
	defer unsubscribe()
	// Accept refuses an Origin other than the page's own (403).
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	ctx := c.CloseRead(r.Context())
	tick := time.NewTicker(refreshEvery)
	defer tick.Stop()
	var sent []byte
	for {
		if msg, _ := json.Marshal(s.snapshot()); !bytes.Equal(msg, sent) {
			wctx, cancel := context.WithTimeout(ctx, sendTimeout)
			err := c.Write(wctx, websocket.MessageText, msg)
			cancel()
			if err != nil {
				return
			}
			sent = msg
		}
		select {
		case <-ctx.Done():
			c.Close(websocket.StatusGoingAway, "")
			return
		case <-pokes:
		case <-tick.C:
		}
	}
}

// hello is the terminal WebSocket's first message: the size to show the
// session at (the browser's own size never resizes it) and whether keys
// are typed.
type hello struct {
	ID     string `json:"id"`
	Cols   int    `json:"cols"`
	Rows   int    `json:"rows"`
	Typing bool   `json:"typing"`
	Exited bool   `json:"exited"`
}

// watchTerminal shows one session: the WebSocket is the person's terminal
// on Session.Attach, so the page gets the screen as it is, then every byte
// live, and a browser that falls a scrollback behind gets the screen
// redrawn instead of holding anything up. Keys reach Attach only with
// --allow-typing.
func (s *server) watchTerminal(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	s.conns.Add(1)
	defer s.conns.Done()
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	ctx := r.Context()
	scr := sess.Screen()
	first := hello{ID: sess.ID(), Cols: scr.Cols, Rows: scr.Rows, Typing: s.cfg.allowTyping,
		Exited: sess.State().State == agentpty.StateExited}
	msg, _ := json.Marshal(first)
	if err := c.Write(ctx, websocket.MessageText, msg); err != nil {
		return
	}
	defer s.view(sess.ID())()
	nc := websocket.NetConn(ctx, c, websocket.MessageBinary)
	var person net.Conn = nc
	if !s.cfg.allowTyping {
		person = watchOnly{nc}
	}
	err = sess.Attach(ctx, person)
	if errors.Is(err, agentpty.ErrExited) {
		// Nothing is live any more: the last screen, as text.
		_, _ = nc.Write([]byte("\x1b[H\x1b[2J" + strings.Join(sess.Screen().Lines, "\r\n")))
	}
	if ctx.Err() != nil {
		c.Close(websocket.StatusGoingAway, "the server is closing")
		return
	}
	c.Close(websocket.StatusNormalClosure, "")
}

// watchOnly is a person's connection whose keys are dropped: reading it
// only notices when the person leaves.
type watchOnly struct{ net.Conn }

func (w watchOnly) Read(p []byte) (int, error) {
	for {
		if _, err := w.Conn.Read(p); err != nil {
			return 0, err
		}
	}
}
