package testkit

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// freezerRoot is where a cgroup v1 freezer hierarchy is mounted.
const freezerRoot = "/sys/fs/cgroup/freezer"

// Freeze stops pid in a cgroup v1 freezer of its own: a frozen process
// outlives SIGKILL until it is thawed (the v2 freezer lets it die, so t
// is skipped where there is no v1 freezer). thaw, run when t ends too,
// lets it go and removes the cgroup.
func Freeze(t testing.TB, pid int) (thaw func()) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(freezerRoot, "cgroup.procs")); err != nil {
		Lacks(t, "there is no cgroup v1 freezer at %s (a frozen process there outlives SIGKILL): %v", freezerRoot, err)
	}
	dir, err := os.MkdirTemp(freezerRoot, "agentpty-test-")
	if err != nil {
		Lacks(t, "a freezer cgroup cannot be made: %v", err)
	}
	write := func(file, s string) error { return os.WriteFile(filepath.Join(dir, file), []byte(s), 0o644) }
	thaw = sync.OnceFunc(func() {
		_ = write("freezer.state", "THAWED")
		deadline := time.Now().Add(10 * time.Second)
		for os.Remove(dir) != nil && time.Now().Before(deadline) {
			procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			for _, p := range strings.Fields(string(procs)) {
				_ = os.WriteFile(filepath.Join(freezerRoot, "cgroup.procs"), []byte(p), 0o644)
			}
			time.Sleep(10 * time.Millisecond) // a bounded poll: the cgroup empties as its tasks move or exit
		}
	})
	t.Cleanup(thaw)
	if err := write("cgroup.procs", strconv.Itoa(pid)); err != nil {
		t.Fatalf("moving %d into %s: %v", pid, dir, err)
	}
	if err := write("freezer.state", "FROZEN"); err != nil {
		t.Fatalf("freezing %s: %v", dir, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		state, _ := os.ReadFile(filepath.Join(dir, "freezer.state"))
		if strings.TrimSpace(string(state)) == "FROZEN" {
			return thaw
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is %q, not FROZEN", dir, state)
		}
		time.Sleep(10 * time.Millisecond) // a bounded poll: freezing is asynchronous
	}
}
