//go:build linux

package sshpty

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/crypto/ssh"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/proc"
	"github.com/agentpty/agentpty/internal/sshdtest"
	"github.com/agentpty/agentpty/internal/testkit"
)

// connect starts a server and connects to it. When t ends the client is
// closed, and then no goroutine, descriptor or process of the test may be
// left (the server's own are not the test's).
func connect(t *testing.T) (*sshdtest.Server, *ssh.Client) {
	t.Helper()
	srv := sshdtest.Start(t)
	return srv, dial(t, srv, srv.ClientConfig())
}

// dial connects to srv with cfg. When t ends the client is closed, and
// then no goroutine, descriptor or process of the test may be left.
func dial(t *testing.T, srv *sshdtest.Server, cfg *ssh.ClientConfig) *ssh.Client {
	t.Helper()
	leaks := noLeaks(t)
	c, err := ssh.Dial("tcp", srv.Addr, cfg)
	if err != nil {
		t.Fatalf("dial %s as %s: %v\n%s", srv.Addr, cfg.User, err, srv.Log())
	}
	t.Cleanup(func() {
		c.Close()
		leaks()
	})
	return c
}

// readyTerm starts script (which says "ready") on a backend of a server
// of t's own and waits for it to say so; the terminal is closed when t
// ends.
func readyTerm(t *testing.T, script string) (*Backend, agentpty.Terminal, *pump) {
	t.Helper()
	_, c := connect(t)
	b := New(c)
	term, out := startTerm(t, b, script)
	t.Cleanup(func() { closeTerm(term, out) })
	out.waitFor(t, "ready")
	return b, term, out
}

// closeTerm closes term and waits for its pump to end.
func closeTerm(term agentpty.Terminal, out *pump) {
	term.Close()
	<-out.done
}

// noLeaks notes the goroutines and descriptors open now; the function it
// returns fails t when more are left.
func noLeaks(t *testing.T) func() {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	fds := openFDs(t)
	return func() {
		goleak.VerifyNone(t, ignore)
		if now := openFDs(t); now > fds {
			t.Errorf("file descriptors leaked: %d open before, %d after", fds, now)
		}
	}
}

var openFDs = testkit.OpenFDs

// noneLeft fails t when a process of the session whose leader was pid is
// still alive on this machine (the server is local).
func noneLeft(t *testing.T, pid int) {
	t.Helper()
	if left := proc.Members(pid); len(left) > 0 {
		t.Errorf("processes %v of the remote session %d are still running", left, pid)
	}
}

// pump reads a terminal until it ends, keeping what it read.
type pump struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	more chan struct{} // closed and replaced at each read
	done chan struct{}
}

func newPump(r interface{ Read([]byte) (int, error) }) *pump {
	p := &pump{more: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		b := make([]byte, 32<<10)
		for {
			n, err := r.Read(b)
			p.mu.Lock()
			p.buf.Write(b[:n])
			close(p.more)
			p.more = make(chan struct{})
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return p
}

// waitFor waits until the output holds s.
func (p *pump) waitFor(t *testing.T, s string) {
	t.Helper()
	tm := time.NewTimer(20 * time.Second)
	defer tm.Stop()
	for {
		p.mu.Lock()
		got, more := p.buf.String(), p.more
		p.mu.Unlock()
		if strings.Contains(got, s) {
			return
		}
		select {
		case <-more:
		case <-p.done:
			p.mu.Lock()
			got = p.buf.String()
			p.mu.Unlock()
			if !strings.Contains(got, s) {
				t.Fatalf("output ended without %q: %q", s, got)
			}
			return
		case <-tm.C:
			t.Fatalf("%q did not appear: %q", s, got)
		}
	}
}

func (p *pump) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.String()
}

// startTerm starts script under bash on the backend and pumps its output.
func startTerm(t *testing.T, b *Backend, script string) (agentpty.Terminal, *pump) {
	t.Helper()
	term, err := b.Start(context.Background(), agentpty.Command{Argv: []string{"bash", "-c", script}, Env: []string{"TERM=xterm"}, Cols: 80, Rows: 24, Name: "pty-1"})
	if err != nil {
		t.Fatalf("Start(%q): %v", script, err)
	}
	return term, newPump(term)
}

// alive reports a live process (a zombie has ended; this machine's init
// may be slow to reap what the killed sessions left it).
func alive(pid int) bool {
	st, ok := proc.ReadStat(pid, make([]byte, 512))
	return ok && !st.Gone()
}
