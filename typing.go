package agentpty

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// typing is the session's side of the terminal's input: the one writer of
// the terminal, for input and query replies alike.
type typing struct {
	term Terminal
	id   string // the session's, for the error of a write that Kill overtook
	// mu: one writer at a time on the terminal. It is held across the
	// write, as poll.FD holds its own, and across the terminal's close.
	mu    sync.Mutex
	dying atomic.Bool  // Kill has begun: no more writes; set before, and the terminal closed under, mu
	last  atomic.Int64 // when input was last typed, unix ns; read with lastOutput by State's quietFor
}

func newTyping(term Terminal, id string) typing { return typing{term: term, id: id} }

// write types p, giving up at deadline or when ctx ends. A write that
// Kill overtakes fails with ErrNoSession.
func (t *typing) write(ctx context.Context, p []byte, deadline time.Time) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dying.Load() {
		return 0, t.killed()
	}
	// Most input fits in the local terminal's buffer at once; only what
	// does not needs a deadline.
	defer t.last.Store(time.Now().UnixNano())
	done := 0
	if tw, ok := t.term.(TryWriter); ok {
		if done = tw.TryWrite(p); done == len(p) {
			return done, nil
		}
	}
	p = p[done:]
	_ = t.term.SetWriteDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = t.term.SetWriteDeadline(time.Now()) })
	n, err := t.term.Write(p)
	stop()
	_ = t.term.SetWriteDeadline(time.Time{})
	if err != nil && t.dying.Load() {
		err = t.killed()
	}
	return done + n, err
}

func (t *typing) killed() error {
	return errorf(ErrNoSession, "%s: the session was killed", t.id)
}

// stop makes every write from now on fail with ErrNoSession and wakes one
// under way.
func (t *typing) stop() {
	t.dying.Store(true)
	_ = t.term.SetWriteDeadline(time.Now())
}

// stopped reports whether Kill has begun: nothing more is typed.
func (t *typing) stopped() bool { return t.dying.Load() }

// typedAt is when input was last typed, unix ns.
func (t *typing) typedAt() int64 { return t.last.Load() }

// close closes the terminal once a write that got in before stop is done.
func (t *typing) close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.term.Close()
}
