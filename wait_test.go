package agentpty

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpty/agentpty/internal/testkit"
)

// wait_for and wait_for_regex match what the program printed, never the
// echo of what the call typed: the terminal's (cat), readline's (bash,
// python3, node, with the terminal's echo off) or a full-screen program's
// prompt line (less).
func TestWaitForSkipsTheEcho(t *testing.T) {
	testkit.Parallel(t)
	cases := []struct {
		name, program string
		start, ready  string
		input         string
		lit, re       string
		want          string // in the output only once the program has answered
	}{
		{name: "python3", program: "python3", start: "python3 -q", ready: ">>> ",
			input: "import time; time.sleep(0.5); print('finished')", lit: "finished", want: "')\nfinished"},
		{name: "python3 regex", program: "python3", start: "python3 -q", ready: ">>> ",
			input: "import time; time.sleep(0.5); print('fin' + 'ished')", re: `fin\w+`, want: "\nfinished"},
		{name: "node", program: "node", start: "node", ready: "> ",
			input: "const f = (x) => x * 2; setTimeout(() => console.log('timer ran'), 500)", lit: "> ", want: "\n> "},
		{name: "bash", program: "bash", start: "PS1='$ ' bash --norc -i", ready: "$ ",
			input: `sleep 0.5; echo "exit=$?"`, lit: "exit=", want: "\nexit=0"},
		{name: "cat", program: "cat", start: readyCat, ready: "ready",
			input: "hello there", lit: "hello", want: "hello there\nhello there"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			need(t, c.program)
			m := newManager(t, Options{})
			res := mustStart(t, m, StartRequest{Command: c.start, WaitFor: c.ready, Rows: 32})
			w, err := m.Write(waitCtx(t), WriteRequest{ID: res.ID, Input: c.input, Submit: true, WaitFor: c.lit, WaitForRegex: c.re})
			if err != nil || !w.Matched {
				t.Fatalf("Write: %+v, %v", w, err)
			}
			if c.want != "" && !strings.Contains(w.Output, c.want) {
				t.Fatalf("wait_for %q%q returned before the program printed it: %q", c.lit, c.re, w.Output)
			}
		})
	}
}

// On a full screen, the echo of a prompt line (less's search) does not
// match; the program's own drawing (the line found) does.
func TestWaitForSkipsAPromptLineEcho(t *testing.T) {
	need(t, "less")
	file := filepath.Join(t.TempDir(), "lines.txt")
	writeLines(t, file, 3000, "line %d")
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: "less " + file, Rows: 32, WaitFor: "line 31"})
	w, err := m.Write(waitCtx(t), WriteRequest{ID: res.ID, Input: "/line 1500", WaitFor: "line 1500", WaitUntil: WaitUntilInput})
	if err != nil || w.Matched || !strings.HasSuffix(w.Output, "\n/line 1500") {
		t.Fatalf("wait_for matched the search prompt's echo: %+v, %v", w, err)
	}
	mustWrite(t, m, WriteRequest{ID: res.ID, Input: `\r`, WaitFor: "line 1500"})
	// less may write the frame in two parts; descheduled between them for
	// longer than a frame's pause, the match's result holds half of it. The
	// screen is looked at once less reads again.
	mustWrite(t, m, WriteRequest{ID: res.ID, WaitUntil: WaitUntilInput})
	s, _ := m.Session(res.ID)
	if scr := strings.Join(s.Screen().Lines, "\n"); !strings.HasPrefix(scr, "line 1500\nline 1501\n") {
		t.Fatalf("the screen is not the found line: %q", scr)
	}
}

// A match partly in text an earlier read returned counts; one wholly in it
// does not.
func TestWaitForPartlyOld(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: "stty -echo; printf 'MAR\\n'; read x; printf KER; read x; printf '\\nEND'; read x", WaitFor: "MAR"})
	if res.Output != "MAR" {
		t.Fatalf("first read %q", res.Output)
	}
	w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: `\r`, WaitFor: "MAR\nKER", WaitMS: ms(5000)})
	if w.Output != "KER" {
		t.Fatalf("second read %q", w.Output)
	}
	for _, req := range []WriteRequest{
		{ID: res.ID, WaitFor: "MAR\nKER", WaitMS: ms(200)},
		{ID: res.ID, WaitFor: "KER", WaitMS: ms(200)},
		{ID: res.ID, WaitForRegex: `MAR\s+K`, WaitMS: ms(200)},
	} {
		if w, err := m.Write(waitCtx(t), req); err != nil || w.Matched {
			t.Fatalf("%+v matched text wholly read before: %+v, %v", req, w, err)
		}
	}
	w = mustWrite(t, m, WriteRequest{ID: res.ID, Input: `\r`, WaitForRegex: `(?s)MAR.KER\nE`, WaitMS: ms(5000)})
	if w.Output != "KER\nEND" {
		t.Fatalf("third read %q", w.Output)
	}
}

// An invalid pattern, or both kinds of wait at once, is ErrInvalid naming
// what is wrong, and the session is left as it was.
func TestWaitForRegexErrors(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	if _, err := m.Start(waitCtx(t), StartRequest{Command: readyCat, WaitForRegex: `ready(`}); !isErr(err, ErrInvalid) || !strings.Contains(err.Error(), "missing closing )") {
		t.Fatalf("Start with a bad pattern: %v", err)
	}
	if len(m.List()) != 0 {
		t.Fatal("a start with a bad pattern started a session")
	}
	res, err := m.Start(waitCtx(t), StartRequest{Command: readyCat, WaitForRegex: `^re.dy$`})
	if err != nil || !res.Matched || res.Output != "ready" {
		t.Fatalf("Start with wait_for_regex: %+v, %v", res, err)
	}
	for _, req := range []WriteRequest{
		{ID: res.ID, Input: "lost", Submit: true, WaitForRegex: `a[`},
		{ID: res.ID, Input: "lost", Submit: true, WaitFor: "a", WaitForRegex: "a"},
	} {
		_, err := m.Write(waitCtx(t), req)
		if !isErr(err, ErrInvalid) || !strings.Contains(err.Error(), res.ID) {
			t.Fatalf("Write(%+v): %v", req, err)
		}
		if req.WaitFor == "" && !strings.Contains(err.Error(), "missing closing ]") {
			t.Fatalf("the error does not say what is wrong with the pattern: %v", err)
		}
	}
	w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: "kept", Submit: true, WaitForRegex: `kept\nkept`})
	if strings.Contains(w.Output, "lost") {
		t.Fatalf("a refused write typed its input: %q", w.Output)
	}
	if _, err := m.Call(waitCtx(t), ToolWrite, []byte(`{"id":"`+res.ID+`","wait_for_regex":"(?<x>a"}`)); !isErr(err, ErrInvalid) {
		t.Fatalf("Call with a bad pattern: %v", err)
	}
}

// literal types input exactly: backslashes in code reach the program.
func TestLiteralInput(t *testing.T) {
	testkit.Parallel(t)
	need(t, "python3")
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: "python3 -q", WaitFor: ">>> "})
	w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: `print("a\nb", "C:\\temp", len("\x41"))`, Literal: true, Submit: true, WaitFor: ">>> "})
	if want := "\na\nb C:\\temp 1\n>>> "; !strings.HasSuffix(w.Output, want) {
		t.Fatalf("literal input was not typed as it is: %q, want it to end %q", w.Output, want)
	}
	// The same input decoded: \n is Enter, \\ one backslash.
	w = mustWrite(t, m, WriteRequest{ID: res.ID, Input: `print("C:\\temp")`, Submit: true, WaitFor: ">>> "})
	if !strings.Contains(w.Output, "\nC:      emp\n") { // a tab, to column 8
		t.Fatalf("decoded input: %q", w.Output)
	}
}

// A full-screen result is a finished frame: vim's whole screen, not the
// status line it drew first.
func TestFullScreenFrameIsFinished(t *testing.T) {
	need(t, "vim")
	dir := t.TempDir()
	writeLines(t, filepath.Join(dir, "frame.txt"), 20, "row %d of the file")
	m := newManager(t, Options{})
	for run := 0; run < 5; run++ {
		res := mustStart(t, m, StartRequest{Command: "vim -u NONE -N -n frame.txt", Cwd: dir, Cols: 80, Rows: 24, WaitFor: "frame.txt"})
		if !strings.HasPrefix(res.Output, "row 1 of the file\nrow 2 of the file\n") || !strings.Contains(res.Output, "row 20 of the file\n~") {
			t.Fatalf("run %d: vim's screen is half drawn: %q", run, res.Output)
		}
		if _, err := m.Kill(waitCtx(t), res.ID); err != nil {
			t.Fatal(err)
		}
	}
}

// A synchronized update (mode 2026) that pauses mid-frame is waited out:
// the frame is finished when the update ends, not when output pauses.
func TestFullScreenSynchronizedUpdate(t *testing.T) {
	m := newManager(t, Options{})
	draw := `printf '\e[?1049h\e[H\e[2Jready'; read x; printf '\e[?2026h\e[2J\e[Hfirst row'; sleep 0.2; printf '\e[2;1Hsecond row\e[?2026l'; read x`
	res := mustStart(t, m, StartRequest{Command: draw, WaitFor: "ready"})
	start := time.Now()
	w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: `\r`, WaitFor: "first row"})
	if w.Output != "first row\nsecond row" {
		t.Fatalf("the frame was returned before its synchronized update ended (after %v): %q", time.Since(start), w.Output)
	}
}

// Calls on one session take turns in the order they arrive, each waiting
// its own time once its turn comes, and each result holds only what came
// in its own turn.
func TestCallsTakeTurns(t *testing.T) {
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: "PS1='$ ' bash --norc -i", WaitFor: "$ "})
	s, _ := m.Session(res.ID)
	queued := make(chan struct{}, 8)
	onLaneQueue(s, func() { queued <- struct{}{} })

	type outcome struct {
		name string
		res  WriteResult
		err  error
	}
	var mu sync.Mutex
	var order []outcome
	var wg sync.WaitGroup
	call := func(name string, req WriteRequest) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := m.Write(waitCtx(t), req)
			mu.Lock()
			order = append(order, outcome{name, w, err})
			mu.Unlock()
		}()
	}
	// A holds its turn until the test types a line, once the others have
	// queued behind it; then 0.5 s more. Each command numbers its line as
	// the shell runs it: that order is the order of the turns, as each call
	// types in its own. (The order the goroutines note their results in is
	// not: one that returned first may be scheduled after the next.)
	call("A", WriteRequest{ID: res.ID, Input: `echo A-ST""ART; read; sleep 0.5; echo $((++n))-A-DONE`, Submit: true, WaitFor: "A-DONE"})
	awaitUnread(t, s, "A-START") // A has its turn
	// B's fixed wait starts with its turn: counted from its arrival, it
	// would end before its command does.
	call("B", WriteRequest{ID: res.ID, Input: `sleep 0.4; echo $((++n))-B-DONE`, Submit: true, WaitMS: ms(800)})
	<-queued
	call("C", WriteRequest{ID: res.ID, Input: `echo $((++n))-C-DONE`, Submit: true, WaitFor: "C-DONE\n$ "})
	<-queued
	// One that gives up waiting for its turn types nothing.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := m.Write(ctx, WriteRequest{ID: res.ID, Input: `echo NEVER`, Submit: true})
		done <- err
	}()
	<-queued
	cancel()
	if err := <-done; !isErr(err, context.Canceled) {
		t.Fatalf("a call that gave up waiting for its turn: %v", err)
	}
	if err := s.Send("\r"); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if len(order) != 3 {
		t.Fatalf("calls that did not give up: %+v", order)
	}
	for _, o := range order {
		turn := strings.Index("ABC", o.name) + 1
		if o.err != nil || !strings.Contains(o.res.Output, "\n"+strconv.Itoa(turn)+"-"+o.name+"-DONE") || o.res.Matched != (o.name != "B") {
			t.Fatalf("%s: %+v, %v; want its line numbered %d, as it arrived", o.name, o.res, o.err, turn)
		}
		for _, other := range []string{"A", "B", "C", "NEVER"} {
			if other != o.name && strings.Contains(o.res.Output, other+"-DONE") || strings.Contains(o.res.Output, "NEVER") {
				t.Fatalf("%s's result holds another call's output: %q", o.name, o.res.Output)
			}
		}
	}
	w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: `echo after`, Submit: true, WaitFor: "after\n$ "})
	if strings.Contains(w.Output, "NEVER") {
		t.Fatalf("the call that gave up typed: %q", w.Output)
	}
}

// writeLines writes n lines to path, line i made by format from i.
func writeLines(t *testing.T, path string, n int, format string) {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, format+"\n", i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A program that never stops drawing gets its screen as it is after a
// bounded wait for the frame, far inside the call's own.
func TestFullScreenFrameWaitIsBounded(t *testing.T) {
	m := newManager(t, Options{})
	start := time.Now()
	res := mustStart(t, m, StartRequest{Command: `printf '\e[?1049h'; while :; do printf '\e[Htick %s' $RANDOM; sleep 0.02; done`, WaitFor: "tick"})
	if d := time.Since(start); d > 5*time.Second || !strings.HasPrefix(res.Output, "tick ") {
		t.Fatalf("after %v: %q", d, res.Output)
	}
}

// A wait_for literal that ends in a newline matches when that newline is
// the last output so far: cat's echo of the line, then its copy, each
// ended by the Enter.
func TestWaitForEndingInNewline(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: readyCat, WaitFor: "ready\n"}) // see TestKeysReachTheProgramInItsModes
	w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: "w0", Submit: true, WaitFor: "w0\n", WaitMS: ms(3000)})
	if w.Output != "w0\nw0" {
		t.Fatalf("output %q", w.Output)
	}
	if _, err := m.Kill(waitCtx(t), res.ID); err != nil {
		t.Fatal(err)
	}
}

// Output no result has returned yet stays in the read when the program
// clears the screen after it: the text before the clear, then the screen.
func TestReadKeepsTextBeforeAClear(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, noProfile)
	res := mustStart(t, m, StartRequest{Command: "PS1='$ ' exec bash --norc --noprofile -i", WaitFor: "$ ", Cols: 80, Rows: 24})
	s, _ := m.Session(res.ID)
	if err := s.Send("echo visible_text\r"); err != nil {
		t.Fatal(err)
	}
	awaitUnread(t, s, "visible_text\n$ ")
	w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: "clear; echo after_clear", Submit: true, WaitFor: "after_clear\n$ "})
	want := "$ echo visible_text\nvisible_text\n$ clear; echo after_clear\nafter_clear\n$"
	if !strings.HasSuffix(w.Output, want) {
		t.Fatalf("output %q, want it to end in %q", w.Output, want)
	}
	if _, err := m.Kill(waitCtx(t), res.ID); err != nil {
		t.Fatal(err)
	}
}

func init() {
	// A full-screen flood: the alternate screen, then a clear of all of it
	// between every two characters, which the screen parses far slower
	// than the program prints.
	childModes["flood-screen"] = func() {
		os.Stdout.WriteString("\x1b[?1049hflooding\r\n")
		chunk := []byte(strings.Repeat("x\x1b[2J", 4096))
		for {
			if _, err := os.Stdout.Write(chunk); err != nil {
				return
			}
		}
	}
}

// A flood on a large full screen holds no call more than a second past its
// own wait: not a start's, not a read's, not a write's.
func TestFloodHoldsNoCall(t *testing.T) {
	m := newManager(t, noProfile) // killed early: no login profile to cut short
	cmd, env := childCommand("flood-screen")
	const slack = 1500 * time.Millisecond
	timed := func(what string, wait time.Duration, call func() error) {
		t.Helper()
		begin := time.Now()
		if err := call(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if took := time.Since(begin); took > wait+slack {
			t.Errorf("%s with a wait of %v took %v", what, wait, took)
		}
	}
	var id string
	timed("start", 300*time.Millisecond, func() error {
		res, err := m.Start(waitCtx(t), StartRequest{Command: cmd, Env: env, Cols: 1000, Rows: 500, WaitMS: ms(300)})
		id = res.ID
		return err
	})
	for i := 0; i < 3; i++ {
		timed("read", 100*time.Millisecond, func() error {
			_, err := m.Write(waitCtx(t), WriteRequest{ID: id, WaitMS: ms(100)})
			return err
		})
	}
	timed("write", 100*time.Millisecond, func() error {
		_, err := m.Write(waitCtx(t), WriteRequest{ID: id, Input: "q", WaitMS: ms(100), WaitFor: "never printed"})
		return err
	})
	timed("kill", 0, func() error {
		_, err := m.Kill(waitCtx(t), id)
		return err
	})
}

// A call beside a wait parked on its own pattern: the reader releases the
// wait as the call looks, and the call then parks in its place; the wait
// collects its own match and leaves the call's park alone, and the call
// matches its pattern when it comes. Round after round, as each is a race
// between the two waking.
func TestCallBesideAParkedWait(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: `echo ready; while read a; do echo FI""RST-$a; read b; echo SEC""OND-$a; done`, WaitFor: "ready"})
	s, _ := m.Session(res.ID)
	parked := make(chan struct{}, 1)
	tellMatcher(s, func(what string) {
		if what == "parked" {
			select {
			case parked <- struct{}{}:
			default:
			}
		}
	})
	ctx := waitCtx(t)
	for i := range 20 {
		first := make(chan bool, 1)
		go func() {
			matched, err := literalWait(fmt.Sprintf("FIRST-%d", i)).on(s, time.Now().Add(10*time.Second)).await(ctx)
			first <- matched && err == nil
		}()
		select { // the wait parked: nothing else waits on the session
		case <-parked:
		case <-ctx.Done():
			t.Fatalf("round %d: the wait never parked", i)
		}
		got := make(chan WriteResult, 1)
		go func() {
			w, err := m.Write(ctx, WriteRequest{ID: res.ID, Input: strconv.Itoa(i), Submit: true, WaitFor: fmt.Sprintf("SECOND-%d", i), WaitMS: ms(5000)})
			if err != nil {
				t.Error(err)
			}
			got <- w
		}()
		if !<-first {
			t.Fatalf("round %d: the wait did not match its own pattern", i)
		}
		if err := s.Send("b\r"); err != nil {
			t.Fatal(err)
		}
		if w := <-got; !w.Matched {
			t.Fatalf("round %d: the call did not match its pattern: %+v", i, w)
		}
		for len(parked) > 0 { // the call's own parks: it has returned, nothing parks now
			<-parked
		}
	}
}

// The reader looks for a parked call's pattern itself: output that does
// not match, the echo of the call's input among it, leaves the call
// parked, and the program's own answer releases it with a match.
func TestWaitForReaderLooks(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: "echo ready; read a; read b; echo not-yet; read c; echo second-$((1+1)); read d", WaitFor: "ready"})
	s, _ := m.Session(res.ID)
	told := hearMatcher(s, "")
	ctx := waitCtx(t)
	results := make(chan WriteResult, 1)
	go func() {
		w, err := m.Write(ctx, WriteRequest{ID: res.ID, Input: "second-2", Submit: true, WaitFor: "second-2"})
		if err != nil {
			t.Error(err)
		}
		results <- w
	}()
	await := func(what string) {
		for {
			select {
			case got := <-told:
				if got == what {
					return
				}
			case w := <-results:
				t.Fatalf("the call returned before the reader had %s it: %+v", what, w)
			case <-ctx.Done():
				t.Fatalf("the call was never %s", what)
			}
		}
	}
	await("parked")
	if err := s.Send("b\r"); err != nil {
		t.Fatal(err)
	}
	await("kept") // output came while the call was parked, and did not wake it
	if err := s.Send("c\r"); err != nil {
		t.Fatal(err)
	}
	w := <-results
	if !w.Matched || !strings.Contains(w.Output, "not-yet\n") || !strings.HasSuffix(w.Output, "\nsecond-2") || strings.Count(w.Output, "second-2") != 2 {
		t.Fatalf("the echo matched, or the answer did not: %+v", w)
	}
	if matchParked(s) {
		t.Fatal("the pattern is still looked for after the call returned")
	}
}

// A call parked on its pattern wakes when the program exits, as every
// waiter does, and when it gives up its pattern is no longer looked for.
func TestWaitForParkedCallEnds(t *testing.T) {
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: "echo ready; read a; read b; exit 3", WaitFor: "ready"})
	w, err := m.Write(waitCtx(t), WriteRequest{ID: res.ID, Input: "a", Submit: true, WaitFor: "never printed", WaitMS: ms(100)})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := m.Session(res.ID)
	if w.Matched || matchParked(s) {
		t.Fatalf("a call that gave up left its pattern looked for: %+v", w)
	}
	start := time.Now()
	w, err = m.Write(waitCtx(t), WriteRequest{ID: res.ID, Input: "b", Submit: true, WaitFor: "never printed", WaitMS: ms(20000)})
	if err != nil || !w.Exited || w.ExitCode == nil || *w.ExitCode != 3 || time.Since(start) > 10*time.Second {
		t.Fatalf("the exit did not end the wait: %+v after %v", w, time.Since(start))
	}
}

// A pattern in output too long for the reader to look in itself (a long
// line, a flood) is looked for by the call it wakes.
func TestWaitForInALongBatch(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: "echo ready; read a; printf '%03000d MARK-%d\\n' 0 7; read b", WaitFor: "ready"})
	w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: "a", Submit: true, WaitFor: "MARK-7", WaitMS: ms(10000)})
	if !strings.HasSuffix(w.Output, strings.Repeat("0", 3000)+" MARK-7") {
		t.Fatalf("the long line did not match: %q", w.Output)
	}
}

// TestAwaitBesideAParkedCall: a wait outside the calls' turns (a look of
// the host's own) beside a call parked on its pattern: each returns on its
// own pattern, and the call's result is its own. The program prints each
// pattern only when the test types a line, once the hooks say the call is
// parked and the wait has looked beside it.
func TestAwaitBesideAParkedCall(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: "echo ready; read a; read b; echo FI''RST; read c; echo SEC''OND; read d", WaitFor: "ready"})
	s, _ := m.Session(res.ID)
	told := hearMatcher(s, "kept")
	ctx := waitCtx(t)
	type outcome struct {
		res WriteResult
		err error
	}
	got := make(chan outcome, 1)
	go func() {
		w, err := m.Write(ctx, WriteRequest{ID: res.ID, Input: "a", Submit: true, WaitFor: "SECOND"})
		got <- outcome{w, err}
	}()
	hook := func() string {
		select {
		case what := <-told:
			return what
		case o := <-got:
			t.Fatalf("the call returned before its pattern was printed: %+v %v", o.res, o.err)
		case <-ctx.Done():
			t.Fatal("the hooks were never told")
		}
		return ""
	}
	if what := hook(); what != "parked" {
		t.Fatalf("the call was told %q; want parked", what)
	}
	first := make(chan error, 1)
	go func() {
		matched, err := literalWait("FIRST").on(s, time.Now().Add(maxWait)).await(ctx)
		if err == nil && !matched {
			err = errors.New("not matched")
		}
		first <- err
	}()
	// The wait's look found nothing: it waits beside the call ("beside"),
	// or, were it to take the call's place, parks in it ("parked").
	hook()
	if err := s.Send("b\r"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-first:
		if err != nil {
			t.Fatalf("the wait beside the call: %v", err)
		}
	case o := <-got:
		t.Fatalf("the parked call returned on the wait's pattern: %+v %v", o.res, o.err)
	}
	select {
	case o := <-got:
		t.Fatalf("the parked call returned with the wait: %+v %v", o.res, o.err)
	default:
	}
	if err := s.Send("c\r"); err != nil {
		t.Fatal(err)
	}
	o := <-got
	if o.err != nil || !o.res.Matched || !strings.Contains(o.res.Output, "FIRST\n") || !strings.HasSuffix(o.res.Output, "SECOND") {
		t.Fatalf("the parked call: %+v %v; want its own pattern matched", o.res, o.err)
	}
}

// hearMatcher hands what s's matcher tells its test hook (but skip) to
// the channel it returns, never holding up the reader.
func hearMatcher(s *Session, skip string) <-chan string {
	told := make(chan string, 16)
	tellMatcher(s, func(what string) {
		if what == skip {
			return
		}
		select {
		case told <- what:
		default:
		}
	})
	return told
}
