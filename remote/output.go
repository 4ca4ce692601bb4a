package remote

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"strconv"
	"sync"
	"time"
)

// oscNumber is the private OSC sequence of the marks a remote command
// and its probes write into the terminal's output, which Output takes
// out: ESC ] 6973 ; NONCE ; PAYLOAD BEL. The start mark's payload is the
// command's pid (or "nodir", see sshpty); a probe's fence is "f" and the
// probe's number (probe.sh's MARKFMT).
const oscNumber = "6973"

// MarkFormat is the printf format, for the shell, of a mark: its
// arguments are the nonce and the payload.
const MarkFormat = `\033]` + oscNumber + `;%s;%s\007`

// NewNonce returns a new terminal's nonce, the word its marks carry: 16
// hex digits from crypto/rand, which no program's output can guess.
func NewNonce() string {
	var n [8]byte
	_, _ = rand.Read(n[:])
	return hex.EncodeToString(n[:])
}

// FencePrefix is what begins the marks a probe's fence (see probe.sh)
// writes to a terminal for nonce: the prefix, the probe's number, BEL.
func FencePrefix(nonce string) []byte { return []byte("\x1b]" + oscNumber + ";" + nonce + ";f") }

// pumpMax bounds what Output holds that Read has not taken: beyond it
// the transport is not read, its window closes and the host's command
// waits, as a local one does when its terminal is not read.
const pumpMax = 256 << 10

// maxPre bounds what is read before the start mark: output the host
// prints before the command (a PAM banner) passes through, and a host
// that never prints the mark leaves the pid unknown.
const maxPre = 64 << 10

// FenceWait bounds the wait for a probe's mark: a terminal whose output
// is stopped (Ctrl-S) holds it back.
const FenceWait = 2 * time.Second

// Output is a remote terminal's output: what the transport delivers
// (Pump or Write), less the marks, for Read. It finds the start mark,
// notes the probes' fences, and tells whether output is on its way. Read
// and the transport need not wait for each other (an SSH channel's Read
// returns only when the host sends; OpenSSH keeps a channel open while
// its command lives), up to pumpMax held.
type Output struct {
	prefix, fence []byte // the start mark's and the fences' beginnings
	onData        func() // called when output comes (ProbeCache.Output)

	mu      sync.Mutex
	cond    *sync.Cond // signalled when any field below changes
	pre     []byte     // read before the start mark, not yet for Read
	started bool       // the start mark came, or will not
	payload string     // the start mark's
	buf     []byte     // for Read
	carry   []byte     // a tail that may begin a fence
	err     error      // how the output ended
	closed  bool       // Close was called
	waiting bool       // Read waits for output: none is on its way here
	seen    map[int]bool
	floor   int // fences below it were seen and forgotten
}

// NewOutput returns the output of a terminal whose marks carry nonce;
// onData (may be nil) is called whenever output comes.
func NewOutput(nonce string, onData func()) *Output {
	o := &Output{prefix: []byte("\x1b]" + oscNumber + ";" + nonce + ";"), fence: FencePrefix(nonce), onData: onData, seen: map[int]bool{}}
	o.cond = sync.NewCond(&o.mu)
	return o
}

// Pump reads r until it ends (or Close), as the terminal's output.
func (o *Output) Pump(r io.Reader) {
	p := make([]byte, 32<<10)
	for {
		n, err := r.Read(p)
		if err == nil && n == 0 {
			continue
		}
		if o.take(p[:n], err) || err != nil {
			return
		}
	}
}

// Write takes p as output, for a transport that pushes it (kubepty's
// exec stream); it waits while pumpMax is held.
func (o *Output) Write(p []byte) (int, error) {
	if o.take(p, nil) {
		return 0, io.ErrClosedPipe
	}
	return len(p), nil
}

// End says how the output ended (io.EOF when it simply did).
func (o *Output) End(err error) { o.take(nil, err) }

// take adds data (and the end, err) to the output; true once closed.
func (o *Output) take(data []byte, err error) bool {
	if len(o.carry) > 0 { // carry is only take's, which the transport calls in turn
		data = append(o.carry, data...)
	}
	var marks []int
	data, o.carry = StripMarks(data, o.fence, err != nil, func(n int) { marks = append(marks, n) })
	if len(data) > 0 && o.onData != nil {
		o.onData()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for len(o.buf) >= pumpMax && !o.closed {
		o.cond.Wait()
	}
	if o.closed {
		return true
	}
	if o.started {
		o.buf = append(o.buf, data...) // a copy: data may be the reader's array
	} else {
		o.pre = append(o.pre, data...)
		o.findStart(err != nil)
	}
	for _, n := range marks {
		o.note(n)
	}
	if err != nil && o.err == nil {
		o.err = err
	}
	o.cond.Broadcast()
	return false
}

// findStart looks for the start mark in pre; found, or given up (too
// much before it, or the end), pre becomes output.
func (o *Output) findStart(end bool) {
	if i := bytes.Index(o.pre, o.prefix); i >= 0 {
		if j := bytes.IndexByte(o.pre[i:], '\a'); j >= 0 {
			o.payload = string(o.pre[i+len(o.prefix) : i+j])
			o.buf = append(o.buf, o.pre[:i]...)
			o.buf = append(o.buf, o.pre[i+j+1:]...)
			o.pre, o.started = nil, true
			return
		}
	}
	if end || len(o.pre) > maxPre {
		o.buf, o.pre, o.started = append(o.buf, o.pre...), nil, true
	}
}

// note notes fence n seen; the marks of long ago are forgotten (no
// probe waits for them), and count as seen.
func (o *Output) note(n int) {
	o.seen[n] = true
	if len(o.seen) > 512 {
		o.floor = n - 256
		for k := range o.seen {
			if k < o.floor {
				delete(o.seen, k)
			}
		}
	}
}

// AwaitStart waits for the start mark and returns its payload: "" when
// the output ended, or too much came, before it, or ctx ended.
func (o *Output) AwaitStart(ctx context.Context) string {
	stop := context.AfterFunc(ctx, func() {
		o.mu.Lock()
		o.cond.Broadcast()
		o.mu.Unlock()
	})
	defer stop()
	o.mu.Lock()
	defer o.mu.Unlock()
	for !o.started && !o.closed && ctx.Err() == nil {
		o.cond.Wait()
	}
	return o.payload
}

// AwaitFence waits until fence n has been taken out, and so everything
// the program wrote before it; false when it did not come within
// FenceWait, or the output ended or was closed first.
func (o *Output) AwaitFence(n int) bool {
	// The deadline before the timer: its wake-up must find it passed.
	deadline := time.Now().Add(FenceWait)
	timer := time.AfterFunc(FenceWait, func() {
		o.mu.Lock()
		o.cond.Broadcast()
		o.mu.Unlock()
	})
	defer timer.Stop()
	o.mu.Lock()
	defer o.mu.Unlock()
	for !o.fenced(n) && !o.closed && o.err == nil && time.Now().Before(deadline) {
		o.cond.Wait()
	}
	return o.fenced(n)
}

func (o *Output) fenced(n int) bool { return o.seen[n] || n < o.floor }

// Read returns the output, io.EOF (or how it ended) at its end, and
// io.ErrClosedPipe after Close.
func (o *Output) Read(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for len(o.buf) == 0 && o.err == nil && !o.closed {
		o.waiting = true
		o.cond.Wait()
	}
	o.waiting = false
	if len(o.buf) > 0 {
		n := copy(p, o.buf)
		o.buf = o.buf[n:]
		if len(o.buf) == 0 {
			o.buf = nil // the next append starts a fresh array
		}
		o.cond.Broadcast()
		return n, nil
	}
	if o.closed {
		return 0, io.ErrClosedPipe
	}
	return 0, o.err
}

// Pending reports output on its way: taken from the transport and not
// yet returned by Read, or returned while no later Read waits.
func (o *Output) Pending() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.buf) > 0 || len(o.pre) > 0 || !o.waiting
}

// Close ends Read and the transport's Write and Pump; what was held is
// dropped.
func (o *Output) Close() {
	o.mu.Lock()
	o.closed, o.buf, o.pre = true, nil, nil
	o.cond.Broadcast()
	o.mu.Unlock()
}

// PID reads a start mark's payload as a pid: 0 for none or another word.
func PID(payload string) int {
	n, err := strconv.Atoi(payload)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// Held calls f with what Output holds for Read, under the lock Read
// fills its buffer under: a test sees the held bytes and a Read's at one
// moment.
func (o *Output) Held(f func(held []byte)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	f(o.buf)
}

// Err is how the output ended; nil while it goes on.
func (o *Output) Err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}
