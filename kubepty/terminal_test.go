package kubepty

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentpty/agentpty/kubepty/kubetest"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apihttpstream "k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/tools/remotecommand"
)

// Exit codes come from the status channel, over WebSocket and over the
// SPDY fallback alike; the server's counts show which one carried them.
func TestExitCodes(t *testing.T) {
	bothProtocols(t, func(t *testing.T, spdyOnly bool, srv *kubetest.Server, b *Backend) {
		for _, code := range []int{0, 3} {
			s := start(t, b, 80, 24, "sh", "-c", "echo out-$0; tty; exit $0", itoa(code))
			s.expect(t, `out-`+itoa(code)+`\r\n/dev/pts/`)
			st, err := s.wait(t)
			if err != nil || st.Code != code {
				t.Errorf("exit %d: got %v, %v", code, st, err)
			}
		}
		ws, sp := srv.WebSocket.Load(), srv.SPDY.Load()
		if spdyOnly && sp < 2 {
			t.Errorf("SPDY carried %d execs; want the two sessions", sp)
		}
		// Once refused, the backend asks for WebSocket no more.
		if r := srv.Refused.Load(); spdyOnly && r != 1 {
			t.Errorf("WebSocket was asked for and refused %d times; want once, later execs going to SPDY directly", r)
		}
		if !spdyOnly && (ws < 2 || sp != 0) {
			t.Errorf("WebSocket carried %d execs and SPDY %d; want every one over WebSocket", ws, sp)
		}
	})
}

// The fallback needs k8s.io/streaming's IsUpgradeFailure: client-go's
// WebSocket dialer returns that package's error, which apimachinery's
// older predicate does not recognise, so with it an API server that
// refuses WebSocket is never retried over SPDY.
func TestFallbackPredicate(t *testing.T) {
	srv, b := standin(t, kubetest.SPDYOnly())
	s := start(t, b, 80, 24, "true")
	if _, err := s.wait(t); err != nil {
		t.Fatalf("through the backend's fallback: %v", err)
	}
	// Control: the same exec with apimachinery's predicate.
	u := b.core.Post().Namespace(testNS).Resource("pods").Name(testPod).SubResource("exec").
		Param("command", "true").Param("stdout", "true").URL()
	ws, err := remotecommand.NewWebSocketExecutor(b.config, "GET", u.String())
	if err != nil {
		t.Fatal(err)
	}
	sp, err := remotecommand.NewSPDYExecutor(b.config, "POST", u)
	if err != nil {
		t.Fatal(err)
	}
	fb, _ := remotecommand.NewFallbackExecutor(ws, sp, apihttpstream.IsUpgradeFailure)
	before := srv.SPDY.Load()
	err = fb.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdout: &discard{}})
	if err == nil || srv.SPDY.Load() != before {
		t.Errorf("apimachinery's IsUpgradeFailure fell back (err %v); the trap is gone", err)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// A missing pod is a clear error from New, and from Start once the pod is
// deleted: the exec itself says only that the upgrade failed.
func TestMissingPod(t *testing.T) {
	srv, b := standin(t)
	_, err := New(srv.Config(), testNS, "nope", "")
	if !errors.Is(err, ErrNoPod) || !apierrors.IsNotFound(err) {
		t.Errorf("New for a missing pod: %v; want ErrNoPod and NotFound", err)
	}
	_, err = New(srv.Config(), testNS, testPod, "sidecar")
	if !errors.Is(err, ErrNoPod) {
		t.Errorf("New for a missing container: %v; want ErrNoPod", err)
	}
	srv.DeletePod(testNS, testPod)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = b.Start(ctx, cmd("true"))
	if !errors.Is(err, ErrNoPod) || !apierrors.IsNotFound(err) {
		t.Errorf("Start in a deleted pod: %v; want ErrNoPod and NotFound", err)
	}
}

func itoa(n int) string { return string(rune('0' + n)) }

// kubectl exec works against the stand-in, over WebSocket and over SPDY
// where WebSocket is refused: the stand-in answers as an API server does.
func TestKubectlExec(t *testing.T) {
	need(t, "kubectl")
	bothProtocols(t, func(t *testing.T, spdyOnly bool, srv *kubetest.Server, _ *Backend) {
		ws, sp := srv.WebSocket.Load(), srv.SPDY.Load()
		cfg := filepath.Join(t.TempDir(), "kubeconfig")
		if err := os.WriteFile(cfg, []byte(srv.Kubeconfig(testNS)), 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := exec.CommandContext(ctx, "kubectl", "--kubeconfig", cfg, "exec", "-i", testPod, "--", "sh", "-c", `read x; echo "got $x"; exit 3`)
		c.Stdin = strings.NewReader("hi\n")
		out, err := c.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 3 || !strings.Contains(string(out), "got hi") {
			t.Errorf("kubectl exec: %v, %q; want got hi and exit code 3", err, out)
		}
		if carried := map[bool]int64{false: srv.WebSocket.Load() - ws, true: srv.SPDY.Load() - sp}[spdyOnly]; carried != 1 {
			t.Errorf("the protocol under test (SPDY only: %v) carried %d execs; want kubectl's", spdyOnly, carried)
		}
	})
}
