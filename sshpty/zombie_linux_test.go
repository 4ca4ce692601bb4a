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
	"github.com/agentpty/agentpty/internal/sshdtest"
	"github.com/agentpty/agentpty/internal/testkit"
)

// farSide lists the processes below the server's listener that are not
// servers themselves, with their states: what the sessions and the probe
// shell left on the host.
func farSide(srv *sshdtest.Server) (all, zombies []string) {
	buf := make([]byte, 512)
	children := map[int][]int{}
	stats := map[int]proc.Stat{}
	for _, pid := range proc.Pids() {
		if st, ok := proc.ReadStat(pid, buf); ok {
			children[st.PPID] = append(children[st.PPID], pid)
			stats[pid] = st
		}
	}
	q := []int{srv.Pid()}
	for i := 0; i < len(q); i++ {
		for _, c := range children[q[i]] {
			q = append(q, c)
			st := stats[c]
			if st.Comm == "sshd" || strings.HasPrefix(st.Comm, "sshd-") {
				continue
			}
			s := fmt.Sprintf("%d %c %s (parent %d %s)", c, st.State, st.Comm, st.PPID, stats[st.PPID].Comm)
			all = append(all, s)
			if st.State == 'Z' {
				zombies = append(zombies, s)
			}
		}
	}
	return all, zombies
}

// No zombie sits under the server while the backend lives, and nothing
// is left once its sessions are gone, for a probe shell of bash and one
// of sh (dash reaps a background job only when it next waits for one in
// the foreground): probes that write marks, files, and an End that runs
// in the background of the probe shell.
func TestNoZombieOnTheFarSide(t *testing.T) {
	for _, shell := range []string{"bash", "dash"} {
		t.Run(shell, func(t *testing.T) {
			testkit.Need(t, shell)
			saved := probeShellLine
			t.Cleanup(func() { probeShellLine = saved })
			probeShellLine = "exec " + shell
			srv, c := connect(t)
			b := New(c)
			term, out := startTerm(t, b, `sleep 1000 & echo "job=$!."; while read -s x; do echo "got $x"; done`)
			defer closeTerm(term, out)
			out.waitFor(t, "job=")
			// Control: farSide sees what the session runs on the host (the
			// job once it has exec'd sleep), or finding nothing left below
			// would prove nothing.
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				all, _ := farSide(srv)
				if strings.Contains(strings.Join(all, "\n"), " sleep (") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("farSide does not see the session's sleep job:\n%s", strings.Join(all, "\n"))
				}
			}
			sr := term.(agentpty.StateReader)
			for i := 0; i < 3; i++ {
				waitRead(t, term, "read")
				if _, err := term.Write([]byte("line\r")); err != nil {
					t.Fatal(err)
				}
				sr.EchoOff()
			}
			if d, err := b.MkdirTemp(context.Background(), "z"); err != nil || b.RemoveAll(context.Background(), d) != nil {
				t.Fatalf("MkdirTemp: %q, %v", d, err)
			}
			end := term.(interface {
				End(context.Context, time.Duration) error
			})
			if err := end.End(context.Background(), 2*time.Second); err != nil {
				t.Fatal(err)
			}
			// A zombie stays until its parent waits: one seen again a
			// second later is not on its way out (bash reaps a moment
			// after the exit), over three seconds, the backend alive.
			var all []string
			seen := map[string]bool{}
			for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
				var zombies []string
				all, zombies = farSide(srv)
				for _, z := range zombies {
					if seen[z] {
						t.Fatalf("a zombie sits under the server while the backend lives:\n%s", strings.Join(all, "\n"))
					}
					seen[z] = true
				}
			}
			closeTerm(term, out)
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				if all, _ = farSide(srv); len(all) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("left under the server once its sessions closed:\n%s", strings.Join(all, "\n"))
				}
			}
		})
	}
}

// A start with no other session live starts the probe shell beside its
// own channel (acquire's warm), and a start that fails after that leaves
// no probe shell behind: the last terminal counted out closes the one
// starting ahead too.
func TestProbeShellStartedAheadEndsWithAFailedStart(t *testing.T) {
	srv, c := connect(t)
	b := New(c)
	defer b.Close()
	term, out := startTerm(t, b, "echo ready; exec cat")
	out.waitFor(t, "ready")
	closeTerm(term, out) // the host is known; the probe shell ended with it
	waitFarSide(t, srv, 0)

	// The start counts itself in, then fails (Start's deferred release).
	if _, err := b.acquire("pty-2"); err != nil {
		t.Fatal(err)
	}
	b.release()
	b.warming.Wait()
	b.mu.Lock()
	h, users := b.helper, b.users
	b.mu.Unlock()
	if h != nil || users != 0 {
		t.Fatalf("after a failed start the backend holds a probe shell (%v) for %d terminals", h != nil, users)
	}
	waitFarSide(t, srv, 0)

	// One that lives finds the shell started ahead, and it serves.
	if _, err := b.acquire("pty-3"); err != nil {
		t.Fatal(err)
	}
	b.warming.Wait()
	b.mu.Lock()
	h = b.helper
	b.mu.Unlock()
	if h == nil {
		t.Fatal("no probe shell was started ahead of a live start's first probe")
	}
	if out, err := h.run(context.Background(), `echo "$Q" up`, false); err != nil || !strings.Contains(string(out), "up") {
		t.Fatalf("the probe shell started ahead: %q, %v", out, err)
	}
	b.release()
	waitFarSide(t, srv, 0)
}

// waitFarSide waits (20 s at most) until n processes are left below the
// server that are not servers (farSide).
func waitFarSide(t *testing.T, srv *sshdtest.Server, n int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		all, _ := farSide(srv)
		if len(all) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d processes under the server, want %d:\n%s", len(all), n, strings.Join(all, "\n"))
		}
	}
}
