package kubepty

import (
	"testing"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/backendtest"
	"github.com/agentpty/agentpty/kubepty/kubetest"
)

// Shell sessions and pty-run in the pod: the library's cases for every
// backend (internal/backendtest), against the stand-in.

// managers makes the shared cases' managers on b (or on opts.Backend);
// lost: their server will be gone when they close.
func managers(b *Backend, lost bool) backendtest.NewManager {
	return func(t *testing.T, opts agentpty.Options) *agentpty.Manager {
		if opts.Backend == nil {
			opts.Backend = b
		}
		return newManagerOpts(t, opts, lost)
	}
}

// Over both protocols: the run files go on the exec's stdin, whose end
// each carries its own way.
func TestShellRuns(t *testing.T) {
	bothProtocols(t, func(t *testing.T, _ bool, _ *kubetest.Server, b *Backend) {
		backendtest.ShellRuns(t, managers(b, false))
	})
}

func TestShellFiles(t *testing.T) {
	_, b := standin(t)
	backendtest.ShellFiles(t, managers(b, false))
}

func TestShellNeedsFiles(t *testing.T) {
	_, b := standin(t)
	backendtest.ShellNeedsFiles(t, b, managers(b, false))
}

func TestShellLostConnection(t *testing.T) {
	srv, b := standin(t)
	t.Cleanup(heartbeatsEnd)
	backendtest.ShellLostConnection(t, managers(b, false), srv.Kill)
}

// A session's files land in the container, through an exec of sh each.
func TestFiles(t *testing.T) {
	_, b := standin(t)
	backendtest.Files(t, b)
}
