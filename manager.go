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

// Defaults applied where an Options field is zero.
const (
	DefaultCols            = 120
	DefaultRows            = 32
	DefaultMaxSessions     = 16
	DefaultKillGrace       = 2 * time.Second
	DefaultScrollbackBytes = 256 << 10
	DefaultMaxOutputBytes  = 32 << 10
	DefaultMaxProcesses    = 4096
	DefaultMaxCells        = 2_000_000
	// DefaultShellSnapshotTimeout is how long the login profile may run
	// while the shell snapshot is made (Options.ShellSnapshotTimeout).
	DefaultShellSnapshotTimeout = 5 * time.Second
)

// The largest terminal a session may have (the tools' schemas say so too).
const maxCols, maxRows = 1000, 500

// Options configure a Manager. The zero value is ready to use; every zero
// field means the default it documents.
type Options struct {
	// Shell runs each command as Shell followed by the command; nil means
	// {"bash", "-lc"}, so the login profile sets up PATH as in a person's
	// terminal. The profile runs for every session (a few ms for a plain
	// one, 100 ms and more with pyenv or nvm), and one that reads the
	// terminal can eat input typed before it finishes: wait for a prompt
	// (wait_for) before typing. {"bash", "-c"} skips it. ShellSnapshot
	// runs the profile once instead.
	Shell []string
	// ShellSnapshot runs the login profile once, at the first start, and
	// captures the shell it set up: exported variables, shell functions
	// (and which are exported), aliases, and the shopt and set options.
	// Later starts run `bash -c COMMAND` with that snapshot loaded first
	// (through BASH_ENV, which the snapshot unsets again), so PATH,
	// version-manager shims and functions (pyenv, nvm) and aliases behave
	// as under the login shell at a fraction of its cost. A change to a
	// profile file (size or mtime of /etc/profile, /etc/profile.d/*,
	// /etc/bash.bashrc, /etc/environment, ~/.bash_profile, ~/.bash_login,
	// ~/.profile, ~/.bashrc, ~/.bash_aliases) makes a new snapshot at the
	// next start; files those source from elsewhere are not watched.
	// What does not carry over: unexported shell variables (the login
	// shell's PS1 and the like), traps, the directory stack, and anything
	// the profile does each time rather than sets (printing a banner,
	// starting an agent). A variable a start's own Env sets that the
	// profile sets too takes the profile's value. A profile that fails or
	// runs past ShellSnapshotTimeout is stopped, the start runs the login
	// shell instead and its result's Notice says what happened; later
	// starts run the login shell without trying again, and without the
	// notice, until a profile file changes. It applies
	// only when Shell is nil or {"bash", "-lc"} (the login bash) and is made under
	// the Sandbox and containment like any session; false runs the profile
	// for every start. It applies on this machine only: with another
	// Backend no snapshot is made or used (commands run under Shell as
	// given), and every start's result says so in its Notice.
	ShellSnapshot bool
	// ShellSnapshotTimeout is how long the login profile may run while
	// the snapshot is made; 0 means DefaultShellSnapshotTimeout (5 s). A
	// host whose profile is slower raises it, or the snapshot fails and
	// every start runs the profile.
	ShellSnapshotTimeout time.Duration
	// Cols and Rows are the terminal size a start gets when its request
	// gives none; 0 means 120 columns by 32 rows. The tools' schemas say
	// the size the manager uses.
	Cols, Rows int
	// Env is added to the environment every session inherits from the
	// host; TERM is always xterm-256color.
	Env []string
	// Approver is asked before anything starts; nil approves everything.
	Approver Approver
	// Sandbox adjusts every child before it starts; nil runs it as the
	// host's own child.
	Sandbox Sandbox
	// MaxSessions caps the sessions alive at once, exited ones included
	// until killed; 0 means 16. One more Start is ErrTooManySessions.
	MaxSessions int
	// KillGrace is how long Kill gives the session's processes after
	// SIGTERM (SIGHUP follows a moment later) before SIGKILL; 0 means 2s.
	KillGrace time.Duration
	// MaxProcesses caps the processes (threads included) of one session
	// where the host has a pids cgroup (see Session.Containment): a fork
	// bomb stops there; 0 means 4096.
	MaxProcesses int
	// MaxProcessesTotal caps the processes (threads included) of all
	// sessions together, where the host has a pids cgroup: sessions at
	// MaxProcesses each cannot add up past what the machine has. 0 means
	// half of the machine's pid_max (/proc/sys/kernel/pid_max); negative
	// means no bound beyond MaxProcesses.
	MaxProcessesTotal int
	// MaxMemory caps the memory, in bytes, that the processes of all
	// sessions together may use, where a memory controller is reachable
	// (cgroup v2 memory.max, or v1 memory.limit_in_bytes): past it the
	// kernel reclaims what it can and then kills the largest process.
	// 0 means no bound, since only the host knows what its sessions may
	// need (a build can want gigabytes).
	MaxMemory int64
	// MaxCells caps the terminal cells (cols×rows) of all sessions
	// together, so that sizes cannot multiply the work of rendering or the
	// memory of screens; a Start or Resize over it is ErrTooManySessions.
	// 0 means 2,000,000: four sessions of the largest size (1000×500), or
	// 520 of the default 120×32.
	MaxCells int
	// ScrollbackBytes is how much raw output each session keeps; 0 means
	// 256 KiB. Older output is dropped and counted as truncated.
	ScrollbackBytes int
	// MaxOutputBytes caps a result's output: head and tail are kept and the
	// middle is replaced by one marker line; 0 means 32 KiB.
	MaxOutputBytes int
	// IdleTimeout kills a session that no call has touched for this long;
	// 0 means never.
	IdleTimeout time.Duration
	// MaxLifetime kills a session this long after it started; 0 means
	// never.
	MaxLifetime time.Duration
	// OnEvent is told when sessions are created, exit and end, and of their
	// output (EventOutput, at most a few a second per session). It is
	// called without any lock held, from the library's goroutines, in
	// order, one event at a time; a slow OnEvent delays only later events
	// (output events waiting for it are merged into the newest), and a
	// panic in it is recovered.
	OnEvent func(Event)
	// Spool, when set, is handed the whole output of a result whose output
	// MaxOutputBytes cut, and the result's Spool field carries the
	// reference it returns; nil means the rest is dropped. See spool.go.
	Spool Spool
	// RecordInput adds what is typed ("i" events) to recordings made with
	// Session.Record; input typed while echo is off and secrets given to
	// WriteSecret are never recorded. False records output and resizes only.
	RecordInput bool
	// ApproveWrites asks the Approver also before each pty-write that
	// types input (Tool "pty-write", with ID and Input); a denied write
	// types nothing. False means approving a start covers every write.
	// The request names the program waiting for input (Foreground); a
	// write first waits up to a second for one, as a shell that has just
	// printed its prompt reads a moment later. Without an Approver (which
	// approves everything) it costs nothing. Whatever the Approver says, a
	// write holding a printable character the terminal binds to a special
	// character (stty kill @), or a byte istrip or iuclc would change, is
	// refused (ErrDenied), since the terminal or the line editor would act
	// on it rather than read it as text; a terminal of another Backend,
	// whose modes the library cannot read, is not checked. A write approved
	// into a shell waiting at its prompt is typed after C-g C-e C-u, which
	// empty its line (of query replies the library typed, for one): one
	// write holds a whole line.
	ApproveWrites bool
	// Backend starts each session's command under a terminal; nil means a
	// pseudo-terminal of this machine. With another Backend, Sandbox is
	// refused (Validate), shell sessions need the backend's Files
	// (ErrUnsupported without), ShellSnapshot does not apply, and what the
	// terminal cannot tell is said plainly (see Backend).
	Backend Backend
	// SecretPrograms, when set, are the programs WriteSecret may type a
	// secret into: executable names (looked up in the host's PATH) or
	// paths. WriteSecret then refuses with ErrDenied unless every process
	// of the terminal's foreground group (but a shell waiting for its
	// command) runs one of these very files, owned by root and writable by
	// no one else, untraced, and running no code from files others could
	// write. Nil types into any program at a prompt with echo off.
	SecretPrograms []string
	// SecretRelays, when set, are relay programs the host trusts to carry
	// a secret to a password prompt on their far side: executable names
	// or paths ("ssh", "telnet"). A relay's own terminal is raw, so its
	// echo is off but not in line mode, and the far side's echo is not
	// this kernel's to see: WriteSecret refuses it. With SecretRelays it
	// also types where the terminal echoes nothing itself and every
	// process of its foreground group (but a shell waiting for its
	// command) is one of these relays, checked as SecretPrograms checks
	// its programs, one of them reading the terminal. Whether the far side
	// waits at a password prompt is then the host's to know (a person who
	// sees the prompt): a far side that echoes shows the secret masked in
	// the output, as any program that prints it. Nil: no relay.
	SecretRelays []string
}

// withDefaults applies every default in one place.
func (o Options) withDefaults() Options {
	if o.Shell == nil {
		o.Shell = []string{"bash", "-lc"}
	}
	o.Cols = orDefault(o.Cols, DefaultCols)
	o.Rows = orDefault(o.Rows, DefaultRows)
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.ShellSnapshotTimeout <= 0 {
		o.ShellSnapshotTimeout = DefaultShellSnapshotTimeout
	}
	if o.KillGrace <= 0 {
		o.KillGrace = DefaultKillGrace
	}
	if o.MaxCells <= 0 {
		o.MaxCells = DefaultMaxCells
	}
	if o.MaxProcesses <= 0 {
		o.MaxProcesses = DefaultMaxProcesses
	}
	if o.MaxProcessesTotal == 0 {
		o.MaxProcessesTotal = defaultProcessesTotal()
	}
	if o.ScrollbackBytes <= 0 {
		o.ScrollbackBytes = DefaultScrollbackBytes
	}
	if o.MaxOutputBytes <= 0 {
		o.MaxOutputBytes = DefaultMaxOutputBytes
	}
	return o
}

// EventKind says what happened to a session.
type EventKind string

// Event kinds.
const (
	EventCreated EventKind = "created" // the child started
	EventExited  EventKind = "exited"  // the child exited (ExitCode or Signal set)
	EventKilled  EventKind = "killed"  // Kill or Close ended the session
	EventReaped  EventKind = "reaped"  // IdleTimeout or MaxLifetime ended the session
	// EventInputHidden: the terminal stopped echoing in line mode, so the
	// program most likely waits for a password (see Manager.WriteSecret).
	EventInputHidden EventKind = "input_hidden"
	EventOutput      EventKind = "output" // the program printed; Lines holds the newest lines
)

// Event reports a change in a session's life to Options.OnEvent.
type Event struct {
	Kind     EventKind
	ID       string
	PID      int
	Command  string
	ExitCode *int
	Signal   string
	Time     time.Time
	// Lines holds, for EventOutput, the newest lines of the settled
	// scrollback (the last one being written), for a live tail. It is
	// shared: do not change it.
	Lines []string
	// Foreground and ForegroundExe name, for EventInputHidden, the program
	// at the password prompt and the path of its executable, so a host
	// can show its user who asks before it calls WriteSecret.
	Foreground    string
	ForegroundExe string
}

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

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
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
	res, err := s.kill(ctx)
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
	m.containOnce.Do(func() {}) // no cgroup is made after this
	m.endTogether(ss)

	errs := make([]error, len(ss))
	var wg sync.WaitGroup
	for i, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = m.end(context.Background(), s, EventKilled)
		}()
	}
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
