package remote

import (
	"sync"
	"sync/atomic"
	"time"
)

// StateFresh is how long a probe's answer is reused, counted from when
// it came: its echo flag for EchoOff while no input, signal or resize
// came since, whatever the output (the library asks on every chunk of
// output when it sends events, and a probe per chunk would throttle the
// output); the whole answer while nothing that could change it happened
// (output, input, a signal, a resize). It serves the questions one
// result asks in a row (its state, the echo flag, input_hidden: one probe
// for the three) and no more: a change the terminal does not show (a
// program that turns echo off without a word) is seen by the next
// question after 10 ms. Counted from the answer rather than the probe's
// start, so that an answer that took longer than that to come (an exec
// into a container) still serves the questions right behind it. A
// variable for tests.
var StateFresh = 10 * time.Millisecond

// ProbeCache is what a terminal's probes found and when, and what has
// happened to the terminal since: the one place that decides whether a
// probe's answer still serves (see StateFresh). Its zero value holds no
// answer.
type ProbeCache struct {
	// gen counts what could change the terminal's state: output read,
	// input written, a signal sent, a resize; inGen all but the output.
	gen, inGen atomic.Uint64
	// begun is gen when the last probe began, kept or not (see Hint).
	begun atomic.Uint64

	mu   sync.Mutex // guards the fields below
	last *Stamp     // the last answer kept; nil before the first
	// echo is the last answer kept that read the echo flag: last itself,
	// unless last found no terminal to read it from.
	echo *Stamp
}

// Stamp is one probe's answer, stamped with what had happened when the
// probe began.
type Stamp struct {
	r       Result
	at      time.Time // when the answer came
	gen, in uint64    // gen and inGen when the probe began
}

// At is when the answer came.
func (s *Stamp) At() time.Time { return s.at }

// Output counts output read.
func (c *ProbeCache) Output() { c.gen.Add(1) }

// Changed counts input, a signal or a resize.
func (c *ProbeCache) Changed() {
	c.inGen.Add(1)
	c.gen.Add(1)
}

// Stamp is a probe's stamp, taken before it begins; Keep fills in its
// answer.
func (c *ProbeCache) Stamp() Stamp { return Stamp{gen: c.gen.Load(), in: c.inGen.Load()} }

// Keep keeps r, the answer of the probe stamped s.
func (c *ProbeCache) Keep(r Result, s Stamp) {
	s.r, s.at = r, time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = &s
	if r.EchoRead {
		c.echo = &s
	}
}

// Last is the last answer kept, nil before the first.
func (c *ProbeCache) Last() *Stamp {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// Answer is the last answer, while nothing that could change it happened
// and for StateFresh at most.
func (c *ProbeCache) Answer() (Result, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.last; p != nil && c.gen.Load() == p.gen && time.Since(p.at) < StateFresh {
		return p.r, true
	}
	return Result{}, false
}

// EchoOff is the last echo flag read, while no input, signal or resize
// came and for StateFresh at most: output alone does not change it.
func (c *ProbeCache) EchoOff() (off, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.echo; p != nil && c.inGen.Load() == p.in && time.Since(p.at) < StateFresh {
		return p.r.EchoOff, true
	}
	return false, false
}

// Hint is 1 when output, input, a signal or a resize came since the
// last probe began, and marks a probe begun: the command has likely run,
// and a shell that keeps run times (serve.sh) starts stty for it as soon
// as it has read them (probe.sh's "probe PID 1").
func (c *ProbeCache) Hint() int {
	g := c.gen.Load()
	if c.begun.Swap(g) == g {
		return 0
	}
	return 1
}
