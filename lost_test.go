package agentpty

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
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
