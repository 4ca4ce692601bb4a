package agentpty

import (
	"context"
	"fmt"
	"time"
)

// WaitUntilSettled is the value of wait_until for programs that redraw
// and never wait for input (top, watch, dashboards): return once the
// output has changed since the last read and then stayed still for
// settle_ms.
const WaitUntilSettled = "settled"

// Settling: how long the screen must stay still by default, and at most.
const (
	defaultSettle = 300 * time.Millisecond
	maxSettle     = 10 * time.Second
)

// settleFor checks a request's settle_ms against its wait_until and
// returns how long a settled wait needs the output still; who names the
// call in errors.
func settleFor(who, waitUntil string, settleMS *int) (time.Duration, error) {
	if settleMS == nil {
		if waitUntil == WaitUntilSettled {
			return defaultSettle, nil
		}
		return 0, nil
	}
	if waitUntil != WaitUntilSettled {
		return 0, errorf(ErrInvalid, "%s: settle_ms %d applies only with wait_until %q", who, *settleMS, WaitUntilSettled)
	}
	d := time.Duration(*settleMS) * time.Millisecond
	if d <= 0 || d > maxSettle {
		return 0, errorf(ErrInvalid, "%s: settle_ms %d is outside 1-%d", who, *settleMS, maxSettle.Milliseconds())
	}
	return d, nil
}

// awaitSettled blocks until output no result has returned yet has been
// still for settle, want matches new output, the output is drained after
// the exit, the deadline passes, or ctx ends, and says which. It reads
// nothing; the reader's output and one timer at the moment the output
// would have been still long enough wake it.
func (s *Session) awaitSettled(ctx context.Context, want *waitSpec, deadline time.Time, settle time.Duration) (string, error) {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	still := time.NewTimer(settle)
	defer still.Stop()
	for {
		s.mu.Lock()
		matched := want != nil && want.inSettled(s.text.settler())
		drained, ch := s.text.complete(), s.text.changes()
		alt := s.text.settler().altScreen()
		// Changed: output no result returned, which shows: text to read,
		// or anything drawn on a full screen (escapes alone, such as the
		// clear before a first frame, change nothing a person sees).
		changed := s.out.rendered() > s.text.returned() && (alt || s.text.settler().unread())
		since := time.Since(s.text.lastOutput())
		s.mu.Unlock()
		if !matched && want != nil && alt {
			matched = s.screenMatch(want, deadline)
		}
		switch {
		case matched:
			return WaitedMatch, nil
		case drained:
			return WaitedExit, nil
		case changed && since >= settle:
			return WaitedSettled, nil
		}
		if changed {
			still.Reset(settle - since) // since Go 1.23 a Reset timer delivers no stale tick
		}
		select {
		case <-ch:
		case <-still.C:
		case <-timer.C:
			return WaitedTimeout, nil
		case <-ctx.Done():
			return "", fmt.Errorf("agentpty: %s: wait: %w", s.id, ctx.Err())
		}
	}
}

// untilMode is how a call's wait may end besides a match, the exit and
// the deadline.
type untilMode struct {
	input  bool          // wait_until "input": the program waits for input
	settle time.Duration // wait_until "settled": the output has been still this long
}

// modeOf is the untilMode of a request's wait_until and settle time.
func modeOf(waitUntil string, settle time.Duration) untilMode {
	return untilMode{input: waitUntil == WaitUntilInput, settle: settle}
}
