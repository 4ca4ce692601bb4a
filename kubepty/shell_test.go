package kubepty

import (
	"testing"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/agentptytest"
	"github.com/agentpty/agentpty/kubepty/kubetest"
)

// managers makes the shared cases' managers on b (or on opts.Backend).
func managers(b *Backend) agentptytest.NewManager {
	return func(t *testing.T, opts agentpty.Options) *agentpty.Manager {
		if opts.Backend == nil {
			opts.Backend = b
		}
		return newManagerOpts(t, opts, false)
	}
}

// The conformance suite every backend runs (package agentptytest),
// against the stand-in: shell sessions and pty-run, python3, vim,
// secrets, exit codes, resize and signals, Files.
func TestBackendCases(t *testing.T) {
	agentptytest.TestBackend(t, func(t *testing.T) agentpty.Backend {
		_, b := standin(t)
		return b
	})
}

// Over SPDY too: the run files go on the exec's stdin, whose end each
// protocol carries its own way.
func TestBackendCasesSPDY(t *testing.T) {
	agentptytest.TestBackend(t, func(t *testing.T) agentpty.Backend {
		_, b := standin(t, kubetest.SPDYOnly())
		return b
	})
}

func TestShellLostConnection(t *testing.T) {
	srv, b := standin(t)
	t.Cleanup(heartbeatsEnd)
	agentptytest.ShellLostConnection(t, managers(b), srv.Kill)
}

// A session's directory goes under the container's $TMPDIR.
func TestFilesUnderTMPDIR(t *testing.T) {
	tmp := t.TempDir()
	_, b := standin(t, kubetest.Env("TMPDIR="+tmp))
	agentptytest.FilesUnderTMPDIR(t, b, tmp)
}
