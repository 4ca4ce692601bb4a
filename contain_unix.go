//go:build linux || darwin

package agentpty

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/agentpty/agentpty/internal/contain"
	"github.com/agentpty/agentpty/internal/proc"
)

// hupDelay is how long after SIGTERM the session's processes still running
// get SIGHUP: a program handling TERM has this long before HUP, which ends
// what ignores TERM (interactive bash).
const hupDelay = 200 * time.Millisecond

// killBound is how long Kill waits for the kernel after SIGKILL before it
// names the processes that survived.
var killBound = 5 * time.Second

// container is what holds a session's processes.
type container interface {
	// Signal sends sigs, in order, to every process held; it returns how
	// many it found.
	Signal(sigs ...syscall.Signal) int
	// WaitEmpty waits until no process is held or ctx ends.
	WaitEmpty(ctx context.Context) error
	// KillAll ends every process by force, within ctx.
	KillAll(ctx context.Context) error
	// Members lists the processes held now.
	Members() []int
	// Release frees what holds the processes once they are gone.
	Release() error
}

// cgroupContainer is a session's cgroup.
type cgroupContainer struct{ *contain.Group }

func (c cgroupContainer) KillAll(context.Context) error { return c.Kill() }
func (c cgroupContainer) Release() error                { return c.Remove() }

// sessionContainer is the fallback: the processes of the child's process
// session (its id is the leader's pid) and their descendants, each held
// once found.
type sessionContainer struct {
	*proc.Tracker
	sid    int
	exited func() bool // the leader has been reaped
}

func (c sessionContainer) Signal(sigs ...syscall.Signal) int {
	if c.stale() {
		return 0
	}
	return c.Tracker.Signal(sigs...)
}
func (c sessionContainer) WaitEmpty(ctx context.Context) error { return c.WaitGone(ctx) }
func (c sessionContainer) KillAll(ctx context.Context) error   { return c.KillLoop(ctx) }
func (c sessionContainer) Release() error {
	c.Close()
	return nil
}

// stale reports a session id that may now name someone else's processes:
// once the leader is reaped, the kernel hands its number to a new process
// only after every member of the session is gone, so a live process with
// it is not ours.
func (c sessionContainer) stale() bool {
	return c.exited() && processExists(c.sid)
}

// containment returns what holds the session's processes.
func (s *Session) containment() container {
	if s.group != nil {
		return cgroupContainer{s.group}
	}
	return sessionContainer{Tracker: proc.NewTracker(s.pid), sid: s.pid, exited: func() bool { _, exited := s.ended(); return exited }}
}

// endProcesses ends every process c holds: SIGTERM (and SIGCONT, so stopped
// jobs can act on it), SIGHUP to what is left hupDelay later, SIGKILL to
// what is left once grace has passed since the start, or at once when ctx
// ends. It names the processes that outlive SIGKILL by killBound.
func endProcesses(ctx context.Context, c container, grace time.Duration) error {
	left := stopProcesses(ctx, c, grace)
	err := c.Release() // a cgroup with processes left stays, for the watchdog
	if len(left) > 0 {
		return fmt.Errorf("processes %v survived SIGKILL for %v", left, killBound)
	}
	return err
}

// stopProcesses is endProcesses's signalling; it returns the survivors.
func stopProcesses(ctx context.Context, c container, grace time.Duration) []int {
	deadline := time.Now().Add(grace)
	if c.Signal(syscall.SIGTERM, syscall.SIGCONT) == 0 {
		return nil
	}
	// What ignores TERM (an interactive bash at its prompt) gets nothing
	// from the delay: when that is all there is, HUP follows at once.
	var err error
	if !allIgnore(c.Members(), syscall.SIGTERM) {
		hctx, cancel := context.WithDeadline(ctx, time.Now().Add(min(hupDelay, grace)))
		err = c.WaitEmpty(hctx)
		cancel()
	} else {
		err = context.DeadlineExceeded
	}
	if err != nil && ctx.Err() == nil {
		c.Signal(syscall.SIGHUP, syscall.SIGCONT)
		gctx, cancel := context.WithDeadline(ctx, deadline)
		err = c.WaitEmpty(gctx)
		cancel()
	}
	if err == nil {
		return nil
	}
	// SIGKILL cannot be caught; this only waits for the kernel.
	kctx, cancel := context.WithTimeout(context.Background(), killBound)
	defer cancel()
	if err := c.KillAll(kctx); err == nil {
		if err := c.WaitEmpty(kctx); err == nil {
			return nil
		}
	}
	return c.Members()
}

// endAll ends every process of the session.
func (s *Session) endAll(ctx context.Context) error {
	return endProcesses(ctx, s.containment(), s.m.opts.KillGrace)
}

// allIgnore reports whether every process of pids ignores sig; false for
// none.
func allIgnore(pids []int, sig syscall.Signal) bool {
	for _, pid := range pids {
		if !proc.Ignores(pid, sig) {
			return false
		}
	}
	return len(pids) > 0
}

// killAll ends, by force, the process group pid leads and everything in
// group (nil: the group alone). For children that hold nothing worth a
// grace period, such as the shell snapshot's profile run.
func killAll(pid int, group *contain.Group) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	if group != nil {
		_ = group.Kill()
	}
}
