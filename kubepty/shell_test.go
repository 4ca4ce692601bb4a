package kubepty

import (
	"testing"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/backendtest"
	"github.com/agentpty/agentpty/kubepty/kubetest"
)

// managers makes the shared cases' managers on b (or on opts.Backend).
func managers(b *Backend) backendtest.NewManager {
	return func(t *testing.T, opts agentpty.Options) *agentpty.Manager {
		if opts.Backend == nil {
			opts.Backend = b
		}
		return newManagerOpts(t, opts, false)
	}
}

// The cases every backend runs (internal/backendtest), against the
// stand-in: shell sessions and pty-run, python3, vim, secrets, exit
// codes, resize and signals.
func TestBackendCases(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) backendtest.NewManager {
		_, b := standin(t)
		return managers(b)
	})
}

// Over SPDY too: the run files go on the exec's stdin, whose end each
// protocol carries its own way.
func TestShellRunsSPDY(t *testing.T) {
	_, b := standin(t, kubetest.SPDYOnly())
	backendtest.ShellRuns(t, managers(b))
}

func TestShellNeedsFiles(t *testing.T) {
	_, b := standin(t)
	backendtest.ShellNeedsFiles(t, b, managers(b))
}

func TestShellFileCalls(t *testing.T) {
	_, b := standin(t)
	backendtest.ShellFileCalls(t, b, managers(b))
}

func TestShellLostConnection(t *testing.T) {
	srv, b := standin(t)
	t.Cleanup(heartbeatsEnd)
	backendtest.ShellLostConnection(t, managers(b), srv.Kill)
}

// A session's directory goes under the container's $TMPDIR.
func TestFilesUnderTMPDIR(t *testing.T) {
	tmp := t.TempDir()
	_, b := standin(t, kubetest.Env("TMPDIR="+tmp))
	backendtest.FilesUnderTMPDIR(t, b, tmp)
}

// A session's files land in the container, through an exec of sh each.
func TestFiles(t *testing.T) {
	_, b := standin(t)
	backendtest.Files(t, b)
}
