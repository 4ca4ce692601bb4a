package termstate

import (
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Threads reads the state of each thread of pid but its main one (see
// Kernel), through the files p keeps, up to the first that runs.
func (k *local) Threads(pid, n int) []Thread {
	buf := k.pf.scratch()
	var out []Thread
	if k.pf != nil {
		out = k.pf.states[:0]
	}
	for _, tid := range k.pf.threadIDs(pid, n) {
		b, _ := k.pf.readThread(pid, tid, threadStat, buf)
		st := threadState(b)
		out = append(out, Thread{tid, st})
		if st == 'R' || st == 'D' {
			break
		}
	}
	if k.pf != nil {
		k.pf.states = out
	}
	return out
}

// scratch is a buffer for a read of a /proc file: p's own, which a read
// of the leader's stat is done with by then, or a new one without p.
func (p *Files) scratch() []byte {
	if p == nil {
		return make([]byte, 512)
	}
	return p.buf[:]
}

// threadState is the state letter in a thread's stat line b, 0 for none.
func threadState(b []byte) byte {
	if j := bytes.LastIndexByte(b, ')'); j >= 0 && j+2 < len(b) {
		return b[j+2]
	}
	return 0
}

// The files of a thread that the decision reads, and how many threads'
// files a Files keeps open at most (two descriptors each): a program with
// more has the rest read by path.
const (
	threadStat    = 0
	threadSyscall = 1
	keptThreads   = 32
)

// threadFiles holds the kept descriptors of a thread's stat and syscall
// files, -1 when not open.
type threadFiles [2]int

// threadIDs lists the threads of process pid other than its main one:
// when p keeps pid's files and already knows want of them (the count
// stat gave), the list it kept; else read from /proc/PID/task.
func (p *Files) threadIDs(pid, want int) []int {
	if p.keeps(pid) && p.threads != nil && len(p.tids) == want {
		return p.tids
	}
	d, err := os.Open("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	tids := make([]int, 0, len(names))
	for _, n := range names {
		if tid, err := strconv.Atoi(n); err == nil && tid != pid {
			tids = append(tids, tid)
		}
	}
	if p.keeps(pid) {
		p.keepThreads(tids)
	}
	return tids
}

// keepThreads makes tids the threads p keeps files of, closing those of
// threads gone.
func (p *Files) keepThreads(tids []int) {
	old := p.threads
	p.threads, p.tids = make(map[int]*threadFiles, len(tids)), tids
	for _, tid := range tids {
		if f := old[tid]; f != nil {
			p.threads[tid] = f
			delete(old, tid)
		} else if len(p.threads) < keptThreads {
			p.threads[tid] = &threadFiles{-1, -1}
		}
	}
	for _, f := range old {
		f.close()
	}
}

// forgetThreads closes the threads' files p keeps.
func (p *Files) forgetThreads() {
	for _, f := range p.threads {
		f.close()
	}
	p.threads, p.tids = nil, nil
}

func (f *threadFiles) close() {
	for i := range f {
		if f[i] >= 0 {
			unix.Close(f[i])
			f[i] = -1
		}
	}
}

// readThread reads file which (threadStat, threadSyscall) of thread tid
// of process pid into buf, through the descriptor p keeps for it if any.
// A kept descriptor that fails is of a thread gone: the thread list is
// read again next time.
func (p *Files) readThread(pid, tid, which int, buf []byte) ([]byte, bool) {
	name := func() string {
		return "/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + [...]string{"/stat", "/syscall"}[which]
	}
	var f *threadFiles
	if p.keeps(pid) {
		f = p.threads[tid]
	}
	if f == nil {
		return readPath(name(), buf)
	}
	if f[which] < 0 {
		fd, err := unix.Open(name(), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			p.tids = nil
			return nil, false
		}
		f[which] = fd
	}
	n, err := unix.Pread(f[which], buf, 0)
	if err != nil || n <= 0 {
		f.close()
		p.tids = nil
		return nil, false
	}
	return buf[:n], true
}

// readPath reads the file at path into buf.
func readPath(path string, buf []byte) ([]byte, bool) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	n, err := unix.Read(fd, buf)
	unix.Close(fd)
	if err != nil || n <= 0 {
		return nil, false
	}
	return buf[:n], true
}
