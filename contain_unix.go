//go:build linux || darwin

package agentpty

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/agentpty/agentpty/internal/contain"
	"github.com/agentpty/agentpty/internal/endsched"
	"github.com/agentpty/agentpty/internal/proc"
)

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

// cgroupContainer is a session's cgroup, and the leader's process session
// once the leader is seen alive outside the cgroup: a program that is not
// sandboxed may move itself out (to a cgroup it may write), and what it
// forks then is born outside too. The session is scanned only then, so a
// kill that nothing fought costs no walk through /proc.
type cgroupContainer struct {
	g     *contain.Group
	s     sessionContainer // follows what is not in the cgroup
	out   bool             // the leader was seen outside the cgroup
	child childWaiter      // the leader's reaper: it signals the leader alone, and says when it is reaped
}

// look notes a leader that lives outside the cgroup.
func (c *cgroupContainer) look() {
	if c.out || c.s.exited() {
		return
	}
	if c.g.Left(c.s.sid) && proc.Alive(c.s.sid) {
		c.out = true
	}
}

func (c *cgroupContainer) Signal(sigs ...syscall.Signal) int {
	// Most groups hold their leader alone, in the cgroup: its pidfd spares
	// a pidfd per process, the listing again, and /proc's word on where
	// the leader is. A process born after the listing is left to the
	// signals that follow, as one born during Group.Signal is.
	if !c.out {
		if pids := c.g.Members(); len(pids) == 1 && pids[0] == c.s.sid && c.child.signal(sigs...) {
			return 1
		}
	}
	n := c.g.Signal(sigs...)
	if c.look(); c.out {
		n += c.s.Signal(sigs...)
	}
	return n
}

func (c *cgroupContainer) WaitEmpty(ctx context.Context) error {
	if err := c.g.WaitEmpty(ctx); err != nil {
		return err
	}
	if c.look(); c.out {
		return c.s.WaitEmpty(ctx)
	}
	return nil
}

func (c *cgroupContainer) KillAll(ctx context.Context) error {
	err := c.g.Kill()
	if c.look(); c.out {
		if e := c.s.KillAll(ctx); err == nil {
			err = e
		}
	}
	return err
}

func (c *cgroupContainer) Members() []int {
	pids := c.g.Members()
	if c.out {
		pids = append(pids, c.s.Members()...)
	}
	return pids
}

func (c *cgroupContainer) Release() error {
	c.s.Release()
	// A leader that has exited holds its cgroup until it is reaped; one
	// still running (frozen, say), or outside, is not waited for.
	if !c.out && !c.g.Populated() {
		c.child.awaitReaped(contain.DyingBound)
	}
	return c.g.Remove()
}

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
func (c sessionContainer) KillAll(ctx context.Context) error {
	if c.stale() {
		return nil
	}
	return c.KillLoop(ctx)
}
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

// endProcesses ends every process c holds: SIGTERM (and SIGCONT, so stopped
// jobs can act on it), SIGHUP to what is left endsched.HupDelay later, SIGKILL to
// what is left once grace has passed since the start, or at once when ctx
// ends. It names the processes still running killBound after SIGKILL, or
// a moment after ctx ended.
func endProcesses(ctx context.Context, c container, grace time.Duration) error {
	return released(ctx, c, stopProcesses(ctx, c, grace))
}

// released releases c once its processes are ended, and names those left.
func released(ctx context.Context, c container, left []int) error {
	err := c.Release() // a cgroup with processes left stays, for the watchdog
	switch {
	case len(left) > 0 && ctx.Err() != nil:
		return fmt.Errorf("processes %v were still running after SIGKILL when the context ended: %w", left, ctx.Err())
	case len(left) > 0:
		return fmt.Errorf("processes %v survived SIGKILL for %v", left, killBound)
	}
	return err
}

// lateKill is how long after ctx ends Kill still waits for the kernel to
// carry out the SIGKILL it sent, so that it names only processes that
// really outlived it.
const lateKill = 100 * time.Millisecond

// stopProcesses is endProcesses's signalling; it returns the survivors.
func stopProcesses(ctx context.Context, c container, grace time.Duration) []int {
	if c.Signal(syscall.SIGTERM, syscall.SIGCONT) > 0 {
		_ = politely(ctx, c, time.Now().Add(grace))
	}
	// SIGKILL cannot be caught; this only waits for the kernel. It is sent
	// even when the polite signals found nothing or saw everything end: a
	// /proc scan can miss a process between fork and exit, and a cgroup's
	// cgroup.kill costs nothing when it is empty.
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killBound)
	defer cancel()
	defer context.AfterFunc(ctx, func() { time.AfterFunc(lateKill, cancel) })()
	if c.KillAll(kctx) == nil && c.WaitEmpty(kctx) == nil {
		return nil
	}
	return c.Members()
}

// politely is the schedule after SIGTERM, endsched.Polite's, for c.
func politely(ctx context.Context, c container, deadline time.Time) error {
	return endsched.Polite(ctx, polite{c}, endsched.HupDelay, deadline)
}

// polite is a container as endsched.Polite ends it.
type polite struct{ c container }

func (p polite) Hup()                                { p.c.Signal(syscall.SIGHUP, syscall.SIGCONT) }
func (p polite) IgnoreTerm() bool                    { return allIgnore(p.c.Members(), syscall.SIGTERM) }
func (p polite) WaitEmpty(ctx context.Context) error { return p.c.WaitEmpty(ctx) }

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
