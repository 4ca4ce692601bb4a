package agentpty

import (
	"context"
	"strings"
	"syscall"
	"testing"
)

// Wait returns once the output on its way at exit is rendered: all of it.
func TestReviewWaitSeesTheLastWrites(t *testing.T) {
	m := newManager(t, Options{})
	for i := 0; i < 30; i++ {
		res := mustStart(t, m, StartRequest{Command: `trap 'printf "%04000d\n" 0; echo the-end; exit 3' USR1; echo ready; while :; do read -r x; done`, WaitFor: "ready"})
		s, _ := m.Session(res.ID)
		if err := s.Signal(syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		if st, err := s.Wait(waitCtx(t)); err != nil || st.Code != 3 {
			t.Fatalf("Wait: %v %v", st, err)
		}
		w := mustWrite(t, m, WriteRequest{ID: res.ID, WaitMS: ms(0)})
		if out := res.Output + w.Output; !strings.HasSuffix(out, "the-end") {
			t.Fatalf("run %d: after Wait the output does not end with the program's last line: ...%q", i, tail(out, 60))
		}
		if _, err := m.Kill(context.Background(), res.ID); err != nil {
			t.Fatal(err)
		}
	}
}
