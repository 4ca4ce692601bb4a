// Package endsched is the schedule on which a session's processes are
// ended, the same for the local terminal and for a remote one (whose
// script, remote/end.sh, gets these figures from Go): SIGTERM and
// SIGCONT, SIGHUP to what is left HupDelay later, SIGKILL once the grace
// has passed, then up to KillBound for the kernel.
package endsched

import "time"

// HupDelay is how long after SIGTERM what is still running gets SIGHUP:
// a program handling TERM has this long before HUP, which ends what
// ignores TERM (an interactive bash).
const HupDelay = 200 * time.Millisecond

// KillBound is how long the kernel is given to carry out SIGKILL before
// the processes still there are named as survivors.
const KillBound = 5 * time.Second

// HupAt is when SIGHUP follows a SIGTERM sent at start: HupDelay later,
// and never after deadline, when SIGKILL is due.
func HupAt(start, deadline time.Time) time.Time {
	if hup := start.Add(HupDelay); hup.Before(deadline) {
		return hup
	}
	return deadline
}
