package testkit

import (
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/agentpty/agentpty/internal/proc"
)

// Marked lists the live processes whose environment holds kv
// ("NAME=value"): what a test started, whatever became of their parents,
// sessions and terminals.
func Marked(kv string) []MarkedProc {
	var out []MarkedProc
	buf := make([]byte, 512)
	for _, pid := range proc.Pids() {
		if st, ok := proc.ReadStat(pid, buf); !ok || st.Gone() || pid == os.Getpid() {
			continue
		}
		dir := "/proc/" + strconv.Itoa(pid)
		env, err := os.ReadFile(dir + "/environ")
		if err != nil || !slices.Contains(strings.Split(string(env), "\x00"), kv) {
			continue
		}
		cmdline, _ := os.ReadFile(dir + "/cmdline")
		out = append(out, MarkedProc{pid, strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))})
	}
	return out
}
