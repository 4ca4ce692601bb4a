package agentpty

import (
	"context"
	"fmt"
	"os/exec"
	"syscall"
	"time"

	"github.com/agentpty/agentpty/internal/contain"
	"github.com/agentpty/agentpty/internal/endsched"
)

// What Session.Containment reports.
const (
	// ContainCgroup: the session has a cgroup v2 of its own, which the
	// child is cloned into; Kill reaches every process in it and in
	// cgroups made inside it whatever it did (setsid, double forks,
	// fork-and-exit chains), and a leader that moved itself out through
	// its process session; pids.max bounds how many there are
	// (Options.MaxProcesses, MaxProcessesTotal), and a watchdog kills them
	// all if the host process dies. It holds against programs that do not
	// fight it: one that may write cgroups can move a process elsewhere;
	// the sandbox is what holds against those.
	ContainCgroup = contain.Cgroup
	// ContainCgroupUnbounded: as ContainCgroup, but no pids controller is
	// reachable, so forks are not bounded.
	ContainCgroupUnbounded = contain.CgroupUnbounded
	// ContainSession: no cgroup could be made. Kill finds the processes of
	// the child's process session and their descendants by scanning /proc,
	// stops each as soon as it is found, and kills them once scans over a
	// quiet stretch find nothing new, until such a stretch finds none
	// alive. A process that left the session and whose parent exited is
	// out of reach, and nothing outlives the host's death on purpose.
	ContainSession = "session"
)

// killBound is how long Kill waits for the kernel after SIGKILL before it
// names the processes that survived (endsched.KillBound; a variable for
// tests).
var killBound = endsched.KillBound

// awaitReaped waits for the leader pid to be reaped (reaped is closed),
// which follows at once once endAll has ended it, and at most until ctx
// ends or killBound has passed: a leader that survived SIGKILL must not
// hold Kill.
func awaitReaped(ctx context.Context, reaped <-chan struct{}, pid int) error {
	t := time.NewTimer(killBound)
	defer t.Stop()
	select {
	case <-reaped:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("the leader %d has not exited: %w", pid, ctx.Err())
	case <-t.C:
		return fmt.Errorf("the leader %d has not exited %v after SIGKILL", pid, killBound)
	}
}

// containHost returns the manager's cgroup, made on first use, or nil
// where the host cannot make one.
func (m *Manager) containHost() *contain.Host {
	m.containOnce.Do(func() {
		m.room.open()
		h, err := contain.NewHost(contain.Limits{SessionPids: m.opts.MaxProcesses,
			TotalPids: m.opts.MaxProcessesTotal, Memory: m.opts.MaxMemory})
		if err == nil {
			m.contain = h
		}
	})
	return m.contain
}

// containChild prepares cmd to start inside a cgroup of the session's own,
// where the host can make one. It returns nil when it cannot.
func containChild(m *Manager, name string, cmd *exec.Cmd) *contain.Group {
	h := m.containHost()
	if h == nil {
		return nil
	}
	g, err := h.NewGroup(name)
	if err != nil {
		return nil
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	g.Prepare(cmd.SysProcAttr)
	return g
}

// Containment says what holds the session's processes: ContainCgroup,
// ContainCgroupUnbounded or ContainSession (see each); empty where the
// session's terminal does not say (see Contained).
func (s *Session) Containment() string {
	if c, ok := s.term.(Contained); ok {
		return c.Containment()
	}
	return ""
}
