package agentpty

import (
	"context"
	"io"
	"runtime"
	"testing"

	"github.com/agentpty/agentpty/internal/testkit"
)

// Manager.Run reads the terminal's size for the approver while Resize
// changes it. The approver waits for a Resize that runs meanwhile; the
// only ordering between them is the Resize's channel send, which the
// race detector knows comes after the write and before nothing of Run's
// read, so a read without the lock is reported every time.
func TestRaceRunResize(t *testing.T) {
	testkit.Parallel(t)
	resized := make(chan struct{})
	m := newManager(t, Options{Approver: ApproverFunc(func(_ context.Context, req ApprovalRequest) error {
		if req.Tool == ToolRun {
			<-resized
		}
		return nil
	})})
	id := startShell(t, m)
	s, _ := m.Session(id)
	go func() {
		if err := s.Resize(81, 24); err != nil {
			t.Error(err)
		}
		resized <- struct{}{}
	}()
	if res := mustRun(t, m, RunRequest{ID: id, Command: "true"}); !res.PromptAfter || code(res.ExitCode) != 0 {
		t.Errorf("run: %+v", res)
	}
}

// A recording starts while Kill stops the replies. The recording is held
// after it has looked at whether replies have stopped (the test holds the
// ring's lock, which its screen needs next), and the kill goes on to stop
// them: a look without the lock is reported by the race detector.
func TestRaceRecordKill(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{Shell: []string{"sh", "-c"}})
	res := mustStart(t, m, StartRequest{Command: readyCat, WaitFor: "ready"})
	s, _ := m.Session(res.ID)
	s.Screen() // made now: making it later would take the session's lock
	s.out.inMu.Lock()
	recorded := make(chan error, 1)
	go func() { recorded <- s.Record(io.Discard) }()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Kill does not wait for output that cannot be rendered
	killed := make(chan error, 1)
	go func() {
		_, err := m.Kill(ctx, res.ID)
		killed <- err
	}()
	for !s.rep.isStopped() {
		runtime.Gosched()
	}
	s.out.inMu.Unlock()
	if err := <-recorded; err != nil && !isErr(err, ErrExited) {
		t.Errorf("Record: %v", err)
	}
	if err := <-killed; err != nil && !isErr(err, context.Canceled) {
		t.Errorf("Kill: %v", err)
	}
}
