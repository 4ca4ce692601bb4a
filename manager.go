package agentpty

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentpty/agentpty/internal/contain"
)

// SessionInfo describes a session for List.
type SessionInfo struct {
	ID       string
	PID      int
	Command  string
	Cols     int
	Rows     int
	Started  time.Time
	Exited   bool
	ExitCode *int
	Signal   string
	// Containment is what holds the session's processes (see
	// Session.Containment).
	Containment string
}

// Manager owns numbered sessions. Its methods are safe for concurrent use.
type Manager struct {
	opts Options

	// mu guards the fields below; it is never held during I/O or while
	// calling a hook.
	mu       sync.Mutex
	sessions map[string]*Session
	pending  int // starts approved and under way, counted against MaxSessions
	cells    int // cols×rows of the sessions and the starts under way, counted against MaxCells
	last     int // number of the newest session; ids are never reused
	closed   bool

	starting   sync.WaitGroup // starts between reserve and register, which Close waits for
	queue      []queued       // events not yet handed to OnEvent or a watcher
	delivering bool           // a goroutine is draining queue
	eventsWG   sync.WaitGroup

	containOnce sync.Once
	room        fdRoom        // descriptors held for endings, taken with the first local start
	contain     *contain.Host // the sessions' cgroups, made on first start; nil where the host has none

	invalid error      // what Options.Validate said, returned by every Start
	snap    *snapshots // the login shell's snapshot (Options.ShellSnapshot); nil when off
	priv    privDir    // shell sessions' rcfiles and commands (privdir.go)
}

// NewManager returns a Manager with opts, defaults applied. Options that
// Validate refuses make every Start fail with its error.
func NewManager(opts Options) *Manager {
	m := &Manager{opts: opts.withDefaults(), sessions: map[string]*Session{}, invalid: opts.Validate()}
	if opts.ShellSnapshot && opts.Backend == nil && (opts.Shell == nil || slices.Equal(opts.Shell, []string{"bash", "-lc"})) {
		m.snap = newSnapshots()
	}
	return m
}

// Session returns the session with the given id, if the manager has it.
func (m *Manager) Session(id string) (*Session, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	return s, ok
}

// List describes every session the manager holds, oldest first.
func (m *Manager) List() []SessionInfo {
	m.mu.Lock()
	ss := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		ss = append(ss, s)
	}
	m.mu.Unlock()
	sort.Slice(ss, func(i, j int) bool { return ss[i].num < ss[j].num })
	out := make([]SessionInfo, len(ss))
	for i, s := range ss {
		out[i] = s.info()
	}
	return out
}

// Start approves, starts and waits for the first output of a command, as
// the tool pty-start does.
func (m *Manager) Start(ctx context.Context, req StartRequest) (StartResult, error) {
	if m.invalid != nil {
		return StartResult{}, m.invalid
	}
	want, err := checkStart(req)
	if err != nil {
		return StartResult{}, err
	}
	cols, rows := orDefault(req.Cols, m.opts.Cols), orDefault(req.Rows, m.opts.Rows)
	ar := ApprovalRequest{Tool: ToolStart, Command: approvedCommand(req), Dir: req.Cwd, Env: req.Env, Cols: cols, Rows: rows}
	if err := m.approve(ctx, ar); err != nil {
		return StartResult{}, err
	}
	num, err := m.reserve(cols * rows)
	if err != nil {
		return StartResult{}, err
	}
	started := false
	defer func() {
		if !started {
			m.starting.Done()
		}
	}()
	var from *snapshotStart
	if m.snap != nil {
		f := m.startFrom(ctx, req.Command)
		from = &f
	}
	s, err := startSession(m, num, req, cols, rows, from)
	if err != nil {
		m.mu.Lock()
		m.pending--
		m.cells -= cols * rows
		m.mu.Unlock()
		return StartResult{}, err
	}
	if !m.register(s) {
		// Close ran while the child was starting: it must not outlive it.
		close(s.announced)
		s.kill(context.Background())
		return StartResult{}, errorf(ErrClosed, "%s %q: the manager closed while it started", ToolStart, req.Command)
	}
	m.emit(Event{Kind: EventCreated, ID: s.id, PID: s.pid, Command: s.command, Time: s.started})
	close(s.announced)
	started = true
	m.starting.Done() // registered: Close sees it from here on
	res, err := m.firstWait(ctx, s, req, want)
	res.Notice = startNotice(s, from, res, err)
	if ctx.Err() != nil {
		// No one will learn the id: the session must not hold its slot.
		_, _ = m.end(context.Background(), s, EventKilled)
		return StartResult{}, fmt.Errorf("agentpty: %s %q: %s killed: %w", ToolStart, req.Command, s.id, ctx.Err())
	}
	return res, err
}

// startNotice is what a start's result says beside its output: how the
// snapshot served, or that nothing was printed yet.
func startNotice(s *Session, from *snapshotStart, res StartResult, err error) string {
	if from != nil && from.notice != "" {
		return from.notice
	}
	if s.m.opts.ShellSnapshot && s.m.opts.Backend != nil {
		return "Options.ShellSnapshot applies on this machine only: no snapshot of the login shell is used on " + backendName(s.m.opts.Backend)
	}
	if err != nil || res.Exited || strings.TrimSpace(res.Output) != "" {
		return ""
	}
	// A profile waiting on a lock or a slow mount looks like this too.
	fg := res.Foreground
	if fg == "" {
		fg = "the command"
	}
	return fmt.Sprintf("nothing printed yet after %v; %s is in front (state %s)", time.Since(s.started).Round(time.Millisecond), fg, res.State)
}

// firstWait is a new session's first wait: a shell session's first run or
// prompt, or the wait the request asks for.
func (m *Manager) firstWait(ctx context.Context, s *Session, req StartRequest, want *waiter) (StartResult, error) {
	if s.sh != nil {
		return awaitShellStart(ctx, s, req)
	}
	res, err := want.on(s, time.Time{}).start(ctx)
	if errors.Is(err, ErrUnsupported) {
		_, _ = m.end(context.Background(), s, EventKilled) // no one learns the id
		return StartResult{}, err
	}
	return res, err
}

// reserve counts a start against MaxSessions before the child exists, so
// concurrent starts cannot overshoot the cap, and numbers it, so the
// session has its id before any of its goroutines run. A start that fails
// uses up its number: ids are never reused.
func (m *Manager) reserve(cells int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, errorf(ErrClosed, "%s: no new sessions after Close", ToolStart)
	}
	if n := len(m.sessions) + m.pending; n >= m.opts.MaxSessions {
		return 0, errorf(ErrTooManySessions, "%s: %d sessions are open, the limit is %d; kill one first", ToolStart, n, m.opts.MaxSessions)
	}
	if m.cells+cells > m.opts.MaxCells {
		return 0, errorf(ErrTooManySessions, "%s: a terminal of %d cells would bring the sessions to %d, over the limit of %d; kill one or ask for fewer", ToolStart, cells, m.cells+cells, m.opts.MaxCells)
	}
	m.pending++
	m.cells += cells
	m.starting.Add(1)
	m.last++
	return m.last, nil
}

// register makes a started session visible. It reports false when Close
// came first.
func (m *Manager) register(s *Session) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pending--
	if m.closed {
		m.cells -= s.cells
		return false
	}
	m.sessions[s.id] = s
	s.clock.arm(m.opts.IdleTimeout, m.opts.MaxLifetime, func() { _, _ = m.end(context.Background(), s, EventReaped) })
	return true
}

// recount counts cells for s instead of what it held, within MaxCells,
// and returns what it held.
func (m *Manager) recount(s *Session, cells int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := s.cells
	if m.sessions[s.id] != s { // ended: it holds nothing
		s.cells = cells
		return old, nil
	}
	total := m.cells - old + cells
	if cells > old && total > m.opts.MaxCells {
		return old, errorf(ErrTooManySessions, "%s: a terminal of %d cells would bring the sessions to %d, over the limit of %d", s.id, cells, total, m.opts.MaxCells)
	}
	m.cells, s.cells = total, cells
	return old, nil
}

// lookup finds a live session for a tool call.
func (m *Manager) lookup(tool, id string) (*Session, error) {
	if err := checkID(tool, id); err != nil {
		return nil, err
	}
	m.mu.Lock()
	s, ok := m.sessions[id]
	closed := m.closed
	m.mu.Unlock()
	if !ok {
		if closed {
			return nil, errorf(ErrClosed, "%s %s: the manager is closed", tool, id)
		}
		return nil, errorf(ErrNoSession, "%s %s: no session with that id (killed, or never started)", tool, id)
	}
	return s, nil
}

// Write types input into a session and returns what it printed since the
// last read, as the tool pty-write does.
func (m *Manager) Write(ctx context.Context, req WriteRequest) (WriteResult, error) {
	want, keys, err := checkWrite(req)
	if err != nil {
		return WriteResult{}, err
	}
	s, err := m.lookup(ToolWrite, req.ID)
	if err != nil {
		return WriteResult{}, err
	}
	input := typedBytes(req, keys, s.keyModes)
	atPrompt, err := m.approveWrite(ctx, ToolWrite, s, input)
	if err != nil {
		return WriteResult{}, err
	}
	if atPrompt {
		input = append([]byte(lineClear), input...)
	}
	return want.on(s, time.Time{}).write(ctx, input)
}

// Kill ends a session and everything it started, frees its terminal and
// forgets its id, as the tool pty-kill does. It returns the output no
// result had returned yet and how the program ended.
func (m *Manager) Kill(ctx context.Context, id string) (KillResult, error) {
	s, err := m.lookup(ToolKill, id)
	if err != nil {
		return KillResult{}, err
	}
	return m.end(ctx, s, EventKilled)
}

// end kills s, removes it, and reports it with kind.
func (m *Manager) end(ctx context.Context, s *Session, kind EventKind) (KillResult, error) {
	done := m.room.use()
	res, err := s.kill(ctx)
	done()
	m.mu.Lock()
	removed := m.sessions[s.id] == s
	if removed {
		delete(m.sessions, s.id)
		m.cells -= s.cells
	}
	m.mu.Unlock()
	if removed {
		m.emit(Event{Kind: kind, ID: s.id, PID: s.pid, Command: s.command, ExitCode: res.ExitCode, Signal: res.Signal, Time: time.Now()})
	}
	return res, err
}

// Close kills every session and refuses new ones; later calls return
// ErrClosed. It is idempotent and returns the first error.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	ss := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		ss = append(ss, s)
	}
	m.mu.Unlock()
	// A start under way finds the manager closed and ends its own child;
	// Close returns only after that.
	m.starting.Wait()
	m.containOnce.Do(func() {})   // no cgroup is made after this
	m.room.close()                // the endings below may need those descriptors
	together := m.endTogether(ss) // claims their End before their kills can

	errs := make([]error, len(ss))
	var wg sync.WaitGroup
	for i, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = m.end(context.Background(), s, EventKilled)
		}()
	}
	together()
	wg.Wait()
	if m.contain != nil {
		errs = append(errs, m.contain.Close())
	}
	if m.snap != nil {
		errs = append(errs, m.snap.close())
	}

	errs = append(errs, m.priv.remove())
	m.eventsWG.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// emit queues e for OnEvent. One goroutine at a time delivers the queue,
// so hooks see events in order and never run under a lock or on the
// reader's path; it exits when the queue is empty.
func (m *Manager) emit(e Event) {
	if m.opts.OnEvent == nil {
		return
	}
	m.mu.Lock()
	start := m.enqueue(queued{e: e})
	m.mu.Unlock()
	if start {
		go m.deliver()
	}
}

// enqueue adds q to the queue and reports whether a goroutine must be
// started to deliver it. Call with mu held.
func (m *Manager) enqueue(q queued) bool {
	m.queue = append(m.queue, q)
	if m.delivering {
		return false
	}
	m.delivering = true
	m.eventsWG.Add(1)
	return true
}

func (m *Manager) deliver() {
	defer m.eventsWG.Done()
	for {
		m.mu.Lock()
		if len(m.queue) == 0 {
			m.delivering = false
			m.queue = nil
			m.mu.Unlock()
			return
		}
		q := m.queue[0]
		m.queue = m.queue[1:]
		m.mu.Unlock()
		m.hand(q)
	}
}
