package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/testkit"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Protocol versions a client may speak: the newest, where a server
// returns its input requests (SEP-2322), and the one before, where it
// sends them as nested requests.
var protocols = []string{"2026-07-28", "2025-11-25"}

// syncBuffer is a log the server writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// connectHost serves the tools with opts and h in this process to a
// client with copts speaking version, through w if not nil, the server's
// log going to stderr.
func connectHost(t *testing.T, ctx context.Context, opts agentpty.Options, h host, copts *mcp.ClientOptions, version string, w *wire, stderr io.Writer) *mcp.ClientSession {
	t.Helper()
	if opts.Shell == nil {
		opts.Shell = []string{"bash", "-c"}
	}
	sctx, stop := context.WithCancel(ctx)
	st, ct := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- runHost(sctx, opts, h, st, stderr) }()
	var client mcp.Transport = ct
	if w != nil {
		w.Transport, client = ct, w
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agentpty-test", Version: "v0.0.0"}, copts).Connect(ctx, client, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		stop()
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		stop()
		if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("the server: %v", err)
		}
	})
	return cs
}

// bothModes are the capabilities of a client that shows forms and URLs.
func bothModes() *mcp.ClientCapabilities {
	return &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}}
}

// callTool makes a call and returns its text and whether it is a tool error.
func callTool(t *testing.T, ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", tool, args, err)
	}
	return textOf(res), res.IsError
}

// startReady starts command and returns its id, once waitFor appeared or,
// without one, once the program waits for input.
func startReady(t *testing.T, ctx context.Context, cs *mcp.ClientSession, command, waitFor string) string {
	t.Helper()
	args := map[string]any{"command": command, "wait_for": waitFor}
	if waitFor == "" {
		args = map[string]any{"command": command, "wait_until": "input"}
	}
	text, isErr := callTool(t, ctx, cs, "pty-start", args)
	var r struct {
		ID      string `json:"id"`
		Matched bool   `json:"matched"`
		State   string `json:"state"`
	}
	if isErr || json.Unmarshal([]byte(text), &r) != nil || !r.Matched && r.State != agentpty.StateWaitingInput {
		t.Fatalf("pty-start %q: %s", command, text)
	}
	return r.ID
}

// newBrowser starts a headless Chromium with a profile of its own and
// nothing that reaches the network.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	testkit.Need(t, "chromium")
	actx, acancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath("chromium"), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()))
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		bcancel()
		acancel()
	})
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return bctx
}

// typeIntoPage opens url in a new tab, checks that the page names what
// it should, types secret and submits, and returns the text the browser
// shows after. It runs in the client's elicitation handler: it returns
// errors rather than failing the test.
func typeIntoPage(browser context.Context, url, secret string, names ...string) (string, error) {
	tab, cancel := chromedp.NewContext(browser)
	defer cancel()
	tab, cancelT := context.WithTimeout(tab, 30*time.Second)
	defer cancelT()
	if err := chromedp.Do(tab, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#secret"))); err != nil {
		return "", fmt.Errorf("open %s: %w", url, err)
	}
	page, err := chromedp.Run(tab, chromedp.Text(chromedp.CSS("body")))
	if err != nil {
		return "", err
	}
	for _, n := range names {
		if !strings.Contains(page, n) {
			return "", fmt.Errorf("the page does not name %q: %s", n, page)
		}
	}
	if err := chromedp.Do(tab, chromedp.SendKeys(chromedp.CSS("#secret"), secret), chromedp.Click(chromedp.CSS("#send"))); err != nil {
		return "", fmt.Errorf("submit: %w", err)
	}
	return awaitBody(tab, "Sent to", "refused")
}

// awaitBody waits until the page's text holds one of texts, across the
// navigation a form's post makes, and returns it.
func awaitBody(tab context.Context, texts ...string) (string, error) {
	var last string
	var err error
	for tab.Err() == nil {
		ctx, cancel := context.WithTimeout(tab, time.Second)
		_, err = chromedp.Run(ctx, chromedp.Poll[bool](`document.body && document.body.innerText.length > 0`))
		if err == nil {
			last, err = chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		}
		cancel()
		for _, t := range texts {
			if err == nil && strings.Contains(last, t) {
				return last, nil
			}
		}
	}
	return last, fmt.Errorf("the page never showed %q: %v; it shows %q", texts, err, last)
}

// postSecret posts the form as a page of origin would.
func postSecret(url, origin, secret string) (int, string, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader("secret="+secret))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", origin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// originOf is the scheme and host of url.
func originOf(url string) string {
	i := strings.Index(url[len("http://"):], "/")
	return url[:len("http://")+i]
}

// sudoUser makes a throwaway user whose sudo asks for password.
func sudoUser(t *testing.T, password string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a throwaway user with a sudo password needs root; run the tests as root (CI does)")
	}
	testkit.Need(t, "useradd", "userdel", "chpasswd", "sudo", "setpriv")
	return testkit.SudoUser(t, "aptymcp"+strconv.Itoa(os.Getpid()%100000), password)
}

// An unprivileged user's sudo gets its password from the person through
// the page a URL elicitation opens, on both protocols: returned as an
// input request on the newest, sent as a nested request on the older.
// The password shows nowhere the model or the client could see it: not
// in any message either way, not in the server's log, not in a recording
// of the session.
func TestSecretThroughThePage(t *testing.T) {
	const password = "Mcp-Sudo-Pw-7319"
	user := sudoUser(t, password)
	browser := newBrowser(t)
	for _, version := range protocols {
		t.Run(version, func(t *testing.T) {
			ctx := testCtx(t)
			w, log := &wire{}, &syncBuffer{}
			var shown string
			copts := &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				if r.Params.Mode != "url" {
					return nil, fmt.Errorf("mode %q, want url", r.Params.Mode)
				}
				text, err := typeIntoPage(browser, r.Params.URL, password, "sudo", "[sudo] pw:")
				shown = text
				if err != nil {
					return nil, err
				}
				return &mcp.ElicitResult{Action: "accept"}, nil
			}, Capabilities: bothModes()}
			var m *agentpty.Manager
			h := host{secrets: true, manager: func(made *agentpty.Manager) { m = made }}
			cs := connectHost(t, ctx, agentpty.Options{SecretPrograms: []string{"sudo"}}, h, copts, version, w, log)
			id := startReady(t, ctx, cs, "setpriv --reuid="+user+" --regid="+user+" --init-groups -- "+
				`sudo -k -p "[sudo] pw: " true; echo "sudo exit $?"; exec cat`, "[sudo] pw: ")
			rec := &syncBuffer{}
			if sess, ok := m.Session(id); !ok || sess.Record(rec) != nil {
				t.Fatalf("record %s", id)
			}
			text, isErr := callTool(t, ctx, cs, toolSecret, map[string]any{"id": id})
			if !isErr && !strings.Contains(text, "sudo exit 0") && strings.Contains(text, `"waited":"quiet"`) {
				// sudo relays through a pty of its own: its wait is a guess
				// (waited quiet), and the model reads again, as here.
				more, _ := callTool(t, ctx, cs, "pty-write", map[string]any{"id": id, "wait_for": "sudo exit"})
				text += more
			}
			if isErr || !strings.Contains(text, "sudo exit 0") {
				t.Fatalf("pty-secret: %s (the page said %q); want sudo exit 0", text, shown)
			}
			if !strings.Contains(shown, "Sent to "+id) {
				t.Errorf("after the post the page said %q", shown)
			}
			nested := false
			for _, m := range w.messages() {
				b, _ := jsonrpc.EncodeMessage(m.msg)
				if strings.Contains(string(b), password) {
					t.Errorf("the password is in a message: %s", b)
				}
				if r, ok := m.msg.(*jsonrpc.Request); ok && r.Method == "elicitation/create" {
					nested = true
				}
			}
			if want := version < "2026-07-28"; nested != want {
				t.Errorf("protocol %s: a nested elicitation request: %v, want %v", version, nested, want)
			}
			if !strings.Contains(rec.String(), "sudo exit 0") || strings.Contains(rec.String(), password) {
				t.Errorf("the recording: %q; want sudo's exit and no password", rec.String())
			}
			if strings.Contains(log.String(), password) {
				t.Errorf("the password is in the server's log: %s", log.String())
			}
		})
	}
}

// secretCase is a session at a hidden prompt behind a server that offers
// pty-secret for any program, with a client whose elicitation handler is
// handle.
func secretCase(t *testing.T, ctx context.Context, timeout time.Duration, handle func(url string) (*mcp.ElicitResult, error)) (*mcp.ClientSession, string) {
	t.Helper()
	copts := &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return handle(r.Params.URL)
	}, Capabilities: bothModes()}
	cs := connectHost(t, ctx, agentpty.Options{}, host{secrets: true, secretTimeout: timeout}, copts, "", nil, io.Discard)
	id := startReady(t, ctx, cs, `read -s -p "pw: " x; echo "got ${#x} chars"; exec cat`, "pw: ")
	return cs, id
}

// A declined elicitation, a page left unanswered past the timeout, a
// reused token and a post from another origin are each refused, and say
// so; a control: the same page, posted from its own origin, works.
func TestSecretRefusals(t *testing.T) {
	t.Run("declined", func(t *testing.T) {
		ctx := testCtx(t)
		cs, id := secretCase(t, ctx, 0, func(string) (*mcp.ElicitResult, error) { return &mcp.ElicitResult{Action: "decline"}, nil })
		if text, isErr := callTool(t, ctx, cs, toolSecret, map[string]any{"id": id}); !isErr || !strings.Contains(text, "declined") || !strings.Contains(text, "nothing was typed") {
			t.Errorf("declined: %s", text)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		ctx := testCtx(t)
		var url string
		cs, id := secretCase(t, ctx, 2*time.Second, func(u string) (*mcp.ElicitResult, error) { url = u; return &mcp.ElicitResult{Action: "accept"}, nil })
		began := time.Now()
		text, isErr := callTool(t, ctx, cs, toolSecret, map[string]any{"id": id})
		if !isErr || !strings.Contains(text, "no entry within 2s") || time.Since(began) > 20*time.Second {
			t.Errorf("unanswered page: %s after %v", text, time.Since(began))
		}
		if code, body, err := postSecret(url, originOf(url), "late"); err != nil || code != http.StatusGone || !strings.Contains(body, "expired") {
			t.Errorf("a post after the timeout: %d %q %v; want 410, expired", code, body, err)
		}
	})
	t.Run("origin and reuse", func(t *testing.T) {
		ctx := testCtx(t)
		browser := newBrowser(t)
		var evil, reused, own, id string
		var cs *mcp.ClientSession
		cs, id = secretCase(t, ctx, 0, func(url string) (*mcp.ElicitResult, error) {
			// Another origin's page posts the form to the real URL.
			attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				fmt.Fprintf(w, `<form id=f method=post action=%q><input id=secret name=secret value="from-evil"><button id=send>x</button></form>`, url)
			}))
			defer attacker.Close()
			tab, cancel := chromedp.NewContext(browser)
			defer cancel()
			tctx, cancelT := context.WithTimeout(tab, 30*time.Second)
			defer cancelT()
			if err := chromedp.Do(tctx, chromedp.Navigate(attacker.URL), chromedp.Click(chromedp.CSS("#send"))); err != nil {
				return nil, fmt.Errorf("the other origin's page: %w", err)
			}
			var err error
			if evil, err = awaitBody(tctx, "refused"); err != nil {
				return nil, fmt.Errorf("the other origin's post: %w", err)
			}
			if own, err = typeIntoPage(browser, url, "right-one", id, "pw:"); err != nil {
				return nil, err
			}
			_, reused, err = postSecret(url, originOf(url), "again")
			return &mcp.ElicitResult{Action: "accept"}, err
		})
		text, isErr := callTool(t, ctx, cs, toolSecret, map[string]any{"id": id})
		if isErr || !strings.Contains(text, "got 9 chars") {
			t.Errorf("the person's own post: %s (page %q); want got 9 chars", text, own)
		}
		if !strings.Contains(evil, "refused: the form may be posted only from its own page") {
			t.Errorf("a post from another origin: the browser shows %q", evil)
		}
		if !strings.Contains(reused, "already used") {
			t.Errorf("a reused token: %q", reused)
		}
	})
	t.Run("no url elicitation", func(t *testing.T) {
		ctx := testCtx(t)
		copts := &mcp.ClientOptions{
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return nil, errors.New("not expected")
			},
			Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		}
		cs := connectHost(t, ctx, agentpty.Options{}, host{secrets: true}, copts, "", nil, io.Discard)
		id := startReady(t, ctx, cs, `read -s -p "pw: " x; exec cat`, "pw: ")
		if text, isErr := callTool(t, ctx, cs, toolSecret, map[string]any{"id": id}); !isErr || !strings.Contains(text, "cannot show a URL elicitation") || !strings.Contains(text, "type themselves") {
			t.Errorf("a client without URL elicitation: %s", text)
		}
	})
}
