package agentptytest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

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

// shellRuns runs commands in a shell session on the backend: output
// without the echo or the prompt, exit codes, PIPESTATUS, state kept
// between runs, and the shell's own exit.
func shellRuns(t *testing.T, s *suite) {
	s.needFiles(t)
	m := s.manager(t, agentpty.Options{})
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

// shellFiles: the rcfile and the runs' files lie on the backend's
// machine in a directory only its user can enter, are not writable by
// the shell's others, and go when the session is killed or the manager
// closed.
func shellFiles(t *testing.T, s *suite) {
	s.needFiles(t)
	m := s.manager(t, agentpty.Options{})
	id := StartShell(t, m).ID
	dir := MustRun(t, m, id, `dirname "$BASH_SOURCE"`).Output
	// ls -l's mode column: the directory, then every entry.
	modes := strings.Fields(s.far(t, "ls -ld '"+dir+"' | cut -c1-10; ls -lA '"+dir+"' | grep -v '^total' | cut -c1-10"))
	if !strings.HasPrefix(dir, "/") || len(modes) == 0 || modes[0] != "drwx------" {
		t.Fatalf("the session's directory %q: modes %q; want drwx------", dir, modes)
	}
	for _, mode := range modes[1:] {
		if mode[0] != '-' || mode[4:] != "------" {
			t.Errorf("an entry of %s has mode %s; want a file only its owner reads", dir, mode)
		}
	}
	if len(modes) < 2 {
		t.Errorf("%s holds nothing; want the rcfile at least", dir)
	}
	if _, err := m.Kill(Ctx(t), id); err != nil {
		t.Fatal(err)
	}
	if s.exists(t, dir) {
		t.Errorf("%s is still there after Kill", dir)
	}
	m2 := s.manager(t, agentpty.Options{})
	id = StartShell(t, m2).ID
	dir = MustRun(t, m2, id, `dirname "$BASH_SOURCE"`).Output
	if err := m2.Close(); err != nil {
		t.Fatal(err)
	}
	if s.exists(t, dir) {
		t.Errorf("%s is still there after Close", dir)
	}
}

func code(p *int) int {
	if p == nil {
		return -999
	}
	return *p
}

// plain is a backend that is nothing but a Backend: no Files.
type plain struct{ agentpty.Backend }

// shellNeedsFiles: a backend without Files refuses a shell session with
// ErrUnsupported naming what it lacks, and starts nothing; pty-run on a
// session that is not a shell is refused as on this machine. A start
// with ShellSnapshot says that no snapshot is used there.
func shellNeedsFiles(t *testing.T, s *suite) {
	if s.b == nil {
		t.Skip("this machine's sessions need no Files")
	}
	bare := s.manager(t, agentpty.Options{Backend: plain{s.b}})
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
	snap := s.manager(t, agentpty.Options{ShellSnapshot: true})
	res, err = snap.Start(Ctx(t), agentpty.StartRequest{Command: "echo snap-ok", WaitFor: "snap-ok"})
	if err != nil || !strings.Contains(res.Notice, "ShellSnapshot") {
		t.Errorf("ShellSnapshot on another machine: %+v %v; want a Notice saying it does not apply", res, err)
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

// shellFileCalls: what a shell session costs in calls to the backend's
// files (b's): its start two (the directory, the rcfile), each run one
// (its file, which stays), Kill one (the directory's removal).
func shellFileCalls(t *testing.T, s *suite) {
	fs, ok := s.b.(agentpty.Files)
	if !ok {
		s.skipNoFiles(t)
	}
	c := &counted{Backend: s.b, fs: fs}
	m := s.manager(t, agentpty.Options{Backend: c})
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
		if !s.exists(t, f) {
			t.Errorf("a run's file %s is gone before Kill", f)
		}
	}
	if _, err := m.Kill(Ctx(t), id); err != nil {
		t.Fatal(err)
	}
	if kill := c.take(); len(kill) != 1 || kill[0] != "RemoveAll "+dir {
		t.Errorf("Kill called %q; want RemoveAll %s", kill, dir)
	}
}
