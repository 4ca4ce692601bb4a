package main

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/agentpty/agentpty"
)

//go:embed static
var staticFiles embed.FS

// server serves the page, the session list and the terminals of one
// Manager.
type server struct {
	m      *agentpty.Manager
	cfg    config
	ln     net.Listener
	port   string
	token  string // required on every request but static files, on loopback too
	list   *hub   // pokes the list WebSockets on every Manager event
	http   *http.Server
	page   []byte
	ctx    context.Context // ends at close, and with it every WebSocket
	cancel context.CancelFunc
	conns  sync.WaitGroup // WebSocket handlers still running
	once   sync.Once

	mu      sync.Mutex
	viewers map[string]int // terminal WebSockets open per session id
}

// listen checks the address against the flags, binds it and makes the
// manager whose sessions the page shows.
func listen(c config) (*server, error) {
	host, _, err := net.SplitHostPort(c.addr)
	if err != nil {
		return nil, fmt.Errorf("%w: --addr %q: %v", errUsage, c.addr, err)
	}
	if !isLoopback(host) && !c.public {
		return nil, fmt.Errorf("%w: --addr %q is beyond loopback: anyone who can reach it would see the terminals; add --public, and every request then needs the token printed at start", errUsage, c.addr)
	}
	page, err := staticFiles.ReadFile("static/index.html")
	if err != nil {
		return nil, err
	}
	s := &server{cfg: c, list: newHub(), page: page, viewers: map[string]int{}}
	// On loopback too: every local user, and any local process (a
	// WebSocket client sends no Origin unless it wants to), reaches it.
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	s.token = hex.EncodeToString(b)
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return nil, err
	}
	s.ln = smallSends{ln}
	_, port, _ := net.SplitHostPort(s.ln.Addr().String())
	s.port = port
	opts := c.options
	if host := opts.OnEvent; host != nil {
		opts.OnEvent = func(e agentpty.Event) {
			s.list.event(e)
			host(e)
		}
	} else {
		opts.OnEvent = s.list.event
	}
	s.m = agentpty.NewManager(opts)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.http = &http.Server{
		Handler:           s.routes(),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
	}
	return s, nil
}

// sendBuffer bounds what the kernel holds for one browser: a browser that
// falls behind blocks its viewer soon, and the viewer then gets the screen
// redrawn instead of megabytes of stale output first.
const sendBuffer = 128 << 10

// smallSends gives every connection sendBuffer.
type smallSends struct{ net.Listener }

func (l smallSends) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(sendBuffer)
	}
	return c, err
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// url is the page's address, with the token.
func (s *server) url() string {
	host, _, _ := net.SplitHostPort(s.ln.Addr().String())
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host, _ = os.Hostname()
	}
	u := url.URL{Scheme: "http", Host: net.JoinHostPort(host, s.port), Path: "/"}
	u.RawQuery = url.Values{"token": {s.token}}.Encode()
	return u.String()
}

// serve answers requests until ctx ends or the listener fails.
func (s *server) serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.http.Serve(s.ln) }()
	select {
	case <-ctx.Done():
		s.close()
		<-errc
		return nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}

// close ends every WebSocket, stops the server and kills the sessions.
func (s *server) close() {
	s.once.Do(func() {
		s.cancel()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.http.Shutdown(ctx)
		_ = s.ln.Close()
		s.conns.Wait()
		_ = s.m.Close()
	})
}

func (s *server) routes() http.Handler {
	static, _ := fs.Sub(staticFiles, "static")
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.Handle("GET /{$}", s.guard(http.HandlerFunc(s.servePage)))
	mux.Handle("GET /s/{id}", s.guard(http.HandlerFunc(s.servePage)))
	mux.Handle("GET /api/sessions", s.guard(http.HandlerFunc(s.serveList)))
	mux.Handle("GET /ws/list", s.guard(http.HandlerFunc(s.watchList)))
	mux.Handle("GET /ws/term/{id}", s.guard(http.HandlerFunc(s.watchTerminal)))
	return s.headers(mux)
}

// headers keeps the page to its own origin and the token out of Referer.
func (s *server) headers(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A name that resolves to 127.0.0.1 (DNS rebinding) must not
		// reach a loopback server: its Origin would match its Host.
		if !s.cfg.public && !s.loopbackHost(r.Host) {
			http.Error(w, "agentpty: host "+strconv.Quote(r.Host)+" is not this loopback server", http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'")
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		h.ServeHTTP(w, r)
	})
}

func (s *server) loopbackHost(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	return err == nil && port == s.port && isLoopback(host)
}

// guard refuses a request without the token.
func (s *server) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.URL.Query().Get("token")), []byte(s.token)) != 1 {
			http.Error(w, "agentpty: this server needs the token it printed at start (?token=…)", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// sessionID is the form Manager gives ids; anything else is not looked up.
var sessionID = regexp.MustCompile(`^pty-[1-9][0-9]{0,9}$`)

// session finds the session a URL names, or answers 404.
func (s *server) session(w http.ResponseWriter, r *http.Request) (*agentpty.Session, bool) {
	id := r.PathValue("id")
	if sessionID.MatchString(id) {
		if sess, ok := s.m.Session(id); ok {
			return sess, true
		}
	}
	http.Error(w, "agentpty: no session "+strconv.Quote(id), http.StatusNotFound)
	return nil, false
}

func (s *server) servePage(w http.ResponseWriter, r *http.Request) {
	if r.PathValue("id") != "" {
		if _, ok := s.session(w, r); !ok {
			return
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(s.page)
}

// sessionView is one row of the page's list.
type sessionView struct {
	ID         string `json:"id"`
	Command    string `json:"command"`
	State      string `json:"state"`
	Guessed    bool   `json:"state_guessed,omitempty"` // waiting_input only by a relay's pause
	Foreground string `json:"foreground"`
	Cols       int    `json:"cols"`
	Rows       int    `json:"rows"`
	ExitCode   *int   `json:"exit_code,omitempty"`
	Signal     string `json:"signal,omitempty"`
	Viewers    int    `json:"viewers"` // pages showing it now
}

// listMessage is what the list WebSocket sends on every change.
type listMessage struct {
	Sessions []sessionView `json:"sessions"`
	Typing   bool          `json:"typing"`
}

func (s *server) snapshot() listMessage {
	msg := listMessage{Sessions: []sessionView{}, Typing: s.cfg.allowTyping}
	for _, info := range s.m.List() {
		v := sessionView{ID: info.ID, Command: info.Command, Cols: info.Cols, Rows: info.Rows, ExitCode: info.ExitCode, Signal: info.Signal}
		s.mu.Lock()
		v.Viewers = s.viewers[info.ID]
		s.mu.Unlock()
		if sess, ok := s.m.Session(info.ID); ok {
			st := sess.State()
			v.State, v.Guessed, v.Foreground = st.State, st.Guessed, st.Foreground
		}
		msg.Sessions = append(msg.Sessions, v)
	}
	return msg
}

// view counts a page showing id, until the func it returns is called.
func (s *server) view(id string) func() {
	s.mu.Lock()
	s.viewers[id]++
	s.mu.Unlock()
	s.list.event(agentpty.Event{})
	return func() {
		s.mu.Lock()
		if s.viewers[id]--; s.viewers[id] == 0 {
			delete(s.viewers, id)
		}
		s.mu.Unlock()
		s.list.event(agentpty.Event{})
	}
}

func (s *server) serveList(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s.snapshot())
}
