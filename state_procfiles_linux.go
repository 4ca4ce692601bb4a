package agentpty

import (
	"strconv"
	"sync"

	"github.com/agentpty/agentpty/internal/proc"
	"golang.org/x/sys/unix"
)

// procFiles keeps the /proc files of the terminal's foreground leader
// open between state reads: reading an open /proc file costs a fraction
// of opening it by path. An open file follows its process, not its pid:
// once the process is gone, reading fails and the file is opened again by
// path, so a reused pid is never taken for the old process.
type procFiles struct {
	mu     sync.Mutex
	closed bool // the program has been reaped: nothing is kept open any more
	pid    int  // whose files are kept; 0 for none
	stat   int  // /proc/PID/stat, -1 when not open
	sys    int  // /proc/PID/syscall
	fds    int  // /proc/PID/fd, a directory opened O_PATH
	comm   string
	buf    [512]byte
}

// lock takes the files for pid, closing those of another process; the
// caller unlocks.
func (p *procFiles) lock(pid int) {
	p.mu.Lock()
	if p.pid != pid {
		p.closeFiles()
		p.pid = pid
	}
}

func (p *procFiles) unlock() { p.mu.Unlock() }

// close closes the files for good, once the session's program has been
// reaped.
func (p *procFiles) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.closeFiles()
}

// closeFiles closes what is open; the descriptors are set only once p
// has had a pid.
func (p *procFiles) closeFiles() {
	for _, fd := range []*int{&p.stat, &p.sys, &p.fds} {
		if p.pid != 0 && *fd >= 0 {
			unix.Close(*fd)
		}
		*fd = -1
	}
}

// keeps reports that p keeps pid's files: otherwise each read opens and
// closes its own.
func (p *procFiles) keeps(pid int) bool { return p != nil && !p.closed && pid == p.pid }

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
func (p *procFiles) use(pid int, name string, flags int, slot *int, f func(fd int) bool) bool {
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

// read reads pid's file name into buf.
func (p *procFiles) read(pid int, name string, slot *int, buf []byte) ([]byte, bool) {
	n := 0
	ok := p.use(pid, name, unix.O_RDONLY, slot, func(fd int) bool {
		k, err := unix.Pread(fd, buf, 0)
		n = k
		return err == nil && k > 0
	})
	return buf[:n], ok
}

// readStat is proc.ReadStat, through the kept file.
func (p *procFiles) readStat(pid int) (proc.Stat, bool) {
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

// readSyscall reads /proc/PID/syscall into buf.
func (p *procFiles) readSyscall(pid int, buf []byte) ([]byte, bool) {
	var slot *int
	if p != nil {
		slot = &p.sys
	}
	return p.read(pid, "syscall", slot, buf)
}

// statFD stats the file descriptor n of process pid refers to.
func (p *procFiles) statFD(pid int, n uint64, st *unix.Stat_t) bool {
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
