//go:build linux

package sshpty

import (
	"testing"
	"time"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/remote"
)

// A probe slower than remote.StateFresh (a distant host, a loaded one) still
// serves the reads right after its answer: EchoOff, Foreground and
// EchoOff, as a result reads them, cost one probe. (Before, the answer's
// freshness counted from when the probe began, so such a probe served
// nothing and a start's result cost three probes.)
func TestSlowProbeServesTheResult(t *testing.T) {
	srv, c := connect(t)
	b := New(c)
	term, out, st := startReadS(t, b)
	probes := probeCalls(t, b)
	saved := remote.StateFresh
	t.Cleanup(func() { remote.StateFresh = saved })
	remote.StateFresh = 20 * time.Millisecond
	st.changed() // as input does: the last answer is not reused
	n := probes()
	// The server stops answering for 100 ms from when the probe is sent:
	// the probe takes five times remote.StateFresh.
	thaw := srv.Freeze()
	thawed := make(chan struct{})
	go func() {
		defer close(thawed)
		defer thaw()
		for deadline := time.Now().Add(20 * time.Second); probes() == n && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond) // polls for the probe being sent
		}
		time.Sleep(100 * time.Millisecond) // the slow host, not synchronisation
	}()
	begin := time.Now()
	echo := st.EchoOff()
	took := time.Since(begin)
	fg, echo2 := st.Foreground(), st.EchoOff()
	<-thawed
	// Control: the probe was slower than remote.StateFresh, or the count
	// below would hold without the fix too.
	if took <= remote.StateFresh {
		t.Fatalf("the probe took %v, not over remote.StateFresh (%v): the server did not freeze", took, remote.StateFresh)
	}
	if got := probes() - n; got != 1 {
		t.Errorf("three reads right after a slow probe cost %d probes; want 1", got)
	}
	if !echo || !echo2 || !fg.Waiting {
		t.Errorf("at read -s: echo off %v, %v, foreground %+v", echo, echo2, fg)
	}
	if _, err := term.Write([]byte("pw\r")); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "got 2")
}

// probeCalls returns a count of the calls b's probe shell has run (probes,
// kills, files).
func probeCalls(t *testing.T, b *Backend) func() int {
	t.Helper()
	h, err := b.probeShell()
	if err != nil {
		t.Fatal(err)
	}
	return func() int {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.seq
	}
}

// startReadS starts bash at read -s on b, which says how many characters
// it read, and probes until it waits there; the terminal is closed when
// t ends.
func startReadS(t *testing.T, b *Backend) (agentpty.Terminal, *pump, stateTerminal) {
	t.Helper()
	term, out := startTerm(t, b, `echo ready; read -s x; echo "got ${#x}"`)
	t.Cleanup(func() { closeTerm(term, out) })
	out.waitFor(t, "ready")
	st := term.(stateTerminal)
	ctx := waitCtx(t)
	for !st.Foreground().Waiting { // read -s may not have begun yet
		if ctx.Err() != nil {
			t.Fatal("bash never waited at read -s")
		}
	}
	return term, out, st
}
