package termstate

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// local is this machine's kernel as the decision reads it (Kernel): the
// /proc files of the processes of the foreground group, through the
// files pf keeps.
type local struct {
	pf      *Files
	tty     uint64              // the terminal's device
	master  *os.File            // its master
	echoOff func(*os.File) bool // the terminal's echo flag; nil: on
	known   bool                // Local knows this architecture's calls
}

// ThreadOnTerminal tells whether thread (or process) tid is blocked
// reading the terminal whose device is tty, or in select/poll/epoll
// waiting for it to be readable, and how (see Quiet). known is false when
// the kernel does not show the thread's system call to us.
func ThreadOnTerminal(tid int, tty uint64) (w Wait, known bool) {
	calls, ok := Local()
	s := scan{c: calls, k: &local{tty: tty, known: ok}}
	return s.threadWait(tid, tid)
}

// Call reads /proc/PID/syscall, or a thread's (see Kernel).
func (k *local) Call(pid, tid int) (c Call, in, known bool) {
	if !k.known {
		return Call{}, false, false // numbers this table lacks: as hidden
	}
	var b []byte
	var ok bool
	if tid == pid {
		b, ok = k.pf.readSyscall(pid)
	} else {
		b, ok = k.pf.readThread(pid, tid, threadSyscall, k.pf.scratch())
	}
	if !ok {
		return Call{}, false, false
	}
	c, in = ParseCall(b)
	return c, in, true
}

// Terminal stats pid's descriptor fd (see Kernel).
func (k *local) Terminal(pid int, fd uint64) bool {
	var st unix.Stat_t
	return fd < 1<<20 && k.pf.statFD(pid, fd, &st) &&
		st.Mode&unix.S_IFMT == unix.S_IFCHR && (st.Rdev == k.tty || st.Rdev == DevTTY)
}

// EchoOff asks the terminal (see Kernel).
func (k *local) EchoOff() bool { return k.echoOff != nil && k.echoOff(k.master) }

// DevTTY is /dev/tty, which getpass and sudo open: for a process of the
// terminal's foreground group it is this terminal.
var DevTTY = unix.Mkdev(5, 0)

// Memory reads len(p) bytes of pid's memory at addr (/proc/PID/mem).
func (k *local) Memory(pid int, addr uint64, p []byte) bool {
	if len(p) == 0 {
		return true
	}
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mem")
	if err != nil {
		return false
	}
	defer f.Close()
	n, _ := f.ReadAt(p, int64(addr))
	return n == len(p)
}

// Epoll reads what pid's epoll descriptor epfd watches from its fdinfo
// ("tfd:        0 events:       19 ...").
func (k *local) Epoll(pid int, epfd uint64, each func(fd uint64, events uint32)) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/fdinfo/" + strconv.FormatUint(epfd, 10))
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
		if err1 == nil && err2 == nil {
			each(fd, uint32(ev))
		}
	}
}

// DevOf is the device a terminal descriptor refers to; 0 for none.
func DevOf(fd int) uint64 {
	var st unix.Stat_t
	if fd < 0 || unix.Fstat(fd, &st) != nil {
		return 0
	}
	return st.Rdev
}
