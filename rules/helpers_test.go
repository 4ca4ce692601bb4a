package rules

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/testkit"
)

// The tests of package rules drive real programs through agentpty's
// sessions, checked for leaks as the library's own tests are.

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(testkit.EmptyHome()))
}

// newManager returns a manager that the test closes at its end, checking
// that nothing the sessions started is still running and that no file
// descriptor leaked (testkit.Managed).
func newManager(t *testing.T, opts agentpty.Options) *agentpty.Manager {
	t.Helper()
	var m *agentpty.Manager
	pids := func() (out []int) {
		for _, info := range m.List() {
			out = append(out, info.PID)
		}
		return out
	}
	opts.Env = append(slices.Clip(opts.Env), testkit.Managed(t, pids, func() error { return m.Close() }))
	m = agentpty.NewManager(opts)
	return m
}

// mustStart starts a session or fails the test.
func mustStart(t *testing.T, m *agentpty.Manager, req agentpty.StartRequest) agentpty.StartResult {
	t.Helper()
	res, err := m.Start(context.Background(), req)
	testkit.Done(t, fmt.Sprintf("Start(%q)", req.Command), err, req.WaitFor, res.Matched, res.Output)
	return res
}

// mustWrite writes or fails the test, and fails if wait_for did not match.
func mustWrite(t *testing.T, m *agentpty.Manager, req agentpty.WriteRequest) agentpty.WriteResult {
	t.Helper()
	res, err := m.Write(context.Background(), req)
	testkit.Done(t, fmt.Sprintf("Write(%q)", req.Input), err, req.WaitFor, res.Matched, res.Output)
	return res
}

// waitCtx bounds a test's blocking call; far beyond any wait the library
// makes, so it only turns a hang into a failure.
func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newSandbox builds a sandbox or skips the test with NewSandbox's reason.
func newSandbox(t *testing.T, p agentpty.SandboxPolicy) agentpty.Sandbox {
	t.Helper()
	sb, err := agentpty.NewSandbox(p)
	if err != nil {
		testkit.Lacks(t, "there is no kernel sandbox here: %v", err)
	}
	return sb
}

func ms(n int) *int { return &n }

// The prompt tests (controlchars, exec, history, replies, terminal...)
// type lines into an interactive bash, unconfined for the control and
// under the rules.

// promptManager returns a manager whose commands run through bash -c (no
// login profile). Confined, Rules decide its starts and, with
// ApproveWrites, its writes; unconfined, nothing is asked: the control.
func promptManager(t *testing.T, rules Rules, confined bool) *agentpty.Manager {
	opts := agentpty.Options{Shell: []string{"bash", "-c"}}
	if confined {
		opts.Approver, opts.ApproveWrites = rules, true
	}
	return newManager(t, opts)
}

// promptCommand runs an interactive bash at its prompt after pre.
func promptCommand(pre string) string {
	const sh = "exec bash --norc --noprofile -i"
	if pre == "" {
		return sh
	}
	return pre + "; " + sh
}

// promptSession starts promptCommand(pre) in a new directory holding the
// directory d and returns the start and the directory; the manager's
// rules must allow the command.
func promptSession(t *testing.T, m *agentpty.Manager, pre string) (agentpty.StartResult, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	res := mustStart(t, m, agentpty.StartRequest{Command: promptCommand(pre), Cwd: dir, WaitUntil: agentpty.WaitUntilInput})
	if res.State != agentpty.StateWaitingInput || res.Foreground != "bash" {
		t.Fatalf("bash is not at its prompt: %+v", res)
	}
	return res, dir
}

// removed reports whether dir's directory d is gone.
func removed(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "d"))
	return errors.Is(err, os.ErrNotExist)
}

// typeLine types line and Enter, waiting for the prompt after it.
func typeLine(ctx context.Context, m *agentpty.Manager, id, line string) (agentpty.WriteResult, error) {
	return m.Write(ctx, agentpty.WriteRequest{ID: id, Input: line, Literal: true, Submit: true, WaitUntil: agentpty.WaitUntilInput, WaitMS: ms(10000)})
}
