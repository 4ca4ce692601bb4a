package screen

import (
	"reflect"
	"testing"
)

// TestRedrawKeepsCells: a screen fed its own redraw has the same cells and
// cursor, reverse video with colours of its own included (vt10x stores
// those swapped; a redraw that sent them as stored inverted them).
func TestRedrawKeepsCells(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"\x1b[7;31;42mX\x1b[0m plain \x1b[1;4;34mblue\x1b[0m",
		"\x1b[38;5;200;48;5;17mpalette\x1b[7m rev\x1b[0m\r\n\x1b[2;5Hmoved 日本",
		"\x1b[?1049h\x1b[44m\x1b[2J\x1b[5;3H\x1b[7mmenu item\x1b[0m",
	} {
		a := New(40, 8)
		a.Write(nil, []byte(in))
		b := New(40, 8)
		b.Write(nil, a.Redraw(nil))
		if !reflect.DeepEqual(a.Cells(), b.Cells()) {
			t.Errorf("%q: cells differ after a redraw:\n%v\n%v", in, a.Cells(), b.Cells())
		}
		ar, ac := a.Cursor()
		if br, bc := b.Cursor(); ar != br || ac != bc {
			t.Errorf("%q: cursor %d,%d after a redraw, want %d,%d", in, br, bc, ar, ac)
		}
	}
}
