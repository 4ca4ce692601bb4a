package agentpty

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentpty/agentpty/internal/contain"
)

// typing is the session's side of the terminal's input.
type typing struct {
	// mu: one writer at a time on the terminal, input and query replies.
	// It is held across the write, as poll.FD holds its own.
	mu    sync.Mutex
	dying atomic.Bool  // Kill has begun: no more writes; set before, and the terminal closed under, mu
	last  atomic.Int64 // when input was last typed, unix ns; read with lastOutput by State's quietFor
}

// localBackend starts commands under this machine's pseudo-terminals: the
// Backend of a Manager whose Options.Backend is nil.
type localBackend struct{ m *Manager }

// sessionEnv is the environment a session sets, TERM first (see
// Command.Env).
func sessionEnv(extra ...[]string) []string {
	env := []string{"TERM=xterm-256color"}
	for _, e := range extra {
		env = append(env, e...)
	}
	return env
}

// errExitDrained is what Read returns, once, when the output the command
// wrote before it exited has all been read; reading goes on, for what a
// background job still writes.
var errExitDrained = errors.New("agentpty: the output written before the exit is read")

// echoOff reports a password prompt, where the terminal can tell.
func (s *Session) echoOff() bool {
	sr, ok := s.term.(StateReader)
	return ok && sr.EchoOff()
}

// programs returns what names and vouches for the programs at the
// session's prompt (see ProgramChecker); nil where nothing can.
func (s *Session) programs() ProgramChecker {
	if s.m.opts.Backend == nil {
		return localBackend{s.m}
	}
	pc, _ := s.m.opts.Backend.(ProgramChecker)
	return pc
}

// promptProgram names the program at the prompt and its executable, where the
// backend can tell; empty otherwise.
func (s *Session) promptProgram() (name, exe string) {
	if pc := s.programs(); pc != nil {
		return pc.AtPrompt(s.term)
	}
	return "", ""
}

// launch starts argv under a new terminal of cols×rows, through the
// sandbox and in a cgroup of its own where the host has them. On failure
// nothing is left behind.
func launch(m *Manager, name string, argv, env []string, dir string, cols, rows int) (*exec.Cmd, *os.File, *contain.Group, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	if m.opts.Sandbox != nil {
		if err := prepare(m.opts.Sandbox, cmd); err != nil {
			return nil, nil, nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	group := containChild(m, name, cmd)
	// A sandbox that must start the child itself (bubblewrap's parent
	// thread must outlive it) runs the start; see threadStarter.
	var f *os.File
	start := func() (err error) {
		f, err = startChild(cmd, cols, rows)
		return err
	}
	var err error
	if ts, ok := m.opts.Sandbox.(threadStarter); ok {
		err = ts.startOnThread(cmd, start)
	} else {
		err = start()
	}
	if err == nil && group != nil {
		if err = group.Started(); err != nil {
			_ = group.Kill()
			_ = cmd.Wait()
		}
	}
	if err != nil {
		if f != nil {
			f.Close() // the sandbox refused a child it had started, and reaped it
		}
		removeGroup(group)
		return nil, nil, nil, err
	}
	return cmd, f, group, nil
}

// removeGroup removes a cgroup whose processes were killed (cgroup.kill
// does not wait: a cgroup is removed once empty). nil is a no-op.
func removeGroup(group *contain.Group) {
	if group == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	_ = group.WaitEmpty(ctx)
	cancel()
	_ = group.Remove()
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
	s.typing.mu.Lock()
	defer s.typing.mu.Unlock()
	if s.typing.dying.Load() {
		return 0, s.errKilled()
	}
	s.seen.changing()
	// Most input fits in the local terminal's buffer at once; only what
	// does not needs a deadline.
	defer s.typing.last.Store(time.Now().UnixNano())
	done := 0
	if tw, ok := s.term.(TryWriter); ok {
		if done = tw.TryWrite(p); done == len(p) {
			return done, nil
		}
	}
	p = p[done:]
	_ = s.term.SetWriteDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = s.term.SetWriteDeadline(time.Now()) })
	n, err := s.term.Write(p)
	stop()
	_ = s.term.SetWriteDeadline(time.Time{})
	if err != nil && s.typing.dying.Load() {
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
	s.seen.changing()
	s.typing.dying.Store(true)
	_ = s.term.SetWriteDeadline(time.Now())
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
	s.seen.changing()
	if err := s.term.Signal(sig); err != nil {
		return fmt.Errorf("agentpty: %s: signal %v: %w", s.id, sig, err)
	}
	return nil
}
