package sshpty

import "time"

// watchWait is how long a state waits for the watch in flight before it
// probes itself: a watch answers once the program waits again, which
// after a quick answer is about when its output arrives.
const watchWait = 2 * time.Millisecond

// startWatch, after a write on a host whose probe channel is perl's, asks
// the host to answer once the terminal's group waits again (or after
// watchBudget) rather than at once: the answer then travels with the
// program's output, and the result that follows needs no round trip of
// its own. The answer serves as a probe's would while no output came
// after its mark and no input after the write; one watch is in flight at
// a time.
func (t *terminal) startWatch() {
	if !t.watchable {
		return
	}
	t.probeMu.Lock()
	if t.watching != nil {
		t.probeMu.Unlock()
		return
	}
	done := make(chan struct{})
	in := t.inGen.Load()
	t.watching, t.watchIn = done, in
	t.probeMu.Unlock()
	go func() {
		defer func() {
			t.probeMu.Lock()
			t.watching = nil
			t.probeMu.Unlock()
			close(done)
		}()
		t.syncTyped()
		r, ok, gen, exact := t.probeNow("watch")
		if ok && r.Fg.Waiting && exact && t.inGen.Load() == in {
			t.keep(r, gen, in, time.Now())
		}
	}()
}

// awaitWatch waits up to watchWait for the watch in flight since the last
// input; false when there is none.
func (t *terminal) awaitWatch() bool {
	t.probeMu.Lock()
	w, in := t.watching, t.watchIn
	t.probeMu.Unlock()
	if w == nil || in != t.inGen.Load() {
		return false
	}
	timer := time.NewTimer(watchWait)
	defer timer.Stop()
	select {
	case <-w:
		return true
	case <-timer.C:
		return false
	}
}
