// Package agentptytest checks that an agentpty.Backend behaves as the
// library expects, in the manner of testing/fstest and
// golang.org/x/net/nettest: a backend's own test calls TestBackend with a
// function that makes the backend, and the suite drives real programs
// through managers on it (bash, python3, vim, read -s, traps, kills),
// checking what a model would see.
//
// This machine's pseudo-terminals, the SSH backend (package sshpty,
// against an OpenSSH server) and the Kubernetes backend (kubepty, against
// its stand-in) all run it.
package agentptytest

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/agentpty/agentpty"
)

// TestBackend runs the conformance cases, one subtest each, on the
// Backend newBackend returns; a nil Backend means this machine's
// pseudo-terminals (Options.Backend nil). newBackend is called once in
// each subtest, so a server it starts is that case's own, and checks it
// registers with t.Cleanup (leaks, processes left behind) run after the
// case's managers are closed.
//
// Commands run as `bash -c COMMAND` on the far side, which needs bash
// and coreutils (python3 and vim for the cases that use them, skipped
// without). Files the cases check are looked at through sessions on the
// backend, so the far side may be another machine. A backend whose
// terminals are no agentpty.StateReader must refuse wait_until "input"
// with ErrUnsupported; the cases that need the state then skip. One that
// is no agentpty.Files must refuse shell sessions with ErrUnsupported;
// the shell cases then skip.
func TestBackend(t *testing.T, newBackend func(t *testing.T) agentpty.Backend) {
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		t.Run(name, func(t *testing.T) { cases[name](t, &suite{b: newBackend(t)}) })
	}
}

// cases are the conformance cases, by name.
var cases = map[string]func(*testing.T, *suite){
	"ApprovalAndSandbox":   approvalAndSandbox,
	"ShellRuns":            shellRuns,
	"ShellFiles":           shellFiles,
	"ShellNeedsFiles":      shellNeedsFiles,
	"ShellFileCalls":       shellFileCalls,
	"Files":                files,
	"PythonREPL":           pythonREPL,
	"VimScreenAndDiff":     vimScreenAndDiff,
	"WriteSecret":          writeSecret,
	"ExitCodeResizeSignal": exitCodeResizeSignal,
	"KillContext":          killContext,
	"PIDAndCwd":            pidAndCwd,
	"SignalForeground":     signalForeground,
}

// suite is one case's backend.
type suite struct {
	b agentpty.Backend // nil: this machine
}

func ms(n int) *int { return &n }

// skipNoFiles skips a case about a backend's Files where there are none.
func (s *suite) skipNoFiles(t *testing.T) {
	if s.b == nil {
		t.Skip("this machine's sessions keep their files themselves, without Files")
	}
	t.Skipf("the backend %T has no Files", s.b)
}

// needFiles skips a shell case where the backend has no Files: its
// refusal is shellNeedsFiles's case.
func (s *suite) needFiles(t *testing.T) {
	if _, ok := s.b.(agentpty.Files); s.b != nil && !ok {
		t.Skipf("the backend %T has no Files, so no shell sessions", s.b)
	}
}

// manager returns a manager with opts on the case's backend (on
// opts.Backend when set), running commands under `bash -c`; the case's
// end closes it.
func (s *suite) manager(t *testing.T, opts agentpty.Options) *agentpty.Manager {
	t.Helper()
	if opts.Backend == nil {
		opts.Backend = s.b
	}
	if opts.Shell == nil {
		opts.Shell = []string{"bash", "-c"}
	}
	m := agentpty.NewManager(opts)
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return m
}

// far runs script under bash on the backend's machine and returns what
// it printed, trimmed: the cases look at that machine's files through it.
func (s *suite) far(t *testing.T, script string) string {
	t.Helper()
	const end = "__agentptytest_end__"
	m := s.manager(t, agentpty.Options{})
	res := MustStart(t, m, agentpty.StartRequest{Command: script + "\necho " + end, WaitFor: end, Cols: 1000})
	out, _, _ := strings.Cut(res.Output, end)
	return strings.TrimSpace(out)
}

// farTemp makes a directory on the backend's machine that the case's
// end removes.
func (s *suite) farTemp(t *testing.T) string {
	t.Helper()
	dir := s.far(t, "mktemp -d")
	if !strings.HasPrefix(dir, "/") || strings.ContainsAny(dir, " \n'") {
		t.Fatalf("mktemp -d on the backend printed %q", dir)
	}
	t.Cleanup(func() { s.far(t, "rm -rf '"+dir+"'") })
	return dir
}

// exists reports whether path is there on the backend's machine.
func (s *suite) exists(t *testing.T, path string) bool {
	t.Helper()
	return s.far(t, "if test -e '"+path+"' || test -L '"+path+"'; then echo yes; else echo no; fi") == "yes"
}

// needState skips a case that needs the terminal's state where the
// backend's terminals cannot tell it, once it has seen wait_until
// "input" refused with ErrUnsupported as documented.
func (s *suite) needState(t *testing.T) {
	t.Helper()
	m := s.manager(t, agentpty.Options{})
	_, err := m.Start(Ctx(t), agentpty.StartRequest{Command: "read x", WaitUntil: agentpty.WaitUntilInput, WaitMS: ms(5000)})
	if errors.Is(err, agentpty.ErrUnsupported) {
		t.Skipf("the backend's terminals are no StateReader: %v", err)
	}
	if err != nil {
		t.Fatalf("a start with wait_until input: %v; want success or ErrUnsupported", err)
	}
}
