package agentpty

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// A server started by an earlier call is listed with its state and last
// line, and listing reads nothing; an exited session shows its exit code;
// a killed one is gone.
func TestListFindsEarlierSessions(t *testing.T) {
	m := newManager(t, Options{Shell: []string{"bash", "-c"}})
	ctx := waitCtx(t)
	srv := mustStart(t, m, StartRequest{Command: `echo "serving on :8080"; exec cat`, WaitFor: "serving on :8080"})
	done := mustStart(t, m, StartRequest{Command: `echo finishing; exit 7`, WaitMS: ms(10000)})
	if !done.Exited {
		t.Fatalf("the second command did not exit: %+v", done)
	}
	gone := mustStart(t, m, StartRequest{Command: "echo ready; exec cat", WaitFor: "ready"})
	if _, err := m.Kill(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, m, WriteRequest{ID: srv.ID, Input: "GET /health", Submit: true, WaitFor: "GET /health", WaitMS: ms(10000)})
	// What the program printed after the last read stays unread.
	mustWrite(t, m, WriteRequest{ID: srv.ID, Input: "unread line", Submit: true, WaitMS: ms(0), Peek: true})
	sess, _ := m.Session(srv.ID)
	awaitUnread(t, sess, "unread line\nunread line")

	raw, err := m.Call(ctx, ToolList, nil)
	if err != nil {
		t.Fatal(err)
	}
	var res ListResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	byID := map[string]ListedSession{}
	for _, s := range res.Sessions {
		byID[s.ID] = s
	}
	if s, ok := byID[srv.ID]; !ok || s.State != StateWaitingInput || s.Foreground != "cat" || s.LastLine != "unread line" ||
		!strings.Contains(s.Command, "serving on") || s.ExitCode != nil || s.AgeSeconds < 0 {
		t.Errorf("the server is listed as %+v (found %v); want waiting_input in cat, last line %q", s, ok, "unread line")
	}
	if s, ok := byID[done.ID]; !ok || s.State != StateExited || s.ExitCode == nil || *s.ExitCode != 7 || s.LastLine != "finishing" {
		t.Errorf("the exited session is listed as %+v (found %v); want exited with code 7", s, ok)
	}
	if _, ok := byID[gone.ID]; ok || len(res.Sessions) != 2 {
		t.Errorf("the killed session is still listed: %s", raw)
	}
	// Listing consumed nothing: the next read returns the unread lines.
	w := mustWrite(t, m, WriteRequest{ID: srv.ID, WaitMS: ms(0)})
	if !strings.Contains(w.Output, "unread line\nunread line") {
		t.Errorf("after pty-list the next read returned %q; want the unread lines", w.Output)
	}
	if _, err := m.Call(context.Background(), ToolList, json.RawMessage(`{"id":"pty-1"}`)); !isErr(err, ErrInvalid) {
		t.Errorf("pty-list with an argument: %v; want ErrInvalid", err)
	}
}
