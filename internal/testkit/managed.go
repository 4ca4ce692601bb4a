//go:build unix

package testkit

import (
	"os"
	"strconv"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentpty/agentpty/internal/proc"
)

// SessionMarkEnv marks the processes of one test manager's sessions (see
// Managed), so that what left its session (setsid, a terminal of its own)
// is found too.
const SessionMarkEnv = "AGENTPTY_TEST_MANAGER"

// marks numbers the managers of this test binary.
var marks atomic.Int64

// Managed checks a manager the test makes and closes at its end: when t
// ends it lists its sessions' processes (pids), closes it (closeAll), and
// fails t if a process of those sessions still runs, a goroutine is left
// or a file descriptor leaked. The last two, which look at the whole
// process, are skipped while tests run in parallel (see Parallel). It
// returns the environment entry to give the manager's sessions
// (Options.Env). Call it before the manager is made, so that the
// descriptors it opens count.
func Managed(t testing.TB, pids func() []int, closeAll func() error) string {
	t.Helper()
	fds := OpenFDs(t)
	mark := SessionMarkEnv + "=" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(marks.Add(1), 10)
	t.Cleanup(func() {
		ran := pids()
		if err := closeAll(); err != nil {
			t.Errorf("Close: %v", err)
		}
		for _, pid := range ran {
			if pid <= 0 {
				continue // not a process of this machine
			}
			if left := proc.Members(pid); len(left) > 0 {
				t.Errorf("session %d still has processes %v after Close", pid, left)
			}
		}
		NoneMarked(t, mark, "the manager's sessions")
		if !Alone() {
			return // other tests' goroutines and descriptors come and go
		}
		goleak.VerifyNone(t)
		if now := OpenFDs(t); now > fds {
			t.Errorf("file descriptors leaked: %d open before, %d after", fds, now)
		}
	})
	return mark
}

// Done fails t, naming the call (what), when it returned err or, asked to
// wait for a text (waitFor), did not see it in output.
func Done(t testing.TB, what string, err error, waitFor string, matched bool, output string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if waitFor != "" && !matched {
		t.Fatalf("%s: %q did not appear; output %q", what, waitFor, output)
	}
}
