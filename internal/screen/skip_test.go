package screen

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// randomStream builds output that is mostly plain text (lines, wide and
// combining characters, tabs, backspaces, SGR) with other sequences mixed
// in, so plain runs start and end in every kind of state.
func randomStream(r *rand.Rand, n, cols int) []byte {
	sgrs := []string{"", "0", "1", "31", "38;5;100", "4:3", "0;1;32", ";7", "38;2;1;2;3", "7", "22", "38;5", "00;4", "48;5;3", "38:2::9:8:7"}
	others := []string{
		"\x1b[3;7H", "\x1b[2;5r", "\x1b[r", "\x1b[?1049h", "\x1b[?1049l", "\x1b7", "\x1b8",
		"\x1b[3b", "\x1b[K", "\x1b(0", "\x1b(B", "\x1b[4h", "\x1b[4l", "\x1bD", "\x1bM",
		"\x1b[?7l", "\x1b[?7h", "\x1b[20h", "\x1b[20l", "\x1b[A", "\x1b[2J", "\x1b[5Z",
		"\x1b]0;t\a", "\x1b[@", "\x1b[L", "\x1b[?6h", "\x1b[?6l", "\x1b[?45h", "\x1b[?45l",
	}
	local := []string{"\x1b[K", "\x1b[1K", "\x1b[2K", "\x1b[0K", "\x1b[3X", "\x1b[2P", "\x1b[4@", "\x1b[5G",
		"\x1b[3C", "\x1b[2D", "\x1b[10`", "\x1b[3a", "\x1b[C", "\x1b[200G", "\x1b[;K"}
	words := []string{"日本", "é", "e\u0301", "👍", "x\u0308", "abc", "\u00ff"}
	var b strings.Builder
	for b.Len() < n {
		switch k := r.Intn(100); {
		case k < 30:
			for i := r.Intn(cols * 2); i > 0; i-- {
				b.WriteByte(byte(' ' + r.Intn(95)))
			}
		case k < 55:
			b.WriteString("\r\n")
		case k < 60:
			b.WriteString("\n")
		case k < 63:
			b.WriteString("\r")
		case k < 73:
			b.WriteString("\x1b[" + sgrs[r.Intn(len(sgrs))] + "m")
		case k < 80:
			b.WriteString(words[r.Intn(len(words))])
		case k < 83:
			b.WriteString("\t")
		case k < 85:
			b.WriteString("\b")
		case k < 87:
			b.WriteString("\xe3\x81") // a rune cut short
		case k < 91:
			b.WriteString(local[r.Intn(len(local))])
		default:
			if r.Intn(4) == 0 {
				b.WriteString(others[r.Intn(len(others))])
			} else {
				b.WriteString("\r\n")
			}
		}
	}
	return []byte(b.String())
}

// state is everything skipping must preserve: cells, cursor, attributes.
func state(s *Screen) string {
	s.catchUp()
	s.flush()
	s.vt.Lock()
	defer s.vt.Unlock()
	var b strings.Builder
	c := s.vt.Cursor()
	fmt.Fprintf(&b, "cursor %d,%d state %d attr %+v alt %v\n", c.X, c.Y, c.State, c.Attr, s.alt)
	for y := 0; y < s.rows; y++ {
		for x := 0; x < s.cols; x++ {
			g := s.vt.Cell(x, y)
			// Cluster runes are numbered in the order met: compare text.
			fmt.Fprintf(&b, "%q/%d/%d/%d ", s.clusters.str(g.Char), g.Mode, g.FG, g.BG)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// TestSkipInvisible checks that skipping plain text changes nothing:
// random streams fed with and without it, whole and in random pieces,
// leave the same cells, cursor and attributes.
func TestSkipInvisible(t *testing.T) {
	t.Parallel()
	checkSkipInvisible(t, 1, randomStream, (*Screen).Write)
}

// checkSkipInvisible feeds 300 random streams from gen through write, whole
// and in random pieces, and compares each screen and its replies with one
// that parses everything.
func checkSkipInvisible(t *testing.T, seed int64, gen func(*rand.Rand, int, int) []byte, write func(*Screen, []byte, []byte) []byte) {
	t.Helper()
	r := rand.New(rand.NewSource(seed))
	skipped := 0
	for iter := 0; iter < 300; iter++ {
		cols, rows := 5+r.Intn(30), 2+r.Intn(10)
		p := gen(r, 200+r.Intn(6000), cols)
		ref := New(cols, rows)
		ref.noSkip = true
		refReply := ref.Write(nil, p)
		whole := New(cols, rows)
		wholeReply := write(whole, nil, p)
		pieces := New(cols, rows)
		var piecesReply []byte
		for i := 0; i < len(p); {
			n := 1 + r.Intn(len(p)/3+1)
			piecesReply = write(pieces, piecesReply, p[i:min(i+n, len(p))])
			i += n
		}
		want := state(ref)
		if got := state(whole); got != want {
			t.Fatalf("iteration %d (%dx%d): skipping changed the screen\nstream %q\nwant\n%s\ngot\n%s", iter, cols, rows, p, want, got)
		}
		if got := state(pieces); got != want {
			t.Fatalf("iteration %d (%dx%d): split input changed the screen\nwant\n%s\ngot\n%s", iter, cols, rows, want, got)
		}
		if string(wholeReply) != string(refReply) || string(piecesReply) != string(refReply) {
			t.Fatalf("iteration %d: replies differ: %q %q %q", iter, refReply, wholeReply, piecesReply)
		}
		skipped += whole.skipped
	}
	if skipped == 0 {
		t.Fatal("the streams never exercised skipping")
	}
	t.Logf("skipped %d bytes", skipped)
}

// skippedAndParsed feeds p to a 20×5 screen that may skip and to one that
// parses everything, and returns the state of each and how many bytes the
// first skipped.
func skippedAndParsed(p []byte) (skipped, parsed string, n int) {
	ref := New(20, 5)
	ref.noSkip = true
	ref.Write(nil, p)
	s := New(20, 5)
	s.Write(nil, p)
	return state(s), state(ref), s.skipped
}

// TestSkipLongSGR checks that an SGR too long for the parser, which drops
// it, ends a plain run instead of being replayed.
func TestSkipLongSGR(t *testing.T) {
	t.Parallel()
	long := "\x1b[1" + strings.Repeat(";1", maxSeq) + "m"
	p := []byte("x" + long + strings.Repeat("line\r\n", 50))
	got, want, n := skippedAndParsed(p)
	if got != want {
		t.Fatal("a long SGR was replayed")
	}
	if n == 0 {
		t.Fatal("the plain lines after the long SGR were not skipped")
	}
}

// TestSkipReverseWrap checks that reverse wraparound, which lets BS move
// the cursor up, turns skipping off.
func TestSkipReverseWrap(t *testing.T) {
	t.Parallel()
	up := strings.Repeat("\b", 80) // from column 0 of the bottom row to the top
	p := []byte("\x1b[?45h" + strings.Repeat("AAAA\r\n", 9) + "AAAA\r\n\n\n\n" + up + "\n\n\n\n" + up + "\nZ")
	got, want, n := skippedAndParsed(p)
	if got != want {
		t.Fatalf("skipping changed the screen:\n%s\nwant\n%s", got, want)
	}
	if n != 0 {
		t.Fatalf("%d bytes skipped with reverse wraparound on", n)
	}
}

// plainStream is randomStream without the sequences that end plain text.
func plainStream(r *rand.Rand, n, cols int) []byte {
	out := randomStream(r, n, cols)
	// Drop every sequence but SGR and the line-local ones.
	var b []byte
	for i := 0; i < len(out); i++ {
		if out[i] != 0x1b {
			b = append(b, out[i])
			continue
		}
		if e, _ := plainSeqEnd(out, i); e > 0 {
			b = append(b, out[i:e]...)
			i = e - 1
			continue
		}
		// Skip the sequence: up to its final byte or the next control.
		for i+1 < len(out) && out[i+1] >= 0x20 && out[i+1] != 0x1b {
			i++
			if c := out[i]; c >= 0x40 && c <= 0x7e && out[i-1] != 0x1b && out[i-1] != '[' && out[i-1] != ']' {
				break
			}
		}
	}
	return b
}

// TestWritePlainInvisible checks WritePlain against a screen that parses
// everything, on random plain streams fed whole and in pieces.
func TestWritePlainInvisible(t *testing.T) {
	t.Parallel()
	checkSkipInvisible(t, 2, plainStream, (*Screen).WritePlain)
}

// TestPlainCutFindsTheVisibleTail checks where WritePlain cuts: at the CR
// before the last 2·rows−1 line feeds, with the held-back text skipped too
// and the colour of the skipped part kept.
func TestPlainCutFindsTheVisibleTail(t *testing.T) {
	t.Parallel()
	s := New(10, 3)
	p := []byte("\x1b[31m" + strings.Repeat("line\r\n", 20))
	c := s.plainCut(p, []byte("held\r\n"))
	if want := len(p) - 4*len("line\r\n") - 2; c != want {
		t.Fatalf("cut at %d, want %d (the CR before the last 5 line feeds)", c, want)
	}
	if s.skipped != c+len("held\r\n") {
		t.Errorf("skipped %d bytes, want %d", s.skipped, c+len("held\r\n"))
	}
	s.Write(nil, p[c:])
	if got := describeCell(s, 0, 0, []string{"fg="}); got != "fg=1" {
		t.Errorf("the colour set before the cut was lost: %q", got)
	}
	if s.plainCut([]byte("a\r\nb\r\n"), nil) != 0 {
		t.Error("cut a stream too short to scroll anything away")
	}
}

func TestLastESC(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 4095, 4096, 4097, 20000} {
		p := bytes.Repeat([]byte("x"), n)
		for _, at := range []int{-1, 0, n / 3, n - 1} {
			q := bytes.Clone(p)
			if at >= 0 && at < n {
				q[at] = 0x1b
				if at > 0 {
					q[0] = 0x1b // an earlier one must not be found instead
				}
			}
			if got, want := lastESC(q), bytes.LastIndexByte(q, 0x1b); got != want {
				t.Errorf("lastESC of %d bytes with ESC at %d = %d, want %d", n, at, got, want)
			}
		}
	}
}
