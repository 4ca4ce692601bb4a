package agentpty

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// EventKind says what happened to a session.
type EventKind string

// Event kinds.
const (
	EventCreated EventKind = "created" // the child started
	EventExited  EventKind = "exited"  // the child exited (ExitCode or Signal set)
	EventKilled  EventKind = "killed"  // Kill or Close ended the session
	EventReaped  EventKind = "reaped"  // IdleTimeout or MaxLifetime ended the session
	// EventInputHidden: the terminal stopped echoing in line mode, so the
	// program most likely waits for a password (see Manager.WriteSecret).
	EventInputHidden EventKind = "input_hidden"
	EventOutput      EventKind = "output" // the program printed; Lines holds the newest lines
)

// Event reports a change in a session's life to Options.OnEvent.
type Event struct {
	Kind     EventKind
	ID       string
	PID      int
	Command  string
	ExitCode *int
	Signal   string
	Time     time.Time
	// Lines holds, for EventOutput, the newest lines of the settled
	// scrollback (the last one being written), for a live tail. It is
	// shared: do not change it.
	Lines []string
	// Foreground and ForegroundExe name, for EventInputHidden, the program
	// at the password prompt and the path of its executable, so a host
	// can show its user who asks before it calls WriteSecret.
	Foreground    string
	ForegroundExe string
}

// outputEvents is a session's output events and its watchers.
type outputEvents struct {
	outArmed atomic.Bool  // an output event is due
	outLast  atomic.Int64 // when the last one was sent, unix ns
	outTimer atomic.Pointer[time.Timer]
	watched  atomic.Int32 // len(watchers), read without the lock
	watchers []*watcher   // guarded by the manager's mu
}

// Output events: at most one per outputEvery per session, each with the
// newest outputLines lines of the settled scrollback.
const (
	outputEvery = 250 * time.Millisecond
	outputLines = 10
)

// queued is an event on its way: to Options.OnEvent when to is nil, else
// to one waiting call's watcher.
type queued struct {
	e  Event
	to *watcher
}

// watcher is the event function of one call that waits on a session.
type watcher struct {
	f      func(Event)
	mu     sync.Mutex // held while f runs, so the call's end waits for it
	active bool       // false once the call's wait has ended; guarded by mu
	last   []string   // the lines it heard last, or had before the call; guarded by the manager's mu
}

type eventsKey struct{}

// WithEvents returns a copy of ctx that makes a call given it (Start,
// Write, Call) report the output events of the session it waits on to f,
// while it waits, whether or not Options.OnEvent is set: a host's way to
// show a tool call's progress. An event reaches f only when its lines
// differ from those f heard last, at first from those before the call (for
// a Start, from none). f is called as OnEvent is: in order, one event at a
// time, without any lock held, from the library's goroutines, and never
// once the call's wait has ended: the call returns only after f has, so f
// must not wait for the call.
func WithEvents(ctx context.Context, f func(Event)) context.Context {
	return context.WithValue(ctx, eventsKey{}, f)
}

// watch sends the session's output events to the function ctx carries
// (WithEvents), if any, until the func it returns is called: those whose
// lines differ from the ones it heard last, at first from the lines
// before the call (tail's; a newline or an escape sequence trailing them
// changes nothing to show). A start's watcher hears the session's lines
// from the first, those rendered before it was added too: the program may
// print before the start's wait begins, and then print nothing more: due
// says that such an event is to be scheduled now. m is the session's
// Manager, whose mu guards the watchers.
func (e *outputEvents) watch(ctx context.Context, m *Manager, start bool, tail func(n int) []string) (unwatch func(), due bool) {
	f, _ := ctx.Value(eventsKey{}).(func(Event))
	if f == nil {
		return func() {}, false
	}
	// Taken before w is added: output rendered in between is news to it.
	w := &watcher{f: f, active: true}
	last := tail(outputLines)
	early := start && len(last) > 0
	if !start {
		w.last = last
	}
	e.add(m, w)
	return func() {
		w.mu.Lock() // after f's event, if one is under way
		w.active = false
		w.mu.Unlock()
		e.remove(m, w)
	}, early && e.due(true)
}

// add has w hear the output events from now on.
func (e *outputEvents) add(m *Manager, w *watcher) {
	m.mu.Lock()
	e.watchers = append(e.watchers, w)
	m.mu.Unlock()
	e.watched.Add(1)
}

// remove has w hear no more output events.
func (e *outputEvents) remove(m *Manager, w *watcher) {
	e.watched.Add(-1)
	m.mu.Lock()
	e.watchers = slices.DeleteFunc(e.watchers, func(x *watcher) bool { return x == w })
	m.mu.Unlock()
}

// due is the news that output was rendered: it reports whether an output
// event must be scheduled, because someone listens (listened: the host's
// OnEvent; or a watcher) and none is due yet, which it then claims. The
// one event due takes the lines, and the watchers, as they are when it is
// sent; so the reader never blocks and it costs nothing when no one
// listens.
func (e *outputEvents) due(listened bool) bool {
	if !listened && e.watched.Load() == 0 {
		return false
	}
	return e.outArmed.CompareAndSwap(false, true)
}

// schedule has send run for the event due, at most outputEvery after the
// last one was sent.
func (e *outputEvents) schedule(send func()) {
	delay := time.Duration(e.outLast.Load() + int64(outputEvery) - time.Now().UnixNano())
	e.outTimer.Store(time.AfterFunc(max(delay, 0), send))
}

// sent records that the event due is sent at now. Before the lines are
// taken: output rendered after this makes the next event due, so none is
// lost.
func (e *outputEvents) sent(now time.Time) {
	e.outLast.Store(now.UnixNano())
	e.outArmed.Store(false)
}

// queue queues ev for the watchers whose lines it changes; it reports
// whether the delivery must be started. Call with m.mu held.
func (e *outputEvents) queue(m *Manager, ev Event) bool {
	start := false
	for _, w := range e.watchers {
		if !slices.Equal(ev.Lines, w.last) {
			w.last = ev.Lines
			start = m.enqueueOutput(queued{e: ev, to: w}) || start
		}
	}
	return start
}

// enqueueOutput queues an output event, or, when the newest event queued
// for the same session and receiver is an undelivered output event,
// replaces that one: a slow receiver gets the newest lines, not a backlog.
// Call with mu held.
func (m *Manager) enqueueOutput(q queued) bool {
	for i := len(m.queue) - 1; i >= 0; i-- {
		if p := &m.queue[i]; p.e.ID == q.e.ID && p.to == q.to {
			if p.e.Kind != EventOutput {
				break
			}
			p.e = q.e
			return false
		}
	}
	return m.enqueue(q)
}

// stop stops a pending output event once the reader has stopped.
func (e *outputEvents) stop() {
	if t := e.outTimer.Load(); t != nil {
		t.Stop()
	}
}

// hand gives q to its receiver. A receiver that panics does not take the
// host down with it, nor stop later events.
func (m *Manager) hand(q queued) {
	defer func() { _ = recover() }()
	if q.to == nil {
		m.opts.OnEvent(q.e)
	} else {
		q.to.mu.Lock()
		defer q.to.mu.Unlock()
		if q.to.active {
			q.to.f(q.e)
		}
	}
}
