package termstate

import (
	"runtime"
	"testing"
	"time"

	"github.com/agentpty/agentpty/internal/proc"
	"golang.org/x/sys/unix"
)

// BenchmarkKernelParts times each kernel read Foreground makes, on a
// program blocked reading its terminal, with its files kept and without.
func BenchmarkKernelParts(b *testing.B) {
	p := startProgram(b, []string{"bash", "--noprofile", "--norc", "-c", "echo ready; exec cat"})
	defer p.stop()
	p.await(b, "ready")
	pgrp, peer := GroupAndPeer(p.master)
	tty := DevOf(peer)
	unix.Close(peer)
	kept := &Files{}
	defer kept.Close()
	off := echoOff(p.master)
	if r := settled(p.master, kept, true); !r.Waiting {
		b.Fatalf("cat not waiting: %+v", r)
	}
	k := &local{pf: kept, tty: tty, echoOff: off, known: true}
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"Foreground", func() { Foreground(p.master, kept, off) }},
		{"Foreground/unkept", func() { Foreground(p.master, nil, off) }},
		{"GroupAndPeer+close", func() { _, p := GroupAndPeer(p.master); unix.Close(p) }},
		{"PollIn(peer)", func() { _, p := GroupAndPeer(p.master); PollIn(p); unix.Close(p) }},
		{"ReadStat", func() { proc.ReadStat(pgrp, make([]byte, 512)) }},
		{"readStat/kept", func() { kept.mu.Lock(); kept.follow(pgrp); kept.readStat(pgrp); kept.mu.Unlock() }},
		{"threadWait/kept", func() {
			kept.mu.Lock()
			s := scan{c: Archs["x86_64"], k: k}
			if c, ok := Local(); ok {
				s.c = c
			}
			s.threadWait(pgrp, pgrp)
			kept.mu.Unlock()
		}},
		{"ThreadOnTerminal", func() { ThreadOnTerminal(pgrp, tty) }},
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
