package agentpty

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpty/agentpty/internal/testkit"
)

// childPIDs lists the host's own children, to show a failed start left no
// process behind.
func childPIDs(t *testing.T) []int {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(s); err == nil && alive(pid) {
				pids = append(pids, pid)
			}
		}
	}
	slices.Sort(pids)
	return pids
}

// TestApproverPanicDenies: a panicking Approver denies the start; the
// host lives on, the slot is free and nothing runs.
func TestApproverPanicDenies(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	m := newManager(t, Options{MaxSessions: 1, Approver: ApproverFunc(func(_ context.Context, req ApprovalRequest) error {
		if strings.Contains(req.Command, "touch") {
			panic("approver bug")
		}
		return nil
	})})
	before := childPIDs(t)
	_, err := m.Start(waitCtx(t), StartRequest{Command: "touch " + marker})
	if !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), "the approver panicked: approver bug") {
		t.Fatalf("Start: %v; want ErrDenied naming the panic", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a start whose approver panicked ran")
	}
	if now := childPIDs(t); !slices.Equal(now, before) {
		t.Errorf("children %v before, %v after", before, now)
	}
	// The one slot is free: the next start gets it.
	mustStart(t, m, StartRequest{Command: readyCat, WaitFor: "ready"})
}

// panicSandbox panics in Prepare while armed.
type panicSandbox struct{ armed atomic.Bool }

func (p *panicSandbox) Prepare(*exec.Cmd) error {
	if p.armed.Load() {
		panic("sandbox bug")
	}
	return nil
}

// TestPreparePanicDenies: a panicking Prepare fails the start with
// ErrDenied; no child, no slot held.
func TestPreparePanicDenies(t *testing.T) {
	sb := &panicSandbox{}
	sb.armed.Store(true)
	m := newManager(t, Options{MaxSessions: 1, Sandbox: sb})
	before := childPIDs(t)
	_, err := m.Start(waitCtx(t), StartRequest{Command: readyCat})
	if !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), "Prepare panicked: sandbox bug") {
		t.Fatalf("Start: %v; want ErrDenied naming the panic", err)
	}
	if n := len(m.List()); n != 0 {
		t.Errorf("%d sessions after a failed start", n)
	}
	if now := childPIDs(t); !slices.Equal(now, before) {
		t.Errorf("children %v before, %v after", before, now)
	}
	sb.armed.Store(false)
	mustStart(t, m, StartRequest{Command: readyCat, WaitFor: "ready"})
}

// TestOnEventPanicRecovered: OnEvent panicking on every event crashes
// nothing; each event still reaches it, and sessions start and end.
func TestOnEventPanicRecovered(t *testing.T) {
	testkit.Parallel(t)
	var mu sync.Mutex
	var kinds []EventKind
	m := newManager(t, Options{MaxSessions: 1, OnEvent: func(e Event) {
		mu.Lock()
		kinds = append(kinds, e.Kind)
		mu.Unlock()
		panic("event bug")
	}})
	for range 2 { // the slot comes back after each kill
		res := mustStart(t, m, StartRequest{Command: readyCat, WaitFor: "ready"})
		if _, err := m.Kill(waitCtx(t), res.ID); err != nil {
			t.Fatalf("Kill: %v", err)
		}
	}
	if err := m.Close(); err != nil { // waits for delivery
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := strings.Count(joinKinds(kinds), string(EventCreated)); n != 2 {
		t.Errorf("events %v; want two created", kinds)
	}
	if n := strings.Count(joinKinds(kinds), string(EventKilled)); n != 2 {
		t.Errorf("events %v; want two killed", kinds)
	}
}

func joinKinds(ks []EventKind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, " ")
}

// TestApproveWrites: with ApproveWrites the Approver decides each write
// that types input; a denied one types nothing. Without it only the start
// is asked.
func TestApproveWrites(t *testing.T) {
	testkit.Parallel(t)
	var mu sync.Mutex
	var asked []ApprovalRequest
	approver := ApproverFunc(func(_ context.Context, req ApprovalRequest) error {
		mu.Lock()
		asked = append(asked, req)
		mu.Unlock()
		switch {
		case strings.Contains(req.Input, "secret"):
			return errors.New("no secrets")
		case strings.Contains(req.Input, "boom"):
			panic("approver bug")
		}
		return nil
	})
	m := newManager(t, Options{Approver: approver, ApproveWrites: true})
	res := mustStart(t, m, StartRequest{Command: readyCat, WaitFor: "ready"})
	w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: "hello", Submit: true, WaitFor: "hello"})
	if !strings.Contains(w.Output, "hello") {
		t.Fatalf("approved write: %q", w.Output)
	}
	for _, input := range []string{"secret", "boom"} {
		_, err := m.Write(waitCtx(t), WriteRequest{ID: res.ID, Input: input, Submit: true})
		if !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), `pty-write `+res.ID+` "`+input+`\r"`) {
			t.Errorf("Write(%q): %v; want ErrDenied naming the session and input", input, err)
		}
	}
	// Polling asks nothing and shows nothing of the denied input.
	mustWrite(t, m, WriteRequest{ID: res.ID, WaitMS: ms(0)})
	w = mustWrite(t, m, WriteRequest{ID: res.ID, Input: "end", Submit: true, WaitFor: "end"})
	s, _ := m.Session(res.ID)
	if strings.Contains(w.Output+s.Scrollback(), "secret") || strings.Contains(w.Output+s.Scrollback(), "boom") {
		t.Errorf("a denied write reached the terminal: %q", s.Scrollback())
	}
	mu.Lock()
	got := slices.Clone(asked)
	mu.Unlock()
	if len(got) != 5 {
		t.Fatalf("asked %d times, want 5 (start, hello, secret, boom, end): %+v", len(got), got)
	}
	if r := got[1]; r.Tool != ToolWrite || r.ID != res.ID || r.Input != "hello\r" || r.Command != readyCat {
		t.Errorf("write request %+v", r)
	}

	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	// Off by default: only the start is asked.
	mu.Lock()
	asked = nil
	mu.Unlock()
	m2 := newManager(t, Options{Approver: approver})
	res = mustStart(t, m2, StartRequest{Command: readyCat, WaitFor: "ready"})
	mustWrite(t, m2, WriteRequest{ID: res.ID, Input: "secret", Submit: true, WaitFor: "secret"})
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 || asked[0].Tool != ToolStart {
		t.Errorf("without ApproveWrites asked %+v", asked)
	}
}

// TestApproveWritesWaitsForThePrompt: a shell prints its prompt before it
// reads; a write typed as soon as the prompt shows is judged once the
// shell reads, not refused because nothing read yet. Here the shell sleeps
// between its prompt's text and the read, as a slow PROMPT_COMMAND does.
// The approver approves a write only when bash reads it.
func TestApproveWritesWaitsForThePrompt(t *testing.T) {
	m := newManager(t, Options{Approver: typedIntoBash, ApproveWrites: true,
		Env: []string{"PROMPT_COMMAND=echo at-prompt; sleep 0.3", "PS1=$ "}})
	res := mustStart(t, m, StartRequest{Command: "bash --norc --noprofile", WaitFor: "at-prompt"})
	out, err := m.Write(waitCtx(t), WriteRequest{ID: res.ID, Input: "echo hi", Submit: true, WaitFor: "hi\n"})
	if err != nil || !out.Matched {
		t.Fatalf("a write typed while the shell was about to read: %+v %v; want it approved and run", out, err)
	}
}

// TestApproveWritesWaitsOnlyASecond: the wait for a reader is bounded: a
// write typed into a program that never waits for input (a busy loop) is
// judged after about approveReaderWait, with no program reading it, so an
// approver that wants bash reading refuses it.
func TestApproveWritesWaitsOnlyASecond(t *testing.T) {
	const loop = "echo looping; while :; do :; done"
	m := newManager(t, Options{Approver: typedIntoBash, ApproveWrites: true})
	res := mustStart(t, m, StartRequest{Command: loop, WaitFor: "looping"})
	begin := time.Now()
	_, err := m.Write(waitCtx(t), WriteRequest{ID: res.ID, Input: "echo hi", Submit: true})
	took := time.Since(begin)
	if want := `typed into ""`; !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), want) {
		t.Errorf("a write into a busy loop: %v; want ErrDenied ...%s", err, want)
	}
	if took < 900*time.Millisecond || took >= 5*time.Second {
		t.Errorf("a write into a busy loop was judged after %v; want about %v", took, approveReaderWait)
	}
}

// typedIntoBash approves every start, and a write only when bash waits for
// it at its prompt (ApprovalRequest.Foreground), as package rules do.
var typedIntoBash = ApproverFunc(func(_ context.Context, req ApprovalRequest) error {
	if req.Tool == ToolWrite && req.Foreground != "bash" {
		return fmt.Errorf("typed into %q, not bash", req.Foreground)
	}
	return nil
})
