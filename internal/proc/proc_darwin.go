package proc

import (
	"context"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Members returns the pids of the processes whose session id is sid.
func Members(sid int) []int {
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil
	}
	var out []int
	for _, p := range procs {
		pid := int(p.Proc.P_pid)
		if pid <= 0 || p.Proc.P_stat == 5 { // SZOMB
			continue
		}
		if s, err := unix.Getsid(pid); err == nil && s == sid {
			out = append(out, pid)
		}
	}
	return out
}

// each calls found for every process of session sid.
func each(sid int, found func(pid int)) {
	for _, pid := range Members(sid) {
		found(pid)
	}
}

// newest finds nothing: macOS does not say which pid it handed out last.
func newest(int, func(int)) {}

// waitExit waits briefly for any of pids to exit; macOS has no pidfd, and
// a kqueue per kill is more than this rare path needs.
func waitExit(ctx context.Context, pids []int) error {
	t := time.NewTimer(10 * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// handle is a pid: macOS has no pidfd.
type handle int

func openHandle(pid int) (handle, bool) { return handle(pid), true }

func (h handle) signal(sig syscall.Signal) { _ = syscall.Kill(int(h), sig) }

func (h handle) alive() bool { return syscall.Kill(int(h), 0) == nil }

func (h handle) close() {}

// Ignores reports whether process pid ignores sig; macOS does not say, so
// it is always false.
func Ignores(int, syscall.Signal) bool { return false }

// Alive reports whether pid is a process; a zombie counts.
func Alive(pid int) bool { return syscall.Kill(pid, 0) == nil }
