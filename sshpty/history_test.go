//go:build linux

package sshpty

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/testkit"
)

// What the model types stays out of the history files of the home on the
// host as it does here: a shell session there gets HISTFILE empty, so the
// line typed at its prompt is not saved when it exits; the control, a
// host that sets HISTFILE itself, gets the file written. Every session
// there gets PYTHON_HISTORY, NODE_REPL_HISTORY and LESSHISTFILE, and no
// PYTHONSTARTUP (the manager's startup file is on this machine), so a
// Python before 3.13 keeps its ~/.python_history there, as the README
// says, and starts without a complaint about a startup file.
func TestHistoryOnTheHost(t *testing.T) {
	_, c := connect(t)
	for _, control := range []bool{false, true} {
		home := t.TempDir() // the server is local: the host's HOME
		env := []string{"HOME=" + home}
		hist := filepath.Join(home, ".bash_history")
		if control {
			env = append(env, "HISTFILE="+hist)
		}
		m := newManager(t, c, agentpty.Options{Env: env})
		res := mustStart(t, m, agentpty.StartRequest{Shell: true, WaitUntil: agentpty.WaitUntilInput})
		mustWrite(t, m, agentpty.WriteRequest{ID: res.ID, Input: "echo typed-$((6*7))", Submit: true, WaitFor: "typed-42"})
		if w := mustWrite(t, m, agentpty.WriteRequest{ID: res.ID, Input: "exit", Submit: true, WaitMS: ms(10000)}); !w.Exited {
			t.Fatalf("exit: %+v", w)
		}
		data, err := os.ReadFile(hist)
		if saved := strings.Contains(string(data), "echo typed-"); saved != control {
			t.Errorf("host's HISTFILE set %v: %s holds %q (%v); want the typed line there: %v", control, hist, data, err, control)
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}

	home := t.TempDir()
	m := newManager(t, c, agentpty.Options{Env: []string{"HOME=" + home}})
	res := mustStart(t, m, agentpty.StartRequest{Command: "env", WaitMS: ms(10000)})
	for _, v := range []string{"PYTHON_HISTORY=/dev/null", "NODE_REPL_HISTORY=\n", "LESSHISTFILE=-"} {
		if !strings.Contains(res.Output+"\n", v) {
			t.Errorf("the session's environment on the host lacks %q:\n%s", v, res.Output)
		}
	}
	for _, v := range []string{"PYTHONSTARTUP=", "HISTFILE="} {
		if strings.Contains("\n"+res.Output, "\n"+v) {
			t.Errorf("the session's environment on the host has %s:\n%s", v, res.Output)
		}
	}

	python := "/usr/bin/python3" // the interpreter itself: a version manager's shim looks for its root in HOME
	testkit.Need(t, python)
	old, err := exec.Command(python, "-c", "import sys; print(sys.version_info < (3, 13))").Output()
	if err != nil {
		t.Fatal(err)
	}
	res = mustStart(t, m, agentpty.StartRequest{Command: python + " -q", WaitFor: ">>> "})
	mustWrite(t, m, agentpty.WriteRequest{ID: res.ID, Input: "40+2", Submit: true, WaitFor: "42"})
	w := mustWrite(t, m, agentpty.WriteRequest{ID: res.ID, Input: "exit()", Submit: true, WaitMS: ms(10000)})
	if !w.Exited || strings.Contains(res.Output+w.Output, "PYTHONSTARTUP") {
		t.Fatalf("python on the host: %q%q", res.Output, w.Output)
	}
	data, err := os.ReadFile(filepath.Join(home, ".python_history"))
	if kept, want := strings.Contains(string(data), "40+2"), strings.TrimSpace(string(old)) == "True"; kept != want {
		t.Errorf("~/.python_history on the host holds the line: %v (%q, %v); want %v for this Python", kept, data, err, want)
	}
}
