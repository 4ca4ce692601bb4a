//go:build linux || darwin

// Package proc finds and ends every process of a terminal session where
// no cgroup holds them: the child leads its own session, its background
// jobs live in other process groups of that session, and a process that
// left the session (setsid) is found as a descendant of a member. A
// Tracker holds on to every process it has once found, so one that loses
// its parent later is still reached; a process that left the session and
// lost its parent before any scan (a fork-and-exit chain) is out of reach.
package proc

import (
	"context"
	"slices"
	"syscall"
)

// Tracker follows the processes of one session.
type Tracker struct {
	sid  int
	seen map[int]handle // every process found so far, by a handle that survives pid reuse
}

// NewTracker follows the processes of session sid.
func NewTracker(sid int) *Tracker { return &Tracker{sid: sid, seen: map[int]handle{}} }

// scan adds the members found now and drops the processes that have
// exited; it returns the live pids.
func (t *Tracker) scan() []int {
	for _, pid := range Members(t.sid) {
		if _, ok := t.seen[pid]; !ok {
			if h, ok := openHandle(pid); ok {
				t.seen[pid] = h
			}
		}
	}
	var live []int
	for pid, h := range t.seen {
		if h.alive() {
			live = append(live, pid)
		} else {
			h.close()
			delete(t.seen, pid)
		}
	}
	slices.Sort(live)
	return live
}

// Members returns the live processes the tracker follows, scanning first.
func (t *Tracker) Members() []int { return t.scan() }

// Signal sends each of sigs, in order, to every process followed; it
// returns how many there were.
func (t *Tracker) Signal(sigs ...syscall.Signal) int {
	live := t.scan()
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
		live := t.scan()
		if len(live) == 0 {
			return nil
		}
		if err := waitExit(ctx, live); err != nil {
			return err
		}
	}
}

// KillLoop ends the session by force: it stops every process it finds (a
// stopped process cannot fork), kills them, and goes on until two scans in
// a row find none, or ctx ends, when it returns ctx's error.
func (t *Tracker) KillLoop(ctx context.Context) error {
	for empty := 0; empty < 2; {
		live := t.scan()
		if len(live) == 0 {
			empty++
			continue
		}
		empty = 0
		for _, sig := range []syscall.Signal{syscall.SIGSTOP, syscall.SIGKILL} {
			for _, pid := range live {
				t.seen[pid].signal(sig)
			}
		}
		if err := waitExit(ctx, live); err != nil {
			return err
		}
	}
	return nil
}

// Close lets go of the processes followed.
func (t *Tracker) Close() {
	for pid, h := range t.seen {
		h.close()
		delete(t.seen, pid)
	}
}
