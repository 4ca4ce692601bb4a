package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawServer is the server over pipes the test reads and writes itself.
type rawServer struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startRaw(t *testing.T, flags ...string) *rawServer {
	t.Helper()
	cmd := serverCmd(flags...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = in.Close()
		_ = cmd.Wait()
	})
	return &rawServer{cmd: cmd, in: in, out: bufio.NewReader(out)}
}

func (r *rawServer) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		t.Fatalf("write %q: %v", line, err)
	}
}

// reply reads the next message from the server.
func (r *rawServer) reply(t *testing.T) map[string]any {
	t.Helper()
	line, err := r.out.ReadBytes('\n')
	if err != nil {
		t.Fatalf("read a reply: %v (the server has ended?)", err)
	}
	var v map[string]any
	if err := json.Unmarshal(line, &v); err != nil {
		t.Fatalf("reply %q is not a JSON object: %v", line, err)
	}
	return v
}

func errorCode(v map[string]any) float64 {
	e, _ := v["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

// Lines that are not JSON-RPC get error replies and the server serves on;
// the SDK's client then uses the same pipes.
func TestBadInputIsAnswered(t *testing.T) {
	ctx := testCtx(t)
	r := startRaw(t)
	for _, tc := range []struct {
		line string
		code float64
		id   any
	}{
		{"a stray log line", -32700, nil},
		{`{"jsonrpc":"2.0","id":"x"`, -32700, nil},
		{`[{"jsonrpc":"2.0","id":"b1","method":"ping"}]`, -32600, nil},
		{`{"id":"no-version","method":"ping"}`, -32600, "no-version"},
		{`{"jsonrpc":"1.0","id":42,"method":"ping"}`, -32600, float64(42)},
		{`"just a string"`, -32600, nil},
		{`{"jsonrpc":"2.0","id":{"an":"object"},"method":"ping"}`, -32600, nil},
	} {
		r.send(t, tc.line)
		v := r.reply(t)
		if errorCode(v) != tc.code || v["id"] != tc.id || v["jsonrpc"] != "2.0" {
			t.Errorf("%s: reply %v, want error %v with id %v", tc.line, v, tc.code, tc.id)
		}
	}
	// The server still serves: the SDK's client connects over the same pipes.
	n := &notes{news: make(chan struct{}, 1)}
	cs, err := newClient(n).Connect(ctx, &mcp.IOTransport{Reader: io.NopCloser(r.out), Writer: r.in}, nil)
	if err != nil {
		t.Fatalf("connect after bad input: %v", err)
	}
	defer cs.Close()
	start := call(t, ctx, cs, nil, "pty-start", map[string]any{"command": "echo still serving", "wait_for": "serving"})
	if !strings.Contains(start.result.Output, "still serving") {
		t.Errorf("output %q", start.result.Output)
	}
}

// A cancelled request gets no response; the server answers the next one.
func TestCancelledRequestIsNotAnswered(t *testing.T) {
	r := startRaw(t)
	r.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	if v := r.reply(t); v["result"] == nil {
		t.Fatalf("initialize: %v", v)
	}
	r.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r.send(t, `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info"}}`)
	if v := r.reply(t); v["id"] != float64(2) {
		t.Fatalf("setLevel: %v", v)
	}
	r.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"pty-start","arguments":{"command":"echo ready; exec sleep 300","wait_for":"never printed","wait_ms":30000},"_meta":{"progressToken":"p"}}}`)
	var got []map[string]any
	seen := func(pred func(map[string]any) bool) {
		for {
			v := r.reply(t)
			got = append(got, v)
			if v["id"] == float64(3) {
				t.Fatalf("the request was answered before it was cancelled: %v", v)
			}
			if pred(v) {
				return
			}
		}
	}
	isLog := func(text string) func(map[string]any) bool {
		return func(v map[string]any) bool {
			p, _ := v["params"].(map[string]any)
			s, _ := p["data"].(string)
			return v["method"] == "notifications/message" && strings.Contains(s, text)
		}
	}
	seen(func(v map[string]any) bool { return v["method"] == "notifications/progress" })
	r.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"test"}}`)
	seen(isLog("pty-1 killed"))
	r.send(t, `{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	seen(func(v map[string]any) bool { return v["id"] == float64(4) })
}
