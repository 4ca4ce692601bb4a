package agentpty

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
	maxReplyBytes  = 4 << 10                // query replies waiting to be typed; more are dropped
	screenPiece    = 128                    // the screen parses this much between checks for a Kill
	minTyping      = 500 * time.Millisecond // the least time input gets to reach a program that reads slowly
)

// ExitStatus says how a program ended.
type ExitStatus struct {
	// Code is the exit code of a normal exit, or -1 when a signal ended
	// the program.
	Code int
	// Signal names the signal that ended the program ("SIGKILL"), if any.
	Signal string
}

// String says how the program ended: "exit code 3" or "killed by SIGKILL".
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
type Cursor struct {
	Row int `json:"row"`
	Col int `json:"col"`
}

// Screen is a snapshot of what the terminal shows, as a person would see it.
type Screen struct {
	Rows, Cols int
	Cursor     Cursor
	// AltScreen is true while a full-screen program (vim, less, htop) has
	// switched to the alternate screen.
	AltScreen bool
	// Lines holds each row's text, trailing blanks trimmed.
	Lines []string
	// Cells holds every cell, row by row (Rows rows of Cols cells), with
	// its character, width and attributes. Session.Screen fills it.
	Cells [][]Cell
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
	term    Terminal
	pid     int
	started time.Time
	cells   int // cols×rows counted against MaxCells; guarded by the manager's mu

	// writeMu: one writer at a time on the terminal, input and query
	// replies. It is held across the write, as poll.FD holds its own.
	writeMu sync.Mutex
	lane    lane        // one call at a time, in arrival order; taken before any lock below
	dying   atomic.Bool // Kill has begun: no more writes; set before, and the terminal closed under, writeMu

	// inMu guards the ring, which the reader fills; the renderer copies
	// from it and the screen takes slices of it to read in place. It is
	// held only for those, so the reader never waits behind rendering.
	inMu sync.Mutex
	ring *ring

	// mu guards the fields below. It is never held during I/O or while
	// calling a hook. Lock order: screenMu, then mu, then inMu.
	mu         sync.Mutex
	settle     *settler
	settled    atomic.Int64 // ring offset the settler has rendered up to; written under mu
	readOff    int64        // ring offset up to which results have returned output
	truncated  int64
	changed    chan struct{} // made by a waiter, closed and dropped when output is rendered or the child exits
	lastOutput time.Time
	frameEnd   int64 // ring offset of the end of the last batch that ended a synchronized update
	cols, rows int
	exited     bool // the child has been reaped; status is set
	status     ExitStatus
	drainSeen  bool        // the reader has read what was on its way at exit (or hit end of file) ...
	drainOff   int64       // ... up to this ring offset
	drained    bool        // exited, and everything up to drainOff is rendered
	sh         *shell      // a shell session's prompt marks; nil for other sessions
	idle, life *time.Timer // nil once killed
	calls      int         // calls in progress; the idle clock waits for none

	// screenMu guards the screen, made on first use (many sessions never
	// need one); take it before mu, never under it.
	screenMu  sync.Mutex
	screen    *screen.Screen
	shown     []string     // the rows the last read returned while the alternate screen showed, else nil
	lit       litMemory    // the highlights the screen-mode reads returned; guarded by screenMu
	screenOff atomic.Int64 // ring offset the screen has been fed up to
	// nonPlainEnd is the end of the last rendered batch that held more than
	// plain text; the screen may skip plain text after it without a scan.
	nonPlainEnd atomic.Int64

	renderMu    sync.Mutex    // one renderer at a time: the reader, or the processor when the reader found it busy
	kick        chan struct{} // the reader tells the processor there is work (1-buffered)
	progress    chan struct{} // the processor tells a throttled reader it did some (1-buffered)
	queries     atomic.Bool   // the settler saw a query the screen has not parsed yet
	answering   atomic.Int32  // screen parses and query replies under way (see State)
	parses      atomic.Int64  // screen parses begun, each of which may type an answer (see State)
	batch       []byte        // the renderer's copy of what it renders next, when not the read itself
	done        chan struct{} // closed when drained
	reaped      chan struct{} // closed when the child has been reaped
	announced   chan struct{} // closed once Start has emitted "created" (or given up)
	readerDone  chan struct{}
	processDone chan struct{}
	replies     sync.WaitGroup // the reply writer, while it runs
	// Query replies waiting for the reply writer, under mu; at most
	// maxReplyBytes. replyCount of them are counted in answering.
	replyQueue   []byte
	replyCount   int32
	replyRunning bool // the reply writer is running
	noReplies    bool // the session is being killed: replies are not sent
	killOnce     sync.Once
	killRes      KillResult
	killErr      error

	around // secrets, recordings, attachments and Expect: see secret.go, tap.go, expect.go
	// Output events (events.go). watchers is guarded by the manager's mu.
	outArmed atomic.Bool  // an output event is due
	outLast  atomic.Int64 // when the last one was sent, unix ns
	outTimer atomic.Pointer[time.Timer]
	watched  atomic.Int32 // len(watchers), read without the lock
	watchers []*watcher
}

// startSession starts the child under a new terminal. On failure nothing
// is left behind.
// from, when set, says how to run the command instead of the login shell
// (a snapshot of it, see Options.ShellSnapshot).
func startSession(m *Manager, num int, req StartRequest, cols, rows int, from *snapshotStart) (*Session, error) {
	if m.opts.Backend != nil {
		return startRemote(m, num, req, cols, rows)
	}
	if req.Cwd != "" {
		if fi, err := os.Stat(req.Cwd); err != nil || !fi.IsDir() {
			return nil, errorf(ErrInvalid, "%s: cwd %q is not a directory", ToolStart, req.Cwd)
		}
	}
	argv := append(append([]string(nil), m.opts.Shell...), req.Command)
	var env []string
	var sh *shell
	// Made before the child, so a sandbox keeps it read-only from the first.
	priv, err := m.priv.get(m.opts.Sandbox)
	if err != nil {
		return nil, fmt.Errorf("agentpty: %s %q: %w", ToolStart, req.Command, err)
	}
	if req.Shell {
		snapshot := ""
		if from != nil {
			snapshot = from.path
		}
		if sh, err = newShell(priv, num, snapshot); err != nil {
			return nil, fmt.Errorf("agentpty: %s %q: %w", ToolStart, req.Command, err)
		}
		argv = sh.argv()
	} else if from != nil {
		argv, env = from.argv, from.env
	}
	env = sessionEnv(historyEnv(req.Shell, filepath.Join(priv, pythonStartupName), m.opts.Env, req.Env), m.opts.Env, req.Env, env)
	term, err := localBackend{m}.Start(context.Background(), Command{Argv: argv, Env: env, Dir: req.Cwd, Cols: cols, Rows: rows, Name: "pty-" + strconv.Itoa(num)})
	if err != nil {
		sh.remove()
		return nil, fmt.Errorf("agentpty: %s %q: %w", ToolStart, req.Command, err)
	}
	return newSession(m, num, req, cols, rows, term, sh), nil
}

// newSession coordinates the parts of a session whose command runs under
// term, and starts its goroutines.
func newSession(m *Manager, num int, req StartRequest, cols, rows int, term Terminal, sh *shell) *Session {
	s := &Session{
		m:           m,
		num:         num,
		id:          "pty-" + strconv.Itoa(num),
		command:     req.Command,
		term:        term,
		pid:         term.PID(),
		cells:       cols * rows,
		started:     time.Now(),
		ring:        newRing(m.opts.ScrollbackBytes),
		settle:      newSettler(2 * m.opts.ScrollbackBytes), // its text plus bookkeeping of about 16 bytes a line
		cols:        cols,
		rows:        rows,
		kick:        make(chan struct{}, 1),
		progress:    make(chan struct{}, 1),
		done:        make(chan struct{}),
		reaped:      make(chan struct{}),
		announced:   make(chan struct{}),
		readerDone:  make(chan struct{}),
		processDone: make(chan struct{}),
		sh:          sh,
	}
	if sh != nil {
		sh.attach(s.settle)
	}
	// Readline and other line editors move by screen row once a line is
	// wider than the terminal; the settler needs the width to follow them,
	// and the height to keep motion on the screen.
	s.settle.setCols(cols)
	s.settle.setRows(rows)
	s.settle.keepCol = true // the pty's ONLCR adds the CR where output processing is on
	go s.read()
	go s.process()
	go s.reap()
	return s
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
	info := SessionInfo{ID: s.id, PID: s.pid, Command: s.command, Cols: s.cols, Rows: s.rows, Started: s.started, Exited: s.exited,
		Containment: s.Containment()}
	if s.exited {
		info.ExitCode, info.Signal = s.status.exitFields()
	}
	return info
}

// read is the one goroutine that reads the terminal. Each read goes to
// feed, which renders the settled text and leaves the screen to the
// processor, so the terminal is drained at the speed of the kernel.
func (s *Session) read() {
	defer close(s.readerDone)
	// A small buffer until a read fills it: most sessions sit idle, and a
	// flood finds the full size after its first read.
	size := s.readSize()
	buf := make([]byte, min(1<<10, size))
	for {
		n, err := s.term.Read(buf)
		if n > 0 {
			s.take(buf[:n])
		}
		if n == len(buf) && n < size {
			buf = make([]byte, size)
		}
		switch {
		case err == nil:
		case err == errExitDrained:
			// What the program wrote before it exited is read; a
			// background job may still write.
			s.drainSeenAt()
		default:
			s.drainSeenAt()
			return
		}
	}
}

// feed stores p in the ring and renders it into the settled text, which
// keeps pace with any terminal; the screen, which may not, is left to the
// processor. When the processor is busy rendering, feed leaves p to it.
// When rendering or the screen falls half a ring behind, the reader waits,
// so no byte leaves the ring unseen and the program feels the
// back-pressure as it would from a slow terminal.
func (s *Session) feed(p []byte) {
	limit := s.lag()
	for s.ring.end()-min(s.settled.Load(), s.screenOff.Load()) > limit {
		s.kickProcessor()
		<-s.progress
	}
	s.inMu.Lock()
	s.ring.write(p)
	end := s.ring.end()
	s.inMu.Unlock()
	if s.renderMu.TryLock() {
		if s.settled.Load() == end-int64(len(p)) {
			s.renderBatch(p, end) // p is all that is new: no copy
		} else {
			s.renderLocked() // the processor left some behind
		}
		s.renderMu.Unlock()
	} else {
		s.kickProcessor()
	}
	if s.screenDue(end) {
		s.kickProcessor()
	}
}

// lag is how far rendering or the screen may fall behind the reader
// before it waits: half a ring. A read (see readSize) then never writes
// over bytes not yet rendered and parsed, which can therefore be read in
// place.
func (s *Session) lag() int64 { return int64(s.m.opts.ScrollbackBytes / 2) }

// readSize is the most the reader takes in one read: at most what the ring
// holds beyond the lag.
func (s *Session) readSize() int {
	return min(16<<10, max(s.m.opts.ScrollbackBytes-int(s.lag()), 1))
}

// kickProcessor tells the processor there is work, without waiting.
func (s *Session) kickProcessor() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// drainSeenAt records that the reader has everything the program wrote up
// to now; Wait returns once that much is rendered.
func (s *Session) drainSeenAt() {
	s.flushMask() // nothing more comes to complete a secret held back
	s.inMu.Lock()
	end := s.ring.end()
	s.inMu.Unlock()
	s.mu.Lock()
	if !s.drainSeen {
		s.drainSeen, s.drainOff = true, end
		s.checkDrained()
	}
	s.mu.Unlock()
}

// process renders what the reader left to it, and feeds the screen when a
// query needs an answer or the screen falls far behind. It runs until the
// reader has stopped and everything is rendered.
func (s *Session) process() {
	defer close(s.processDone)
	for {
		select {
		case <-s.kick:
		case <-s.readerDone:
			s.render()
			return
		}
		s.render()
		s.inMu.Lock()
		end := s.ring.end()
		s.inMu.Unlock()
		if s.screenDue(end) {
			s.syncScreen()
		}
		select {
		case s.progress <- struct{}{}:
		default:
		}
	}
}

// screenDue reports whether the screen must parse what it has not, up to
// ring offset end: a query awaits its answer, or the ring would soon drop
// bytes it never saw.
func (s *Session) screenDue(end int64) bool {
	return s.queries.Load() || end-s.screenOff.Load() > s.lag()
}

// render takes everything new from the ring in batches.
func (s *Session) render() {
	s.renderMu.Lock()
	defer s.renderMu.Unlock()
	s.renderLocked()
}

// renderLocked is render with renderMu held.
func (s *Session) renderLocked() {
	for {
		var end int64
		s.batch, end = s.copyFrom(s.batch, s.settled.Load())
		if len(s.batch) == 0 {
			break
		}
		s.renderBatch(s.batch, end)
	}
	if cap(s.batch) > 64<<10 {
		s.batch = nil // an idle session keeps no large batch buffer
	}
}

// renderBatch renders the ring's bytes from settled up to end, which are
// batch, into the settled text and wakes the waiters. Call
// with renderMu held.
func (s *Session) renderBatch(batch []byte, end int64) {
	s.mu.Lock()
	ev := s.settle.write(batch)
	if ev&evNonPlain != 0 {
		s.nonPlainEnd.Store(end)
	}
	if ev&evSyncEnd != 0 {
		s.frameEnd = end
	}
	if ev&evQuery != 0 {
		s.queries.Store(true) // before settled: State never sees the query rendered but not owed
	}
	s.settled.Store(end)
	s.lastOutput = time.Now()
	s.broadcast()
	s.checkDrained()
	s.mu.Unlock()
	s.outputChanged()
}

// copyFrom copies the ring's bytes from off into buf, reusing its memory,
// and returns them with the offset they end at. inMu is held only for the
// copy.
func (s *Session) copyFrom(buf []byte, off int64) ([]byte, int64) {
	s.inMu.Lock()
	defer s.inMu.Unlock()
	buf, _ = s.ring.appendFrom(buf[:0], off)
	return buf, s.ring.end()
}

// broadcast wakes every waiter. Call with mu held.
func (s *Session) broadcast() {
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// changes returns the channel the next broadcast closes, made only when
// someone waits, so rendering with no waiter allocates nothing. Call with mu
// held.
func (s *Session) changes() <-chan struct{} {
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

// checkDrained marks the output complete once the child has exited and
// what was on its way is rendered. Call with mu held.
func (s *Session) checkDrained() {
	if s.exited && s.drainSeen && !s.drained && s.settled.Load() >= s.drainOff {
		s.drained = true
		close(s.done)
		s.broadcast()
	}
}

// reap waits for the child, records how it ended, and asks the reader to
// finish the output that was on its way.
func (s *Session) reap() {
	st, err := s.term.Wait()
	if err != nil {
		st = ExitStatus{Code: -1, Signal: "unknown: " + err.Error()}
	}
	s.mu.Lock()
	s.exited = true
	s.status = st
	s.broadcast()
	s.checkDrained()
	s.mu.Unlock()
	// Emitted before kill can see the child reaped, so "exited" always
	// comes before "killed".
	code, sig := st.exitFields()
	<-s.announced // a program that exits at once must not be reported before it was created
	s.m.emit(Event{Kind: EventExited, ID: s.id, PID: s.pid, Command: s.command, ExitCode: code, Signal: sig, Time: time.Now()})
	close(s.reaped)
}

// syncScreen feeds the screen everything the ring holds that it has not
// parsed, and sends the replies the terminal owes for queries in it.
func (s *Session) syncScreen() {
	s.screenMu.Lock()
	defer s.screenMu.Unlock()
	s.syncScreenLocked()
}

// syncScreenLocked is syncScreen with screenMu held.
func (s *Session) syncScreenLocked() { s.syncScreenBy(time.Time{}) }

// callSync bounds how long a call parses the screen on its own behalf: a
// program can print faster than the screen parses (a full clear of a
// 1000x500 screen per byte pair), and a read must not wait on that for
// good. The processor goroutine catches up without a bound.
const callSync = time.Second

// syncScreenCall is syncScreenLocked for a call: it parses for at most
// callSync and reports whether the screen holds everything the ring does.
func (s *Session) syncScreenCall() bool { return s.syncScreenBy(time.Now().Add(callSync)) }

// syncScreenBy is syncScreenLocked that stops at limit (none when zero)
// and reports whether it parsed everything.
func (s *Session) syncScreenBy(limit time.Time) bool {
	if s.screen == nil {
		cols, rows := s.size()
		s.screen = screen.New(cols, rows)
	}
	s.answering.Add(1) // held over from the query flag to the reply queued (see queueReply)
	s.parses.Add(1)
	defer s.answering.Add(-1)
	s.queries.Store(false) // whatever asked is in what is parsed now
	// The screen reads the ring in place: the reader does not write over
	// bytes the screen has not parsed (see feed), so only taking the slices
	// needs the lock.
	s.inMu.Lock()
	a, b, _ := s.ring.slices(s.screenOff.Load())
	end := s.ring.end()
	s.inMu.Unlock()
	from := end - int64(len(a)+len(b))
	if from == end {
		return true
	}
	// What the settler has already seen to be plain text needs no scan to
	// find the part that scrolled away unseen.
	// settled before nonPlainEnd: the renderer stores them the other way
	// round, so a batch counted as settled here has its flag seen too.
	settled := s.settled.Load()
	plain := int64(0)
	if from >= s.nonPlainEnd.Load() {
		plain = max(min(settled, end)-from, 0)
	}
	var reply []byte
	off := from
	late := false
	for _, p := range [2][]byte{a, b} {
		k := min(int64(len(p)), plain)
		if k > 0 {
			reply = s.screen.WritePlain(reply, p[:k])
		}
		plain -= k
		off += k
		// In pieces, so that a Kill need not wait for a screen that has
		// much to parse: a dying session's screen stops where it is, and
		// a call's where its time is up.
		for p = p[k:]; len(p) > 0 && !s.dying.Load(); p = p[min(len(p), screenPiece):] {
			if !limit.IsZero() && time.Now().After(limit) {
				late = true
				break
			}
			n := min(len(p), screenPiece)
			reply = s.screen.Write(reply, p[:n])
			off += int64(n)
		}
		if late {
			break
		}
	}
	if late {
		s.screenOff.Store(off)
	} else {
		s.screenOff.Store(end)
	}
	s.queueReply(reply)
	return !late
}

// typeInput types input as writeTerminal does, after telling the taps
// (recordings with RecordInput) what is typed: every path that types
// input, not query answers, goes through it.
func (s *Session) typeInput(ctx context.Context, p []byte, deadline time.Time) (int, error) {
	s.tapInput(p)
	return s.writeTerminal(ctx, p, deadline)
}

// writeTerminal types p, giving up at deadline or when ctx ends.
// A write that Kill overtakes fails with ErrNoSession.
func (s *Session) writeTerminal(ctx context.Context, p []byte, deadline time.Time) (int, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.dying.Load() {
		return 0, s.errKilled()
	}
	// Most input fits in the local terminal's buffer at once; only what
	// does not needs a deadline.
	done := 0
	if tw, ok := s.term.(interface{ tryWrite([]byte) int }); ok {
		if done = tw.tryWrite(p); done == len(p) {
			return done, nil
		}
	}
	p = p[done:]
	_ = s.term.SetWriteDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = s.term.SetWriteDeadline(time.Now()) })
	n, err := s.term.Write(p)
	stop()
	_ = s.term.SetWriteDeadline(time.Time{})
	if err != nil && s.dying.Load() {
		err = s.errKilled()
	}
	return done + n, err
}

func (s *Session) errKilled() error {
	return errorf(ErrNoSession, "%s: the session was killed", s.id)
}

// stopWrites makes every write from now on fail with ErrNoSession and
// wakes one under way.
func (s *Session) stopWrites() {
	s.dying.Store(true)
	_ = s.term.SetWriteDeadline(time.Now())
}

// size is the terminal's size.
func (s *Session) size() (cols, rows int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cols, s.rows
}

// ended reports how the program ended, once it has.
func (s *Session) ended() (ExitStatus, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status, s.exited
}

// Send types text into the terminal as it is (no escape decoding: a Go
// string can hold control bytes itself) and returns without reading any
// output. It is for Go code that drives a program directly.
func (s *Session) Send(text string) error {
	defer s.use()()
	st, exited := s.ended()
	if exited {
		return errorf(ErrExited, "%s: send: the program has exited (%s)", s.id, st)
	}
	if n, err := s.typeInput(context.Background(), []byte(text), time.Now().Add(maxWait)); err != nil {
		return fmt.Errorf("agentpty: %s: send: typed %d of %d bytes: %w", s.id, n, len(text), err)
	}
	return nil
}

// Signal sends sig to the program's foreground process group, as a key
// such as Ctrl-C would, or to the session's leader when there is none.
func (s *Session) Signal(sig os.Signal) error {
	st, exited := s.ended()
	if exited {
		return errorf(ErrExited, "%s: signal %v: the program has exited (%s)", s.id, sig, st)
	}
	if err := s.term.Signal(sig); err != nil {
		return fmt.Errorf("agentpty: %s: signal %v: %w", s.id, sig, err)
	}
	return nil
}

// Tail returns the last n lines of the settled scrollback, read or not,
// the line being written last (when it has text): for a status line or a
// host's view of a session. It reads nothing.
func (s *Session) Tail(n int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.settle.tail(n)
}

// Scrollback returns the settled scrollback the session keeps, read or
// not, lines joined by newlines. It reads nothing.
func (s *Session) Scrollback() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.settle.scrollback()
}

// Screen returns what the terminal shows now.
func (s *Session) Screen() Screen {
	s.screenMu.Lock()
	defer s.screenMu.Unlock()
	s.syncScreenLocked()
	scr := s.snapshot()
	scr.Cells = s.screen.Cells()
	return scr
}

// snapshot reads the screen. Call with screenMu held.
func (s *Session) snapshot() Screen {
	cols, rows := s.screen.Size()
	r, c := s.screen.Cursor()
	return Screen{Rows: rows, Cols: cols, Cursor: Cursor{Row: r, Col: c}, AltScreen: s.screen.AltScreen(), Lines: s.screen.Lines()}
}

// Resize changes the terminal's size; the program gets SIGWINCH.
func (s *Session) Resize(cols, rows int) error {
	if cols < 1 || cols > maxCols || rows < 1 || rows > maxRows {
		return errorf(ErrInvalid, "%s: size %dx%d is outside 1-%d columns by 1-%d rows", s.id, cols, rows, maxCols, maxRows)
	}
	s.screenMu.Lock()
	defer s.screenMu.Unlock()
	st, exited := s.ended()
	if exited {
		return errorf(ErrExited, "%s: cannot resize, the program has exited (%s)", s.id, st)
	}
	old, err := s.m.recount(s, cols*rows)
	if err != nil {
		return err
	}
	s.syncScreenLocked() // what came before the resize is parsed at the old size
	if err := s.term.Resize(cols, rows); err != nil {
		_, _ = s.m.recount(s, old)
		return fmt.Errorf("agentpty: %s: resize to %dx%d: %w", s.id, cols, rows, err)
	}
	s.screen.Resize(cols, rows)
	s.tapResize(cols, rows) // with screenMu held: at the place in the output where it happened
	s.mu.Lock()
	s.settle.setCols(cols)
	s.settle.setRows(rows)
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
	// foregroundExe is the executable of the program at a password
	// prompt, while inputHidden.
	foregroundExe string
	spool         string
	state         TerminalState
	cursor        *Cursor     // with a screen mode (screenview.go)
	highlights    []Highlight // ...
}

// waitLimit turns the request's wait into a duration.
func waitLimit(want *waitSpec, waitMS *int) time.Duration {
	d := defaultWait
	switch {
	case waitMS != nil:
		d = time.Duration(*waitMS) * time.Millisecond
	case want != nil:
		d = defaultWaitFor
	}
	return min(d, maxWait)
}

// write types input, then waits and collects as pty-write does.
func (s *Session) write(ctx context.Context, input []byte, want *waitSpec, waitMS *int, v callView) (WriteResult, error) {
	defer s.use()() // a long wait is use, not idleness
	leave, err := s.turn(ctx, ToolWrite)
	if err != nil {
		return WriteResult{}, err
	}
	defer leave()
	return s.writeInTurn(ctx, input, want, waitMS, v)
}

// writeInTurn is write once the call has its turn.
func (s *Session) writeInTurn(ctx context.Context, input []byte, want *waitSpec, waitMS *int, v callView) (WriteResult, error) {
	if err := s.checkInputWait(ToolWrite, v.waitUntil); err != nil {
		return WriteResult{}, err
	}
	st, exited := s.ended()
	if exited && len(input) > 0 {
		return WriteResult{}, errorf(ErrExited, "%s %s: the program has exited (%s); write no input to read what is left, or kill it", ToolWrite, s.id, st)
	}
	before, err := s.beforeTyping(v)
	if err != nil {
		return WriteResult{}, err
	}
	deadline := time.Now().Add(untilLimit(want, waitMS, v.waitUntil))
	if len(input) > 0 && want != nil && !v.secret {
		s.mu.Lock()
		want.typed(s.settle, input)
		s.mu.Unlock()
	}
	ends := s.shellEnds()
	if len(input) > 0 {
		// Even a call that will not wait for output gets a moment to type.
		typing := deadline
		if least := time.Now().Add(minTyping); typing.Before(least) {
			typing = least
		}
		if n, err := s.typeInput(ctx, input, typing); err != nil {
			why := ""
			switch {
			case ctx.Err() != nil:
				err = ctx.Err()
			case errors.Is(err, os.ErrDeadlineExceeded):
				why = " before the wait ran out; the program is not reading its input"
			}
			return WriteResult{}, fmt.Errorf("agentpty: %s %s: typed %d of %d bytes%s: %w", ToolWrite, s.id, n, len(input), why, err)
		}
	}
	w, err := s.waitUntil(ctx, want, deadline, false, v.waitUntil != "", v.peek)
	if err != nil {
		return WriteResult{}, err
	}
	s.applyScreen(v.screen, before, v.peek, &w)
	res := WriteResult{ID: s.id, Output: w.output, Matched: w.matched, Exited: w.exited, ExitCode: w.exitCode,
		Signal: w.signal, Truncated: w.truncated, InputHidden: w.inputHidden, Spool: w.spool,
		State: w.state.State, Foreground: w.state.Foreground, ForegroundExe: w.foregroundExe, Cursor: w.cursor, Highlights: w.highlights}
	if code, ok := s.shellEnded(ends); ok && !w.exited {
		res.PromptAfter, res.ExitCode = true, &code
	}
	return res, nil
}

// wait is start's wait: as write's, but with neither wait_for nor wait_ms
// it returns once output has appeared and paused.
func (s *Session) wait(ctx context.Context, want *waitSpec, waitMS *int, waitUntil string) (waitResult, error) {
	defer s.use()() // the idle clock starts when start returns
	leave, err := s.turn(ctx, ToolStart)
	if err != nil {
		return waitResult{}, err
	}
	defer leave()
	if err := s.checkInputWait(ToolStart, waitUntil); err != nil {
		return waitResult{}, err
	}
	quiet := want == nil && waitMS == nil && waitUntil == ""
	return s.waitUntil(ctx, want, time.Now().Add(untilLimit(want, waitMS, waitUntil)), quiet, waitUntil != "", false)
}

// waitUntil waits as await does (awaitInput when input) and, on a full
// screen, for the frame to be finished, then collects the result, with
// the state taken before the output (the one that ended an input wait);
// a peek consumes nothing.
func (s *Session) waitUntil(ctx context.Context, want *waitSpec, deadline time.Time, quiet, input, peek bool) (waitResult, error) {
	var matched bool
	var err error
	var st TerminalState
	if input {
		matched, st, err = s.awaitInput(ctx, want, deadline)
	} else {
		matched, err = s.await(ctx, want, deadline, quiet)
	}
	if err == nil {
		err = s.awaitFrame(ctx, deadline)
	}
	if err != nil {
		return waitResult{}, err
	}
	if st.State != StateWaitingInput {
		st = s.State()
	}
	w := s.collect(matched, peek)
	w.state = st
	return w, nil
}

// await blocks until want matches new output, the child exits, the
// deadline passes, or (quiet) output has appeared and paused. It reads
// nothing. Only the reader wakes it: nothing polls.
func (s *Session) await(ctx context.Context, want *waitSpec, deadline time.Time, quiet bool) (bool, error) {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var pause *time.Timer
	var pauseC <-chan time.Time
	defer func() {
		if pause != nil {
			pause.Stop()
		}
	}()
	for {
		s.mu.Lock()
		matched := want != nil && want.inSettled(s.settle)
		drained, alt, ch := s.drained, s.settle.altScreen(), s.changes()
		var since time.Duration
		hasOutput := quiet && s.settle.unread()
		if hasOutput {
			since = time.Since(s.lastOutput)
		}
		s.mu.Unlock()
		if !matched && want != nil && alt {
			matched = s.screenMatch(want)
		}
		if matched || drained || (hasOutput && since >= startQuiet) {
			return matched, nil
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
			return false, nil
		case <-ctx.Done():
			return false, fmt.Errorf("agentpty: %s: wait: %w", s.id, ctx.Err())
		}
	}
}

// collect takes everything new as one result and marks it read; a peek
// marks nothing read.
func (s *Session) collect(matched, peek bool) waitResult { return s.collectOut(matched, peek, true) }

// collectOut is collect; without spool, Options.Spool is not handed the
// output, for a caller that returns an output of its own (pty-run).
func (s *Session) collectOut(matched, peek, spool bool) waitResult {
	s.mu.Lock()
	redrawn := s.settle.redrawn(s.rows) // a redraw in place shows as its screen (screenview.go)
	out, whole := s.settle.readWhole(s.m.opts.MaxOutputBytes, spool && s.m.opts.Spool != nil, peek)
	truncated := s.truncated
	if !peek {
		truncated = s.readTo(s.settled.Load())
	}
	w := waitResult{matched: matched, exited: s.exited, truncated: truncated}
	if s.exited {
		w.exitCode, w.signal = s.status.exitFields()
	}
	alt := s.settle.altScreen()
	s.mu.Unlock()

	if alt || redrawn {
		s.screenMu.Lock()
		if !s.syncScreenCall() {
			// The screen is far behind: the text says more than a stale
			// screen of a redraw; a full-screen program's is the best
			// there is.
			redrawn = false
		}
		scr := s.snapshot()
		if !peek {
			s.shown = nil
			if alt {
				s.shown = scr.Lines // what this read returned is what wait_for compares with next
			}
		}
		s.screenMu.Unlock()
		switch {
		case alt:
			out = joinScreen(out, scr.Text())
			if whole != "" {
				whole = joinScreen(whole, scr.Text())
			}
		case redrawn:
			out, whole = scr.Text(), "" // the frames' text mixed together: the screen says it
		}
	} else if !peek {
		s.screenMu.Lock()
		s.shown = nil
		s.screenMu.Unlock()
	}
	w.output = out
	w.spool = s.m.spool(s.id, whole)
	w.inputHidden = s.echoOff()
	if w.inputHidden {
		w.foregroundExe = asker(s.fgProcs()).exe
	}
	s.noteHidden(w.inputHidden)
	return w
}

// joinScreen appends the rendered screen to a read's text.
func joinScreen(out, screen string) string {
	if out != "" {
		out += "\n"
	}
	return out + screen
}

// readTo counts what left the ring before any result returned it, marks
// the output read up to ring offset off, and returns the count. Call with
// mu held.
func (s *Session) readTo(off int64) int64 {
	s.inMu.Lock()
	start := s.ring.start()
	s.inMu.Unlock()
	if start > s.readOff {
		s.truncated += start - s.readOff
	}
	s.readOff = max(s.readOff, off)
	return s.truncated
}

// use stops the idle clock for a call; the func it returns restarts it
// once no call is in progress.
func (s *Session) use() func() {
	s.mu.Lock()
	s.calls++
	if s.idle != nil {
		s.idle.Stop()
	}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.calls--; s.calls == 0 && s.idle != nil {
			s.idle.Reset(s.m.opts.IdleTimeout)
		}
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

// doKill ends every process the session holds (see endProcesses), then
// reaps, closes and collects.
func (s *Session) doKill(ctx context.Context) (KillResult, error) {
	s.mu.Lock()
	for _, t := range []*time.Timer{s.idle, s.life} {
		if t != nil {
			t.Stop()
		}
	}
	s.idle, s.life = nil, nil // a call returning after the kill must not rearm
	s.mu.Unlock()

	s.stopWrites()
	err := s.term.End(ctx, s.m.opts.KillGrace)
	if err != nil {
		err = fmt.Errorf("agentpty: %s %s: %w", ToolKill, s.id, err)
	}
	if reaped := s.awaitReaped(ctx); reaped == nil {
		// What the program wrote as it ended may still be in the terminal:
		// closing it now would lose that. reap's read deadline bounds this.
		select {
		case <-s.done:
		case <-ctx.Done():
		}
	} else if err == nil {
		err = fmt.Errorf("agentpty: %s %s: %w", ToolKill, s.id, reaped)
	}
	s.writeMu.Lock() // a write that got in before stopWrites is done
	closeErr := s.term.Close()
	s.writeMu.Unlock()
	// A screen with much left to parse stops at its next piece (see
	// syncScreenLocked); ctx bounds even that.
	select {
	case <-s.processDone:
	case <-ctx.Done():
		if err == nil {
			err = fmt.Errorf("agentpty: %s %s: the processes are ended, the output not all rendered: %w", ToolKill, s.id, ctx.Err())
		}
	}
	s.stopOutput()
	// No reply may start once Wait has begun; a Screen call racing the
	// kill still renders, it just has no one to answer.
	s.mu.Lock()
	s.noReplies = true
	s.mu.Unlock()
	s.replies.Wait()
	s.endAround(ctx)
	s.sh.remove() // the shell has exited: nothing reads its files any more

	s.mu.Lock()
	out, whole := s.settle.readWhole(s.m.opts.MaxOutputBytes, s.m.opts.Spool != nil, false)
	res := KillResult{ID: s.id, Output: out, Truncated: s.readTo(s.settled.Load())}
	res.ExitCode, res.Signal = s.status.exitFields()
	s.mu.Unlock()
	res.Spool = s.m.spool(s.id, whole)
	if err == nil && closeErr != nil {
		err = fmt.Errorf("agentpty: %s %s: close terminal: %w", ToolKill, s.id, closeErr)
	}
	return res, err
}
