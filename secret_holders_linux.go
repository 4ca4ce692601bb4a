package agentpty

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/agentpty/agentpty/internal/proc"
	"github.com/agentpty/agentpty/internal/termstate"
	"golang.org/x/sys/unix"
)

// ttyHolder is a process, other than the host, that holds the terminal open:
// it could read a secret typed into it whatever group is in front.
type ttyHolder struct {
	pid    int
	st     proc.Stat
	hidden bool // its descriptors cannot be looked at
}

// soleReader refuses a secret (Options.SecretPrograms) while a process
// that checkPrograms did not judge holds the terminal open: one outside
// the foreground group (setsid, another session that opened /dev/pts/N,
// a descriptor from TIOCGPTPEER) reads the line as well as the prompt's
// program does. Allowed besides the judged processes: a shell of this
// terminal waiting for its command, and a descendant of the program at
// the prompt that is not on the terminal. Where the walk of /proc cannot
// see every process, nothing is typed.
func soleReader(master *os.File, procs []fgProc) error {
	_, peer := termstate.GroupAndPeer(master)
	tty := termstate.DevOf(peer)
	if peer >= 0 {
		unix.Close(peer)
	}
	if tty == 0 {
		return errors.New("the terminal's device cannot be told, so the processes holding it cannot be")
	}
	holders, stats, err := terminalHolders(tty)
	if err != nil {
		return fmt.Errorf("the secret is not typed, as no process but the program at the prompt may hold the terminal, and %w", err)
	}
	judged := map[int]fgProc{}
	for _, p := range procs {
		judged[p.pid] = p
	}
	// The session's leader started before anything that inherited the
	// terminal from it.
	var since uint64
	if len(procs) > 0 {
		since = stats[stats[procs[0].pid].SID].Start
	}
	for _, h := range holders {
		if _, ok := judged[h.pid]; ok {
			continue
		}
		if why := h.threat(tty, since, judged, stats); why != "" {
			return fmt.Errorf("the secret is not typed while %s (pid %d) holds the terminal: %s", h.st.Comm, h.pid, why)
		}
	}
	return nil
}

// threat says why h may read a secret typed now, or returns "".
func (h ttyHolder) threat(tty, since uint64, judged map[int]fgProc, stats map[int]proc.Stat) string {
	if h.hidden && since > 0 && h.st.Start < since && h.st.TTY != tty {
		// Older than the terminal's session (ssh-agent, gpg-agent, which
		// are not dumpable): it did not inherit the terminal. One handed
		// a descriptor over a socket is not seen (see the README).
		return ""
	}
	if h.hidden {
		return "its descriptors cannot be looked at (it is not dumpable, or runs as another user), so it may read it"
	}
	reads, known := false, true
	waits := true
	for _, tid := range threads(h.pid) {
		w, ok := termstate.ThreadOnTerminal(tid, tty)
		reads, known = reads || w.On, known && ok
		waits = waits && inChildWait(tid)
	}
	switch {
	case reads:
		return "it reads the terminal and is not the program at the prompt"
	case !known:
		return "what it waits for cannot be seen"
	case waits && h.st.TTY == tty:
		return "" // a shell of this terminal, running the prompt's program or a job
	case descends(h.pid, judged, stats):
		return "" // the prompt's program's own, blocked elsewhere
	}
	return "it is not the program at the prompt, and it may read the terminal at any moment"
}

// descends reports that pid is a descendant of a judged process that
// reads the terminal (the program at the prompt).
func descends(pid int, judged map[int]fgProc, stats map[int]proc.Stat) bool {
	for range 64 {
		st, ok := stats[pid]
		if !ok || st.PPID <= 1 {
			return false
		}
		if p, ok := judged[st.PPID]; ok && p.reading {
			return true
		}
		pid = st.PPID
	}
	return false
}

// errHidden says the walk of /proc cannot see every process.
var errHidden = errors.New("/proc cannot show every process")

// terminalHolders walks /proc once and returns the processes other than
// this one that hold the terminal whose device is tty (its slave, however
// opened, or /dev/tty from a process whose controlling terminal it is or
// that has none), with the stat of every process seen. It fails where
// the walk cannot see every process that could hold it: /proc of another
// pid namespace, /proc mounted with hidepid, or a process of this user
// (or of this terminal) whose descriptors cannot be read, unless that is
// all it cannot see.
func terminalHolders(tty uint64) ([]ttyHolder, map[int]proc.Stat, error) {
	if err := procShowsAll(); err != nil {
		return nil, nil, err
	}
	self, uid := os.Getpid(), os.Getuid()
	stats := map[int]proc.Stat{}
	var out []ttyHolder
	buf := make([]byte, 512)
	for _, pid := range proc.Pids() {
		st, ok := proc.ReadStat(pid, buf)
		if !ok || st.Gone() {
			continue // gone since it was listed
		}
		stats[pid] = st
		if pid == self {
			continue
		}
		holds, err := holdsTerminal(pid, tty, st)
		switch {
		case err == nil && holds:
			out = append(out, ttyHolder{pid: pid, st: st})
		case err != nil && (st.TTY == tty || ownedBy(pid, uid)):
			// Another user's process that never had this terminal cannot
			// open it (its slave is the host's, mode 0620); one of this
			// user's or this terminal's that hides its descriptors can.
			out = append(out, ttyHolder{pid: pid, st: st, hidden: true})
		}
	}
	return out, stats, nil
}

// holdsTerminal reports that one of pid's threads holds the terminal open.
// A thread may have a descriptor table of its own (clone without
// CLONE_FILES): each that the kernel does not show sharing the leader's
// is looked at.
func holdsTerminal(pid int, tty uint64, st proc.Stat) (bool, error) {
	for _, tid := range threads(pid) {
		if tid != pid && sameFiles(pid, tid) {
			continue
		}
		dir := "/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/fd"
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err == unix.ENOENT || err == unix.ESRCH {
			continue // the thread is gone
		}
		if err != nil {
			return false, err
		}
		d := os.NewFile(uintptr(fd), dir)
		names, err := d.Readdirnames(-1)
		if err != nil {
			d.Close()
			return false, err
		}
		for _, name := range names {
			var fst unix.Stat_t
			if unix.Fstatat(fd, name, &fst, 0) != nil || fst.Mode&unix.S_IFMT != unix.S_IFCHR {
				continue
			}
			if fst.Rdev == tty || fst.Rdev == termstate.DevTTY && (st.TTY == tty || st.TTY == 0) {
				d.Close()
				return true, nil
			}
		}
		d.Close()
	}
	return false, nil
}

// sameFiles reports that the kernel shows threads pid and tid sharing
// one descriptor table (kcmp).
func sameFiles(pid, tid int) bool {
	const kcmpFiles = 2
	r, _, errno := unix.Syscall6(unix.SYS_KCMP, uintptr(pid), uintptr(tid), kcmpFiles, 0, 0, 0)
	return errno == 0 && r == 0
}

// ownedBy reports that uid is pid's real user, or that it cannot be told.
func ownedBy(pid, uid int) bool {
	r := realUID(pid)
	return r == uid || r < 0
}

// realUID returns pid's real user id, -1 when it cannot be told.
func realUID(pid int) int {
	if v, ok := statusField(pid, "Uid:"); ok {
		if f := strings.Fields(v); len(f) > 0 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				return n
			}
		}
	}
	return -1
}

// procShowsAll fails unless /proc belongs to this process's pid namespace
// and shows every process in it to this user.
func procShowsAll() error {
	if self, err := os.Readlink("/proc/self"); err != nil || self != strconv.Itoa(os.Getpid()) {
		return fmt.Errorf("%w: it is the /proc of another pid namespace", errHidden)
	}
	if os.Geteuid() == 0 {
		return nil
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("%w: its mount options cannot be read (%v)", errHidden, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		// "id parent dev root mountpoint opts ... - fstype source superopts"
		f := strings.Fields(line)
		if len(f) < 5 || f[4] != "/proc" {
			continue
		}
		for _, opt := range strings.Split(f[len(f)-1], ",") {
			if v, ok := strings.CutPrefix(opt, "hidepid="); ok && v != "0" && v != "off" {
				return fmt.Errorf("%w: it is mounted with %s", errHidden, opt)
			}
		}
	}
	return nil
}
