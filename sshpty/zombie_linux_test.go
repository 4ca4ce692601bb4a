//go:build linux

package sshpty

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/proc"
)

// farSide lists every process below the server's listener that is not a
// server itself, with its state: what the sessions and the probe shell
// left on the host.
func farSide(srvPid int) []string {
	buf := make([]byte, 512)
	children := map[int][]int{}
	stats := map[int]proc.Stat{}
	for _, pid := range proc.Pids() {
		if st, ok := proc.ReadStat(pid, buf); ok {
			children[st.PPID] = append(children[st.PPID], pid)
			stats[pid] = st
		}
	}
	var out []string
	q := []int{srvPid}
	for i := 0; i < len(q); i++ {
		for _, c := range children[q[i]] {
			q = append(q, c)
			if st := stats[c]; st.Comm != "sshd" && !strings.HasPrefix(st.Comm, "sshd-") {
				out = append(out, fmt.Sprintf("%d %c %s (parent %d %s)", c, st.State, st.Comm, st.PPID, stats[st.PPID].Comm))
			}
		}
	}
	return out
}

func TestZombieRepro(t *testing.T) {
	srv, c := connect(t)
	b := New(c)
	for round := 0; round < 3; round++ {
		term, out := startTerm(t, b, "sleep 100 & read -s x; echo got; read y")
		sr := term.(agentpty.StateReader)
		deadline := time.Now().Add(20 * time.Second)
		for !sr.Foreground().Waiting && time.Now().Before(deadline) {
		}
		for i := 0; i < 5; i++ {
			term.Write([]byte(fmt.Sprint(i, "\n")))
			sr.Foreground()
			sr.EchoOff()
		}
		out.waitFor(t, "got")
		d, err := b.MkdirTemp(context.Background(), "x")
		t.Log(d, err, b.RemoveAll(context.Background(), d))
		time.Sleep(500 * time.Millisecond)
		t.Logf("far side:\n%s", strings.Join(farSide(srv.Pid()), "\n"))
		t.Log(term.(interface {
			End(context.Context, time.Duration) error
		}).End(context.Background(), time.Second))
		closeTerm(term, out)
		time.Sleep(500 * time.Millisecond)
		t.Logf("far side after End:\n%s", strings.Join(farSide(srv.Pid()), "\n"))
	}
}
