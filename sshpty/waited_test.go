//go:build linux

package sshpty

import (
	"strings"
	"testing"
	"time"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/testkit"
)

// Over SSH the probe reads the remote kernel: a Python program reading on
// a second thread waits for input (the thread rule reaches the probe),
// and the result says the kernel showed it (waited "input", no guess).
func TestRemoteThreadReaderWaits(t *testing.T) {
	testkit.Need(t, "python3")
	_, c := connect(t)
	m := newManager(t, c, agentpty.Options{})
	prog := testkit.PyThreadReader("t.join()")
	res := mustStart(t, m, agentpty.StartRequest{Command: "exec python3 -c '" + prog + "'", WaitFor: "name? "})
	begin := time.Now()
	w := mustWrite(t, m, agentpty.WriteRequest{ID: res.ID, Input: "ann", Submit: true, WaitUntil: agentpty.WaitUntilInput, WaitMS: agentpty.Millis(15000)})
	took := time.Since(begin)
	if w.State != agentpty.StateWaitingInput || w.Waited != agentpty.WaitedInput || w.StateGuessed || took > 5*time.Second || !strings.Contains(w.Output, "hello ann") {
		t.Fatalf("after %v of 15 s: state %q waited %q guessed %v output %q", took, w.State, w.Waited, w.StateGuessed, w.Output)
	}
}
