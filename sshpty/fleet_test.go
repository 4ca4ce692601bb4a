//go:build linux

package sshpty

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/proc"
	"github.com/agentpty/agentpty/internal/sshdtest"
)

// fleetManager returns a manager on b; when t ends
// it is closed, then b, and then (dial's check) nothing of the test may
// be left here nor, on the server, below its listener.
func fleetManager(t *testing.T, srv *sshdtest.Server, b *Backend) *agentpty.Manager {
	t.Helper()
	t.Cleanup(func() {
		b.Close()
		noDescendants(t, srv)
	})
	m := agentpty.NewManager(agentpty.Options{Backend: b, Shell: noProfile, MaxSessions: 128})
	t.Cleanup(func() { m.Close() })
	return m
}

// startIdle starts a session that waits in tr (it answers a line in
// capitals), bounded so that a start
// that hangs fails the test instead.
func startIdle(m *agentpty.Manager) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := m.Start(ctx, agentpty.StartRequest{Command: "echo idle; exec tr a-z A-Z", WaitFor: "idle"})
	if err == nil && !res.Matched {
		err = fmt.Errorf("%s: idle did not appear: %q", res.ID, res.Output)
	}
	return res.ID, err
}

// noDescendants waits (30 s at most) until no process is left below the
// server's listener: no per-connection server, no command, no zombie.
func noDescendants(t *testing.T, srv *sshdtest.Server) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		left := srv.Descendants()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var desc []string
			buf := make([]byte, 512)
			for _, pid := range left {
				st, _ := proc.ReadStat(pid, buf)
				desc = append(desc, fmt.Sprintf("%d %s (%c)", pid, st.Comm, st.State))
			}
			t.Errorf("30 s after the connections closed, processes are left below sshd: %v", desc)
			return
		}
		time.Sleep(50 * time.Millisecond) // polling the process table
	}
}

// Past the server's MaxSessions, with no way to dial another connection,
// a start fails at once with an error that names the limit; the sessions
// already there go on, and a session that ends frees its place. (Before,
// the error read `ssh: rejected: connect failed ("open failed")`.)
func TestSessionLimitNamed(t *testing.T) {
	srv := sshdtest.StartWith(t, sshdtest.Options{MaxSessions: 10})
	c := dial(t, srv, srv.ClientConfig())
	m := fleetManager(t, srv, New(c))
	var ids []string
	var err error
	for len(ids) < 11 {
		var id string
		if id, err = startIdle(m); err != nil {
			break
		}
		ids = append(ids, id)
	}
	// Ten channels: the probe shell and nine sessions.
	if len(ids) != 9 {
		t.Errorf("%d sessions started before the first refusal; want 9 (the probe shell is the tenth channel)", len(ids))
	}
	if !errors.Is(err, agentpty.ErrTooManySessions) || !strings.Contains(err.Error(), "MaxSessions") || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the start past the limit: %v; want agentpty.ErrTooManySessions naming MaxSessions, at once", err)
	}
	for _, id := range []string{ids[0], ids[len(ids)-1]} {
		mustWrite(t, m, agentpty.WriteRequest{ID: id, Input: "still-here", Submit: true, WaitFor: "STILL-HERE"})
	}
	if _, err := m.Kill(waitCtx(t), ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := startIdle(m); err != nil {
		t.Errorf("a start after a session ended: %v", err)
	}
}

// Past the server's MaxSessions, a Backend with a way to dial opens
// another connection, and the sessions there work as the first
// connection's do (their state comes from the first one's probe shell):
// with Options.Dial, and with Dial's own. Without the dial, the tenth
// start fails (TestSessionLimitNamed).
func TestSessionLimitDials(t *testing.T) {
	for _, how := range []string{"Options.Dial", "Dial"} {
		t.Run(how, func(t *testing.T) {
			srv := sshdtest.StartWith(t, sshdtest.Options{MaxSessions: 10})
			var dials atomic.Int32
			var b *Backend
			if how == "Dial" {
				leaks := noLeaks(t)
				t.Cleanup(leaks)
				var err error
				b, err = Dial(context.Background(), srv.User+"@"+srv.Addr, DialConfig{KnownHosts: []string{srv.KnownHosts}, KeyFiles: []string{srv.KeyFile}, NoAgent: true})
				if err != nil {
					t.Fatal(err)
				}
			} else {
				b = NewWith(dial(t, srv, srv.ClientConfig()), Options{Dial: func(ctx context.Context) (*ssh.Client, error) {
					dials.Add(1)
					return srv.Dial()
				}})
			}
			m := fleetManager(t, srv, b)
			var ids []string
			for range 20 {
				id, err := startIdle(m)
				if err != nil {
					t.Fatalf("start %d: %v", len(ids)+1, err)
				}
				ids = append(ids, id)
			}
			b.mu.Lock()
			conns := 1 + len(b.more)
			b.mu.Unlock()
			// 9 sessions beside the probe shell, then 10 and 1.
			if conns != 3 || how == "Options.Dial" && dials.Load() != 2 {
				t.Errorf("20 sessions over %d connections, %d dialed by Options.Dial; want 3 connections", conns, dials.Load())
			}
			last := ids[len(ids)-1]
			mustWrite(t, m, agentpty.WriteRequest{ID: last, Input: "far-side", Submit: true, WaitFor: "FAR-SIDE"})
			// tr reads again a moment after its answer: wait for it, which
			// only the first connection's probe shell can tell.
			if w := mustWrite(t, m, agentpty.WriteRequest{ID: last, WaitUntil: agentpty.WaitUntilInput}); w.State != agentpty.StateWaitingInput {
				t.Errorf("the session on the third connection: state %q; want %s", w.State, agentpty.StateWaitingInput)
			}
		})
	}
}

// A hundred idle sessions to one host (OpenSSH's MaxSessions of 10, so
// over a dozen connections) leave no zombie there, cost the host and this
// process next to nothing, and close within seconds leaving nothing below
// the server.
func TestHundredSessions(t *testing.T) {
	srv := sshdtest.StartWith(t, sshdtest.Options{MaxSessions: 10})
	c := dial(t, srv, srv.ClientConfig())
	b := NewWith(c, Options{Dial: func(context.Context) (*ssh.Client, error) { return srv.Dial() }})
	m := fleetManager(t, srv, b)
	const n = 100
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				if _, err := startIdle(m); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("start: %v", err)
	}
	noZombie(t, srv)
	// Control: Descendants sees the sessions (a tr each), or finding no
	// zombie now and nothing left after Close would prove nothing.
	if d := srv.Descendants(); len(d) < n {
		t.Fatalf("%d processes below the server for %d live sessions: Descendants does not see them", len(d), n)
	}
	window := 3 * time.Second
	server, local := treeCPU(srv.Pid()), cpuTime()
	if server == 0 {
		t.Fatal("the server's processes show no CPU time at all: the measure does not see them")
	}
	time.Sleep(window) // a measurement window, not synchronisation
	local = (cpuTime() - local) * time.Second / window
	server = (treeCPU(srv.Pid()) - server) * time.Second / window
	t.Logf("%d idle sessions: this process %v CPU per second, the server's processes %v", n, local, server)
	// Near nothing: a tenth of a core is far above what idle sessions
	// cost, and far below a poll of each.
	if local > 100*time.Millisecond || server > 100*time.Millisecond {
		t.Errorf("%d idle sessions cost %v CPU per second here and %v on the server; want under 100 ms each", n, local, server)
	}
	calls := probeCalls(t, b)
	before := calls()
	start := time.Now()
	if err := m.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	b.Close()
	took := time.Since(start)
	t.Logf("Close of %d sessions and their connections: %v", n, took)
	// The sessions end together: a few killsess runs in the probe shell,
	// each scanning the host's processes, rather than one per session
	// (which took 21 to 37 s here under load, and 100 runs).
	runs := calls() - before
	t.Logf("Close ran %d calls in the probe shell", runs)
	if runs > 10 {
		t.Errorf("Close of %d sessions ran %d calls in the probe shell; want a few (the sessions end together)", n, runs)
	}
	if took > 30*time.Second {
		t.Errorf("Close of %d sessions took %v; want under 30 s", n, took)
	}
	noDescendants(t, srv)
}

// noZombie waits (10 s at most: a probe's subshell is reaped as it ends)
// until no process below the server's listener is a zombie.
func noZombie(t *testing.T, srv *sshdtest.Server) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	buf := make([]byte, 512)
	for {
		var zombies []int
		for _, pid := range srv.Descendants() {
			if st, ok := proc.ReadStat(pid, buf); ok && st.State == 'Z' {
				zombies = append(zombies, pid)
			}
		}
		if len(zombies) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("zombies below the server while the sessions live: %v", zombies)
			return
		}
		time.Sleep(50 * time.Millisecond) // polling the process table
	}
}
