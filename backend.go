package agentpty

import (
	"context"
	"fmt"
	"os"
	"time"
)

// Backend starts commands under terminals: this machine's pseudo-terminals
// (the default, when Options.Backend is nil), another machine's (package
// sshpty), or a host's own (a cloud sandbox's PTY API, a container
// runtime). Everything a session does above the terminal (the scrollback,
// the settled text, the screen, waits, recordings, events) needs nothing
// more than a Terminal.
//
// What only the terminal's own kernel knows is an optional capability of a
// Terminal, asserted where it is used:
//
//   - StateReader: the echo mode, the foreground program and whether it
//     waits for input. Without it a session's state is "running" while the
//     program lives (never waiting_input), input_hidden is false,
//     wait_until "input" and WriteSecret fail with ErrUnsupported.
//   - Contained: what holds the processes the command starts (see
//     Session.Containment). Without it Containment is empty.
//   - TryWriter: input taken at once without blocking, so that most writes
//     need no deadline. Without it every write sets one.
//
// What only a Backend can reach is an optional capability of the Backend:
//
//   - Files: files where its commands run, for a shell session's rcfile
//     and the commands pty-run hands its shell. Without it shell sessions
//     (and so pty-run) are refused with ErrUnsupported.
//   - ProgramChecker: the executables its terminals' foreground programs
//     run, and whether a secret may be typed into them. Without it
//     Options.SecretPrograms is refused (Options.Validate) and the
//     input_hidden event names no executable.
//
// Options.Sandbox adjusts a command on this machine; with any other
// Backend, Options.Validate refuses it and nothing runs. Package
// agentptytest holds the cases every Backend should pass.
type Backend interface {
	// Start runs cmd under a new terminal of cmd.Cols by cmd.Rows, as the
	// terminal's controlling process, and returns once it runs. On error
	// nothing it started is left running. ctx bounds the start only.
	Start(ctx context.Context, cmd Command) (Terminal, error)
}

// Command is what a Backend starts.
type Command struct {
	// Argv is the program and its arguments: Options.Shell followed by the
	// request's command, or an interactive bash for a shell session.
	Argv []string
	// Env holds the variables the session sets ("K=V"), TERM first: the
	// backend adds them to the environment it gives commands (this
	// machine's: the host's own, less the host's terminal variables).
	Env []string
	// Dir is the working directory; empty means the backend's default.
	Dir string
	// Cols and Rows are the terminal's size, each at least 1.
	Cols, Rows int
	// Name is the session's id ("pty-3"), unique in its Manager, for what
	// the backend names after it (a cgroup, a log line).
	Name string
}

// Terminal is one command running under a terminal, as a Backend started
// it. A session calls Read from one goroutine, Write from one at a time,
// and the rest from any; Wait, End and Close once each.
type Terminal interface {
	// Read reads what the command wrote to the terminal. It returns
	// io.EOF once the command has exited and what it wrote was read; a
	// terminal whose output outlives the command (a background job still
	// writing) ends it a moment after the exit, as the terminal sees fit.
	Read(p []byte) (int, error)
	// Write types p as a keyboard would, blocking while the command does
	// not read its input, until the deadline SetWriteDeadline set.
	Write(p []byte) (int, error)
	// SetWriteDeadline bounds Write, as on an os.File: a Write under way
	// or begun after t returns os.ErrDeadlineExceeded with what it wrote.
	// A zero t means none. A session sets it to the past to wake a Write
	// when it is killed.
	SetWriteDeadline(t time.Time) error
	// Resize changes the terminal's size; the command is told (SIGWINCH).
	Resize(cols, rows int) error
	// Signal sends sig to the terminal's foreground process group, where
	// a key such as Ctrl-C would land, or to the command when there is
	// none.
	Signal(sig os.Signal) error
	// Wait blocks until the command exits and says how it ended. An error
	// says the terminal cannot tell (a lost connection).
	Wait() (ExitStatus, error)
	// End ends the command and everything it started: SIGTERM, SIGHUP a
	// moment later, SIGKILL once grace has passed since the start or when
	// ctx ends. Its error names what survived. The command may have
	// exited already. A nil error says Close may follow at once: a
	// terminal whose status comes over a connection has it by then, or
	// waited a bound for it.
	End(ctx context.Context, grace time.Duration) error
	// Close frees the terminal; a Read or Write under way returns. It is
	// called after End and once the output was read (or ctx of a Kill
	// ended).
	Close() error
	// PID is the command's process id on its machine; 0 when unknown.
	PID() int
}

// StateReader is the optional capability of a Terminal that reads what its
// kernel knows about it. It makes a session's state waiting_input, its
// input_hidden, wait_until "input" and WriteSecret possible.
type StateReader interface {
	// EchoOff reports a terminal in line mode that does not echo what is
	// typed: a password prompt. A program in raw mode (readline, an
	// editor) turns echo off too and does not count.
	EchoOff() bool
	// Foreground reports the terminal's foreground program now.
	Foreground() Foreground
	// OutputPending reports output on its way to the session: written by
	// the command and not yet returned by Read, or returned by the last
	// Read while no later Read has begun (the session calls Read again
	// once it has taken what the last one returned).
	OutputPending() bool
}

// Foreground is what a StateReader reports of the terminal's foreground
// process group.
type Foreground struct {
	// Name is the program ("vim", "python3"): the one waiting on the
	// terminal, else the group's leader; empty when unknown.
	Name string
	// PID is its process id on the terminal's machine; 0 when unknown.
	PID int
	// Waiting is true when a process of the group is blocked reading the
	// terminal (or polling it) and none of the group runs.
	Waiting bool
	// Quiet, with Waiting, is how long output and input must have paused
	// before the wait counts: a program that waits on more than the
	// terminal, or with a timeout, may still print without input until
	// then. Zero: at once.
	Quiet time.Duration
	// Guessed, with Waiting, is true when the program waits on more than
	// the terminal (a socket, a pty of its own, a server: ssh, a tmux
	// client, sudo's pty): whether it waits for input or for the far side
	// is not known, and the wait counts only once Quiet has passed.
	Guessed bool
	// Unread is true when the terminal holds typed input the program has
	// not read yet.
	Unread bool
}

// Contained is the optional capability of a Terminal that holds everything
// its command starts, so that End reaches it all: Containment says how
// (ContainCgroup, ContainCgroupUnbounded, ContainSession).
type Contained interface {
	Containment() string
}

// Files is the optional capability of a Backend that keeps files on the
// machine where its commands run: a shell session's directory there holds
// its rcfile and the commands pty-run hands the shell, which reads them
// as files, never as typed text. Paths are that machine's. Text holds no
// NUL byte (the library never writes one).
type Files interface {
	// MkdirTemp makes a new directory that only the backend's user can
	// read or enter (0700), in that machine's temporary directory, its
	// name starting with pattern (which holds no slash), and returns its
	// absolute path.
	MkdirTemp(ctx context.Context, pattern string) (string, error)
	// WriteFile writes data to a new file at path, readable by its owner
	// only; a file (or a symlink) already at path is an error, never
	// written through.
	WriteFile(ctx context.Context, path string, data []byte) error
	// RemoveAll removes path and everything below it; a missing path is
	// not an error.
	RemoveAll(ctx context.Context, path string) error
}

// TryWriter is the optional capability of a Terminal that takes input
// without blocking: most input fits in a terminal's buffer at once, and
// only what does not then needs a write deadline.
type TryWriter interface {
	// TryWrite writes what the terminal takes at once, never blocking, and
	// returns how many bytes of p that was (0 on any error; the Write
	// that follows reports it).
	TryWrite(p []byte) int
}

// ProgramChecker is the optional capability of a Backend that can tell
// which executables the programs at its terminals' prompts run and vouch
// for them: Options.SecretPrograms needs it, and Options.Validate refuses
// SecretPrograms with a Backend that lacks it, since every WriteSecret
// would be refused. This machine's terminals have it where /proc names
// executables (Linux). The methods are given terminals this Backend
// started.
type ProgramChecker interface {
	// AtPrompt names the program at t's prompt: the first process of its
	// foreground group that reads the terminal, else the group's leader.
	// name is its command name, exe the path of its executable on t's
	// machine; either is empty when unknown.
	AtPrompt(t Terminal) (name, exe string)
	// CheckPrograms returns nil when a line typed into t now can reach
	// only processes that run one of programs (executable names, looked
	// up in PATH, or paths, as in Options.SecretPrograms), each the very
	// file listed, owned by root, writable by no one else, untraced and
	// running no code others could write; else an error saying which
	// process may not have it and why. A process waiting for its child (a
	// shell running the prompt's program) reads nothing and is let be.
	CheckPrograms(t Terminal, programs []string) error
}

// backendName names a Backend in messages: its String, else its type.
func backendName(b Backend) string {
	if s, ok := b.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", b)
}

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
