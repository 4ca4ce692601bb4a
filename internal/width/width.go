// Package width says how many terminal columns a rune takes, the way the
// system's wcwidth(3) does, so the library's column arithmetic agrees with
// the programs it runs.
package width

//go:generate go run gen.go

// Rune returns the columns r takes on a terminal: 0 for combining marks and
// other zero-width characters, 2 for East Asian wide and fullwidth
// characters and emoji presentation, 1 otherwise. Control characters are
// not printed and take 0.
func Rune(r rune) int {
	switch {
	case r < 0x20:
		return 0
	case r < 0x7F:
		return 1
	case r < 0xA0:
		return 0
	case r < 0x300:
		return 1
	}
	if in(zeroWidth[:], r) {
		return 0
	}
	if in(doubleWidth[:], r) {
		return 2
	}
	return 1
}

func in(table [][2]rune, r rune) bool {
	lo, hi := 0, len(table)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch {
		case r < table[m][0]:
			hi = m
		case r > table[m][1]:
			lo = m + 1
		default:
			return true
		}
	}
	return false
}
