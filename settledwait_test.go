package agentpty

import (
	"strings"
	"testing"
	"time"
)

// top redraws every second and never reads: a settled wait returns
// between two redraws, well before its deadline, with top's screen, and
// says so; a write's settled wait does the same for the next redraw.
func TestSettledWaitTop(t *testing.T) {
	need(t, "top")
	m := newManager(t, Options{Shell: []string{"bash", "-c"}})
	began := time.Now()
	res, err := m.Start(waitCtx(t), StartRequest{Command: "exec top -d 1", WaitUntil: WaitUntilSettled, WaitMS: ms(20000)})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	if res.Waited != "settled" || took > 10*time.Second || !strings.Contains(res.Output, "load average") {
		t.Fatalf("start of top: waited %q after %v; want settled well before 20 s; output %q", res.Waited, took, res.Output)
	}
	began = time.Now()
	w := mustWrite(t, m, WriteRequest{ID: res.ID, WaitUntil: WaitUntilSettled, SettleMS: ms(200), WaitMS: ms(20000)})
	if took := time.Since(began); w.Waited != "settled" || took > 10*time.Second || !strings.Contains(w.Output, "load average") {
		t.Errorf("read of top: waited %q after %v; want settled well before 20 s; output %q", w.Waited, took, w.Output)
	}
	mustWrite(t, m, WriteRequest{ID: res.ID, Input: "q", WaitMS: ms(10000)})
}

// A program whose output never stays still for settle_ms runs the wait
// to its deadline, and the result says the deadline ended it; a program
// that exits ends it at once.
func TestSettledWaitNeverSettles(t *testing.T) {
	m := newManager(t, Options{Shell: []string{"bash", "-c"}})
	ctx := waitCtx(t)
	res := mustStart(t, m, StartRequest{Command: "while :; do date +%N; sleep 0.05; done", WaitFor: "\n"})
	began := time.Now()
	w, err := m.Write(ctx, WriteRequest{ID: res.ID, WaitUntil: WaitUntilSettled, SettleMS: ms(1000), WaitMS: ms(2500)})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); w.Waited != "timeout" || took < 2500*time.Millisecond {
		t.Errorf("waited %q after %v; want timeout at 2.5 s", w.Waited, took)
	}
	ex := mustStart(t, m, StartRequest{Command: "sleep 0.5; echo bye", WaitUntil: WaitUntilSettled, SettleMS: ms(5000), WaitMS: ms(20000)})
	if ex.Waited != "exit" || !ex.Exited {
		t.Errorf("an exiting program: waited %q, exited %v; want exit", ex.Waited, ex.Exited)
	}
	for _, bad := range []WriteRequest{
		{ID: res.ID, SettleMS: ms(100)},
		{ID: res.ID, WaitUntil: WaitUntilSettled, SettleMS: ms(0)},
		{ID: res.ID, WaitUntil: WaitUntilSettled, SettleMS: ms(20000)},
	} {
		if _, err := m.Write(ctx, bad); !isErr(err, ErrInvalid) || !strings.Contains(err.Error(), "settle_ms") {
			t.Errorf("Write(%+v): %v; want ErrInvalid naming settle_ms", bad, err)
		}
	}
	if _, err := m.Run(ctx, RunRequest{ID: res.ID, Command: "true", WaitUntil: WaitUntilSettled}); !isErr(err, ErrInvalid) {
		t.Errorf("pty-run with wait_until settled: %v; want ErrInvalid", err)
	}
}
