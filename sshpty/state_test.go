//go:build linux

package sshpty

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentpty/agentpty"
)

// The probe channel is the login's shell and nothing else on the host
// (its parent is the server's session process), and through it alone a
// session's state, input_hidden and WriteSecret work at read and read -s.
func TestStateThroughTheShell(t *testing.T) {
	_, c := connect(t)
	h, err := startHelper(c)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.run(waitCtx(t), `read -r c </proc/$PPID/comm; echo "$Q $c ${BASH_VERSION:+bash}"`, false)
	h.close()
	if f := strings.Fields(string(out)); err != nil || len(f) != 2 || !strings.HasPrefix(f[0], "sshd") || f[1] != "bash" {
		t.Fatalf("the probe shell and its parent: %q (%v); want bash below sshd", out, err)
	}
	m := newManager(t, c, agentpty.Options{})
	res := mustStart(t, m, agentpty.StartRequest{Command: `read -p 'a> ' x; echo "x=$x"; read -s -p 'b> ' y; echo "y=${#y}"; read z`, WaitUntil: agentpty.WaitUntilInput})
	if res.State != agentpty.StateWaitingInput || res.InputHidden || !strings.HasSuffix(res.Output, "a> ") {
		t.Fatalf("at read: %+v", res)
	}
	w := mustWrite(t, m, agentpty.WriteRequest{ID: res.ID, Input: "one", Submit: true, WaitUntil: agentpty.WaitUntilInput})
	if w.State != agentpty.StateWaitingInput || !w.InputHidden || !strings.Contains(w.Output, "x=one") {
		t.Fatalf("at read -s: %+v", w)
	}
	s, err := m.WriteSecret(waitCtx(t), res.ID, []byte("s3cret-Xy"))
	if err == nil && !strings.Contains(s.Output, "y=9") {
		s = mustWrite(t, m, agentpty.WriteRequest{ID: res.ID, WaitFor: "y=9"})
	}
	if err != nil || strings.Contains(s.Output, "s3cret") {
		t.Fatalf("WriteSecret: %+v %v", s, err)
	}
}

// One probe serves EchoOff, Foreground and EchoOff again, as a result
// reads them; input, a signal or a resize since the probe makes the next
// read probe anew.
func TestOneProbePerState(t *testing.T) {
	_, c := connect(t)
	b := New(c)
	term, out := startTerm(t, b, `echo ready; read -s x; echo "got ${#x}"`)
	defer func() {
		term.Close()
		<-out.done
	}()
	out.waitFor(t, "ready")
	st := term.(stateTerminal)
	h, err := b.probeShell()
	if err != nil {
		t.Fatal(err)
	}
	probes := func() int {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.seq
	}
	ctx := waitCtx(t)
	for !st.Foreground().Waiting { // read -s may not have begun yet
		if ctx.Err() != nil {
			t.Fatal("bash never waited at read -s")
		}
	}
	reused := false
	for try := 0; try < 20 && !reused; try++ {
		st.changed() // as input does: the last answer is not reused
		n, begun := probes(), time.Now()
		echo, fg, echo2 := st.EchoOff(), st.Foreground(), st.EchoOff()
		took, got := time.Since(begun), probes()-n
		if got < 1 {
			t.Fatalf("after a change the state was read without a probe")
		}
		if !echo || !echo2 || !fg.Waiting || fg.Name != "bash" {
			t.Fatalf("at read -s: echo off %v, %v, foreground %+v", echo, echo2, fg)
		}
		// Within stateFresh of the probe's start, its answer serves all three.
		if took < stateFresh {
			if got != 1 {
				t.Fatalf("three reads within %v cost %d probes; want 1", took, got)
			}
			reused = true
		}
	}
	if !reused {
		t.Fatalf("no probe took less than %v on this machine: the reuse is not seen", stateFresh)
	}
	if _, err := term.Write([]byte("pw\r")); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "got 2")
	if err := term.End(context.Background(), time.Second); err != nil {
		t.Error(err)
	}
}
