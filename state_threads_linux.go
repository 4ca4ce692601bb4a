package agentpty

import (
	"bytes"
	"encoding/binary"
	"strconv"

	"golang.org/x/sys/unix"
)

// threadsOn looks through the threads of process pid, whose main thread
// sleeps on something other than the terminal: a Go program reads its
// terminal on a goroutine's thread, fzf and Java and Rust programs on a
// thread of their own. running: a thread of pid runs or waits on the disk,
// and the program is at work whatever another thread waits for.
// Otherwise w is the wait of the first thread found on the terminal.
func (g *fgScan) threadsOn(pid int) (w terminalWait, running bool) {
	var buf [512]byte
	g.pf.use(pid, "task", unix.O_RDONLY|unix.O_DIRECTORY, g.pf.taskSlot(), func(dir int) bool {
		var sleeping []int
		ok := eachThread(dir, pid, func(tid int) bool {
			switch threadState(dir, tid, buf[:]) {
			case 'R', 'D':
				running = true
				return false
			case 'S':
				sleeping = append(sleeping, tid)
			}
			return true
		})
		for _, tid := range sleeping {
			if running || w.on {
				break
			}
			if b, ok := readAt(dir, tid, "syscall", buf[:]); ok {
				w = inCallOnTerminal(pid, b, g.tty, g.pf)
			}
		}
		return ok
	})
	return w, running
}

// taskSlot is where p keeps the task directory it follows; nil for none.
func (p *procFiles) taskSlot() *int {
	if p == nil {
		return nil
	}
	return &p.task
}

// eachThread calls f with each thread id listed in the task directory
// dir other than pid's own, until f returns false; false when the
// directory cannot be read.
func eachThread(dir, pid int, f func(tid int) bool) bool {
	if _, err := unix.Seek(dir, 0, 0); err != nil { // a kept directory is read again from its start
		return false
	}
	var buf [4096]byte
	for {
		n, err := unix.Getdents(dir, buf[:])
		if err != nil {
			return false
		}
		if n <= 0 {
			return true
		}
		// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(binary.LittleEndian.Uint16(b[16:]))
			if reclen < 19 || reclen > len(b) {
				return false
			}
			name := b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if tid, err := strconv.Atoi(string(name)); err == nil && tid != pid && !f(tid) {
				return true
			}
			b = b[reclen:]
		}
	}
}

// threadState is the state letter of thread tid in task directory dir,
// 0 when it cannot be read.
func threadState(dir, tid int, buf []byte) byte {
	b, ok := readAt(dir, tid, "stat", buf)
	if !ok {
		return 0
	}
	if j := bytes.LastIndexByte(b, ')'); j >= 0 && j+2 < len(b) {
		return b[j+2]
	}
	return 0
}

// readAt reads the file name of thread tid in task directory dir into buf.
func readAt(dir, tid int, name string, buf []byte) ([]byte, bool) {
	fd, err := unix.Openat(dir, strconv.Itoa(tid)+"/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
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
