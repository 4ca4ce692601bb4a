package sshdtest

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/agentpty/agentpty/internal/testkit"
	"go.uber.org/goleak"
)

// A port taken between freePort's check and sshd's bind: sshd says so and
// ends (the control, one try), and Start tries another port, on which the
// server answers.
func TestStartOnATakenPort(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	fds := testkit.OpenFDs(t)
	t.Cleanup(func() { // after the servers' own cleanups
		goleak.VerifyNone(t, ignore)
		if now := testkit.OpenFDs(t); now > fds {
			t.Errorf("file descriptors leaked: %d open before, %d after", fds, now)
		}
	})
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	saved := freePort
	t.Cleanup(func() { freePort = saved })
	calls := 0
	freePort = func() (int, error) {
		calls++
		if calls == 1 {
			return port, nil
		}
		return saved()
	}
	if s, err := startOn(t.TempDir(), Options{}); err == nil || !strings.Contains(err.Error(), "Address already in use") {
		if s != nil {
			s.Stop()
		}
		t.Fatalf("sshd on a taken port: %v; want it to say the address is in use", err)
	}
	calls = 0
	s := Start(t)
	if _, p, _ := net.SplitHostPort(s.Addr); p == strconv.Itoa(port) || calls != 2 {
		t.Errorf("Start on a taken port: listening on %s after %d ports; want another port than %d, the second", s.Addr, calls, port)
	}
	c, err := s.Dial()
	if err != nil {
		t.Fatalf("the server on its second port: %v", err)
	}
	c.Close()
}
