package proc

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Members returns the pids of the live (not zombie) processes whose
// session id is sid, and of their descendants wherever those went (setsid),
// read from /proc.
func Members(sid int) []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	var out []int
	children := map[int][]int{}
	buf := make([]byte, 512)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		st, ok := statOf(pid, buf)
		if !ok {
			continue
		}
		if st.sid == sid {
			out = append(out, pid)
		} else {
			children[st.ppid] = append(children[st.ppid], pid)
		}
	}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
		delete(children, out[i])
	}
	return out
}

type stat struct{ ppid, sid int }

// statOf parses the parent and session fields of /proc/PID/stat, skipping
// zombies: they have exited and only wait for their parent to reap them.
func statOf(pid int, buf []byte) (stat, bool) {
	// Plain system calls: an os.File would also try to register each file
	// with the runtime's poller, a failing system call per process.
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return stat{}, false
	}
	n, err := unix.Read(fd, buf)
	unix.Close(fd)
	if err != nil {
		return stat{}, false
	}
	b := buf[:n]
	// "pid (comm) state ppid pgrp session ..."; comm may hold spaces and
	// parentheses, so parse from the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, false
	}
	fields := bytes.Fields(b[i+1:])
	if len(fields) < 4 {
		return stat{}, false
	}
	if st := fields[0]; len(st) == 1 && (st[0] == 'Z' || st[0] == 'X') {
		return stat{}, false
	}
	ppid, err1 := strconv.Atoi(string(fields[1]))
	sid, err2 := strconv.Atoi(string(fields[3]))
	return stat{ppid, sid}, err1 == nil && err2 == nil
}

// waitExit returns when any of pids exits or ctx ends, woken by pidfds
// rather than by polling; kernels without pidfd_open fall back to a short
// backoff.
func waitExit(ctx context.Context, pids []int) error {
	fds := make([]unix.PollFd, 0, len(pids))
	defer func() {
		for _, p := range fds {
			unix.Close(int(p.Fd))
		}
	}()
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			if err == unix.ESRCH {
				return nil // already gone
			}
			return backoff(ctx)
		}
		fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
	}
	// poll cannot watch ctx, so wake at least every 50ms to check it.
	for {
		ms := 50
		if dl, ok := ctx.Deadline(); ok {
			left := time.Until(dl)
			if left <= 0 {
				return context.DeadlineExceeded // poll with a negative timeout would never return
			}
			if left < 50*time.Millisecond {
				ms = int(left/time.Millisecond) + 1
			}
		}
		n, err := unix.Poll(fds, ms)
		if err != nil && err != unix.EINTR {
			return backoff(ctx)
		}
		if n > 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

func backoff(ctx context.Context) error {
	t := time.NewTimer(5 * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// handle is a pidfd: it names one process, never a later one with its pid.
type handle int

func openHandle(pid int) (handle, bool) {
	fd, err := unix.PidfdOpen(pid, 0)
	return handle(fd), err == nil
}

func (h handle) signal(sig syscall.Signal) { _ = unix.PidfdSendSignal(int(h), sig, nil, 0) }

// alive reports a process that has not exited; a zombie has.
func (h handle) alive() bool {
	n, _ := unix.Poll([]unix.PollFd{{Fd: int32(h), Events: unix.POLLIN}}, 0)
	return n == 0
}

func (h handle) close() { unix.Close(int(h)) }

// Ignores reports whether process pid ignores sig (SIG_IGN), from the
// SigIgn mask in /proc/PID/status; false when that cannot be read.
func Ignores(pid int, sig syscall.Signal) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	i := bytes.Index(b, []byte("\nSigIgn:\t"))
	if i < 0 {
		return false
	}
	line := b[i+len("\nSigIgn:\t"):]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	mask, err := strconv.ParseUint(string(line), 16, 64)
	return err == nil && mask&(1<<(uint(sig)-1)) != 0
}
