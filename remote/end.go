package remote

import (
	"context"
	"strings"
	"time"

	"github.com/agentpty/agentpty/internal/endsched"
)

// StatusWait bounds how long an End, once the processes are gone, waits
// for the command's status to come over the transport: the session
// closes the transport next, and a status not yet read would be lost.
const StatusWait = KillBound

// EndAnswer reads end.sh's answer, each line without the request's
// number: gone when nothing is left, else the pids that survived SIGKILL
// ("123 456"); neither when the answer holds no verdict (cut short).
func EndAnswer(lines []string) (gone bool, left string) {
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if rest, ok := strings.CutPrefix(l, "left"); ok {
			return false, strings.TrimSpace(rest)
		}
		if l == "gone" {
			return true, ""
		}
	}
	return false, ""
}

// AwaitStatus waits until exited is closed (the transport has the
// command's status), for StatusWait at most.
func AwaitStatus(exited <-chan struct{}) {
	tm := time.NewTimer(StatusWait)
	defer tm.Stop()
	select {
	case <-exited:
	case <-tm.C:
	}
}

// Target is what Polite ends: a Go-side end, for a transport that sends
// signals itself (SSH's "signal" requests) where no end.sh runs.
type Target = endsched.Target

// Polite is the local library's schedule after SIGTERM (see
// endsched.Polite): SIGHUP hup later (HupDelay but in a test), then a
// wait for t to empty until deadline; an error when it did not, and
// SIGKILL is then the caller's.
func Polite(ctx context.Context, t Target, hup time.Duration, deadline time.Time) error {
	return endsched.Polite(ctx, t, hup, deadline)
}
