package agentpty

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/agentpty/agentpty/internal/testkit"
)

func TestSettleLongLine(t *testing.T) {
	testkit.Parallel(t)
	s := newSettler(1 << 20)
	s.write(bytes.Repeat([]byte("y"), settleMaxCells+10))
	got := s.read(0)
	want := strings.Repeat("y", settleMaxCells) + "\n" + strings.Repeat("y", 10)
	if got != want {
		t.Fatalf("long line: got %d bytes, want %d (lines %d)", len(got), len(want), strings.Count(got, "\n")+1)
	}
	s.write([]byte("\x1b[99999G日本"))
	if got := s.read(0); got != strings.Repeat("y", 10)+"\n日本" {
		t.Fatalf("wide character at the limit: %q", got)
	}
}

func TestSettleUpBound(t *testing.T) {
	testkit.Parallel(t)
	s := newSettler(1 << 20)
	for i := range 600 {
		fmt.Fprintf(settleWriter{s}, "line %d\n", i)
	}
	s.read(0)
	s.write([]byte("\x1b[9999A!"))
	if got := s.read(0); got != "!ine 100" {
		t.Fatalf("cursor up 9999 lines from 600: %q", got)
	}
}

// settleWriter lets fmt write to a settler.
type settleWriter struct{ s *settler }

func (w settleWriter) Write(p []byte) (int, error) { w.s.write(p); return len(p), nil }

func TestSettleEvict(t *testing.T) {
	testkit.Parallel(t)
	s := newSettler(4096)
	for i := range 1000 {
		fmt.Fprintf(settleWriter{s}, "line %04d\n", i)
	}
	if s.charge > 4096+64 {
		t.Fatalf("charge %d over the bound", s.charge)
	}
	sb := strings.Split(s.scrollback(), "\n")
	if sb[len(sb)-1] != "line 0999" || len(sb) < 100 {
		t.Fatalf("scrollback keeps %d lines ending %q", len(sb), sb[len(sb)-1])
	}
	got := s.read(0)
	kept := len(sb)
	lost := 1000 - kept
	marker := settleMarker(lost*10, lost)
	if want := marker + "\n" + strings.Join(sb, "\n"); got != want {
		t.Fatalf("read after eviction:\n got %.80q...\nwant %.80q...", got, want)
	}
	if s.unread() || s.read(0) != "" {
		t.Fatal("evicted text reported twice")
	}
	// Cursor up stops at the oldest line kept.
	s.write([]byte("\x1b[900A\r!"))
	if got, want := s.read(0), "!"+sb[0][1:]; got != want {
		t.Fatalf("cursor up past evicted lines: %q, want %q", got, want)
	}
	s.write([]byte("\x1b[900B\n"))
	s.read(0)
	// With a cap too: the marker counts the lost lines and what the cap left out.
	for i := range 1000 {
		fmt.Fprintf(settleWriter{s}, "line %04d\n", i)
	}
	got = s.read(100)
	lines := strings.Split(got, "\n")
	if len(got) > 100 || lines[len(lines)-1] != "line 0999" {
		t.Fatalf("capped read after eviction: %q", got)
	}
	tail := len(lines) - 1
	if want := settleMarker((1000-tail)*10, 1000-tail); lines[0] != want {
		t.Fatalf("marker %q, want %q", lines[0], want)
	}
}

func TestSettleReadCap(t *testing.T) {
	testkit.Parallel(t)
	var in strings.Builder
	for i := range 100 {
		fmt.Fprintf(&in, "line %02d\n", i) // 7 bytes + LF
	}
	s := newSettler(0)
	s.write([]byte(in.String()))
	got := s.read(100)
	if len(got) > 100 {
		t.Fatalf("read(100) returned %d bytes", len(got))
	}
	lines := strings.Split(got, "\n")
	var head, tail []string
	var marker string
	for i, l := range lines {
		if strings.HasPrefix(l, "[...") {
			head, marker, tail = lines[:i], l, lines[i+1:]
		}
	}
	if len(head) < 3 || len(tail) < 3 || head[0] != "line 00" || tail[len(tail)-1] != "line 99" {
		t.Fatalf("read(100) = %q", got)
	}
	elided := 100 - len(head) - len(tail)
	if want := settleMarker(elided*8+1, elided); marker != want { // +1: both separators around the marker
		t.Fatalf("marker %q, want %q", marker, want)
	}
	if s.unread() {
		t.Fatal("capped read left text unread")
	}
}

func TestSettleReadTinyLimit(t *testing.T) {
	testkit.Parallel(t)
	s := newSettler(0)
	s.write([]byte(strings.Repeat("some text\n", 10)))
	if got, want := s.read(5), settleMarker(99, 10); got != want {
		t.Fatalf("read(5) = %q, want just the marker %q", got, want)
	}
	s.write([]byte("abc"))
	if got := s.read(3); got != "abc" {
		t.Fatalf("read(3) of 3 bytes = %q", got)
	}
}

func TestSettleResize(t *testing.T) {
	testkit.Parallel(t)
	s := newSettler(0)
	s.setCols(10)
	s.write([]byte("0123456789ab"))
	s.setCols(0) // unknown again: the line is one row
	s.write([]byte("\rX"))
	s.setCols(5)
	s.write([]byte("\x1b[AY"))
	if got := s.read(0); got != "XY23456789ab" {
		t.Fatalf("got %q", got)
	}
}

func TestSettleReadCapLongLines(t *testing.T) {
	testkit.Parallel(t)
	s := newSettler(0)
	long := strings.Repeat("日本語", 1000) // 9000 bytes
	s.write([]byte(long + "\n" + long))
	got := s.read(1000)
	if len(got) > 1000 || len(got) < 800 {
		t.Fatalf("read(1000) of two long lines: %d bytes", len(got))
	}
	lines := strings.Split(got, "\n")
	if len(lines) != 3 || !strings.HasPrefix(long, lines[0]) || !strings.HasSuffix(long, lines[2]) {
		t.Fatalf("read(1000) = %q", got)
	}
	for _, l := range lines {
		if !utf8.ValidString(l) {
			t.Fatalf("cut inside a character: %q", l)
		}
	}
	elided := 2*9000 + 1 - len(lines[0]) - len(lines[2])
	if want := settleMarker(elided, 2); lines[1] != want {
		t.Fatalf("marker %q, want %q", lines[1], want)
	}
}

func settleSpaces(n int) string { return strings.Repeat(" ", n) }

// TestSettleFlood checks that a flood far beyond the scrollback is capped
// and counted right, however it arrives.
func TestSettleFlood(t *testing.T) {
	testkit.Parallel(t)
	s := newSettler(0)
	line := []byte(strings.Repeat("x", 99) + "\n")
	chunk := bytes.Repeat(line, 40)
	n := 0
	for n < 20<<20 {
		s.write(chunk)
		n += len(chunk)
	}
	got := s.read(32 << 10)
	if len(got) > 32<<10 {
		t.Fatalf("read(32K) returned %d bytes", len(got))
	}
	lines := strings.Split(got, "\n")
	kept := len(lines) - 1
	total := n / 100
	if want := settleMarker(n-kept*100, total-kept); lines[0] != want {
		t.Fatalf("marker %q, want %q", lines[0], want)
	}
	if s.charge > DefaultScrollbackBytes+200 || cap(s.arena) > 3*DefaultScrollbackBytes {
		t.Fatalf("charge %d, arena cap %d", s.charge, cap(s.arena))
	}
}

func TestSettleTailScrollback(t *testing.T) {
	testkit.Parallel(t)
	s := newSettler(0)
	if s.tail(3) != nil || s.scrollback() != "" {
		t.Fatal("new settler has scrollback")
	}
	s.write([]byte("a\nb\x1b[5Cc\nd\n"))
	s.read(0)
	if got := s.tail(2); strings.Join(got, "|") != "b     c|d" {
		t.Fatalf("tail(2) = %q", got)
	}
	s.write([]byte("$ "))
	if got := s.tail(2); strings.Join(got, "|") != "d|$ " {
		t.Fatalf("tail(2) with a current line = %q", got)
	}
	if got := s.tail(10); len(got) != 4 {
		t.Fatalf("tail(10) = %q", got)
	}
	if got := s.scrollback(); got != "a\nb     c\nd\n$ " {
		t.Fatalf("scrollback = %q", got)
	}
	if got := s.read(0); got != "$ " {
		t.Fatalf("tail and scrollback must not mark anything read: %q", got)
	}
}

// TestSettleEditAfterMove checks that a line keeps empty and written cells
// apart after it was stored and loaded again.
func TestSettleEditAfterMove(t *testing.T) {
	testkit.Parallel(t)
	s := newSettler(0)
	s.write([]byte("a\x1b[3Cb  \nnext\n"))
	s.write([]byte("\x1b[2A\x1b[4C\x1b[K\n\n"))
	if got := s.read(0); got != "a\nnext" {
		t.Fatalf("got %q", got)
	}
	s.write([]byte("\x1b[2A\x1b[2Ce\u0301日\n\n"))
	s.write([]byte("\x1b[2A\x1b[4CX\n\n"))
	if got := s.scrollback(); got != "a e\u0301 X\nnext" {
		t.Fatalf("got %q", got)
	}
}

// TestSettleManyEdits rewrites lines above, as progress displays do, until
// the arena must compact lines stored out of order.
func TestSettleManyEdits(t *testing.T) {
	testkit.Parallel(t)
	s := newSettler(2048)
	for i := range 3000 {
		fmt.Fprintf(settleWriter{s}, "\x1b[3A\x1b[2Ka %d\n\x1b[2Kb %d%s\n\x1b[2Kc\n", i, i, strings.Repeat("=", i%50))
	}
	want := fmt.Sprintf("a 2999\nb 2999%s\nc", strings.Repeat("=", 2999%50))
	if got := s.scrollback(); !strings.HasSuffix(got, want) {
		t.Fatalf("scrollback ends %q", got[max(len(got)-100, 0):])
	}
	if got := s.read(0); got != want {
		t.Fatalf("read %q", got)
	}
}

// TestSettleIdleSize checks that a settler nobody wrote to stays small.
func TestSettleIdleSize(t *testing.T) {
	allocs := testing.AllocsPerRun(10, func() {
		s := newSettler(0)
		s.read(0)
		s.match("x")
		s.unread()
		s.tail(5)
	})
	if allocs > 1 {
		t.Fatalf("an idle settler allocates %v times", allocs)
	}
	if size := unsafe.Sizeof(settler{}); size > 1024 {
		t.Fatalf("an idle settler takes %d bytes", size)
	}
}

func TestSettleWriteAllocs(t *testing.T) {
	s := newSettler(0)
	chunk := settleBenchText(32<<10, true)
	s.write(chunk)
	allocs := testing.AllocsPerRun(200, func() { s.write(chunk) })
	if allocs > 0.5 {
		t.Fatalf("write allocates %v times a 32 KiB chunk", allocs)
	}
}
