// Package contain keeps every process a session starts in a cgroup v2 of
// the session's own, so that ending the session reaches all of them
// whatever they did to leave its process session or group (setsid, double
// forks, fork-and-exit chains), bounds their number where a pids
// controller is reachable, and ends them when the host process dies.
//
// A Host is one per Manager: a cgroup under the host process's own cgroup
// v2, a pids cgroup beside it where pids.max lives on cgroup v1, and a
// watchdog process that kills the Host's cgroup when the host's end of a
// pipe closes, which happens however the host process ends. A Group is one
// per session, inside the Host's cgroup; the child is cloned straight into
// it (CLONE_INTO_CGROUP), so nothing escapes between fork and move.
package contain

import (
	"errors"
	"time"
)

// Kinds of containment a Host gives, as Kind reports them.
const (
	// Cgroup: a cgroup v2 per session, killed whole by cgroup.kill, with
	// the session's processes bounded by pids.max.
	Cgroup = "cgroup2+pids"
	// CgroupUnbounded: a cgroup v2 per session, killed whole, but no pids
	// controller is reachable, so forks are not bounded.
	CgroupUnbounded = "cgroup2"
)

// Limits bound the processes and memory of a Host's sessions, where a
// controller for them is reachable.
type Limits struct {
	// SessionPids is pids.max of each session's cgroup.
	SessionPids int
	// TotalPids is pids.max of the Host's cgroup: the processes of all its
	// sessions together. 0: no bound beyond SessionPids.
	TotalPids int
	// Memory is the bytes all the Host's sessions together may use
	// (memory.max on cgroup v2, memory.limit_in_bytes on v1): past it the
	// kernel reclaims and then kills the largest. 0: no bound.
	Memory int64
}

// ErrUnavailable is returned by NewHost where the host cannot make cgroups.
var ErrUnavailable = errors.New("contain: no writable cgroup v2")

// DyingBound is how long Remove tries again a cgroup that only the dying
// hold, and how long a caller waits for a leader's reaping before it: on
// a loaded machine the reaper may run late.
const DyingBound = 5 * time.Second
