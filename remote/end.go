package remote

import (
	"strings"
	"time"
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
