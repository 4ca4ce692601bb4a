//go:build !unix

package kubepty

import "syscall"

// signalName is the name kill takes for s ("SIGINT"), "" when it has
// none: the signals this platform's syscall package names.
func signalName(s syscall.Signal) string {
	return map[syscall.Signal]string{
		syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
		syscall.SIGKILL: "SIGKILL", syscall.SIGTERM: "SIGTERM", syscall.SIGALRM: "SIGALRM",
		syscall.SIGPIPE: "SIGPIPE",
	}[s]
}
