package agentpty

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
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

// errExitDrained is what Read returns, once, when the output the command
// wrote before it exited has all been read; reading goes on, for what a
// background job still writes.
var errExitDrained = errors.New("agentpty: the output written before the exit is read")

// terminalEchoOff reports a password prompt, where term can tell.
func terminalEchoOff(term Terminal) bool {
	sr, ok := term.(StateReader)
	return ok && sr.EchoOff()
}

// programs returns what names and vouches for the programs at a session's
// prompt (see ProgramChecker); nil where nothing can.
func (m *Manager) programs() ProgramChecker {
	if m.opts.Backend == nil {
		return localBackend{m}
	}
	pc, _ := m.opts.Backend.(ProgramChecker)
	return pc
}

// promptProgram names the program at term's prompt and its executable,
// where pc (see Manager.programs) can tell; empty otherwise.
func promptProgram(pc ProgramChecker, term Terminal) (name, exe string) {
	if pc != nil {
		return pc.AtPrompt(term)
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
		closePidfd(cmd)
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
