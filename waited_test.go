package agentpty

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// Every result that waited says why its wait ended.
func TestWaitedSaysWhyTheWaitEnded(t *testing.T) {
	need(t, "python3")
	m := newManager(t, noProfile)
	py, err := m.Start(waitCtx(t), StartRequest{Command: "exec python3 -q", WaitUntil: WaitUntilInput})
	if err != nil || py.Waited != WaitedInput || py.StateGuessed || py.State != StateWaitingInput {
		t.Fatalf("python3's prompt: waited %q guessed %v state %q, want input, kernel-known: %v", py.Waited, py.StateGuessed, py.State, err)
	}
	w := mustWrite(t, m, WriteRequest{ID: py.ID, Input: "print(6*7)", Submit: true, WaitFor: "42"})
	if w.Waited != WaitedMatch {
		t.Errorf("wait_for 42: waited %q, want match", w.Waited)
	}
	// The JSON a model reads carries it by that name.
	raw, err := m.Call(waitCtx(t), ToolWrite, json.RawMessage(`{"id":"`+py.ID+`","input":"1+1\r","wait_until":"input"}`))
	var got struct {
		Waited       string `json:"waited"`
		StateGuessed *bool  `json:"state_guessed"`
	}
	if err != nil || json.Unmarshal(raw, &got) != nil || got.Waited != WaitedInput || got.StateGuessed != nil {
		t.Errorf("pty-write via Call: %s %v", raw, err)
	}
	if _, err := m.Kill(waitCtx(t), py.ID); err != nil {
		t.Fatal(err)
	}

	ex := mustStart(t, m, StartRequest{Command: "echo bye; exit 3", WaitMS: ms(10000)})
	if ex.Waited != WaitedExit || !ex.Exited {
		t.Errorf("a command that exits: waited %q exited %v, want exit", ex.Waited, ex.Exited)
	}
	sl := mustStart(t, m, StartRequest{Command: "exec sleep 5", WaitMS: ms(300)})
	if sl.Waited != WaitedTimeout || sl.State != StateRunning {
		t.Errorf("sleep 5 with wait_ms 300: waited %q state %q, want timeout, running", sl.Waited, sl.State)
	}

	sh := mustStart(t, m, StartRequest{Shell: true})
	if sh.Waited != WaitedInput {
		t.Errorf("a shell session's start: waited %q, want input", sh.Waited)
	}
	r, err := m.Run(waitCtx(t), RunRequest{ID: sh.ID, Command: "true"})
	if err != nil || r.Waited != WaitedExit || !r.PromptAfter {
		t.Errorf("pty-run true: waited %q prompt_after %v: %v", r.Waited, r.PromptAfter, err)
	}
	r, err = m.Run(waitCtx(t), RunRequest{ID: sh.ID, Command: "read -p 'name? ' x"})
	if err != nil || r.Waited != WaitedInput || r.PromptAfter {
		t.Errorf("pty-run read: waited %q prompt_after %v: %v", r.Waited, r.PromptAfter, err)
	}
}

// A relay (here ssh) shows only whether it waits on the terminal and the
// far side together: its waiting_input is a guess from the pause, and
// the result says so. The far side's answer still matches a later wait.
func TestWaitedQuietNamesTheRelaysGuess(t *testing.T) {
	m := newManager(t, noProfile) // its leak check runs after sshd has stopped
	x := startTestSSHD(t, sshdOptions{})
	res := mustStart(t, m, StartRequest{Command: x.Command("PS1='remote$ ' exec bash --norc --noprofile -i"), WaitFor: "remote$ "})
	begin := time.Now()
	w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: `python3 -c "import time; time.sleep(1.5); print('sl'+'ept')"`, Submit: true,
		WaitUntil: WaitUntilInput, WaitMS: ms(10000)})
	took := time.Since(begin)
	t.Logf("after %v: waited %q state %q guessed %v output %q", took, w.Waited, w.State, w.StateGuessed, w.Output)
	if w.Waited != WaitedQuiet || !w.StateGuessed || w.State != StateWaitingInput || w.Foreground != "ssh" {
		t.Errorf("waited %q state %q guessed %v foreground %q: want the quiet guess named", w.Waited, w.State, w.StateGuessed, w.Foreground)
	}
	if s, _ := m.Session(res.ID); !strings.Contains(w.Output, "slept") && !s.State().Guessed && s.State().State == StateWaitingInput {
		t.Errorf("Session.State() while the far side sleeps: %+v, want a guess", s.State())
	}
	w = mustWrite(t, m, WriteRequest{ID: res.ID, WaitFor: "slept"})
	if w.Waited != WaitedMatch {
		t.Errorf("wait_for slept: waited %q, want match", w.Waited)
	}
	if _, err := m.Kill(waitCtx(t), res.ID); err != nil {
		t.Fatal(err)
	}
}
