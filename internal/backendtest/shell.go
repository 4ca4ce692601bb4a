package backendtest

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpty/agentpty"
)

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

// counted is a backend whose Files calls are noted, each as its name and
// path.
type counted struct {
	agentpty.Backend
	fs    agentpty.Files
	mu    sync.Mutex
	calls []string
}

func (c *counted) note(call string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, call)
}

// take returns the calls noted since the last take.
func (c *counted) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls := c.calls
	c.calls = nil
	return calls
}

func (c *counted) MkdirTemp(ctx context.Context, pattern string) (string, error) {
	dir, err := c.fs.MkdirTemp(ctx, pattern)
	c.note("MkdirTemp " + dir)
	return dir, err
}

func (c *counted) WriteFile(ctx context.Context, path string, data []byte) error {
	c.note("WriteFile " + path)
	return c.fs.WriteFile(ctx, path, data)
}

func (c *counted) RemoveAll(ctx context.Context, path string) error {
	c.note("RemoveAll " + path)
	return c.fs.RemoveAll(ctx, path)
}

// ShellFileCalls: what a shell session costs in calls to the backend's
// Files (b's): its start two (the directory, the rcfile), each run one
// (its file, which stays), Kill one (the directory's removal).
func ShellFileCalls(t *testing.T, b agentpty.Backend, newManager NewManager) {
	c := &counted{Backend: b, fs: b.(agentpty.Files)}
	m := newManager(t, agentpty.Options{Backend: c})
	id := StartShell(t, m).ID
	start := c.take()
	if len(start) != 2 || !strings.HasPrefix(start[0], "MkdirTemp /") || !strings.HasPrefix(start[1], "WriteFile "+strings.TrimPrefix(start[0], "MkdirTemp ")+"/") {
		t.Fatalf("a shell session's start called %q; want MkdirTemp, then WriteFile in that directory", start)
	}
	dir := strings.TrimPrefix(start[0], "MkdirTemp ")
	var files []string
	for i := range 3 {
		MustRun(t, m, id, "echo run"+strconv.Itoa(i))
		run := c.take()
		if len(run) != 1 || !strings.HasPrefix(run[0], "WriteFile "+dir+"/") {
			t.Fatalf("run %d called %q; want one WriteFile in %s", i, run, dir)
		}
		files = append(files, strings.TrimPrefix(run[0], "WriteFile "))
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("a run's file is gone before Kill: %v", err)
		}
	}
	if _, err := m.Kill(Ctx(t), id); err != nil {
		t.Fatal(err)
	}
	if kill := c.take(); len(kill) != 1 || kill[0] != "RemoveAll "+dir {
		t.Errorf("Kill called %q; want RemoveAll %s", kill, dir)
	}
}
