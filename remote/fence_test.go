package remote

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The probes' marks leave the output whole however the reads split it,
// and text that only looks like the start of one passes through.
func TestStripFences(t *testing.T) {
	prefix := FencePrefix("n0nce")
	in := "a\x1b]6973;n0nce;f7\abc\x1b]6973;other;f8\ad\x1b]6973;n0nce;f9\a\x1b"
	want := "abc\x1b]6973;other;f8\ad\x1b"
	for size := 1; size <= len(in); size++ {
		var out strings.Builder
		var carry []byte
		last := 0
		for i := 0; i < len(in); i += size {
			chunk := []byte(in[i:min(i+size, len(in))])
			data := append(carry, chunk...)
			var got []byte
			var n int
			got, carry, n = stripFences(data, prefix, i+size >= len(in))
			out.Write(got)
			last = max(last, n)
		}
		if out.String() != want || last != 9 || len(carry) != 0 {
			t.Fatalf("reads of %d: %q, last mark %d, held %q; want %q and 9", size, out.String(), last, carry, want)
		}
	}
}

// A chunk without a mark comes back as it is, no copy made, less a tail
// that may begin one; that tail, joined to the next chunk, is a mark
// taken out or text passed through.
func TestStripFencesWithoutAMark(t *testing.T) {
	prefix := FencePrefix("n0nce")
	for _, c := range []struct {
		name        string
		chunks      []string
		out, carry  []string // after each chunk
		last        int
		sameAsChunk []bool // out is the chunk's own array
	}{
		{"plain", []string{"hello\r\nworld"}, []string{"hello\r\nworld"}, []string{""}, 0, []bool{true}},
		{"escape not ours", []string{"a\x1b[1mb\x1b]0;title\a"}, []string{"a\x1b[1mb\x1b]0;title\a"}, []string{""}, 0, []bool{true}},
		{"tail begins a mark", []string{"hello\x1b]69"}, []string{"hello"}, []string{"\x1b]69"}, 0, []bool{true}},
		{"tail is the whole prefix less one", []string{"x\x1b]6973;n0nce;"}, []string{"x"}, []string{"\x1b]6973;n0nce;"}, 0, []bool{true}},
		{"carry joined to a mark", []string{"hello\x1b]69", "73;n0nce;f5\arest"}, []string{"hello", "rest"}, []string{"\x1b]69", ""}, 5, []bool{true, false}},
		{"carry joined to other text", []string{"hello\x1b]69", "xyz"}, []string{"hello", "\x1b]69xyz"}, []string{"\x1b]69", ""}, 0, []bool{true, true}},
		{"number split", []string{"ab\x1b]6973;n0nce;f12", "3\acd"}, []string{"ab", "cd"}, []string{"\x1b]6973;n0nce;f12", ""}, 123, []bool{false, false}},
	} {
		var carry []byte
		last := 0
		for i, chunk := range c.chunks {
			data := append(carry, chunk...)
			var out []byte
			var n int
			out, carry, n = stripFences(data, prefix, false)
			last = max(last, n)
			if string(out) != c.out[i] || string(carry) != c.carry[i] {
				t.Fatalf("%s, chunk %d: %q, held %q; want %q, held %q", c.name, i, out, carry, c.out[i], c.carry[i])
			}
			same := len(out) > 0 && &out[0] == &data[0]
			if same != c.sameAsChunk[i] {
				t.Errorf("%s, chunk %d: out is the chunk's own array %v, want %v", c.name, i, same, c.sameAsChunk[i])
			}
			if same && len(carry) > 0 && &carry[0] == &data[len(out)] {
				t.Errorf("%s, chunk %d: the held tail is the chunk's array, which the next read overwrites", c.name, i)
			}
		}
		if last != c.last {
			t.Errorf("%s: last mark %d, want %d", c.name, last, c.last)
		}
		// At the end nothing is held: the tail goes out as it is.
		if out, held, _ := stripFences([]byte(c.chunks[0]), prefix, true); string(out) != c.chunks[0] || held != nil {
			t.Errorf("%s at the end: %q, held %q; want %q", c.name, out, held, c.chunks[0])
		}
	}
	plain := []byte(strings.Repeat("12345\r\n", 4096))
	if n := testing.AllocsPerRun(10, func() { stripFences(plain, prefix, false) }); n != 0 {
		t.Errorf("a chunk without a mark cost %v allocations; want none", n)
	}
}

// BenchmarkStripFences is a reader's cost per 32 KiB chunk of output:
// plain text (what a program mostly writes), and a chunk holding a mark.
func BenchmarkStripFences(b *testing.B) {
	prefix := FencePrefix("n0nce")
	var plain []byte
	for i := 1; len(plain) < 32<<10; i++ {
		plain = append(plain, strconv.Itoa(i)+"\r\n"...)
	}
	plain = plain[:32<<10]
	mark := slices.Concat(plain[:16<<10], []byte("\x1b]6973;n0nce;f42\a"), plain[16<<10:])[:32<<10]
	for _, c := range []struct {
		name  string
		chunk []byte
	}{{"plain", plain}, {"mark", mark}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.chunk)))
			b.ReportAllocs()
			for b.Loop() {
				out, carry, _ := stripFences(c.chunk, prefix, false)
				if len(out) == 0 || len(carry) != 0 {
					b.Fatalf("%d bytes out, %q held", len(out), carry)
				}
			}
		})
	}
}

// stripFences is StripMarks returning the last mark's number, as a
// reader that waits for one probe at a time would use it.
func stripFences(data, prefix []byte, end bool) (out, carry []byte, last int) {
	out, carry = StripMarks(data, prefix, end, func(n int) { last = max(last, n) })
	return out, carry, last
}
