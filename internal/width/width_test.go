package width

import "testing"

func TestRune(t *testing.T) {
	t.Parallel()
	cases := []struct {
		r    rune
		want int
	}{
		{'a', 1}, {' ', 1}, {'~', 1}, {'\t', 0}, {0x1b, 0}, {0x7f, 0}, {0x85, 0},
		{'é', 1}, {0x0301, 0}, {0x200B, 0}, {'日', 2}, {'本', 2}, {'한', 2},
		{0xFF21, 2}, {0x1F600, 2}, {'─', 1}, {0x3000, 2}, {0x10FFFF, 1},
	}
	for _, c := range cases {
		if got := Rune(c.r); got != c.want {
			t.Errorf("Rune(%U) = %d, want %d", c.r, got, c.want)
		}
	}
}

func BenchmarkRuneCJK(b *testing.B) {
	for i := 0; i < b.N; i++ {
		_ = Rune(rune(0x4E00 + i%0x5000))
	}
}
