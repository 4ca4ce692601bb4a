package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/agentpty/agentpty"
)

// newBrowser starts a headless Chromium for the test, with a profile of
// its own and nothing that reaches the network.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path := "/usr/bin/chromium"
	if _, err := os.Stat(path); err != nil {
		path = need(t, "chromium")
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1500, 900),
	)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		bcancel()
		acancel()
	})
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	return bctx
}

// newTab opens a tab that closes when the test ends. Its first action
// runs on its own context: the tab lives as long as that one.
func newTab(t *testing.T, browser context.Context) context.Context {
	t.Helper()
	tab, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	return tab
}

// do runs browser actions, bounded by the test's context.
func do(t *testing.T, ctx, tab context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	tab, cancel := context.WithCancel(tab)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	if err := chromedp.Do(tab, actions...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// eval returns what a JavaScript expression gives in the page.
func eval[T any](t *testing.T, tab context.Context, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// awaitPage waits until the expression is true in the page, and fails the
// test with what describe shows in the page when it does not become so.
func awaitPage(t *testing.T, tab context.Context, expr, describe string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 10*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		ctx, cancel := context.WithTimeout(tab, 5*time.Second)
		defer cancel()
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](describe))
		t.Fatalf("the page never had %s: %v\nit has: %s", expr, err, got)
	}
}

// readyCat says "ready" once the login profile has run: a start waits for
// it, since a profile killed midway can leave a lock that stalls the
// next login shells.
const readyCat = "echo ready; exec cat"

// listRows is the page's session list, one line per row.
const listRows = `[...document.querySelectorAll('#list tr')].map(r => [...r.cells].map(c => c.textContent).join(' ')).join('\n')`

// awaitList waits for the page's list to be want.
func awaitList(t *testing.T, tab context.Context, want string) {
	t.Helper()
	awaitPage(t, tab, listRows+" === "+strconv.Quote(want), listRows)
}

// awaitScreen waits until the terminal in the page shows the session's
// screen: the text of Session.Screen, read from xterm.js's buffer, at the
// session's own size. The screen is read again on every round, since the
// program may still be drawing (a prompt after the text a wait matched).
func awaitScreen(t *testing.T, tab context.Context, sess *agentpty.Session) {
	t.Helper()
	type page struct {
		ID   string `json:"id"`
		Text string `json:"text"`
		Cols int    `json:"cols"`
		Rows int    `json:"rows"`
	}
	const read = `(() => { const a = window.agentpty, t = a.term; return {id: a.id || '', text: a.screenText(), cols: t ? t.cols : 0, rows: t ? t.rows : 0} })()`
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		scr := sess.Screen()
		want := scr.Text()
		if strings.TrimSpace(want) == "" {
			t.Fatalf("%s: the screen is empty; nothing to compare", sess.ID())
		}
		got := eval[page](t, tab, read)
		if got.ID == sess.ID() && got.Text == want {
			if got.Cols != scr.Cols || got.Rows != scr.Rows {
				t.Errorf("%s: the page's terminal is %dx%d, the session's %dx%d", sess.ID(), got.Cols, got.Rows, scr.Cols, scr.Rows)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page never showed %s's screen:\n%s\nit shows %s:\n%s", sess.ID(), want, got.ID, got.Text)
		}
		<-tick.C
	}
}

// screenshot saves the page as a PNG out of the source tree
// ($AGENTPTY_ARTIFACTS, else the temporary directory) and logs where.
func screenshot(t *testing.T, tab context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := os.Getenv("AGENTPTY_ARTIFACTS")
	if dir == "" {
		dir = os.TempDir()
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatalf("save the screenshot: %v", err)
	}
	t.Logf("screenshot: %s", path)
}

// startPython starts python3 and has the model print a line, so the
// screen has something to compare.
func startPython(t *testing.T, ctx context.Context, m *agentpty.Manager) *agentpty.Session {
	t.Helper()
	need(t, "python3")
	res, err := m.Start(ctx, agentpty.StartRequest{Command: "python3 -q", Cols: 90, Rows: 16, WaitFor: ">>> "})
	if err != nil {
		t.Fatalf("start python3: %v", err)
	}
	if _, err := m.Write(ctx, agentpty.WriteRequest{ID: res.ID, Input: "print('from' + ' the model')", Submit: true, WaitUntil: "input"}); err != nil {
		t.Fatalf("type into python3: %v", err)
	}
	sess, _ := m.Session(res.ID)
	return sess
}

// pythonPage serves c with python3 in it, and opens a tab for the page.
func pythonPage(t *testing.T, browser context.Context, c config) (context.Context, *server, *agentpty.Session, context.Context) {
	t.Helper()
	ctx := testContext(t)
	srv := startServer(t, c)
	py := startPython(t, ctx, srv.m)
	return ctx, srv, py, newTab(t, browser)
}

// typeInPage types into the page's terminal as a person would, and also
// sends the same bytes on the terminal's WebSocket directly, then closes
// the WebSocket and waits until the server has read it all: whatever the
// server lets through has then been typed.
func typeInPage(t *testing.T, ctx, tab context.Context, srv *server, id, keys, raw string) {
	t.Helper()
	do(t, ctx, tab, chromedp.Focus(chromedp.CSS(".xterm-helper-textarea")), typeKeys(keys))
	sent := eval[bool](t, tab, `(() => { const ws = window.agentpty.socket; ws.send(new TextEncoder().encode(`+strconv.Quote(raw)+`)); ws.close(); return true })()`)
	if !sent {
		t.Fatal("the page did not send")
	}
	srv.awaitViewers(t, ctx, id, 0)
}

// typeKeys presses the keys as a keyboard does: a keydown that carries the
// text, then a keyup. (chromedp's KeyEvent adds a separate char event, which
// xterm.js, handling the keydown already, takes as a second key.)
func typeKeys(keys string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		for _, r := range keys {
			for _, k := range kb.Encode(r) {
				switch k.Type {
				case kb.KeyChar:
					continue
				case kb.KeyDown:
					k.Text, k.UnmodifiedText = string(r), string(r)
				}
				if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, *k); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
