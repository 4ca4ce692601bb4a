package termstate

import (
	"os"
	"strconv"
	"sync"

	"github.com/agentpty/agentpty/internal/proc"
	"golang.org/x/sys/unix"
)

// Files keeps open, between state reads, the terminal's slave and
// the /proc files of its foreground leader: reading an open /proc file
// costs a fraction of opening it by path, and the slave would otherwise
// be opened through the master (TIOCGPTPEER) and closed at every read.
// An open /proc file follows its process, not its pid: once the process
// is gone, reading fails and the file is opened again by path, so a
// reused pid is never taken for the old process. The slave is closed as
// soon as the program has been reaped: the master reports the end of the
// output only once no one holds the slave.
type Files struct {
	mu     sync.Mutex // held by Foreground for its whole read
	closed bool       // the program has been reaped: nothing is kept open any more
	ready  bool       // the descriptors below are set (-1 or open)
	peer   int        // the slave, -1 when not open
	tty    uint64     // its device
	pid    int        // whose /proc files are kept; 0 for none
	stat   int        // /proc/PID/stat, -1 when not open
	sys    int        // /proc/PID/syscall
	fds    int        // /proc/PID/fd, a directory opened O_PATH
	// The other threads of PID and their kept files (threads_linux.go).
	tids    []int
	threads map[int]*threadFiles
	comm    string
	kernel  local     // what Foreground decides through
	states  []Thread  // what its Threads last listed
	buf     [512]byte // what stat reads
	sysBuf  [256]byte // what syscall reads
}

// groupAndTTY is groupAndTTY through the slave p keeps, which it opens
// on first use.
func (p *Files) groupAndTTY(master *os.File) (pgrp int, tty uint64, unread bool) {
	if p == nil || p.closed {
		return groupAndTTY(master)
	}
	if !p.ready {
		p.peer, p.stat, p.sys, p.fds, p.ready = -1, -1, -1, -1, true
	}
	if p.peer < 0 {
		pgrp, p.peer = GroupAndPeer(master)
		p.tty = DevOf(p.peer)
	} else {
		_ = control(master, func(fd int) { pgrp, _ = unix.IoctlGetInt(fd, unix.TIOCGPGRP) })
	}
	if p.peer >= 0 {
		unread = PollIn(p.peer) // flushes what the master wrote into the line discipline first
	}
	return pgrp, p.tty, unread
}

// follow makes p keep pid's /proc files, closing those of another
// process. Call with mu held, after groupAndTTY.
func (p *Files) follow(pid int) {
	if p != nil && p.pid != pid {
		p.closeFiles()
		p.pid = pid
	}
}

// Close closes everything for good, once the session's program has been
// reaped.
func (p *Files) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ready && p.peer >= 0 {
		unix.Close(p.peer)
		p.peer = -1
	}
	p.closed = true
	p.closeFiles()
}

// closeFiles closes the /proc files that are open.
func (p *Files) closeFiles() {
	for _, fd := range []*int{&p.stat, &p.sys, &p.fds} {
		if p.ready && *fd >= 0 {
			unix.Close(*fd)
		}
		*fd = -1
	}
	p.forgetThreads()
}

// keeps reports that p keeps pid's files: otherwise each read opens and
// closes its own.
func (p *Files) keeps(pid int) bool { return p != nil && p.ready && !p.closed && pid == p.pid }

// openProc opens /proc/PID/name, returning -1 when it cannot.
func openProc(pid int, name string, flags int) int {
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/"+name, flags|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return fd
}

// use calls f with a descriptor of pid's file name: the one kept in *slot
// when p keeps pid's files, else one opened for the call. When f fails on
// a kept descriptor it is closed and f tried once more on the file opened
// again: the process may be gone and the pid another's.
func (p *Files) use(pid int, name string, flags int, slot *int, f func(fd int) bool) bool {
	if !p.keeps(pid) {
		fd := openProc(pid, name, flags)
		if fd < 0 {
			return false
		}
		defer unix.Close(fd)
		return f(fd)
	}
	for range 2 {
		if *slot < 0 {
			if *slot = openProc(pid, name, flags); *slot < 0 {
				return false
			}
		}
		if f(*slot) {
			return true
		}
		unix.Close(*slot)
		*slot = -1
	}
	return false
}

// read reads pid's file name into buf, as use does.
func (p *Files) read(pid int, name string, slot *int, buf []byte) ([]byte, bool) {
	n := 0
	ok := p.use(pid, name, unix.O_RDONLY, slot, func(fd int) bool {
		var err error
		n, err = unix.Pread(fd, buf, 0)
		return err == nil && n > 0
	})
	if !ok {
		return nil, false
	}
	return buf[:n], true
}

// readStat is proc.ReadStat, through the kept file.
func (p *Files) readStat(pid int) (proc.Stat, bool) {
	if !p.keeps(pid) {
		return proc.ReadStat(pid, make([]byte, 512))
	}
	b, ok := p.read(pid, "stat", &p.stat, p.buf[:])
	if !ok {
		return proc.Stat{}, false
	}
	st, ok := proc.ParseStat(b, p.comm)
	p.comm = st.Comm
	return st, ok
}

// readSyscall reads /proc/PID/syscall.
func (p *Files) readSyscall(pid int) ([]byte, bool) {
	if !p.keeps(pid) {
		return p.read(pid, "syscall", nil, make([]byte, 256))
	}
	return p.read(pid, "syscall", &p.sys, p.sysBuf[:])
}

// statFD stats the file descriptor n of process pid refers to.
func (p *Files) statFD(pid int, n uint64, st *unix.Stat_t) bool {
	var slot *int
	if p != nil {
		slot = &p.fds
	}
	var err error
	ok := p.use(pid, "fd", unix.O_PATH|unix.O_DIRECTORY, slot, func(dir int) bool {
		err = unix.Fstatat(dir, strconv.FormatUint(n, 10), st, 0)
		// ENOENT is also a descriptor not open: only once more, as the
		// kept directory may be of a process gone.
		return err == nil || err != unix.ENOENT && err != unix.ESRCH
	})
	return ok && err == nil
}
