package agentpty

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentpty/agentpty/internal/testkit"
)

// memBackend starts memTerminals: no pseudo-terminal, no process, which
// shows that everything above the Terminal interface runs on any terminal.
type memBackend struct {
	starts atomic.Int32
	last   atomic.Pointer[memTerminal]
}

func (b *memBackend) Start(_ context.Context, c Command) (Terminal, error) {
	b.starts.Add(1)
	t := newMemTerminal(c)
	b.last.Store(t)
	return t, nil
}

// memTerminal runs a little line program over pipes. It echoes what is
// typed as a terminal in line mode would (CR shown as CR LF); for a line
// "exit N" it exits with N, "print TEXT" prints TEXT, "size" prints the
// size; other lines are echoed back as "> LINE".
type memTerminal struct {
	cmd      Command
	outR     *io.PipeReader
	outW     *io.PipeWriter
	in       chan []byte
	exited   chan struct{}
	status   ExitStatus
	mu       sync.Mutex
	deadline time.Time
	cols     int
	rows     int
	signals  []string
	quit     chan struct{}
	quitOnce sync.Once
}

func newMemTerminal(c Command) *memTerminal {
	r, w := io.Pipe()
	t := &memTerminal{cmd: c, outR: r, outW: w, in: make(chan []byte), exited: make(chan struct{}), quit: make(chan struct{}),
		cols: c.Cols, rows: c.Rows}
	go t.run()
	return t
}

func (t *memTerminal) run() {
	defer close(t.exited)
	defer t.outW.Close() // the output ends with the program
	fmt.Fprintf(t.outW, "ready %s\r\n", strings.Join(t.cmd.Argv[len(t.cmd.Argv)-1:], " "))
	var line []byte
	for {
		var p []byte
		select {
		case p = <-t.in:
		case <-t.quit:
			t.status = ExitStatus{Code: -1, Signal: "SIGKILL"}
			return
		}
		for _, b := range p {
			if b != '\r' {
				line = append(line, b)
				_, _ = t.outW.Write([]byte{b})
				continue
			}
			_, _ = t.outW.Write([]byte("\r\n"))
			cmd, arg, _ := strings.Cut(string(line), " ")
			line = line[:0]
			switch cmd {
			case "exit":
				t.status.Code, _ = strconv.Atoi(arg)
				return
			case "print":
				fmt.Fprintf(t.outW, "%s\r\n", arg)
			case "size":
				t.mu.Lock()
				fmt.Fprintf(t.outW, "%d %d\r\n", t.rows, t.cols)
				t.mu.Unlock()
			default:
				fmt.Fprintf(t.outW, "> %s %s\r\n", cmd, arg)
			}
		}
	}
}

func (t *memTerminal) Read(p []byte) (int, error) { return t.outR.Read(p) }

func (t *memTerminal) Write(p []byte) (int, error) {
	t.mu.Lock()
	d := t.deadline
	t.mu.Unlock()
	var timeout <-chan time.Time
	if !d.IsZero() {
		timer := time.NewTimer(time.Until(d))
		defer timer.Stop()
		timeout = timer.C
	}
	select {
	case t.in <- append([]byte(nil), p...):
		return len(p), nil
	case <-timeout:
		return 0, os.ErrDeadlineExceeded
	case <-t.exited:
		return 0, io.ErrClosedPipe
	}
}

func (t *memTerminal) SetWriteDeadline(d time.Time) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.deadline = d
	return nil
}

func (t *memTerminal) Resize(cols, rows int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cols, t.rows = cols, rows
	return nil
}

func (t *memTerminal) Signal(sig os.Signal) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.signals = append(t.signals, sig.String())
	return nil
}

func (t *memTerminal) Wait() (ExitStatus, error) {
	<-t.exited
	return t.status, nil
}

func (t *memTerminal) End(ctx context.Context, _ time.Duration) error {
	t.quitOnce.Do(func() { close(t.quit) })
	select {
	case <-t.exited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t *memTerminal) Close() error { return t.outR.Close() }
func (t *memTerminal) PID() int     { return 0 }

// memManager is a manager whose sessions run on a memBackend.
func memManager(t *testing.T, opts Options) (*Manager, *memBackend) {
	b := &memBackend{}
	opts.Backend = b
	return newManager(t, opts), b
}

// Start, write, wait_for, peek, resize and exit, on a terminal with no
// pty: the settled text, the waits and the results are the terminal's.
func TestMemBackendSession(t *testing.T) {
	testkit.Parallel(t)
	m, b := memManager(t, Options{})
	start := mustStart(t, m, StartRequest{Command: "prog", WaitFor: "ready", Cols: 40, Rows: 10})
	if start.State != StateRunning || start.Foreground != "" || start.InputHidden {
		t.Errorf("a terminal with no StateReader says more than it knows: %+v", start)
	}
	term := b.last.Load()
	if got := term.cmd; got.Cols != 40 || got.Rows != 10 || got.Name != start.ID || got.Env[0] != "TERM=xterm-256color" ||
		got.Argv[len(got.Argv)-1] != "prog" {
		t.Errorf("the backend was asked for %+v", got)
	}
	w := mustWrite(t, m, WriteRequest{ID: start.ID, Input: "print hello", Submit: true, WaitFor: "hello", Peek: true})
	if w.Output != "print hello\nhello" {
		t.Errorf("peek output %q", w.Output)
	}
	w = mustWrite(t, m, WriteRequest{ID: start.ID, Input: "size", Submit: true, WaitFor: "7 30", Cols: 30, Rows: 7})
	if w.Output != "print hello\nhello\nsize\n7 30" {
		t.Errorf("after the peek, output %q", w.Output)
	}
	w = mustWrite(t, m, WriteRequest{ID: start.ID, SendSignal: "INT", Input: "exit 3", Submit: true, WaitMS: ms(10000)})
	if !w.Exited || code(w.ExitCode) != 3 || w.State != StateExited {
		t.Errorf("exit: %+v", w)
	}
	if got := term.signals; len(got) != 1 || got[0] != "interrupt" {
		t.Errorf("signals %v", got)
	}
	s, _ := m.Session(start.ID)
	if st, err := s.Wait(waitCtx(t)); err != nil || st.Code != 3 {
		t.Errorf("Wait: %v %v", st, err)
	}
	k, err := m.Kill(waitCtx(t), start.ID)
	if err != nil || code(k.ExitCode) != 3 {
		t.Errorf("Kill: %+v %v", k, err)
	}
}

// Kill ends the terminal's command through End and returns what was not
// read; the lane keeps calls in order on any terminal.
func TestMemBackendKillAndLane(t *testing.T) {
	testkit.Parallel(t)
	m, _ := memManager(t, Options{})
	start := mustStart(t, m, StartRequest{Command: "prog", WaitFor: "ready"})
	var wg sync.WaitGroup
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mustWrite(t, m, WriteRequest{ID: start.ID, Input: fmt.Sprintf("print line%d", i), Submit: true, WaitFor: fmt.Sprintf("\nline%d", i)})
		}()
	}
	wg.Wait()
	s, _ := m.Session(start.ID)
	if err := s.Send("print unread\r"); err != nil { // a write's result could read the answer
		t.Fatal(err)
	}
	awaitUnread(t, s, "\nunread")
	k, err := m.Kill(waitCtx(t), start.ID)
	if err != nil || k.Signal != "SIGKILL" || !strings.Contains(k.Output, "\nunread") {
		t.Errorf("Kill: %+v %v", k, err)
	}
}

// What only a kernel knows is refused where the terminal cannot tell it,
// and a sandbox is refused before anything starts.
func TestMemBackendRefusals(t *testing.T) {
	testkit.Parallel(t)
	m, b := memManager(t, Options{})
	if _, err := m.Start(waitCtx(t), StartRequest{Command: "prog", WaitUntil: WaitUntilInput}); !isErr(err, ErrUnsupported) {
		t.Errorf("start wait_until input: %v", err)
	}
	if n := len(m.List()); n != 0 {
		t.Errorf("%d sessions left after a refused start", n)
	}
	start := mustStart(t, m, StartRequest{Command: "prog", WaitFor: "ready"})
	if _, err := m.Write(waitCtx(t), WriteRequest{ID: start.ID, WaitUntil: WaitUntilInput}); !isErr(err, ErrUnsupported) {
		t.Errorf("write wait_until input: %v", err)
	}
	if _, err := m.WriteSecret(waitCtx(t), start.ID, []byte("hunter2")); !isErr(err, ErrUnsupported) {
		t.Errorf("WriteSecret: %v", err)
	}
	if _, err := m.Start(waitCtx(t), StartRequest{Shell: true}); !isErr(err, ErrUnsupported) {
		t.Errorf("shell session: %v", err)
	}
	s, _ := m.Session(start.ID)
	if c := s.Containment(); c != "" {
		t.Errorf("Containment %q on a terminal that does not say", c)
	}
	if n := b.starts.Load(); n != 2 {
		t.Errorf("the backend started %d commands, want 2", n)
	}
}

// A sandbox confines commands on this machine: with another backend a
// start is refused and nothing runs unconfined.
func TestMemBackendSandboxRefused(t *testing.T) {
	testkit.Parallel(t)
	m, b := memManager(t, Options{Sandbox: noSandbox{}})
	if _, err := m.Start(waitCtx(t), StartRequest{Command: "prog"}); !isErr(err, ErrUnsupported) {
		t.Errorf("sandboxed start: %v", err)
	}
	if n := b.starts.Load(); n != 0 {
		t.Errorf("the backend started %d commands for a sandboxed manager", n)
	}
}

// noSandbox is a Sandbox that changes nothing.
type noSandbox struct{}

func (noSandbox) Prepare(*exec.Cmd) error { return nil }
