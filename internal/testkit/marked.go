//go:build unix

package testkit

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// LeftWait bounds the wait, once a test has ended, for the processes it
// started to end (a hang-up or a kill takes a moment to reach each one).
const LeftWait = 5 * time.Second

// NoneMarked fails t when a process whose environment holds kv still runs
// LeftWait from now, naming each, and kills them so that a failed test
// leaves nothing behind.
func NoneMarked(t testing.TB, kv, what string) {
	t.Helper()
	deadline := time.Now().Add(LeftWait)
	left := Marked(kv)
	for len(left) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // nothing announces a process's end to a non-parent
		left = Marked(kv)
	}
	if len(left) == 0 {
		return
	}
	t.Errorf("%v after the test, processes %s started still run:\n%s", LeftWait, what, strings.Join(left, "\n"))
	for _, l := range left {
		pid, _, _ := strings.Cut(l, " ")
		if n, err := strconv.Atoi(pid); err == nil {
			_ = syscall.Kill(n, syscall.SIGKILL)
		}
	}
}
