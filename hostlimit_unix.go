//go:build linux || darwin

package agentpty

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// hostLimitError is a start that ran into a limit of the host rather than
// of the Manager: the process's descriptors (RLIMIT_NOFILE), the system's
// open files, or the kernel's pseudo-terminals (/proc/sys/kernel/pty/max).
// It is ErrTooManySessions for errors.Is, and unwraps to the system
// call's error.
type hostLimitError struct {
	what string // the limit and its value, as the message names them
	err  error
}

func (e *hostLimitError) Error() string {
	return "too many sessions for the host: " + e.what + " (" + e.err.Error() + ")"
}

func (e *hostLimitError) Unwrap() error { return e.err }

func (e *hostLimitError) Is(target error) bool { return target == ErrTooManySessions }

// hostLimit names the host limit err ran into, or returns err as it is.
// ptmx says err came from opening /dev/ptmx, where ENOSPC is the kernel's
// pty limit.
func hostLimit(err error, ptmx bool) error {
	var what string
	var named *hostLimitError
	switch {
	case err == nil || errors.As(err, &named):
		return err
	case errors.Is(err, syscall.EMFILE):
		var lim unix.Rlimit
		_ = unix.Getrlimit(unix.RLIMIT_NOFILE, &lim)
		what = fmt.Sprintf("the process's file descriptor limit, RLIMIT_NOFILE %d (hard %d), is reached; "+
			"each session holds about %d: raise the limit (setrlimit, ulimit -n) or lower MaxSessions", lim.Cur, lim.Max, fdsPerSession)
	case errors.Is(err, syscall.ENFILE):
		what = "the system's open file limit (" + procValue("/proc/sys/fs/file-max") + ", fs.file-max) is reached"
	case ptmx && errors.Is(err, syscall.ENOSPC):
		what = "the kernel's pseudo-terminal limit is reached: kernel.pty.max " + procValue("/proc/sys/kernel/pty/max") +
			" (" + procValue("/proc/sys/kernel/pty/nr") + " in use on this machine; a devpts other than the host's may not use the last kernel.pty.reserve " +
			procValue("/proc/sys/kernel/pty/reserve") + ")" + devptsMax() +
			": raise it (sysctl kernel.pty.max) or lower MaxSessions"
	default:
		return err
	}
	return &hostLimitError{what: what, err: err}
}

// fdsPerSession is how many descriptors an idle local session holds: the
// terminal's master, and the slave and the foreground leader's /proc
// files that state reads keep open.
const fdsPerSession = 4

// procValue is the number a /proc file holds, or "unknown".
func procValue(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	v := strings.TrimSpace(string(b))
	if _, err := strconv.Atoi(v); err != nil {
		return "unknown"
	}
	return v
}

// devptsMax names the max= option of the devpts mount at /dev/pts, a
// lower bound a container may set on its own instance; "" for none.
func devptsMax() string {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(b), "\n") {
		// "id parent maj:min root mountpoint opts ... - fstype source superopts"
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || f[4] != "/dev/pts" || len(g) < 3 || g[0] != "devpts" {
			continue
		}
		for _, o := range strings.Split(g[2], ",") {
			if v, ok := strings.CutPrefix(o, "max="); ok {
				return ", and max=" + v + " on the devpts mounted at /dev/pts"
			}
		}
	}
	return ""
}
