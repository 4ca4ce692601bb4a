package agentpty

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Output a program writes as it ends on Kill's signals is the last unread
// output, and Kill returns it: neither the kernel's early EIO nor closing
// the terminal before the reader has drained it may lose it.
func TestReviewKillKeepsOutputWrittenAtExit(t *testing.T) {
	m := newManager(t, Options{})
	for _, size := range []int{4000, 60000} {
		for i := 0; i < 15; i++ {
			res := mustStart(t, m, StartRequest{
				Command: `trap '' TERM; trap 'seq 1 ` + strconv.Itoa(size/6) + `; echo goodbye-from-trap; exit 0' HUP; echo ready; while :; do read -r -t 0.2 x; done`,
				WaitFor: "ready"})
			k, err := m.Kill(context.Background(), res.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(k.Output, "goodbye-from-trap") {
				t.Fatalf("%d bytes, run %d: kill output lost the end of what the program wrote as it ended: ...%q", size, i, tail(k.Output, 80))
			}
		}
	}
}

// Wait returns once the output on its way at exit is rendered: all of it.
// (bash defers a trap that arrives just before it blocks in read until the
// read returns, so the loop reads with a timeout.)
func TestReviewWaitSeesTheLastWrites(t *testing.T) {
	m := newManager(t, Options{})
	for i := 0; i < 30; i++ {
		res := mustStart(t, m, StartRequest{Command: `trap 'printf "%04000d\n" 0; echo the-end; exit 3' USR1; echo ready; while :; do read -r -t 0.2 x; done`, WaitFor: "ready"})
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

// The idle clock starts when a call returns: a call that waits longer than
// IdleTimeout is use, and the session must not be reaped under it.
func TestReviewIdleTimeoutSparesACallInProgress(t *testing.T) {
	m := newManager(t, Options{IdleTimeout: 300 * time.Millisecond})
	res := mustStart(t, m, StartRequest{Command: readyCat, WaitFor: "ready"})
	w, err := m.Write(context.Background(), WriteRequest{ID: res.ID, Input: "hello", Submit: true, WaitFor: "never-printed", WaitMS: ms(1000)})
	if err != nil || w.Exited {
		t.Fatalf("the idle reaper killed the session during a call: %+v %v", w, err)
	}
	if _, ok := m.Session(res.ID); !ok {
		t.Fatal("the session was reaped during a call")
	}
}

// OnEvent sees each session's events in order: "created" before "exited",
// even for a program that exits at once.
func TestReviewEventsInOrderForAQuickExit(t *testing.T) {
	var mu sync.Mutex
	seen := map[string][]EventKind{}
	m := newManager(t, Options{Shell: []string{"/bin/sh", "-c"}, OnEvent: func(e Event) {
		mu.Lock()
		seen[e.ID] = append(seen[e.ID], e.Kind)
		mu.Unlock()
	}})
	for i := 0; i < 200; i++ {
		res, err := m.Start(context.Background(), StartRequest{Command: "exit 0", WaitMS: ms(0)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Kill(context.Background(), res.ID); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 200 {
		t.Fatalf("events came for %d sessions, want 200", len(seen))
	}
	for id, kinds := range seen {
		if len(kinds) < 2 || kinds[0] != EventCreated || !slices.Contains(kinds[1:], EventExited) {
			t.Errorf("%s: events %v are not created, then exited", id, kinds)
		}
	}
}
