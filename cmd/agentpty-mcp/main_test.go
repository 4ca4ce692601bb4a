package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentpty/agentpty"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/agentpty/agentpty/internal/testkit"
)

// serverEnv makes the test binary run the server instead of the tests, so
// the tests talk to the real main over real pipes with no build step;
// argsEnv holds its flags as a JSON array.
const (
	serverEnv = "AGENTPTY_MCP_TEST_SERVER"
	argsEnv   = "AGENTPTY_MCP_TEST_ARGS"
)

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) == "1" {
		var args []string
		_ = json.Unmarshal([]byte(os.Getenv(argsEnv)), &args)
		os.Args = append(os.Args[:1], args...)
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(testkit.EmptyHome()))
}

// serverBinaryEnv names an installed agentpty-mcp for the tests that talk
// to the server over stdio to run instead of this test binary: the proxy
// check (scripts/proxycheck.sh) runs them against what go install built.
const serverBinaryEnv = "AGENTPTY_MCP_BINARY"

// serverCmd is the server as a subprocess with flags.
func serverCmd(flags ...string) *exec.Cmd {
	if bin := os.Getenv(serverBinaryEnv); bin != "" {
		cmd := exec.Command(bin, flags...)
		cmd.Stderr = os.Stderr
		return cmd
	}
	args, _ := json.Marshal(flags)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// Without atexit_sleep_ms=0 a server built with -race lingers a second
	// after it exits, and every Close waits for it.
	cmd.Env = append(os.Environ(), serverEnv+"=1", argsEnv+"="+string(args), "GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0")
	cmd.Stderr = os.Stderr
	return cmd
}

// notes collects what the server sends besides responses.
type notes struct {
	mu       sync.Mutex
	logs     []string
	progress []*mcp.ProgressNotificationParams
	news     chan struct{}
}

func (n *notes) add(f func()) {
	n.mu.Lock()
	f()
	n.mu.Unlock()
	select {
	case n.news <- struct{}{}:
	default:
	}
}

// awaitLog waits for a log message containing text.
func (n *notes) awaitLog(t *testing.T, ctx context.Context, text string) string {
	t.Helper()
	for {
		n.mu.Lock()
		for _, l := range n.logs {
			if strings.Contains(l, text) {
				n.mu.Unlock()
				return l
			}
		}
		logs := strings.Join(n.logs, "; ")
		n.mu.Unlock()
		select {
		case <-n.news:
		case <-ctx.Done():
			t.Fatalf("no log message with %q; logs: %s", text, logs)
		}
	}
}

// awaitProgress waits for a progress message containing text.
func (n *notes) awaitProgress(t *testing.T, ctx context.Context, text string) *mcp.ProgressNotificationParams {
	t.Helper()
	for {
		n.mu.Lock()
		for _, p := range n.progress {
			if strings.Contains(p.Message, text) {
				n.mu.Unlock()
				return p
			}
		}
		n.mu.Unlock()
		select {
		case <-n.news:
		case <-ctx.Done():
			t.Fatalf("no progress with %q", text)
		}
	}
}

func newClient(n *notes) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "agentpty-test", Version: "v0.0.0"}, &mcp.ClientOptions{
		//lint:ignore SA1019 the server still logs to clients that ask
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			s, _ := r.Params.Data.(string)
			n.add(func() { n.logs = append(n.logs, string(r.Params.Level)+" "+s) })
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			n.add(func() { n.progress = append(n.progress, r.Params) })
		},
	})
}

// connect starts the server with flags and connects the SDK's client,
// asking for log messages at info level. The session is closed when the
// test ends, if the test has not closed it.
func connect(t *testing.T, ctx context.Context, flags ...string) (*mcp.ClientSession, *exec.Cmd, *notes) {
	t.Helper()
	n := &notes{news: make(chan struct{}, 1)}
	cmd := serverCmd(flags...)
	cs, err := newClient(n).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to the server: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	//lint:ignore SA1019 the server still logs to clients that ask
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatalf("set the log level: %v", err)
	}
	return cs, cmd, n
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestStdio checks what a client sees of the tools, and a call's result.
func TestStdio(t *testing.T) {
	ctx := testCtx(t)
	cs, _, _ := connect(t, ctx)

	if got := cs.InitializeResult().Instructions; !strings.Contains(got, "pty-start") || !strings.Contains(got, "wait_for") {
		t.Errorf("instructions %q say nothing of pty-start and wait_for", got)
	}
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("list tools: %v", err)
	}
	m := agentpty.NewManager(agentpty.Options{ShellSnapshot: true}) // the server's default
	defer m.Close()
	want := map[string]agentpty.Tool{}
	for _, tool := range m.Tools() {
		want[tool.Name] = tool
	}
	// Commands start from the snapshot: the description says so, not that
	// each runs as bash -lc.
	if d := want["pty-start"].Description; strings.Contains(d, "runs as `bash -lc COMMAND`.") || !strings.Contains(d, "snapshot") {
		t.Errorf("pty-start's description with the snapshot on: %q", d)
	}
	if len(list.Tools) != len(want) {
		t.Errorf("the server lists %d tools, Manager.Tools %d", len(list.Tools), len(want))
	}
	schemas := map[string]*jsonschema.Resolved{}
	for _, tool := range list.Tools {
		w, ok := want[tool.Name]
		if !ok {
			t.Errorf("tool %s is not one of Manager.Tools", tool.Name)
			continue
		}
		a := tool.Annotations
		if tool.Description != w.Description || tool.Title != w.Title || a == nil || a.DestructiveHint == nil || a.OpenWorldHint == nil ||
			*a.DestructiveHint != w.Annotations.DestructiveHint || *a.OpenWorldHint != w.Annotations.OpenWorldHint ||
			a.ReadOnlyHint != w.Annotations.ReadOnlyHint || a.IdempotentHint != w.Annotations.IdempotentHint {
			t.Errorf("%s: title %q, annotations %+v; want those of Manager.Tools: %q %+v", tool.Name, tool.Title, a, w.Title, w.Annotations)
		}
		if !sameJSON(t, tool.InputSchema, w.InputSchema) || !sameJSON(t, tool.OutputSchema, w.OutputSchema) {
			t.Errorf("%s: schemas differ from Manager.Tools", tool.Name)
		}
		var s jsonschema.Schema
		b, _ := json.Marshal(tool.OutputSchema)
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s: output schema: %v", tool.Name, err)
		}
		r, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: output schema does not resolve: %v", tool.Name, err)
		}
		schemas[tool.Name] = r
	}

	// Each result validates against its tool's output schema, and its text
	// is as the model should read it, with no HTML escaping.
	start := call(t, ctx, cs, schemas, "pty-start", map[string]any{"command": "echo ready; printf '>>> a<b\\n'; exec cat", "wait_for": "a<b"})
	if !strings.Contains(start.text, ">>> a<b") {
		t.Errorf("pty-start text %q does not read >>> a<b", start.text)
	}
	call(t, ctx, cs, schemas, "pty-write", map[string]any{"id": start.result.ID, "input": "hi", "submit": true, "wait_for": "hi"})
	kill := call(t, ctx, cs, schemas, "pty-kill", map[string]any{"id": start.result.ID})
	if kill.result.ID != start.result.ID {
		t.Errorf("pty-kill answered for %q, want %q", kill.result.ID, start.result.ID)
	}
	// Close waits for the server to exit; an error is its exit status.
	if err := cs.Close(); err != nil {
		t.Errorf("close the client: %v", err)
	}
}

func sameJSON(t *testing.T, a any, b json.RawMessage) bool {
	t.Helper()
	ab, _ := json.Marshal(a)
	var x, y any
	_ = json.Unmarshal(ab, &x)
	_ = json.Unmarshal(b, &y)
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}

// A call with a progress token gets the newest line while it waits; one
// without gets none.
func TestProgress(t *testing.T) {
	ctx := testCtx(t)
	cs, _, n := connect(t, ctx)
	loop := "echo ready; for i in 1 2 3 4 5 6; do echo step$i; sleep 0.2; done; echo finished; exec cat"
	params := &mcp.CallToolParams{Name: "pty-start", Arguments: map[string]any{"command": loop, "wait_for": "finished"}}
	params.SetProgressToken("tok-1")
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("pty-start: %v %s", err, textOf(res))
	}
	p := n.awaitProgress(t, ctx, "step")
	if p.ProgressToken != "tok-1" || p.Progress <= 0 {
		t.Errorf("progress %+v", p)
	}
	n.mu.Lock()
	count := len(n.progress)
	for i := 1; i < len(n.progress); i++ {
		if n.progress[i].Progress <= n.progress[i-1].Progress {
			t.Errorf("progress does not increase: %v then %v", n.progress[i-1].Progress, n.progress[i].Progress)
		}
	}
	n.mu.Unlock()
	if count > 12 {
		t.Errorf("%d progress notifications in about 1.2 s, want at most a few a second", count)
	}

	// Without a token: output for as long, and no progress.
	var id struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal([]byte(textOf(res)), &id)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "pty-write", Arguments: map[string]any{"id": id.ID, "input": "again", "submit": true, "wait_for": "never printed", "wait_ms": 1000}})
	if err != nil || res.IsError {
		t.Fatalf("pty-write: %v %s", err, textOf(res))
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, p := range n.progress {
		if strings.Contains(p.Message, "again") {
			t.Errorf("a call without a progress token got progress %+v", p)
		}
	}
}

// A cancelled pty-start kills what it started and frees its slot.
func TestCancelKillsItsStart(t *testing.T) {
	ctx := testCtx(t)
	cs, _, n := connect(t, ctx, "--max-sessions", "1")
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	params := &mcp.CallToolParams{Name: "pty-start", Arguments: map[string]any{"command": "echo ready $$; exec sleep 300", "wait_for": "never printed", "wait_ms": 30000}}
	params.SetProgressToken(7)
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(callCtx, params)
		done <- err
	}()
	p := n.awaitProgress(t, ctx, "ready ")
	pid, err := strconv.Atoi(strings.Fields(strings.SplitN(p.Message, "ready ", 2)[1])[0])
	if err != nil {
		t.Fatalf("no pid in %q", p.Message)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled call returned %v", err)
	}
	n.awaitLog(t, ctx, "pty-1 killed")
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("sleep (pid %d) outlived its cancelled start: kill -0 says %v", pid, err)
	}
	// The only slot is free again.
	start := call(t, ctx, cs, nil, "pty-start", map[string]any{"command": "echo ready", "wait_for": "ready"})
	if start.result.ID != "pty-2" {
		t.Errorf("next start got %q", start.result.ID)
	}
}

// TestShutdown checks that a program the model left running does not
// outlive the server, whether the client goes away or the server is told
// to stop, and that the server exits 0.
func TestShutdown(t *testing.T) {
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
	}{
		{"stdin closed", 0},
		{"SIGTERM", syscall.SIGTERM},
		{"SIGINT", syscall.SIGINT},
		{"SIGHUP", syscall.SIGHUP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			cs, cmd, _ := connect(t, ctx)
			// exec keeps the pid the shell printed; waiting for "ready" lets
			// the login profile finish before anything is killed.
			start := call(t, ctx, cs, nil, "pty-start", map[string]any{"command": "echo ready $$; exec sleep 300", "wait_for": "ready"})
			_, after, _ := strings.Cut(start.result.Output, "ready ")
			pid, err := strconv.Atoi(strings.Fields(after + " x")[0])
			if err != nil {
				t.Fatalf("no pid in the output %q", start.result.Output)
			}
			if err := syscall.Kill(pid, 0); err != nil {
				t.Fatalf("the program is not running before shutdown: %v", err)
			}
			if tc.sig != 0 {
				// A call in progress does not hold the shutdown up.
				go func() {
					_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "pty-write", Arguments: map[string]any{"id": start.result.ID, "wait_for": "never", "wait_ms": 30000}})
				}()
				if err := cmd.Process.Signal(tc.sig); err != nil {
					t.Fatalf("signal the server: %v", err)
				}
				// The server ends its session: the client sees its stdout close.
				if err := cs.Wait(); err != nil {
					t.Logf("the session ended with %v", err)
				}
			}
			// Close closes the server's stdin and returns once it has
			// exited; an error is its exit status.
			if err := cs.Close(); err != nil {
				t.Fatalf("close the client: %v", err)
			}
			if code := cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("the server exited %d, want 0", code)
			}
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("sleep (pid %d) outlived the server: kill -0 says %v", pid, err)
			}
		})
	}
}

// TestToolErrors runs the server in-process: a bad call is a tool error
// the model can read, not a protocol error.
func TestToolErrors(t *testing.T) {
	ctx := testCtx(t)
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- run(ctx, agentpty.Options{}, st, io.Discard) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "agentpty-test", Version: "v0.0.0"}, nil)
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}

	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"pty-write", map[string]any{"id": "pty-99", "input": "ls"}, "no such session"},
		{"pty-kill", map[string]any{"id": "pty-99"}, "no such session"},
		{"pty-start", map[string]any{"command": "true", "colums": 80}, "unknown argument"},
		{"pty-start", map[string]any{"command": ""}, "command is empty"},
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
		if err != nil {
			t.Errorf("%s %v: protocol error %v, want a tool error", tc.tool, tc.args, err)
			continue
		}
		if text := textOf(res); !res.IsError || !strings.Contains(text, tc.want) {
			t.Errorf("%s %v: isError %t, %q; want a tool error saying %q", tc.tool, tc.args, res.IsError, text, tc.want)
		}
	}

	if err := cs.Close(); err != nil {
		t.Errorf("close the client: %v", err)
	}
	if err := <-done; err != nil {
		t.Errorf("run: %v", err)
	}
}

// The instructions speak of what the tools offer and of nothing else.
func TestInstructionsFollowTheTools(t *testing.T) {
	m := agentpty.NewManager(agentpty.Options{})
	defer m.Close()
	tools := m.Tools()
	got := instructions(tools)
	for _, name := range []string{"pty-start", "pty-write", "pty-kill", "wait_for", "submit", "input_hidden"} {
		if !strings.Contains(got, name) {
			t.Errorf("the instructions leave out %s", name)
		}
	}
	offered := map[string]bool{}
	for _, tool := range tools {
		offered[tool.Name] = true
		for _, schema := range []json.RawMessage{tool.InputSchema, tool.OutputSchema} {
			var v struct{ Properties map[string]any }
			_ = json.Unmarshal(schema, &v)
			for p := range v.Properties {
				offered[tool.Name+"."+p] = true
			}
		}
	}
	for needs, text := range map[string]string{"pty-run": "pty-run", "pty-write.literal": "literal: true", "pty-write.wait_until": "wait_until",
		"pty-write.wait_for_regex": "wait_for_regex", "pty-write.state": "waiting_input", "pty-write.screen": `screen: "full"`} {
		if strings.Contains(got, text) != offered[needs] {
			t.Errorf("the instructions mention %s: %t; the tools offer %s: %t", text, !offered[needs], needs, offered[needs])
		}
	}
	// With every capability the contract names, every paragraph is there.
	all := append(tools, agentpty.Tool{Name: "pty-run", InputSchema: json.RawMessage(`{}`)},
		agentpty.Tool{Name: "pty-write", InputSchema: json.RawMessage(`{"properties":{"literal":{},"wait_until":{},"wait_for_regex":{},"screen":{}}}`),
			OutputSchema: json.RawMessage(`{"properties":{"state":{},"waited":{}}}`)})
	if full := instructions(all); strings.Count(full, "\n\n")+1 != len(guide) {
		t.Errorf("with every capability the instructions have %d paragraphs, want %d", strings.Count(full, "\n\n")+1, len(guide))
	}
	// docs/mcp.md shows the model's instructions as they are.
	readme, err := os.ReadFile("../../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range guide {
		if !strings.Contains(string(readme), "> "+g.text+"\n") {
			t.Errorf("docs/mcp.md lacks the paragraph %q", g.text)
		}
	}
}

// toolResult is a successful call: its text content and that text decoded.
type toolResult struct {
	text   string
	result struct {
		ID     string `json:"id"`
		Output string `json:"output"`
	}
}

// call makes a call that must succeed and, with schemas, checks its
// structured content against the tool's output schema.
func call(t *testing.T, ctx context.Context, cs *mcp.ClientSession, schemas map[string]*jsonschema.Resolved, tool string, args map[string]any) toolResult {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", tool, args, err)
	}
	var r toolResult
	r.text = textOf(res)
	if res.IsError {
		t.Fatalf("%s %v: tool error %s", tool, args, r.text)
	}
	if err := json.Unmarshal([]byte(r.text), &r.result); err != nil {
		t.Fatalf("%s %v: result %q is not JSON: %v", tool, args, r.text, err)
	}
	if s := schemas[tool]; s != nil {
		var v any
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &v)
		if err := s.Validate(v); err != nil {
			t.Errorf("%s: structured content %s does not validate against the output schema: %v", tool, b, err)
		}
	}
	return r
}

func textOf(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// connectInProcess serves the tools to the SDK's client over in-memory
// transports, in this process, through w if not nil. The server ends when
// the test does.
func connectInProcess(t *testing.T, ctx context.Context, opts *mcp.ClientOptions, w *wire) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- run(ctx, agentpty.Options{}, st, io.Discard) }()
	var client mcp.Transport = ct
	if w != nil {
		w.Transport, client = ct, w
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agentpty-test", Version: "v0.0.0"}, opts).Connect(ctx, client, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("the server: %v", err)
		}
	})
	return cs
}

// A call with a progress token whose wait is silent still gets a
// notification at least every second, with the time elapsed and the
// wait's total, and none after its result. Read off the wire: the client
// hands notifications to its handler on a goroutine of their own, so one
// sent before the result may reach the handler after the call returned.
func TestProgressWhileSilent(t *testing.T) {
	ctx := testCtx(t)
	w := &wire{}
	cs := connectInProcess(t, ctx, nil, w)
	id := startID(t, ctx, cs, map[string]any{"command": "echo ready; exec cat", "wait_for": "ready"})

	params := &mcp.CallToolParams{Name: "pty-write", Arguments: map[string]any{"id": id, "wait_for": "never printed", "wait_ms": 2500}}
	params.SetProgressToken("silent")
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("pty-write: %v %s", err, textOf(res))
	}
	// The kill's result comes after anything the server sent before it.
	kill, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pty-kill", Arguments: map[string]any{"id": id}})
	if err != nil || kill.IsError {
		t.Fatalf("pty-kill: %v %s", err, textOf(kill))
	}

	var call jsonrpc.ID
	var prev time.Time
	answered, count, last := false, 0, 0.0
	for _, m := range w.messages() {
		switch msg := m.msg.(type) {
		case *jsonrpc.Request:
			switch {
			case m.sent && msg.Method == "tools/call" && strings.Contains(string(msg.Params), `"progressToken":"silent"`):
				call, prev = msg.ID, m.at
			case !m.sent && msg.Method == "notifications/progress":
				var p mcp.ProgressNotificationParams
				if err := json.Unmarshal(msg.Params, &p); err != nil {
					t.Fatalf("progress %s: %v", msg.Params, err)
				}
				if answered {
					t.Errorf("progress %+v after the call's result", p)
					continue
				}
				count++
				if gap := m.at.Sub(prev); gap > time.Second {
					t.Errorf("%v without a progress notification", gap)
				}
				if p.ProgressToken != "silent" || p.Total != 2.5 || p.Progress <= last || p.Progress > 3 || !strings.Contains(p.Message, "of 2.5 s") {
					t.Errorf("progress %+v: want token silent, total 2.5, elapsed seconds increasing, and a message saying so", p)
				}
				prev, last = m.at, p.Progress
			}
		case *jsonrpc.Response:
			if !m.sent && call.IsValid() && msg.ID == call {
				answered = true
				if gap := m.at.Sub(prev); gap > time.Second {
					t.Errorf("%v without a progress notification before the result", gap)
				}
			}
		}
	}
	if !answered || count < 2 {
		t.Errorf("%d progress notifications in a silent wait of 2.5 s (answered: %v), want one at least every second", count, answered)
	}
}

// wire is a client transport that records the messages sent and read, in
// order, with when.
type wire struct {
	mcp.Transport
	mu  sync.Mutex
	log []wireMessage
}

type wireMessage struct {
	at   time.Time
	sent bool
	msg  jsonrpc.Message
}

func (w *wire) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := w.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &wireConn{Connection: c, w: w}, nil
}

func (w *wire) add(sent bool, msg jsonrpc.Message) {
	w.mu.Lock()
	w.log = append(w.log, wireMessage{time.Now(), sent, msg})
	w.mu.Unlock()
}

func (w *wire) messages() []wireMessage {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]wireMessage(nil), w.log...)
}

type wireConn struct {
	mcp.Connection
	w *wire
}

func (c *wireConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		c.w.add(false, msg)
	}
	return msg, err
}

func (c *wireConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	c.w.add(true, msg) // before: the answer may be read before Write returns
	return c.Connection.Write(ctx, msg)
}

// Arguments that are not a JSON object are a tool error a model can read.
func TestArgumentsArrayIsAnswered(t *testing.T) {
	ctx := testCtx(t)
	cs := connectInProcess(t, ctx, nil, nil)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pty-kill", Arguments: []any{"pty-1"}})
	if err != nil {
		t.Skipf("the SDK refuses the call itself: %v", err)
	}
	if !res.IsError || !strings.Contains(textOf(res), "arguments must be a JSON object") || strings.Contains(textOf(res), "agentpty.") {
		t.Errorf("pty-kill with an array: %s; want a tool error saying the arguments must be a JSON object", textOf(res))
	}
}

func TestWaitTotal(t *testing.T) {
	for _, c := range []struct {
		tool, args string
		want       time.Duration
	}{
		{"pty-write", `{"id":"pty-1"}`, 700 * time.Millisecond},
		{"pty-write", `{"id":"pty-1","wait_for":"x"}`, 10 * time.Second},
		{"pty-start", `{"command":"x","wait_until":"input","wait_ms":3000}`, 3 * time.Second},
		{"pty-write", `{"id":"pty-1","wait_ms":90000}`, 30 * time.Second},
		{"pty-run", `{"id":"pty-1","command":"x"}`, 10 * time.Second},
		{"pty-run", `{"id":"pty-1","command":"x","timeout_ms":1500}`, 1500 * time.Millisecond},
		{"pty-kill", `{"id":"pty-1"}`, 0},
		{"pty-write", `[1]`, 0},
	} {
		if got := waitTotal(c.tool, json.RawMessage(c.args)); got != c.want {
			t.Errorf("waitTotal(%s, %s) = %v, want %v", c.tool, c.args, got, c.want)
		}
	}
}

// A pty-run's progress shows the command it runs, never the line that
// sources the command's file in the session's private directory.
func TestProgressShowsTheRunCommand(t *testing.T) {
	ctx := testCtx(t)
	cs, _, n := connect(t, ctx)
	id := startID(t, ctx, cs, map[string]any{"shell": true})
	params := &mcp.CallToolParams{Name: "pty-run", Arguments: map[string]any{"id": id, "command": "sleep 2; echo slept", "timeout_ms": 1000}}
	params.SetProgressToken("tok-run")
	if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
		t.Fatalf("pty-run: %v %s", err, textOf(res))
	}
	n.awaitProgress(t, ctx, "sleep 2; echo slept")
	params = &mcp.CallToolParams{Name: "pty-write", Arguments: map[string]any{"id": id, "wait_for": "slept", "wait_ms": 10000}}
	params.SetProgressToken("tok-write")
	if res, err := cs.CallTool(ctx, params); err != nil || res.IsError || strings.Contains(textOf(res), "agentpty-") {
		t.Fatalf("pty-write: %v %s", err, textOf(res))
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, p := range n.progress {
		if strings.Contains(p.Message, "agentpty-") || strings.Contains(p.Message, ". '") {
			t.Errorf("progress shows the internal source line: %q", p.Message)
		}
	}
}

// startID calls pty-start with args and returns the session's id.
func startID(t *testing.T, ctx context.Context, cs *mcp.ClientSession, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pty-start", Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("pty-start: %v %s", err, textOf(res))
	}
	var id struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal([]byte(textOf(res)), &id)
	return id.ID
}
