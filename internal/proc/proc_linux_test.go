package proc

import (
	"os"
	"strings"
	"testing"
)

// TestParseStat reads a command name with spaces and parentheses, the
// fields after it, and reuses the name it is given when it is the same.
func TestParseStat(t *testing.T) {
	line := []byte("4242 (a (b) c) S 1 4242 4240 34816 4242 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100\n")
	st, ok := ParseStat(line, "")
	want := Stat{Comm: "a (b) c", State: 'S', PPID: 1, Pgrp: 4242, SID: 4240, Threads: 1, TTY: 34816, Start: 987654} // pts/0
	if !ok || st != want {
		t.Fatalf("ParseStat = %+v %v, want %+v", st, ok, want)
	}
	if allocs := testing.AllocsPerRun(100, func() { ParseStat(line, "a (b) c") }); allocs != 0 {
		t.Errorf("ParseStat with the same name allocates %v times", allocs)
	}
	for _, bad := range []string{"", "1 (x", "1 (x) SS 1 2 3", "1 (x) S 1 2"} {
		if _, ok := ParseStat([]byte(bad), ""); ok {
			t.Errorf("ParseStat(%q) ok", bad)
		}
	}
	self, ok := ReadStat(os.Getpid(), make([]byte, 512))
	// The state is the main thread's, which may sleep while another reads;
	// a Go program has more than one thread.
	if !ok || self.PPID != os.Getppid() || self.Start == 0 || self.Threads < 2 || self.State != 'R' && self.State != 'S' {
		t.Errorf("ReadStat(self) = %+v %v", self, ok)
	}
}

// Fields splits as strings.Fields would at spaces and newlines, and stops
// when f is full.
func TestFields(t *testing.T) {
	for _, in := range []string{"", " ", "\n", "a", " a", "a ", "0 0x0 0x7ff\n", "  running\n", "-1 0x7ffd 0x7f12\n", "a  b\n\nc d e f g h i j k"} {
		want := strings.FieldsFunc(in, func(r rune) bool { return r == ' ' || r == '\n' })
		var f [9][]byte
		n := Fields([]byte(in), f[:])
		if n != min(len(want), len(f)) {
			t.Fatalf("%q: %d fields, want %d", in, n, min(len(want), len(f)))
		}
		for i := 0; i < n; i++ {
			if string(f[i]) != want[i] {
				t.Fatalf("%q: field %d is %q, want %q", in, i, f[i], want[i])
			}
		}
	}
}
