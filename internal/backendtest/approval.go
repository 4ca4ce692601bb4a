package backendtest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agentpty/agentpty"
)

// allowAll is a host's sandbox that would let anything run: the refusal
// comes from the backend, not from a sandbox that failed.
type allowAll struct{}

func (allowAll) Prepare(*exec.Cmd) error { return nil }

// ApprovalAndSandbox: approval runs on this machine before anything
// starts; a sandbox cannot apply on the other machine, so a start with one
// is refused with ErrUnsupported and nothing runs there. The control: the
// same command, allowed and unconfined, runs.
func ApprovalAndSandbox(t *testing.T, newManager NewManager) {
	mark := filepath.Join(t.TempDir(), "ran")
	cmd := "touch " + mark
	deny := agentpty.ApproverFunc(func(ctx context.Context, req agentpty.ApprovalRequest) error {
		return errors.New("not this one")
	})
	m := newManager(t, agentpty.Options{Approver: deny})
	if _, err := m.Start(Ctx(t), agentpty.StartRequest{Command: cmd, WaitMS: ms(500)}); !errors.Is(err, agentpty.ErrDenied) {
		t.Errorf("a denied start: %v; want ErrDenied", err)
	}
	m2 := newManager(t, agentpty.Options{Sandbox: allowAll{}})
	if _, err := m2.Start(Ctx(t), agentpty.StartRequest{Command: cmd, WaitMS: ms(500)}); !errors.Is(err, agentpty.ErrUnsupported) {
		t.Errorf("a sandboxed start on another machine: %v; want ErrUnsupported", err)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("the command ran")
	}
	m3 := newManager(t, agentpty.Options{})
	MustStart(t, m3, agentpty.StartRequest{Command: cmd + "; echo done", WaitFor: "done"})
	if _, err := os.Stat(mark); err != nil {
		t.Errorf("the allowed command did not run: %v", err)
	}
}
