package agentpty

import "golang.org/x/sys/unix"

// The ioctls that read the terminal's modes and its unread input
// (FIONREAD, from <sys/filio.h>).
const (
	ioctlGetTermios = unix.TIOCGETA
	ioctlSetTermios = unix.TIOCSETA
	ioctlInq        = 0x4004667f
)
