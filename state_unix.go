//go:build linux || darwin

package agentpty

import (
	"io"
	"os"
	"sync/atomic"
	"syscall"

	"github.com/agentpty/agentpty/internal/termstate"
	"golang.org/x/sys/unix"
)

// procFiles keeps the terminal's slave and its foreground leader's /proc
// files open between state reads (see termstate.Files).
type procFiles = termstate.Files

// foregroundVia reads the terminal's foreground process group from the
// kernel and decides whether it waits for input (termstate.Foreground),
// keeping files open in pf (nil: none).
func foregroundVia(master *os.File, pf *procFiles) fgReport {
	r := termstate.Foreground(master, pf, echoOff)
	return fgReport{name: r.Name, pid: r.Program.PID, waiting: r.Waiting, quiet: r.Quiet, guessed: r.Guessed, unread: r.Unread}
}

// readable reports whether f has something to read now. On a terminal the
// kernel's poll first finishes handing over what is still in its buffers,
// so bytes written a moment ago count.
func readable(f *os.File) bool {
	ok := false
	_ = control(f, func(fd int) { ok = termstate.PollIn(fd) })
	return ok
}

// terminalReader reads from the master as f.Read does, but sets busy
// before each read system call and leaves it set when the call returned
// bytes: State can then tell "the reader holds output it has not fed" from
// "the reader waits for output". The caller clears busy once it has fed
// them. The raw connection and the callback are made once, not per read:
// the reader calls read for every chunk of output.
type terminalReader struct {
	rc   syscall.RawConn
	busy *atomic.Bool
	buf  []byte
	n    int
	err  error
	fn   func(fd uintptr) bool
}

func newTerminalReader(f *os.File, busy *atomic.Bool) (*terminalReader, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	r := &terminalReader{rc: rc, busy: busy}
	r.fn = r.attempt
	return r, nil
}

// attempt is one read system call, for rc.Read.
func (r *terminalReader) attempt(fd uintptr) bool {
	r.busy.Store(true)
	for {
		r.n, r.err = unix.Read(int(fd), r.buf)
		if r.err != unix.EINTR {
			break
		}
	}
	if r.err == unix.EAGAIN {
		r.busy.Store(false)
		return false // park in the poller until there is more
	}
	return true
}

func (r *terminalReader) read(buf []byte) (int, error) {
	r.buf = buf
	err := r.rc.Read(r.fn)
	r.buf = nil
	switch {
	case err != nil:
		return 0, err
	case r.err != nil:
		return 0, r.err
	case r.n == 0:
		return 0, io.EOF
	}
	return r.n, nil
}
