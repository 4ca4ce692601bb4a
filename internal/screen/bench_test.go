package screen

import (
	"fmt"
	"strings"
	"testing"
)

const benchSize = 1 << 20

// plainLines is 1 MiB of text lines as a pty delivers them (CR LF).
func plainLines() []byte {
	var b strings.Builder
	for i := 0; b.Len() < benchSize; i++ {
		fmt.Fprintf(&b, "%06d the quick brown fox jumps over the lazy dog, again and again\r\n", i)
	}
	return []byte(b.String()[:benchSize])
}

// lsLines is 1 MiB of `ls --color` style output: names in colours.
func lsLines() []byte {
	var b strings.Builder
	for i := 0; b.Len() < benchSize; i++ {
		fmt.Fprintf(&b, "\x1b[0m\x1b[01;34mdir%04d\x1b[0m  \x1b[01;32mrun%04d.sh\x1b[0m  notes%04d.txt  \x1b[01;31marchive%04d.tar.gz\x1b[0m\r\n", i, i, i, i)
	}
	return []byte(b.String())
}

// progressLines is 1 MiB of what build tools print: each line erased and
// written over from its start, a counter moved into place.
func progressLines() []byte {
	var b strings.Builder
	for i := 0; b.Len() < benchSize; i++ {
		fmt.Fprintf(&b, "\x1b[2K\rcompiling module %06d\x1b[60G\x1b[32m[%3d%%]\x1b[0m\r\n", i, i%101)
	}
	return []byte(b.String())
}

// vimFrames is 1 MiB of full-screen redraws of an 80×25 editor on the
// alternate screen: every row repositioned, partly highlighted, erased to
// the end, a status line, the cursor parked.
func vimFrames() []byte {
	var b strings.Builder
	b.WriteString("\x1b[?1049h\x1b[22;0;0t\x1b[>4;2m\x1b[?1h\x1b=\x1b[?2004h\x1b[1;25r\x1b[?12h\x1b[?12l\x1b[22;2t\x1b[22;1t\x1b[27m\x1b[23m\x1b[29m\x1b[m\x1b[H\x1b[2J")
	for f := 0; b.Len() < benchSize; f++ {
		b.WriteString("\x1b[?25l")
		for r := 1; r <= 24; r++ {
			fmt.Fprintf(&b, "\x1b[%d;1H\x1b[33m%3d \x1b[m", r, r+f)
			fmt.Fprintf(&b, "\x1b[38;5;130mfunc\x1b[m (s *Screen) handle%d(p []byte) \x1b[32mint\x1b[m { // frame %d\x1b[K", r, f)
		}
		fmt.Fprintf(&b, "\x1b[25;1H\x1b[1m-- INSERT --\x1b[m\x1b[25;63H%d,1\x1b[10CTop\x1b[%d;5H\x1b[?25h", f, f%24+1)
	}
	return []byte(b.String())
}

func BenchmarkScreenWrite(b *testing.B) {
	for _, bc := range []struct {
		name string
		data []byte
	}{
		{"plain", plainLines()},
		{"ls-color", lsLines()},
		{"progress", progressLines()},
		{"vim-redraw", vimFrames()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := New(80, 25)
			var reply []byte
			b.SetBytes(int64(len(bc.data)))
			b.ReportAllocs()
			for b.Loop() {
				reply = s.Write(reply[:0], bc.data)
			}
		})
		b.Run(bc.name+"-noskip", func(b *testing.B) {
			s := New(80, 25)
			s.noSkip = true
			var reply []byte
			b.SetBytes(int64(len(bc.data)))
			for b.Loop() {
				reply = s.Write(reply[:0], bc.data)
			}
		})
	}
}
