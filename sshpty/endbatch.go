package sshpty

import (
	"context"
	"time"

	"github.com/agentpty/agentpty/remote"
)

// endQueue holds the ends asked while others run in the probe shell.
// Each endall (end.sh) scans every process of the host, a few times over, so a
// hundred sessions ending one by one (Manager.Close) cost the host a
// hundred times the scans of one; ends asked while one runs wait for it
// and then run together, as one endall. A lone Kill runs at once, as
// before. Guarded by the Backend's mu.
type endQueue struct {
	running bool
	waiting []*endAsk
}

// endAsk is one session's end, answered on done.
type endAsk struct {
	pid        int
	hup, grace time.Duration
	out        string
	err        error
	done       chan struct{}
}

// endBatch ends the session of pid, with those that ask while one runs:
// the first of them and those with the same schedule as the first in one
// endall, then the rest likewise. What endall prints (gone, or the
// survivors) is every session's of the batch.
func (b *Backend) endBatch(ctx context.Context, pid int, hup, grace time.Duration) (string, error) {
	if b.parent != nil {
		return b.parent.endBatch(ctx, pid, hup, grace)
	}
	a := &endAsk{pid: pid, hup: hup, grace: grace, done: make(chan struct{})}
	if grace <= 0 {
		// SIGKILL now (an end cut short): not behind a batch's grace.
		go b.runBatch([]*endAsk{a})
		return b.await(ctx, a)
	}
	b.mu.Lock()
	b.ends.waiting = append(b.ends.waiting, a)
	lead := !b.ends.running
	b.ends.running = true
	b.mu.Unlock()
	if lead {
		go b.runEnds()
	}
	return b.await(ctx, a)
}

// await waits for a's answer, or for ctx.
func (b *Backend) await(ctx context.Context, a *endAsk) (string, error) {
	select {
	case <-a.done:
		return a.out, a.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// runEnds runs the waiting ends, a batch at a time, until none is left.
func (b *Backend) runEnds() {
	for {
		b.mu.Lock()
		batch, rest := sameSchedule(b.ends.waiting)
		b.ends.waiting = rest
		if len(batch) == 0 {
			b.ends.running = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		b.runBatch(batch)
	}
}

// runBatch runs one endall (end.sh) for the sessions of batch, which share a
// schedule, and answers each.
func (b *Backend) runBatch(batch []*endAsk) {
	pids := make([]int, len(batch))
	for i, a := range batch {
		pids[i] = a.pid
	}
	// Each asker bounds its own wait; endall's own bounds end it.
	out, err := b.shellRun(context.Background(), remote.EndCall(pids, batch[0].hup, batch[0].grace), true)
	for _, a := range batch {
		a.out, a.err = string(out), err
		close(a.done)
	}
}

// sameSchedule splits asks into the first and those with its schedule,
// and the rest.
func sameSchedule(asks []*endAsk) (batch, rest []*endAsk) {
	for _, a := range asks {
		if a.hup == asks[0].hup && a.grace == asks[0].grace {
			batch = append(batch, a)
		} else {
			rest = append(rest, a)
		}
	}
	return batch, rest
}
