// Package sshpty runs agentpty sessions on another machine over SSH: each
// session is one channel of the connection with a pseudo-terminal
// ("pty-req" with the size and TERM, "window-change" on resize, the exit
// from "exit-status" or "exit-signal"), so everything the library derives
// from the terminal's bytes works as it does locally.
//
// Against a Linux host it also reads what the local library reads from
// the kernel (the foreground process group's /proc entries, the
// terminal's echo flag), through the same connection and with tools every
// Linux host has (sh, stty, kill): sessions get their state, input_hidden,
// wait_until "input" and WriteSecret. Where /proc cannot be read the
// terminal lacks that capability and the session says so (ErrUnsupported,
// a state of running). The probe shell that reads it is one channel of
// the connection, shared by its sessions: a probe costs a round trip and
// the shell's builtins there, and a read of the echo flag when a process
// of the command ran since the last (a line to one perl that reads every
// terminal's modes, where the host has perl; else a stty); one probe
// serves a result's state, echo flag and input_hidden.
//
// Nothing is copied to the remote side: commands start through a fixed
// line run by the user's login shell, which prints the command's process
// id (a private OSC sequence the terminal's reader removes) and then
// execs the command, so the process the session knows is the command.
// A shell session's rcfile and pty-run's commands are files on the host,
// written through the probe shell (see MkdirTemp); the session needs bash
// there.
package sshpty

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentpty/agentpty"
	"golang.org/x/crypto/ssh"

	"github.com/agentpty/agentpty/remote"
)

// Backend starts agentpty sessions over one SSH connection, one channel
// each. Use it as agentpty.Options.Backend.
type Backend struct {
	client *ssh.Client
	host   string // user@address, for messages
	stop   func() // ends what Dial added to the connection (keepalives)
	// parent is the Backend whose connection refused a session this
	// connection was dialed for: the probe shell and what the host
	// offers are parent's (see fleet.go).
	parent *Backend
	dial   dialer     // opens another connection to the host; nil: none
	grow   sync.Mutex // one start at a time looks past the first connection

	warming sync.WaitGroup // the probe shells acquire starts ahead (Close waits for them)

	mu     sync.Mutex // guards the fields below
	info   *hostInfo  // what the host offers, learnt at the first start
	helper *helper    // the shell that answers probes, shared by the live terminals
	users  int        // live terminals holding helper
	more   []*Backend // the connections dial added, oldest first
	closed bool       // Close was called: dial adds no connection
	ends   endQueue   // the sessions waiting to end together
}

// New returns a Backend that runs sessions over client, a connection the
// host dialed: its authentication, host key checking and jump hosts stay
// the host's business, and so does closing it.
func New(client *ssh.Client) *Backend {
	return &Backend{client: client, host: client.User() + "@" + client.RemoteAddr().String()}
}

// Options are a Backend's settings beyond its connection.
type Options struct {
	// Dial opens another connection to the same host, for the sessions
	// the server refuses on the connections the Backend has: OpenSSH
	// allows MaxSessions channels a connection (10 unless sshd_config
	// says otherwise), and each session is one, as is the probe shell
	// the sessions on a Linux host share. The Backend closes the
	// connections Dial returned when it closes. It must reach the same
	// host: the probe shell, on the first connection, reads every
	// session's processes. Nil: a start past the limit fails with
	// agentpty.ErrTooManySessions, naming MaxSessions.
	Dial func(ctx context.Context) (*ssh.Client, error)
}

// NewWith is New with opts.
func NewWith(client *ssh.Client, opts Options) *Backend {
	b := New(client)
	if opts.Dial != nil {
		b.dial = func(ctx context.Context) (*ssh.Client, func(), error) {
			c, err := opts.Dial(ctx)
			return c, nil, err
		}
	}
	return b
}

// String names the backend and its host: "ssh root@10.0.0.7:22".
func (b *Backend) String() string { return "ssh " + b.host }

// Close closes the connection, which ends every session on it, and the
// connections Options.Dial added. A Backend from New closes the client
// the host gave it.
func (b *Backend) Close() error {
	b.mu.Lock()
	more := b.more
	b.more, b.closed = nil, true
	b.mu.Unlock()
	for _, c := range more {
		_ = c.Close()
	}
	if b.stop != nil {
		b.stop()
	}
	err := b.client.Close()
	b.warming.Wait() // a probe shell starting ahead fails on the closed connection
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// hostInfo is what a host offers for reading terminal state, learnt once.
type hostInfo struct {
	linux bool   // /proc can be read: state, echo and containment by session
	arch  string // uname -m, for the numbers of system calls
	posix bool   // the user's login shell reads POSIX sh: a start's script goes to it directly
}

// posixShells are the login shells that run a start's script as /bin/sh
// would, so that it needs no /bin/sh of its own (see commandLine).
var posixShells = []string{"sh", "bash", "dash", "ksh", "ksh93", "mksh", "zsh", "ash", "yash"}

// learnLine prints the host's architecture, "proc" where /proc can be
// read, and the user's login shell as the password database names it
// (the shell sshd runs; $SHELL is the user's to change): from
// /etc/passwd with the shell's builtins, else getent (a directory's
// users).
const learnLine = `echo "$Q" $(uname -m); [ -r /proc/self/stat ] && [ -r /proc/self/syscall ] && echo "$Q proc"; ` +
	`u=${UID:-$(id -u)} l=''; while IFS=: read -r _ _ i _ _ _ s; do [ "$i" != "$u" ] || { l=$s; break; }; done </etc/passwd; ` +
	`[ -n "$l" ] || { l=$(getent passwd "$u"); l=${l##*:}; }; echo "$Q shell $l"`

// noProc makes every host look like one without /proc, for the tests of
// what sessions say there.
var noProc = false

// acquire counts a terminal in and returns what the host offers, learnt
// once through the probe shell. A terminal on a host without /proc does
// not hold the shell. Once the host is known, a cold probe shell (it ends
// with the last terminal) starts beside the session's own channel, not
// at the first probe after it: a start with no other session live would
// otherwise wait for the shell's channel, its start and its answer in
// turn. The first start learns before its channel opens, so that the
// probe shell has its channel before the sessions (MaxSessions).
func (b *Backend) acquire(name string) (*hostInfo, error) {
	if b.parent != nil {
		return b.parent.acquire(name)
	}
	b.mu.Lock()
	b.users++
	info, cold := b.info, b.helper == nil
	b.mu.Unlock()
	if info == nil {
		return b.learn(name)
	}
	if !info.linux {
		b.release()
	} else if cold {
		b.warming.Go(b.warm)
	}
	return info, nil
}

// learn asks the probe shell what the host offers, for acquire, and
// counts the terminal out again where it will not hold the shell.
func (b *Backend) learn(name string) (*hostInfo, error) {
	out, err := b.shellRun(context.Background(), learnLine, false)
	if err != nil {
		b.release()
		return nil, b.lostOr(name, err)
	}
	info := &hostInfo{}
	for i, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		switch {
		case i == 0 && len(f) > 0:
			info.arch = f[0]
		case len(f) == 1 && f[0] == "proc":
			info.linux = !noProc
		case len(f) == 2 && f[0] == "shell":
			info.posix = slices.Contains(posixShells, path.Base(f[1]))
		}
	}
	b.mu.Lock()
	b.info = info
	b.mu.Unlock()
	if !info.linux {
		b.release()
	}
	return info, nil
}

// warm starts the probe shell for a terminal that will probe. It holds
// the shell while it starts it, as a terminal does: when every terminal
// was counted out meanwhile (a start that failed), its release is the
// last and closes the shell.
func (b *Backend) warm() {
	b.hold()
	defer b.release()
	_, _ = b.probeShell() // on failure the first probe tries again, and says what failed
}

// hold counts a holder of the probe shell in, as acquire counts a
// terminal; release counts it out.
func (b *Backend) hold() {
	b.mu.Lock()
	b.users++
	b.mu.Unlock()
}

// aliveWait bounds alive's question: a server that does not answer
// within it (stopped, or its host gone silent) counts as lost, so that
// Kill and the errors that ask never hang on it.
const aliveWait = 2 * time.Second

// alive reports whether the connection still carries requests. The
// request's goroutine outlives a silent server until the connection
// answers or closes.
func (b *Backend) alive() bool {
	answered := make(chan error, 1)
	go func() {
		_, _, err := b.client.SendRequest("keepalive@openssh.com", true, nil)
		answered <- err
	}()
	tm := time.NewTimer(aliveWait)
	defer tm.Stop()
	select {
	case err := <-answered:
		return err == nil
	case <-tm.C:
		return false
	}
}

// lostOr names err as a lost connection when it is one.
func (b *Backend) lostOr(name string, err error) error {
	if !b.alive() {
		return &LostError{Backend: b.String(), Session: name, Err: err}
	}
	return fmt.Errorf("%s (%s): %w", b, name, err)
}

// LostError says a session's connection is gone: its sessions end as
// exited with it, and new ones cannot start. errors.Is(err,
// agentpty.ErrClosed) holds.
type LostError struct {
	Backend string // "ssh user@host:port"
	Session string // the session's id, when there is one
	Err     error  // what the connection returned
}

// Error reads "ssh root@10.0.0.7:22 (pty-3): the connection is lost
// (EOF)": the library puts it after its own words on the session.
func (e *LostError) Error() string {
	s := e.Backend
	if e.Session != "" {
		s += " (" + e.Session + ")"
	}
	return s + ": the connection is lost (" + e.Err.Error() + ")"
}

// Unwrap lets errors.Is find agentpty.ErrClosed and the cause.
func (e *LostError) Unwrap() []error { return []error{agentpty.ErrClosed, e.Err} }

// Start runs cmd on the host under a new pseudo-terminal and returns once
// the host has reported the command's process id (or the command ended
// before it could). It implements agentpty.Backend.
func (b *Backend) Start(ctx context.Context, cmd agentpty.Command) (term agentpty.Terminal, err error) {
	script, termName, nonce, err := commandLine(cmd)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s (%s): start: %w", b, cmd.Name, err)
	}
	info, err := b.acquire(cmd.Name)
	if err != nil {
		return nil, err
	}
	line := script
	if !info.posix {
		line = loginLine(script)
	}
	if info.linux {
		defer func() {
			if term == nil {
				b.release()
			}
		}()
	}
	conn, sess, in, out, err := b.openSession(ctx, cmd, termName, line)
	if err != nil {
		return nil, err
	}
	t := newTerminal(conn, cmd.Name, nonce, sess, in, info)
	go t.out.Pump(out)
	go t.copyIn()
	go t.watch()
	pid, err := t.awaitPID(ctx)
	if err != nil {
		t.Close()
		return nil, err
	}
	t.pid = pid
	if info.linux {
		t.held = true
		if pid > 0 {
			return stateTerminal{t}, nil
		}
	}
	return t, nil
}

// openSession opens a channel with a pseudo-terminal of cmd's size and
// runs line there, on the connection it returns (see newSession).
func (b *Backend) openSession(ctx context.Context, cmd agentpty.Command, termName, line string) (*Backend, *ssh.Session, io.WriteCloser, io.Reader, error) {
	conn, sess, err := b.newSession(ctx, cmd.Name)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	// No modes: the pseudo-terminal keeps the kernel's defaults, as a
	// local one does.
	err = sess.RequestPty(termName, cmd.Rows, cmd.Cols, ssh.TerminalModes{})
	var in io.WriteCloser
	var out io.Reader
	if err == nil {
		in, err = sess.StdinPipe()
	}
	if err == nil {
		out, err = sess.StdoutPipe()
	}
	if err == nil {
		_, err = sess.StderrPipe() // a pty has none; no copier for it
	}
	if err == nil {
		err = sess.Start(line)
	}
	if err != nil {
		sess.Close()
		return nil, nil, nil, nil, conn.lostOr(cmd.Name, err)
	}
	return conn, sess, in, out, nil
}

// commandLine is the script that starts cmd, in POSIX sh, TERM, and the
// nonce of its process-id mark. A login shell that reads POSIX sh
// (posixShells) is given it as it is; any other (fish, tcsh) hands it to
// /bin/sh (see loginLine), one process start more.
func commandLine(cmd agentpty.Command) (script, term, nonce string, err error) {
	if len(cmd.Argv) == 0 || cmd.Argv[0] == "" {
		return "", "", "", fmt.Errorf("%w: %s: no command to run", agentpty.ErrInvalid, cmd.Name)
	}
	if cmd.Cols < 1 || cmd.Rows < 1 {
		return "", "", "", fmt.Errorf("%w: %s: terminal size %dx%d", agentpty.ErrInvalid, cmd.Name, cmd.Cols, cmd.Rows)
	}
	nonce = remote.NewNonce()
	term = "xterm-256color"
	var b strings.Builder
	if strings.Contains(cmd.Dir+strings.Join(cmd.Env, "")+strings.Join(cmd.Argv, ""), "\n") {
		// For shWord; a command substitution forks, so only when a word needs it.
		b.WriteString(`nl=$(printf '\nx'); nl=${nl%x}; `)
	}
	if cmd.Dir != "" {
		fmt.Fprintf(&b, "cd %s 2>/dev/null || { printf '%s' %s nodir; exit 1; }; ", shWord(cmd.Dir), remote.MarkFormat, nonce)
	}
	for _, kv := range cmd.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !isName(k) {
			return "", "", "", fmt.Errorf("%w: %s: environment entry %q is not NAME=value", agentpty.ErrInvalid, cmd.Name, kv)
		}
		if k == "TERM" {
			term = v
		}
		fmt.Fprintf(&b, "export %s=%s; ", k, shWord(v))
	}
	// The start mark (remote.Output): "nodir", or the pid the command keeps.
	fmt.Fprintf(&b, "printf '%s' %s \"$$\"; exec", remote.MarkFormat, nonce)
	for _, a := range cmd.Argv {
		b.WriteString(" " + shWord(a))
	}
	return b.String(), term, nonce, nil
}

// loginLine is the line that has the login shell (sshd runs "$SHELL -c
// LINE") hand script, which holds no newline, to /bin/sh: quoted so
// that a POSIX shell, fish, csh and tcsh all read it as the same word.
// Inside '…' each takes every character as it is but for ' itself,
// fish's \\ and \', and csh's ! (history) and newline: ', \ and ! are
// written outside the quotes after a backslash, which all of them read
// as the character. A login shell that runs no commands (nologin) prints
// its refusal instead, and the start fails with it.
func loginLine(script string) string {
	var b strings.Builder
	b.WriteString("exec /bin/sh -c '")
	for i := 0; i < len(script); i++ {
		switch c := script[i]; c {
		case '\'', '\\', '!':
			b.WriteString("'\\" + string(c) + "'")
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// shWord quotes s as one word of the script /bin/sh runs; a newline in
// it is written "$nl" (set at the script's start to a newline), since csh
// cannot quote one in the line that carries the script.
func shWord(s string) string {
	return strings.ReplaceAll(quote(s), "\n", `'"$nl"'`)
}

// quote quotes s for a POSIX shell.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// isName reports a valid shell variable name.
func isName(s string) bool {
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// release counts a terminal out; the last one out closes the probe
// shell, so nothing of it outlives the sessions.
func (b *Backend) release() {
	if b.parent != nil {
		b.parent.release()
		return
	}
	b.mu.Lock()
	b.users--
	var h *helper
	if b.users == 0 {
		h, b.helper = b.helper, nil
	}
	b.mu.Unlock()
	if h != nil {
		h.close()
	}
}

// probeShell returns the shell that answers probes, starting it if needed.
func (b *Backend) probeShell() (*helper, error) {
	if b.parent != nil {
		return b.parent.probeShell()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.helper != nil && b.helper.err() == nil {
		return b.helper, nil
	}
	if b.helper != nil {
		go b.helper.close()
	}
	h, err := startHelper(b.client)
	if err != nil {
		b.helper = nil
		return nil, err
	}
	b.helper = h
	return h, nil
}
