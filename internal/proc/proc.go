//go:build linux || darwin

// Package proc finds and ends every process of a terminal session: the
// child leads its own session, and its background jobs live in other
// process groups of that session, so signalling one group is not enough.
package proc

import (
	"context"
	"syscall"
)

// Signal sends each of sigs, in order, to every process group of session
// sid and to every member on its own (a member may lead no group we can
// see). It returns how many members it found; a session found empty stays
// empty, since only a member can start another.
func Signal(sid int, sigs ...syscall.Signal) int {
	pids := Members(sid)
	groups := map[int]bool{}
	for _, p := range pids {
		if g, err := syscall.Getpgid(p); err == nil {
			groups[g] = true
		}
	}
	for _, sig := range sigs {
		for g := range groups {
			_ = syscall.Kill(-g, sig)
		}
		for _, p := range pids {
			_ = syscall.Kill(p, sig)
		}
	}
	return len(pids)
}

// WaitGone waits until session sid has no live member or ctx ends. It
// returns ctx's error if members remain.
func WaitGone(ctx context.Context, sid int) error {
	for {
		pids := Members(sid)
		if len(pids) == 0 {
			return nil
		}
		if err := waitExit(ctx, pids); err != nil {
			return err
		}
	}
}
