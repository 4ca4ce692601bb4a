package agentpty

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
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

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// Validate reports options that contradict each other, or hold a value
// no session could use, in one error naming the fields involved and
// wrapping ErrInvalid; nil when they are fine. NewManager keeps what it
// returns, and every Start of that manager then fails with it before
// anything is approved or runs, so a host learns it at its first start
// rather than as an odd failure of some later call; a host may call it
// itself before NewManager.
//
// What it refuses:
//   - Backend with Sandbox: the sandbox confines commands of this machine
//     only (the error wraps ErrUnsupported too, as starts did before).
//   - Backend with SecretPrograms, when the Backend is no ProgramChecker:
//     every WriteSecret would be refused.
//   - Backend with SecretRelays: whether a relay's terminal echoes
//     nothing itself is read on this machine's terminals only, so every
//     WriteSecret through a relay would be refused.
//   - Backend with MaxMemory or MaxProcesses set: they bound this
//     machine's cgroups only.
//   - Cols or Rows outside 0–1000 and 0–500, an empty (non-nil) Shell,
//     and a default size (Cols×Rows) over MaxCells, which would refuse
//     every start that gives no size.
//
// ApproveWrites without an Approver is no contradiction: nil approves
// everything, so writes are not asked about and cost nothing more.
// ShellSnapshot with a Backend or another Shell is none either: it does
// not apply there, and each start's Notice says so for a Backend.
func (o Options) Validate() error {
	var msgs []string
	bad := func(format string, args ...any) {
		msgs = append(msgs, fmt.Sprintf(format, args...))
	}
	e := &optionsError{is: []error{ErrInvalid}}
	if o.Backend != nil {
		name := backendName(o.Backend)
		if o.Sandbox != nil {
			bad("Options.Backend (%s) and Options.Sandbox: the sandbox confines commands on this machine; the backend cannot apply it", name)
			e.is = append(e.is, ErrUnsupported)
		}
		if _, ok := o.Backend.(ProgramChecker); !ok && o.SecretPrograms != nil {
			bad("Options.Backend (%s) and Options.SecretPrograms: the backend cannot name the programs at its prompts (it is no ProgramChecker), so every WriteSecret would be refused", name)
		}
		if o.SecretRelays != nil {
			bad("Options.Backend (%s) and Options.SecretRelays: whether a relay's terminal echoes nothing itself can be told on this machine only, so every WriteSecret through a relay would be refused", name)
		}
		if o.MaxMemory != 0 {
			bad("Options.Backend (%s) and Options.MaxMemory %d: the bound applies to this machine's sessions only", name, o.MaxMemory)
		}
		if o.MaxProcesses != 0 || o.MaxProcessesTotal != 0 {
			bad("Options.Backend (%s) and Options.MaxProcesses %d / MaxProcessesTotal %d: the bounds apply to this machine's sessions only", name, o.MaxProcesses, o.MaxProcessesTotal)
		}
	}
	if o.Shell != nil && len(o.Shell) == 0 {
		bad("Options.Shell is empty; nil means bash -lc")
	}
	if o.Cols < 0 || o.Cols > maxCols {
		bad("Options.Cols %d is outside 0-%d", o.Cols, maxCols)
	}
	if o.Rows < 0 || o.Rows > maxRows {
		bad("Options.Rows %d is outside 0-%d", o.Rows, maxRows)
	}
	d := o.withDefaults()
	if d.Cols > 0 && d.Rows > 0 && d.Cols*d.Rows > d.MaxCells {
		bad("Options.Cols×Rows (%d×%d) and Options.MaxCells %d: every start without a size would be refused", d.Cols, d.Rows, d.MaxCells)
	}
	if len(msgs) == 0 {
		return nil
	}
	e.msg = ErrInvalid.Error() + ": options: " + strings.Join(msgs, "; ")
	return e
}

// optionsError is Validate's error: its message names the fields, and it
// is ErrInvalid (and ErrUnsupported for a sandbox a backend cannot apply)
// for errors.Is.
type optionsError struct {
	msg string
	is  []error
}

func (e *optionsError) Error() string   { return e.msg }
func (e *optionsError) Unwrap() []error { return e.is }

// defaultProcessesTotal is half of the machine's pid_max, so that the
// sessions of one Manager leave the host room to fork; -1 (no bound)
// where the kernel does not say.
func defaultProcessesTotal() int {
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 2 {
		return -1
	}
	return n / 2
}
