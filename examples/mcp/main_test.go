package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// serverEnv makes the test binary run the server instead of the tests, so
// TestStdio talks to the real main over real pipes with no build step.
const serverEnv = "AGENTPTY_MCP_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) == "1" {
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// connect starts the server as a subprocess and connects the SDK's client.
// The session is closed when the test ends, if the test has not closed it.
func connect(t *testing.T, ctx context.Context) (*mcp.ClientSession, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// Without atexit_sleep_ms=0 a server built with -race lingers a second
	// after it exits, and every Close waits for it.
	cmd.Env = append(os.Environ(), serverEnv+"=1", "GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0")
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "agentpty-test", Version: "v0.0.0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to the server: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, cmd
}

func TestStdio(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, _ := connect(t, ctx)

	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("list tools: %v", err)
	}
	required := map[string][]string{}
	for _, tool := range list.Tools {
		if tool.Description == "" {
			t.Errorf("%s has no description", tool.Name)
		}
		schema, _ := tool.InputSchema.(map[string]any)
		var req []string
		if rs, ok := schema["required"].([]any); ok {
			for _, r := range rs {
				req = append(req, r.(string))
			}
		}
		required[tool.Name] = req
	}
	want := map[string][]string{"pty-start": nil, "pty-write": {"id"}, "pty-run": {"id", "command"}, "pty-kill": {"id"}} // pty-start needs no command with shell: true
	for name, args := range want {
		got, ok := required[name]
		if !ok {
			t.Errorf("tool %s is missing; the server lists %v", name, required)
			continue
		}
		if !slices.Equal(got, args) {
			t.Errorf("%s requires %v, want %v", name, got, args)
		}
	}
	if len(required) != len(want) {
		t.Errorf("the server lists %d tools (%v), want %d", len(required), required, len(want))
	}

	// wait_for, not the default wait: on a loaded machine the login
	// profile alone can outlast the 700 ms a start waits without it.
	start := call(t, ctx, cs, "pty-start", map[string]any{"command": "echo hello", "wait_for": "hello"})
	if !strings.Contains(start.text, "hello") {
		t.Errorf("pty-start output %q does not contain hello", start.text)
	}
	if start.result.ID == "" {
		t.Fatalf("pty-start returned no id: %s", start.text)
	}
	kill := call(t, ctx, cs, "pty-kill", map[string]any{"id": start.result.ID})
	if kill.result.ID != start.result.ID {
		t.Errorf("pty-kill answered for %q, want %q", kill.result.ID, start.result.ID)
	}
	// Close waits for the server to exit; an error is its exit status.
	if err := cs.Close(); err != nil {
		t.Errorf("close the client: %v", err)
	}
}

// TestShutdown checks that a program the model left running does not
// outlive the server, whether the client goes away or the server is told
// to stop.
func TestShutdown(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop func(*exec.Cmd) error
	}{
		{"stdin closed", func(*exec.Cmd) error { return nil }},
		{"SIGTERM", func(cmd *exec.Cmd) error { return cmd.Process.Signal(syscall.SIGTERM) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs, cmd := connect(t, ctx)

			// exec keeps the pid the shell printed; waiting for "ready" lets
			// the login profile finish before anything is killed.
			start := call(t, ctx, cs, "pty-start", map[string]any{"command": "echo ready $$; exec sleep 300", "wait_for": "ready"})
			_, after, _ := strings.Cut(start.result.Output, "ready ")
			pid, err := strconv.Atoi(strings.Fields(after + " x")[0])
			if err != nil {
				t.Fatalf("no pid in the output %q", start.result.Output)
			}
			if err := syscall.Kill(pid, 0); err != nil {
				t.Fatalf("the program is not running before shutdown: %v", err)
			}
			if err := tc.stop(cmd); err != nil {
				t.Fatalf("stop the server: %v", err)
			}
			// Close closes the server's stdin and returns once it has
			// exited; the server closes its manager before it exits.
			if err := cs.Close(); err != nil {
				t.Fatalf("close the client: %v", err)
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- run(ctx, st) }()
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

// toolResult is a successful call: its text content and that text decoded.
type toolResult struct {
	text   string
	result struct {
		ID     string `json:"id"`
		Output string `json:"output"`
	}
}

func call(t *testing.T, ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) toolResult {
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
	return r
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
