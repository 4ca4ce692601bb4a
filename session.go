package agentpty

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// Waits, as DESIGN.md fixes them.
const (
	defaultWait    = 700 * time.Millisecond
	defaultWaitFor = 10 * time.Second
	maxWait        = 30 * time.Second
	startQuiet     = 150 * time.Millisecond // start returns once output has paused this long
	minTyping      = 500 * time.Millisecond // the least time input gets to reach a program that reads slowly
)

// exitFields renders an ExitStatus as the result fields.
func (e ExitStatus) exitFields() (*int, string) {
	if e.Signal != "" {
		return nil, e.Signal
	}
	c := e.Code
	return &c, ""
}

// Session is one program running under its own terminal (a Terminal of
// Options.Backend, by default a pseudo-terminal of this machine). Its
// methods are safe for concurrent use.
//
// A Session coordinates parts that each keep their own state: the
// terminal and its writer (typing.go), the output pipeline (output.go),
// the settled text and exit state (text.go, under mu), the display with
// its vt model (display.go), the replier (replies.go), events (events.go),
// secrets (secret.go), taps (tap.go), Expect (expect.go), the idle clock
// (idle.go), the lane (lane.go), the parked pattern (matchwait.go) and the
// last state read (state_seen.go). A call checks its request (check.go),
// then waits through a waiter (wait.go).
//
// Locks, in the order they are taken (a lock is never taken while one
// after it is held):
//
//	lane (a call's turn) → masker (secret.go) → out.renderMu | disp.mu
//	  → Manager.mu → mu → out.inMu
//
// The reader holds the masker while it stores and renders; renderMu and
// disp.mu are never held together. Manager.mu comes after disp.mu (Resize
// counts cells under it). Leaves, under which no lock of the session is
// taken: typing.mu, rep.mu, clock.mu (register arms the idle clock under
// Manager.mu), lane.mu, seen.mu (state_seen.go), the shell's shown.mu
// (runshown.go), and taps.mu with each tap's mu under it (tap.go). A
// Terminal's own locks (the local one's procFiles) come last: under
// typing.mu (Write, Close), disp.mu (Resize) or none.
//
// No lock is held while calling a hook. Two are held across I/O on the
// terminal: typing.mu across the write and the close, as poll.FD holds its
// own, and disp.mu across Resize, so that the screen changes size at the
// place in the output where the terminal did. The lane is a call's turn,
// held for the whole call.
//
// Goroutines of a session: output.read (the only reader of the terminal; it
// renders the settled text), output.process (renders what the reader left
// and feeds the screen), reap (waits for the command's exit), the reply
// writer (replier.write) while replies wait, one per tap (a recording or an
// attachment, and an attachment's input), the timers of the idle clock,
// output events and secrets' masking, a write's watch on its ctx while it
// waits, and under a sandbox of NewSandbox the thread that started the
// child, kept until it exits (startOnThread).
type Session struct {
	m       *Manager
	num     int
	id      string
	command string
	term    Terminal
	pid     int
	started time.Time
	cells   int // cols×rows counted against MaxCells; guarded by the manager's mu

	typing typing // the terminal's one writer (typing.go)
	lane   lane   // one call at a time, in arrival order; taken before any lock below (lane.go)

	out  output    // the ring, the reader and the processor (output.go)
	seen stateSeen // the last state read, reused while nothing could have changed it (state_seen.go)

	// mu guards the fields below, and the parts that say so (see the lock
	// order above).
	mu    sync.Mutex
	text  settledText // the settled text and the exit state (text.go)
	match matcher     // the call parked on its pattern, which the reader looks for (matchwait.go)
	sh    *shell      // a shell session's prompt marks; nil for other sessions

	disp display // the vt model, what reads showed of it, and the query answers it owes (display.go)

	done      chan struct{} // closed when drained
	reaped    chan struct{} // closed when the child has been reaped
	announced chan struct{} // closed once Start has emitted "created" (or given up)
	rep       replier       // query replies on their way (replies.go)
	clock     idleClock     // the host's bounds on the session (idle.go)
	killOnce  sync.Once
	killRes   KillResult
	killErr   error

	sec  secrets      // the secrets given to WriteSecret, masked in the output (secret.go)
	taps tapSet       // recordings and people attached (tap.go, record.go, attach.go)
	exp  expectState  // Expect's place in the output, used by the call whose turn it is (expect.go)
	ev   outputEvents // output events and the watchers of this session (events.go)
}

// startSession starts the child under a new terminal: this machine's, or
// Options.Backend's. On failure nothing is left behind.
// from, when set, says how to run the command instead of the login shell
// (a snapshot of it, see Options.ShellSnapshot); only this machine has one.
func startSession(m *Manager, num int, req StartRequest, cols, rows int, from *snapshotStart) (*Session, error) {
	place, err := startPlace(m, req)
	if err != nil {
		return nil, err
	}
	argv := append(append([]string(nil), m.opts.Shell...), req.Command)
	var env []string
	var sh *shell
	if req.Shell {
		snapshot := ""
		if from != nil {
			snapshot = from.path
		}
		if sh, err = newShell(context.Background(), place.files, num, snapshot); err != nil {
			return nil, fmt.Errorf("agentpty: %s %q: the shell session's files: %w", ToolStart, req.Command, err)
		}
		argv = sh.argv()
	} else if from != nil {
		argv, env = from.argv, from.env
	}
	env = sessionEnv(historyEnv(req.Shell, place.pythonStartup, m.opts.Env, req.Env), m.opts.Env, req.Env, env)
	term, err := place.backend.Start(context.Background(), Command{Argv: argv, Env: env, Dir: req.Cwd, Cols: cols, Rows: rows, Name: "pty-" + strconv.Itoa(num)})
	if err != nil {
		sh.remove(context.Background())
		return nil, fmt.Errorf("agentpty: %s %q: %w", ToolStart, req.Command, err)
	}
	return newSession(m, num, req, cols, rows, term, sh), nil
}

// place is where a session runs: the backend that starts it, where its
// shell session's files go, and its Python startup file ("" for none).
type place struct {
	backend       Backend
	files         shellFiles // nil where the backend has none
	pythonStartup string
}

// startPlace says where req runs. What only this machine can give (a
// sandbox, the login shell's snapshot) is refused for a backend before
// anything runs; a shell session's files go where the backend runs its
// commands, through its Files.
func startPlace(m *Manager, req StartRequest) (place, error) {
	if b := m.opts.Backend; b != nil {
		if m.opts.Sandbox != nil {
			return place{}, errorf(ErrUnsupported, "%s %q: Options.Sandbox confines commands on this machine; the backend cannot apply it", ToolStart, req.Command)
		}
		fs, ok := b.(Files)
		if req.Shell && !ok {
			return place{}, errorf(ErrUnsupported, "%s: shell sessions need files where the shell runs, and the backend %s has no Files", ToolStart, backendName(b))
		}
		p := place{backend: b}
		if ok {
			p.files = remoteFiles{fs, backendName(b)}
		}
		return p, nil
	}
	if req.Cwd != "" {
		if fi, err := os.Stat(req.Cwd); err != nil || !fi.IsDir() {
			return place{}, errorf(ErrInvalid, "%s: cwd %q is not a directory", ToolStart, req.Cwd)
		}
	}
	// Made before the child, so a sandbox keeps it read-only from the first.
	priv, err := m.priv.get(m.opts.Sandbox)
	if err != nil {
		return place{}, fmt.Errorf("agentpty: %s %q: %w", ToolStart, req.Command, err)
	}
	return place{backend: localBackend{m}, files: localFiles{priv}, pythonStartup: filepath.Join(priv, pythonStartupName)}, nil
}

// newSession coordinates the parts of a session whose command runs under
// term, and starts its goroutines.
func newSession(m *Manager, num int, req StartRequest, cols, rows int, term Terminal, sh *shell) *Session {
	id := "pty-" + strconv.Itoa(num)
	s := &Session{
		m:         m,
		num:       num,
		id:        id,
		command:   req.Command,
		term:      term,
		pid:       term.PID(),
		cells:     cols * rows,
		started:   time.Now(),
		typing:    newTyping(term, id),
		out:       newOutput(m.opts.ScrollbackBytes),
		text:      newSettledText(m.opts.ScrollbackBytes, cols, rows),
		done:      make(chan struct{}),
		reaped:    make(chan struct{}),
		announced: make(chan struct{}),
		sh:        sh,
	}
	if sh != nil {
		sh.attach(s.text.settler())
	}
	go s.out.read(s.term, s.take, s.drainSeenAt)
	go s.out.process(s.renderBatch, func(end int64) {
		if s.screenDue(end) {
			// In slices, letting go of the display between them, so a
			// call that needs it waits for one slice at most, whatever
			// the program prints.
			for !s.readScreen(time.Now().Add(processorSlice), nil) && !s.typing.stopped() {
			}
		}
	})
	go s.reap()
	return s
}

// ID returns the session's id, "pty-N".
func (s *Session) ID() string { return s.id }

// PID returns the child's process id on its machine, which on this one is
// also its process group and session id; 0 where the terminal does not
// say (see Terminal.PID).
func (s *Session) PID() int { return s.pid }

func (s *Session) info() SessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	cols, rows := s.text.size()
	st, exited := s.text.ended()
	info := SessionInfo{ID: s.id, PID: s.pid, Command: s.command, Cols: cols, Rows: rows, Started: s.started, Exited: exited,
		Containment: s.Containment()}
	if exited {
		info.ExitCode, info.Signal = st.exitFields()
	}
	return info
}

// turn waits until the calls on the session that arrived before this one
// have returned, and returns the func that lets the next one go. The
// turn is also when the call's WithEvents function hears the session's
// output events, whichever way the call waits.
func (s *Session) turn(ctx context.Context, tool string) (func(), error) {
	if err := s.lane.enter(ctx); err != nil {
		return nil, fmt.Errorf("agentpty: %s %s: waiting for the call before it: %w", tool, s.id, err)
	}
	unwatch, due := s.ev.watch(ctx, s.m, tool == ToolStart, s.Tail)
	if due {
		s.ev.schedule(s.emitOutput)
	}
	return func() {
		unwatch()
		s.lane.leave()
	}, nil
}

// kill ends the session once; later calls return the first result.
func (s *Session) kill(ctx context.Context) (KillResult, error) {
	s.killOnce.Do(func() { s.killRes, s.killErr = s.doKill(ctx) })
	return s.killRes, s.killErr
}

// doKill ends every process the session holds (see endProcesses), then
// reaps, closes and collects.
func (s *Session) doKill(ctx context.Context) (KillResult, error) {
	s.clock.stop()
	s.seen.changing()
	s.typing.stop()
	err := s.term.End(ctx, s.m.opts.KillGrace)
	if err != nil {
		err = fmt.Errorf("agentpty: %s %s: %w", ToolKill, s.id, err)
	}
	if reaped := awaitReaped(ctx, s.reaped, s.pid); reaped == nil {
		// What the program wrote as it ended may still be in the terminal:
		// closing it now would lose that. reap's read deadline bounds this.
		select {
		case <-s.done:
		case <-ctx.Done():
		}
	} else if err == nil {
		err = fmt.Errorf("agentpty: %s %s: %w", ToolKill, s.id, reaped)
	}
	// The shell has exited: nothing reads its files any more. Before the
	// terminal closes, so a backend's files go over what it still holds.
	s.sh.remove(ctx)
	closeErr := s.typing.close()
	// A display with much left to parse stops at its next piece (see
	// parsePieces); ctx bounds even that.
	if perr := s.out.awaitProcessed(ctx); perr != nil && err == nil {
		err = fmt.Errorf("agentpty: %s %s: the processes are ended, the output not all rendered: %w", ToolKill, s.id, perr)
	}
	s.ev.stop()
	// No reply may start once Wait has begun; a Screen call racing the
	// kill still renders, it just has no one to answer.
	s.rep.stop()
	s.taps.end(ctx, s.m.opts.KillGrace) // the taps deliver the rest and end
	s.sec.wipe()

	s.mu.Lock()
	res, whole := s.killResult()
	s.mu.Unlock()
	res.Spool = s.m.spool(s.id, whole)
	if err == nil && closeErr != nil {
		err = fmt.Errorf("agentpty: %s %s: close terminal: %w", ToolKill, s.id, closeErr)
	}
	return res, err
}

// typeInput types input, after telling the taps (recordings with
// RecordInput) what is typed and the state reads that it changes what
// they see: every path that types input, not query answers, goes through
// it.
func (s *Session) typeInput(ctx context.Context, p []byte, deadline time.Time) (int, error) {
	tapInput(s, 'i', p)
	s.seen.changing()
	return s.typing.write(ctx, p, deadline)
}

// keyModes reads the terminal's key modes after the screen has parsed
// the output so far, so a mode the program just set counts.
func (s *Session) keyModes() keyModes {
	var m keyModes
	s.readScreen(callLimit(), func(d *display) { m = d.keyModes() })
	return m
}

// emitOutput queues an output event with the newest lines.
func (s *Session) emitOutput() {
	<-s.announced // output events come after "created"
	// One time for the spacing and the event: taken apart, a pause
	// between them would show events closer than outputEvery.
	now := time.Now()
	s.ev.sent(now)
	e := Event{Kind: EventOutput, ID: s.id, PID: s.pid, Command: s.command, Lines: s.Tail(outputLines), Time: now}
	m := s.m
	m.mu.Lock()
	// Only while the session is the manager's: none before "created" or
	// after "killed".
	start := false
	if m.sessions[s.id] == s {
		if m.opts.OnEvent != nil {
			start = m.enqueueOutput(queued{e: e}) || start
		}
		start = s.ev.queue(m, e) || start
	}
	m.mu.Unlock()
	if start {
		go m.deliver()
	}
}

// Send types text into the terminal as it is (no escape decoding: a Go
// string can hold control bytes itself) and returns without reading any
// output. It is for Go code that drives a program directly.
func (s *Session) Send(text string) error {
	defer s.clock.use()()
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
	s.seen.changing()
	if err := s.term.Signal(sig); err != nil {
		return fmt.Errorf("agentpty: %s: signal %v: %w", s.id, sig, err)
	}
	return nil
}

// checkDrained marks the output complete once the child has exited and
// what was on its way is rendered, and wakes every waiter. Call with mu
// held.
func (s *Session) checkDrained() {
	if s.text.drain(s.out.rendered()) {
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
	s.text.exit(st)
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
