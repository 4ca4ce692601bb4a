package agentpty

import (
	"fmt"
	"strings"
	"testing"
)

// settleBenchText returns about n bytes of the output of a build or a log: lines
// of words, with SGR colour codes around some of them when colour is set.
func settleBenchText(n int, colour bool) []byte {
	words := strings.Fields("the quick brown fox jumps over the lazy dog compiling module src/main.go ok PASS 12.5s")
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%5d ", i)
		for j := range 10 {
			w := words[(i*7+j*3)%len(words)]
			if colour && j%3 == 0 {
				fmt.Fprintf(&b, "\x1b[1;3%dm%s\x1b[0m ", j%8, w)
			} else {
				b.WriteString(w + " ")
			}
		}
		b.WriteString("\r\n")
	}
	return []byte(b.String())
}

// settleBenchRedraw returns about n bytes of what readline writes while a person
// types commands: the prompt, each character echoed, corrections with
// backspace and erase, a full redraw for history recall, then the output.
func settleBenchRedraw(n int) []byte {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString("\x1b]0;user@host: ~/src\a\x1b[01;32muser@host\x1b[00m:\x1b[01;34m~/src\x1b[00m$ ")
		cmd := fmt.Sprintf("go test -run TestThing%d ./...", i)
		for k, c := range cmd {
			b.WriteRune(c)
			if k%9 == 8 {
				b.WriteString("x\b\x1b[K")
			}
		}
		b.WriteString("\r\x1b[C\x1b[C\x1b[C\x1b[K" + cmd[3:] + "\x1b[8D\x1b[1P\x1b[1@t\x1b[8C")
		b.WriteString("\r\nok  \tgithub.com/x/y\t0.01s\r\n")
	}
	return []byte(b.String())
}

// BenchmarkSettleWrite measures the reader's hot path on a megabyte of
// each kind of output, fed in the 4 KiB chunks a pty read returns.
func BenchmarkSettleWrite(b *testing.B) {
	cases := []struct {
		name string
		data []byte
	}{
		{"plain", settleBenchText(1<<20, false)},
		{"sgr", settleBenchText(1<<20, true)},
		{"redraw", settleBenchRedraw(1 << 20)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			s := newSettler(0)
			b.SetBytes(int64(len(c.data)))
			b.ReportAllocs()
			for b.Loop() {
				for p := c.data; len(p) > 0; { // as the reader gets it from the pty
					n := min(len(p), 4096)
					s.write(p[:n])
					p = p[n:]
				}
			}
		})
	}
}

// BenchmarkSettleMatch is a waiter checking for a prompt after every chunk.
func BenchmarkSettleMatch(b *testing.B) {
	data := settleBenchText(1<<20, true)
	s := newSettler(0)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		for p := data; len(p) > 0; {
			n := min(len(p), 4096)
			s.write(p[:n])
			s.match("$ ")
			p = p[n:]
		}
		s.read(32 << 10)
	}
}

// BenchmarkSettleReadBacklog reads 32 KiB out of 20 MB nobody read: the
// cost follows the output, not the backlog.
func BenchmarkSettleReadBacklog(b *testing.B) {
	s := newSettler(64 << 20)
	chunk := settleBenchText(1<<20, false)
	for range 20 {
		s.write(chunk)
	}
	backlog := *s // read only starts a new epoch: restoring the fields undoes it
	b.ReportAllocs()
	for b.Loop() {
		if out := s.read(32 << 10); len(out) > 32<<10 {
			b.Fatal(len(out))
		}
		*s = backlog
	}
}
