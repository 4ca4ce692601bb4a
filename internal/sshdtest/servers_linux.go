package sshdtest

import (
	"os/exec"
	"syscall"

	"github.com/agentpty/agentpty/internal/proc"
)

// servers lists the listener and every sshd process below it.
func (s *Server) servers() []int {
	out := []int{s.cmd.Process.Pid}
	children := map[int][]int{}
	buf := make([]byte, 512)
	for _, pid := range proc.Pids() {
		if st, ok := proc.ReadStat(pid, buf); ok && !st.Gone() && st.Comm == "sshd" {
			children[st.PPID] = append(children[st.PPID], pid)
		}
	}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// Descendants lists every process below the listener, whatever its name
// and state (a zombie among them): the per-connection servers and what
// the logins started, for a test to show none is left after its
// connections closed.
func (s *Server) Descendants() []int {
	children := map[int][]int{}
	buf := make([]byte, 512)
	for _, pid := range proc.Pids() {
		if st, ok := proc.ReadStat(pid, buf); ok {
			children[st.PPID] = append(children[st.PPID], pid)
		}
	}
	out := []int{s.cmd.Process.Pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out[1:]
}

// dieWithTests makes the listener die with the test binary: a test binary
// killed by go test's timeout or by hand leaves no sshd behind.
func dieWithTests(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
