package termstate

import (
	"testing"

	"github.com/agentpty/agentpty/internal/proc"
	"github.com/agentpty/agentpty/internal/testkit"
	"golang.org/x/sys/unix"
)

// BenchmarkKernelParts times each kernel read Foreground makes, on a
// program blocked reading its terminal, with its files kept and without.
func BenchmarkKernelParts(b *testing.B) {
	p := startProgram(b, []string{"bash", "--noprofile", "--norc", "-c", "echo 'name? '; exec cat"})
	defer p.stop()
	p.await(b, "name? ")
	pgrp, peer := GroupAndPeer(p.master)
	tty := DevOf(peer)
	unix.Close(peer)
	kept := &Files{}
	defer kept.Close()
	off := echoOff
	if r := settled(p.master, kept, true); !r.Waiting {
		b.Fatalf("cat not waiting: %+v", r)
	}
	k := &local{pf: kept, tty: tty, master: p.master, echoOff: off, known: true}
	testkit.BenchParts(b, []testkit.BenchPart{
		{Name: "Foreground", F: func() { Foreground(p.master, kept, off) }},
		{Name: "Foreground/unkept", F: func() { Foreground(p.master, nil, off) }},
		{Name: "GroupAndPeer+close", F: func() { _, p := GroupAndPeer(p.master); unix.Close(p) }},
		{Name: "PollIn(peer)", F: func() { _, p := GroupAndPeer(p.master); PollIn(p); unix.Close(p) }},
		{Name: "ReadStat", F: func() { proc.ReadStat(pgrp, make([]byte, 512)) }},
		{Name: "readStat/kept", F: func() { kept.mu.Lock(); kept.follow(pgrp); kept.readStat(pgrp); kept.mu.Unlock() }},
		{Name: "threadWait/kept", F: func() {
			kept.mu.Lock()
			s := scan{c: Archs["x86_64"], k: k}
			if c, ok := Local(); ok {
				s.c = c
			}
			s.threadWait(pgrp, pgrp)
			kept.mu.Unlock()
		}},
		{Name: "ThreadOnTerminal", F: func() { ThreadOnTerminal(pgrp, tty) }},
	})
}
