package agentpty

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentpty/agentpty/internal/testkit"
)

// settleUpdate reports whether -update asks for the golden files to be
// rewritten. The flag is registered here unless another test file of the
// package registered it first.
func settleUpdate() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files under testdata")
	}
}

// settleCases are raw bytes and the settled text a read returns after them.
var settleCases = []struct {
	name, in, want string
}{
	// The examples in DESIGN.md.
	{"cr", "abc\rxy\n", "xyc"},
	{"progress", "p 10%\rp 50%\rp 100%\n", "p 100%"},
	{"readline backspaces", "$ echo abcdef\b\x1b[K\b\x1b[K\b\x1b[KXYZ\r\n", "$ echo abcXYZ"},
	{"sgr and osc", "\x1b[1;31mred\x1b[0m \x1b]0;title\a!", "red !"},
	{"tab", "a\tb", "a       b"},
	{"cub and el", "hello\x1b[2D\x1b[K", "hel"},
	{"wide", "日本\b\bX", "日X"},

	// Cells: empty between written ones is a space, trailing empty is trimmed, written spaces stay.
	{"prompt keeps its space", ">>> ", ">>> "},
	{"trailing tab trimmed", "a\t", "a"},
	{"cuf leaves empty cells", "a\x1b[3Cb", "a   b"},
	{"erased tail trimmed", "abc  \x1b[2D\x1b[K", "abc"},
	{"empty lines", "a\n\nb\n", "a\n\nb"},
	{"crlf", "one\r\ntwo\r\n", "one\ntwo"},
	{"lf resets the column", "abc\ndef", "abc\ndef"},
	{"vt and ff keep the column", "a\vb\fc", "a\n b\n  c"},
	{"ind keeps the column, nel does not", "a\x1bDb\x1bEc", "a\n b\nc"},

	// Escapes are removed.
	{"csi private", "a\x1b[?25lb\x1b[?2004hc", "abc"},
	{"csi intermediates", "a\x1b[0 qb\x1b[!pc", "abc"},
	{"csi gt and lt", "a\x1b[>4;1mb\x1b[<uc", "abc"},
	{"sgr colon", "a\x1b[38:2:1:2:3mb", "ab"},
	{"osc st", "a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b", "alinkb"},
	{"osc bel", "\x1b]2;t\x07x", "x"},
	{"dcs", "a\x1bP1$r0m\x1b\\b", "ab"},
	{"apc pm sos", "a\x1b_x\x1b\\b\x1b^y\x1b\\c\x1bXz\x1b\\d", "abcd"},
	{"dcs bel does not end it", "a\x1bPq\x07b\x1b\\c", "ac"},
	{"charsets", "a\x1b(Bb\x1b)0c\x1b*Ad\x1b+Be\x1b%Gf\x1b#8g", "abcdefg"},
	{"two byte escapes", "a\x1b=b\x1b>c\x1bHd\x1bNe\x1bOf", "abcdef"},
	{"esc in string starts a sequence", "\x1b]0;t\x1b[31mx", "x"},
	{"can aborts csi", "a\x1b[31\x18b", "ab"},
	{"sub aborts osc", "a\x1b]0;t\x1ab", "ab"},
	{"can aborts esc", "a\x1b\x18b", "ab"},
	{"esc esc", "a\x1b\x1b[31mb", "ab"},
	{"unknown csi", "a\x1b[5;7~b\x1b[1;2;3zc", "abc"},
	{"c0 inside csi acts", "ab\x1b[\r3Cc", "ab c"},
	{"esc then utf8", "a\x1bé", "aé"},
	{"del dropped", "a\x7fb", "ab"},
	{"c0 dropped", "a\x00b\x07c\x0ed\x0fe\x01f", "abcdef"},
	{"c1 dropped", "a\u0085b\u009bc\u0090d", "abcd"},
	{"invalid utf8", "a\xffb\xe3\x81c\xed\xa0\x80d\xc0\xafe", "a\ufffdb\ufffdc\ufffd\ufffd\ufffdd\ufffd\ufffde"},
	{"truncated utf8 waits", "a\xe3\x81", "a"},
	{"utf8 before esc", "a\xe3\x1b[31mb", "a\ufffdb"},
	{"real replacement char", "a\ufffdb", "a\ufffdb"},

	// Applied.
	{"bs stops at 0", "\b\bab\b\b\bc", "cb"},
	{"tab stops", "abcdefgh\tx\x1b[3I|\ty", "abcdefgh" + settleSpaces(8) + "x" + settleSpaces(23) + "|" + settleSpaces(7) + "y"},
	{"cbt", "abcdefghijk\x1b[Zx", "abcdefghxjk"},
	{"el 1", "abcdef\x1b[3D\x1b[1K", "    ef"},
	{"el 2", "abcdef\x1b[2Kx", "      x"},
	{"ech", "abcdef\r\x1b[2Cx\x1b[2X", "abx  f"},
	{"ech past end", "abc\r\x1b[2X", "  c"},
	{"dch", "abcdef\r\x1b[2C\x1b[2P", "abef"},
	{"ich", "abcdef\r\x1b[2C\x1b[2@XY", "abXYcdef"},
	{"cub cuf", "abcdef\x1b[4Dx\x1b[2Cy", "abxdey"},
	{"cha", "abcdef\x1b[3Gx", "abxdef"},
	{"hpa", "abcdef\x1b[2`x", "axcdef"},
	{"cup column only", "abcdef\x1b[7;4Hx\x1b[2;1fy", "ybcxef"},
	{"cup home", "abc\x1b[Hx", "xbc"},
	{"hpr", "a\x1b[2ab", "a  b"},
	{"rep", "ab\x1b[3bc", "abbbbc"},
	{"rep wide", "日\x1b[2b", "日日日"},
	{"rep many", "x\x1b[100b", strings.Repeat("x", 101)},
	{"rep nothing yet", "\x1b[3ba", "a"},
	{"decsc decrc", "abc\x1b7\rx\x1b8d", "xbcd"},
	{"scosc scorc", "abc\x1b[s\r\x1b[K\x1b[u!", "   !"},
	{"csi with params is not scosc", "abc\x1b[0s\rX\x1b[u!", "X!c"},
	{"private marker after a parameter", "ab\x1b[0?1049hc", "abc"},
	{"ris", "abc\x1bcx", "xbc"},

	// Wide characters and combining marks.
	{"wide overwrite right half", "日本\bX", "日 X"},
	{"wide overwritten by wide", "ab日\r日", "日日"},
	{"narrow over half", "a日b\x1b[2DX", "a Xb"},
	{"cjk and ascii", "日本語 text", "日本語 text"},
	{"combining", "e\u0301a", "e\u0301a"},
	{"combining twice", "e\u0301\u0302x", "e\u0301\u0302x"},
	{"combining on wide", "日\u0301x", "日\u0301x"},
	{"combining alone dropped", "\u0301a", "a"},
	{"combining after gap dropped", "a\x1b[2C\u0301b", "a  b"},
	{"overwrite cluster", "e\u0301\bx", "x"},
	{"emoji", "a😀b", "a😀b"},
	{"zwj sequence", "👨\u200d👩", "👨\u200d👩"},
	{"dch in wide", "a日b\x1b[3D\x1b[P", "a b"},
	{"dch splits wide at cursor", "a日b\x1b[2D\x1b[P", "a b"},
	{"ich in wide", "a日b\x1b[2D\x1b[@", "a   b"},
	{"ech on left half", "a日b\x1b[3D\x1b[X", "a  b"},
	{"ech half wide", "a日b\x1b[2D\x1b[X", "a  b"},
	{"el in wide", "a日b\x1b[2D\x1b[K", "a"},

	// Lines above.
	{"cursor up rewrite", "l1\nl2\nl3\n\x1b[2Ax\n\n", "l1\nx2\nl3"},
	{"cpl", "aaa\nbbb\x1b[Fx", "xaa\nbbb"},
	{"ri", "aaa\nbbb\x1bMx", "aaax\nbbb"},
	{"cud among lines", "a\nb\nc\x1b[2A\x1b[9Bx", "a\nb\ncx"},
	{"cnl", "a\nb\x1b[A\x1b[Ex", "a\nx"},
	{"up stops at top", "a\nb\x1b[9Ax", "ax\nb"},
	{"ed 0 drops lines below", "l1\nl2\nl3\n\x1b[3A\x1b[Jnew1\nnew2\n", "new1\nnew2"},
	{"ed 0 from column", "abcdef\x1b[3D\x1b[J", "abc"},
	{"ed 1 2 3 ignored", "abc\x1b[1J\x1b[2J\x1b[3Jd", "abcd"},
	{"docker style", "a: 1%\nb: 1%\n\x1b[2A\x1b[2Ka: 50%\n\x1b[2Kb: 9%\n", "a: 50%\nb: 9%"},
	{"pip style", "x\n[    ]\r[=   ]\r[====]\n", "x\n[====]"},
	{"lf below existing moves down", "a\nb\nc\x1b[2A\rX\nY", "X\nY\nc"},

	// The alternate screen.
	{"alt screen hidden", "before\r\n\x1b[?1049hFULL\r\nSCREEN\x1b[?1049lafter\r\n", "before\nafter"},
	{"alt screen resumes column", "$ vim\x1b[?1049h\x1b[Hxyz\x1b[2J\x1b[?1049l!", "$ vim!"},
	{"alt 47 and 1047", "a\x1b[?47hX\x1b[?47lb\x1b[?1047hY\x1b[?1047lc", "abc"},
	{"alt in param list", "a\x1b[?1;1049hX\nY\x1b[?1049;1lb", "ab"},
	{"alt ignores edits", "abc\x1b[?1049h\r\x1b[K\x1b[5A\x1b[J\x1b7\x1b[?1049ld", "abcd"},
}

// settleFeed writes in to a new settler chunk bytes at a time.
func settleFeed(in string, chunk int) *settler {
	s := newSettler(0)
	for len(in) > 0 {
		n := min(chunk, len(in))
		s.write([]byte(in[:n]))
		in = in[n:]
	}
	return s
}

func TestSettleTable(t *testing.T) {
	testkit.Parallel(t)
	for _, c := range settleCases {
		t.Run(c.name, func(t *testing.T) {
			for chunk := 1; chunk <= max(len(c.in), 1); chunk++ {
				if got := settleFeed(c.in, chunk).read(0); got != c.want {
					t.Fatalf("%q in chunks of %d:\n got %q\nwant %q", c.in, chunk, got, c.want)
				}
			}
		})
	}
}

// settleWrapCases run with a terminal 10 columns wide: the cursor moves
// among the screen rows of a line the terminal wrapped.
var settleWrapCases = []struct {
	name, in, want string
}{
	{"cr to row start", "0123456789abc\rX", "0123456789Xbc"},
	{"cr when the row is full", "0123456789\rX", "X123456789"},
	{"readline wrap", "0123456789 \rabc", "0123456789abc"},
	{"sgr keeps the wrap pending", "0123456789\x1b[0mab", "0123456789ab"},
	{"bs when the row is full", "0123456789\bX", "01234567X9"},
	{"bs stops at row start", "0123456789ab\b\b\bX", "0123456789Xb"},
	{"cha within row", "0123456789ab\x1b[1GX", "0123456789Xb"},
	{"cuf stops at row end", "0123456789ab\x1b[A\x1b[20CX", "012345678Xab"},
	{"tab within row", "ab\tX\r\n123456789\tY", "ab      X\n123456789Y"},
	{"up a row", "0123456789abcd\x1b[AX", "0123X56789abcd"},
	{"down a row", "0123456789abcdef\x1b[A\x1b[BX", "0123456789abcdefX"},
	{"lf down a row", "0123456789abcd\x1b[A\r\nX", "0123456789Xbcd"},
	{"lf on the last row ends the line", "0123456789abc\nX", "0123456789abc\nX"},
	{"lf when the row is full", "0123456789\nab", "0123456789\nab"},
	{"crlf when the row is full", "0123456789\r\nab", "0123456789\nab"},
	{"up into a wrapped line", "0123456789abcd\nxy\x1b[AZ", "0123456789abZd\nxy"},
	{"up two rows", "0123456789abcd\nxy\x1b[2AZ", "01Z3456789abcd\nxy"},
	{"down stops on the last row", "0123456789abcd\x1b[A\x1b[5BX", "0123456789abcdX"},
	{"down into the next line", "0123456789ab\nxy\x1b[2A\x1b[2BZ", "0123456789ab\nxyZ"},
	{"el within row", "0123456789abcd\x1b[A\r\x1b[5C\x1b[K", "01234     abcd"},
	{"el 1 within row", "0123456789abcd\x1b[2D\x1b[1K", "0123456789   d"},
	{"el 2 on a row", "0123456789abc\x1b[2K", "0123456789"},
	{"ech stops at row end", "0123456789abcd\x1b[A\r\x1b[8C\x1b[5X", "01234567  abcd"},
	{"dch within row", "0123456789abcd\x1b[A\r\x1b[2C\x1b[P", "013456789 abcd"},
	{"ich within row", "0123456789abcd\x1b[A\r\x1b[2C\x1b[@X", "01X2345678abcd"},
	{"ich on the last row", "0123456789abcd\x1b[3D\x1b[2@", "0123456789a  bcd"},
	{"wide char wraps whole, no space in the joined line", "012345678日", "012345678日"},
	{"decsc keeps the wrap pending", "0123456789\x1b7\x1b[3D\x1b8X", "0123456789X"},
}

func TestSettleWrap(t *testing.T) {
	testkit.Parallel(t)
	for _, c := range settleWrapCases {
		t.Run(c.name, func(t *testing.T) {
			for chunk := 1; chunk <= len(c.in); chunk++ {
				s := newSettler(0)
				s.setCols(10)
				for in := c.in; len(in) > 0; {
					n := min(chunk, len(in))
					s.write([]byte(in[:n]))
					in = in[n:]
				}
				if got := s.read(0); got != c.want {
					t.Fatalf("%q in chunks of %d:\n got %q\nwant %q", c.in, chunk, got, c.want)
				}
			}
		})
	}
}

func TestSettleNoEscOrCR(t *testing.T) {
	testkit.Parallel(t)
	for _, c := range settleCases {
		if strings.ContainsAny(c.want, "\x1b\r") {
			t.Errorf("%s: the expected text itself holds ESC or CR", c.name)
		}
	}
}

func TestSettlePrintable(t *testing.T) {
	testkit.Parallel(t)
	naive := func(p []byte, i int) int {
		for i < len(p) && p[i] >= 0x20 && p[i] <= 0x7e {
			i++
		}
		return i
	}
	p := bytes.Repeat([]byte("x"), 24)
	for b := range 256 {
		for at := range 17 {
			q := bytes.Clone(p)
			q[at] = byte(b)
			for i := range 9 {
				if got, want := settlePrintable(q, i), naive(q, i); got != want {
					t.Fatalf("byte %#x at %d, from %d: %d, want %d", b, at, i, got, want)
				}
			}
		}
	}
}

func TestSettleQueries(t *testing.T) {
	testkit.Parallel(t)
	cases := []struct {
		in   string
		want settleEvents
	}{
		{"\x1b[5n", evQuery},
		{"\x1b[6n", evQuery},
		{"\x1b[?6n", evQuery},
		{"\x1b[c", evQuery},
		{"\x1b[0c", evQuery},
		{"\x1b[>c", evQuery},
		{"\x1b[>0c", evQuery},
		{"\x1b[=c", evQuery},
		{"\x1bZ", evQuery},
		{"text \x1b[6n more", evQuery},
		{"\x1b[?1049h", evAltEnter},
		{"\x1b[?1049h\x1b[6n", evAltEnter | evQuery},
		{"\x1b[?1049h\x1b[?1049l", evAltEnter | evAltLeave},
		{"\x1b[?1;1049;25h", evAltEnter},
		{"\x1b[?47h", evAltEnter},
		{"\x1b[?1047h", evAltEnter},
		{"\x1b[?1049l", 0}, // not on the alternate screen: nothing changes
		{"\x1b[1c", 0},
		{"\x1b[>1c", 0},
		{"\x1b[4n", 0},
		{"\x1b[6 n", 0},
		{"\x1b[?1048h", 0},
		{"\x1b[6\x18n", 0},
		{"\x1b]0;\x1b[6n", evQuery},
		{"\x1b]11;?\a", evQuery},
		{"\x1b]11;?\x1b\\", evQuery}, // ended by ST as by BEL
		{"\x1b]0;what?\x1b\\", 0},
		{"plain", 0},
	}
	for _, c := range cases {
		for chunk := 1; chunk <= len(c.in); chunk++ {
			s := newSettler(0)
			var got settleEvents
			for in := c.in; len(in) > 0; {
				n := min(chunk, len(in))
				got |= s.write([]byte(in[:n])) &^ evNonPlain
				in = in[n:]
			}
			if got != c.want {
				t.Fatalf("%q in chunks of %d: events %b, want %b", c.in, chunk, got, c.want)
			}
		}
	}
}

func TestSettleAltScreen(t *testing.T) {
	testkit.Parallel(t)
	s := newSettler(0)
	if s.altScreen() {
		t.Fatal("a new settler is on the alternate screen")
	}
	if ev := s.write([]byte("$ less f\r\n\x1b[?1049h\x1b[H\x1b[2Jpage 1\r\n")) &^ evNonPlain; ev != evAltEnter || !s.altScreen() {
		t.Fatalf("entering: events %b, altScreen %v", ev, s.altScreen())
	}
	if s.write([]byte("\x1b[?1049h"))&^evNonPlain != 0 {
		t.Fatal("entering twice reported twice")
	}
	if got := s.read(0); got != "$ less f" {
		t.Fatalf("read while on the alternate screen = %q", got)
	}
	if ev := s.write([]byte("\x1b[?1049l$ ")) &^ evNonPlain; ev != evAltLeave || s.altScreen() {
		t.Fatalf("leaving: events %b, altScreen %v", ev, s.altScreen())
	}
	if got := s.read(0); got != "$ " {
		t.Fatalf("read after leaving = %q", got)
	}
	if ev := s.write([]byte("\x1b[?1049h\x1bc")) &^ evNonPlain; ev != evAltEnter|evAltLeave || s.altScreen() {
		t.Fatalf("RIS: events %b, altScreen %v", ev, s.altScreen())
	}
}

// TestSettleTouched checks which lines a read returns.
func TestSettleTouched(t *testing.T) {
	testkit.Parallel(t)
	s := newSettler(0)
	steps := []struct{ in, want string }{
		{"l0\nl1\nl2\nl3\nl4\nl5\nl6\nl7\n", "l0\nl1\nl2\nl3\nl4\nl5\nl6\nl7"},
		{"", ""},
		// Lines 3 and 7 change: just those come back, in order.
		{"\x1b[5AX\x1b[4B\rY\x1b[B", "X3\nY7"},
		// Moving the cursor around touches nothing.
		{"\x1b[3A\x1b[5C\x1b[B\r\x1b[2B\x1b[8G", ""},
		// Writing what is already there is no change.
		{"\x1b[5A\rX3\x1b[4B\rY7\x1b[B", ""},
		// Erasing empty cells is no change either.
		{"\x1b[9C\x1b[K\x1b[X\x1b[P", ""},
		// The current line: returned unfinished, then whole once it changes.
		{"\r>>> ", ">>> "},
		{"2**64\r\n18446744073709551616\r\n>>> ", ">>> 2**64\n18446744073709551616\n>>> "},
		// A line feed ends the line: it comes back once more, whole.
		{"x", ">>> x"},
		{"\n", ">>> x"},
		// An empty current line nobody wrote is not included; one that was cleared is.
		{"abc", "abc"},
		{"\r\x1b[K", ""},
		{"abc", "abc"},
		{"\r\x1b[K\nxyz", "\nxyz"},
	}
	for i, st := range steps {
		s.write([]byte(st.in))
		if got := s.read(0); got != st.want {
			t.Fatalf("step %d (%q): read %q, want %q", i, st.in, got, st.want)
		}
	}
}

func TestSettleUnread(t *testing.T) {
	testkit.Parallel(t)
	s := newSettler(0)
	if s.unread() {
		t.Fatal("new settler has unread text")
	}
	for _, st := range []struct {
		in   string
		want bool
	}{
		{"\x1b[31m", false},
		{"a", true},
		{"\r\x1b[K", false}, // read would return "" now
		{"\n", false},       // one empty line: read returns ""
		{"\n", true},        // two: "\n"
	} {
		s.write([]byte(st.in))
		if got := s.unread(); got != st.want {
			t.Fatalf("after %q: unread %v, want %v", st.in, got, st.want)
		}
	}
}

// TestSettleMatch follows the example in DESIGN.md and the seen model.
func TestSettleMatch(t *testing.T) {
	testkit.Parallel(t)
	s := newSettler(0)
	s.write([]byte(">>> "))
	if !s.match(">>> ") {
		t.Fatal("new prompt not matched")
	}
	if got := s.read(0); got != ">>> " {
		t.Fatalf("read 1 = %q", got)
	}
	if s.match(">>> ") {
		t.Fatal("matched a prompt already read")
	}
	s.write([]byte("2**64\r\n"))
	if s.match(">>> ") {
		t.Fatal("matched the already read prefix of the edited line")
	}
	if !s.match(">>> 2**64") {
		t.Fatal("a match running into new text must count")
	}
	s.write([]byte("18446744073709551616\r\n"))
	if s.match(">>> ") {
		t.Fatal("matched before the new prompt arrived")
	}
	s.write([]byte(">>"))
	if s.match(">>> ") {
		t.Fatal("matched half a prompt")
	}
	s.write([]byte("> "))
	if !s.match(">>> ") {
		t.Fatal("new prompt not matched")
	}
	if !s.match("616\n>>>") {
		t.Fatal("match spanning lines not found")
	}
	if s.match("\n\n") || s.match("2**65") {
		t.Fatal("matched text that is not there")
	}
	if got := s.read(0); got != ">>> 2**64\n18446744073709551616\n>>> " {
		t.Fatalf("read 2 = %q", got)
	}
	if s.match(">>> ") || s.match("") {
		t.Fatal("matched after everything was read")
	}
}

func TestSettleMatchSeen(t *testing.T) {
	testkit.Parallel(t)
	cases := []struct {
		name          string
		before, after string // read after before, then after arrives
		lit           string
		want          bool
	}{
		{"untouched", "abc abc\n", "", "abc", false},
		{"appended", "abc", "def", "abc", false},
		{"appended new", "abc", " abc", "abc", true},
		{"overwrite same", "abc", "\rabc", "abc", false},
		{"overwrite different", "abc", "\rabd\rabc", "abc", true},
		{"edit before", "xx abc", "\rX", "abc", true},
		{"edit inside", "abcdef", "\x1b[3DX", "abc", false},
		{"edit inside new", "abcabc", "\x1b[4Dd", "abd", true},
		{"erase and rewrite", "done 50%", "\r\x1b[Kdone 50%", "done", true},
		{"ended line", "abc", "\n", "abc", false},
		{"ended line span", "abc", "\n", "abc\n", false},
		{"ended line span next", "abc", "\nd", "abc\nd", true},
		{"seen with wide", "日本 ab", "\r日", "ab", false},
		{"seen with wide changed", "日本 ab", "\r\x1b[CX", "ab", true},
		{"line above edited", "l1 ok\nl2\n", "\x1b[2A\x1b[3COK\n\n", "ok", false},
		{"line above edited new", "l1 ok\nl2\n", "\x1b[2A\x1b[3COK\n\n", "OK", true},
		{"dropped", "a\n", "b\nc\x1b[A\x1b[J", "c", false},
		{"dropped span", "x", "\nb\nc\x1b[A\x1b[J", "x\nb", true},
		{"dropped span gone", "x", "\nb\nc\x1b[A\x1b[J", "b\nc", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for chunk := 1; chunk <= max(len(c.after), 1); chunk++ {
				s := newSettler(0)
				s.write([]byte(c.before))
				s.match(c.lit) // the scan state the read must reset
				s.read(0)
				got := s.match(c.lit)
				for in := c.after; len(in) > 0; {
					n := min(chunk, len(in))
					s.write([]byte(in[:n]))
					in = in[n:]
					got = s.match(c.lit)
				}
				if got != c.want {
					t.Fatalf("chunks of %d: match(%q) = %v, want %v; text %q", chunk, c.lit, got, c.want, s.read(0))
				}
			}
		})
	}
}

// TestSettleMatchIncremental checks that the literal kept from call to call
// gives what a fresh scan of the same text gives.
func TestSettleMatchIncremental(t *testing.T) {
	testkit.Parallel(t)
	in := "$ make\r\nok 1\r\nbuilding [   ]\r\x1b[Kbuilding [== ]\r\x1b[Kdone\r\n\x1b[2A\x1b[2Kok 2\n\n$ "
	for _, lit := range []string{"done", "ok 2", "ok 1", "building", "$ ", "\n$ ", "ok 2\ndone", "done\n$", "\n\n", "[== ]"} {
		s := newSettler(0)
		for i := range len(in) {
			s.write([]byte{in[i]})
			inc := s.match(lit)
			fresh := newSettler(0)
			fresh.write([]byte(in[:i+1]))
			want := strings.Contains(fresh.read(0), lit)
			if inc != want {
				t.Fatalf("match(%q) after %q = %v, want %v", lit, in[:i+1], inc, want)
			}
		}
	}
}

// Golden files: testdata/settle/NAME.in holds bytes real programs wrote to
// an 80-column terminal, NAME.golden what reading them all at once returns
// when the settler is told the width, as the session does.
func TestSettleGolden(t *testing.T) {
	testkit.Parallel(t)
	ins, _ := filepath.Glob(filepath.Join("testdata", "settle", "*.in"))
	if len(ins) == 0 {
		t.Fatal("no golden inputs")
	}
	for _, in := range ins {
		name := strings.TrimSuffix(filepath.Base(in), ".in")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			got := settleFeed80(raw, len(raw)).read(0)
			path := strings.TrimSuffix(in, ".in") + ".golden"
			want := settleGolden(t, path, got)
			if got != want {
				t.Errorf("settled text differs from %s:\n%s", path, settleDiff(want, got))
			}
			for _, chunk := range []int{1, 2, 3, 7, 64, 4095} {
				if got := settleFeed80(raw, chunk).read(0); got != want {
					t.Errorf("in chunks of %d:\n%s", chunk, settleDiff(want, got))
				}
			}
		})
	}
}

func settleFeed80(in []byte, chunk int) *settler {
	s := newSettler(0)
	s.setCols(80)
	for len(in) > 0 {
		n := min(chunk, len(in))
		s.write(in[:n])
		in = in[n:]
	}
	return s
}

// settleDiff shows the lines that differ, quoted so control bytes show.
func settleDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl || i >= len(w) || i >= len(g) {
			fmt.Fprintf(&b, "line %d:\n  want %q\n   got %q\n", i+1, wl, gl)
		}
	}
	return b.String()
}

// FuzzSettle checks the parser's invariants: nothing panics, no ESC or CR
// comes out, and the text does not depend on how the bytes were split.
// The literal checks that incremental matching agrees with a plain search;
// the seed picks the chunks and the terminal's width (0: unknown).
func FuzzSettle(f *testing.F) {
	for _, c := range settleCases {
		f.Add([]byte(c.in), uint64(len(c.in)), "a")
	}
	ins, _ := filepath.Glob(filepath.Join("testdata", "settle", "*.in"))
	screens, _ := filepath.Glob(filepath.Join("testdata", "settle", "screen", "*.in"))
	for _, in := range append(ins, screens...) {
		raw, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw, uint64(len(raw)), "$ ")
	}
	f.Fuzz(func(t *testing.T, in []byte, seed uint64, lit string) {
		// The width, the height (0: unknown) and whether LF keeps the column.
		cols, rows, keep := int(seed%97), int(seed/97%31), seed/97/31%2 == 1
		newSettler := func(max int) *settler {
			s := newSettler(max)
			s.setCols(cols)
			s.setRows(rows)
			s.keepCol = keep
			return s
		}
		whole := newSettler(0)
		whole.write(in)
		wantMatch := whole.match(lit)
		want := whole.read(0)
		if strings.ContainsAny(want, "\x1b\r") {
			t.Fatalf("output holds ESC or CR: %q", want)
		}
		if lit != "" && wantMatch != strings.Contains(want, lit) {
			t.Fatalf("match(%q) = %v on %q", lit, wantMatch, want)
		}

		bytewise := newSettler(0)
		var got bool
		for i := range in {
			bytewise.write(in[i : i+1])
			got = bytewise.match(lit)
		}
		if got != wantMatch {
			t.Fatalf("incremental match(%q) = %v, whole %v", lit, got, wantMatch)
		}
		if got := bytewise.read(0); got != want {
			t.Fatalf("one byte at a time:\n got %q\nwant %q", got, want)
		}

		rng := rand.New(rand.NewPCG(seed, 1))
		chunks := newSettler(0)
		for rest := in; len(rest) > 0; {
			n := min(1+rng.IntN(16), len(rest))
			chunks.write(rest[:n])
			rest = rest[n:]
		}
		if got := chunks.read(0); got != want {
			t.Fatalf("random chunks:\n got %q\nwant %q", got, want)
		}

		// Reading part way changes what is returned, but never the scrollback
		// or its invariants; incremental matching still agrees with a fresh scan.
		split := newSettler(0)
		cut := int(seed % uint64(len(in)+1))
		split.write(in[:cut])
		split.match(lit)
		first := split.read(rng.IntN(64))
		got = split.match(lit)
		for i := cut; i < len(in); i++ {
			split.write(in[i : i+1])
			got = split.match(lit)
		}
		split.match(lit + "\x00") // a different literal: the next call scans afresh
		if fresh := split.match(lit); fresh != got {
			t.Fatalf("incremental match(%q) = %v after a read, fresh scan %v", lit, got, fresh)
		}
		second := split.read(0)
		if strings.ContainsAny(first+second, "\x1b\r") {
			t.Fatalf("output holds ESC or CR: %q %q", first, second)
		}
		if split.scrollback() != whole.scrollback() {
			t.Fatalf("scrollback differs after a read:\n got %q\nwant %q", split.scrollback(), whole.scrollback())
		}
	})
}

// evNonPlain tells the screen when a write held anything but text, the
// controls that only move along lines, and SGR: the screen may skip
// plain text that scrolls away without parsing it.
func TestSettleNonPlain(t *testing.T) {
	testkit.Parallel(t)
	cases := []struct {
		in    string
		plain bool
	}{
		{"hello\r\nworld\n", true},
		{"a\tb\bc\a\x00d", true},
		{"\x1b[1;31mred\x1b[0m \x1b[m", true},
		{"日本 é\r\n", true},
		{"\x1b[2J", false},
		{"\x1b[?1049h", false},
		{"\x1b[>4;2m", false},
		{"\x1b]0;title\a", false},
		{"\x1b7", false},
		{"\x1b(0", false},
		{"x\x1b[Ky\x1b[2K\x1b[3X\x1b[2P\x1b[4@\x1b[5G\x1b[3C\x1b[2D\x1b[10`\x1b[3a", true}, // line-local
		{"x\x1b[?2K", false},
		{"x\x1b[2A", false},
		{"\x0e", false},
		{"\x18", false},
		{"\x1b[1 q", false},
		{"\x1b[31", true}, // the write that completes a sequence decides
	}
	for _, c := range cases {
		s := newSettler(0)
		ev := s.write([]byte(c.in))
		if got := ev&evNonPlain == 0; got != c.plain {
			t.Errorf("%q: plain = %v, want %v", c.in, got, c.plain)
		}
	}
	s := newSettler(0)
	if s.write([]byte("ab\x1b[2"))&evNonPlain != 0 || s.write([]byte("Jcd"))&evNonPlain == 0 {
		t.Error("an erase split across writes is not reported by the write that completes it")
	}
	if s.write([]byte("\x1b[3"))&evNonPlain != 0 || s.write([]byte("1mx"))&evNonPlain != 0 {
		t.Error("an SGR split across writes is reported as more than plain text")
	}
}

// Whole lines of text and SGRs take plainLine's shortcut to the arena when
// a write holds them; written a byte at a time they go through cells. Both
// must leave the same text, scrollback, tail and match state, also while
// old lines are evicted and when lines are wider than the terminal.
func TestSettlePlainLine(t *testing.T) {
	testkit.Parallel(t)
	var b strings.Builder
	for i := range 400 {
		switch i % 8 {
		case 0:
			fmt.Fprintf(&b, "%5d plain log line with words\r\n", i)
		case 1:
			fmt.Fprintf(&b, "\x1b[32m%5d\x1b[0m coloured \x1b[1;31mERROR\x1b[m ok\r\n", i)
		case 2:
			fmt.Fprintf(&b, "%5d lf only\n\r\n\x1b[0m\r\n", i) // an empty line and one of SGR only
		case 3:
			fmt.Fprintf(&b, "%5d %s\r\n", i, strings.Repeat("wide ", 30)) // wider than 80 columns
		case 4:
			fmt.Fprintf(&b, "%5d tab\tthen text\r\n", i)
		case 5:
			fmt.Fprintf(&b, "%5d 10%%\r%5d 100%%\r\n", i, i) // a progress line redrawn
		case 6:
			fmt.Fprintf(&b, "%5d naïve ünïcode\r\n", i)
		case 7:
			fmt.Fprintf(&b, "\x1b[32m%5d\x1b[1m\x1b[?25l hidden cursor\r\n", i)
		}
	}
	in := []byte(b.String())
	lits := []string{"ERROR", "100%\n", "hidden", "  392 plain", " 1 lf only\n\n"}
	for _, cols := range []int{80, 0} {
		for _, max := range []int{0, 4 << 10} {
			for _, lit := range lits {
				whole, bytewise := newSettler(max), newSettler(max)
				whole.setCols(cols)
				bytewise.setCols(cols)
				for k := 0; k < len(in); k += 512 {
					chunk := in[k:min(k+512, len(in))]
					whole.write(chunk)
					for i := range chunk {
						bytewise.write(chunk[i : i+1])
					}
					if w, g := bytewise.match(lit), whole.match(lit); w != g {
						t.Fatalf("cols %d max %d, after %d bytes: match(%q) = %v, byte at a time %v", cols, max, k+len(chunk), lit, g, w)
					}
				}
				if w, g := bytewise.scrollback(), whole.scrollback(); w != g {
					t.Fatalf("cols %d max %d: scrollback differs:\n got %q\nwant %q", cols, max, g, w)
				}
				if w, g := bytewise.tail(5), whole.tail(5); !slices.Equal(w, g) {
					t.Fatalf("cols %d max %d: tail = %q, want %q", cols, max, g, w)
				}
				if w, g := bytewise.read(0), whole.read(0); w != g {
					t.Fatalf("cols %d max %d: read differs:\n got %q\nwant %q", cols, max, g, w)
				}
			}
		}
	}

	// A fresh line already touched and matched in this epoch is matched
	// again once a plain line lands on it.
	s := newSettler(0)
	s.write([]byte("abc\r\ndef\x1b[A\r\x1b[J")) // up a line, and erase it and all below
	s.tail(1)                                   // which stores the line, empty
	if s.match("needle") {
		t.Fatal("needle matched before it was written")
	}
	s.write([]byte("a needle\r\n"))
	if !s.match("needle") {
		t.Error("a plain line on a touched fresh line was not matched")
	}

	// Lines that are all plain never need the cursor's cells at all.
	s = newSettler(0)
	s.setCols(80)
	s.write(settleBenchText(64<<10, true))
	if s.cells != nil {
		t.Errorf("plain coloured lines went through %d cells", cap(s.cells))
	}
}
