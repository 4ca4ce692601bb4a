package agentptytest

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentpty/agentpty"
)

// allowAll is a host's sandbox that would let anything run: the refusal
// comes from the backend, not from a sandbox that failed.
type allowAll struct{}

func (allowAll) Prepare(*exec.Cmd) error { return nil }

// approvalAndSandbox: approval runs on this machine before anything
// starts; a sandbox cannot apply on another machine, so Options.Validate
// refuses it with the backend and nothing runs there. The control: the
// same command, allowed and unconfined, runs.
func approvalAndSandbox(t *testing.T, s *suite) {
	mark := s.farTemp(t) + "/ran"
	cmd := "touch " + mark
	deny := agentpty.ApproverFunc(func(ctx context.Context, req agentpty.ApprovalRequest) error {
		return errors.New("not this one")
	})
	m := s.manager(t, agentpty.Options{Approver: deny})
	if _, err := m.Start(Ctx(t), agentpty.StartRequest{Command: cmd, WaitMS: ms(500)}); !errors.Is(err, agentpty.ErrDenied) {
		t.Errorf("a denied start: %v; want ErrDenied", err)
	}
	if s.b != nil {
		m2 := s.manager(t, agentpty.Options{Sandbox: allowAll{}})
		_, err := m2.Start(Ctx(t), agentpty.StartRequest{Command: cmd, WaitMS: ms(500)})
		if !errors.Is(err, agentpty.ErrInvalid) || !errors.Is(err, agentpty.ErrUnsupported) || !strings.Contains(err.Error(), "Options.Sandbox") {
			t.Errorf("a sandboxed start on another machine: %v; want ErrInvalid and ErrUnsupported naming Options.Sandbox", err)
		}
	}
	if s.exists(t, mark) {
		t.Error("the command ran")
	}
	m3 := s.manager(t, agentpty.Options{})
	MustStart(t, m3, agentpty.StartRequest{Command: cmd + "; echo done", WaitFor: "done"})
	if !s.exists(t, mark) {
		t.Error("the allowed command did not run")
	}
}
