package agentptytest

// Beyond TestBackend: helpers that fail a test on an error, and the cases
// that need a server the test can kill or configure (ShellLostConnection,
// FilesUnderTMPDIR), which a backend's own tests run.

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentpty/agentpty"
)

// NewManager returns a manager with opts whose sessions run on
// opts.Backend, or on the backend under test when that is nil; the test's
// end closes it and runs the backend's leak checks.
type NewManager func(t *testing.T, opts agentpty.Options) *agentpty.Manager

// Ctx is a context bounding one call of a case.
func Ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// StartShell starts a shell session and checks it is at its prompt.
func StartShell(t *testing.T, m *agentpty.Manager, opts ...func(*agentpty.StartRequest)) agentpty.StartResult {
	t.Helper()
	req := agentpty.StartRequest{Shell: true}
	for _, o := range opts {
		o(&req)
	}
	res, err := m.Start(Ctx(t), req)
	if err != nil {
		t.Fatalf("a shell session: %v", err)
	}
	if res.State != agentpty.StateWaitingInput || res.Foreground != "bash" || !strings.HasSuffix(res.Output, "$ ") && !strings.HasSuffix(res.Output, "# ") {
		t.Fatalf("shell start: %+v; want bash waiting at its prompt", res)
	}
	return res
}

// MustRun runs a command in a shell session or fails the test.
func MustRun(t *testing.T, m *agentpty.Manager, id, command string) agentpty.RunResult {
	t.Helper()
	res, err := m.Run(Ctx(t), agentpty.RunRequest{ID: id, Command: command})
	if err != nil {
		t.Fatalf("Run(%q): %v", command, err)
	}
	return res
}

// MustStart starts a session or fails the test, as does a wait_for that
// did not match.
func MustStart(t *testing.T, m *agentpty.Manager, req agentpty.StartRequest) agentpty.StartResult {
	t.Helper()
	res, err := m.Start(Ctx(t), req)
	if err != nil {
		t.Fatalf("Start(%q): %v", req.Command, err)
	}
	if req.WaitFor != "" && !res.Matched {
		t.Fatalf("Start(%q): %q did not appear; output %q", req.Command, req.WaitFor, res.Output)
	}
	return res
}

// MustWrite writes to a session or fails the test, as does a wait_for
// that did not match.
func MustWrite(t *testing.T, m *agentpty.Manager, req agentpty.WriteRequest) agentpty.WriteResult {
	t.Helper()
	res, err := m.Write(Ctx(t), req)
	if err != nil {
		t.Fatalf("Write(%q): %v", req.Input, err)
	}
	if req.WaitFor != "" && !res.Matched {
		t.Fatalf("Write(%q): %q did not appear; output %q", req.Input, req.WaitFor, res.Output)
	}
	return res
}

// ShellLostConnection: a shell session whose server is killed (kill)
// ends as exited, pty-run on it gets ErrExited, and Close, which would
// remove its directory there, returns at once.
func ShellLostConnection(t *testing.T, newManager NewManager, kill func()) {
	m := newManager(t, agentpty.Options{})
	id := StartShell(t, m).ID
	MustRun(t, m, id, "echo before")
	kill()
	s, _ := m.Session(id)
	if _, err := s.Wait(Ctx(t)); err != nil {
		t.Fatalf("the session did not end with its server: %v", err)
	}
	if _, err := m.Run(Ctx(t), agentpty.RunRequest{ID: id, Command: "true"}); !errors.Is(err, agentpty.ErrExited) {
		t.Errorf("pty-run after the loss: %v; want ErrExited", err)
	}
	closed := make(chan struct{})
	go func() {
		_ = m.Close() // it may say that the sessions could not be reached
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs with the server gone")
	}
}

// FilesUnderTMPDIR: MkdirTemp makes its directory under $TMPDIR of the
// far side, tmp there.
func FilesUnderTMPDIR(t *testing.T, f agentpty.Files, tmp string) {
	dir, err := f.MkdirTemp(Ctx(t), "agentpty-test")
	if err != nil {
		t.Fatal(err)
	}
	defer f.RemoveAll(Ctx(t), dir)
	if !strings.HasPrefix(dir, tmp+"/agentpty-test.") {
		t.Errorf("MkdirTemp with TMPDIR=%s made %s", tmp, dir)
	}
}
