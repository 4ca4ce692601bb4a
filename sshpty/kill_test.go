//go:build linux

package sshpty

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/testkit"
)

// Kill's schedule on the host: SIGTERM (and SIGCONT) first, SIGHUP
// hupDelay later, or at once when all that is left ignores TERM, and
// SIGKILL once KillGrace has passed. The command logs when each signal
// reaches it; it survives TERM and HUP, so only SIGKILL ends it. Where
// TERM is ignored it cannot be seen, and the SIGCONT sent with it marks
// its time. hupDelay and the grace are long here, so that the bounds
// keep a second's margin for a loaded machine's slow /proc scans and
// still tell a HUP sent at once from one sent on time.
func TestKillSchedule(t *testing.T) {
	const grace = 5 * time.Second
	saved := hupDelay
	t.Cleanup(func() { hupDelay = saved })
	hupDelay = 2 * time.Second
	_, c := connect(t)
	m := newManager(t, c, agentpty.Options{KillGrace: grace})
	dir := t.TempDir()
	logged := func(sig, log string) string {
		return `trap 'echo "` + sig + ` $EPOCHREALTIME" >>` + log + `' ` + sig + `; `
	}
	for _, tc := range []struct {
		name   string
		traps  string
		first  string        // the signal that marks TERM's sending
		minHUP time.Duration // HUP's least delay after it
		maxHUP time.Duration // and its most
	}{
		{"TERM caught", logged("TERM", "LOG") + logged("HUP", "LOG"), "TERM", hupDelay - 500*time.Millisecond, grace - time.Second},
		// HUP follows CONT at once here: bash may run HUP's trap first.
		{"TERM ignored", `trap '' TERM; ` + logged("CONT", "LOG") + logged("HUP", "LOG"), "CONT", -time.Second, hupDelay - time.Second},
	} {
		log := filepath.Join(dir, strconv.Itoa(len(tc.name))+tc.first)
		script := strings.ReplaceAll(tc.traps, "LOG", log) + `echo ready; while :; do read -r x || sleep 1; done`
		res := mustStart(t, m, agentpty.StartRequest{Command: script, WaitFor: "ready"})
		begin := time.Now()
		k, err := m.Kill(waitCtx(t), res.ID)
		took := time.Since(begin)
		if err != nil || k.Signal != "SIGKILL" {
			t.Errorf("%s: Kill: %+v %v; want killed by SIGKILL (the command survives TERM and HUP)", tc.name, k, err)
		}
		if took < grace || took > grace+5*time.Second {
			t.Errorf("%s: Kill took %v; want SIGKILL once the %v grace has passed", tc.name, took, grace)
		}
		at := signalTimes(t, log)
		first, hup := at[tc.first], at["HUP"]
		if first.IsZero() || hup.IsZero() {
			t.Errorf("%s: the command logged %v; want %s and HUP", tc.name, at, tc.first)
			continue
		}
		gap := hup.Sub(first)
		t.Logf("%s: %s %v after Kill began, HUP %v after it, Kill done after %v", tc.name, tc.first, first.Sub(begin), gap, took)
		if first.Before(begin) || gap < tc.minHUP || gap > tc.maxHUP {
			t.Errorf("%s: HUP came %v after %s; want between %v and %v", tc.name, gap, tc.first, tc.minHUP, tc.maxHUP)
		}
	}
}

// signalTimes reads a log of "SIGNAL EPOCHREALTIME" lines: when each
// signal first arrived.
func signalTimes(t *testing.T, log string) map[string]time.Time {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Errorf("the command's signal log: %v", err)
	}
	at := map[string]time.Time{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		sec, err := strconv.ParseFloat(f[1], 64)
		if _, seen := at[f[0]]; err == nil && !seen {
			at[f[0]] = time.UnixMicro(int64(sec * 1e6))
		}
	}
	return at
}

// A kill runs in the probe shell's background: while it waits out one
// session's grace, a probe of another session on the connection answers.
func TestProbeDuringAKill(t *testing.T) {
	const grace = 3 * time.Second
	_, c := connect(t)
	b := New(c)
	victim, vout := startTerm(t, b, `trap 'echo term-seen' TERM; trap '' HUP; echo ready; while :; do sleep 0.05; done`)
	other, oout := startTerm(t, b, `echo ready; read x; echo "got $x"`)
	defer closeTerm(other, oout)
	defer closeTerm(victim, vout)
	vout.waitFor(t, "ready")
	oout.waitFor(t, "ready")
	waitRead(t, other, "read")
	ended := make(chan error, 1)
	go func() { ended <- victim.End(context.Background(), grace) }()
	vout.waitFor(t, "term-seen") // the kill has begun, and waits for SIGKILL's time
	r, ok := other.(stateTerminal).probeNow()
	// The host's process table, not the order of two goroutines, says
	// whether the kill was still under way: SIGKILL comes after the grace.
	if !alive(victim.PID()) {
		t.Fatal("the killed session was gone before the probe of the other answered: the probe waited for the kill")
	}
	if !ok || !r.Fg.Waiting {
		t.Errorf("the probe during the kill: %+v %v; want the other session waiting at read", r, ok)
	}
	if err := <-ended; err != nil {
		t.Errorf("End: %v", err)
	}
	if st, _ := victim.Wait(); st.Signal != "SIGKILL" {
		t.Errorf("the victim ended %+v; want SIGKILL", st)
	}
	if _, err := other.Write([]byte("x\r")); err != nil {
		t.Fatal(err)
	}
	oout.waitFor(t, "got x")
}

// What outlives SIGKILL is named: a job frozen in a cgroup v1 freezer
// (SIGKILL waits there for the thaw) makes End say, after killBound,
// which process survived; thawed, it dies of the SIGKILL it was sent.
func TestEndNamesSurvivors(t *testing.T) {
	_, c := connect(t)
	term, out := startTerm(t, New(c), `sleep 1007 & echo "job=$!."; echo ready; while :; do sleep 0.05; done`)
	defer closeTerm(term, out)
	out.waitFor(t, "ready")
	job := testkit.NumberAfter(t, out.String(), "job=", ".")
	thaw := testkit.Freeze(t, job)
	began := time.Now()
	err := term.End(context.Background(), 300*time.Millisecond)
	took := time.Since(began)
	if err == nil || !strings.Contains(err.Error(), "survived SIGKILL") || !strings.Contains(err.Error(), "["+strconv.Itoa(job)+"]") || took < killBound {
		t.Errorf("End with job %d frozen: %v after %v; want it named as surviving SIGKILL for %v", job, err, took, killBound)
	}
	thaw()
	gone(t, job)
}
