package agentpty

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpty/agentpty/internal/testkit"
)

// TestHistoryStaysOutOfHome: a line typed into python3's or node's REPL,
// or a search in less, does not reach the history file in the user's
// home. The control: a
// host that says otherwise (an explicit PYTHONSTARTUP, or
// NODE_REPL_HISTORY naming the file) gets the file written, as every
// session did before.
func TestHistoryStaysOutOfHome(t *testing.T) {
	testkit.Parallel(t)
	python := "/usr/bin/python3" // not a pyenv shim: those look for their root in HOME
	if _, err := os.Stat(python); err != nil {
		need(t, "python3")
		python = "python3"
	}
	cases := []struct {
		name, command, prompt, line, answer, quit, file string
		hostSays                                        string
	}{
		{"python", python + " -q", ">>> ", "1+41", "42", "exit()", ".python_history", "PYTHONSTARTUP="},
		{"node", "node", "> ", "40+2", "42", ".exit", ".node_repl_history", "NODE_REPL_HISTORY=HOME/.node_repl_history"},
		{"less", "seq 100 | less", "31", "/5.", "59", "q", ".lesshst", "LESSHISTFILE=HOME/.lesshst"},
	}
	for _, c := range cases {
		for _, control := range []bool{false, true} {
			name := c.name
			if control {
				name += ", control"
			}
			t.Run(name, func(t *testing.T) {
				need(t, strings.Fields(c.command)[0])
				home := t.TempDir()
				env := []string{"HOME=" + home}
				if control {
					env = append(env, strings.ReplaceAll(c.hostSays, "HOME", home))
				}
				m := newManager(t, Options{Shell: []string{"bash", "-c"}, Env: env})
				res := mustStart(t, m, StartRequest{Command: c.command, WaitFor: c.prompt})
				if !res.Matched {
					t.Fatalf("start: %+v", res)
				}
				if w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: c.line, Submit: true, WaitFor: c.answer}); !w.Matched {
					t.Fatalf("%s: %+v", c.line, w)
				}
				if w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: c.quit, Submit: true, WaitMS: ms(10000)}); !w.Exited {
					t.Fatalf("%s: %+v", c.quit, w)
				}
				data, err := os.ReadFile(filepath.Join(home, c.file))
				if got := strings.Contains(string(data), strings.TrimPrefix(c.line, "/")); got != control { // less keeps a search without its slash
					t.Fatalf("~/%s holds %q (%v); the line should be there: %v", c.file, data, err, control)
				}
			})
		}
	}
}

// TestHistoryEnv: the host's own value of a history variable wins, empty
// included; HISTFILE is for shell sessions.
func TestHistoryEnv(t *testing.T) {
	testkit.Parallel(t)
	got := strings.Join(historyEnv(false, "/p/s.py", []string{"LESSHISTFILE=/x"}, []string{"NODE_REPL_HISTORY="}), " ")
	if want := "PYTHON_HISTORY=/dev/null PYTHONSTARTUP=/p/s.py"; got != want {
		t.Errorf("historyEnv: %q, want %q", got, want)
	}
	if got := historyEnv(true, "/p/s.py", nil); len(got) != 5 || got[0] != "HISTFILE=" {
		t.Errorf("historyEnv in a shell session: %q", got)
	}
}
