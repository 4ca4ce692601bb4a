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

// MarkedProc is a process Marked found.
type MarkedProc struct {
	PID     int
	Cmdline string // its arguments, joined by spaces
}

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
	lines := make([]string, len(left))
	for i, p := range left {
		lines[i] = strconv.Itoa(p.PID) + " " + p.Cmdline
		_ = syscall.Kill(p.PID, syscall.SIGKILL)
	}
	t.Errorf("%v after the test, processes %s started still ran, now killed:\n%s", LeftWait, what, strings.Join(lines, "\n"))
}
