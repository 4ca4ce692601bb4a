package agentpty

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

func init() { childModes["idle-threads"] = idleThreadsChild }

// reapSessions is how many idle sessions the helper child holds.
const reapSessions = 100

// idleThreadsChild starts reapSessions idle sessions on one Manager and
// prints its own thread count as JSON, then closes them.
func idleThreadsChild() {
	m := NewManager(Options{Shell: []string{"bash", "-c"}, MaxSessions: reapSessions})
	defer m.Close()
	for i := 0; i < reapSessions; i++ {
		res, err := m.Start(context.Background(), StartRequest{Command: "echo ready; exec cat", WaitFor: "ready"})
		if err != nil || !res.Matched {
			fmt.Printf(`{"error":%q}`+"\n", fmt.Sprint("start: ", err, " ", res.Output))
			return
		}
	}
	status, _ := os.ReadFile("/proc/self/status")
	out, _ := json.Marshal(map[string]string{"status": string(status)})
	fmt.Println(string(out))
}

// TestIdleSessionsHoldNoThread: a session waiting for its child holds no
// OS thread (the child is reaped through a pidfd in the runtime's
// poller), so a hundred idle sessions run on a few threads. Reaped by
// os/exec's Wait, each held one blocked in waitid: 100 sessions, over 100
// threads. Run in a helper child, whose threads no earlier test made.
func TestIdleSessionsHoldNoThread(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childModeEnv+"=idle-threads")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper child: %v\n%s", err, out)
	}
	var r map[string]string
	if err := json.Unmarshal(out, &r); err != nil || r["error"] != "" {
		t.Fatalf("helper child: %v %s", err, out)
	}
	threads := -1
	for _, line := range strings.Split(r["status"], "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			threads, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	if threads < 0 {
		t.Fatalf("no Threads line in /proc/self/status:\n%s", r["status"])
	}
	if threads >= reapSessions/2 {
		t.Fatalf("%d idle sessions run on %d threads: a thread is held per session", reapSessions, threads)
	}
	t.Logf("%d idle sessions, %d threads", reapSessions, threads)
}
