package screen

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// nasty are inputs that broke vt10x or a naive wrapper.
var nasty = []string{
	"\x1b[-5@", "\x1b[-5P", "\x1b[9223372036854775807I", "\x1b[9223372036854775807Z",
	"\x1b[99999999999999999999b", "x\x1b[2147483648b", "\x1b[4hx\x1b[9999b",
	"\x1b[99999;99999H", "\x1b[0;0r\x1b[99999L\x1b[99999M", "\x1b[?1049l\x1b[?1049l",
	"\x1b[99999S\x1b[99999T", "\x1b[99999X\x1b[99999@\x1b[99999P", "\x1b]4;99999999999;?\a",
	"\x1b]4;-1;?\a\x1b]10;?\a\x1b]11;?\x1b\\", "\x1b]104\a", "\x1b]4;1;rgb:ff/ff/ff\a",
	"\x1b[38;2;999;999;999m\x1b[48;5;9999m", "\x1b[;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;;m",
	"\x1b#8\x1b[1;1H\x1b[5 A\x1b[5 @\x1b[5'}\x1b[5'~", "日\x1b[9999b", "e\u0301\u0301\u0301\u0301\u0301\u0301\u0301\u0301\u0301",
	"\xf4\x8f\xbf\xbd\xf4\x80\x80\x80", "\x1bP" + string(make([]byte, 300)), "\x1b]0;" + string(make([]byte, 600)) + "\a",
	"\x1b[" + string(make([]byte, 400)) + "m", "\x1b[?6h\x1b[2;3r\x1b[6n\x1b[?6n\x1b7\x1b8\x1b[1J",
	"\x1bc\x1b[?47h\x1bc\x1b[?1047l", "\x1b[5n\x1b[c\x1b[>c\x1bZ\x1b[18t",
}

// FuzzScreen feeds arbitrary output: nothing may panic (even inside vt10x,
// where it would be recovered), input split in two must give the same
// screen and replies as whole, and the work handed to vt10x stays within
// a bound proportional to the input.
func FuzzScreen(f *testing.F) {
	for _, s := range nasty {
		f.Add([]byte(s), uint8(80), uint8(25), uint16(len(s)/2))
	}
	// Progress output, which skipping passes over: line-local sequences.
	progress := strings.Repeat("\x1b[2K\rstep 7\x1b[10G[ 5%]\x1b[3D\x1b[2X\x1b[1P\x1b[2@\x1b[C\x1b[31mx\x1b[m\r\n", 30)
	f.Add([]byte(progress), uint8(20), uint8(5), uint16(len(progress)/2))
	cases, _ := filepath.Glob("testdata/cases/*.in")
	conf, _ := filepath.Glob(filepath.Join(conformanceDir, "*.in"))
	for _, name := range append(cases, conf...) {
		if p, err := os.ReadFile(name); err == nil {
			f.Add(p, uint8(20), uint8(5), uint16(len(p)/3))
			f.Add(onlcr(p), uint8(80), uint8(25), uint16(len(p)/2))
		}
	}
	f.Fuzz(func(t *testing.T, p []byte, cols, rows uint8, split uint16) {
		c, r := int(cols%100)+1, int(rows%40)+1
		// A generous deadline, only here: a hang must show up as a crash
		// with its input, not as a fuzzer that stops making progress.
		watchdog := time.AfterFunc(30*time.Second+time.Duration(len(p))*time.Millisecond, func() {
			panic(fmt.Sprintf("Write of %d bytes at %dx%d still running: %q", len(p), c, r, p))
		})
		defer watchdog.Stop()
		whole := New(c, r)
		wantReply := whole.Write(nil, p)
		cut := int(split) % (len(p) + 1)
		parts := New(c, r)
		gotReply := parts.Write(nil, p[:cut])
		gotReply = parts.Write(gotReply, p[cut:])

		ref := New(c, r)
		ref.noSkip = true
		ref.Write(nil, p)
		if w, g := ref.Text(), whole.Text(); w != g {
			t.Fatalf("skipping changed the screen:\n%s\n----\n%s", w, g)
		}
		if whole.panics != 0 || parts.panics != 0 {
			t.Fatalf("vt10x panicked (recovered) on %q", p)
		}
		if string(wantReply) != string(gotReply) {
			t.Fatalf("replies differ when split at %d: %q vs %q", cut, wantReply, gotReply)
		}
		if w, g := whole.Text(), parts.Text(); w != g {
			t.Fatalf("split at %d changed the screen:\n%s\n----\n%s", cut, w, g)
		}
		wr, wc := whole.Cursor()
		pr, pc := parts.Cursor()
		if wr != pr || wc != pc {
			t.Fatalf("split at %d moved the cursor: %d,%d vs %d,%d", cut, wr, wc, pr, pc)
		}
		if wr < 0 || wr >= r || wc < 0 || wc >= c {
			t.Fatalf("cursor %d,%d outside %dx%d", wr, wc, c, r)
		}
		// Each input byte may cost a few bytes of rewritten sequence; a
		// REP (three bytes at least) may cost a screenful of characters.
		budget := 64*len(p) + (len(p)/3+1)*16*(c*r+c) + 64
		if whole.fed > budget {
			t.Fatalf("fed vt10x %d bytes for %d bytes of input (budget %d)", whole.fed, len(p), budget)
		}
	})
}
