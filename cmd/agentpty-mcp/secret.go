package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentpty/agentpty"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolSecret is the tool that asks the person, not the model, for the
// hidden entry a session waits for.
const toolSecret = "pty-secret"

// defaultSecretTimeout is how long a secret page waits for the person.
const defaultSecretTimeout = 5 * time.Minute

// maxSecretBytes bounds what the page accepts: a password, not a file.
const maxSecretBytes = 4096

// secretPages serves the one-time loopback pages where the person types a
// secret. Each page is behind a token bound to one pty-secret call; its
// form posts only from its own origin; the page, the token and the secret
// are gone after one use or the timeout.
type secretPages struct {
	timeout time.Duration

	mu      sync.Mutex // guards the fields below
	srv     *http.Server
	origin  string                 // "http://127.0.0.1:PORT" once listening
	byToken map[string]*secretPage // pages not yet used nor expired, by the token in their URL
	byState map[string]*secretPage // the same pages, by the request state the call's retry echoes
	served  chan struct{}          // closed when Serve returns
}

// secretPage is one request for a secret.
type secretPage struct {
	id, program, prompt string
	token, state        string
	deadline            time.Time
	entry               chan []byte // the person's entry, handed over once
}

func newSecretPages(timeout time.Duration) *secretPages {
	if timeout <= 0 {
		timeout = defaultSecretTimeout
	}
	return &secretPages{timeout: timeout, byToken: map[string]*secretPage{}, byState: map[string]*secretPage{}}
}

// listen starts the loopback listener the first time a page is needed.
// Call with mu held.
func (p *secretPages) listen() error {
	if p.srv != nil {
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("secret page: %w", err)
	}
	p.origin = "http://" + ln.Addr().String()
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serveHTTP), ReadHeaderTimeout: 10 * time.Second}
	p.served = make(chan struct{})
	go func() {
		defer close(p.served)
		_ = p.srv.Serve(ln)
	}()
	return nil
}

// close stops the listener and forgets every page.
func (p *secretPages) close() {
	p.mu.Lock()
	srv, served := p.srv, p.served
	p.byToken, p.byState = map[string]*secretPage{}, map[string]*secretPage{}
	p.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
		<-served
	}
}

// open makes a page for session id and returns it with its URL.
func (p *secretPages) open(id, program, prompt string) (*secretPage, string, error) {
	pg := &secretPage{id: id, program: program, prompt: prompt, token: randomHex(), state: randomHex(),
		deadline: time.Now().Add(p.timeout), entry: make(chan []byte, 1)}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.listen(); err != nil {
		return nil, "", err
	}
	p.byToken[pg.token], p.byState[pg.state] = pg, pg
	time.AfterFunc(p.timeout, func() { p.drop(pg) })
	return pg, p.origin + "/secret/" + pg.token, nil
}

// take returns the page a retry's request state names, once.
func (p *secretPages) take(state string) (*secretPage, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pg, ok := p.byState[state]
	delete(p.byState, state)
	return pg, ok
}

// drop forgets a page: its URL answers "used or expired" from now on, and
// an entry it holds that no call took is zeroed.
func (p *secretPages) drop(pg *secretPage) {
	p.mu.Lock()
	delete(p.byToken, pg.token)
	delete(p.byState, pg.state)
	p.mu.Unlock()
	select {
	case b := <-pg.entry:
		clear(b)
	default:
	}
}

// await waits for the person's entry until the page's deadline.
func (p *secretPages) await(ctx context.Context, pg *secretPage) ([]byte, error) {
	t := time.NewTimer(time.Until(pg.deadline))
	defer t.Stop()
	select {
	case b := <-pg.entry:
		p.drop(pg)
		return b, nil
	case <-t.C:
		p.drop(pg)
		return nil, fmt.Errorf("no entry within %v; the page has expired and nothing was typed", p.timeout)
	case <-ctx.Done():
		p.drop(pg)
		return nil, ctx.Err()
	}
}

func randomHex() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

var secretForm = template.Must(template.New("secret").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>agentpty: {{.ID}} asks for a secret</title></head>
<body>
<h1>{{.ID}}: {{.Program}} asks for a hidden entry</h1>
<p>Prompt: <code id="prompt">{{.Prompt}}</code></p>
<p>What you type here goes to {{.Program}} in terminal session {{.ID}}, not to the model. This page works once.</p>
<form method="post" action="/secret/{{.Token}}">
<input type="password" id="secret" name="secret" autocomplete="off" autofocus>
<button type="submit" id="send">Send</button>
</form>
</body></html>
`))

// serveHTTP answers the page and its form. A request whose Host is not the
// listener's is refused (a DNS rebinding page), as is a post from any
// other origin; a used or expired token says so.
func (p *secretPages) serveHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "same-origin") // no-referrer would make the form post Origin: null
	w.Header().Set("X-Frame-Options", "DENY")
	p.mu.Lock()
	origin := p.origin
	token, ok := strings.CutPrefix(r.URL.Path, "/secret/")
	pg := p.byToken[token]
	p.mu.Unlock()
	switch {
	case "http://"+r.Host != origin:
		http.Error(w, "refused: this page is served only as "+origin, http.StatusForbidden)
	case !ok || pg == nil:
		http.Error(w, "refused: this secret page was already used or has expired; ask again from the terminal session", http.StatusGone)
	case r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = secretForm.Execute(w, map[string]string{"ID": pg.id, "Program": pg.program, "Prompt": pg.prompt, "Token": token})
	case r.Method != http.MethodPost:
		http.Error(w, "refused: GET the page or POST its form", http.StatusMethodNotAllowed)
	case r.Header.Get("Origin") != origin:
		http.Error(w, fmt.Sprintf("refused: the form may be posted only from its own page (%s), not from origin %q", origin, r.Header.Get("Origin")), http.StatusForbidden)
	default:
		p.accept(w, r, pg)
	}
}

// accept hands the posted entry to the waiting call and burns the token.
func (p *secretPages) accept(w http.ResponseWriter, r *http.Request, pg *secretPage) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 3*maxSecretBytes+16))
	defer clear(body)
	if err != nil {
		http.Error(w, "refused: the entry is too long", http.StatusRequestEntityTooLarge)
		return
	}
	entry, ok := formValue(body, "secret")
	if !ok {
		http.Error(w, "refused: the form has no entry", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	_, live := p.byToken[pg.token]
	delete(p.byToken, pg.token) // one use, whatever follows
	p.mu.Unlock()
	if !live {
		clear(entry)
		http.Error(w, "refused: this secret page was already used or has expired", http.StatusGone)
		return
	}
	pg.entry <- entry // buffered, and only this post, the one that burnt the token, sends
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "Sent to %s (%s). You can close this page.\n", pg.id, pg.program)
}

// formValue decodes one field of an application/x-www-form-urlencoded
// body into a buffer of its own, so the caller can zero it (url.ParseQuery
// would leave copies in strings).
func formValue(body []byte, name string) ([]byte, bool) {
	for _, pair := range bytes.Split(body, []byte("&")) {
		k, v, _ := bytes.Cut(pair, []byte("="))
		if string(k) != name {
			continue
		}
		out := make([]byte, 0, len(v))
		for i := 0; i < len(v); i++ {
			switch c := v[i]; {
			case c == '+':
				out = append(out, ' ')
			case c == '%' && i+2 < len(v) && isHex(v[i+1]) && isHex(v[i+2]):
				out = append(out, unhex(v[i+1])<<4|unhex(v[i+2]))
				i += 2
			default:
				out = append(out, c)
			}
		}
		return out, len(out) > 0 && len(out) <= maxSecretBytes
	}
	return nil, false
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// secretGuide is what the model is told of pty-secret.
const secretGuide = "When a result shows input_hidden: true (sudo, ssh, a passphrase), call pty-secret with the session id: the person types the entry on a page of their own and it goes to the program; you get what the program printed next. If they decline, ask them in the conversation how to go on."

// secretArgs are pty-secret's arguments.
type secretArgs struct {
	ID     string `json:"id"`
	Prompt string `json:"prompt,omitempty"`
}

// secretTool describes pty-secret to the model.
var secretTool = &mcp.Tool{
	Name:  toolSecret,
	Title: "Ask the person for a password",
	Description: "When a session shows input_hidden (a password or passphrase prompt), ask the person for the entry: " +
		"the server shows them a one-time page on this machine where they type it, and types it into the session. " +
		"You never see it; the result is what the program printed next. Never type a password you made up with pty-write.",
	InputSchema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "id": {"type": "string", "description": "Session id at the hidden prompt, e.g. \"pty-1\"."},
    "prompt": {"type": "string", "description": "What the entry is for, shown to the person (default: the prompt on the screen)."}
  },
  "required": ["id"],
  "additionalProperties": false
}`),
	Annotations: &mcp.ToolAnnotations{Title: "Ask the person for a password", DestructiveHint: ptr(true), OpenWorldHint: ptr(true)},
}

func ptr[T any](v T) *T { return &v }

// errorResult is a tool error the model reads.
func errorResult(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

// secretHandler is pty-secret. The first call returns a URL elicitation
// as an input request, which the SDK sends as a nested request to older
// clients and returns to those on protocol 2026-07-28 (SEP-2322); the
// call that carries the answer waits for the page and types the entry.
func (s *server) secretHandler(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a secretArgs
	dec := json.NewDecoder(bytes.NewReader(req.Params.Arguments))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil || a.ID == "" {
		return errorResult("agentpty: invalid argument: %s: want {\"id\": \"pty-N\", \"prompt\": optional} (%v)", toolSecret, err), nil
	}
	if req.Params.InputResponses != nil {
		return s.secretAnswered(ctx, req, a)
	}
	sess, ok := s.m.Session(a.ID)
	if !ok {
		return errorResult("agentpty: no such session: %s %s", toolSecret, a.ID), nil
	}
	st := sess.State()
	if !st.InputHidden {
		return errorResult("%s %s: the session is not at a hidden prompt (input_hidden is false; state %s, %s in front); nothing to ask for", toolSecret, a.ID, st.State, st.Foreground), nil
	}
	if !clientHas(req.Session, "url") {
		return errorResult("%s %s: this MCP client cannot show a URL elicitation, so the server has no way to ask the person; "+
			"tell the person that %s in session %s waits for a hidden entry they must type themselves (a terminal attached to the session, or a client with URL elicitation)", toolSecret, a.ID, st.Foreground, a.ID), nil
	}
	prompt := a.Prompt
	if prompt == "" {
		prompt = shownLast(s.m, a.ID)
	}
	pg, url, err := s.secrets.open(a.ID, st.Foreground, prompt)
	if err != nil {
		return errorResult("%s %s: %v", toolSecret, a.ID, err), nil
	}
	msg := fmt.Sprintf("%s in terminal session %s asks for a hidden entry (%s). Open the page to type it; it goes to the program, not to the model.", st.Foreground, a.ID, prompt)
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{"secret": &mcp.ElicitParams{Mode: "url", Message: msg, URL: url, ElicitationID: pg.state}},
		RequestState:  pg.state,
	}, nil
}

// secretAnswered is pty-secret once the person answered the elicitation.
func (s *server) secretAnswered(ctx context.Context, req *mcp.CallToolRequest, a secretArgs) (*mcp.CallToolResult, error) {
	pg, ok := s.secrets.take(req.Params.RequestState)
	if !ok || pg.id != a.ID {
		if ok {
			s.secrets.drop(pg)
		}
		return errorResult("%s %s: this request for a secret was already answered or has expired; call %s again", toolSecret, a.ID, toolSecret), nil
	}
	res, _ := req.Params.InputResponses["secret"].(*mcp.ElicitResult)
	if res == nil || res.Action != "accept" {
		s.secrets.drop(pg)
		action := "gave no answer"
		if res != nil {
			action = map[string]string{"decline": "declined", "cancel": "cancelled"}[res.Action]
		}
		return errorResult("%s %s: the person %s the request; nothing was typed. Ask them in the conversation how to go on.", toolSecret, a.ID, action), nil
	}
	entry, err := s.secrets.await(ctx, pg)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return errorResult("%s %s: %v", toolSecret, a.ID, err), nil
	}
	defer clear(entry)
	if ss := req.Session; ss != nil {
		_ = ss.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: pg.state})
	}
	wr, err := s.m.WriteSecretWith(ctx, agentpty.SecretRequest{ID: a.ID, Secret: entry, WaitUntil: agentpty.WaitUntilInput})
	if errors.Is(err, agentpty.ErrUnsupported) {
		wr, err = s.m.WriteSecretWith(ctx, agentpty.SecretRequest{ID: a.ID, Secret: entry, WaitMS: agentpty.Millis(3000)})
	}
	if err != nil {
		return errorResult("%s", err.Error()), nil
	}
	out, _ := json.Marshal(wr)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}, StructuredContent: json.RawMessage(out)}, nil
}

// clientHas reports whether the client can answer an elicitation of mode
// ("url" or "form").
func clientHas(ss *mcp.ServerSession, mode string) bool {
	if ss == nil || ss.InitializeParams() == nil || ss.InitializeParams().Capabilities == nil {
		return false
	}
	e := ss.InitializeParams().Capabilities.Elicitation
	switch {
	case e == nil:
		return false
	case mode == "url":
		return e.URL != nil
	}
	return e.Form != nil || e.URL == nil // neither named: form, as the protocol had it first
}

// shownLast is the last line session id shows, as pty-list has it: the
// prompt, at a prompt.
func shownLast(m *agentpty.Manager, id string) string {
	list, _ := m.ListSessions(context.Background())
	for _, l := range list.Sessions {
		if l.ID == id {
			return l.LastLine
		}
	}
	return ""
}
