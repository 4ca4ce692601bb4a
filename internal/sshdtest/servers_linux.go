package sshdtest

import (
	"os"
	"slices"
	"strconv"
	"strings"

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

// left lists the live processes a login to the server started (the
// marker is in their environment), each as "PID command line".
func (s *Server) left() []string {
	want := markerVar + "=" + s.Dir
	var out []string
	buf := make([]byte, 512)
	for _, pid := range proc.Pids() {
		if st, ok := proc.ReadStat(pid, buf); !ok || st.Gone() {
			continue
		}
		dir := "/proc/" + strconv.Itoa(pid)
		env, err := os.ReadFile(dir + "/environ")
		if err != nil || !slices.Contains(strings.Split(string(env), "\x00"), want) {
			continue
		}
		cmdline, _ := os.ReadFile(dir + "/cmdline")
		out = append(out, strconv.Itoa(pid)+" "+strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " ")))
	}
	return out
}
