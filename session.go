//go:build !windows

package agentpty

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/agentpty/agentpty/internal/proc"
	"github.com/agentpty/agentpty/internal/screen"
)

// Waits, as DESIGN.md fixes them.
const (
	defaultWait    = 700 * time.Millisecond
	defaultWaitFor = 10 * time.Second
	maxWait        = 30 * time.Second
	startQuiet     = 150 * time.Millisecond // start returns once output has paused this long
	exitDrain      = 25 * time.Millisecond  // after exit, output still arriving within this is the program's
	exitDrainMax   = 40                     // ... at most this many times over
	replyTimeout   = time.Second            // a program that asked a query but reads nothing
)

// ExitStatus says how a program ended.
type ExitStatus struct {
	// Code is the exit code of a normal exit, or -1 when a signal ended
	// the program.
	Code int
	// Signal names the signal that ended the program ("SIGKILL"), if any.
	Signal string
}

func (e ExitStatus) String() string {
	if e.Signal != "" {
		return "killed by " + e.Signal
	}
	return fmt.Sprintf("exit code %d", e.Code)
}

// exitFields renders an ExitStatus as the result fields.
func (e ExitStatus) exitFields() (*int, string) {
	if e.Signal != "" {
		return nil, e.Signal
	}
	c := e.Code
	return &c, ""
}

// Cursor is a zero-based screen position.
type Cursor struct{ Row, Col int }

// Screen is a snapshot of what the terminal shows, as a person would see it.
type Screen struct {
	Rows, Cols int
	Cursor     Cursor
	// AltScreen is true while a full-screen program (vim, less, htop) has
	// switched to the alternate screen.
	AltScreen bool
	// Lines holds each row's text, trailing blanks trimmed.
	Lines []string
}

// Text returns the screen's rows joined by newlines, trailing empty rows
// left out.
func (s Screen) Text() string {
	n := len(s.Lines)
	for n > 0 && s.Lines[n-1] == "" {
		n--
	}
	return strings.Join(s.Lines[:n], "\n")
}

// Session is one program running under its own pseudo-terminal. Its
// methods are safe for concurrent use.
type Session struct {
	m       *Manager
	num     int
	id      string
	command string
	cmd     *exec.Cmd
	pty     *os.File
	pid     int
	started time.Time

	writeMu sync.Mutex // one writer at a time on the terminal: input and query replies

	// mu guards the fields below. It is never held during I/O, while
	// calling a hook, or while the screen parses.
	mu         sync.Mutex
	ring       *ring
	settle     *settler
	readOff    int64 // ring offset up to which results have returned output
	truncated  int64
	changed    chan struct{} // closed and replaced when output arrives or the child exits
	lastOutput time.Time
	cols, rows int
	exited     bool // the child has been reaped; status is set
	status     ExitStatus
	eof        bool // the terminal has no writer left
	drained    bool // exited, and the output that was on its way has been read
	lastRows   []string
	idle, life *time.Timer

	// screenMu guards the screen; take it before mu, never under it.
	screenMu  sync.Mutex
	screen    *screen.Screen
	screenOff atomic.Int64 // ring offset the screen has been fed up to
	scratch   []byte

	done       chan struct{} // closed when drained
	reaped     chan struct{} // closed when the child has been reaped
	readerDone chan struct{}
	replies    sync.WaitGroup
	killOnce   sync.Once
	killRes    KillResult
	killErr    error
}

// startSession starts the child under a new terminal. On failure nothing
// is left behind.
func startSession(m *Manager, req StartRequest, cols, rows int) (*Session, error) {
	if req.Cwd != "" {
		if fi, err := os.Stat(req.Cwd); err != nil || !fi.IsDir() {
			return nil, errorf(ErrInvalid, "%s: cwd %q is not a directory", ToolStart, req.Cwd)
		}
	}
	argv := append(append([]string(nil), m.opts.Shell...), req.Command)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = req.Cwd
	cmd.Env = childEnv(m.opts.Env, req.Env)
	if m.opts.Sandbox != nil {
		if err := m.opts.Sandbox.Prepare(cmd); err != nil {
			return nil, fmt.Errorf("agentpty: %s %q: sandbox: %w", ToolStart, req.Command, err)
		}
	}
	// pty.Start's own attributes make the child a session leader with the
	// terminal as its controlling tty; keep whatever else the sandbox set.
	attrs := cmd.SysProcAttr
	if attrs == nil {
		attrs = &syscall.SysProcAttr{}
	}
	attrs.Setsid, attrs.Setctty, attrs.Setpgid = true, true, false
	// Sandbox hook: a sandbox that confines the starting thread (Landlock)
	// runs the start itself; see threadStarter in sandbox.go. The size is
	// captured, hence on the heap: creack/pty hands it to ioctl as a bare
	// uintptr, and the start may run on a fresh goroutine whose stack moves.
	var f *os.File
	size := &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}
	start := func() (err error) {
		f, err = pty.StartWithAttrs(cmd, size, attrs)
		runtime.KeepAlive(size)
		return err
	}
	var err error
	if ts, ok := m.opts.Sandbox.(threadStarter); ok {
		err = ts.startOnThread(cmd, start)
	} else {
		err = start()
	}
	if err != nil {
		return nil, fmt.Errorf("agentpty: %s %q: %w", ToolStart, req.Command, err)
	}
	s := &Session{
		m:          m,
		command:    req.Command,
		cmd:        cmd,
		pty:        f,
		pid:        cmd.Process.Pid,
		started:    time.Now(),
		ring:       newRing(m.opts.ScrollbackBytes),
		settle:     newSettler(m.opts.ScrollbackBytes),
		changed:    make(chan struct{}),
		cols:       cols,
		rows:       rows,
		screen:     screen.New(cols, rows),
		done:       make(chan struct{}),
		reaped:     make(chan struct{}),
		readerDone: make(chan struct{}),
	}
	go s.read()
	go s.reap()
	return s, nil
}

// childEnv is the host's environment with the terminal's own variables
// replaced: a stale COLUMNS or TMUX from the host would mislead programs.
func childEnv(extra ...[]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "TERM", "COLUMNS", "LINES", "TMUX", "TMUX_PANE", "STY":
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "TERM=xterm-256color")
	for _, e := range extra {
		env = append(env, e...)
	}
	return env
}

// ID returns the session's id, "pty-N".
func (s *Session) ID() string { return s.id }

// PID returns the child's process id, which is also its process group and
// session id.
func (s *Session) PID() int { return s.pid }

func (s *Session) info() SessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	info := SessionInfo{ID: s.id, PID: s.pid, Command: s.command, Cols: s.cols, Rows: s.rows, Started: s.started, Exited: s.exited}
	if s.exited {
		info.ExitCode, info.Signal = s.status.exitFields()
	}
	return info
}

// read is the one goroutine that reads the terminal. It feeds the ring and
// the settled text, wakes waiters, and keeps the screen from falling so far
// behind that the ring forgets what it has not parsed.
func (s *Session) read() {
	defer close(s.readerDone)
	buf := make([]byte, 32<<10)
	drains := 0
	for {
		n, err := s.pty.Read(buf)
		if n > 0 {
			s.feed(buf[:n])
		}
		switch {
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded):
			// reap set a deadline: the child has exited. Output it wrote
			// before exiting arrives within exitDrain; a background job
			// that keeps writing must not hold Wait forever.
			if drains++; drains < exitDrainMax && s.pending() > 0 {
				_ = s.pty.SetReadDeadline(time.Now().Add(exitDrain))
				continue
			}
			_ = s.pty.SetReadDeadline(time.Time{})
			s.finishDrain(false)
		default:
			// EIO on Linux: nothing holds the terminal open any more.
			s.finishDrain(true)
			return
		}
	}
}

// pending returns the bytes waiting in the terminal to be read.
func (s *Session) pending() int {
	n := 0
	if rc, err := s.pty.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			n, _ = unix.IoctlGetInt(int(fd), ioctlInq)
		})
	}
	return n
}

func (s *Session) feed(p []byte) {
	s.mu.Lock()
	s.ring.write(p)
	ev := s.settle.write(p)
	s.lastOutput = time.Now()
	s.broadcast()
	lag := s.ring.end() - s.screenOff.Load()
	s.mu.Unlock()
	if ev&evQuery != 0 || lag > int64(s.m.opts.ScrollbackBytes/2) {
		s.syncScreen()
	}
}

// broadcast wakes every waiter. Call with mu held.
func (s *Session) broadcast() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// reap waits for the child, records how it ended, and asks the reader to
// finish the output that was on its way.
func (s *Session) reap() {
	err := s.cmd.Wait()
	st := exitStatus(s.cmd.ProcessState, err)
	s.mu.Lock()
	s.exited = true
	s.status = st
	s.broadcast()
	eof := s.eof
	s.mu.Unlock()
	close(s.reaped)
	if eof {
		s.finishDrain(true)
	} else {
		_ = s.pty.SetReadDeadline(time.Now().Add(exitDrain))
	}
	code, sig := st.exitFields()
	s.m.emit(Event{Kind: EventExited, ID: s.id, PID: s.pid, Command: s.command, ExitCode: code, Signal: sig, Time: time.Now()})
}

// finishDrain records that the output is complete: at end of file, or once
// the child has exited and its last output has been read.
func (s *Session) finishDrain(eof bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if eof {
		s.eof = true
	}
	if s.exited && !s.drained {
		s.drained = true
		close(s.done)
		s.broadcast()
	}
}

func exitStatus(ps *os.ProcessState, err error) ExitStatus {
	if ps == nil {
		return ExitStatus{Code: -1, Signal: "unknown: " + err.Error()}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ExitStatus{Code: -1, Signal: unix.SignalName(ws.Signal())}
	}
	return ExitStatus{Code: ps.ExitCode()}
}

// syncScreen feeds the screen everything the ring holds that it has not
// parsed, and sends the replies the terminal owes for queries in it.
func (s *Session) syncScreen() {
	s.screenMu.Lock()
	defer s.screenMu.Unlock()
	s.mu.Lock()
	s.scratch, _ = s.ring.appendFrom(s.scratch[:0], s.screenOff.Load())
	end := s.ring.end()
	s.mu.Unlock()
	if len(s.scratch) == 0 {
		return
	}
	reply := s.screen.Write(nil, s.scratch)
	s.screenOff.Store(end)
	if cap(s.scratch) > 64<<10 {
		s.scratch = nil // an idle session keeps no catch-up buffer
	}
	if len(reply) > 0 {
		// A reply must not block the reader or the screen: the program that
		// asked may not read it at once.
		s.replies.Add(1)
		go func() {
			defer s.replies.Done()
			_, _ = s.writeTerminal(context.Background(), reply, time.Now().Add(replyTimeout))
		}()
	}
}

// writeTerminal types p, giving up at deadline or when ctx ends.
func (s *Session) writeTerminal(ctx context.Context, p []byte, deadline time.Time) (int, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	_ = s.pty.SetWriteDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = s.pty.SetWriteDeadline(time.Now()) })
	n, err := s.pty.Write(p)
	stop()
	_ = s.pty.SetWriteDeadline(time.Time{})
	return n, err
}

// Screen returns what the terminal shows now.
func (s *Session) Screen() Screen {
	s.syncScreen()
	s.screenMu.Lock()
	defer s.screenMu.Unlock()
	return s.snapshot()
}

// snapshot reads the screen. Call with screenMu held.
func (s *Session) snapshot() Screen {
	cols, rows := s.screen.Size()
	r, c := s.screen.Cursor()
	return Screen{Rows: rows, Cols: cols, Cursor: Cursor{Row: r, Col: c}, AltScreen: s.screen.AltScreen(), Lines: s.screen.Lines()}
}

// Resize changes the terminal's size; the program gets SIGWINCH.
func (s *Session) Resize(cols, rows int) error {
	if cols < 1 || cols > 1000 || rows < 1 || rows > 500 {
		return errorf(ErrInvalid, "%s: size %dx%d is outside 1-1000 columns by 1-500 rows", s.id, cols, rows)
	}
	s.syncScreen()
	s.screenMu.Lock()
	defer s.screenMu.Unlock()
	s.mu.Lock()
	exited := s.exited
	s.mu.Unlock()
	if exited {
		return errorf(ErrExited, "%s: cannot resize, the program has exited (%s)", s.id, s.status)
	}
	if err := pty.Setsize(s.pty, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}); err != nil {
		return fmt.Errorf("agentpty: %s: resize to %dx%d: %w", s.id, cols, rows, err)
	}
	s.screen.Resize(cols, rows)
	s.mu.Lock()
	s.cols, s.rows = cols, rows
	s.mu.Unlock()
	return nil
}

// Wait returns how the program ended, once it has exited and the output
// that was on its way has been read and rendered.
func (s *Session) Wait(ctx context.Context) (ExitStatus, error) {
	select {
	case <-s.done:
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.status, nil
	case <-ctx.Done():
		return ExitStatus{}, fmt.Errorf("agentpty: %s: wait: %w", s.id, ctx.Err())
	}
}

// waitResult is what a wait collected, shared by start and write.
type waitResult struct {
	output      string
	matched     bool
	exited      bool
	exitCode    *int
	signal      string
	truncated   int64
	inputHidden bool
}

// waitLimit turns the request's wait into a duration.
func waitLimit(waitFor string, waitMS *int) time.Duration {
	d := defaultWait
	switch {
	case waitMS != nil:
		d = time.Duration(*waitMS) * time.Millisecond
	case waitFor != "":
		d = defaultWaitFor
	}
	return min(d, maxWait)
}

// write types input, then waits and collects as pty-write does.
func (s *Session) write(ctx context.Context, input []byte, waitFor string, waitMS *int) (WriteResult, error) {
	s.touch()
	s.mu.Lock()
	exited, st := s.exited, s.status
	s.mu.Unlock()
	if exited && len(input) > 0 {
		return WriteResult{}, errorf(ErrExited, "%s %s: the program has exited (%s); write no input to read what is left, or kill it", ToolWrite, s.id, st)
	}
	deadline := time.Now().Add(waitLimit(waitFor, waitMS))
	if len(input) > 0 {
		if n, err := s.writeTerminal(ctx, input, deadline); err != nil {
			if ctx.Err() != nil {
				return WriteResult{}, fmt.Errorf("agentpty: %s %s: typed %d of %d bytes: %w", ToolWrite, s.id, n, len(input), ctx.Err())
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return WriteResult{}, fmt.Errorf("agentpty: %s %s: typed %d of %d bytes before the wait ran out; the program is not reading its input: %w", ToolWrite, s.id, n, len(input), err)
			}
			return WriteResult{}, fmt.Errorf("agentpty: %s %s: typed %d of %d bytes: %w", ToolWrite, s.id, n, len(input), err)
		}
	}
	w, err := s.waitUntil(ctx, waitFor, deadline, false)
	if err != nil {
		return WriteResult{}, err
	}
	return WriteResult{ID: s.id, Output: w.output, Matched: w.matched, Exited: w.exited, ExitCode: w.exitCode,
		Signal: w.signal, Truncated: w.truncated, InputHidden: w.inputHidden}, nil
}

// wait is start's wait: as write's, but with neither wait_for nor wait_ms
// it returns once output has appeared and paused.
func (s *Session) wait(ctx context.Context, waitFor string, waitMS *int) (waitResult, error) {
	quiet := waitFor == "" && waitMS == nil
	return s.waitUntil(ctx, waitFor, time.Now().Add(waitLimit(waitFor, waitMS)), quiet)
}

// waitUntil blocks until waitFor appears in new output, the child exits,
// the deadline passes, or (quiet) output has appeared and paused; then it
// collects the result. Only the reader wakes it: nothing polls.
func (s *Session) waitUntil(ctx context.Context, waitFor string, deadline time.Time, quiet bool) (waitResult, error) {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var pause *time.Timer
	var pauseC <-chan time.Time
	defer func() {
		if pause != nil {
			pause.Stop()
		}
	}()
	matched := false
	for {
		s.mu.Lock()
		if waitFor != "" && s.settle.match(waitFor) {
			matched = true
		}
		drained, alt, ch := s.drained, s.settle.altScreen(), s.changed
		var since time.Duration
		hasOutput := quiet && s.settle.unread()
		if hasOutput {
			since = time.Since(s.lastOutput)
		}
		s.mu.Unlock()
		if !matched && waitFor != "" && alt {
			matched = s.screenMatch(waitFor)
		}
		if matched || drained || (hasOutput && since >= startQuiet) {
			break
		}
		if hasOutput {
			if pause == nil {
				pause = time.NewTimer(startQuiet - since)
				pauseC = pause.C
			} else {
				pause.Reset(startQuiet - since)
			}
		}
		select {
		case <-ch:
		case <-pauseC:
		case <-timer.C:
			return s.collect(matched), nil
		case <-ctx.Done():
			return waitResult{}, fmt.Errorf("agentpty: %s: wait: %w", s.id, ctx.Err())
		}
	}
	return s.collect(matched), nil
}

// screenMatch reports whether lit appears in a screen row that changed
// since the last read, for full-screen programs whose output is the screen.
func (s *Session) screenMatch(lit string) bool {
	s.syncScreen()
	s.screenMu.Lock()
	lines := s.screen.Lines()
	s.screenMu.Unlock()
	s.mu.Lock()
	last := s.lastRows
	s.mu.Unlock()
	for i, l := range lines {
		if (i >= len(last) || l != last[i]) && strings.Contains(l, lit) {
			return true
		}
	}
	return false
}

// collect takes everything new as one result and marks it read.
func (s *Session) collect(matched bool) waitResult {
	s.mu.Lock()
	out := s.settle.read(s.m.opts.MaxOutputBytes)
	if start := s.ring.start(); start > s.readOff {
		s.truncated += start - s.readOff
	}
	s.readOff = s.ring.end()
	w := waitResult{matched: matched, exited: s.exited, truncated: s.truncated}
	if s.exited {
		w.exitCode, w.signal = s.status.exitFields()
	}
	alt := s.settle.altScreen()
	s.mu.Unlock()

	if alt {
		scr := s.Screen()
		s.mu.Lock()
		s.lastRows = scr.Lines
		s.mu.Unlock()
		if out != "" {
			out += "\n"
		}
		out += scr.Text()
	}
	w.output = out
	w.inputHidden = s.echoOff()
	return w
}

// echoOff reports a terminal in line mode that does not echo: a password
// prompt. Readline and full-screen programs turn echo off too, but they
// also leave line mode, so they do not count.
func (s *Session) echoOff() bool {
	var t *unix.Termios
	if rc, err := s.pty.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			t, _ = unix.IoctlGetTermios(int(fd), ioctlGetTermios)
		})
	}
	return t != nil && t.Lflag&unix.ECHO == 0 && t.Lflag&unix.ICANON != 0
}

// touch restarts the idle clock.
func (s *Session) touch() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idle != nil {
		s.idle.Reset(s.m.opts.IdleTimeout)
	}
}

// armTimers starts the host's bounds on the session. Called with the
// manager's mu held, once the session has its id.
func (s *Session) armTimers() {
	reap := func() { _, _ = s.m.end(context.Background(), s, EventReaped) }
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.m.opts.IdleTimeout; d > 0 {
		s.idle = time.AfterFunc(d, reap)
	}
	if d := s.m.opts.MaxLifetime; d > 0 {
		s.life = time.AfterFunc(d, reap)
	}
}

// kill ends the session once; later calls return the first result.
func (s *Session) kill(ctx context.Context) (KillResult, error) {
	s.killOnce.Do(func() { s.killRes, s.killErr = s.doKill(ctx) })
	return s.killRes, s.killErr
}

// doKill does what closing a terminal does, then makes sure: SIGHUP and
// SIGTERM to every process group of the child's session, SIGKILL to what
// is left after KillGrace, then reap, close and collect.
func (s *Session) doKill(ctx context.Context) (KillResult, error) {
	s.mu.Lock()
	for _, t := range []*time.Timer{s.idle, s.life} {
		if t != nil {
			t.Stop()
		}
	}
	s.mu.Unlock()

	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM, syscall.SIGCONT} {
		proc.Signal(s.pid, sig)
	}
	grace, cancel := context.WithTimeout(ctx, s.m.opts.KillGrace)
	err := proc.WaitGone(grace, s.pid)
	cancel()
	if err != nil {
		proc.Signal(s.pid, syscall.SIGKILL)
		// SIGKILL cannot be caught; this only waits for the kernel.
		final, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = proc.WaitGone(final, s.pid)
		cancel()
		if err != nil {
			err = fmt.Errorf("agentpty: %s %s: processes of the session survived SIGKILL: %v", ToolKill, s.id, proc.Members(s.pid))
		}
	}
	<-s.reaped
	closeErr := s.pty.Close()
	<-s.readerDone
	s.replies.Wait()
	s.finishDrain(true)

	s.mu.Lock()
	out := s.settle.read(s.m.opts.MaxOutputBytes)
	res := KillResult{ID: s.id, Output: out}
	res.ExitCode, res.Signal = s.status.exitFields()
	s.mu.Unlock()
	if err == nil && closeErr != nil {
		err = fmt.Errorf("agentpty: %s %s: close terminal: %w", ToolKill, s.id, closeErr)
	}
	return res, err
}
