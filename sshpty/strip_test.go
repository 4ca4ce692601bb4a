package sshpty

import (
	"strings"
	"testing"
)

// The probes' marks leave the output whole however the reads split it,
// and text that only looks like the start of one passes through.
func TestStripFences(t *testing.T) {
	prefix := []byte(markOSC + "n0nce;f")
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
