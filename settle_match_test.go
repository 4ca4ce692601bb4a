package agentpty

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/agentpty/agentpty/internal/testkit"
)

func TestEchoPieces(t *testing.T) {
	testkit.Parallel(t)
	cases := []struct {
		in   string
		want []echoPiece
	}{
		{"print(1)\r", []echoPiece{{"print(1)", true}}},
		{"a\tb\r", []echoPiece{{"a", false}, {"b", true}}},
		{"abXc\x1b[D\x7f\r", []echoPiece{{"abXc", false}}},
		{"ab\x7f\x7fcd", []echoPiece{{"cd", false}}},
		{"ech\t\x7f\x7fxo", []echoPiece{{"ech", false}, {"xo", false}}},
		{"héé\x7f", []echoPiece{{"hé", false}}},
		{"junk\x15ok\r\x03", []echoPiece{{"ok", true}}},
		{"\x1bOAx\x1b", []echoPiece{{"x", false}}},
		{"\x1b[", nil},
	}
	for _, c := range cases {
		if got := echoPieces([]byte(c.in)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("echoPieces(%q) = %+v, want %+v", c.in, got, c.want)
		}
	}
}

// The settled-text matcher, fed as a session feeds it: what came before
// the last read, the input the call types, then what came after.
func TestMatchSettled(t *testing.T) {
	testkit.Parallel(t)
	cases := []struct {
		name          string
		before, typed string
		after         string
		lit, re       string
		want          bool
	}{
		{"echo only", ">>> ", "print('done')\r", "print('done')\r\n", "done", "", false},
		{"echo then output", ">>> ", "print('done')\r", "print('done')\r\ndone\r\n", "done", "", true},
		{"echo arriving", ">>> ", "print('done')\r", "print('do", "do", "", false},
		{"echo arriving regex", ">>> ", "print('done')\r", "print('do", "", `d.`, false},
		{"echo line break", "", "hi\r", "hi\r\n", "hi\n", "", false},
		{"terminal echo then output", "", "hi\r", "hi\r\nhi\r\n$", "hi\n", "", true},
		{"typed nothing", "", "", "done", "done", "", true},
		{"partly old", "MAR\r\n", "", "KER", "MAR\nKER", "", true},
		{"partly old regex", "MAR\r\n", "", "KER", "", `MAR\nK`, true},
		{"wholly old", "MAR\r\nKER", "", "!", "MAR\nKER", "", false},
		{"old line break", "A\r\n$ ", "x\r", "x\r\n", "A\n$", "", false},
		{"old unfinished", "abc", "", "", "abc", "", false},
		{"old unfinished ended", "abc", "", "\r\n", "abc\n", "", true}, // the line feed is new: partly new counts
		{"old unfinished ended and more", "abc", "", "\r\nd", "abc\nd", "", true},
		{"old ended", "abc\r\n", "", "x", "abc\n", "", false},
		{"echo partly output", ">>> ", "1+1\r", "1+1\r\n2\r\n", "1\n2", "", true},
		{"empty regex match", ">>> ", "x\r", "x", "", `y*`, false},
		{"empty regex match new", ">>> ", "x\r", "x\r\nz", "", `y*`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := newSettler(0)
			st.write([]byte(c.before))
			st.read(0)
			w := literalWait(c.lit)
			if c.re != "" {
				w = &waiter{re: regexp.MustCompile(c.re)}
			}
			if c.typed != "" {
				w.typed(st, []byte(c.typed))
			}
			st.write([]byte(c.after))
			if got := w.inSettled(st); got != c.want {
				t.Fatalf("match %q%q in %q = %v, want %v", c.lit, c.re, st.read(0), got, c.want)
			}
		})
	}
}

func TestMatchScreen(t *testing.T) {
	testkit.Parallel(t)
	shown := []string{"line 1", "line 2", ":"}
	w := literalWait("line 2")
	w.typed(newSettler(0), []byte("/line 2"))
	if w.inScreen([]string{"line 1", "line 2", "/line 2"}, shown) {
		t.Error("matched an unchanged row or the prompt's echo")
	}
	if !w.inScreen([]string{"line 2", "line 3", ":"}, shown) {
		t.Error("did not match a row the program drew")
	}
	if w := literalWait("1\nline"); w.inScreen(shown, shown) || !w.inScreen([]string{"line 1", "line 3"}, shown) {
		t.Error("a match across rows counts when part of it is new, only then")
	}
}

// TestMatchSettledIncremental checks that a wait looking again only where
// the text changed finds what a fresh look at the same text finds.
func TestMatchSettledIncremental(t *testing.T) {
	testkit.Parallel(t)
	in := "$ make\r\nok 1\r\nbuilding [   ]\r\x1b[Kbuilding [== ]\r\x1b[Kdone\r\n\x1b[2A\x1b[2Kok 2\n\n$ x\r\ny\x1b[A\x1b[J\r\nz\r\n"
	specs := []func() *waiter{}
	for _, lit := range []string{"ok 2\ndone", "done\n$", "\n\n", "1\nbuilding", "$ x\nz", "x\ny", "z\n"} {
		specs = append(specs, func() *waiter { return literalWait(lit) })
	}
	for _, re := range []string{`ok 2\s+done`, `(?m)^\$ $`, `\[== \]\n`, `(?s)make.*ok 2`, `x\nz$`} {
		specs = append(specs, func() *waiter { return &waiter{re: regexp.MustCompile(re)} })
	}
	flood := strings.Repeat("row\r\n", 100) + "ok 2\r\ndone\r\n$ x\r\nz\r\n" // over the bound: lines are evicted
	for _, c := range []struct {
		in    string
		bound int
	}{{in, 0}, {flood, 600}} {
		for _, spec := range specs {
			st := newSettler(c.bound)
			w := spec()
			for i := range len(c.in) {
				st.write([]byte{c.in[i]})
				inc := w.inSettled(st)
				fresh := newSettler(c.bound)
				fresh.write([]byte(c.in[:i+1]))
				if want := spec().inSettled(fresh); inc != want {
					t.Fatalf("%q%v after %q: %v, a fresh look %v", w.lit, w.re, c.in[:i+1], inc, want)
				}
			}
		}
	}
}
