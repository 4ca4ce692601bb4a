//go:build linux || darwin

package agentpty

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentpty/agentpty/internal/screen"

	"github.com/agentpty/agentpty/internal/testkit"
)

// person is someone at a terminal: the test holds the terminal's master
// side, keeps a screen of what it shows, and types into it; Attach gets the
// terminal itself, in raw mode, as a program in a person's terminal does.
type person struct {
	t        *testing.T
	master   *os.File
	tty      *os.File
	mu       sync.Mutex
	scr      *screen.Screen
	bells    int
	changed  chan struct{}
	readDone chan struct{}
}

func newPerson(t *testing.T, cols, rows int) *person {
	t.Helper()
	master, tty, err := openTerminal()
	if err != nil {
		t.Fatal(err)
	}
	if err := setSize(master, cols, rows); err != nil {
		t.Fatal(err)
	}
	var terr error
	_ = control(tty, func(fd int) {
		var tio *unix.Termios
		if tio, terr = unix.IoctlGetTermios(fd, ioctlGetTermios); terr == nil {
			tio.Iflag &^= unix.ICRNL | unix.IXON | unix.INLCR | unix.IGNCR
			tio.Oflag &^= unix.OPOST
			tio.Lflag &^= unix.ECHO | unix.ICANON | unix.ISIG | unix.IEXTEN
			tio.Cc[unix.VMIN], tio.Cc[unix.VTIME] = 1, 0
			terr = unix.IoctlSetTermios(fd, ioctlSetTermios, tio)
		}
	})
	if terr != nil {
		t.Fatal(terr)
	}
	p := &person{t: t, master: master, tty: tty, scr: screen.New(cols, rows), changed: make(chan struct{}), readDone: make(chan struct{})}
	go p.read()
	t.Cleanup(func() {
		tty.Close()
		master.Close()
		<-p.readDone
	})
	return p
}

func (p *person) read() {
	defer close(p.readDone)
	buf := make([]byte, 4096)
	for {
		n, err := p.master.Read(buf)
		p.mu.Lock()
		p.scr.Write(nil, buf[:n])
		p.bells += bytes.Count(buf[:n], []byte("\a"))
		close(p.changed)
		p.changed = make(chan struct{})
		p.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// sees waits until the person's screen holds lit, or has rung the bell
// bells times.
func (p *person) waitFor(what string, ok func(text string, bells int) bool) {
	p.t.Helper()
	ctx := waitCtx(p.t)
	for {
		p.mu.Lock()
		text, bells, ch := p.scr.Text(), p.bells, p.changed
		p.mu.Unlock()
		if ok(text, bells) {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			p.t.Fatalf("the person's screen never showed %s:\n%s", what, text)
		}
	}
}

func (p *person) sees(lit string) {
	p.t.Helper()
	p.waitFor(lit, func(text string, _ int) bool { return strings.Contains(text, lit) })
}

func (p *person) types(s string) {
	p.t.Helper()
	if _, err := p.master.WriteString(s); err != nil {
		p.t.Fatal(err)
	}
}

// Two people watch a session the model drives: both see the screen as it
// was and every byte after; the first types, the second's keys are dropped
// with a bell until the first leaves; what they typed reaches the model's
// next read; leaving changes nothing for the model.
func TestAttachTwoPeople(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	start := mustStart(t, m, StartRequest{Command: readyCat, Cols: 50, Rows: 10, WaitFor: "ready"})
	mustWrite(t, m, WriteRequest{ID: start.ID, Input: "from-model", Submit: true, WaitFor: "from-model\nfrom-model"})
	s, _ := m.Session(start.ID)

	attach := func(p *person) (context.CancelFunc, chan error) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Attach(ctx, p.tty) }()
		return cancel, done
	}
	a, b := newPerson(t, 50, 10), newPerson(t, 50, 10)
	cancelA, doneA := attach(a)
	a.sees("from-model") // the redraw
	cancelB, doneB := attach(b)
	defer cancelB()
	b.sees("from-model")

	a.types("by-A\r")
	a.sees("by-A")
	b.sees("by-A")
	b.types("by-B\r")
	b.waitFor("a bell", func(_ string, bells int) bool { return bells == 1 })
	res := mustWrite(t, m, WriteRequest{ID: start.ID, WaitFor: "by-A\nby-A"}) // the echo, then cat
	if strings.Contains(res.Output, "by-B") || strings.Contains(res.Output, "from-model") {
		t.Errorf("the model's read after the person typed: %q; want by-A and nothing else", res.Output)
	}

	cancelA()
	if err := <-doneA; !isErr(err, context.Canceled) || !strings.Contains(err.Error(), start.ID) {
		t.Errorf("Attach after cancel: %v, want context.Canceled naming %s", err, start.ID)
	}
	mustWrite(t, m, WriteRequest{ID: start.ID, Input: "model-again", Submit: true, WaitFor: "model-again\nmodel-again"})
	b.sees("model-again")
	b.types("now-B\r")
	b.sees("now-B")
	res = mustWrite(t, m, WriteRequest{ID: start.ID, WaitFor: "now-B\nnow-B"})
	if strings.Contains(s.Scrollback(), "by-B") {
		t.Errorf("keys typed while someone else had the keyboard reached the program:\n%s", s.Scrollback())
	}
	if s.Screen().Cols != 50 {
		t.Errorf("the session's size changed")
	}

	// The person's terminal hangs up: Attach returns nil.
	b.master.Close()
	if err := <-doneB; err != nil {
		t.Errorf("Attach after the person's terminal closed: %v, want nil", err)
	}
	_ = res
	if _, err := m.Kill(context.Background(), start.ID); err != nil {
		t.Fatal(err)
	}
}

// Attaching to a full-screen program shows its screen at once, colours
// and cursor included, and Attach returns nil when the program ends.
func TestAttachRedrawsAFullScreenProgram(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	start := mustStart(t, m, StartRequest{
		Command: `printf '\e[?1049h\e[2;3H\e[7mselected\e[0m item\e[4;1Hsecond'; read x; printf '\e[?1049l'; echo "got $x"`,
		Cols:    30, Rows: 6, WaitFor: "second",
	})
	s, _ := m.Session(start.ID)
	p := newPerson(t, 30, 6)
	done := make(chan error, 1)
	go func() { done <- s.Attach(context.Background(), p.tty) }()
	p.sees("second")
	p.mu.Lock()
	got := p.scr.Lines()
	p.mu.Unlock()
	want := s.Screen().Lines
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the person sees\n%s\nthe session shows\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	p.types("hi\r")
	p.sees("got hi")
	if err := <-done; err != nil {
		t.Errorf("Attach when the program ended: %v, want nil", err)
	}
	res := mustWrite(t, m, WriteRequest{ID: start.ID, WaitMS: ms(5000)})
	if !strings.Contains(res.Output, "got hi") || !res.Exited {
		t.Errorf("the model's read: %+v", res)
	}
	if err := s.Attach(context.Background(), p.tty); !isErr(err, ErrExited) {
		t.Errorf("Attach to an exited session: %v, want ErrExited", err)
	}
}

// pipeReader is a person on a pipe: Attach reads the pipe's read end and
// writes what the person sees to a buffer.
type pipeReader struct {
	*os.File
	mu  sync.Mutex
	out bytes.Buffer
}

func (p *pipeReader) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

// A file that an Fd call put back into blocking mode takes a read
// deadline but never honours it: Attach still returns when its context
// ends, leaving the read under way to end when the pipe closes.
func TestAttachReturnsOnBlockingFile(t *testing.T) {
	m := newManager(t, Options{})
	start := mustStart(t, m, StartRequest{Command: readyCat, WaitFor: "ready"})
	s, _ := m.Session(start.ID)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() }) // before the manager's leak checks: the read left under way ends here
	defer w.Close()
	_ = r.Fd() // blocking from now on, as creack/pty's Fd does to a master
	if err := r.SetReadDeadline(time.Now().Add(time.Hour)); err != nil {
		t.Fatalf("the pipe takes no deadline (%v): the test would not show the fault", err)
	}
	_ = r.SetReadDeadline(time.Time{})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Attach(ctx, &pipeReader{File: r}) }()
	if _, err := w.WriteString("typed-in\r"); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, m, WriteRequest{ID: start.ID, WaitFor: "typed-in\ntyped-in"}) // attached and reading
	cancel()
	select {
	case err := <-done:
		if !isErr(err, context.Canceled) {
			t.Errorf("Attach after cancel: %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Attach did not return 5 s after its context ended: it waits for a read no deadline can cut")
	}
	w.Close() // the read left under way ends
	if _, err := m.Kill(context.Background(), start.ID); err != nil {
		t.Fatal(err)
	}
}
