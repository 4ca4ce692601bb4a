package remote

import (
	"testing"
	"time"
)

// docs/remote.md: a probe's answer serves for StateFresh from its coming,
// however long the probe took, while nothing it could miss happened;
// output ends the answer but not the echo flag, input (a signal, a
// resize) ends both, as does anything that came while the probe ran; and
// Hint says once whether anything came since the last probe began.
func TestProbeCacheServes(t *testing.T) {
	saved := StateFresh
	t.Cleanup(func() { StateFresh = saved })
	StateFresh = time.Hour // expiry is checked apart, below
	var c ProbeCache
	if _, ok := c.Answer(); ok {
		t.Fatal("the zero ProbeCache serves an answer")
	}
	if _, ok := c.EchoOff(); ok {
		t.Fatal("the zero ProbeCache serves an echo flag")
	}
	r := Result{EchoOff: true, EchoRead: true}
	c.Keep(r, c.Stamp())
	if got, ok := c.Answer(); !ok || got != r {
		t.Fatalf("right after Keep: %+v, %v; want the answer kept", got, ok)
	}
	c.Output()
	if _, ok := c.Answer(); ok {
		t.Error("the answer serves after output")
	}
	if off, ok := c.EchoOff(); !ok || !off {
		t.Errorf("after output alone the echo flag: %v, %v; want it served", off, ok)
	}
	c.Changed()
	if _, ok := c.EchoOff(); ok {
		t.Error("the echo flag serves after input")
	}

	// What came while the probe ran: the answer may have missed it.
	s := c.Stamp()
	c.Output()
	c.Keep(r, s)
	if _, ok := c.Answer(); ok {
		t.Error("the answer of a probe during which output came serves")
	}
	s = c.Stamp()
	c.Changed()
	c.Keep(r, s)
	if _, ok := c.EchoOff(); ok {
		t.Error("the echo flag of a probe during which input came serves")
	}

	// Fresh from the answer's coming, not from the probe's start: a
	// probe slower than StateFresh still serves.
	StateFresh = 50 * time.Millisecond
	s = c.Stamp()
	for begun := time.Now(); time.Since(begun) <= 2*StateFresh; {
		time.Sleep(10 * time.Millisecond) // the slow probe, not synchronisation
	}
	c.Keep(r, s)
	if time.Since(c.Last().At()) < StateFresh {
		if _, ok := c.Answer(); !ok {
			t.Error("the answer of a probe slower than StateFresh does not serve right after it came")
		}
	}
	for time.Since(c.Last().At()) <= StateFresh {
		time.Sleep(10 * time.Millisecond) // letting it go stale
	}
	if _, ok := c.Answer(); ok {
		t.Error("an answer older than StateFresh serves")
	}
	if _, ok := c.EchoOff(); ok {
		t.Error("an echo flag older than StateFresh serves")
	}

	c.Hint() // a probe begins
	if h := c.Hint(); h != 0 {
		t.Errorf("Hint with nothing since the last probe began: %d, want 0", h)
	}
	c.Output()
	if h := c.Hint(); h != 1 {
		t.Errorf("Hint after output: %d, want 1", h)
	}
	if h := c.Hint(); h != 0 {
		t.Errorf("Hint again: %d, want 0", h)
	}
}
