package sshpty

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentpty/agentpty/remote"
)

// probeCache is what a terminal's probes found and when, and what has
// happened to the terminal since: the one place that decides whether a
// probe's answer still serves (see stateFresh). Its zero value holds no
// answer.
type probeCache struct {
	// gen counts what could change the terminal's state: output read,
	// input written, a signal sent, a resize; inGen all but the output.
	gen, inGen atomic.Uint64
	// begun is gen when the last probe began, kept or not (see hint):
	// not last.gen, which only a kept answer sets.
	begun atomic.Uint64

	mu   sync.Mutex // guards the fields below
	last *probed    // the last answer kept; nil before the first
	// echo is the last answer kept that read the echo flag: last itself,
	// unless last found no terminal to read it from.
	echo *probed
}

// probed is one probe's answer, stamped with when the probe began.
type probed struct {
	r       remote.Result
	at      time.Time
	gen, in uint64 // gen and inGen then
}

// output counts output read.
func (c *probeCache) output() { c.gen.Add(1) }

// changed counts input, a signal or a resize.
func (c *probeCache) changed() {
	c.inGen.Add(1)
	c.gen.Add(1)
}

// stamp is a probe's stamp, taken before it begins; keep fills in its
// answer.
func (c *probeCache) stamp() probed {
	return probed{gen: c.gen.Load(), in: c.inGen.Load(), at: time.Now()}
}

// keep keeps r, the answer of the probe stamped s.
func (c *probeCache) keep(r remote.Result, s probed) {
	s.r = r
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = &s
	if r.EchoRead {
		c.echo = &s
	}
}

// answer is the last answer, while nothing that could change it happened
// and for stateFresh at most.
func (c *probeCache) answer() (remote.Result, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.last; p != nil && c.gen.Load() == p.gen && time.Since(p.at) < stateFresh {
		return p.r, true
	}
	return remote.Result{}, false
}

// echoOff is the last echo flag read, while no input, signal or resize
// came and for stateFresh at most: output alone does not change it.
func (c *probeCache) echoOff() (off, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.echo; p != nil && c.inGen.Load() == p.in && time.Since(p.at) < stateFresh {
		return p.r.EchoOff, true
	}
	return false, false
}

// hint is 1 when output, input, a signal or a resize came since the
// last probe began, and marks a probe begun: the command has likely run,
// and the probe shell starts stty for it as soon as it has read its run
// times (see remote.Funcs).
func (c *probeCache) hint() int {
	g := c.gen.Load()
	if c.begun.Swap(g) == g {
		return 0
	}
	return 1
}
