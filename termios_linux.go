package agentpty

import "golang.org/x/sys/unix"

// The ioctls that read the terminal's modes and its unread input.
const (
	ioctlGetTermios = unix.TCGETS
	ioctlInq        = unix.TIOCINQ
)
