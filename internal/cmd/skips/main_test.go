package main

import (
	"os"
	"strings"
	"testing"
)

// A run with a failure, skips (one a subtest's) and a package without
// tests, recorded from go test -json: the output is go test's without
// -json, the skips listed with their reasons, and the result lines last.
func TestFilter(t *testing.T) {
	f, err := os.Open("testdata/run.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b strings.Builder
	if err := filter(f, &b); err != nil {
		t.Fatal(err)
	}
	want := `--- FAIL: TestFails (0.00s)
    b_test.go:5: a detail
    b_test.go:5: went wrong
FAIL

3 skipped:
  example.com/skipmod/a TestSkips: a_test.go:6: asciinema is not installed
  example.com/skipmod/a TestSub/one: a_test.go:8: tmux is not installed
  example.com/skipmod/b TestSkipsToo: b_test.go:6: first line; b_test.go:6: needs root

ok  	example.com/skipmod/a	0.003s
FAIL	example.com/skipmod/b	0.004s
?   	example.com/skipmod/c	[no test files]
FAIL
`
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// Lines that are not JSON (go's messages on stderr) pass through; a run
// without skips or failures prints its result lines only.
func TestFilterPlainLines(t *testing.T) {
	in := "go: downloading example.com/x v1.0.0\n" +
		`{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}` + "\n" +
		`{"Action":"pass","Package":"p","Test":"TestA"}` + "\n" +
		`{"Action":"output","Package":"p","Output":"PASS\n"}` + "\n" +
		`{"Action":"output","Package":"p","Output":"ok  \tp\t0.1s\n"}` + "\n"
	var b strings.Builder
	if err := filter(strings.NewReader(in), &b); err != nil {
		t.Fatal(err)
	}
	if want := "go: downloading example.com/x v1.0.0\nok  \tp\t0.1s\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
