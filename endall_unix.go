//go:build linux || darwin

package agentpty

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentpty/agentpty/internal/contain"
	"github.com/agentpty/agentpty/internal/endsched"
)

// ending is a terminal's End, run once: by its session's Kill, or by
// Close together with the other sessions' (endTogether).
type ending struct {
	mu   sync.Mutex
	done chan struct{} // made by the claim; closed once the processes are ended
	err  error         // set before done is closed
}

// claim reports whether the caller is the one to end the processes.
func (e *ending) claim() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done != nil {
		return false
	}
	e.done = make(chan struct{})
	return true
}

func (e *ending) finish(err error) {
	e.err = err
	close(e.done)
}

// wait waits for the one who claimed the ending, or for ctx.
func (e *ending) wait(ctx context.Context) error {
	e.mu.Lock()
	done := e.done
	e.mu.Unlock()
	select {
	case <-done:
		return e.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// endTogether claims the End of those of ss that a cgroup of m holds and
// returns what ends their processes, all at once, with the same signals
// as each one's Kill (see endProcesses), so that Close costs one grace and
// a few system calls a session rather than a goroutine blocked in the
// kernel per session and per step. The sessions' own kills find their End
// claimed and wait for it; each is done as soon as its cgroup is released,
// so the kills go on while other cgroups are still being released.
func (m *Manager) endTogether(ss []*Session) func() {
	if m.contain == nil {
		return func() {}
	}
	var ts []*localTerminal
	var cs []*cgroupContainer
	for _, s := range ss {
		t, ok := s.term.(*localTerminal)
		if !ok || t.group == nil || !t.ending.claim() {
			continue
		}
		s.seen.changing()
		s.typing.stop() // as Kill does before it signals: a write racing it fails with ErrNoSession
		ts = append(ts, t)
		cs = append(cs, t.containment().(*cgroupContainer))
	}
	return func() {
		endGroups(context.Background(), m.contain, cs, m.opts.KillGrace, func(i int, err error) { ts[i].ending.finish(err) })
	}
}

// endGroups is endProcesses for many cgroups of h at once: SIGTERM (and
// SIGCONT) to every process of each, SIGHUP to what is left endsched.HupDelay
// later, SIGKILL to all of h once grace has passed or everything is gone,
// then each group released. The waits watch h's own cgroup.events, which
// says when the last process of any group is gone, rather than each
// group's. Unlike a single Kill it does not look for sessions whose
// processes all ignore SIGTERM, to send them SIGHUP at once: reading
// every process's signal mask costs more than the one endsched.HupDelay that all
// sessions share. A group is released as soon as it is empty, beside the
// signals and the exits of the others (see releaser); done is called for
// each, once, as it is released, with what endProcesses would return.
func endGroups(ctx context.Context, h *contain.Host, cs []*cgroupContainer, grace time.Duration, done func(i int, err error)) {
	deadline := time.Now().Add(grace)
	r := startReleaser(cs, done)
	var signalled atomic.Int64
	parallel(len(cs), func(i int) {
		if cs[i].Signal(syscall.SIGTERM, syscall.SIGCONT) > 0 {
			signalled.Add(1)
		}
		r.queue <- i
	})
	hup := endsched.HupAt(time.Now(), endsched.HupDelay, deadline)
	late := signalled.Load() > 0 && waitGroups(ctx, h, cs, hup) != nil && ctx.Err() == nil
	rest := r.finish()
	if late {
		parallel(len(rest), func(i int) {
			if c := cs[rest[i]]; c.g.Populated() {
				c.Signal(syscall.SIGHUP, syscall.SIGCONT)
			}
		})
		_ = waitGroups(ctx, h, cs, deadline)
	}
	killGroups(ctx, h, cs, rest, done)
}

// killGroups sends SIGKILL to everything in h and to the sessions of cs
// whose leader left its cgroup, found or not, as stopProcesses sends it,
// then releases the groups rest indexes, each reported to done.
func killGroups(ctx context.Context, h *contain.Host, cs []*cgroupContainer, rest []int, done func(i int, err error)) {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killBound)
	defer cancel()
	defer context.AfterFunc(ctx, func() { time.AfterFunc(lateKill, cancel) })()
	hostKilled := h.Kill() == nil
	parallel(len(rest), func(i int) {
		if c := cs[rest[i]]; !hostKilled {
			_ = c.KillAll(kctx)
		} else if c.look(); c.out {
			_ = c.s.KillAll(kctx)
		}
	})
	emptied := waitGroups(kctx, h, cs, time.Time{}) == nil
	parallel(len(rest), func(i int) {
		var left []int
		if !emptied {
			left = cs[rest[i]].Members()
		}
		done(rest[i], released(ctx, cs[rest[i]], left))
	})
}

// releaser releases, one at a time, each group queued whose leader has
// been reaped and that then holds no process, while the other groups'
// processes are still being signalled and exiting: the kernel removes
// cgroups one at a time (one lock for all of them), so removing them all
// after the last exit would leave the other core idle, and many removing
// at once only spin on that lock. A group it cannot release now is left
// to killGroups.
type releaser struct {
	cs    []*cgroupContainer
	done  func(i int, err error)
	rest  []int         // the indexes it did not release, read once ended closes
	queue chan int      // each index of cs, once, after its SIGTERM
	stop  chan struct{} // closed: release only what is ready, wait for nothing
	ended chan struct{} // closed once every index has been taken
}

func startReleaser(cs []*cgroupContainer, done func(i int, err error)) *releaser {
	r := &releaser{cs: cs, done: done, queue: make(chan int, len(cs)),
		stop: make(chan struct{}), ended: make(chan struct{})}
	go func() {
		defer close(r.ended)
		for range len(cs) {
			if i := <-r.queue; !r.release(i) {
				r.rest = append(r.rest, i)
			}
		}
	}()
	return r
}

// release releases group i once its leader is reaped and nothing else is
// left in it, or not at all (false) where that is not so by the time stop
// closes.
func (r *releaser) release(i int) bool {
	c := r.cs[i]
	gone := c.child.gone()
	if gone == nil || c.out {
		return false // the leader's session outside is followed by killGroups
	}
	select {
	case <-gone:
	case <-r.stop:
		select {
		case <-gone:
		default:
			return false
		}
	}
	// A cgroup is removed only once nothing is left in it, not even the
	// dying: the removal itself is the check, one call where reading
	// cgroup.events first would be two.
	if c.g.TryRemove() != nil {
		return false
	}
	c.s.Release()
	r.done(i, nil)
	return true
}

// finish makes the releaser release what is ready without waiting,
// waits for it, and returns the indexes of the groups it did not
// release. Call it once every index is queued.
func (r *releaser) finish() []int {
	close(r.stop)
	<-r.ended
	return r.rest
}

// waitGroups waits until no group of h, and no process of a session whose
// leader left its cgroup, is left, until ctx ends or until (zero: no
// bound of its own).
func waitGroups(ctx context.Context, h *contain.Host, cs []*cgroupContainer, until time.Time) error {
	if !until.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, until)
		defer cancel()
	}
	if err := h.WaitEmpty(ctx); err != nil {
		return err
	}
	for _, c := range cs {
		if c.out {
			if err := c.s.WaitEmpty(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// parallel calls f for each of 0..n-1 on a few goroutines: enough to
// keep the cores busy with system calls, not one blocked thread each.
func parallel(n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, 4*runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				f(i)
			}
		}()
	}
	wg.Wait()
}
