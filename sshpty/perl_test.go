//go:build linux

package sshpty

import (
	"strconv"
	"strings"
	"testing"

	"github.com/agentpty/agentpty"
)

// A host without perl: the probe channel is a shell alone, which reads
// the echo flag with stty and writes its marks from a subshell, with the
// same answers (perl is in front of the shell otherwise).
func TestStateWithoutPerl(t *testing.T) {
	_, c := connect(t)
	for _, without := range []bool{false, true} {
		noPerl = without
		h, err := startHelper(c)
		noPerl = false
		if err != nil {
			t.Fatal(err)
		}
		out, err := h.run(waitCtx(t), `read -r c </proc/$PPID/comm; echo "$Q $c"`, false)
		h.close()
		if err != nil || strings.Contains(string(out), "perl") == without {
			t.Fatalf("the probe shell's parent with noPerl %v: %q (%v)", without, out, err)
		}
	}
	noPerl = true
	defer func() { noPerl = false }()
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

// A line of a longer request (a file's text) that reads like a probe's
// reaches the shell as it is: only lines with the channel's token are
// perl's.
func TestProbeLinesCarryTheToken(t *testing.T) {
	_, c := connect(t)
	h, err := startHelper(c)
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	text := "a\n" + `Q=9; FN=x NOSYS= WS="0" EP="" TS="" SEL="" POL="" probe 1; echo "$Q ."` + "\nb"
	out, err := h.run(waitCtx(t), "x="+quote(text)+`; echo "$Q ${#x}"`, false)
	if err != nil || strings.TrimSpace(string(out)) != strconv.Itoa(len(text)) {
		t.Errorf("the shell got %q (%v); want the text's %d bytes", out, err, len(text))
	}
}
