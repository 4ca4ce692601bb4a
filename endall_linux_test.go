package agentpty

import (
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentpty/agentpty/internal/proc"
)

// Close ends its sessions together (endTogether), and each as its own
// Kill would: a TERM handler runs to its end, an interactive bash goes on
// SIGHUP, what ignores both gets SIGKILL after KillGrace, a background
// job and a leader that left its cgroup (with the job it forked outside)
// go too, and every cgroup is removed.
func TestCloseEndsEachAsKillWould(t *testing.T) {
	need(t, "python3")
	mark := marker(t)
	var mu sync.Mutex
	ended := map[string]Event{}
	m := newManager(t, Options{Shell: containShell, KillGrace: time.Second, OnEvent: func(e Event) {
		if e.Kind == EventKilled {
			mu.Lock()
			ended[e.ID] = e
			mu.Unlock()
		}
	}})
	term := mustStart(t, m, StartRequest{Command: `exec python3 -c 'import signal, sys, time
def done(*_):
    time.sleep(0.05)
    sys.exit(3)
signal.signal(signal.SIGTERM, done)
print("ready", flush=True)
time.sleep(1000)'`, WaitFor: "ready"})
	bash := mustStart(t, m, StartRequest{Command: "PS1='ready$ ' exec bash --norc -i", WaitFor: "ready$ "})
	cmd, env := childCommand("ignore-term")
	stubborn := mustStart(t, m, StartRequest{Command: cmd, Env: env, WaitFor: "ready"})
	s, _, held := leaveCgroup(t, m, mark)
	job := mustStart(t, m, StartRequest{Command: "(exec -a " + mark + "job sleep 1000) & echo ready; exec cat", WaitFor: "ready"})
	t.Cleanup(func() {
		for _, p := range withMarker(mark) {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	})
	var pids []int
	dir := sessionGroup(s).Dir()
	for _, info := range m.List() {
		pids = append(pids, info.PID)
	}
	start := time.Now()
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	t.Logf("Close took %v", time.Since(start))
	if took := time.Since(start); took < time.Second {
		t.Errorf("Close took %v: the process that ignores TERM and HUP had less than KillGrace", took)
	}
	for id, want := range map[string]string{term.ID: "exit 3", bash.ID: "SIGHUP", stubborn.ID: "SIGKILL", job.ID: "SIGTERM"} {
		e := ended[id]
		got := e.Signal
		if e.ExitCode != nil {
			got = "exit " + strconv.Itoa(*e.ExitCode)
		}
		if got != want {
			t.Errorf("%s ended with %q, want %q", id, got, want)
		}
	}
	for _, pid := range pids {
		if left := proc.Members(pid); len(left) > 0 {
			t.Errorf("session %d still has processes %v after Close", pid, left)
		}
	}
	if left := withMarker(mark); len(left) > 0 {
		t.Errorf("processes %v outlived Close", left)
	}
	allGone(t, held)
	if d := filepath.Dir(dir); exists(d) {
		t.Errorf("the Manager's cgroup %s is left after Close", d)
	}
}

// Close reports each session as soon as its own processes are gone and
// its cgroup removed, not once every session has ended: a cat that goes
// on SIGTERM is reported killed, its cgroup gone, while a program that
// holds out for SIGKILL is still running out its KillGrace.
func TestCloseReportsEachAsItEnds(t *testing.T) {
	type seen struct {
		stubbornAlive, groupLeft bool
	}
	var (
		mu     sync.Mutex
		catID  string
		catDir string
		pid    int
		at     *seen
	)
	m := newManager(t, Options{Shell: containShell, KillGrace: 3 * time.Second, OnEvent: func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		if e.Kind == EventKilled && e.ID == catID && at == nil {
			at = &seen{stubbornAlive: proc.Alive(pid), groupLeft: exists(catDir)}
		}
	}})
	cat := mustStart(t, m, StartRequest{Command: "echo ready; exec cat", WaitFor: "ready"})
	cmd, env := childCommand("ignore-term")
	stubborn := mustStart(t, m, StartRequest{Command: cmd, Env: env, WaitFor: "ready"})
	s, _ := m.Session(cat.ID)
	held, _ := m.Session(stubborn.ID)
	mu.Lock()
	catID, catDir, pid = cat.ID, sessionGroup(s).Dir(), held.PID()
	mu.Unlock()
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	switch {
	case at == nil:
		t.Fatal("no killed event for the cat")
	case !at.stubbornAlive:
		t.Error("the cat was reported killed only once the program that ignores SIGTERM had been killed too")
	case at.groupLeft:
		t.Errorf("the cat was reported killed with its cgroup %s still there", catDir)
	}
	if proc.Alive(pid) {
		t.Errorf("the program that ignores SIGTERM (%d) outlived Close", pid)
	}
}
