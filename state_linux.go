package agentpty

import (
	"bufio"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentpty/agentpty/internal/proc"
	"github.com/agentpty/agentpty/internal/termwait"
	"golang.org/x/sys/unix"
)

// groupAndTTY returns the terminal's foreground process group, the
// slave's device number, and whether typed input waits unread on it.
func groupAndTTY(master *os.File) (pgrp int, tty uint64, unread bool) {
	pgrp, peer := groupAndPeer(master)
	if peer >= 0 {
		tty = devOf(peer)
		unread = pollIn(peer) // flushes what the master wrote into the line discipline first
		unix.Close(peer)
	}
	return pgrp, tty, unread
}

// foreground reads what the kernel says about the terminal's foreground
// process group: TIOCGPGRP on the master names the group; each member's
// /proc/PID/stat gives its state, /proc/PID/syscall the system call it is
// blocked in and on which descriptors, and /proc/PID/fd which of those is
// this terminal. The slave, opened through the master (TIOCGPTPEER), is
// polled for input typed but not yet read.
func foreground(master *os.File) fgReport { return foregroundVia(master, nil) }

// foregroundVia is foreground reading the leader's /proc files and the
// slave through pf, which keeps them open (nil: opened for each read).
func foregroundVia(master *os.File, pf *procFiles) fgReport {
	if pf != nil {
		pf.mu.Lock()
		defer pf.mu.Unlock()
	}
	var rep fgReport
	pgrp, tty, unread := pf.groupAndTTY(master)
	rep.unread = unread
	if pgrp <= 0 || tty == 0 {
		return rep
	}
	pf.follow(pgrp)
	// The leader decides alone when it runs or waits on the terminal
	// itself (a shell, a REPL, an editor: the usual case); only otherwise
	// (git waiting for its pager, make for its recipe, a pipeline) are the
	// group's other members looked for, which takes a walk through /proc.
	g := fgScan{master: master, tty: tty, pf: pf}
	leader, ok := pf.readStat(pgrp)
	if ok && !leader.Gone() { // a pipeline's first command may have exited before the rest
		g.look(pgrp, leader)
		if g.running && g.readerPid == 0 {
			rep.name, rep.pid = programName(pgrp, leader), pgrp // a running leader is the program at work
			return rep
		}
	}
	if g.readerPid == 0 {
		for _, m := range groupMembers(pgrp) {
			g.look(m.pid, m.st)
		}
	}
	switch {
	case g.readerPid != 0:
		rep.name, rep.pid, rep.waiting, rep.quiet = programName(g.readerPid, g.reader), g.readerPid, !g.running, g.quiet
		rep.guessed = g.guessed
	case g.newestPid != 0:
		rep.name, rep.pid = programName(g.newestPid, g.newest), g.newestPid
	}
	return rep
}

// fgScan looks through the members of a foreground group for the one
// waiting on the terminal, and the newest.
type fgScan struct {
	master *os.File
	tty    uint64
	pf     *procFiles

	running   bool // a member runs or waits on the disk
	reader    proc.Stat
	readerPid int           // the first member waiting on the terminal
	quiet     time.Duration // ... and how long a pause counts as waiting for it
	guessed   bool          // ... which is a guess: it waits on more than the terminal
	newest    proc.Stat
	newestPid int
}

func (g *fgScan) look(pid int, st proc.Stat) {
	if g.newestPid == 0 || st.Start > g.newest.Start || st.Start == g.newest.Start && pid > g.newestPid {
		g.newest, g.newestPid = st, pid
	}
	switch st.State {
	case 'R', 'D':
		g.running = true
		return
	case 'S':
	default:
		return // stopped, traced, zombie: not waiting on the terminal
	}
	w, known := onTerminalVia(pid, g.tty, g.pf)
	if !known { // the kernel hides its system call: a password prompt still counts
		w = terminalWait{on: echoOff(g.master)}
	}
	if known && !w.on && st.Threads > 1 { // the main thread waits on something else: another may read
		var running bool
		if w, running = g.threadsOn(pid, st.Threads); running {
			g.running = true
			return
		}
	}
	if !w.on && handsOverTerminal(st.Comm) {
		w = terminalWait{on: true, quiet: relayQuiet, guessed: true}
	}
	if w.on && g.readerPid == 0 {
		g.reader, g.readerPid, g.quiet, g.guessed = st, pid, w.quiet, w.guessed
	}
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

// handsOverTerminal reports a program whose server reads its terminal: a
// tmux client passes the terminal to the tmux server and itself waits on
// the server's socket only, so it never reads the terminal it shows.
func handsOverTerminal(comm string) bool { return comm == "tmux: client" }

// member is a process of a group, as /proc/PID/stat shows it.
type member struct {
	pid int
	st  proc.Stat
}

// groupMembers lists the live processes of process group pgrp other
// than its leader.
func groupMembers(pgrp int) []member {
	var out []member
	buf := make([]byte, 512)
	for _, pid := range proc.Pids() {
		if st, ok := proc.ReadStat(pid, buf); ok && !st.Gone() && st.Pgrp == pgrp && pid != pgrp {
			out = append(out, member{pid, st})
		}
	}
	return out
}

// programName names process pid for a person: its command name, or, when
// it was started by another name for a program (Debian's pager for less,
// editor for nano), the program's own. The answer is kept per process, so
// a program asked about again costs nothing more.
func programName(pid int, st proc.Stat) string {
	key := nameKey{pid, st.Start, st.Comm}
	names.Lock()
	defer names.Unlock()
	if n, ok := names.m[key]; ok {
		return n
	}
	n := st.Comm
	dir := "/proc/" + strconv.Itoa(pid)
	if exe, err := os.Readlink(dir + "/exe"); err == nil {
		// A script's command name is its own and its executable the
		// interpreter's, named by argv[0]; an alias is argv[0] itself.
		base := filepath.Base(exe)
		argv, _ := os.ReadFile(dir + "/cmdline")
		arg0, _, _ := strings.Cut(string(argv), "\x00")
		if !strings.HasPrefix(base, st.Comm) && filepath.Base(arg0) == st.Comm {
			n = base
		}
	}
	if len(names.m) >= 256 {
		clear(names.m) // pids of programs long gone
	}
	names.m[key] = n
	return n
}

// nameKey is a program: its process, by pid and when it started (pids are
// reused), and its command name (exec keeps both).
type nameKey struct {
	pid   int
	start uint64
	comm  string
}

// names holds what programName found.
var names = struct {
	sync.Mutex
	m map[nameKey]string
}{m: map[nameKey]string{}}

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

// terminalWait is how a process waits on the terminal, if it does.
type terminalWait struct {
	on    bool          // blocked reading the terminal, or in select/poll/epoll for it to be readable
	quiet time.Duration // how long output and input must have paused before that counts (see waitQuiet)
	// guessed: it waits on something besides the terminal (a socket, a
	// pty of its own, a server), so the kernel cannot tell whether it
	// waits for input or for the far side: only the quiet says so.
	guessed bool
}

// selectWatches calls set for each descriptor in the read set at addr of
// a select over nfds descriptors, until enough says no more is needed.
func selectWatches(dir string, nfds, addr uint64, set func(uint64), enough func() bool) {
	bits := make([]byte, (nfds+7)/8)
	if !readMem(dir, addr, bits) {
		set(0) // the set cannot be read: stdin is the usual one
	}
	for fd := uint64(0); fd < nfds && !enough(); fd++ {
		if bits[fd/8]&(1<<(fd%8)) != 0 {
			set(fd)
		}
	}
}

// pollWatches calls set for each descriptor polled for input in the n
// pollfds at addr, until enough says no more is needed.
func pollWatches(dir string, addr, n uint64, set func(uint64), enough func() bool) {
	fds := make([]byte, 8*n)
	if !readMem(dir, addr, fds) {
		set(0) // the array cannot be read: stdin is the usual one
		return
	}
	for i := uint64(0); i < n && !enough(); i++ {
		e := fds[8*i:]
		fd := int32(binary.LittleEndian.Uint32(e))
		if binary.LittleEndian.Uint16(e[4:])&unix.POLLIN != 0 && fd >= 0 {
			set(uint64(fd))
		}
	}
}

// onTerminal tells whether process pid is blocked reading the terminal
// whose device is tty, or in select/poll/epoll waiting for it to be
// readable, and how (see waitQuiet). known is false when the kernel does
// not show the process's system call to us.
func onTerminal(pid int, tty uint64) (w terminalWait, known bool) {
	return onTerminalVia(pid, tty, nil)
}

// onTerminalVia is onTerminal reading pid's /proc files through pf, which
// keeps them open when it follows pid.
func onTerminalVia(pid int, tty uint64, pf *procFiles) (w terminalWait, known bool) {
	b, ok := pf.readSyscall(pid)
	if !ok {
		return w, false
	}
	return inCallOnTerminal(pid, b, tty, pf), true
}

// inCallOnTerminal is onTerminal for a thread of process pid whose
// /proc/.../syscall line is b.
func inCallOnTerminal(pid int, b []byte, tty uint64, pf *procFiles) (w terminalWait) {
	nr, args, ok := parseSyscall(b)
	if !ok {
		return w
	}
	arg := func(i int) uint64 { return args[i] }
	isTTY := func(fd uint64) bool {
		var st unix.Stat_t
		return fd < 1<<20 && pf.statFD(pid, fd, &st) &&
			st.Mode&unix.S_IFMT == unix.S_IFCHR && (st.Rdev == tty || st.Rdev == devTTY)
	}
	kind := waitCalls[nr]
	switch kind {
	case waitRead:
		return terminalWait{on: isTTY(arg(0))}
	case 0:
		return w
	}
	dir := "/proc/" + strconv.Itoa(pid)
	on, others := watched(dir, kind, arg, isTTY)
	if !on {
		return w
	}
	d, finite := waitTimeout(dir, nr, arg)
	if finite && d < shortestWait {
		return w // a pause in the program's work
	}
	return terminalWait{on: true, quiet: waitQuiet(others, d, finite), guessed: others}
}

// parseSyscall reads /proc/PID/syscall: "nr arg0 ... arg5 sp pc" in a
// system call; "running", or "-1 sp pc" outside one (not ok).
func parseSyscall(b []byte) (nr uint64, args [6]uint64, ok bool) {
	var f [9][]byte
	if proc.Fields(b, f[:]) < 3 {
		return 0, args, false
	}
	nr, err := strconv.ParseUint(string(f[0]), 10, 64)
	if err != nil {
		return 0, args, false
	}
	for i := range args {
		args[i], _ = strconv.ParseUint(strings.TrimPrefix(string(f[1+i]), "0x"), 16, 64)
	}
	return nr, args, true
}

// watched reports whether a select, poll or epoll_wait (kind) waits to
// read the terminal, and whether it waits on something else too.
func watched(dir string, kind int, arg func(int) uint64, isTTY func(uint64) bool) (on, others bool) {
	set := func(fd uint64) {
		if isTTY(fd) {
			on = true
		} else {
			others = true
		}
	}
	enough := func() bool { return on && others }
	switch kind {
	case waitSelect:
		if arg(1) != 0 {
			selectWatches(dir, min(arg(0), 1024), arg(1), set, enough)
		}
	case waitPoll:
		pollWatches(dir, arg(0), min(arg(1), 1024), set, enough)
	case waitEpoll:
		epollWatches(dir, arg(0), set)
	}
	return on, others
}

// How waits on the terminal count: termwait's, shared with the backends
// that read another machine's kernel.
const (
	shortestWait = termwait.Shortest
	relayQuiet   = termwait.Relay
)

var waitQuiet = termwait.Quiet

// waitTimeout returns the timeout a select, poll or epoll wait (system
// call nr, arguments arg) asked for, read from the call's arguments or,
// for a pointer, the process's memory; finite is false for none.
func waitTimeout(dir string, nr uint64, arg func(int) uint64) (d time.Duration, finite bool) {
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
	return d, finite
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

// epollWatches calls set with each descriptor epoll descriptor epfd of a
// process waits to be readable, from its fdinfo ("tfd:        0 events:
// 19 ...").
func epollWatches(dir string, epfd uint64, set func(fd uint64)) {
	f, err := os.Open(dir + "/fdinfo/" + strconv.FormatUint(epfd, 10))
	if err != nil {
		return
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
		if err1 == nil && err2 == nil && ev&unix.EPOLLIN != 0 {
			set(fd)
		}
	}
}
