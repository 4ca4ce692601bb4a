//go:build linux || darwin

// Package proc finds and ends every process of a terminal session where
// no cgroup holds them: the child leads its own session, its background
// jobs live in other process groups of that session, and a process that
// left the session (setsid) is found as a descendant of a member. A
// Tracker holds on to every process it has once found, so one that loses
// its parent later is still reached, and its KillLoop stops each process
// the moment it is found, so a fork-and-exit chain that stays in the
// session is caught; a process that left the session and lost its parent
// before any scan is out of reach.
package proc

import (
	"context"
	"runtime"
	"slices"
	"syscall"
	"time"
)

// Tracker follows the processes of one session.
type Tracker struct {
	sid  int
	seen map[int]handle // every process found so far, by a handle that survives pid reuse
	// Except, when set, names at each scan the processes held elsewhere (a
	// cgroup), which the tracker leaves alone.
	Except func() []int
	stop   bool // KillLoop is stopping each process as it is found
}

// NewTracker follows the processes of session sid.
func NewTracker(sid int) *Tracker { return &Tracker{sid: sid, seen: map[int]handle{}} }

// scan adds the members found now and drops the processes that have
// exited; it returns the live pids and how many of them are new.
func (t *Tracker) scan() (live []int, fresh int) {
	var skip map[int]bool
	if t.Except != nil {
		skip = map[int]bool{}
		for _, pid := range t.Except() {
			skip[pid] = true
		}
	}
	hold := func(pid int) {
		if _, ok := t.seen[pid]; ok || skip[pid] {
			return
		}
		if h, ok := openHandle(pid); ok {
			if t.stop {
				h.signal(syscall.SIGSTOP) // at once: it may be about to fork
			}
			t.seen[pid] = h
			fresh++
		}
	}
	newest(t.sid, hold)
	each(t.sid, hold)
	if t.stop {
		newest(t.sid, hold) // again: the walk took long enough for a few forks
	}
	for pid, h := range t.seen {
		if h.alive() {
			live = append(live, pid)
		} else {
			h.close()
			delete(t.seen, pid)
		}
	}
	slices.Sort(live)
	return live, fresh
}

// Members returns the live processes the tracker follows, scanning first.
func (t *Tracker) Members() []int {
	live, _ := t.scan()
	return live
}

// Signal sends each of sigs, in order, to every process followed; it
// returns how many there were.
func (t *Tracker) Signal(sigs ...syscall.Signal) int {
	live, _ := t.scan()
	for _, sig := range sigs {
		for _, pid := range live {
			t.seen[pid].signal(sig)
		}
	}
	return len(live)
}

// WaitGone waits until no process followed is alive or ctx ends, when it
// returns ctx's error.
func (t *Tracker) WaitGone(ctx context.Context) error {
	for {
		live, _ := t.scan()
		if len(live) == 0 {
			return nil
		}
		if err := waitExit(ctx, live); err != nil {
			return err
		}
	}
}

// A scan can miss a process that forks and exits between its reading of
// /proc and of the process: the tracker trusts an empty or unchanged view
// only after quietScans scans in a row over at least quietTime.
const (
	quietScans = 4
	quietTime  = 20 * time.Millisecond
)

// KillLoop ends the session by force, or returns ctx's error when ctx
// ends first. It stops every process as soon as a scan finds it (a
// stopped process cannot fork, and the children of one keep it as their
// parent, so the tree stays whole to scan) and scans again until nothing
// new turns up for a quiet stretch; then it kills them all, and starts
// over until a quiet stretch finds nothing alive.
func (t *Tracker) KillLoop(ctx context.Context) error {
	t.stop = true
	defer func() { t.stop = false }()
	for {
		live, err := t.settle(ctx)
		for _, pid := range live {
			t.seen[pid].signal(syscall.SIGKILL) // even when ctx has ended: none is left stopped
		}
		if err != nil || len(live) == 0 {
			return err
		}
		if err := waitExit(ctx, live); err != nil {
			return err
		}
	}
}

// settle scans, stopping what it finds, until quietScans scans in a row
// over quietTime found nothing new, and returns the live processes.
func (t *Tracker) settle(ctx context.Context) ([]int, error) {
	quiet, since := 0, time.Now()
	for {
		live, fresh := t.scan()
		if fresh > 0 {
			quiet, since = 0, time.Now()
		} else if quiet++; quiet >= quietScans && time.Since(since) >= quietTime {
			return live, nil
		}
		if err := ctx.Err(); err != nil {
			return live, err
		}
		if quiet > 0 {
			runtime.Gosched() // between scans, so a stretch is not all one thread's
		}
	}
}

// Close lets go of the processes followed.
func (t *Tracker) Close() {
	for pid, h := range t.seen {
		h.close()
		delete(t.seen, pid)
	}
}
