//go:build linux || darwin

package agentpty

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentpty/agentpty/internal/contain"
	"github.com/agentpty/agentpty/internal/proc"
)

// Output that arrives after the exit still counts as the program's.
const (
	exitDrain    = 25 * time.Millisecond // after exit, output still arriving within this is the program's
	exitDrainMax = 40                    // ... at most this many times over
)

// localTerminal is a command under a pseudo-terminal of this machine: the
// default Terminal, and the fastest (reads go straight from the master
// into the session's buffer, through the runtime poller).
type localTerminal struct {
	f       *os.File // the master, non-blocking
	pid     int
	child   childWaiter    // reaps the command (reap_linux.go)
	group   *contain.Group // the command's cgroup; nil where the host has none
	kind    string         // what holds the processes (Containment)
	sandbox Sandbox        // to read the exit status through (statusMapper)
	tr      *terminalReader
	busy    atomic.Bool // Read holds bytes the session has not taken (see terminalReader)
	exited  atomic.Bool // the command has been reaped
	procs   procFiles   // the slave and the foreground leader's /proc files, kept open for Foreground
	ending  ending      // End's one run, alone or with the other sessions Close ends (endall_unix.go)
	// Read's end-of-output state; only Read touches it.
	eio    bool
	drains int
}

// Start starts c under a new pseudo-terminal (see launch).
func (b localBackend) Start(_ context.Context, c Command) (Terminal, error) {
	cmd, f, group, err := launch(b.m, c.Name, c.Argv, childEnv(c.Env), c.Dir, c.Cols, c.Rows)
	if err != nil {
		return nil, hostLimit(err, false)
	}
	t, err := newLocalTerminal(b.m, cmd, f, group)
	if err != nil {
		killAll(cmd.Process.Pid, group)
		_ = cmd.Wait()
		closePidfd(cmd)
		f.Close()
		removeGroup(group)
		return nil, err
	}
	return t, nil
}

// newLocalTerminal wraps a command launch started.
func newLocalTerminal(m *Manager, cmd *exec.Cmd, f *os.File, group *contain.Group) (*localTerminal, error) {
	t := &localTerminal{f: f, pid: cmd.Process.Pid, group: group, kind: ContainSession, sandbox: m.opts.Sandbox}
	if group != nil {
		t.kind = m.contain.Kind() // set before the session existed, never changed
	}
	tr, err := newTerminalReader(f, &t.busy)
	if err != nil {
		return nil, err
	}
	t.tr = tr
	t.child = newChildWaiter(cmd) // last: cmd.Process is released
	return t, nil
}

// Read reads the master. Linux can report EIO as the last writer closes
// while its final output is still on its way to the master: only a
// second EIO in a row, with nothing read between, ends the output. After
// the command exits (Wait sets a read deadline), output still arriving
// within exitDrain is the command's; a background job that keeps writing
// must not hold the session's Wait forever.
func (t *localTerminal) Read(p []byte) (int, error) {
	for {
		n, err := t.tr.read(p)
		if n > 0 {
			t.eio = false
			return n, nil
		}
		t.busy.Store(false) // nothing held
		switch {
		case errors.Is(err, syscall.EIO) && !t.eio:
			t.eio = true
		case errors.Is(err, os.ErrDeadlineExceeded):
			if t.drains++; t.drains < exitDrainMax && pendingInput(t.f) > 0 {
				_ = t.f.SetReadDeadline(time.Now().Add(exitDrain))
				continue
			}
			_ = t.f.SetReadDeadline(time.Time{})
			return 0, errExitDrained
		default:
			// EIO again: nothing holds the terminal open any more.
			return 0, io.EOF
		}
	}
}

// Write types p; most input fits in the terminal's buffer at once, and
// only what does not goes through the poller and its deadline.
func (t *localTerminal) Write(p []byte) (int, error) {
	done := tryWrite(t.f, p)
	if done == len(p) {
		return done, nil
	}
	n, err := t.f.Write(p[done:])
	return done + n, err
}

// TryWrite writes what the terminal takes without waiting: the session
// tries it before it sets a write deadline (see TryWriter).
func (t *localTerminal) TryWrite(p []byte) int { return tryWrite(t.f, p) }

func (t *localTerminal) SetWriteDeadline(d time.Time) error { return t.f.SetWriteDeadline(d) }
func (t *localTerminal) Resize(cols, rows int) error        { return setSize(t.f, cols, rows) }
func (t *localTerminal) Signal(sig os.Signal) error {
	return signalForeground(t.f, t.PID(), sig)
}
func (t *localTerminal) Close() error { return t.f.Close() }
func (t *localTerminal) PID() int     { return t.pid }

// Wait reaps the command and asks Read to finish the output that was on
// its way: the read deadline wakes it if nothing more comes, and is
// harmless after end of file.
func (t *localTerminal) Wait() (ExitStatus, error) {
	st := t.child.wait()
	t.exited.Store(true)
	// Foreground reads no process once exited, and the master ends the
	// output only once no one holds the slave.
	t.procs.Close()
	if sm, ok := t.sandbox.(statusMapper); ok {
		st = sm.childStatus(st)
	}
	_ = t.f.SetReadDeadline(time.Now().Add(exitDrain))
	return st, nil
}

// End ends every process the command started (see endProcesses), or
// waits for Close, which ends them together with other sessions'.
func (t *localTerminal) End(ctx context.Context, grace time.Duration) error {
	if !t.ending.claim() {
		return t.ending.wait(ctx)
	}
	err := endProcesses(ctx, t.containment(), grace)
	t.ending.finish(err)
	return err
}

// containment returns what holds the command's processes.
func (t *localTerminal) containment() container {
	pid := t.PID()
	sc := sessionContainer{Tracker: proc.NewTracker(pid), sid: pid, exited: t.exited.Load}
	if t.group != nil {
		sc.Except = t.group.Members
		return &cgroupContainer{g: t.group, s: sc, child: t.child}
	}
	return sc
}

// Containment says what holds the command's processes.
func (t *localTerminal) Containment() string { return t.kind }

// EchoOff reports a password prompt (see echoOff).
func (t *localTerminal) EchoOff() bool { return echoOff(t.f) }

// Foreground reads the foreground process group from the kernel.
func (t *localTerminal) Foreground() Foreground {
	fg := foregroundVia(t.f, &t.procs)
	return Foreground{Name: fg.name, PID: fg.pid, Waiting: fg.waiting, Quiet: fg.quiet, Guessed: fg.guessed, Unread: fg.unread}
}

// OutputPending polls the master before it reads the reader's flag: bytes
// Read took before the poll have the flag set by then.
func (t *localTerminal) OutputPending() bool { return readable(t.f) || t.busy.Load() }

// AtPrompt names the program at a local terminal's prompt (see
// ProgramChecker).
func (localBackend) AtPrompt(t Terminal) (name, exe string) {
	lt, ok := t.(*localTerminal)
	if !ok {
		return "", ""
	}
	a := asker(fgProcs(lt.f))
	return a.name, a.exe
}

// CheckPrograms judges the processes of a local terminal's foreground
// group, then every other process on the machine that holds the terminal
// (see ProgramChecker, checkPrograms and soleReader).
func (localBackend) CheckPrograms(t Terminal, programs []string) error {
	lt, ok := t.(*localTerminal)
	if !ok {
		return errors.New("the terminal is not one of this machine's")
	}
	procs := fgProcs(lt.f)
	if err := checkPrograms(procs, programs); err != nil {
		return err
	}
	return soleReader(lt.f, procs)
}

// echoesNothing reports that the terminal itself echoes nothing typed.
func (t *localTerminal) echoesNothing() bool { return echoesNothing(t.f) }
