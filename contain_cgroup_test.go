//go:build linux

package agentpty

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Close removes the cgroups it made, the session's and the manager's own,
// which Kill alone leaves to the manager.
func TestCloseRemovesCgroups(t *testing.T) {
	m := newManager(t, Options{Shell: containShell})
	res := mustStart(t, m, StartRequest{Command: readyCat, WaitFor: "ready"})
	s, _ := m.Session(res.ID)
	needCgroup(t, s)
	dir := sessionGroup(s).Dir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("cgroup %s while the session runs: %v", d, err)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cgroup %s after Close: %v", d, err)
		}
	}
}

// cgroupOf returns the cgroup v2 path of pid, as /proc/PID/cgroup says.
func cgroupOf(pid int) string {
	for _, line := range strings.Split(readText("/proc/"+strconv.Itoa(pid)+"/cgroup"), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p
		}
	}
	return ""
}

// leaveCgroup starts a session whose leader, not sandboxed, moves itself
// into the host process's own cgroup (where it may write, being root), forks
// a job that is born outside the session's cgroup, and sleeps under the name
// mark. It returns the session, the leader's pid and the FIFO its processes
// hold.
func leaveCgroup(t *testing.T, m *Manager, mark string) (*Session, int, *os.File) {
	t.Helper()
	hold, held := holder(t)
	res := mustStart(t, m, StartRequest{Command: hold + `echo ready; read -r dir; echo $$ >"$dir/cgroup.procs" || exit 1; ` +
		`(exec -a ` + mark + ` sleep 1000) & echo moved; exec -a ` + mark + ` sleep 1000`, WaitFor: "ready"})
	s, _ := m.Session(res.ID)
	needCgroup(t, s)
	base := filepath.Dir(filepath.Dir(sessionGroup(s).Dir()))
	mustWrite(t, m, WriteRequest{ID: res.ID, Input: base, Submit: true, WaitFor: "moved"})
	if in := cgroupOf(s.PID()); strings.HasPrefix(in, cgroupOf(os.Getpid())+"/") || in == "" {
		t.Fatalf("the leader is still in %q", in)
	}
	// "moved" comes before the leader's exec, and the job's may be under
	// way: a process in the middle of one shows no command line. The
	// kernel says nothing when an exec ends, so this looks again.
	for deadline := time.Now().Add(10 * time.Second); len(withMarker(mark)) != 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d processes named %s run, want the leader and its job", len(withMarker(mark)), mark)
		}
	}
	return s, s.PID(), held
}

// A leader that leaves its cgroup is still ended by Kill, within its
// context, with the job it forked outside the cgroup; Close then leaves no
// cgroup behind.
func TestContainLeaderLeavesCgroup(t *testing.T) {
	mark := marker(t)
	m := newManager(t, Options{Shell: containShell, KillGrace: 300 * time.Millisecond})
	s, pid, held := leaveCgroup(t, m, mark)
	dir := sessionGroup(s).Dir()
	t.Cleanup(func() {
		for _, p := range withMarker(mark) {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	})
	took, err := killWithin(t, m, s.ID(), 10*time.Second)
	t.Logf("Kill: %v after %v", err, took)
	if err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if left := withMarker(mark); len(left) > 0 {
		t.Fatalf("processes %v survived Kill (the leader was %d)", left, pid)
	}
	allGone(t, held)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cgroup %s after Close: %v", d, err)
		}
	}
}

// Kill keeps to its context even when a process it must end cannot die (a
// leader outside its cgroup, frozen so that SIGKILL waits), and names it.
func TestContainKillHonoursContext(t *testing.T) {
	mark := marker(t)
	m := newManager(t, Options{Shell: containShell, KillGrace: 200 * time.Millisecond})
	s, pid, _ := leaveCgroup(t, m, mark)
	thaw := sync.OnceFunc(freeze(t, pid))
	t.Cleanup(func() {
		thaw()
		for _, p := range withMarker(mark) {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	})
	const d = 1500 * time.Millisecond
	took, err := killWithin(t, m, s.ID(), d)
	thaw()
	t.Logf("Kill: %v after %v", err, took)
	if took > d+time.Second {
		t.Errorf("Kill with a context of %v took %v", d, took)
	}
	if err == nil || !strings.Contains(err.Error(), strconv.Itoa(pid)) {
		t.Fatalf("Kill with the leader %d unkillable: %v; want an error naming it", pid, err)
	}
	waitGone(t, pid)
}

// A child that makes cgroups of its own inside the session's and moves
// processes into them, two levels deep, is ended whole by Kill, and Close
// removes every cgroup, the child's included.
func TestContainNestedCgroups(t *testing.T) {
	mark := marker(t)
	m := newManager(t, Options{Shell: containShell, KillGrace: 200 * time.Millisecond})
	hold, held := holder(t)
	res := mustStart(t, m, StartRequest{Command: hold + `M=$(awk '$3=="cgroup2"{print $2; exit}' /proc/mounts); ` +
		`G=$M$(sed -n 's/^0:://p' /proc/self/cgroup); mkdir -p "$G/sub/deep" || exit 1; ` +
		`(echo $BASHPID >"$G/sub/cgroup.procs" && exec -a ` + mark + ` sleep 1000) & ` +
		`(echo $BASHPID >"$G/sub/deep/cgroup.procs" && exec -a ` + mark + ` sleep 1000) & ` +
		`until grep -q . "$G/sub/cgroup.procs" && grep -q . "$G/sub/deep/cgroup.procs"; do :; done; echo nested; wait`, WaitFor: "nested"})
	s, _ := m.Session(res.ID)
	needCgroup(t, s)
	dir := sessionGroup(s).Dir()
	if _, err := os.Stat(filepath.Join(dir, "sub", "deep")); err != nil {
		t.Fatalf("the child's cgroup: %v", err)
	}
	t.Cleanup(func() {
		for _, p := range withMarker(mark) {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	})
	took, err := killWithin(t, m, res.ID, 10*time.Second)
	t.Logf("Kill: %v after %v", err, took)
	if err != nil {
		t.Errorf("Kill: %v", err)
	}
	if left := withMarker(mark); len(left) > 0 {
		t.Fatalf("processes %v in the nested cgroups survived Kill", left)
	}
	allGone(t, held)
	if err := m.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	for _, d := range []string{filepath.Join(dir, "sub", "deep"), dir, filepath.Dir(dir)} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cgroup %s after Close: %v", d, err)
		}
	}
}
