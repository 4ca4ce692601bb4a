package screen

import (
	"reflect"
	"strings"
	"testing"
)

func write(s *Screen, p string) string { return string(s.Write(nil, []byte(p))) }

func TestRepliesInOrder(t *testing.T) {
	t.Parallel()
	s := New(20, 5)
	got := write(s, "ab\x1b]11;?\a\x1b[c\x1b[6n\x1b[>0c\x1b[18t")
	want := "\x1b]11;rgb:0000/0000/0101\a\x1b[?62;22c\x1b[1;3R\x1b[>1;10;0c\x1b[8;5;20t"
	if got != want {
		t.Fatalf("replies %q, want %q", got, want)
	}
	// Replies are appended to dst.
	if got := string(s.Write([]byte("x"), []byte("\x1b[5n"))); got != "x\x1b[0n" {
		t.Fatalf("dst not kept: %q", got)
	}
}

func TestCPRFollowsEverythingBefore(t *testing.T) {
	t.Parallel()
	s := New(20, 5)
	// The query is answered from the cursor after the text before it,
	// even when all of it arrives in one Write.
	if got := write(s, "\r\n\r\nabc日\x1b[6ndef\x1b[6n"); got != "\x1b[3;6R\x1b[3;9R" {
		t.Fatalf("got %q", got)
	}
	s = New(20, 5)
	if got := write(s, "\x1b[2;4r\x1b[?6h\x1b[2;3H\x1b[6n"); got != "\x1b[2;3R" {
		t.Fatalf("origin mode CPR %q", got)
	}
}

func TestChanged(t *testing.T) {
	t.Parallel()
	s := New(10, 4)
	if got := s.Changed(); got != nil {
		t.Fatalf("blank screen changed %v", got)
	}
	write(s, "one\r\ntwo")
	if got := s.Changed(); !reflect.DeepEqual(got, []int{0, 1}) {
		t.Fatalf("got %v", got)
	}
	if got := s.Changed(); got != nil {
		t.Fatalf("nothing new, got %v", got)
	}
	write(s, "\x1b[1;1Hone\x1b[3;1Hthree") // row 0 rewritten with the same text
	if got := s.Changed(); !reflect.DeepEqual(got, []int{2}) {
		t.Fatalf("got %v", got)
	}
	write(s, "\x1b[?1049h")
	if got := s.Changed(); !reflect.DeepEqual(got, []int{0, 1, 2}) {
		t.Fatalf("alt screen: got %v", got)
	}
	s.Resize(12, 5)
	if got := s.Changed(); len(got) != 5 {
		t.Fatalf("after resize: got %v", got)
	}
}

func TestResizeKeepsTabStops(t *testing.T) {
	t.Parallel()
	s := New(10, 3)
	s.Resize(40, 3)
	write(s, "\ta\tb\tc\td")
	if got := s.Lines()[0]; got != "        a       b       c       d" {
		t.Fatalf("got %q", got)
	}
	if r, c := s.Cursor(); r != 0 || c != 33 {
		t.Fatalf("cursor %d,%d", r, c)
	}
	if cols, rows := s.Size(); cols != 40 || rows != 3 {
		t.Fatalf("size %dx%d", cols, rows)
	}
}

func TestResizeClamps(t *testing.T) {
	t.Parallel()
	s := New(0, -3)
	if c, r := s.Size(); c != 1 || r != 1 {
		t.Fatalf("size %dx%d", c, r)
	}
	s.Resize(5000, 5000)
	if c, r := s.Size(); c != maxCols || r != maxRows {
		t.Fatalf("size %dx%d", c, r)
	}
	write(s, "\x1b[9999;9999Hx")
	if r, c := s.Cursor(); r != maxRows-1 || c != maxCols-1 {
		t.Fatalf("cursor %d,%d", r, c)
	}
}

// TestRecoversFromPanic checks the guard: after vt10x panics the screen
// still works and keeps its text.
func TestRecoversFromPanic(t *testing.T) {
	t.Parallel()
	s := New(20, 5)
	write(s, "hello\r\n日本 e\u0301")
	s.guard(func() { panic("injected") })
	if s.panics != 1 {
		t.Fatal("panic not counted")
	}
	if got := s.Text(); got != "hello\n日本 e\u0301" {
		t.Fatalf("text after recovery %q", got)
	}
	write(s, "\x1b[3;1Hstill works")
	if got := s.Lines()[2]; got != "still works" {
		t.Fatalf("got %q", got)
	}
}

func TestTextDropsTrailingRows(t *testing.T) {
	t.Parallel()
	s := New(10, 5)
	write(s, "a  \r\n\r\n b")
	if got := s.Text(); got != "a\n\n b" {
		t.Fatalf("got %q", got)
	}
	if got := s.Lines(); len(got) != 5 || got[3] != "" {
		t.Fatalf("lines %q", got)
	}
}

// TestNoPhantomBlanks checks that a wide character appears once in Text
// and its neighbours stay where the program put them.
func TestNoPhantomBlanks(t *testing.T) {
	t.Parallel()
	s := New(12, 3)
	write(s, "中文字幕!\r\n|😀|")
	if got := s.Text(); got != "中文字幕!\n|😀|" {
		t.Fatalf("got %q", got)
	}
	if r, c := s.Cursor(); r != 1 || c != 4 {
		t.Fatalf("cursor %d,%d", r, c)
	}
	if strings.ContainsRune(s.Text(), wideTail) {
		t.Fatal("placeholder leaked")
	}
}
