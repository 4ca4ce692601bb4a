package kubepty

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"k8s.io/klog/v2"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/proc"
	"github.com/agentpty/agentpty/internal/testkit"
	"github.com/agentpty/agentpty/kubepty/kubetest"
)

func TestMain(m *testing.M) {
	// The stand-in's Kubernetes code logs every closed stream.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	goleak.VerifyTestMain(m, append(lingering, goleak.Cleanup(testkit.EmptyHome()))...)
}

// lingering are goroutines of client-go and spdystream that outlive a
// closed connection for a bounded time: the WebSocket heartbeat until its
// next tick, spdystream's shutdown until its timeout, which can be later
// than the end of a quick run: every check leaves them out.
var lingering = []goleak.Option{
	goleak.IgnoreTopFunction("k8s.io/client-go/tools/remotecommand.(*heartbeat).start"),
	goleak.IgnoreTopFunction("github.com/moby/spdystream.(*Connection).shutdown"),
}

const (
	testNS  = "agents"
	testPod = "sandbox-0"
)

// standin starts a stand-in API server with the test pod and a Backend on
// it. The test's end closes both and checks that no goroutine, file
// descriptor or process of the sessions is left.
func standin(t *testing.T, opts ...kubetest.Option) (*kubetest.Server, *Backend) {
	t.Helper()
	need(t, "sh", "env", "grep", "stty", "kill")
	fds := openFDs(t)
	srv := kubetest.NewServer(append([]kubetest.Option{kubetest.Pod(testNS, testPod)}, opts...)...)
	b, err := New(srv.Config(), testNS, testPod, "")
	if err != nil {
		srv.Close()
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		srv.Close()
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		goleak.VerifyNone(t, lingering...)
		// Connections close as their goroutines end; the pipes net.TCPConn
		// keeps for splice go at a collection.
		for i := 0; i < 50 && openFDs(t) > fds; i++ {
			runtime.GC()
			time.Sleep(20 * time.Millisecond)
		}
		if now := openFDs(t); now > fds {
			ents, _ := os.ReadDir("/proc/self/fd")
			for _, e := range ents {
				l, _ := os.Readlink("/proc/self/fd/" + e.Name())
				t.Log(e.Name(), l)
			}
			out, _ := exec.Command("ss", "-tnp").Output()
			t.Log(string(out))
			t.Errorf("file descriptors leaked: %d open before, %d after", fds, now)
		}
	})
	return srv, b
}

// need and openFDs are the library's own test kit's.
var (
	need    = testkit.Need
	openFDs = testkit.OpenFDs
)

// carriers lists this machine's processes whose environment holds the
// terminal's nonce: everything its command started (the stand-in runs
// commands here).
func carriers(term agentpty.Terminal) []int {
	mark := []byte("AGENTPTY_ID=" + term.(*terminal).nonce + "\x00")
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && bytes.Contains(env, mark) && proc.Alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// screen reads a terminal's output as a session does, and lets a test
// wait for text in it.
type screen struct {
	term agentpty.Terminal
	mu   sync.Mutex
	out  bytes.Buffer
	wake chan struct{} // closed and replaced when output arrives or ends
	done bool
	end  chan struct{}
}

func start(t *testing.T, b *Backend, cols, rows int, argv ...string) *screen {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	term, err := b.Start(ctx, agentpty.Command{Argv: argv, Env: []string{"TERM=xterm-256color"},
		Cols: cols, Rows: rows, Name: "pty-" + strconv.Itoa(len(argv))})
	if err != nil {
		t.Fatalf("Start %q: %v", argv, err)
	}
	s := &screen{term: term, wake: make(chan struct{}), end: make(chan struct{})}
	go s.read()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = term.End(ctx, time.Second)
		term.Close()
		<-s.end
		if left := carriers(term); len(left) > 0 {
			t.Errorf("%q left processes %v", argv, left)
		}
	})
	return s
}

func (s *screen) read() {
	defer close(s.end)
	buf := make([]byte, 4096)
	for {
		n, err := s.term.Read(buf)
		s.mu.Lock()
		s.out.Write(buf[:n])
		if err != nil {
			s.done = true
		}
		close(s.wake)
		s.wake = make(chan struct{})
		s.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// String is the output so far.
func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// expect waits until the output matches re, and returns the output.
func (s *screen) expect(t *testing.T, re string) string {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		out, wake, done := s.out.String(), s.wake, s.done
		s.mu.Unlock()
		if rx.MatchString(out) {
			return out
		}
		if done {
			t.Fatalf("output ended without %q: %q", re, out)
		}
		select {
		case <-wake:
		case <-deadline.C:
			t.Fatalf("no %q in %q", re, out)
		}
	}
}

func (s *screen) wait(t *testing.T) (agentpty.ExitStatus, error) {
	t.Helper()
	done := make(chan struct{})
	var st agentpty.ExitStatus
	var err error
	go func() { st, err = s.term.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("Wait did not return")
	}
	return st, err
}

func cmd(argv ...string) agentpty.Command {
	return agentpty.Command{Argv: argv, Env: []string{"TERM=xterm"}, Cols: 80, Rows: 24, Name: "pty-1"}
}

// bothProtocols runs f against a stand-in serving WebSocket (what
// client-go tries first) and against one refusing it (the SPDY fallback).
func bothProtocols(t *testing.T, f func(t *testing.T, spdyOnly bool, srv *kubetest.Server, b *Backend)) {
	for _, spdyOnly := range []bool{false, true} {
		name, opts := "websocket", []kubetest.Option(nil)
		if spdyOnly {
			name, opts = "spdy", []kubetest.Option{kubetest.SPDYOnly()}
		}
		t.Run(name, func(t *testing.T) {
			srv, b := standin(t, opts...)
			f(t, spdyOnly, srv, b)
		})
	}
}
