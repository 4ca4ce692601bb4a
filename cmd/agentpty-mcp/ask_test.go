package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/rules"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// answers is a person answering approval forms from a script, keeping
// what each form said.
type answers struct {
	mu    sync.Mutex
	next  []string
	asked []string
}

func (a *answers) handle(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r.Params.Mode != "form" || len(a.next) == 0 {
		return nil, fmt.Errorf("unexpected elicitation (%s): %s", r.Params.Mode, r.Params.Message)
	}
	d := a.next[0]
	a.next, a.asked = a.next[1:], append(a.asked, r.Params.Message)
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": d}}, nil
}

// expect sets the next answer and returns how many forms were shown.
func (a *answers) expect(d ...string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.next = append(a.next, d...)
	return len(a.asked)
}

func (a *answers) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.asked)
}

// With --approve ask, what the rules refuse is put to the person: deny
// is ErrDenied for the model and nothing is typed; allow for this
// session holds for that session and no other; allow once holds once.
// Both protocol versions; and a client that cannot ask leaves it to the
// rules.
func TestApproveAsk(t *testing.T) {
	policy := rules.Rules{Allow: []string{"cat", "echo *"}}
	for _, version := range protocols {
		t.Run(version, func(t *testing.T) {
			ctx := testCtx(t)
			a := &answers{}
			opts := agentpty.Options{Approver: newAskApprover(policy), ApproveWrites: true}
			cs := connectHost(t, ctx, opts, host{}, &mcp.ClientOptions{ElicitationHandler: a.handle}, version, nil, io.Discard)
			one, two := startReady(t, ctx, cs, "cat", ""), startReady(t, ctx, cs, "cat", "")
			write := func(id, input string) (string, bool) {
				return callTool(t, ctx, cs, "pty-write", map[string]any{"id": id, "input": input, "submit": true, "wait_for": input})
			}
			a.expect(deny)
			if text, isErr := write(one, "forbidden1"); !isErr || !strings.HasPrefix(text, "agentpty: denied") || !strings.Contains(text, "the person refused") {
				t.Errorf("denied by the person: %s", text)
			}
			if n := a.count(); n != 1 || !strings.Contains(a.asked[0], one) || !strings.Contains(a.asked[0], "forbidden1") || !strings.Contains(a.asked[0], "Working directory") {
				t.Errorf("%d forms; the first said %q", n, a.asked)
			}
			a.expect(allowSession)
			if text, isErr := write(one, "forbidden2"); isErr || !strings.Contains(text, "forbidden2") || strings.Contains(text, "forbidden1") {
				t.Errorf("allowed for the session: %s; want forbidden2 typed and the denied forbidden1 not", text)
			}
			if text, isErr := write(one, "forbidden3"); isErr || a.count() != 2 {
				t.Errorf("a second write to the allowed session: %s, after %d forms; want no form", text, a.count())
			}
			a.expect(allowOnce, deny)
			if text, isErr := write(two, "forbidden4"); isErr || a.count() != 3 {
				t.Errorf("another session: %s after %d forms; want a form and the write", text, a.count())
			}
			if text, isErr := write(two, "forbidden5"); !isErr || a.count() != 4 || !strings.Contains(text, "agentpty: denied") {
				t.Errorf("allow once held past once: %s after %d forms", text, a.count())
			}
			if text, isErr := write(one, "echo allowed"); isErr || a.count() != 4 {
				t.Errorf("what the rules allow: %s after %d forms; want no form", text, a.count())
			}
		})
	}
	t.Run("no elicitation", func(t *testing.T) {
		ctx := testCtx(t)
		opts := agentpty.Options{Approver: newAskApprover(policy), ApproveWrites: true}
		cs := connectHost(t, ctx, opts, host{}, nil, "", nil, io.Discard)
		id := startReady(t, ctx, cs, "cat", "")
		text, isErr := callTool(t, ctx, cs, "pty-write", map[string]any{"id": id, "input": "forbidden", "submit": true})
		if !isErr || !strings.HasPrefix(text, "agentpty: denied") || strings.Contains(text, "the person") {
			t.Errorf("a client without elicitation: %s; want the rules' denial", text)
		}
	})
}

// pty-list finds a server started by an earlier call; a read of top -d 1
// with wait_until settled returns between two of its redraws.
func TestListAndSettledThroughMCP(t *testing.T) {
	ctx := testCtx(t)
	cs := connectHost(t, ctx, agentpty.Options{}, host{}, nil, "", nil, io.Discard)
	id := startReady(t, ctx, cs, `echo "listening on :3000"; exec cat`, "listening on")
	if text, isErr := callTool(t, ctx, cs, "pty-write", map[string]any{"id": id, "wait_until": "input"}); isErr || !strings.Contains(text, `"foreground":"cat"`) {
		t.Fatalf("waiting for cat: %s", text)
	}
	text, isErr := callTool(t, ctx, cs, agentpty.ToolList, map[string]any{})
	var list agentpty.ListResult
	if isErr || json.Unmarshal([]byte(text), &list) != nil || len(list.Sessions) != 1 ||
		list.Sessions[0].ID != id || list.Sessions[0].LastLine != "listening on :3000" || list.Sessions[0].State != agentpty.StateWaitingInput {
		t.Errorf("pty-list: %s", text)
	}
	text, isErr = callTool(t, ctx, cs, "pty-start", map[string]any{"command": "exec top -d 1", "wait_until": "settled", "wait_ms": 20000})
	var top struct {
		Output, Waited string
	}
	if isErr || json.Unmarshal([]byte(text), &top) != nil || top.Waited != "settled" || !strings.Contains(top.Output, "load average") {
		t.Errorf("top with wait_until settled: %s", text)
	}
}

// The flags of the person in the loop: --approve ask wraps the rules,
// anything else but rules is refused, and --secret-program or
// --secret-any offer pty-secret.
func TestPersonFlags(t *testing.T) {
	c, err := parseFlags([]string{"--approve", "ask", "--allow", "cat", "--secret-program", "sudo"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := c.options()
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := opts.Approver.(*askApprover); !ok || a.rules == nil || len(opts.SecretPrograms) != 1 || !c.host().secrets {
		t.Errorf("--approve ask --allow cat --secret-program sudo: approver %T, secret programs %v, host %+v", opts.Approver, opts.SecretPrograms, c.host())
	}
	c, _ = parseFlags(nil, io.Discard)
	if opts, _ := c.options(); opts.Approver != nil || c.host().secrets {
		t.Errorf("no flags: approver %T, pty-secret offered %v", opts.Approver, c.host().secrets)
	}
	c, _ = parseFlags([]string{"--approve", "maybe"}, io.Discard)
	if _, err := c.options(); err == nil || !strings.Contains(err.Error(), "--approve") {
		t.Errorf("--approve maybe: %v", err)
	}
	readme, err := os.ReadFile("../../docs/mcp.md")
	if err != nil || !strings.Contains(string(readme), "> "+secretGuide+"\n") {
		t.Errorf("docs/mcp.md lacks pty-secret's paragraph (%v)", err)
	}
	c, _ = parseFlags([]string{"--secret-any"}, io.Discard)
	if opts, _ := c.options(); !c.host().secrets || opts.SecretPrograms != nil {
		t.Errorf("--secret-any: host %+v, secret programs %v", c.host(), opts.SecretPrograms)
	}
}
