package agentpty

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/agentpty/agentpty/internal/proc"
	"golang.org/x/sys/unix"
)

// BenchmarkStateParts times each kernel read a result's state makes, on a
// program blocked reading its terminal.
func BenchmarkStateParts(b *testing.B) {
	m := NewManager(Options{Shell: benchShell})
	defer m.Close()
	res, err := m.Start(context.Background(), StartRequest{Command: "exec cat", WaitUntil: WaitUntilInput})
	if err != nil || res.State != StateWaitingInput {
		b.Fatalf("start: %v %+v", err, res)
	}
	s, _ := m.Session(res.ID)
	lt := s.term.(*localTerminal)
	pgrp, peer := groupAndPeer(lt.f)
	var st unix.Stat_t
	_ = unix.Fstat(peer, &st)
	unix.Close(peer)
	tty := st.Rdev
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"State", func() { s.seen.changing(); s.State() }}, // a read of the kernel, as after any change
		{"State/reused", func() { s.State() }},             // nothing has changed since the last read
		{"foreground", func() { foregroundVia(lt.f, &lt.procs) }},
		{"foreground/unkept", func() { foreground(lt.f) }},
		{"echoOff", func() { echoOff(lt.f) }},
		{"readable", func() { readable(lt.f) }},
		{"outputSettled", func() { _ = !lt.OutputPending() && s.stamp().settledSince(s.stamp()) }},
		{"groupAndPeer+close", func() { _, p := groupAndPeer(lt.f); unix.Close(p) }},
		{"pollIn(peer)", func() { _, p := groupAndPeer(lt.f); pollIn(p); unix.Close(p) }},
		{"ReadStat", func() { proc.ReadStat(pgrp, make([]byte, 512)) }},
		{"readStat/kept", func() { lt.procs.mu.Lock(); lt.procs.follow(pgrp); lt.procs.readStat(pgrp); lt.procs.mu.Unlock() }},
		{"onTerminal", func() { onTerminalVia(pgrp, tty, &lt.procs) }},
		{"onTerminal/unkept", func() { onTerminal(pgrp, tty) }},
		{"collect", func() { s.collect(false, true, true) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			before := threadCPU()
			for i := 0; i < b.N; i++ {
				c.f()
			}
			b.ReportMetric(float64(threadCPU()-before)/float64(b.N), "cpu-ns/op")
		})
	}
}

// threadCPU is the CPU time this thread has used: on a loaded machine it
// counts what an operation costs, not how long it waited to run.
func threadCPU() time.Duration {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_THREAD, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
	before := threadCPU()
	waiting := 0
	for i := 0; i < b.N; i++ {
		s.seen.changing()
		if s.State().State == StateWaitingInput {
			waiting++
		}
	}
	b.ReportMetric(float64(threadCPU()-before)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(waiting)/float64(b.N), "waiting/op")
}
