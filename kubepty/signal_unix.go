//go:build unix

package kubepty

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// signalName is the name kill takes for s ("SIGINT"), "" when it has none.
func signalName(s syscall.Signal) string { return unix.SignalName(s) }
