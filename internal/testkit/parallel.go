package testkit

import (
	"sync/atomic"
	"testing"
)

// running counts the tests that called Parallel and have not ended.
var running atomic.Int64

// Parallel runs t in parallel with the other tests that call it or
// t.Parallel, and counts it until it ends. While any counted test runs,
// Managed skips the checks of the whole process (goroutines, open
// descriptors), which see the other tests' goroutines and descriptors
// come and go; the checks of the test's own manager (its sessions'
// processes, the processes it marked) still run, and TestMain's
// goleak.VerifyTestMain still checks the goroutines at the end. Go runs
// parallel tests only once every serial test has returned, so a serial
// test keeps all the checks. Call it first in the test, before Managed.
func Parallel(t *testing.T) {
	t.Helper()
	t.Parallel()
	running.Add(1)
	t.Cleanup(func() { running.Add(-1) }) // runs after Managed's: cleanups run last first
}

// Alone reports whether no test counted by Parallel runs: then the
// checks of the whole process (goroutines, descriptors) are sound.
func Alone() bool { return running.Load() == 0 }
