package agentpty

import (
	"testing"
	"time"
)

// TestWaitLimit: wait_ms wins, bounded by maxWait; else a wait for a
// pattern or a wait_until gets defaultWaitFor; else defaultWait.
func TestWaitLimit(t *testing.T) {
	ms := func(n int) *int { return &n }
	for _, c := range []struct {
		name string
		w    waiter
		want time.Duration
	}{
		{"nothing", waiter{}, defaultWait},
		{"pattern", waiter{lit: "x"}, defaultWaitFor},
		{"input", waiter{until: untilMode{input: true}}, defaultWaitFor},
		{"settled", waiter{until: untilMode{settle: time.Second}}, defaultWaitFor},
		{"wait_ms", waiter{waitMS: ms(250)}, 250 * time.Millisecond},
		{"wait_ms with input", waiter{waitMS: ms(250), until: untilMode{input: true}}, 250 * time.Millisecond},
		{"wait_ms with a pattern", waiter{waitMS: ms(0), lit: "x"}, 0},
		{"wait_ms over the bound", waiter{waitMS: ms(int(2 * maxWait / time.Millisecond))}, maxWait},
	} {
		if got := c.w.limit(); got != c.want {
			t.Errorf("%s: limit %v; want %v", c.name, got, c.want)
		}
	}
}
