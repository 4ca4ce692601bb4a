// Package backendtest holds the Manager-level cases that every Backend of
// another machine runs (sshpty against a real OpenSSH server, kubepty
// against its stand-in): one table of cases, each backend's test naming
// only how to make a manager on it. The servers run on this machine, so a
// case checks the far side's files and processes here. It is for tests
// only.
package backendtest

import (
	"context"
	"errors"
	"os"
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

// runCases are pty-run's boundaries and exit codes, as on this machine.
var runCases = []struct {
	command, output string
	code            int
}{
	{"echo hi", "hi", 0},
	{"false", "", 1},
	{"(exit 7)", "", 7},
	{"echo one; echo two >&2; echo three", "one\ntwo\nthree", 0},
	{"for i in 1 2; do\n  echo n$i\ndone", "n1\nn2", 0},
	{"false | true; echo ${PIPESTATUS[*]}", "1 0", 0},
	{"true | (exit 5) | true; s=${PIPESTATUS[1]}; echo $s; (exit $s)", "5", 5},
	// Look-alike marks without the session's nonce are output.
	{`printf '\e]133;D;9\a'; echo after`, "after", 0},
	// State persists across runs.
	{"cd /tmp && export AGENTPTY_X=42", "", 0},
	{"pwd; echo $AGENTPTY_X", "/tmp\n42", 0},
}

// ShellRuns runs commands in a shell session on the backend: output
// without the echo or the prompt, exit codes, PIPESTATUS, state kept
// between runs, and the shell's own exit.
func ShellRuns(t *testing.T, newManager NewManager) {
	m := newManager(t, agentpty.Options{})
	id := StartShell(t, m).ID
	for _, c := range runCases {
		res := MustRun(t, m, id, c.command)
		if res.Output != c.output || !res.PromptAfter || code(res.ExitCode) != c.code || res.State != agentpty.StateWaitingInput {
			t.Errorf("run %q: output %q prompt_after %v exit_code %d state %q; want %q, true, %d, waiting_input",
				c.command, res.Output, res.PromptAfter, code(res.ExitCode), res.State, c.output, c.code)
		}
	}
	// A command that waits for input: the run returns, pty-write goes on
	// and its result carries the end.
	res := MustRun(t, m, id, `read -p 'name? ' n; echo "hi $n"; (exit 3)`)
	if res.PromptAfter || res.ExitCode != nil || res.State != agentpty.StateWaitingInput || res.Output != "name? " {
		t.Fatalf("read: %+v", res)
	}
	w, err := m.Write(Ctx(t), agentpty.WriteRequest{ID: id, Input: "bob", Submit: true, WaitUntil: agentpty.WaitUntilInput})
	if err != nil || !w.PromptAfter || code(w.ExitCode) != 3 || !strings.Contains(w.Output, "hi bob") {
		t.Fatalf("answer: %+v %v", w, err)
	}
	res = MustRun(t, m, id, "exit 4")
	if !res.Exited || code(res.ExitCode) != 4 {
		t.Errorf("exit 4: %+v", res)
	}
}

// ShellFiles: the rcfile and the runs' files lie on the backend's
// machine in a directory only its user can enter, are not writable by
// the shell's others, and go when the session is killed or the manager
// closed.
func ShellFiles(t *testing.T, newManager NewManager) {
	m := newManager(t, agentpty.Options{})
	id := StartShell(t, m).ID
	dir := MustRun(t, m, id, `dirname "$BASH_SOURCE"`).Output
	fi, err := os.Stat(dir)
	if !strings.HasPrefix(dir, "/") || err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the session's directory %q: %v %v; want mode 0700", dir, fi, err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if fi, err := e.Info(); err != nil || fi.Mode().Perm()&0o077 != 0 || !fi.Mode().IsRegular() {
			t.Errorf("%s/%s: %v %v; want a file only its owner reads", dir, e.Name(), fi.Mode(), err)
		}
	}
	if len(ents) < 2 {
		t.Errorf("%s holds %v; want the rcfile and the run's file", dir, ents)
	}
	if _, err := m.Kill(Ctx(t), id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); err == nil {
		t.Errorf("%s is still there after Kill", dir)
	}
	id = StartShell(t, m).ID
	dir = MustRun(t, m, id, `dirname "$BASH_SOURCE"`).Output
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); err == nil {
		t.Errorf("%s is still there after Close", dir)
	}
}

// plain is a backend that is nothing but a Backend: no Files.
type plain struct{ agentpty.Backend }

// ShellNeedsFiles: a backend without Files refuses a shell session with
// ErrUnsupported naming what it lacks, and starts nothing; pty-run on a
// session that is not a shell is refused as on this machine. A start
// with ShellSnapshot says that no snapshot is used there.
func ShellNeedsFiles(t *testing.T, b agentpty.Backend, newManager NewManager) {
	bare := newManager(t, agentpty.Options{Backend: plain{b}})
	_, err := bare.Start(Ctx(t), agentpty.StartRequest{Shell: true})
	if !errors.Is(err, agentpty.ErrUnsupported) || !strings.Contains(err.Error(), "Files") {
		t.Errorf("a shell session on a backend without Files: %v; want ErrUnsupported naming Files", err)
	}
	if n := len(bare.List()); n != 0 {
		t.Errorf("%d sessions after the refusal", n)
	}
	res, err := bare.Start(Ctx(t), agentpty.StartRequest{Command: "echo plain-ok", WaitFor: "plain-ok"})
	if err != nil || !res.Matched {
		t.Fatalf("a command on the same backend: %+v %v", res, err)
	}
	if _, err := bare.Run(Ctx(t), agentpty.RunRequest{ID: res.ID, Command: "true"}); !errors.Is(err, agentpty.ErrInvalid) {
		t.Errorf("pty-run on a session that is not a shell: %v; want ErrInvalid", err)
	}
	snap := newManager(t, agentpty.Options{ShellSnapshot: true})
	res, err = snap.Start(Ctx(t), agentpty.StartRequest{Command: "echo snap-ok", WaitFor: "snap-ok"})
	if err != nil || !strings.Contains(res.Notice, "ShellSnapshot") {
		t.Errorf("ShellSnapshot on another machine: %+v %v; want a Notice saying it does not apply", res, err)
	}
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

// Files: a backend's files land on its machine (here the same one),
// private to its user, byte for byte, never over an existing file, and
// go again.
func Files(t *testing.T, f agentpty.Files) {
	ctx := Ctx(t)
	dir, err := f.MkdirTemp(ctx, "agentpty-test")
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 || !strings.Contains(dir, "agentpty-test.") {
		t.Fatalf("MkdirTemp = %q: %v %v", dir, st, err)
	}
	text := "PS1='$ '\nprintf '%s\\n' \"it's\" # quotes, $vars, `cmd` and \\ stay\n\tno newline at the end"
	rc := dir + "/rc"
	if err := f.WriteFile(ctx, rc, []byte(text)); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(rc)
	if fi, _ := os.Stat(rc); err != nil || string(got) != text || fi.Mode().Perm() != 0o600 {
		t.Fatalf("WriteFile wrote %q (%v), want %q mode 0600", got, err, text)
	}
	if err := f.WriteFile(ctx, rc, []byte("again")); err == nil {
		t.Error("WriteFile over an existing file succeeded")
	}
	// A symlink planted where the file goes is not written through.
	target := dir + "/target"
	if err := os.Symlink(target, dir+"/link"); err != nil {
		t.Fatal(err)
	}
	if err := f.WriteFile(ctx, dir+"/link", []byte("through")); err == nil {
		t.Error("WriteFile through a dangling symlink succeeded")
	}
	if _, err := os.Lstat(target); err == nil {
		t.Error("WriteFile created the symlink's target")
	}
	if err := f.RemoveAll(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the directory is still there: %v", err)
	}
	if err := f.RemoveAll(ctx, dir); err != nil {
		t.Errorf("RemoveAll of a missing path: %v", err)
	}
}
