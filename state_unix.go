//go:build linux || darwin

package agentpty

import (
	"io"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// readable reports whether f has something to read now. On a terminal the
// kernel's poll first finishes handing over what is still in its buffers,
// so bytes written a moment ago count.
func readable(f *os.File) bool {
	ok := false
	_ = control(f, func(fd int) { ok = pollIn(fd) })
	return ok
}

// pollIn reports whether fd polls readable at once.
func pollIn(fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n > 0 && fds[0].Revents&unix.POLLIN != 0
	}
}

// readTerminal reads from the master as f.Read does, but sets busy before
// each read system call and leaves it set when the call returned bytes:
// State can then tell "the reader holds output it has not fed" from "the
// reader waits for output". The caller clears busy once it has fed them.
func readTerminal(f *os.File, buf []byte, busy *atomic.Bool) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		busy.Store(true)
		for {
			n, rerr = unix.Read(int(fd), buf)
			if rerr != unix.EINTR {
				break
			}
		}
		if rerr == unix.EAGAIN {
			busy.Store(false)
			return false // park in the poller until there is more
		}
		return true
	})
	switch {
	case err != nil:
		return 0, err
	case rerr != nil:
		return 0, rerr
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}
