package agentpty

import (
	"context"
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
	screenPiece    = 128                    // the screen parses at most this much between checks for a Kill or a limit
	pieceTime      = 2 * time.Millisecond   // ... and less when a piece takes longer than this (see nextPiece)
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
	lastInput  atomic.Int64 // when input was last typed, unix ns; read with lastOutput by State's quietFor
	frameEnd   int64        // ring offset of the end of the last batch that ended a synchronized update
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
	piece     int          // bytes the screen parses between checks (nextPiece)
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
	res, whole := s.killResult()
	s.mu.Unlock()
	res.Spool = s.m.spool(s.id, whole)
	if err == nil && closeErr != nil {
		err = fmt.Errorf("agentpty: %s %s: close terminal: %w", ToolKill, s.id, closeErr)
	}
	return res, err
}
