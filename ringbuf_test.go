package agentpty

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/agentpty/agentpty/internal/testkit"
)

// ringModel is the reference a ring is checked against: it keeps every byte
// ever written, so what a ring should hold is simply the tail.
type ringModel struct {
	capacity int
	all      []byte
}

func (m *ringModel) write(p []byte) { m.all = append(m.all, p...) }

func (m *ringModel) start() int64 { return int64(max(0, len(m.all)-m.capacity)) }

// from returns what slices(off) should: the held bytes from off, and how
// many bytes from off were evicted.
func (m *ringModel) from(off int64) ([]byte, int64) {
	if off > int64(len(m.all)) {
		return nil, 0
	}
	s := m.start()
	if off >= s {
		return m.all[off:], 0
	}
	return m.all[s:], s - max(off, 0)
}

// ringData makes n bytes that continue a sequence with period 251, a prime,
// so no buffer size lines up with it and a misplaced byte shows.
type ringData struct{ next byte }

func (d *ringData) take(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = d.next
		if d.next++; d.next == 251 {
			d.next = 0
		}
	}
	return p
}

// checkRing compares the ring with the model at offset off.
func checkRing(t *testing.T, r *ring, m *ringModel, off int64) {
	t.Helper()
	if got, want := r.end(), int64(len(m.all)); got != want {
		t.Fatalf("end() = %d, want %d", got, want)
	}
	if got, want := r.start(), m.start(); got != want {
		t.Fatalf("start() = %d, want %d", got, want)
	}
	if got, want := r.len(), int(r.end()-r.start()); got != want {
		t.Fatalf("len() = %d, want end-start = %d", got, want)
	}
	if len(r.buf) > r.capacity {
		t.Fatalf("buffer of %d bytes exceeds the capacity %d", len(r.buf), r.capacity)
	}
	want, wantLost := m.from(off)
	a, b, lost := r.slices(off)
	if len(a) == 0 && len(b) != 0 {
		t.Fatalf("slices(%d): first slice empty, second holds %d bytes", off, len(b))
	}
	if cap(a) != len(a) || cap(b) != len(b) {
		t.Fatalf("slices(%d): caps %d, %d exceed lengths %d, %d: an append would overwrite the ring",
			off, cap(a), cap(b), len(a), len(b))
	}
	got := append(slices.Clip(a), b...)
	if !bytes.Equal(got, want) || lost != wantLost {
		t.Fatalf("slices(%d) = %d+%d bytes, lost %d; want %d bytes, lost %d (start %d, end %d)\n got %v\nwant %v",
			off, len(a), len(b), lost, len(want), wantLost, r.start(), r.end(), ringHead(got), ringHead(want))
	}
	dst, lost := r.appendFrom([]byte("prefix"), off)
	if !bytes.Equal(dst, append([]byte("prefix"), want...)) || lost != wantLost {
		t.Fatalf("appendFrom(prefix, %d) = %d bytes, lost %d; want prefix + %d bytes, lost %d",
			off, len(dst), lost, len(want), wantLost)
	}
	first := max(off, m.start())
	for _, n := range []int{-1, 0, 1, len(want) / 2, len(want), len(want) + 3} {
		dst, lost := r.appendRange([]byte("prefix"), off, first+int64(n))
		w := want[:max(min(n, len(want)), 0)]
		if !bytes.Equal(dst, append([]byte("prefix"), w...)) || lost != wantLost {
			t.Fatalf("appendRange(prefix, %d, %d) = %d bytes, lost %d; want prefix + %d bytes, lost %d",
				off, first+int64(n), len(dst), lost, len(w), wantLost)
		}
	}
}

func ringHead(p []byte) []byte { return p[:min(len(p), 16)] }

// checkRingOffsets checks the offsets where the arithmetic turns: before,
// at and after the start and the end, the middle, and before 0.
func checkRingOffsets(t *testing.T, r *ring, m *ringModel) {
	t.Helper()
	s, e := r.start(), r.end()
	for _, off := range []int64{-1, 0, s - 1, s, s + 1, (s + e) / 2, e - 1, e, e + 1} {
		checkRing(t, r, m, off)
	}
}

// TestRingWraparound writes at every size, from 1 to past the capacity, and
// compares with the model after every write.
func TestRingWraparound(t *testing.T) {
	testkit.Parallel(t)
	for _, capacity := range []int{1, 2, 3, 7, 64, 100, 257} {
		for size := 1; size <= capacity+2; size++ {
			t.Run(fmt.Sprintf("cap%d/size%d", capacity, size), func(t *testing.T) {
				r, m, d := newRing(capacity), &ringModel{capacity: capacity}, ringData{}
				checkRingOffsets(t, r, m)
				for len(m.all) < 3*capacity+size {
					p := d.take(size)
					r.write(p)
					m.write(p)
					checkRingOffsets(t, r, m)
				}
			})
		}
	}
}

// TestRingMixedSizes interleaves small writes, which leave the oldest byte
// mid-buffer, with writes at or over the capacity, which replace everything.
func TestRingMixedSizes(t *testing.T) {
	testkit.Parallel(t)
	for _, capacity := range []int{1, 5, 64, 100, ringFirstAlloc + 3, 10000} {
		t.Run(fmt.Sprintf("cap%d", capacity), func(t *testing.T) {
			r, m, d := newRing(capacity), &ringModel{capacity: capacity}, ringData{}
			x := uint32(capacity)
			for range 300 {
				x = x*1664525 + 1013904223 // a fixed LCG: the same sizes every run
				size := int(x>>8) % (capacity + 3)
				p := d.take(size)
				r.write(p)
				m.write(p)
				checkRingOffsets(t, r, m)
			}
		})
	}
}

// TestRingGrowingWraparound covers capacities above the first allocation,
// where the ring grows before it wraps, at the sizes around each boundary.
func TestRingGrowingWraparound(t *testing.T) {
	testkit.Parallel(t)
	for _, capacity := range []int{ringFirstAlloc, ringFirstAlloc + 1, 10000, 3 * ringFirstAlloc, 4 * ringFirstAlloc} {
		sizes := []int{1, 3, 127, 1000, ringFirstAlloc - 1, ringFirstAlloc, ringFirstAlloc + 1, 5000,
			2*ringFirstAlloc - 1, 2 * ringFirstAlloc, 2*ringFirstAlloc + 1, capacity - 1, capacity, capacity + 1, 2*capacity + 3}
		for _, size := range sizes {
			t.Run(fmt.Sprintf("cap%d/size%d", capacity, size), func(t *testing.T) {
				r, m, d := newRing(capacity), &ringModel{capacity: capacity}, ringData{}
				// Checking costs O(capacity), so check every few hundred
				// bytes and at every buffer growth, not after every byte.
				step, next, bufLen := max(1, capacity/64), 0, 0
				for len(m.all) < 3*capacity+size {
					p := d.take(size)
					r.write(p)
					m.write(p)
					if len(m.all) >= next || len(r.buf) != bufLen {
						checkRingOffsets(t, r, m)
						next, bufLen = len(m.all)+step, len(r.buf)
					}
				}
				checkRingOffsets(t, r, m)
			})
		}
	}
}

func TestRingSlices(t *testing.T) {
	testkit.Parallel(t)
	r := newRing(8)
	for _, s := range []string{"abc", "defg", "hij"} {
		r.write([]byte(s))
	}
	// Held: "cdefghij" at offsets 2..9, wrapped in the buffer.
	cases := []struct {
		off  int64
		want string
		lost int64
	}{
		{-5, "cdefghij", 2},
		{0, "cdefghij", 2},
		{1, "cdefghij", 1},
		{2, "cdefghij", 0},
		{5, "fghij", 0},
		{9, "j", 0},
		{10, "", 0},
		{11, "", 0},
		{1 << 40, "", 0},
	}
	if r.start() != 2 || r.end() != 10 || r.len() != 8 {
		t.Fatalf("start, end, len = %d, %d, %d; want 2, 10, 8", r.start(), r.end(), r.len())
	}
	for _, c := range cases {
		a, b, lost := r.slices(c.off)
		if got := string(a) + string(b); got != c.want || lost != c.lost {
			t.Errorf("slices(%d) = %q+%q, %d; want %q, %d", c.off, a, b, lost, c.want, c.lost)
		}
	}
	if a, b, _ := r.slices(2); string(a) != "cdefgh" || string(b) != "ij" {
		t.Errorf("slices(2) = %q, %q; want the two halves %q, %q", a, b, "cdefgh", "ij")
	}
}

func TestRingLazyAllocation(t *testing.T) {
	r := newRing(0)
	if r.capacity != DefaultScrollbackBytes {
		t.Errorf("newRing(0) capacity = %d, want %d", r.capacity, DefaultScrollbackBytes)
	}
	if r.buf != nil {
		t.Fatalf("a fresh ring holds a %d-byte buffer, want none", cap(r.buf))
	}
	n := testing.AllocsPerRun(100, func() {
		r.write(nil)
		r.write([]byte{})
		_, _, _ = r.slices(0)
		_, _ = r.appendFrom(nil, 0)
		_, _, _ = r.start(), r.end(), r.len()
	})
	if n != 0 || r.buf != nil {
		t.Errorf("an idle ring allocated (%v allocations, buffer %d bytes), want nothing", n, cap(r.buf))
	}
}

// TestRingGrowth: the buffer doubles from the first allocation, never skips
// past what is needed, and stops at the capacity, after which writes
// allocate nothing.
func TestRingGrowth(t *testing.T) {
	cases := []struct {
		capacity, write int
		sizes           []int // buffer sizes in the order they appear
	}{
		{100, 10, []int{100}},
		{ringFirstAlloc, 1000, []int{ringFirstAlloc}},
		{10000, 1000, []int{4096, 8192, 10000}},
		{10000, 5000, []int{8192, 10000}},
		{10000, 20000, []int{10000}},
		{DefaultScrollbackBytes, 4096, []int{4096, 8192, 16384, 32768, 65536, 131072, 262144}},
		{DefaultScrollbackBytes, 100000, []int{131072, 262144}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("cap%d/write%d", c.capacity, c.write), func(t *testing.T) {
			r, p := newRing(c.capacity), make([]byte, c.write)
			var sizes []int
			for range 4*c.capacity/c.write + 1 {
				r.write(p)
				if len(r.buf) != cap(r.buf) {
					t.Fatalf("buffer length %d, capacity %d: the spare room is wasted", len(r.buf), cap(r.buf))
				}
				if len(sizes) == 0 || sizes[len(sizes)-1] != len(r.buf) {
					sizes = append(sizes, len(r.buf))
				}
			}
			if !slices.Equal(sizes, c.sizes) {
				t.Errorf("buffer sizes %v, want %v", sizes, c.sizes)
			}
			if n := testing.AllocsPerRun(100, func() { r.write(p) }); n != 0 {
				t.Errorf("write to a grown ring: %v allocations, want 0", n)
			}
		})
	}
}

// TestRingSlicesAlias: slices hands out the buffer itself, which is what
// lets readers avoid a copy; appending to what it returns must not write
// into the ring.
func TestRingSlicesAlias(t *testing.T) {
	testkit.Parallel(t)
	r := newRing(8)
	r.write([]byte("abcdef"))
	a, _, _ := r.slices(0)
	if &a[0] != &r.buf[0] {
		t.Error("slices copied the buffer, want it aliased")
	}
	_ = append(a, 'X', 'Y')
	if got, _ := r.appendFrom(nil, 0); string(got) != "abcdef" {
		t.Errorf("after appending to a slice, the ring holds %q, want %q", got, "abcdef")
	}
	r.write([]byte("gh"))
	if got, _ := r.appendFrom(nil, 0); string(got) != "abcdefgh" {
		t.Errorf("ring holds %q, want %q", got, "abcdefgh")
	}
}

// FuzzRing drives random writes and reads against the model. The input is
// a capacity and a program of 3-byte instructions: an opcode and a 16-bit
// operand.
func FuzzRing(f *testing.F) {
	f.Add(uint16(8), []byte{0, 5, 0, 2, 3, 0, 0, 7, 0, 3, 1, 0})
	f.Add(uint16(100), []byte{0, 250, 0, 0, 1, 0, 2, 50, 0, 1, 17, 0, 2, 0, 0})
	f.Add(uint16(5000), []byte{0, 0, 16, 0, 0, 16, 0, 0, 16, 2, 0, 32, 3, 4, 0})
	f.Add(uint16(12288), []byte{1, 0, 32, 0, 1, 0, 0, 255, 255, 2, 255, 255})
	f.Fuzz(func(t *testing.T, capSeed uint16, prog []byte) {
		capacity := 1 + int(capSeed)%(3*ringFirstAlloc+5)
		r, m, d := newRing(capacity), &ringModel{capacity: capacity}, ringData{}
		for ops := 0; len(prog) >= 3 && ops < 200; ops++ {
			op, v := prog[0], int(prog[1])|int(prog[2])<<8
			prog = prog[3:]
			switch op % 4 {
			case 0, 1: // write up to a bit over twice the capacity
				p := d.take(v % (2*capacity + 3))
				r.write(p)
				m.write(p)
			case 2: // read back from the end, maybe past the start or 0
				checkRing(t, r, m, r.end()-int64(v))
			case 3: // read near the start, maybe past the end
				checkRing(t, r, m, r.start()+int64(v)-2)
			}
			checkRing(t, r, m, r.start())
		}
		checkRingOffsets(t, r, m)
	})
}

func BenchmarkRingWrite(b *testing.B) {
	// 4 KiB writes land on the buffer's boundaries; 4000-byte writes wrap
	// and so take the two-copy path now and then.
	for _, size := range []int{4096, 4000} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			r, p := newRing(DefaultScrollbackBytes), make([]byte, size)
			for range 2 * DefaultScrollbackBytes / size {
				r.write(p) // grow the buffer before timing
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				r.write(p)
			}
		})
	}
}
