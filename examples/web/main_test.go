package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/agentpty/agentpty/internal/testkit"

	"github.com/agentpty/agentpty"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(testkit.EmptyHome()))
}

// need skips the test when prog is not installed, unless the environment
// says AGENTPTY_REQUIRE=all, as CI does where every program must be there.
func need(t *testing.T, prog string) string {
	t.Helper()
	path, err := exec.LookPath(prog)
	if err != nil {
		if os.Getenv("AGENTPTY_REQUIRE") == "all" {
			t.Fatalf("%s is not installed, and AGENTPTY_REQUIRE=all says every program must be: %v", prog, err)
		}
		t.Skipf("%s is not installed (set AGENTPTY_REQUIRE=all to make this a failure)", prog)
	}
	return path
}

// testContext bounds a test, so a page that never shows what it should
// fails it instead of hanging it.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// startServer serves c until the test ends, then closes the server and
// its manager (which kills the sessions).
func startServer(t *testing.T, c config) *server {
	t.Helper()
	srv, err := listen(c)
	if err != nil {
		t.Fatalf("listen %+v: %v", c, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return srv
}

// base is the server's address as a client on this machine reaches it.
func (s *server) base() string {
	return "http://" + net.JoinHostPort("127.0.0.1", s.port)
}

// at is path on the server, with the token.
func (s *server) at(path string) string { return s.base() + path + "?token=" + s.token }

// awaitViewers waits until the server counts n pages showing id: a page
// that closed its WebSocket has then had everything it sent read.
func (s *server) awaitViewers(t *testing.T, ctx context.Context, id string, n int) {
	t.Helper()
	pokes, unsubscribe := s.list.subscribe()
	defer unsubscribe()
	for {
		s.mu.Lock()
		have := s.viewers[id]
		s.mu.Unlock()
		if have == n {
			return
		}
		select {
		case <-pokes:
		case <-ctx.Done():
			t.Fatalf("%s: %d viewers, want %d", id, have, n)
		}
	}
}

// TestWeb drives the page in headless Chromium: the list, a session's
// screen in xterm.js, live output, what typing does with and without
// --allow-typing, and the token.
func TestWeb(t *testing.T) {
	browser := newBrowser(t)

	t.Run("list and screen", func(t *testing.T) {
		ctx := testContext(t)
		need(t, "vim")
		srv := startServer(t, config{addr: "127.0.0.1:0"})
		py := startPython(t, ctx, srv.m)
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("a person watches\nwhat the model does\nin the browser\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := srv.m.Start(ctx, agentpty.StartRequest{Command: "vim -i NONE notes.txt", Cwd: dir, Cols: 100, Rows: 24, WaitUntil: "input"})
		if err != nil {
			t.Fatalf("start vim: %v", err)
		}
		vim, _ := srv.m.Session(res.ID)

		tab := newTab(t, browser)
		do(t, ctx, tab, chromedp.Navigate(srv.at("/s/"+vim.ID())))
		awaitList(t, tab, py.ID()+" python3 -q waiting_input python3 90×16 0\n"+
			vim.ID()+" vim -i NONE notes.txt waiting_input vim 100×24 1")
		awaitScreen(t, tab, vim)
		screenshot(t, tab, "agentpty-web.png")

		// Another session, by a click on its row; then live output. The
		// row stays the same element through the list's updates (here the
		// viewers' counts), so the click cannot land on a row just replaced.
		pyRow := `document.querySelector('#list tr[data-id="` + py.ID() + `"]')`
		if !eval[bool](t, tab, `(window.pyRow = `+pyRow+`) !== null`) {
			t.Fatalf("no row for %s in the list", py.ID())
		}
		do(t, ctx, tab, chromedp.Click(chromedp.CSS(`#list tr[data-id="`+py.ID()+`"]`)))
		awaitScreen(t, tab, py)
		if _, err := srv.m.Write(ctx, agentpty.WriteRequest{ID: py.ID(), Input: "print(6 * 7)", Submit: true, WaitUntil: "input"}); err != nil {
			t.Fatal(err)
		}
		awaitScreen(t, tab, py)
		if got := eval[string](t, tab, "window.agentpty.screenText()"); !strings.Contains(got, "\n42\n") {
			t.Errorf("live output did not reach the page:\n%s", got)
		}

		// The list follows the Manager: a new session appears, a killed one goes.
		cat, err := srv.m.Start(ctx, agentpty.StartRequest{Command: readyCat, WaitFor: "ready", Cols: 40, Rows: 5})
		if err != nil {
			t.Fatal(err)
		}
		awaitPage(t, tab, `[...document.querySelectorAll('#list tr')].some(r => r.dataset.id === `+strconv.Quote(cat.ID)+`)`, listRows)
		if _, err := srv.m.Kill(ctx, cat.ID); err != nil {
			t.Fatal(err)
		}
		awaitPage(t, tab, `![...document.querySelectorAll('#list tr')].some(r => r.dataset.id === `+strconv.Quote(cat.ID)+`)`, listRows)
		if !eval[bool](t, tab, `window.pyRow === `+pyRow) {
			t.Errorf("the list replaced %s's row as it changed", py.ID())
		}

		// Watching only: neither the page's keys nor bytes sent straight on
		// the WebSocket reach the program.
		if eval[bool](t, tab, "window.agentpty.shown.typing") {
			t.Fatal("the page says typing is allowed")
		}
		typeInPage(t, ctx, tab, srv, py.ID(), "print('web' + 'typed')\r", "print('raw' + 'sent')\r")
		got, err := srv.m.Write(ctx, agentpty.WriteRequest{ID: py.ID(), Input: "print('model' + 'only')", Submit: true, WaitFor: "modelonly"})
		if err != nil || !got.Matched {
			t.Fatalf("the model's write: %+v, %v", got, err)
		}
		for _, typed := range []string{"web", "raw"} {
			if strings.Contains(got.Output, typed) || strings.Contains(py.Screen().Text(), typed) {
				t.Errorf("keys from the page reached the program without --allow-typing:\n%s", got.Output)
			}
		}
		if scr := vim.Screen(); scr.Cols != 100 || scr.Rows != 24 {
			t.Errorf("the page resized vim to %dx%d", scr.Cols, scr.Rows)
		}
	})

	t.Run("typing allowed", func(t *testing.T) {
		// ApproveWrites asks about the model's writes only: this approver
		// refuses any that would type what the person types below.
		var asked []string
		var mu sync.Mutex
		deny := agentpty.ApproverFunc(func(ctx context.Context, req agentpty.ApprovalRequest) error {
			mu.Lock()
			asked = append(asked, req.Input)
			mu.Unlock()
			if strings.Contains(req.Input, "typed") || strings.Contains(req.Input, "sent") {
				return errors.New("not the model's to type")
			}
			return nil
		})
		ctx, srv, py, tab := pythonPage(t, browser, config{addr: "127.0.0.1:0", allowTyping: true,
			options: agentpty.Options{Approver: deny, ApproveWrites: true}})
		if _, err := srv.m.Write(ctx, agentpty.WriteRequest{ID: py.ID(), Input: "print('model' + 'typed')", Submit: true, WaitMS: agentpty.Millis(0)}); !errors.Is(err, agentpty.ErrDenied) {
			t.Fatalf("the model's write past the approver: %v, want ErrDenied", err)
		}
		do(t, ctx, tab, chromedp.Navigate(srv.at("/")))
		awaitScreen(t, tab, py)
		if !eval[bool](t, tab, "window.agentpty.shown.typing") {
			t.Fatal("the page says typing is not allowed")
		}
		typeInPage(t, ctx, tab, srv, py.ID(), "print('web' + 'typed')\r", "print('raw' + 'sent')\r")
		// The model's next read sees what the person typed and what it printed.
		// Each line separately: the raw bytes may reach the terminal before
		// python3 has answered the typed line, and the terminal then echoes
		// them ahead of webtyped.
		got, err := srv.m.Write(ctx, agentpty.WriteRequest{ID: py.ID(), WaitFor: "rawsent"})
		if err != nil || !got.Matched {
			t.Fatalf("the model's read: %+v, %v", got, err)
		}
		for _, want := range []string{">>> print('web' + 'typed')\n", "\nwebtyped\n", ">>> print('raw' + 'sent')\n", "\nrawsent"} {
			if !strings.Contains(got.Output, want) {
				t.Errorf("the model's read lacks %q:\n%s", want, got.Output)
			}
		}
		if scr := py.Screen(); scr.Cols != 90 || scr.Rows != 16 {
			t.Errorf("the page resized the session to %dx%d", scr.Cols, scr.Rows)
		}
		mu.Lock()
		for _, in := range asked {
			if strings.Contains(in, "web") || strings.Contains(in, "raw") {
				t.Errorf("the approver was asked about the person's keys: %q", in)
			}
		}
		mu.Unlock()
		do(t, ctx, tab, chromedp.Navigate(srv.at("/s/"+py.ID())))
		awaitScreen(t, tab, py)
		screenshot(t, tab, "agentpty-web-typing.png")
	})

	t.Run("no replies from the page", func(t *testing.T) {
		// The program asks the terminal what a program may ask (device
		// attributes, cursor position, size, a mode, the background colour)
		// and turns on focus reports; the library answers. The page's
		// xterm.js answers too, and reports focus, but those are not a
		// person's keys: with typing allowed the program must get exactly
		// what it gets when no page watches.
		need(t, "python3")
		ctx := testContext(t)
		srv := startServer(t, config{addr: "127.0.0.1:0", allowTyping: true})
		dir := t.TempDir()
		prog := `import os, sys, tty
tty.setraw(0)
os.write(1, b"ready\r\n")
def until(mark):
    got = b""
    while mark not in got:
        got += os.read(0, 1024)
    return got
until(b"go")
os.write(1, b"\x1b[?1004h\x1b[c\x1b[>c\x1b[6n\x1b[18t\x1b[?2004$p\x1b]11;?\x1b\\asked\r\n")
open(sys.argv[1], "wb").write(until(b"end"))
os.write(1, b"done\r\n")
`
		if err := os.WriteFile(filepath.Join(dir, "ask.py"), []byte(prog), 0o644); err != nil {
			t.Fatal(err)
		}
		// ask runs the program to its questions; once answered runs, it
		// ends the program and returns what the program read.
		ask := func(name string, answered func(id string)) string {
			t.Helper()
			res, err := srv.m.Start(ctx, agentpty.StartRequest{Command: "python3 ask.py " + name, Cwd: dir, Cols: 80, Rows: 10, WaitFor: "ready"})
			if err != nil {
				t.Fatal(err)
			}
			answered(res.ID)
			// The library's own answers have been typed once the program
			// waits for input again.
			if _, err := srv.m.Write(ctx, agentpty.WriteRequest{ID: res.ID, WaitUntil: agentpty.WaitUntilInput}); err != nil {
				t.Fatal(err)
			}
			if got, err := srv.m.Write(ctx, agentpty.WriteRequest{ID: res.ID, Input: "end", WaitFor: "done"}); err != nil || !got.Matched {
				t.Fatalf("end %s: %+v, %v", name, got, err)
			}
			read, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			return strings.TrimSuffix(string(read), "end")
		}
		goAsk := func(id string) {
			t.Helper()
			if got, err := srv.m.Write(ctx, agentpty.WriteRequest{ID: id, Input: "go", WaitFor: "asked"}); err != nil || !got.Matched {
				t.Fatalf("go: %+v, %v", got, err)
			}
		}
		alone := ask("alone", goAsk)
		if !strings.Contains(alone, "R") {
			t.Fatalf("the library did not answer the cursor position: %q", alone)
		}

		tab := newTab(t, browser)
		var emitted []string
		watched := ask("watched", func(id string) {
			sess, _ := srv.m.Session(id)
			do(t, ctx, tab, chromedp.Navigate(srv.at("/s/"+id)))
			awaitScreen(t, tab, sess)
			eval[bool](t, tab, `(window.emitted = [], window.agentpty.term.onData(d => window.emitted.push(d)), true)`)
			goAsk(id)
			// The page has read the questions once it shows what follows them;
			// then it loses and regains the focus.
			awaitScreen(t, tab, sess)
			eval[bool](t, tab, `(window.agentpty.term.blur(), window.agentpty.term.focus(), true)`)
			emitted = eval[[]string](t, tab, `window.emitted`)
			// Whatever the page sent has been typed once the server has
			// read its WebSocket to the end.
			eval[bool](t, tab, `(window.agentpty.socket.close(), true)`)
			srv.awaitViewers(t, ctx, id, 0)
		})
		// The control: the page's terminal did answer and report focus.
		for _, want := range []string{"\x1b[?1;2c", "\x1b[2;1R", "\x1b[I"} {
			if !slices.Contains(emitted, want) {
				t.Errorf("the page's terminal did not emit %q: %q", want, emitted)
			}
		}
		if watched != alone {
			t.Errorf("the page typed its terminal's answers:\nwatched: %q\nalone:   %q", watched, alone)
		}
	})

	t.Run("token", func(t *testing.T) {
		ctx, srv, py, tab := pythonPage(t, browser, config{addr: "127.0.0.1:0"}) // loopback needs it too
		do(t, ctx, tab, chromedp.Navigate(srv.base()+"/"))
		if got := eval[string](t, tab, "document.body.innerText"); !strings.Contains(got, "needs the token") {
			t.Errorf("the page without the token shows %q", got)
		}
		do(t, ctx, tab, chromedp.Navigate(srv.url()))
		awaitScreen(t, tab, py)
	})
}

// httpClient keeps no idle connections, so none outlives a test.
var httpClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

func get(t *testing.T, url string, header http.Header) int {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	if h := header.Get("Host"); h != "" {
		req.Host = h
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// dial opens a WebSocket and returns the HTTP status of the handshake.
func dial(t *testing.T, ctx context.Context, url, origin string) (*websocket.Conn, int) {
	t.Helper()
	h := http.Header{}
	if origin != "" {
		h.Set("Origin", origin)
	}
	c, resp, err := websocket.Dial(ctx, strings.Replace(url, "http://", "ws://", 1), &websocket.DialOptions{HTTPClient: httpClient, HTTPHeader: h})
	if err != nil {
		if resp == nil {
			t.Fatalf("dial %s: %v", url, err)
		}
		return nil, resp.StatusCode
	}
	return c, resp.StatusCode
}

// TestLoopbackNeedsToken: on loopback too, a request or a WebSocket
// without the token (another local user, a client that sends no Origin)
// gets nothing, with --allow-typing as without. The control: the same
// client without an Origin, with the token, gets the session's live
// bytes, so the Origin check alone (all a loopback server had) let it in.
func TestLoopbackNeedsToken(t *testing.T) {
	ctx := testContext(t)
	srv := startServer(t, config{addr: "127.0.0.1:0", allowTyping: true})
	res, err := srv.m.Start(ctx, agentpty.StartRequest{Command: readyCat, WaitFor: "ready", Cols: 40, Rows: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/", "/s/" + res.ID, "/api/sessions"} {
		if code := get(t, srv.base()+path, nil); code != http.StatusUnauthorized {
			t.Errorf("%s on loopback without the token: %d, want 401", path, code)
		}
		if code := get(t, srv.at(path), nil); code != http.StatusOK {
			t.Errorf("%s on loopback with the token: %d, want 200", path, code)
		}
	}
	for _, path := range []string{"/ws/list", "/ws/term/" + res.ID} {
		if c, code := dial(t, ctx, srv.base()+path, ""); c != nil || code != http.StatusUnauthorized {
			t.Errorf("a WebSocket to %s without the token or an Origin: %d, want 401", path, code)
		}
	}
	c, code := dial(t, ctx, srv.at("/ws/term/"+res.ID), "")
	if c == nil {
		t.Fatalf("control: a WebSocket without an Origin, with the token: %d", code)
	}
	defer c.CloseNow()
	if _, err := srv.m.Write(ctx, agentpty.WriteRequest{ID: res.ID, Input: "live-bytes", Submit: true, WaitFor: "live-bytes"}); err != nil {
		t.Fatal(err)
	}
	var got []byte
	for !strings.Contains(string(got), "live-bytes") {
		_, p, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("control: the WebSocket without an Origin got %q, then %v", got, err)
		}
		got = append(got, p...)
	}
}

// TestRefusals: beyond loopback nothing is served without the token; a
// WebSocket from another origin is refused; a session id that is not one
// is a 404; a loopback server answers only to loopback names.
func TestRefusals(t *testing.T) {
	ctx := testContext(t)
	if _, err := listen(config{addr: "0.0.0.0:0"}); !errors.Is(err, errUsage) {
		t.Errorf("0.0.0.0 without --public: %v, want the usage error", err)
	}

	pub := startServer(t, config{addr: "0.0.0.0:0", public: true})
	res, err := pub.m.Start(ctx, agentpty.StartRequest{Command: readyCat, WaitFor: "ready", Cols: 40, Rows: 5})
	if err != nil {
		t.Fatal(err)
	}
	token := "?token=" + pub.token
	for _, path := range []string{"/", "/s/" + res.ID, "/api/sessions", "/ws/list", "/ws/term/" + res.ID} {
		if code := get(t, pub.base()+path, nil); code != http.StatusUnauthorized {
			t.Errorf("%s without the token: %d, want 401", path, code)
		}
		if code := get(t, pub.base()+path+"?token=x"+pub.token[1:], nil); code != http.StatusUnauthorized {
			t.Errorf("%s with a wrong token: %d, want 401", path, code)
		}
	}
	for _, path := range []string{"/", "/s/" + res.ID, "/api/sessions"} {
		if code := get(t, pub.base()+path+token, nil); code != http.StatusOK {
			t.Errorf("%s with the token: %d, want 200", path, code)
		}
	}
	if _, code := dial(t, ctx, pub.base()+"/ws/list", ""); code != http.StatusUnauthorized {
		t.Errorf("the list WebSocket without the token: %d, want 401", code)
	}
	if _, code := dial(t, ctx, pub.base()+"/ws/term/"+res.ID+token, "http://evil.example"); code != http.StatusForbidden {
		t.Errorf("a terminal WebSocket from another origin: %d, want 403", code)
	}
	c, code := dial(t, ctx, pub.base()+"/ws/term/"+res.ID+token, pub.base())
	if c == nil {
		t.Fatalf("a terminal WebSocket from the page's origin, with the token: %d", code)
	}
	_, first, err := c.Read(ctx)
	c.Close(websocket.StatusNormalClosure, "")
	var h hello
	if err != nil || json.Unmarshal(first, &h) != nil || h.ID != res.ID || h.Cols != 40 || h.Rows != 5 || h.Typing {
		t.Errorf("the terminal WebSocket's first message: %q, %v", first, err)
	}

	loop := startServer(t, config{addr: "127.0.0.1:0"})
	if _, err := loop.m.Start(ctx, agentpty.StartRequest{Command: readyCat, WaitFor: "ready", Cols: 40, Rows: 5}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{
		"/s/pty-1":           http.StatusOK,
		"/s/pty-2":           http.StatusNotFound,
		"/s/pty-99999999999": http.StatusNotFound,
		"/s/pty-01":          http.StatusNotFound,
		"/s/nonsense":        http.StatusNotFound,
		"/s/%00":             http.StatusNotFound,
		"/ws/term/pty-2":     http.StatusNotFound,
		"/ws/term/..%2F..":   http.StatusNotFound,
		"/ws/term/":          http.StatusNotFound,
	} {
		if code := get(t, loop.at(path), nil); code != want {
			t.Errorf("%s: %d, want %d", path, code, want)
		}
	}
	if _, code := dial(t, ctx, loop.at("/ws/term/pty-2"), loop.base()); code != http.StatusNotFound {
		t.Errorf("a terminal WebSocket for no session: %d, want 404", code)
	}
	if _, code := dial(t, ctx, loop.at("/ws/list"), "http://evil.example"); code != http.StatusForbidden {
		t.Errorf("the list WebSocket from another origin: %d, want 403", code)
	}
	if code := get(t, loop.at("/"), http.Header{"Host": {"rebound.example:" + loop.port}}); code != http.StatusForbidden {
		t.Errorf("a loopback server asked for by another name: %d, want 403", code)
	}
	c, code = dial(t, ctx, loop.at("/ws/list"), loop.base())
	if c == nil {
		t.Fatalf("the list WebSocket from the page's origin: %d", code)
	}
	_, first, err = c.Read(ctx)
	c.Close(websocket.StatusNormalClosure, "")
	var list listMessage
	if err != nil || json.Unmarshal(first, &list) != nil || len(list.Sessions) != 1 || list.Sessions[0].Command != readyCat {
		t.Errorf("the list WebSocket's first message: %q, %v", first, err)
	}
}

// TestSlowViewer: a browser that stops reading holds up neither the
// program nor the model; when it reads again it gets the screen redrawn,
// not the whole backlog.
func TestSlowViewer(t *testing.T) {
	ctx := testContext(t)
	srv := startServer(t, config{addr: "127.0.0.1:0"})
	const flood = 1 << 20
	res, err := srv.m.Start(ctx, agentpty.StartRequest{
		Command:   "read x; head -c " + strconv.Itoa(flood) + " /dev/zero | tr '\\0' x; echo; echo flood-done; read y",
		Cols:      80,
		Rows:      10,
		WaitUntil: "input",
	})
	if err != nil {
		t.Fatal(err)
	}
	// A viewer whose receive window is small (set before it connects, so
	// the window is offered small from the start) and who reads nothing.
	small := func(network, address string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10) }); cerr != nil {
			return cerr
		}
		return err
	}
	transport := &http.Transport{DisableKeepAlives: true, DialContext: (&net.Dialer{Control: small}).DialContext}
	defer transport.CloseIdleConnections()
	c, _, err := websocket.Dial(ctx, "ws://127.0.0.1:"+srv.port+"/ws/term/"+res.ID+"?token="+srv.token, &websocket.DialOptions{HTTPClient: &http.Client{Transport: transport}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(-1)
	if _, _, err := c.Read(ctx); err != nil { // the hello
		t.Fatal(err)
	}
	srv.awaitViewers(t, ctx, res.ID, 1)

	got, err := srv.m.Write(ctx, agentpty.WriteRequest{ID: res.ID, Input: "\r", WaitFor: "flood-done", WaitMS: agentpty.Millis(20000)})
	if err != nil || !got.Matched {
		t.Fatalf("the model waited on a session a stalled viewer watches: matched %v, %v", got.Matched, err)
	}

	var seen int
	var tail []byte
	for !strings.Contains(string(tail), "flood-done") {
		_, p, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("after %d bytes: %v", seen, err)
		}
		seen += len(p)
		tail = append(tail, p...)
		tail = tail[max(0, len(tail)-4096):]
	}
	if seen >= flood/2 {
		t.Errorf("the viewer got %d bytes of a %d-byte flood: the backlog, not a redraw", seen, flood)
	}
	t.Logf("the viewer got %d bytes of a %d-byte flood", seen, flood)
	c.Close(websocket.StatusNormalClosure, "")
}

// TestRunDemo runs the command as `go run ./web --demo` does: it prints the
// page's URL once the demo sessions are up, and they are in the list, each
// with its program in the foreground.
func TestRunDemo(t *testing.T) {
	for _, prog := range []string{"python3", "top", "vim"} {
		need(t, prog)
	}
	if err := run(t.Context(), []string{"--addr", "0.0.0.0:0"}, io.Discard); !errors.Is(err, errUsage) {
		t.Errorf("--addr 0.0.0.0:0 without --public: %v, want the usage error", err)
	}
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	r, w := io.Pipe()
	defer r.Close()
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"--demo", "--addr", "127.0.0.1:0"}, w) }()
	lines := bufio.NewScanner(r)
	var page string
	for page == "" && lines.Scan() {
		if url, ok := strings.CutPrefix(lines.Text(), "agentpty web: "); ok {
			page = url
		}
	}
	if page == "" {
		t.Fatalf("no URL printed: %v", <-done)
	}
	u, err := url.Parse(page)
	if err != nil || u.Query().Get("token") == "" {
		t.Fatalf("the URL printed, %q, holds no token: %v", page, err)
	}
	u.Path = "/api/sessions"
	resp, err := httpClient.Get(u.String())
	if err != nil {
		t.Fatal(err)
	}
	var list listMessage
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	// Each program runs in the foreground once the demo is up: vim after
	// the login profile, top typed at the shell's prompt.
	var sessions []string
	for _, s := range list.Sessions {
		sessions = append(sessions, s.Command+" ("+s.Foreground+")")
	}
	if err != nil || strings.Join(sessions, ", ") != "python3 -q (python3), top -d 1 (top), vim (vim)" {
		t.Errorf("the demo's sessions: %q, %v", sessions, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run: %v", err)
	}
}

// TestExitedSession: a session whose program has ended still shows its
// last screen, and the WebSocket then closes normally.
func TestExitedSession(t *testing.T) {
	ctx := testContext(t)
	srv := startServer(t, config{addr: "127.0.0.1:0"})
	res, err := srv.m.Start(ctx, agentpty.StartRequest{Command: "echo last-words", Cols: 40, Rows: 5, WaitFor: "last-words"})
	if err != nil {
		t.Fatal(err)
	}
	sess, _ := srv.m.Session(res.ID)
	if _, err := sess.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	c, code := dial(t, ctx, srv.at("/ws/term/"+res.ID), "")
	if c == nil {
		t.Fatalf("dial: %d", code)
	}
	defer c.CloseNow()
	var h hello
	if _, first, err := c.Read(ctx); err != nil || json.Unmarshal(first, &h) != nil || !h.Exited {
		t.Fatalf("first message %q, %v; want exited", first, err)
	}
	var got []byte
	for {
		_, p, err := c.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
				t.Errorf("the WebSocket ended with %v", err)
			}
			break
		}
		got = append(got, p...)
	}
	if !strings.Contains(string(got), "last-words") {
		t.Errorf("the viewer of an exited session got %q", got)
	}
}
