//go:build linux || darwin

package termstate

import (
	"os"

	"golang.org/x/sys/unix"
)

// PollIn reports whether fd polls readable at once.
func PollIn(fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n > 0 && fds[0].Revents&unix.POLLIN != 0
	}
}

// control runs fn with f's descriptor, leaving f as it is (not in
// blocking mode, as Fd would).
func control(f *os.File, fn func(fd int)) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(func(fd uintptr) { fn(int(fd)) })
}
