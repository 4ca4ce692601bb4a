package screen

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// conformanceFloor is the number of xterm cases that must keep matching;
// raise it when a fix makes more of them pass.
const conformanceFloor = 76

// conformanceDir is the shared xterm corpus, beside the repository root.
const conformanceDir = "../../../shared/conformance/xterm"

// onlcr turns each bare LF into CR LF, as the pty's line discipline does
// for every program's output.
func onlcr(p []byte) []byte {
	var b bytes.Buffer
	for i, c := range p {
		if c == '\n' && (i == 0 || p[i-1] != '\r') {
			b.WriteByte('\r')
		}
		b.WriteByte(c)
	}
	return b.Bytes()
}

type confCase struct {
	name     string
	in       []byte
	wantRows []string
}

func loadConformance(t testing.TB) []confCase {
	ins, _ := filepath.Glob(filepath.Join(conformanceDir, "*.in"))
	if len(ins) == 0 {
		if os.Getenv("AGENTPTY_REQUIRE") == "all" {
			t.Fatalf("conformance corpus %s is missing and AGENTPTY_REQUIRE=all", conformanceDir)
		}
		t.Skipf("conformance corpus %s not present: skipping (set AGENTPTY_REQUIRE=all to make this fail)", conformanceDir)
	}
	sort.Strings(ins)
	var cases []confCase
	for _, in := range ins {
		name := strings.TrimSuffix(filepath.Base(in), ".in")
		input, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(strings.TrimSuffix(in, ".in") + ".text")
		if err != nil {
			t.Fatal(err)
		}
		rows := strings.Split(string(want), "\n")
		for len(rows) < 25 {
			rows = append(rows, "")
		}
		rows = rows[:25]
		for i := range rows {
			rows[i] = strings.TrimRight(rows[i], " ")
		}
		cases = append(cases, confCase{name, onlcr(input), rows})
	}
	return cases
}

// TestConformance replays the xterm corpus at 80×25 and compares every
// row; -v logs the differing rows of each failing case.
func TestConformance(t *testing.T) {
	t.Parallel()
	cases := loadConformance(t)
	pass := 0
	var failed []string
	for _, c := range cases {
		s := New(80, 25)
		s.Write(nil, c.in)
		got := s.Lines()
		// Split anywhere, the input must render the same.
		for _, chunk := range []int{1, 2, 3, 7, 64} {
			sc := New(80, 25)
			for i := 0; i < len(c.in); i += chunk {
				sc.Write(nil, c.in[i:min(i+chunk, len(c.in))])
			}
			if sc.Text() != s.Text() {
				t.Errorf("%s: fed in chunks of %d, the screen differs from fed whole", c.name, chunk)
			}
		}
		var diffs []string
		for i := range c.wantRows {
			if got[i] != c.wantRows[i] {
				diffs = append(diffs, "  row "+itoa(i)+"\n    want "+quoteRow(c.wantRows[i])+"\n    got  "+quoteRow(got[i]))
			}
		}
		if len(diffs) == 0 {
			pass++
			continue
		}
		failed = append(failed, c.name)
		t.Logf("%s: %d rows differ\n%s", c.name, len(diffs), strings.Join(diffs, "\n"))
	}
	t.Logf("conformance: %d/%d cases equal; differing: %s", pass, len(cases), strings.Join(failed, " "))
	if pass < conformanceFloor {
		t.Errorf("conformance fell to %d/%d, below the floor of %d", pass, len(cases), conformanceFloor)
	}
}

func quoteRow(s string) string { return "|" + s + "|" }

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
