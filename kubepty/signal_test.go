package kubepty

import (
	"testing"
	"time"

	"github.com/agentpty/agentpty"
)

// An exit code 128+N is signal N when the session sent N to the command
// itself, and a code otherwise.
func TestSignalDeaths(t *testing.T) {
	_, b := standin(t)
	m := newManager(t, b, mark(4715))
	// The same code chosen by the program is a code.
	res := mustStart(t, m, agentpty.StartRequest{Command: "echo bye; exit 143", WaitMS: ptr(5000)})
	if !res.Exited || res.ExitCode == nil || *res.ExitCode != 143 || res.Signal != "" {
		t.Errorf("exit 143: exited %v code %v signal %q", res.Exited, res.ExitCode, res.Signal)
	}
	// A signal that reached only the foreground job, not the command (a
	// shell with job control), leaves the shell's own exit a code.
	res = mustStart(t, m, agentpty.StartRequest{Command: "set -m; echo ready; sleep " + mark(4715) + "; exit $?", WaitFor: "ready"})
	// The shell prints "ready" before sleep is in front: until then the
	// signal would reach the shell.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if p := mustWrite(t, m, agentpty.WriteRequest{ID: res.ID, WaitMS: ptr(0)}); p.Foreground == "sleep" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("sleep never came in front")
		}
	}
	w := mustWrite(t, m, agentpty.WriteRequest{ID: res.ID, SendSignal: "TERM", WaitMS: ptr(5000)})
	if !w.Exited || w.ExitCode == nil || *w.ExitCode != 143 || w.Signal != "" {
		t.Errorf("the job's SIGTERM: exited %v code %v signal %q", w.Exited, w.ExitCode, w.Signal)
	}
	// Kill's TERM ends the command: the signal.
	res = mustStart(t, m, agentpty.StartRequest{Command: "echo ready; exec sleep " + mark(4715), WaitFor: "ready"})
	k, err := m.Kill(ctx10(t), res.ID)
	if err != nil || k.ExitCode != nil || k.Signal != "SIGTERM" {
		t.Errorf("Kill: code %v signal %q (%v)", k.ExitCode, k.Signal, err)
	}
	// Kill's HUP and KILL are the session's too: a command that ignores
	// TERM (an ignored signal stays ignored across exec) dies of HUP, one
	// that ignores both of KILL. A short grace keeps the KILL quick.
	mk := newManagerOpts(t, agentpty.Options{Backend: b, KillGrace: 500 * time.Millisecond}, false, mark(4716))
	for _, c := range []struct{ traps, want string }{{"TERM", "SIGHUP"}, {"TERM HUP", "SIGKILL"}} {
		res = mustStart(t, mk, agentpty.StartRequest{Command: "trap '' " + c.traps + "; echo ready; exec sleep " + mark(4716), WaitFor: "ready"})
		k, err := mk.Kill(ctx10(t), res.ID)
		if err != nil || k.ExitCode != nil || k.Signal != c.want {
			t.Errorf("Kill ignoring %s: code %v signal %q (%v), want %s", c.traps, k.ExitCode, k.Signal, err, c.want)
		}
	}
}
