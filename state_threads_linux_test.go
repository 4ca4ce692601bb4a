package agentpty

import (
	"strings"
	"testing"
	"time"

	"github.com/agentpty/agentpty/internal/testkit"
)

func init() { childModes["goroutine-read"] = testkit.GoroutineReader }

// threadWaitMS is the wait the thread tests give wait_until "input": a
// program the state cannot see waiting burns all of it.
const threadWaitMS = 15000

// awaitThreadReader types input into session id with wait_until "input"
// and checks that the program was seen waiting again well before the
// wait ran out, with want in the output.
func awaitThreadReader(t *testing.T, m *Manager, id, input string, keys []string, want string) {
	t.Helper()
	begin := time.Now()
	w := mustWrite(t, m, WriteRequest{ID: id, Input: input, Keys: keys, WaitUntil: WaitUntilInput, WaitMS: ms(threadWaitMS)})
	took := time.Since(begin)
	t.Logf("waiting_input after %v", took)
	if w.State != StateWaitingInput || took > threadWaitMS*time.Millisecond/3 || !strings.Contains(w.Output, want) {
		t.Fatalf("after %v of %d ms: state %q foreground %q output %q, want waiting_input with %q",
			took, threadWaitMS, w.State, w.Foreground, w.Output, want)
	}
}

// Programs that read the terminal on a thread other than their main one
// (a Go goroutine, fzf, a Python worker thread) wait for input when that
// thread blocks on the terminal and no thread of theirs runs.
func TestStateThreadReaders(t *testing.T) {
	cmd, env := childCommand("goroutine-read")
	cases := []struct {
		name, need, command string
		env                 []string
		ready               string
		input               string
		keys                []string
		want, fg            string
	}{
		{"go goroutine", "", cmd, env, "name? ", "bob", []string{"Enter"}, "hello bob\nname? ", ""},
		{"fzf", "fzf", "printf 'alpha\\nbeta\\ngamma\\n' | fzf", nil, "3/3", "bet", nil, "1/3", "fzf"},
		{"python thread join", "python3", "exec python3 -c '" + pyThreadReader("t.join()") + "'", nil, "name? ", "ann", []string{"Enter"}, "hello ann\nname? ", "python3"},
		{"python thread sleep", "python3", "exec python3 -c '" + pyThreadReader("time.sleep(3600)") + "'", nil, "name? ", "cy", []string{"Enter"}, "hello cy\nname? ", "python3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.need != "" {
				need(t, c.need)
			}
			m := newManager(t, Options{Shell: []string{"bash", "-c"}, Env: c.env})
			res := mustStart(t, m, StartRequest{Command: c.command, WaitFor: c.ready})
			awaitThreadReader(t, m, res.ID, "", nil, "")
			awaitThreadReader(t, m, res.ID, c.input, c.keys, c.want)
			if s, _ := m.Session(res.ID); c.fg != "" && s.State().Foreground != c.fg {
				t.Errorf("foreground %q, want %q", s.State().Foreground, c.fg)
			}
			if _, err := m.Kill(waitCtx(t), res.ID); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// pyThreadReader reads on a second thread while the main one does main.
var pyThreadReader = testkit.PyThreadReader

// A program whose main thread waits while another thread of it works is
// running, though a third thread of it reads the terminal.
func TestStateThreadReaderBesideAWorker(t *testing.T) {
	need(t, "python3")
	m := newManager(t, noProfile)
	prog := pyThreadReader(`def spin():
    while True: pass
threading.Thread(target=spin, daemon=True).start()
t.join()`)
	res := mustStart(t, m, StartRequest{Command: "exec python3 -c '" + prog + "'", WaitFor: "name? "})
	w := mustWrite(t, m, WriteRequest{ID: res.ID, WaitUntil: WaitUntilInput, WaitMS: ms(1500)})
	if w.State != StateRunning {
		t.Errorf("state %q with a thread spinning, want running", w.State)
	}
	if _, err := m.Kill(waitCtx(t), res.ID); err != nil {
		t.Fatal(err)
	}
}
