package kubepty

import (
	"strings"
	"testing"
	"time"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/kubepty/kubetest"
)

// A program blocked on its terminal waits only once what it wrote before
// it blocked has come through the exec stream: the stand-in's node holds
// each chunk of output a while, so that the program has printed all and
// blocks long before the last chunk arrives, and no probe may see it
// waiting until then. The probe's mark, written to the terminal after
// the output, tells when.
func TestWaitingAfterItsOutput(t *testing.T) {
	_, b := standin(t, kubetest.OutputDelay(150*time.Millisecond))
	s := start(t, b, 80, 24, "sh", "-c", "seq 1 5000; read x")
	sr := s.term.(agentpty.StateReader)
	deadline := time.Now().Add(30 * time.Second)
	probes := 0
	for {
		fg := sr.Foreground()
		probes++
		if fg.Waiting {
			s.mu.Lock()
			out := s.out.String()
			s.mu.Unlock()
			if !strings.Contains(out, "\r\n5000\r\n") && !sr.OutputPending() {
				t.Fatalf("probe %d: waiting in %s with %d bytes of the output read, the last %q, and none pending", probes, fg.Name, len(out), out[max(0, len(out)-20):])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not waiting after %d probes", probes)
		}
	}
	if probes < 2 {
		t.Errorf("waiting at the first probe: the output came before the program blocked, which this test does not test")
	}
	// Nothing of the marks reaches the output.
	if _, err := s.term.Write([]byte("x\r")); err != nil {
		t.Fatal(err)
	}
	s.wait(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	if strings.Contains(s.out.String(), "\x1b]6973;") {
		t.Errorf("a mark is left in the output: %q", s.out.String())
	}
}
