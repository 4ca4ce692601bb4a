package screen

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hinshun/vt10x"
)

// Cases in testdata/cases run at 20×5: NAME.in is what the program writes,
// NAME.want the rows expected (trailing empty rows may be left out) and
// lines of directives:
//
//	@cursor ROW COL              the zero-based cursor
//	@alt true|false              whether the alternate screen shows
//	@reply "GO-QUOTED"           everything Write returned
//	@attr ROW COL [bold|italic|underline|blink|reverse]... [fg=N|default]
//
// Every case is replayed whole and at every chunk size, which must agree.
const caseCols, caseRows = 20, 5

func TestCases(t *testing.T) {
	t.Parallel()
	ins, err := filepath.Glob("testdata/cases/*.in")
	if err != nil || len(ins) == 0 {
		t.Fatal("no cases in testdata/cases")
	}
	for _, in := range ins {
		name := strings.TrimSuffix(filepath.Base(in), ".in")
		t.Run(name, func(t *testing.T) {
			input, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(strings.TrimSuffix(in, ".in") + ".want")
			if err != nil {
				t.Fatal(err)
			}
			for chunk := 0; chunk <= len(input); chunk++ {
				s := New(caseCols, caseRows)
				var reply []byte
				if chunk == 0 {
					reply = s.Write(nil, input)
				} else {
					for i := 0; i < len(input); i += chunk {
						reply = s.Write(reply, input[i:min(i+chunk, len(input))])
					}
				}
				if msg := checkCase(s, reply, string(want)); msg != "" {
					t.Fatalf("chunk size %d:\n%s", chunk, msg)
				}
			}
		})
	}
}

func checkCase(s *Screen, reply []byte, want string) string {
	var rows []string
	var msgs []string
	for _, l := range strings.Split(strings.TrimSuffix(want, "\n"), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || !strings.HasPrefix(f[0], "@") {
			rows = append(rows, l)
			continue
		}
		switch f[0] {
		case "@cursor":
			r, c := s.Cursor()
			if got := strconv.Itoa(r) + " " + strconv.Itoa(c); got != f[1]+" "+f[2] {
				msgs = append(msgs, "cursor "+got+", want "+f[1]+" "+f[2])
			}
		case "@alt":
			if got := strconv.FormatBool(s.AltScreen()); got != f[1] {
				msgs = append(msgs, "alt "+got+", want "+f[1])
			}
		case "@reply":
			q, err := strconv.Unquote(strings.TrimSpace(strings.TrimPrefix(l, "@reply")))
			if err != nil {
				return "bad @reply: " + err.Error()
			}
			if string(reply) != q {
				msgs = append(msgs, "reply "+strconv.Quote(string(reply))+", want "+strconv.Quote(q))
			}
		case "@attr":
			y, _ := strconv.Atoi(f[1])
			x, _ := strconv.Atoi(f[2])
			if got, w := describeCell(s, x, y, f[3:]), strings.Join(f[3:], " "); got != w {
				msgs = append(msgs, "attr at "+f[1]+" "+f[2]+": "+got+", want "+w)
			}
		default:
			return "unknown directive " + f[0]
		}
	}
	got := s.Lines()
	for i := 0; i < len(got); i++ {
		w := ""
		if i < len(rows) {
			w = rows[i]
		}
		if got[i] != w {
			msgs = append(msgs, "row "+strconv.Itoa(i)+": got "+strconv.Quote(got[i])+", want "+strconv.Quote(w))
		}
	}
	return strings.Join(msgs, "\n")
}

// describeCell describes the cell's attributes in the words of an @attr
// line, naming colours only when the line does.
func describeCell(s *Screen, x, y int, words []string) string {
	s.catchUp()
	s.flush()
	s.vt.Lock()
	g := s.vt.Cell(x, y)
	s.vt.Unlock()
	var d []string
	for _, m := range []struct {
		bit  int16
		name string
	}{{attrBold, "bold"}, {attrItalic, "italic"}, {attrUnderline, "underline"}, {attrBlink, "blink"}, {attrReverse, "reverse"}} {
		if g.Mode&m.bit != 0 {
			d = append(d, m.name)
		}
	}
	color := func(c vt10x.Color) string {
		if c >= 1<<24 {
			return "default"
		}
		return strconv.Itoa(int(c))
	}
	for _, w := range words {
		if strings.HasPrefix(w, "fg=") {
			d = append(d, "fg="+color(g.FG))
		}
		if strings.HasPrefix(w, "bg=") {
			d = append(d, "bg="+color(g.BG))
		}
	}
	return strings.Join(d, " ")
}
