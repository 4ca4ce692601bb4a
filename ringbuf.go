package agentpty

// ringFirstAlloc is the first buffer a ring allocates; it doubles from there
// up to the capacity, so an idle session costs a few KiB, not the full
// scrollback.
const ringFirstAlloc = 4 << 10

// ring holds the newest bytes the program wrote, up to a capacity, and names
// every byte by its offset in the whole stream so readers can tell what they
// have seen and what was dropped before they saw it. It does no locking: the
// output's inMu guards it (output.go).
type ring struct {
	buf      []byte // nil until the first write; grows to at most capacity
	capacity int
	head     int   // index in buf of the oldest byte held
	n        int   // bytes held
	total    int64 // bytes ever written: the offset one past the newest byte
}

// newRing returns an empty ring that keeps the newest capacity bytes
// (DefaultScrollbackBytes if capacity <= 0). It allocates no buffer yet.
func newRing(capacity int) *ring {
	if capacity <= 0 {
		capacity = DefaultScrollbackBytes
	}
	return &ring{capacity: capacity}
}

// write appends p, evicting the oldest bytes beyond the capacity. If p alone
// exceeds the capacity only its last capacity bytes are kept. It copies p
// at most twice and, once the buffer is fully grown, allocates nothing.
func (r *ring) write(p []byte) {
	if len(p) == 0 {
		return
	}
	r.total += int64(len(p))
	if len(p) >= r.capacity {
		// p replaces everything held.
		if len(r.buf) < r.capacity {
			r.buf = make([]byte, r.capacity)
		}
		copy(r.buf, p[len(p)-r.capacity:])
		r.head, r.n = 0, r.capacity
		return
	}
	if need := r.n + len(p); need > len(r.buf) && len(r.buf) < r.capacity {
		r.grow(need)
	}
	size := len(r.buf)
	tail := r.head + r.n
	if tail >= size {
		tail -= size
	}
	if k := copy(r.buf[tail:], p); k < len(p) {
		copy(r.buf, p[k:])
	}
	// Bytes written past a full buffer overwrote the oldest ones.
	if r.n += len(p); r.n > size {
		r.head += r.n - size
		if r.head >= size {
			r.head -= size
		}
		r.n = size
	}
}

// grow replaces the buffer by one of at least need bytes (doubling, capped at
// the capacity) holding the same bytes from index 0.
func (r *ring) grow(need int) {
	size := max(len(r.buf), min(ringFirstAlloc, r.capacity))
	for size < need && size < r.capacity {
		size *= 2
	}
	size = min(size, r.capacity)
	buf := make([]byte, size)
	a, b := r.held(0)
	copy(buf[copy(buf, a):], b)
	r.buf, r.head = buf, 0
}

// end returns the offset one past the newest byte: the count of bytes ever
// written.
func (r *ring) end() int64 { return r.total }

// start returns the offset of the oldest byte still held.
func (r *ring) start() int64 { return r.total - int64(r.n) }

// len returns the count of bytes held.
func (r *ring) len() int { return r.n }

// slices returns the held bytes from offset off to the end as at most two
// slices aliasing the buffer, and how many bytes
// from off were already evicted (start() - off, 0 if off >= start()).
// Offsets below 0 count from 0; an off past end() returns nothing. The
// bytes stay as they are until capacity-(end()-off) more bytes are written
// (a grow leaves the old buffer untouched).
func (r *ring) slices(off int64) (a, b []byte, lost int64) {
	if off > r.total {
		return nil, nil, 0
	}
	if s := r.start(); off < s {
		lost = s - max(off, 0)
		off = s
	}
	a, b = r.held(int(off - r.start()))
	return a, b, lost
}

// held returns the held bytes after the first skip of them. The slices are
// capped at their length so an append to one cannot overwrite the ring.
func (r *ring) held(skip int) (a, b []byte) {
	m := r.n - skip
	if m == 0 {
		return nil, nil
	}
	size := len(r.buf)
	i := r.head + skip
	if i >= size {
		i -= size
	}
	if i+m <= size {
		return r.buf[i : i+m : i+m], nil
	}
	return r.buf[i:size:size], r.buf[: m-(size-i) : m-(size-i)]
}

// appendFrom appends the held bytes from offset off to the end to dst and
// reports the evicted count as slices does.
func (r *ring) appendFrom(dst []byte, off int64) ([]byte, int64) {
	return r.appendRange(dst, off, r.total)
}

// appendRange appends the held bytes from offset off up to offset to (at
// most the end) to dst and reports the evicted count as slices does. The
// readers that copy from the ring (the renderer, taps, Expect) go through
// it; the screen reads slices in place.
func (r *ring) appendRange(dst []byte, off, to int64) ([]byte, int64) {
	a, b, lost := r.slices(off)
	n := int(min(to, r.total) - (r.total - int64(len(a)+len(b))))
	switch {
	case n <= 0:
		return dst, lost
	case n <= len(a):
		return append(dst, a[:n]...), lost
	}
	return append(append(dst, a...), b[:n-len(a)]...), lost
}
