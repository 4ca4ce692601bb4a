//go:build unix

package agentpty

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentpty/agentpty/internal/sshdtest"
)

// testSSHD is an OpenSSH server of the test's own on 127.0.0.1
// (internal/sshdtest), and its port.
type testSSHD struct {
	*sshdtest.Server
	Port int
}

// sshdOptions says who may log in to a testSSHD.
type sshdOptions = sshdtest.Options

// startTestSSHD starts an sshd for the test and stops it when the test
// ends. It skips the test when sshd or the ssh client is missing (fails
// under AGENTPTY_REQUIRE=all).
func startTestSSHD(t *testing.T, opts sshdOptions) *testSSHD {
	t.Helper()
	need(t, "ssh")
	srv := sshdtest.StartWith(t, opts)
	_, port, _ := net.SplitHostPort(srv.Addr)
	n, _ := strconv.Atoi(port)
	return &testSSHD{srv, n}
}

// TestSSHDHelper: the helper's server lets the key in and runs a command.
func TestSSHDHelper(t *testing.T) {
	x := startTestSSHD(t, sshdOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", "-c", strings.Replace(x.Command("echo in-$((40+2))"), "-tt", "-T", 1)).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "in-42" {
		t.Fatalf("ssh: %v\n%s", err, out)
	}
}
