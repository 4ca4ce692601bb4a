package sshpty

import (
	"os"
	"syscall"
)

// signalName is sig's name as SSH and kill(1) spell it ("INT"): the
// signals Windows' syscall package knows.
func signalName(sig os.Signal) (string, bool) {
	name, ok := map[os.Signal]string{
		syscall.SIGHUP: "HUP", syscall.SIGINT: "INT", syscall.SIGQUIT: "QUIT", syscall.SIGKILL: "KILL",
		syscall.SIGTERM: "TERM", syscall.SIGALRM: "ALRM", syscall.SIGPIPE: "PIPE", syscall.SIGABRT: "ABRT",
	}[sig]
	return name, ok
}
