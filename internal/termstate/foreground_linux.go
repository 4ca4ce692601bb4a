package termstate

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/agentpty/agentpty/internal/proc"
	"golang.org/x/sys/unix"
)

// Foreground reads what this machine's kernel says about the terminal
// whose master is master, and decides (Decide): TIOCGPGRP on the master
// names the foreground process group; each member's /proc/PID/stat gives
// its state, /proc/PID/syscall the system call it is blocked in and on
// which descriptors, and /proc/PID/fd which of those is this terminal.
// The slave, opened through the master (TIOCGPTPEER), is polled for input
// typed but not yet read. pf keeps the files open between reads (nil:
// opened for each read); echoOff reads the terminal's echo flag from the
// master, asked only where the kernel hides a call.
func Foreground(master *os.File, pf *Files, echoOff func(master *os.File) bool) Result {
	if pf != nil {
		pf.mu.Lock()
		defer pf.mu.Unlock()
	}
	pgrp, tty, unread := pf.groupAndTTY(master)
	if pgrp <= 0 || tty == 0 {
		return Result{Unread: unread}
	}
	pf.follow(pgrp)
	calls, known := Local()
	var k *local
	if pf != nil {
		k = &pf.kernel // no allocation for a read through kept files
	} else {
		k = new(local)
	}
	*k = local{pf: pf, tty: tty, master: master, echoOff: echoOff, known: known}
	var leader *Proc
	if st, ok := pf.readStat(pgrp); ok && !st.Gone() { // a pipeline's first command may have exited before the rest
		leader = &Proc{PID: pgrp, State: st.State, Comm: st.Comm, Start: st.Start, Threads: st.Threads}
	}
	r := Decide(calls, k, leader, func() []Proc { return groupProcs(pgrp) })
	r.Unread = unread
	if r.Program.PID != 0 {
		r.Name = programName(r.Program)
	}
	return r
}

// groupAndTTY returns the terminal's foreground process group, the
// slave's device number, and whether typed input waits unread on it.
func groupAndTTY(master *os.File) (pgrp int, tty uint64, unread bool) {
	pgrp, peer := GroupAndPeer(master)
	if peer >= 0 {
		tty = DevOf(peer)
		unread = PollIn(peer) // flushes what the master wrote into the line discipline first
		unix.Close(peer)
	}
	return pgrp, tty, unread
}

// GroupAndPeer returns the terminal's foreground process group
// (TIOCGPGRP) and a descriptor of its slave opened through the master
// (TIOCGPTPEER), -1 when the kernel gives none; the caller closes it.
func GroupAndPeer(master *os.File) (pgrp, peer int) {
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

// Member is a process of a group, as /proc/PID/stat shows it.
type Member struct {
	PID  int
	Stat proc.Stat
}

// GroupMembers lists the live processes of process group pgrp other
// than its leader.
func GroupMembers(pgrp int) []Member {
	var out []Member
	buf := make([]byte, 512)
	for _, pid := range proc.Pids() {
		if st, ok := proc.ReadStat(pid, buf); ok && !st.Gone() && st.Pgrp == pgrp && pid != pgrp {
			out = append(out, Member{pid, st})
		}
	}
	return out
}

// groupProcs is GroupMembers as the decision takes them.
func groupProcs(pgrp int) []Proc {
	var out []Proc
	for _, m := range GroupMembers(pgrp) {
		st := m.Stat
		out = append(out, Proc{PID: m.PID, State: st.State, Comm: st.Comm, Start: st.Start, Threads: st.Threads})
	}
	return out
}

// programName names process p for a person: its command name, or, when
// it was started by another name for a program (Debian's pager for less,
// editor for nano), the program's own. The answer is kept per process, so
// a program asked about again costs nothing more.
func programName(p Proc) string {
	key := nameKey{p.PID, p.Start, p.Comm}
	names.Lock()
	defer names.Unlock()
	if n, ok := names.m[key]; ok {
		return n
	}
	n := p.Comm
	dir := "/proc/" + strconv.Itoa(p.PID)
	if exe, err := os.Readlink(dir + "/exe"); err == nil {
		// A script's command name is its own and its executable the
		// interpreter's, named by argv[0]; an alias is argv[0] itself.
		base := filepath.Base(exe)
		argv, _ := os.ReadFile(dir + "/cmdline")
		arg0, _, _ := strings.Cut(string(argv), "\x00")
		if !strings.HasPrefix(base, p.Comm) && filepath.Base(arg0) == p.Comm {
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
