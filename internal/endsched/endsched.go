// Package endsched is the schedule on which a session's processes are
// ended, the same for the local terminal and for a remote one (whose
// script, remote/end.sh, gets these figures from Go): SIGTERM and
// SIGCONT, SIGHUP to what is left HupDelay later, SIGKILL once the grace
// has passed, then up to KillBound for the kernel.
package endsched

import (
	"context"
	"time"
)

// HupDelay is how long after SIGTERM what is still running gets SIGHUP:
// a program handling TERM has this long before HUP, which ends what
// ignores TERM (an interactive bash).
const HupDelay = 200 * time.Millisecond

// KillBound is how long the kernel is given to carry out SIGKILL before
// the processes still there are named as survivors.
const KillBound = 5 * time.Second

// HupAt is when SIGHUP follows a SIGTERM sent at start: hup later
// (HupDelay but in a test), and never after deadline, when SIGKILL is due.
func HupAt(start time.Time, hup time.Duration, deadline time.Time) time.Time {
	if at := start.Add(hup); at.Before(deadline) {
		return at
	}
	return deadline
}

// Target is what Polite ends.
type Target interface {
	// Hup sends SIGHUP (and SIGCONT) to what is left.
	Hup()
	// IgnoreTerm reports that everything left ignores SIGTERM (an
	// interactive bash at its prompt): SIGHUP then follows at once.
	IgnoreTerm() bool
	// WaitEmpty waits until nothing is left, or ctx ends (its error).
	WaitEmpty(ctx context.Context) error
}

// Polite is the schedule after SIGTERM was sent to t, once for every
// terminal: SIGHUP to what is left hup later (HupDelay but in a test;
// at once when all of it ignores SIGTERM, never after deadline), then
// a wait for t to empty until deadline or ctx's end, when it returns an
// error. What is left then gets SIGKILL either way, from the caller.
func Polite(ctx context.Context, t Target, hup time.Duration, deadline time.Time) error {
	err := context.DeadlineExceeded
	if !t.IgnoreTerm() {
		hctx, cancel := context.WithDeadline(ctx, HupAt(time.Now(), hup, deadline))
		err = t.WaitEmpty(hctx)
		cancel()
	}
	if err == nil || ctx.Err() != nil {
		return err
	}
	t.Hup()
	gctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	return t.WaitEmpty(gctx)
}
