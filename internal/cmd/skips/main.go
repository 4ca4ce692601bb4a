// Command skips reads `go test -json` on its standard input and prints what
// `go test` prints without -json (the output of failing tests, build
// errors, the packages' result lines), then the tests that were skipped
// and why, and last the packages' result lines, so the output still ends
// as go test's does. `make test` pipes the race-checked run through it;
// the exit code stays go test's.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	if err := filter(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "skips:", err)
		os.Exit(1)
	}
}

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output events
	Test       string
	Output     string
}

// skip is a skipped test and the lines it logged, the reason.
type skip struct {
	pkg, test string
	why       []string
}

// filter copies go test's output from the JSON events in r to w as
// described above. Lines that are not JSON (go's own messages on stderr,
// merged in) pass as they are, but for go's closing "FAIL", which stays
// last.
func filter(r io.Reader, w io.Writer) error {
	out := bufio.NewWriter(w)
	defer out.Flush()
	held := map[string][]string{} // a test's output until it passes, fails or skips
	var skips []skip
	var results []string // the packages' "ok", "FAIL" and "?" lines, and go's closing "FAIL"
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var e event
		if line := sc.Text(); !strings.HasPrefix(line, "{") || json.Unmarshal(sc.Bytes(), &e) != nil {
			if line == "FAIL" {
				results = append(results, line+"\n")
			} else {
				out.WriteString(line + "\n")
			}
			out.Flush()
			continue
		}
		key := e.Package + " " + e.Test
		switch {
		case e.Action == "build-output":
			out.WriteString(e.Output)
		case e.Action == "output" && e.Test != "":
			held[key] = append(held[key], e.Output)
		case e.Action == "output":
			switch {
			case isResult(e.Output):
				results = append(results, e.Output)
			case e.Output != "PASS\n":
				out.WriteString(e.Output)
			}
		case e.Test != "" && e.Action == "fail":
			printFailed(out, held[key])
			delete(held, key)
		case e.Test != "" && e.Action == "skip":
			skips = append(skips, skip{e.Package, e.Test, reasons(held[key])})
			delete(held, key)
		case e.Test != "" && e.Action == "pass":
			delete(held, key)
		}
		out.Flush()
	}
	summarize(out, skips, results)
	return sc.Err()
}

// summarize prints the skipped tests with their reasons, then the
// packages' result lines, closing with FAIL as go test does when one
// failed.
func summarize(out *bufio.Writer, skips []skip, results []string) {
	if len(skips) > 0 {
		fmt.Fprintf(out, "\n%d skipped:\n", len(skips))
		for _, s := range skips {
			fmt.Fprintf(out, "  %s %s: %s\n", s.pkg, s.test, strings.Join(s.why, "; "))
		}
		out.WriteString("\n")
	}
	failed := false
	for _, line := range results {
		failed = failed || strings.HasPrefix(line, "FAIL")
	}
	if failed && results[len(results)-1] != "FAIL\n" {
		results = append(results, "FAIL\n") // go test's closing line, which -json leaves out
	}
	for _, line := range results {
		out.WriteString(line)
	}
}

// printFailed prints a failed test's output as go test does without -v: its
// "--- FAIL" line first, then what it logged.
func printFailed(out *bufio.Writer, lines []string) {
	for _, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "--- ") {
			out.WriteString(line)
		}
	}
	for _, line := range lines {
		if t := strings.TrimSpace(line); !strings.HasPrefix(t, "--- ") && !strings.HasPrefix(t, "=== ") {
			out.WriteString(line)
		}
	}
}

// isResult reports a package's result line: "ok  \tpkg\t1.2s",
// "FAIL\tpkg\t0.3s", "?   \tpkg\t[no test files]".
func isResult(line string) bool {
	return strings.HasPrefix(line, "ok  \t") || strings.HasPrefix(line, "FAIL\t") || strings.HasPrefix(line, "?   \t")
}

// reasons returns what a skipped test logged, without go test's own
// lines: "helpers_test.go:120: asciinema is not installed".
func reasons(lines []string) []string {
	var out []string
	for _, line := range lines {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		out = []string{"no reason given"}
	}
	return out
}
