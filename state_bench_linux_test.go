package agentpty

import (
	"context"
	"runtime"
	"testing"

	"github.com/agentpty/agentpty/internal/testkit"
)

// BenchmarkStateParts times each kernel read a result's state makes, on a
// program blocked reading its terminal (termstate's BenchmarkKernelParts
// times the reads inside foreground).
func BenchmarkStateParts(b *testing.B) {
	m := NewManager(Options{Shell: benchShell})
	defer m.Close()
	res, err := m.Start(context.Background(), StartRequest{Command: "exec cat", WaitUntil: WaitUntilInput})
	if err != nil || res.State != StateWaitingInput {
		b.Fatalf("start: %v %+v", err, res)
	}
	s, _ := m.Session(res.ID)
	lt := s.term.(*localTerminal)
	testkit.BenchParts(b, []testkit.BenchPart{
		{Name: "State", F: func() { s.seen.changing(); s.State() }}, // a read of the kernel, as after any change
		{Name: "State/reused", F: func() { s.State() }},             // nothing has changed since the last read
		{Name: "foreground", F: func() { foregroundVia(lt.f, &lt.procs) }},
		{Name: "foreground/unkept", F: func() { foregroundVia(lt.f, nil) }},
		{Name: "echoOff", F: func() { echoOff(lt.f) }},
		{Name: "readable", F: func() { readable(lt.f) }},
		{Name: "outputSettled", F: func() { _ = !lt.OutputPending() && s.stamp().settledSince(s.stamp()) }},
		{Name: "collect", F: func() { s.collect(false, true, true) }},
	})
}

// BenchmarkStateThreadReader times a state read of a Go program that
// reads its terminal on a thread other than its main one, as every Go
// prompt library does: each read looks through the program's threads.
func BenchmarkStateThreadReader(b *testing.B) {
	cmd, env := childCommand("goroutine-read")
	m := NewManager(Options{Shell: benchShell, Env: env})
	defer m.Close()
	res, err := m.Start(context.Background(), StartRequest{Command: cmd, WaitFor: "name? "})
	if err != nil || !res.Matched {
		b.Fatalf("start: %v %+v", err, res)
	}
	s, _ := m.Session(res.ID)
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := testkit.ThreadCPU()
	waiting := 0
	for i := 0; i < b.N; i++ {
		s.seen.changing()
		if s.State().State == StateWaitingInput {
			waiting++
		}
	}
	b.ReportMetric(float64(testkit.ThreadCPU()-before)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(waiting)/float64(b.N), "waiting/op")
}
