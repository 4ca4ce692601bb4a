package kubepty

import (
	"io"
	"os"
	"sync"
	"time"
)

// input is the stream's stdin: a Write hands its bytes to the stream's
// copier, which sends them; a Write the deadline ends gives up with
// nothing handed over.
type input struct {
	chunks   chan []byte   // unbuffered: a send is a hand-over
	done     chan struct{} // closed by close: the stream's Read returns io.EOF
	doneOnce sync.Once
	rest     []byte // what the copier's last Read left; the copier's own
	deadline deadline
}

func newInput() *input {
	return &input{chunks: make(chan []byte), done: make(chan struct{}), deadline: deadline{cancel: make(chan struct{})}}
}

// Read is the stream copier's.
func (in *input) Read(p []byte) (int, error) {
	if len(in.rest) == 0 {
		select {
		case in.rest = <-in.chunks:
		case <-in.done:
			return 0, io.EOF
		}
	}
	n := copy(p, in.rest)
	in.rest = in.rest[n:]
	return n, nil
}

func (in *input) write(p []byte, exited <-chan struct{}) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if isClosed(in.deadline.wait()) {
		return 0, os.ErrDeadlineExceeded
	}
	b := append([]byte(nil), p...)
	select {
	case in.chunks <- b:
		return len(p), nil
	case <-in.deadline.wait():
		return 0, os.ErrDeadlineExceeded
	case <-in.done:
		return 0, io.ErrClosedPipe
	case <-exited:
		return 0, io.ErrClosedPipe
	}
}

func (in *input) close() { in.doneOnce.Do(func() { close(in.done) }) }

// deadline is a write deadline as net.Pipe keeps one: a channel closed
// when it passes.
type deadline struct {
	mu     sync.Mutex // guards timer and cancel
	timer  *time.Timer
	cancel chan struct{}
}

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil && !d.timer.Stop() {
		<-d.cancel // the timer fired: its close has happened or is about to
	}
	d.timer = nil
	closed := isClosed(d.cancel)
	if t.IsZero() || time.Until(t) > 0 {
		if closed {
			d.cancel = make(chan struct{})
		}
		if !t.IsZero() {
			c := d.cancel
			d.timer = time.AfterFunc(time.Until(t), func() { close(c) })
		}
		return
	}
	if !closed {
		close(d.cancel)
	}
}

func (d *deadline) wait() chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cancel
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
