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
	var out []int
	each(sid, func(pid int) { out = append(out, pid) })
	return out
}

// each calls found for every live process of session sid as soon as its
// stat is read, newest pid first: a process that forks and exits at once
// is likeliest to be caught alive where it was listed last. Then it calls
// found for their descendants outside the session.
func each(sid int, found func(pid int)) {
	var members []int
	children := map[int][]int{}
	buf := make([]byte, 512)
	pids := Pids()
	for i := len(pids) - 1; i >= 0; i-- {
		pid := pids[i]
		st, ok := ReadStat(pid, buf)
		if !ok || st.Gone() {
			continue
		}
		if st.SID == sid {
			found(pid)
			members = append(members, pid)
		} else {
			children[st.PPID] = append(children[st.PPID], pid)
		}
	}
	for i := 0; i < len(members); i++ {
		for _, c := range children[members[i]] {
			found(c)
			members = append(members, c)
		}
		delete(children, members[i])
	}
}

// newest calls found for each live process of session sid among the few
// pids handed out last: a process that forks and exits at once lives
// mostly there, and this look takes microseconds where a walk through
// /proc takes milliseconds.
func newest(sid int, found func(pid int)) {
	b, err := os.ReadFile("/proc/sys/kernel/ns_last_pid")
	if err != nil {
		return
	}
	last, err := strconv.Atoi(string(bytes.TrimSpace(b)))
	if err != nil {
		return
	}
	buf := make([]byte, 512)
	for pid := last; pid > 0 && pid > last-16; pid-- {
		if st, ok := ReadStat(pid, buf); ok && !st.Gone() && st.SID == sid {
			found(pid)
		}
	}
}

// Pids lists the processes in /proc.
func Pids() []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	out := make([]int, 0, len(names))
	for _, name := range names {
		if pid, err := strconv.Atoi(name); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// Stat is what /proc/PID/stat says of a process.
type Stat struct {
	Comm            string // the command name
	State           byte   // R, S, D, T, Z, ...
	PPID, Pgrp, SID int
	Threads         int    // how many threads it has; 0 when not told
	TTY             uint64 // its controlling terminal's device (as Stat_t.Rdev), 0 for none
	Start           uint64 // when it started, in clock ticks since boot
}

// Gone reports a zombie or a dead process: it has exited and only waits
// for its parent to reap it.
func (st Stat) Gone() bool { return st.State == 'Z' || st.State == 'X' }

// ReadStat reads /proc/PID/stat, with buf (512 bytes is plenty) as scratch.
func ReadStat(pid int, buf []byte) (Stat, bool) {
	// Plain system calls: an os.File would also try to register each file
	// with the runtime's poller, a failing system call per process.
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return Stat{}, false
	}
	n, err := unix.Read(fd, buf)
	unix.Close(fd)
	if err != nil || n <= 0 {
		return Stat{}, false
	}
	return ParseStat(buf[:n], "")
}

// ParseStat reads the text of a /proc/PID/stat file. comm, when it is the
// command name found, is returned rather than a new string: a caller that
// reads one process again and again allocates nothing.
func ParseStat(b []byte, comm string) (Stat, bool) {
	// "pid (comm) state ppid pgrp session ..."; comm may hold spaces and
	// parentheses, so it ends at the last ')'.
	i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if i < 0 || j < i {
		return Stat{}, false
	}
	if string(b[i+1:j]) != comm {
		comm = string(b[i+1 : j])
	}
	// The fields after comm: 0 state, 1 ppid, 2 pgrp, 3 session, ... 17
	// threads, ... 19 start time (field 22 of the line).
	var f [20][]byte
	k := Fields(b[j+1:], f[:])
	if k < 4 || len(f[0]) != 1 {
		return Stat{}, false
	}
	ppid, ok1 := atoi(f[1])
	pgrp, ok2 := atoi(f[2])
	sid, ok3 := atoi(f[3])
	if !ok1 || !ok2 || !ok3 {
		return Stat{}, false
	}
	var start, tty uint64
	if v, ok := atoi(f[19]); k > 19 && ok && v >= 0 {
		start = uint64(v)
	}
	var threads int
	if v, ok := atoi(f[17]); k > 17 && ok {
		threads = v
	}
	if v, ok := atoi(f[4]); k > 4 && ok && v > 0 {
		tty = uint64(v) // the kernel's encoding and Mkdev's agree below major 4096
	}
	return Stat{Comm: comm, State: f[0][0], PPID: ppid, Pgrp: pgrp, SID: sid, Threads: threads, TTY: tty, Start: start}, true
}

// Fields splits b at spaces and newlines into f, as many fields as f
// holds, without allocating, and returns how many it found.
func Fields(b []byte, f [][]byte) int {
	k, i := 0, 0
	for ; k < len(f); k++ {
		for i < len(b) && (b[i] == ' ' || b[i] == '\n') {
			i++
		}
		if i == len(b) {
			break
		}
		j := i
		for j < len(b) && b[j] != ' ' && b[j] != '\n' {
			j++
		}
		f[k], i = b[i:j], j
	}
	return k
}

// atoi reads a decimal number, with a sign, without making a string.
func atoi(b []byte) (int, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = 10*n + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
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

// Alive reports whether pid is a live process: not a zombie.
func Alive(pid int) bool {
	st, ok := ReadStat(pid, make([]byte, 512))
	return ok && !st.Gone()
}
