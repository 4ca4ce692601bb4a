package remote

import (
	"io"
	"os"
	"sync"
	"time"
)

// WriteChunk is the most one hand-over to the transport holds: what a
// Write that timed out may still deliver after it returned.
const WriteChunk = 16 << 10

// Input is a remote terminal's input, with a write deadline: Write hands
// its bytes, a chunk at a time, to the transport's copier, which reads
// them with Read and sends them (an SSH channel's Write, an exec stream's
// stdin), and returns once the copier has sent them (it asks for more).
// A transport blocks only while the host's window is full (the command
// does not read its input); the deadline then ends the Write. A chunk
// already handed over when that happens still goes, before the next
// Write's bytes; nothing else of the Write does.
type Input struct {
	chunks chan chunk    // unbuffered: a send is a hand-over
	done   chan struct{} // closed by Close: Read returns io.EOF, Write err
	once   sync.Once
	err    error // Close's; read after done

	wmu  sync.Mutex    // one Write at a time
	sent chan struct{} // the last chunk handed over has been sent; Write's

	rest []byte        // what the copier's last Read left; the copier's own
	cur  chan struct{} // closed when rest has been sent; the copier's own

	deadline deadline
}

type chunk struct {
	b    []byte
	sent chan struct{}
}

// NewInput returns an Input with no deadline.
func NewInput() *Input {
	return &Input{chunks: make(chan chunk), done: make(chan struct{}), deadline: deadline{cancel: make(chan struct{})}}
}

// Read is the transport's copier's: the next bytes to send. It returns
// io.EOF once the Input is closed. Asking for more says the bytes it
// returned before have been sent.
func (in *Input) Read(p []byte) (int, error) {
	if len(in.rest) == 0 {
		if in.cur != nil {
			close(in.cur)
			in.cur = nil
		}
		select {
		case c := <-in.chunks:
			in.rest, in.cur = c.b, c.sent
		case <-in.done:
			return 0, io.EOF
		}
	}
	n := copy(p, in.rest)
	in.rest = in.rest[n:]
	return n, nil
}

// Write types p: it returns once the copier sent it, or with
// os.ErrDeadlineExceeded when the deadline passed first, or with
// Close's error.
func (in *Input) Write(p []byte) (int, error) {
	in.wmu.Lock()
	defer in.wmu.Unlock()
	if isClosed(in.deadline.wait()) {
		return 0, os.ErrDeadlineExceeded
	}
	written := 0
	for len(p) > 0 {
		// A chunk a Write gave up on goes first.
		if err := in.await(in.sent); err != nil {
			return written, err
		}
		c := chunk{b: append([]byte(nil), p[:min(len(p), WriteChunk)]...), sent: make(chan struct{})}
		select {
		case in.chunks <- c:
		case <-in.deadline.wait():
			return written, os.ErrDeadlineExceeded
		case <-in.done:
			return written, in.err
		}
		in.sent = c.sent
		if err := in.await(c.sent); err != nil {
			return written, err
		}
		written += len(c.b)
		p = p[len(c.b):]
	}
	return written, nil
}

// await waits until sent is closed (nil: at once).
func (in *Input) await(sent chan struct{}) error {
	if sent == nil {
		return nil
	}
	select {
	case <-sent:
		return nil
	default:
	}
	select {
	case <-sent:
		return nil
	case <-in.deadline.wait():
		return os.ErrDeadlineExceeded
	case <-in.done:
		return in.err
	}
}

// SetDeadline bounds Write, as SetWriteDeadline on an os.File.
func (in *Input) SetDeadline(t time.Time) { in.deadline.set(t) }

// Close ends the input: the copier's Read returns io.EOF and Write
// returns err (the transport's failure, or io.ErrClosedPipe).
func (in *Input) Close(err error) {
	in.once.Do(func() {
		in.err = err
		close(in.done)
	})
}

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
