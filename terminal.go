package agentpty

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/agentpty/agentpty/internal/contain"
)

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

// startRemote starts a session through Options.Backend. What only this
// machine can give (a sandbox, a shell session's files, the login shell's
// snapshot) is refused before anything runs.
func startRemote(m *Manager, num int, req StartRequest, cols, rows int) (*Session, error) {
	switch {
	case m.opts.Sandbox != nil:
		return nil, errorf(ErrUnsupported, "%s %q: Options.Sandbox confines commands on this machine; the backend cannot apply it", ToolStart, req.Command)
	case req.Shell:
		return nil, errorf(ErrUnsupported, "%s: shell sessions run on this machine only", ToolStart)
	}
	argv := append(append([]string(nil), m.opts.Shell...), req.Command)
	cmd := Command{Argv: argv, Env: sessionEnv(m.opts.Env, req.Env), Dir: req.Cwd, Cols: cols, Rows: rows, Name: "pty-" + strconv.Itoa(num)}
	term, err := m.opts.Backend.Start(context.Background(), cmd)
	if err != nil {
		return nil, fmt.Errorf("agentpty: %s %q: %w", ToolStart, req.Command, err)
	}
	return newSession(m, num, req, cols, rows, term, nil), nil
}

// errExitDrained is what Read returns, once, when the output the command
// wrote before it exited has all been read; reading goes on, for what a
// background job still writes.
var errExitDrained = errors.New("agentpty: the output written before the exit is read")

// checkInputWait refuses wait_until where the terminal cannot tell that
// its program waits for input: a wait would only run out.
func (s *Session) checkInputWait(tool, waitUntil string) error {
	if _, ok := s.term.(StateReader); ok || waitUntil == "" {
		return nil
	}
	return errorf(ErrUnsupported, "%s %s: wait_until %q: this session's terminal cannot tell when its program waits for input", tool, s.id, waitUntil)
}

// echoOff reports a password prompt, where the terminal can tell.
func (s *Session) echoOff() bool {
	sr, ok := s.term.(StateReader)
	return ok && sr.EchoOff()
}

// fgProcs lists the foreground group's processes, where the terminal is
// this machine's; nil elsewhere.
func (s *Session) fgProcs() []fgProc {
	if t, ok := s.term.(interface{ fgProcs() []fgProc }); ok {
		return t.fgProcs()
	}
	return nil
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
