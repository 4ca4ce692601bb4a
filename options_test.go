package agentpty

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentpty/agentpty/internal/testkit"
)

// passSandbox would let anything run: a refusal comes from Validate.
type passSandbox struct{}

func (passSandbox) Prepare(*exec.Cmd) error { return nil }

// checkingBackend is a memBackend that vouches for every program.
type checkingBackend struct{ memBackend }

func (*checkingBackend) AtPrompt(Terminal) (string, string)     { return "", "" }
func (*checkingBackend) CheckPrograms(Terminal, []string) error { return nil }

// refusedAtStart checks that Validate refuses opts naming every one of
// fields, and that Start then fails with the same error before the
// backend starts anything.
func refusedAtStart(t *testing.T, opts Options, b *memBackend, fields ...string) error {
	t.Helper()
	verr := opts.Validate()
	if !errors.Is(verr, ErrInvalid) || !strings.HasPrefix(verr.Error(), "agentpty: ") {
		t.Fatalf("Validate: %v; want ErrInvalid", verr)
	}
	for _, f := range fields {
		if !strings.Contains(verr.Error(), f) {
			t.Errorf("Validate: %q does not name %s", verr, f)
		}
	}
	m := NewManager(opts)
	defer m.Close()
	_, err := m.Start(waitCtx(t), StartRequest{Command: "print hi", WaitMS: ms(50)})
	if err == nil || err.Error() != verr.Error() {
		t.Errorf("Start: %v; want Validate's error", err)
	}
	if b != nil && b.starts.Load() != 0 {
		t.Errorf("the backend started %d terminals", b.starts.Load())
	}
	return err
}

// A Sandbox with another Backend used to be accepted and fail each start
// as ErrUnsupported; Validate names both fields, and the error is still
// ErrUnsupported for hosts that test for it.
func TestValidateBackendSandbox(t *testing.T) {
	testkit.Parallel(t)
	b := &memBackend{}
	err := refusedAtStart(t, Options{Backend: b, Sandbox: passSandbox{}}, b, "Options.Backend", "Options.Sandbox")
	if !errors.Is(err, ErrUnsupported) || strings.Contains(err.Error(), "unsupported on this platform") {
		t.Errorf("Start: %v; want ErrUnsupported too, not worded as a platform's lack", err)
	}
}

// SecretPrograms with a Backend that cannot name its programs used to
// start sessions whose every WriteSecret was refused. A ProgramChecker
// backend is the control: accepted, and its sessions start.
func TestValidateBackendSecretPrograms(t *testing.T) {
	testkit.Parallel(t)
	b := &memBackend{}
	refusedAtStart(t, Options{Backend: b, SecretPrograms: []string{"sudo"}}, b, "Options.Backend", "Options.SecretPrograms")

	ok := &checkingBackend{}
	opts := Options{Backend: ok, SecretPrograms: []string{"sudo"}}
	if err := opts.Validate(); err != nil {
		t.Fatalf("Validate with a ProgramChecker: %v", err)
	}
	m := newManager(t, opts)
	if _, err := m.Start(waitCtx(t), StartRequest{Command: "print hi", WaitFor: "hi"}); err != nil || ok.starts.Load() != 1 {
		t.Fatalf("Start with a ProgramChecker: %v, %d starts", err, ok.starts.Load())
	}
}

// SecretRelays with a Backend used to start sessions whose every
// WriteSecret through a relay was refused (its terminal cannot say it
// echoes nothing itself), a ProgramChecker backend included.
func TestValidateBackendSecretRelays(t *testing.T) {
	testkit.Parallel(t)
	b := &checkingBackend{}
	refusedAtStart(t, Options{Backend: b, SecretRelays: []string{"ssh"}}, &b.memBackend, "Options.Backend", "Options.SecretRelays")
}

// MaxMemory and MaxProcesses bound this machine's cgroups; with a Backend
// they would bound nothing.
func TestValidateBackendBounds(t *testing.T) {
	testkit.Parallel(t)
	b := &memBackend{}
	refusedAtStart(t, Options{Backend: b, MaxMemory: 1 << 30}, b, "Options.Backend", "Options.MaxMemory")
	refusedAtStart(t, Options{Backend: b, MaxProcesses: 10}, b, "Options.Backend", "Options.MaxProcesses")
}

// A default size over MaxCells refused every start without a size with
// ErrTooManySessions; a size out of range or an empty Shell could start
// nothing either.
func TestValidateSizesAndShell(t *testing.T) {
	testkit.Parallel(t)
	for _, tc := range []struct {
		opts   Options
		fields []string
	}{
		{Options{Cols: 200, Rows: 100, MaxCells: 10_000}, []string{"Options.Cols×Rows", "Options.MaxCells"}},
		{Options{Cols: 1001}, []string{"Options.Cols 1001"}},
		{Options{Rows: -1}, []string{"Options.Rows -1"}},
		{Options{Shell: []string{}}, []string{"Options.Shell"}},
	} {
		b := &memBackend{}
		tc.opts.Backend = b
		refusedAtStart(t, tc.opts, b, tc.fields...)
	}
	for _, ok := range []Options{{}, {Cols: 1000, Rows: 500, MaxCells: 500_000}, {Backend: &memBackend{}, ApproveWrites: true}} {
		if err := ok.Validate(); err != nil {
			t.Errorf("Validate(%+v): %v; want nil", ok, err)
		}
	}
}

// ApproveWrites without an Approver costs nothing: a write used to wait
// up to a second for the program to read, to tell an Approver that
// approves everything. The wait is seen through a context ended before
// the call, which a wait returns at once; the control, with an Approver,
// shows the wait is there.
func TestApproveWritesWithoutApprover(t *testing.T) {
	testkit.Parallel(t)
	bash := []string{"bash", "-c"}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		approver Approver
		waits    bool
	}{
		{nil, false},
		{ApproverFunc(func(context.Context, ApprovalRequest) error { return nil }), true},
	} {
		m := newManager(t, Options{Shell: bash, ApproveWrites: true, Approver: tc.approver})
		res := mustStart(t, m, StartRequest{Command: "echo ready; exec sleep 60", WaitFor: "ready"})
		s, _ := m.Session(res.ID)
		_, err := m.approveWrite(ended, ToolWrite, s, []byte("x"))
		if waited := errors.Is(err, context.Canceled); waited != tc.waits {
			t.Errorf("Approver %v: approveWrite with an ended context: %v; want a wait %v", tc.approver != nil, err, tc.waits)
		}
		if _, err := m.Kill(waitCtx(t), res.ID); err != nil {
			t.Fatal(err)
		}
	}
}
