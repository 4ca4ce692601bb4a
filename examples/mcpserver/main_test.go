package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentpty/agentpty"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A client on in-memory pipes lists the library's tools and runs
// python3 through pty-start and pty-write.
func TestToolsAndCall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m := agentpty.NewManager(agentpty.Options{Shell: []string{"bash", "-c"}})
	defer m.Close()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := newServer(m).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != len(m.Tools()) || tools.Tools[0].InputSchema == nil {
		t.Fatalf("tools/list: %v %+v; want the %d tools of Manager.Tools with their schemas", err, tools, len(m.Tools()))
	}
	call := func(name string, args map[string]any) map[string]any {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		var out map[string]any
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	start := call("pty-start", map[string]any{"command": "echo ready; read x; echo got-$x", "wait_for": "ready"})
	w := call("pty-write", map[string]any{"id": start["id"], "input": "abc", "submit": true, "wait_for": "got-abc"})
	if w["matched"] != true || !strings.Contains(w["output"].(string), "got-abc") {
		t.Errorf("pty-write: %+v", w)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "pty-write", Arguments: map[string]any{"id": "pty-99"}})
	if err != nil || !res.IsError {
		t.Errorf("a write to no session: %v %+v; want a tool error", err, res)
	}
}
