package screen

import (
	"strings"
	"testing"
)

// TestCells reads back each attribute and width a host needs to draw a
// cell, and blanks for halves of wide characters cut in two.
func TestCells(t *testing.T) {
	t.Parallel()
	s := New(10, 2)
	s.Write(nil, []byte("\x1b[1;4;31mA\x1b[0;7mB\x1b[0;38;5;200;48;2;1;2;3mC\x1b[0m日e\u0301\r\n日本\x1b[2Gx"))
	cells := s.Cells()
	if len(cells) != 2 || len(cells[0]) != 10 {
		t.Fatalf("cells are %d rows", len(cells))
	}
	a, b, c := cells[0][0], cells[0][1], cells[0][2]
	if a.Text != "A" || !a.Bold || !a.Underline || a.Reverse || a.FG != 9 || a.BG != DefaultColor {
		t.Errorf("A: %+v (bold red shows as bright red 9)", a)
	}
	if b.Text != "B" || !b.Reverse || b.Bold || b.FG != DefaultColor || b.BG != DefaultColor {
		t.Errorf("B: %+v", b)
	}
	if c.FG != 200 || c.BG != RGBFlag|0x010203 {
		t.Errorf("C: %+v", c)
	}
	if w := cells[0][3]; w.Text != "日" || w.Rune != '日' || w.Width != 2 || cells[0][4].Width != 0 || cells[0][4].Text != "" {
		t.Errorf("wide: %+v %+v", w, cells[0][4])
	}
	if e := cells[0][5]; e.Text != "e\u0301" || e.Rune != 'e' || e.Width != 1 {
		t.Errorf("cluster: %+v", e)
	}
	if blank := cells[0][9]; blank.Text != " " || blank.Width != 1 {
		t.Errorf("blank: %+v", blank)
	}
	// 日's right half was overwritten: its left half is a blank.
	row := cells[1]
	if row[0].Text != " " || row[0].Width != 1 || row[1].Text != "x" || row[2].Text != "本" || row[2].Width != 2 {
		t.Errorf("cut wide character: %+v %+v %+v", row[0], row[1], row[2])
	}
}

// TestREPBounded floods the screen with huge REP counts: the work (bytes
// handed to vt10x) stays within two screens a REP, and the screen ends as
// a terminal's would.
func TestREPBounded(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {1000, 500}} {
		s := New(size[0], size[1])
		flood := "x" + strings.Repeat("\x1b[1000000000b", 200)
		s.Write(nil, []byte(flood))
		perREP := s.fed / 200
		if perREP > 2*size[0]*size[1]+64 {
			t.Errorf("%dx%d: %d bytes fed to vt10x per REP", size[0], size[1], perREP)
		}
		if s.panics != 0 {
			t.Errorf("%d panics", s.panics)
		}
	}
	// The cap keeps the result: 4 rows of 5, the last ending as it would.
	for _, c := range []struct {
		in   string
		want string
	}{
		{"ab\x1b[7b", "abbbb\nbbbb"},
		{"ab\x1b[30b", "bbbbb\nbbbbb\nbbbbb\nbb"}, // 32 characters: scrolled
		{"ab\x1b[31b", "bbbbb\nbbbbb\nbbbbb\nbbb"},
		{"\x1b[2;3r\x1b[4;1Hz\x1b[50b", "\n\n\nzzzzz"}, // below the region: the row is written over
	} {
		s := New(5, 4)
		s.Write(nil, []byte(c.in))
		if got := s.Text(); got != c.want {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
		// Without the cap, through put one character at a time.
		u := New(5, 4)
		u.Write(nil, []byte(strings.NewReplacer("\x1b[7b", strings.Repeat("b", 7), "\x1b[30b", strings.Repeat("b", 30), "\x1b[31b", strings.Repeat("b", 31), "\x1b[50b", strings.Repeat("z", 50)).Replace(c.in)))
		if got := u.Text(); got != c.want {
			t.Errorf("%q spelled out: got %q", c.in, got)
		}
	}
}
