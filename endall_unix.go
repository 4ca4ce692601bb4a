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

// endTogether ends, all at once, the processes of those of ss that a
// cgroup of m holds, with the same signals as each one's Kill (see
// endProcesses), so that Close costs one grace and a few system calls a
// session rather than a goroutine blocked in the kernel per session and
// per step. The sessions' own kills then find their End done.
func (m *Manager) endTogether(ss []*Session) {
	if m.contain == nil {
		return
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
	errs := endGroups(context.Background(), m.contain, cs, m.opts.KillGrace)
	for i, t := range ts {
		t.ending.finish(errs[i])
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
// sessions share.
func endGroups(ctx context.Context, h *contain.Host, cs []*cgroupContainer, grace time.Duration) []error {
	deadline := time.Now().Add(grace)
	var signalled atomic.Int64
	parallel(len(cs), func(i int) {
		if cs[i].Signal(syscall.SIGTERM, syscall.SIGCONT) > 0 {
			signalled.Add(1)
		}
	})
	hup := endsched.HupAt(time.Now(), deadline)
	if signalled.Load() > 0 && waitGroups(ctx, h, cs, hup) != nil && ctx.Err() == nil {
		parallel(len(cs), func(i int) {
			if cs[i].g.Populated() {
				cs[i].Signal(syscall.SIGHUP, syscall.SIGCONT)
			}
		})
		_ = waitGroups(ctx, h, cs, deadline)
	}
	// SIGKILL, to everything, found or not, as stopProcesses sends it.
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killBound)
	defer cancel()
	defer context.AfterFunc(ctx, func() { time.AfterFunc(lateKill, cancel) })()
	hostKilled := h.Kill() == nil
	parallel(len(cs), func(i int) {
		if c := cs[i]; !hostKilled {
			_ = c.KillAll(kctx)
		} else if c.look(); c.out {
			_ = c.s.KillAll(kctx)
		}
	})
	emptied := waitGroups(kctx, h, cs, time.Time{}) == nil
	errs := make([]error, len(cs))
	parallel(len(cs), func(i int) {
		var left []int
		if !emptied {
			left = cs[i].Members()
		}
		errs[i] = released(ctx, cs[i], left)
	})
	return errs
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
