package agentpty

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentpty/agentpty/internal/testkit"
)

// lostFields is the part of a result that says what output was lost.
type lostFields struct {
	Truncated  int64  `json:"truncated"`
	OutputLost *int64 `json:"output_lost"`
	Output     string `json:"output"`
}

// callLost calls a tool and returns its result's loss fields and JSON.
func callLost(t *testing.T, m *Manager, tool, args string) (lostFields, string) {
	t.Helper()
	raw, err := m.Call(context.Background(), tool, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s %s: %v", tool, args, err)
	}
	var f lostFields
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	return f, string(raw)
}

// A flood's result says its own output lost bytes; the next result, whose
// output is whole, says 0 while truncated keeps the session's count.
func TestOutputLostIsThisResultsOwn(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{Shell: []string{"bash", "-c"}, ScrollbackBytes: 8 << 10})
	res := mustStart(t, m, StartRequest{Command: "echo ready; read; seq 1 200000; echo flooded; read; echo one; read", WaitFor: "ready"})
	id := `{"id":"` + res.ID + `"`
	flood, raw := callLost(t, m, ToolWrite, id+`,"submit":true,"wait_for":"flooded"}`)
	if flood.Truncated < 1000000 || flood.OutputLost == nil || *flood.OutputLost != flood.Truncated {
		t.Fatalf("the flood's result should show its own loss (all of truncated): %.300s", raw)
	}
	echo, raw := callLost(t, m, ToolWrite, id+`,"submit":true,"wait_for":"one"}`)
	if echo.Truncated != flood.Truncated || echo.OutputLost == nil || *echo.OutputLost != 0 || !strings.Contains(raw, `"output_lost":0`) {
		t.Fatalf("a one-line result after the flood should say output_lost 0 beside the session's truncated %d: %s", flood.Truncated, raw)
	}
	kill, raw := callLost(t, m, ToolKill, id+`}`)
	if kill.Truncated != flood.Truncated || kill.OutputLost == nil || *kill.OutputLost != 0 {
		t.Fatalf("the kill lost nothing of its own: %s", raw)
	}
}

// pty-run's results (and a shell start's) carry output_lost the same way.
func TestOutputLostOnRun(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{ScrollbackBytes: 8 << 10})
	start, raw := callLost(t, m, ToolStart, `{"shell":true}`)
	if start.OutputLost != nil {
		t.Fatalf("nothing lost yet, output_lost should be absent: %s", raw)
	}
	var id struct{ ID string }
	_ = json.Unmarshal([]byte(raw), &id)
	flood, raw := callLost(t, m, ToolRun, `{"id":"`+id.ID+`","command":"seq 1 100000"}`)
	if flood.Truncated < 400000 || flood.OutputLost == nil || *flood.OutputLost < 400000 {
		t.Fatalf("the flooding run's result should show its loss: %.300s", raw)
	}
	echo, raw := callLost(t, m, ToolRun, `{"id":"`+id.ID+`","command":"echo hi"}`)
	if echo.Output != "hi" || echo.Truncated != flood.Truncated || echo.OutputLost == nil || *echo.OutputLost != 0 {
		t.Fatalf("echo's run lost nothing of its own: %s", raw)
	}
}

// After a pty-run that timed out or was cancelled, no read and no line a
// host shows (Tail, which output events and MCP progress carry) holds the
// line that sources the command's file: the command shows instead.
func TestStoppedRunShowsTheCommand(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	start, err := m.Start(waitCtx(t), StartRequest{Shell: true})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := m.Session(start.ID)
	var seen []string
	check := func(what string, texts ...string) {
		t.Helper()
		all := strings.Join(texts, "\n")
		seen = append(seen, all)
		if strings.Contains(all, "agentpty-") || strings.Contains(all, ". '") {
			t.Errorf("%s shows the internal source line: %q", what, all)
		}
	}
	run, err := m.Run(waitCtx(t), RunRequest{ID: start.ID, Command: "sleep 2; echo woke", TimeoutMS: ms(300)})
	if err != nil || run.PromptAfter {
		t.Fatalf("sleep 2 within 300 ms: %+v, %v", run, err)
	}
	check("the timed-out run", run.Output)
	check("Tail after it", s.Tail(3)...)
	if !strings.Contains(seen[1], "sleep 2; echo woke") {
		t.Errorf("Tail does not show the command: %q", seen[1])
	}
	w := mustWrite(t, m, WriteRequest{ID: start.ID, WaitUntil: WaitUntilInput, WaitMS: ms(15000)})
	check("the read after it", w.Output)
	if !strings.Contains(w.Output, "woke") {
		t.Fatalf("the command did not end: %q", w.Output)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := m.Run(ctx, RunRequest{ID: start.ID, Command: "sleep 2; echo again"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a run cancelled after 300 ms: %v", err)
	}
	peek := mustWrite(t, m, WriteRequest{ID: start.ID, Peek: true, WaitMS: ms(0)})
	check("a peek after the cancelled run", peek.Output)
	w = mustWrite(t, m, WriteRequest{ID: start.ID, WaitFor: "again", WaitMS: ms(15000)})
	check("the read after the cancelled run", w.Output)
	if !strings.Contains(w.Output, "sleep 2; echo again") || !strings.Contains(peek.Output, "sleep 2; echo again") {
		t.Errorf("the reads after the cancelled run do not show the command: peek %q, read %q", peek.Output, w.Output)
	}
	check("the scrollback", s.Scrollback())
}

// runShown replaces source lines only: a forgotten run's stands for
// itself, and text that merely starts like one is kept.
func TestRunShownText(t *testing.T) {
	testkit.Parallel(t)
	var r runShown
	if got := r.text("$  . '/d/1'"); got != "$  . '/d/1'" {
		t.Errorf("no run yet: %q", got)
	}
	r.add("/d", 1, "echo a")
	r.add("/d", runShownKept+1, "echo b")
	for in, want := range map[string]string{
		"$  . '/d/1'":           "$ " + runShownOld, // forgotten: the newest runShownKept are kept
		"$  . '/d/65'\nb\n$ ":   "$ echo b\nb\n$ ",
		"x . '/d/x'":            "x . '/d/x'",
		"$  . '/d/65 . '/d/65'": "$  . '/d/65echo b",
	} {
		if got := r.text(in); got != want {
			t.Errorf("text(%q) = %q, want %q", in, got, want)
		}
	}
}
