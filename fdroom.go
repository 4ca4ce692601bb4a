package agentpty

import (
	"os"
	"sync"
)

// roomSize is how many descriptors fdRoom holds in reserve: enough for
// the ending's goroutines (see parallel) to read a cgroup's members and
// open their pidfds at once, and for the waits on cgroup.events.
const roomSize = 16

// fdRoom holds a few descriptors (of os.DevNull) in reserve, so that
// sessions can be ended when the process is at its descriptor limit: a
// farm that started sessions up to it, or whose start was refused there
// (ErrTooManySessions naming RLIMIT_NOFILE). Ending a session opens
// descriptors (its cgroup's member list, pidfds to signal through,
// cgroup.kill, cgroup.events); without them no process would be
// signalled and Kill would wait out its bounds. An ending frees the
// reserve while it runs (the last one out takes it back); Close frees it
// for good.
type fdRoom struct {
	mu     sync.Mutex
	held   []*os.File
	users  int  // endings under way
	on     bool // open was called: a local session may need the reserve
	closed bool // Close has begun: the reserve is not taken again
}

// open begins to hold the reserve (at the first local start).
func (r *fdRoom) open() {
	r.mu.Lock()
	r.on = true
	r.mu.Unlock()
	r.take()
}

// take fills the reserve up to roomSize, as far as the limit allows,
// once open was called and while no ending runs.
func (r *fdRoom) take() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.on || r.closed || r.users > 0 {
		return
	}
	for len(r.held) < roomSize {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return
		}
		r.held = append(r.held, f)
	}
}

// use frees the reserve for an ending and returns what ends the use; the
// last use to end takes the reserve back.
func (r *fdRoom) use() (done func()) {
	r.mu.Lock()
	r.users++
	r.free()
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		r.users--
		r.mu.Unlock()
		r.take()
	}
}

// close frees the reserve for good.
func (r *fdRoom) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	r.free()
}

// free closes what the reserve holds. Call with mu held.
func (r *fdRoom) free() {
	for _, f := range r.held {
		f.Close()
	}
	r.held = nil
}
