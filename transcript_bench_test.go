package agentpty

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// The agent transcript: a fixed script of the steps a model takes in a
// working session, driven three ways. "state" knows no literal in
// advance: pty-run for shell commands and wait_until "input" for the
// programs. "oracle" knows the perfect wait_for literal of every step.
// "fixed" waits 700 ms a step, as a model guessing does, and polls again
// while what it needs has not come.

// transcriptStep is one step. run is a command at the shell's prompt;
// otherwise input is typed into the program in front (Enter after it
// unless raw). lit is the oracle's wait_for, with %P for the prompt;
// expect is what the step's results must hold however it is driven.
type transcriptStep struct {
	run, input string
	raw        bool
	lit        string
	expect     string
}

var transcript = []transcriptStep{
	{run: "git init -q && echo ready", lit: "ready\n%P", expect: "ready"},
	{run: "echo hello", lit: "hello\n%P", expect: "hello"},
	{run: "ls /nonexistent; echo status=$?", lit: "status=2\n%P", expect: "status=2"},
	{run: "sh -c 'exit 3'; echo rc=$?", lit: "rc=3\n%P", expect: "rc=3"},
	{run: "printf 'a\\nb\\n' > f.txt; wc -l < f.txt", lit: "2\n%P", expect: "2"},
	{run: "read -p 'na''me? ' n; echo hi $n", lit: "name? ", expect: "name? "},
	{input: "bob", lit: "hi bob\n%P", expect: "hi bob"},
	{run: "python3 -q", lit: ">>> ", expect: ">>>"},
	{input: "2**64", lit: "18446744073709551616\n>>> ", expect: "18446744073709551616"},
	{input: "1/0", lit: "ZeroDivisionError: division by zero\n>>> ", expect: "ZeroDivisionError"},
	{input: "exit()", lit: "\n%P", expect: ""},
	{run: "git -c user.name=a -c user.email=a@b commit --allow-empty", lit: "Please enter the commit message", expect: "Please enter the commit message"},
	{input: "ifirst commit\x1b", raw: true, lit: "first commit", expect: "first commit"},
	{input: ":wq", lit: "] first commit\n%P", expect: "] first commit"},
	{run: "seq -f 'line %g' 2000 > nums.txt; echo made", lit: "made\n%P", expect: "made"},
	{run: "less nums.txt", lit: "line 31", expect: "line 31"},
	{input: "/line 1500", lit: "line 1501", expect: "line 1501"},
	{input: "q", raw: true, lit: "%P", expect: ""},
	{run: `python3 -c 'import getpass; print(len(getpass.getpass("Pass" "word: ")))'`, lit: "Password: ", expect: "Password: "},
	{input: "hunter2", lit: "7\n%P", expect: "7"},
	{run: "sleep 1; echo slept", lit: "slept\n%P", expect: "slept"},
}

// transcriptOptions give git its editor: vim as installed (--clean loads
// defaults.vim, ttimeoutlen 100 ms). Under -u NONE vim waits a whole
// second after a lone Esc for more of a key, and wait_until "input" waits
// with it (a person sees insert mode end only then), while the oracle's
// literal is already on the screen.
var transcriptOptions = Options{Env: []string{"GIT_EDITOR=vim --clean -n", "GIT_CONFIG_NOSYSTEM=1"}}

// transcriptFigure is what one drive of the transcript took.
type transcriptFigure struct {
	wall  time.Duration
	bytes int
	calls int
}

// driveTranscript runs the transcript one way ("state", "oracle" or
// "fixed") in a new shell session and reports the wall time, the bytes of
// output returned and the calls made. A step whose results lack what it
// expects is an error.
func driveTranscript(tb testing.TB, m *Manager, way string) transcriptFigure {
	tb.Helper()
	ctx := context.Background()
	prompt := "$ "
	if os.Geteuid() == 0 {
		prompt = "# "
	}
	var fig transcriptFigure
	took := func(out string) {
		fig.calls++
		fig.bytes += len(out)
	}
	begin := time.Now()
	start := StartRequest{Shell: true, Cwd: tb.TempDir()}
	switch way {
	case "oracle":
		start.WaitFor = prompt
	case "fixed":
		start.WaitMS = ms(700)
	}
	res, err := m.Start(ctx, start)
	if err != nil {
		tb.Fatal(err)
	}
	took(res.Output)
	id := res.ID
	for i, st := range transcript {
		text := st.run + st.input
		submit := !st.raw
		lit := strings.ReplaceAll(st.lit, "%P", prompt)
		var got strings.Builder
		write := func(req WriteRequest) {
			req.ID = id
			w, err := m.Write(ctx, req)
			if err != nil {
				tb.Fatalf("%s step %d %q: %v", way, i, text, err)
			}
			took(w.Output)
			got.WriteString(w.Output)
		}
		switch way {
		case "state":
			if st.run != "" {
				r, err := m.Run(ctx, RunRequest{ID: id, Command: st.run, WaitUntil: WaitUntilInput})
				if err != nil {
					tb.Fatalf("state step %d %q: %v", i, text, err)
				}
				took(r.Output)
				got.WriteString(r.Output)
			} else {
				write(WriteRequest{Input: st.input, Submit: submit, WaitUntil: WaitUntilInput})
			}
		case "oracle":
			write(WriteRequest{Input: text, Submit: submit, WaitFor: lit})
		case "fixed":
			write(WriteRequest{Input: text, Submit: submit, WaitMS: ms(700)})
			for polls := 0; !strings.Contains(got.String(), lit) && polls < 10; polls++ {
				write(WriteRequest{WaitMS: ms(700)})
			}
		}
		if !strings.Contains(got.String(), st.expect) {
			tb.Errorf("%s step %d %q: results %q lack %q", way, i, text, got.String(), st.expect)
		}
	}
	fig.wall = time.Since(begin)
	return fig
}

// transcriptReport drives the transcript the three ways, rounds times
// each, interleaved, and returns the median of each.
func transcriptReport(tb testing.TB, rounds int) map[string]transcriptFigure {
	ways := []string{"state", "oracle", "fixed"}
	all := map[string][]transcriptFigure{}
	for r := 0; r < rounds; r++ {
		for _, w := range ways {
			m := NewManager(transcriptOptions)
			all[w] = append(all[w], driveTranscript(tb, m, w))
			m.Close()
		}
	}
	out := map[string]transcriptFigure{}
	for w, figs := range all {
		best := figs
		for i := range best { // insertion sort by wall time: a handful of rounds
			for j := i; j > 0 && best[j].wall < best[j-1].wall; j-- {
				best[j], best[j-1] = best[j-1], best[j]
			}
		}
		out[w] = best[len(best)/2]
	}
	return out
}

// waitLatency is the median time of a python3 round trip (2**64) ended by
// wait_until "input" and by the perfect wait_for, paired.
func waitLatency(tb testing.TB, n int) (until, lit time.Duration) {
	m := NewManager(Options{Shell: benchShell})
	defer m.Close()
	ctx := context.Background()
	res, err := m.Start(ctx, StartRequest{Command: "exec python3 -q", WaitUntil: WaitUntilInput})
	if err != nil {
		tb.Fatal(err)
	}
	p := pairs(n,
		func() float64 {
			return timeIt(func() {
				_, _ = m.Write(ctx, WriteRequest{ID: res.ID, Input: "2**64", Submit: true, WaitFor: "18446744073709551616\n>>> "})
			})
		},
		func() float64 {
			return timeIt(func() {
				_, _ = m.Write(ctx, WriteRequest{ID: res.ID, Input: "2**64", Submit: true, WaitUntil: WaitUntilInput})
			})
		})
	return time.Duration(p.Lib * 1e9), time.Duration(p.Floor * 1e9)
}

// formatTranscript prints the transcript's figures for TestBenchReport.
func formatTranscript(figs map[string]transcriptFigure, until, lit time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nagent transcript, %d steps (median of rounds)\n", len(transcript))
	fmt.Fprintf(&b, "%-40s %-10s %-10s %s\n", "way", "wall", "bytes", "calls")
	names := map[string]string{
		"state":  "wait_until + pty-run (no literals)",
		"oracle": "perfect wait_for literals (oracle)",
		"fixed":  "fixed 700 ms waits",
	}
	for _, w := range []string{"state", "oracle", "fixed"} {
		f := figs[w]
		fmt.Fprintf(&b, "%-40s %-10s %-10d %d\n", names[w], f.wall.Round(time.Millisecond), f.bytes, f.calls)
	}
	ratio := figs["state"].wall.Seconds() / figs["oracle"].wall.Seconds()
	fmt.Fprintf(&b, "%-40s %.2f×  goal ≤ 1.30×  %s\n", "wait_until + pty-run against the oracle", ratio, verdict(ratio <= 1.3))
	fmt.Fprintf(&b, "%-40s wait_until %v, wait_for %v\n", "python3 round trip (median)", until.Round(10*time.Microsecond), lit.Round(10*time.Microsecond))
	return b.String()
}

// TestTranscriptDrives drives the transcript once each way, checking that
// each way gets every step's answer (make bench adds the fixed waits and
// prints the figures).
func TestTranscriptDrives(t *testing.T) {
	need(t, "python3", "vim", "less", "git")
	if testing.Short() {
		t.Skip("drives the transcript twice: a few seconds")
	}
	m := newManager(t, transcriptOptions)
	for _, w := range []string{"state", "oracle"} {
		f := driveTranscript(t, m, w)
		t.Logf("%s: %v, %d bytes, %d calls", w, f.wall.Round(time.Millisecond), f.bytes, f.calls)
	}
}
