//go:build !windows

package sshpty

import (
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// signalName is sig's name as SSH and kill(1) spell it ("INT").
func signalName(sig os.Signal) (string, bool) {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return "", false
	}
	name := unix.SignalName(s)
	return strings.TrimPrefix(name, "SIG"), name != ""
}
