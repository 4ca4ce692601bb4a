package proc

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Members returns the pids of the live (not zombie) processes whose
// session id is sid, read from /proc.
func Members(sid int) []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	var out []int
	buf := make([]byte, 512)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if s, ok := sessionOf(pid, buf); ok && s == sid {
			out = append(out, pid)
		}
	}
	return out
}

// sessionOf parses the session field of /proc/PID/stat, skipping zombies:
// they have exited and only wait for their parent to reap them.
func sessionOf(pid int, buf []byte) (int, bool) {
	// Plain system calls: an os.File would also try to register each file
	// with the runtime's poller, a failing system call per process.
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, false
	}
	n, err := unix.Read(fd, buf)
	unix.Close(fd)
	if err != nil {
		return 0, false
	}
	stat := buf[:n]
	// "pid (comm) state ppid pgrp session ..."; comm may hold spaces and
	// parentheses, so parse from the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	fields := bytes.Fields(stat[i+1:])
	if len(fields) < 4 {
		return 0, false
	}
	if st := fields[0]; len(st) == 1 && (st[0] == 'Z' || st[0] == 'X') {
		return 0, false
	}
	s, err := strconv.Atoi(string(fields[3]))
	return s, err == nil
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
