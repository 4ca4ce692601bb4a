package integration_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentpty/agentpty"
	"go.uber.org/goleak"

	"github.com/agentpty/agentpty/internal/testkit"
)

// TestMain fails the run if a test leaves a goroutine behind: once Close
// returns, every session's reader and reaper have stopped.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(testkit.EmptyHome()))
}

// need skips the test when prog is not installed, unless the environment
// says AGENTPTY_REQUIRE=all, as CI does where every program must be there.
func need(t *testing.T, prog string) {
	t.Helper()
	if _, err := exec.LookPath(prog); err != nil {
		if os.Getenv("AGENTPTY_REQUIRE") == "all" {
			t.Fatalf("%s is not installed, and AGENTPTY_REQUIRE=all says every program must be: %v", prog, err)
		}
		t.Skipf("%s is not installed (set AGENTPTY_REQUIRE=all to make this a failure)", prog)
	}
}

// newManager returns a manager that kills whatever the test started when
// the test ends, pass or fail.
func newManager(t *testing.T) *agentpty.Manager {
	t.Helper()
	m := agentpty.NewManager(agentpty.Options{})
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("close the manager: %v", err)
		}
	})
	return m
}

// testContext bounds a test, so a program that never prompts fails it
// instead of hanging it.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// typeAndWait types input and waits for waitFor, failing the test if it
// does not appear.
func typeAndWait(t *testing.T, ctx context.Context, m *agentpty.Manager, id, input, waitFor string) agentpty.WriteResult {
	t.Helper()
	res, err := m.Write(ctx, agentpty.WriteRequest{ID: id, Input: input, Submit: true, WaitFor: waitFor})
	if err != nil {
		t.Fatalf("type %q: %v", input, err)
	}
	if !res.Matched {
		t.Fatalf("type %q: %q did not appear; the program printed %q", input, waitFor, res.Output)
	}
	return res
}

func TestPythonREPL(t *testing.T) {
	need(t, "python3")
	ctx := testContext(t)
	m := newManager(t)

	start, err := m.Start(ctx, agentpty.StartRequest{Command: "python3 -q", WaitFor: ">>> "})
	if err != nil {
		t.Fatal(err)
	}
	if !start.Matched {
		t.Fatalf("no prompt from python3; it printed %q", start.Output)
	}
	id := start.ID

	// Waiting for the next prompt is waiting for the answer: the prompt
	// that was already on the screen does not count.
	res := typeAndWait(t, ctx, m, id, "6 * 7", ">>> ")
	if !strings.Contains(res.Output, "\n42\n") {
		t.Errorf("6 * 7: output %q has no line 42", res.Output)
	}
	typeAndWait(t, ctx, m, id, "sq = lambda x: x * x", ">>> ")
	res = typeAndWait(t, ctx, m, id, "[sq(n) for n in range(5)]", ">>> ")
	if want := "[0, 1, 4, 9, 16]"; !strings.Contains(res.Output, want) {
		t.Errorf("output %q does not contain %q", res.Output, want)
	}

	// The screen is there too, as a person would see it.
	s, ok := m.Session(id)
	if !ok {
		t.Fatalf("no session %s", id)
	}
	if scr := s.Screen(); !strings.Contains(scr.Text(), "[0, 1, 4, 9, 16]") {
		t.Errorf("the screen does not show the list:\n%s", scr.Text())
	}

	// Ctrl-D at the prompt: the write's wait ends when python exits.
	res, err = m.Write(ctx, agentpty.WriteRequest{ID: id, Input: "\x04", WaitMS: agentpty.Millis(10000)})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Exited || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Errorf("after Ctrl-D: exited %t, exit code %v, signal %q; want exit code 0", res.Exited, res.ExitCode, res.Signal)
	}
	st, err := s.Wait(ctx)
	if err != nil || st.Code != 0 {
		t.Errorf("Wait: %v, %v; want exit code 0", st, err)
	}
	if _, err := m.Kill(ctx, id); err != nil {
		t.Errorf("kill: %v", err)
	}
}

func TestShellPipeline(t *testing.T) {
	ctx := testContext(t)
	m := newManager(t)

	// The command is a shell command line, run as `bash -lc COMMAND`, so a
	// pipeline is fine. WaitMS bounds the wait; Start returns as soon as the
	// command exits, with all its output.
	res, err := m.Start(ctx, agentpty.StartRequest{Command: `printf 'a\nb\n' | wc -l`, WaitMS: agentpty.Millis(10000)})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Exited || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("exited %t, exit code %v, signal %q; want exit code 0 (output %q)", res.Exited, res.ExitCode, res.Signal, res.Output)
	}
	// wc pads its count on some systems.
	if got := strings.TrimSpace(res.Output); got != "2" {
		t.Errorf("output %q, want 2", got)
	}
	if _, err := m.Kill(ctx, res.ID); err != nil {
		t.Errorf("kill: %v", err)
	}
}

func TestInteractiveShell(t *testing.T) {
	ctx := testContext(t)
	m := newManager(t)
	dir := t.TempDir()

	// A prompt of our own to wait for; --norc keeps the host's .bashrc
	// out, and an empty HISTFILE keeps the test out of its history.
	const prompt = "test$ "
	start, err := m.Start(ctx, agentpty.StartRequest{Command: "HISTFILE= PS1='" + prompt + "' bash --norc", WaitFor: prompt})
	if err != nil {
		t.Fatal(err)
	}
	if !start.Matched {
		t.Fatalf("no prompt from bash; it printed %q", start.Output)
	}
	id := start.ID

	// Each write goes to the same shell: variables and the working
	// directory carry over. Input is escape-decoded (\r, \x03, ...), so a
	// backslash meant for the shell would be typed as \\.
	typeAndWait(t, ctx, m, id, "n=41; cd "+dir, prompt)
	res := typeAndWait(t, ctx, m, id, `echo "$((n + 1)) in $PWD"`, prompt)
	if want := "42 in " + dir; !strings.Contains(res.Output, want) {
		t.Errorf("output %q does not contain %q", res.Output, want)
	}
	res = typeAndWait(t, ctx, m, id, "seq 3 | wc -l", prompt)
	if !strings.Contains(res.Output, "3\n") {
		t.Errorf("seq 3 | wc -l: output %q has no 3", res.Output)
	}

	// The shell's own exit status comes back through Wait. The write's
	// wait ends as soon as bash exits.
	if _, err := m.Write(ctx, agentpty.WriteRequest{ID: id, Input: "exit 3", Submit: true}); err != nil {
		t.Fatal(err)
	}
	s, _ := m.Session(id)
	st, err := s.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Code != 3 || st.Signal != "" {
		t.Errorf("bash ended with %v, want exit code 3", st)
	}
	if _, err := m.Kill(ctx, id); err != nil {
		t.Errorf("kill: %v", err)
	}
}
