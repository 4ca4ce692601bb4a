package agentpty

import (
	"os/exec"
	"syscall"
	"time"
)

// wantPidfd does nothing: macOS has no pidfd, and cmd.Wait reaps.
func wantPidfd(*exec.Cmd) {}

// closePidfd does nothing: there is none.
func closePidfd(*exec.Cmd) {}

// childWaiter reaps one started child through os/exec's Wait.
type childWaiter struct{ cmd *exec.Cmd }

func newChildWaiter(cmd *exec.Cmd) childWaiter { return childWaiter{cmd: cmd} }

// signal reports that it sent nothing: without a pidfd the caller goes
// through the cgroup's own listing.
func (childWaiter) signal(...syscall.Signal) bool { return false }

// awaitReaped returns at once: cmd.Wait reaps in its own time.
func (childWaiter) awaitReaped(time.Duration) {}

// gone is nil: nothing says when cmd.Wait has reaped.
func (childWaiter) gone() <-chan struct{} { return nil }

func (w childWaiter) wait() ExitStatus {
	err := w.cmd.Wait()
	return exitStatus(w.cmd.ProcessState, err)
}
