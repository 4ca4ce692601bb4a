package agentpty

import (
	"bufio"
	"encoding/binary"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/agentpty/agentpty/internal/proc"
	"golang.org/x/sys/unix"
)

// foreground reads what the kernel says about the terminal's foreground
// process group: TIOCGPGRP on the master names the group; each member's
// /proc/PID/stat gives its state, /proc/PID/syscall the system call it is
// blocked in and on which descriptors, and /proc/PID/fd which of those is
// this terminal. The slave, opened through the master (TIOCGPTPEER), is
// polled for input typed but not yet read.
func foreground(master *os.File) fgReport {
	pgrp, peer := groupAndPeer(master)
	var rep fgReport
	var tty uint64
	if peer >= 0 {
		var st unix.Stat_t
		if unix.Fstat(peer, &st) == nil {
			tty = st.Rdev
		}
		rep.unread = pollIn(peer) // flushes what the master wrote into the line discipline first
		unix.Close(peer)
	}
	if pgrp <= 0 || tty == 0 {
		return rep
	}
	// The leader decides alone when it runs or waits on the terminal
	// itself (a shell, a REPL, an editor: the usual case); only otherwise
	// (git waiting for its editor, make for its recipe) are the group's
	// other members looked for, which takes a walk through /proc.
	running := false
	look := func(pid int) (decided bool) {
		st, ok := proc.ReadStat(pid, make([]byte, 512))
		if !ok {
			return false
		}
		if rep.name == "" {
			rep.name, rep.pid = st.Comm, pid // the leader, looked at first, unless one waits
		}
		switch st.State {
		case 'R', 'D':
			running = true
			return true
		case 'S':
		default:
			return false // stopped, traced, zombie: not waiting on the terminal
		}
		on, known := onTerminal(pid, tty)
		if !known { // the kernel hides its system call: a password prompt still counts
			on = echoOff(master)
		}
		if on && !rep.waiting {
			rep.name, rep.pid, rep.waiting = st.Comm, pid, true
		}
		return on
	}
	if !look(pgrp) {
		for _, pid := range groupMembers(pgrp) {
			if look(pid) && running {
				break
			}
		}
	}
	rep.waiting = rep.waiting && !running
	return rep
}

// groupAndPeer returns the terminal's foreground process group
// (TIOCGPGRP) and a descriptor of its slave opened through the master
// (TIOCGPTPEER), -1 when the kernel gives none; the caller closes it.
func groupAndPeer(master *os.File) (pgrp, peer int) {
	peer = -1
	_ = control(master, func(fd int) {
		pgrp, _ = unix.IoctlGetInt(fd, unix.TIOCGPGRP)
		p, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TIOCGPTPEER,
			uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC))
		if errno == 0 {
			peer = int(p)
		}
	})
	return pgrp, peer
}

// groupMembers lists the live processes of process group pgrp other
// than its leader.
func groupMembers(pgrp int) []int {
	var out []int
	buf := make([]byte, 512)
	for _, pid := range proc.Pids() {
		if st, ok := proc.ReadStat(pid, buf); ok && !st.Gone() && st.Pgrp == pgrp && pid != pgrp {
			out = append(out, pid)
		}
	}
	return out
}

// Waits that take a descriptor set: (number, how its descriptors are given).
const (
	waitRead   = iota + 1 // read(fd, ...)
	waitSelect            // select(nfds, readfds, ...)
	waitPoll              // poll(fds, nfds, ...)
	waitEpoll             // epoll_wait(epfd, ...)
)

var waitCalls = map[uint64]int{
	unix.SYS_READ: waitRead, unix.SYS_READV: waitRead, unix.SYS_PREAD64: waitRead,
	unix.SYS_PSELECT6: waitSelect, unix.SYS_PPOLL: waitPoll,
	unix.SYS_EPOLL_PWAIT: waitEpoll, unix.SYS_EPOLL_PWAIT2: waitEpoll,
}

func init() {
	if runtime.GOARCH == "amd64" { // the older calls arm64 never had
		waitCalls[23], waitCalls[7], waitCalls[232] = waitSelect, waitPoll, waitEpoll // select, poll, epoll_wait
	}
}

// onTerminal reports whether process pid is blocked reading the terminal
// whose device is tty, or in select/poll/epoll waiting for it to be
// readable. known is false when the kernel does not show the process's
// system call to us.
func onTerminal(pid int, tty uint64) (on, known bool) {
	dir := "/proc/" + strconv.Itoa(pid)
	b, err := os.ReadFile(dir + "/syscall")
	if err != nil {
		return false, false
	}
	f := strings.Fields(string(b))
	if len(f) < 3 { // "running", or "-1 sp pc": not in a system call
		return false, true
	}
	nr, err1 := strconv.ParseUint(f[0], 10, 64)
	arg := func(i int) uint64 {
		v, _ := strconv.ParseUint(strings.TrimPrefix(f[1+i], "0x"), 16, 64)
		return v
	}
	if err1 != nil {
		return false, true
	}
	isTTY := func(fd uint64) bool {
		var st unix.Stat_t
		return fd < 1<<20 && unix.Stat(dir+"/fd/"+strconv.FormatUint(fd, 10), &st) == nil &&
			st.Mode&unix.S_IFMT == unix.S_IFCHR && (st.Rdev == tty || st.Rdev == devTTY)
	}
	kind := waitCalls[nr]
	if kind != waitRead && pause(dir, nr, arg) {
		return false, true
	}
	switch kind {
	case waitRead:
		return isTTY(arg(0)), true
	case waitSelect:
		nfds, set := min(arg(0), 1024), arg(1)
		if set == 0 {
			return false, true
		}
		bits := make([]byte, (nfds+7)/8)
		if !readMem(dir, set, bits) {
			return isTTY(0), true // the set cannot be read: stdin is the usual one
		}
		for fd := uint64(0); fd < nfds; fd++ {
			if bits[fd/8]&(1<<(fd%8)) != 0 && isTTY(fd) {
				return true, true
			}
		}
		return false, true
	case waitPoll:
		n := min(arg(1), 1024)
		fds := make([]byte, 8*n)
		if !readMem(dir, arg(0), fds) {
			return isTTY(0), true
		}
		for i := uint64(0); i < n; i++ {
			e := fds[8*i:]
			fd := int32(binary.LittleEndian.Uint32(e))
			if binary.LittleEndian.Uint16(e[4:])&unix.POLLIN != 0 && fd >= 0 && isTTY(uint64(fd)) {
				return true, true
			}
		}
		return false, true
	case waitEpoll:
		return epollWatches(dir, arg(0), isTTY), true
	}
	return false, true
}

// shortestWait is the shortest timeout of a select or poll on the
// terminal that counts as waiting for input: vim, for one, pauses 25 ms
// that way between showing a mode and drawing the keys it already read.
const shortestWait = 100 * time.Millisecond

// pause reports whether a select, poll or epoll wait (system call nr,
// arguments arg) has a timeout shorter than shortestWait: a pause in the
// program's work, not a wait for input. The timeout is the one asked for,
// read from the call's arguments or, for a pointer, the process's memory.
func pause(dir string, nr uint64, arg func(int) uint64) bool {
	var d time.Duration
	spec := func(ptr uint64, unit time.Duration) bool { // struct timespec or timeval; NULL waits for ever
		b := make([]byte, 16)
		if ptr == 0 || !readMem(dir, ptr, b) {
			return false
		}
		d = time.Duration(binary.LittleEndian.Uint64(b))*time.Second + time.Duration(binary.LittleEndian.Uint64(b[8:]))*unit
		return true
	}
	ms := func(v uint64) bool { // an int of milliseconds; negative waits for ever
		t := int32(v)
		d = time.Duration(t) * time.Millisecond
		return t >= 0
	}
	var finite bool
	switch {
	case nr == unix.SYS_PSELECT6:
		finite = spec(arg(4), time.Nanosecond)
	case nr == unix.SYS_PPOLL:
		finite = spec(arg(2), time.Nanosecond)
	case nr == unix.SYS_EPOLL_PWAIT2:
		finite = spec(arg(3), time.Nanosecond)
	case nr == unix.SYS_EPOLL_PWAIT, runtime.GOARCH == "amd64" && nr == 232:
		finite = ms(arg(3))
	case runtime.GOARCH == "amd64" && nr == 23:
		finite = spec(arg(4), time.Microsecond)
	case runtime.GOARCH == "amd64" && nr == 7:
		finite = ms(arg(2))
	}
	return finite && d < shortestWait
}

// devTTY is /dev/tty, which getpass and sudo open: for a process of the
// terminal's foreground group it is this terminal.
var devTTY = unix.Mkdev(5, 0)

// readMem reads len(p) bytes of a process's memory at addr.
func readMem(dir string, addr uint64, p []byte) bool {
	if len(p) == 0 {
		return true
	}
	f, err := os.Open(dir + "/mem")
	if err != nil {
		return false
	}
	defer f.Close()
	n, _ := f.ReadAt(p, int64(addr))
	return n == len(p)
}

// epollWatches reports whether epoll descriptor epfd of a process waits
// for one of the descriptors isTTY accepts to be readable, from its
// fdinfo ("tfd:        0 events:       19 ...").
func epollWatches(dir string, epfd uint64, isTTY func(uint64) bool) bool {
	f, err := os.Open(dir + "/fdinfo/" + strconv.FormatUint(epfd, 10))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		w := strings.Fields(sc.Text())
		if len(w) < 4 || w[0] != "tfd:" || w[2] != "events:" {
			continue
		}
		fd, err1 := strconv.ParseUint(w[1], 10, 64)
		ev, err2 := strconv.ParseUint(w[3], 16, 32)
		if err1 == nil && err2 == nil && ev&unix.EPOLLIN != 0 && isTTY(fd) {
			return true
		}
	}
	return false
}
