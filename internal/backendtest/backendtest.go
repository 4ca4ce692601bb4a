// Package backendtest holds the Manager-level cases that every Backend of
// another machine runs (sshpty against a real OpenSSH server, kubepty
// against its stand-in): one table of cases, each backend's test naming
// only how to make a manager on it. The servers run on this machine, so a
// case checks the far side's files and processes here. It is for tests
// only.
package backendtest

import (
	"context"
	"maps"
	"slices"
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

func code(p *int) int {
	if p == nil {
		return -999
	}
	return *p
}

// Cases are the Manager-level cases every backend runs, by name.
var Cases = map[string]func(*testing.T, NewManager){
	"ApprovalAndSandbox":   ApprovalAndSandbox,
	"ShellRuns":            ShellRuns,
	"ShellFiles":           ShellFiles,
	"PythonREPL":           PythonREPL,
	"VimScreenAndDiff":     VimScreenAndDiff,
	"WriteSecret":          WriteSecret,
	"ExitCodeResizeSignal": ExitCodeResizeSignal,
	"KillContext":          KillContext,
	"PIDAndCwd":            PIDAndCwd,
	"SignalForeground":     SignalForeground,
}

// Run runs every case as a subtest on the managers on returns, called
// in the subtest (so a server it starts is the case's own).
func Run(t *testing.T, on func(t *testing.T) NewManager) {
	for _, name := range slices.Sorted(maps.Keys(Cases)) {
		t.Run(name, func(t *testing.T) { Cases[name](t, on(t)) })
	}
}
