//go:build linux

package sshpty

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/agentptytest"
	"github.com/agentpty/agentpty/internal/sshdtest"
	"golang.org/x/crypto/ssh"
)

// The conformance suite every backend runs (package agentptytest), over
// a real OpenSSH server: shell sessions and pty-run, python3, vim,
// secrets, exit codes, resize and signals, Files.
func TestBackendCases(t *testing.T) {
	agentptytest.TestBackend(t, func(t *testing.T) agentpty.Backend {
		_, c := connect(t)
		return New(c)
	})
}

// managersOver makes the shared cases' managers over c.
func managersOver(c *ssh.Client) agentptytest.NewManager {
	return func(t *testing.T, opts agentpty.Options) *agentpty.Manager { return newManager(t, c, opts) }
}

func TestShellLostConnection(t *testing.T) {
	srv, c := connect(t)
	agentptytest.ShellLostConnection(t, managersOver(c), srv.Kill)
}

// A session's directory goes under the host's $TMPDIR.
func TestFilesUnderTMPDIR(t *testing.T) {
	tmp := t.TempDir()
	srv := sshdtest.StartWith(t, sshdtest.Options{SetEnv: []string{"TMPDIR=" + tmp}})
	agentptytest.FilesUnderTMPDIR(t, New(dial(t, srv, srv.ClientConfig())), tmp)
}

// On a host without /proc a shell session follows its prompt by the
// marks alone: the start returns at the prompt and runs end with their
// exit codes.
func TestShellHostWithoutProc(t *testing.T) {
	noProc = true
	defer func() { noProc = false }()
	_, c := connect(t)
	m := newManager(t, c, agentpty.Options{})
	// Were it waiting for waiting_input, which never comes, it would wait
	// all of wait_ms and the context would end first.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := m.Start(ctx, agentpty.StartRequest{Shell: true, WaitMS: ms(120000)})
	if err != nil || res.State != agentpty.StateRunning || !strings.HasSuffix(res.Output, "$ ") && !strings.HasSuffix(res.Output, "# ") {
		t.Fatalf("start: %+v %v; want the prompt, state running", res, err)
	}
	r := agentptytest.MustRun(t, m, res.ID, "echo hi; (exit 6)")
	if r.Output != "hi" || !r.PromptAfter || r.ExitCode == nil || *r.ExitCode != 6 {
		t.Errorf("run: %+v", r)
	}
	// Signal requests do not reach a root login's session: the shell ends
	// itself.
	if r = agentptytest.MustRun(t, m, res.ID, "exit 2"); !r.Exited || r.ExitCode == nil || *r.ExitCode != 2 {
		t.Errorf("exit 2: %+v", r)
	}
}

// Kill of a shell session on a server that stopped answering returns: the
// question whether the connection lives and the wait for the probe
// shell's reader are bounded (aliveWait each), and the removal of the
// session's files ends with Kill's context instead of waiting out its own
// 10 s. What is left: the context (2 s), the SIGKILL attempt's bound (2 ×
// killBound), 2 × aliveWait. Before, it hung.
func TestShellKillFrozenServer(t *testing.T) {
	srv, c := connect(t)
	m := newManager(t, c, agentpty.Options{})
	res := agentptytest.StartShell(t, m)
	agentptytest.MustRun(t, m, res.ID, "true")
	thaw := srv.Freeze()
	defer thaw()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	began := time.Now()
	_, err := m.Kill(ctx, res.ID)
	if took, most := time.Since(began), 2*time.Second+2*killBound+2*aliveWait+3*time.Second; took > most || err == nil {
		t.Errorf("Kill with a 2 s context on a frozen server took %v, at most %v allowed, and returned %v; want an error", took, most, err)
	}
	thaw()
}
