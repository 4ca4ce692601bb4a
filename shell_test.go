package agentpty

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentpty/agentpty/internal/testkit"
)

// startShell starts a shell session or fails the test.
func startShell(t *testing.T, m *Manager) string {
	t.Helper()
	res, err := m.Start(waitCtx(t), StartRequest{Shell: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.State != StateWaitingInput || res.Foreground != "bash" {
		t.Fatalf("shell start: %+v", res)
	}
	return res.ID
}

// mustRun runs a command or fails the test.
func mustRun(t *testing.T, m *Manager, req RunRequest) RunResult {
	t.Helper()
	res, err := m.Run(waitCtx(t), req)
	if err != nil {
		t.Fatalf("Run(%q): %v", req.Command, err)
	}
	return res
}

func code(p *int) int {
	if p == nil {
		return -999
	}
	return *p
}

func TestShellRunBoundaries(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	id := startShell(t, m)
	cases := []struct {
		command, output string
		code            int
	}{
		{"echo hi", "hi", 0},
		{"false", "", 1},
		{"(exit 7)", "", 7},
		{"printf nonl", "nonl", 0},
		{"echo one; echo two >&2; echo three", "one\ntwo\nthree", 0},
		{"printf 'a\\tb\\n'", "a       b", 0},
		{"for i in 1 2; do\n  echo n$i\ndone", "n1\nn2", 0},
		// Look-alikes: a prompt, and OSC 133 marks without the session's nonce.
		{"echo '$ '; echo '# exit 0'", "$ \n# exit 0", 0},
		{`printf '\e]133;D;5\a\e]133;A\a$ \e]133;D;9;aid=0123456789abcdef\a'; echo after`, "$ after", 0},
		// State persists across runs.
		{"cd /tmp && export AGENTPTY_X=42 && greet() { echo \"hello $1\"; }", "", 0},
		{"pwd; echo $AGENTPTY_X; greet you", "/tmp\n42\nhello you", 0},
	}
	for _, c := range cases {
		res := mustRun(t, m, RunRequest{ID: id, Command: c.command})
		if res.Output != c.output || !res.PromptAfter || code(res.ExitCode) != c.code || res.State != StateWaitingInput || res.Foreground != "bash" {
			t.Errorf("run %q: output %q prompt_after %v exit_code %d state %q foreground %q; want %q, true, %d, waiting_input, bash",
				c.command, res.Output, res.PromptAfter, code(res.ExitCode), res.State, res.Foreground, c.output, c.code)
		}
	}
	s, _ := m.Session(id)
	if sb := s.Scrollback(); strings.Contains(sb, s.sh.nonce) || strings.Contains(sb, "\a") {
		t.Errorf("the settled text shows the marks: %q", sb)
	}
	// A shell that exits ends the run with its own status.
	res := mustRun(t, m, RunRequest{ID: id, Command: "exit 3"})
	if !res.Exited || code(res.ExitCode) != 3 || res.State != StateExited {
		t.Errorf("exit 3: %+v", res)
	}
}

func TestShellRunWaitsForInput(t *testing.T) {
	m := newManager(t, Options{})
	id := startShell(t, m)
	res := mustRun(t, m, RunRequest{ID: id, Command: `read -p 'name? ' n; echo "hi $n"`})
	if res.PromptAfter || res.ExitCode != nil || res.State != StateWaitingInput || res.Output != "name? " {
		t.Fatalf("read: %+v", res)
	}
	w := mustWrite(t, m, WriteRequest{ID: id, Input: "bob", Submit: true, WaitUntil: WaitUntilInput})
	if !w.PromptAfter || code(w.ExitCode) != 0 || !strings.Contains(w.Output, "hi bob") {
		t.Fatalf("answer: %+v", w)
	}
	// A password read: waits with the input hidden.
	res = mustRun(t, m, RunRequest{ID: id, Command: `read -s -p 'pw: ' p; echo; echo "len ${#p}"; test ${#p} = 6`})
	if res.PromptAfter || !res.InputHidden || res.State != StateWaitingInput {
		t.Fatalf("read -s: %+v", res)
	}
	w = mustWrite(t, m, WriteRequest{ID: id, Input: "secret", Submit: true, WaitUntil: WaitUntilInput})
	if !w.PromptAfter || code(w.ExitCode) != 0 || !strings.Contains(w.Output, "len 6") || strings.Contains(w.Output, "secret") {
		t.Fatalf("password: %+v", w)
	}
	// A command that reads stdin to its end.
	res = mustRun(t, m, RunRequest{ID: id, Command: "wc -l"})
	if res.PromptAfter || res.State != StateWaitingInput || res.Foreground != "wc" {
		t.Fatalf("wc: %+v", res)
	}
	w = mustWrite(t, m, WriteRequest{ID: id, Input: "a\rb\r\x04", WaitUntil: WaitUntilInput})
	if !w.PromptAfter || code(w.ExitCode) != 0 || !strings.Contains(w.Output, "2") {
		t.Fatalf("wc after ^D: %+v", w)
	}
	// A full-screen program: the run returns its screen once it waits.
	res = mustRun(t, m, RunRequest{ID: id, Command: "seq -f 'row %g' 100 | less"})
	if res.PromptAfter || res.State != StateWaitingInput || res.Foreground != "less" || !strings.Contains(res.Output, "row 31") {
		t.Fatalf("less: %+v", res)
	}
	w = mustWrite(t, m, WriteRequest{ID: id, Input: "q", WaitUntil: WaitUntilInput})
	if !w.PromptAfter || code(w.ExitCode) != 0 {
		t.Fatalf("less after q: %+v", w)
	}
}

func TestShellRunTimeoutAndInterrupt(t *testing.T) {
	m := newManager(t, Options{})
	id := startShell(t, m)
	res := mustRun(t, m, RunRequest{ID: id, Command: "echo started; sleep 30", TimeoutMS: ms(300)})
	if res.PromptAfter || res.State != StateRunning || res.Foreground != "sleep" || res.Output != "started" {
		t.Fatalf("sleep: %+v", res)
	}
	if _, err := m.Run(waitCtx(t), RunRequest{ID: id, Command: "echo no"}); !isErr(err, ErrInvalid) || !strings.Contains(err.Error(), "still running") {
		t.Fatalf("run while one runs: %v", err)
	}
	w := mustWrite(t, m, WriteRequest{ID: id, Input: `\x03`, WaitUntil: WaitUntilInput})
	if !w.PromptAfter || code(w.ExitCode) != 130 || w.State != StateWaitingInput {
		t.Fatalf("Ctrl-C: %+v", w)
	}
	if res := mustRun(t, m, RunRequest{ID: id, Command: "echo ok"}); res.Output != "ok" || !res.PromptAfter {
		t.Fatalf("after Ctrl-C: %+v", res)
	}
}

func TestShellStartWithCommandAndCall(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	res, err := m.Start(waitCtx(t), StartRequest{Shell: true, Command: "echo first; false"})
	if err != nil || res.Output != "first" || !res.PromptAfter || code(res.ExitCode) != 1 || res.State != StateWaitingInput {
		t.Fatalf("start: %+v %v", res, err)
	}
	out, err := m.Call(waitCtx(t), ToolRun, json.RawMessage(`{"id":"`+res.ID+`","command":"echo via call","timeout_ms":5000,"wait_until":"input"}`))
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	if r["output"] != "via call" || r["exit_code"] != 0.0 || r["prompt_after"] != true || r["state"] != StateWaitingInput || r["foreground"] != "bash" {
		t.Fatalf("Call: %s", out)
	}
}

func TestShellRunBadInput(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, noProfile)
	plain := mustStart(t, m, StartRequest{Command: readyCat, WaitFor: "ready"})
	_, err := m.Run(waitCtx(t), RunRequest{ID: plain.ID, Command: "ls"})
	if !isErr(err, ErrInvalid) || !strings.Contains(err.Error(), "not a shell session") || !strings.Contains(err.Error(), plain.ID) {
		t.Fatalf("pty-run on a plain session: %v", err)
	}
	id := startShell(t, m)
	for _, req := range []RunRequest{
		{ID: id, Command: " "},
		{ID: id, Command: "r\x00m -rf d"}, // bash would drop the NUL
		{ID: id, Command: "ls", TimeoutMS: ms(-1)},
		{ID: id, Command: "ls", WaitUntil: "done"},
	} {
		if _, err := m.Run(waitCtx(t), req); !isErr(err, ErrInvalid) {
			t.Errorf("Run(%+v): %v, want ErrInvalid", req, err)
		}
	}
	if _, err := m.Start(waitCtx(t), StartRequest{Shell: true, Command: "r\x00m -rf d"}); !isErr(err, ErrInvalid) || len(m.List()) != 2 {
		t.Errorf("a shell start with a NUL byte: %v", err)
	}
	if _, err := m.Run(waitCtx(t), RunRequest{ID: "pty-99", Command: "ls"}); !isErr(err, ErrNoSession) {
		t.Errorf("unknown id: %v", err)
	}
	// The session is untouched.
	if res := mustRun(t, m, RunRequest{ID: id, Command: "echo fine"}); res.Output != "fine" {
		t.Fatalf("after bad input: %+v", res)
	}
}

// TestShellRunIsApproved: a shell session runs whatever it is given, so
// each run's command goes to the Approver; a denied one is not typed.
func TestShellRunIsApproved(t *testing.T) {
	testkit.Parallel(t)
	var asked []ApprovalRequest
	m := newManager(t, Options{Approver: ApproverFunc(func(ctx context.Context, req ApprovalRequest) error {
		asked = append(asked, req)
		if req.Tool == ToolStart || strings.HasPrefix(req.Command, "echo ") {
			return nil
		}
		return errors.New("only echo runs")
	})})
	id := startShell(t, m)
	if res := mustRun(t, m, RunRequest{ID: id, Command: "echo allowed"}); res.Output != "allowed" {
		t.Fatalf("allowed run: %+v", res)
	}
	if _, err := m.Run(waitCtx(t), RunRequest{ID: id, Command: "touch denied"}); !isErr(err, ErrDenied) {
		t.Fatalf("denied run: %v", err)
	}
	if len(asked) != 3 || asked[0].Tool != ToolStart || asked[1].Tool != ToolRun || asked[2].Command != "touch denied" {
		t.Fatalf("asked %+v", asked)
	}
	s, _ := m.Session(id)
	if strings.Contains(s.Scrollback(), "touch") {
		t.Fatalf("a denied command was typed: %q", s.Scrollback())
	}
	if _, err := m.Start(waitCtx(t), StartRequest{Shell: true, WaitUntil: "later"}); !isErr(err, ErrInvalid) {
		t.Fatalf("wait_until later: %v", err)
	}
}

// pasteCommand is how a run typed its command before it had a channel of
// its own: the end of the line and kill, then one bracketed paste.
func pasteCommand(command string) string { return "\x05\x15\x1b[200~" + command + "\x1b[201~\r" }

// TestShellRunRunsWhatWasJudged: bash executes exactly the text the
// Approver judged, as a script. Each command below reads as echo or ls;
// typed into readline, as runs once were (the control, in a plain
// interactive bash), each removes the canary d. The approver approves
// exactly the text it read, so the channel is tried even for what
// package rules would refuse (control bytes).
func TestShellRunRunsWhatWasJudged(t *testing.T) {
	testkit.Parallel(t)
	cases := []struct {
		name, command, output string
		code                  int
	}{
		{"history expansion", `echo "/;rm -rf d #" !#:1:t`, "/;rm -rf d # !#:1:t", 0},
		{"carriage return", "ls x\rrm -rf d", "", 2},
		{"paste end, C-a", "ls x\x1b[201~\x01rm -rf d #", "", 2},
		{"interrupt", "ls x\x03 rm -rf d #", "", 2},
	}
	for _, c := range cases {
		t.Run(c.name+", control", func(t *testing.T) {
			// The old way of typing the command removes d.
			ctl := canary(t)
			cm := newManager(t, noProfile)
			mustStart(t, cm, StartRequest{Command: "PS1='ctl$ ' exec bash --norc --noprofile -i", Cwd: ctl, WaitFor: "ctl$ "})
			mustWrite(t, cm, WriteRequest{ID: "pty-1", Input: pasteCommand(c.command), Literal: true, WaitMS: ms(1)})
			if w := mustWrite(t, cm, WriteRequest{ID: "pty-1", Input: "echo ctl-done", Submit: true, WaitFor: "ctl-done"}); !w.Matched {
				t.Fatalf("control: %+v", w)
			}
			if exists(filepath.Join(ctl, "d")) {
				t.Fatalf("control: typing %q into readline left d in place: the attack does not work here", c.command)
			}
		})
		exactly := ApproverFunc(func(ctx context.Context, req ApprovalRequest) error {
			if req.Tool == ToolStart || req.Command == c.command {
				return nil
			}
			return errors.New("not the command read")
		})
		t.Run(c.name+", approved as read", func(t *testing.T) { runJudged(t, exactly, c.command, c.output, c.code) })
	}
}

// runJudged runs command in a shell session whose directory holds the
// canary d, approved by approver, and checks that d is still there.
func runJudged(t *testing.T, approver Approver, command, output string, exit int) {
	t.Helper()
	dir := canary(t)
	m := newManager(t, Options{Approver: approver})
	start, err := m.Start(waitCtx(t), StartRequest{Shell: true, Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.Run(waitCtx(t), RunRequest{ID: start.ID, Command: command})
	switch {
	case isErr(err, ErrDenied): // the approver refuses it: stopped all the same
		t.Logf("denied: %v", err)
	case err != nil:
		t.Fatal(err)
	case !res.PromptAfter || code(res.ExitCode) != exit || output != "" && res.Output != output:
		t.Errorf("run %q: %+v; want exit code %d and output %q", command, res, exit, output)
	}
	if !exists(filepath.Join(dir, "d")) {
		t.Fatalf("run %q removed d: bash ran something other than what was judged", command)
	}
}

// canary returns a new directory holding an empty directory d.
func canary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// TestShellRunFiles: the rcfile and each run's file lie in a directory
// only the host's user can enter; a run's file goes once its command has
// ended, the session's directory at Kill, the manager's at Close.
func TestShellRunFiles(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	id := startShell(t, m)
	priv := m.priv.path
	dir := filepath.Join(priv, id)
	for _, p := range []string{priv, dir} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v %v; want a directory of mode 0700", p, fi.Mode(), err)
		}
	}
	res := mustRun(t, m, RunRequest{ID: id, Command: `ls -l "$(dirname "$BASH_SOURCE")"`})
	if !strings.Contains(res.Output, "-r-------- ") || !strings.Contains(res.Output, " rc") {
		t.Fatalf("the files as the shell sees them: %q", res.Output)
	}
	mustWrite(t, m, WriteRequest{ID: id, Input: "echo typed-line", Submit: true, WaitUntil: WaitUntilInput})
	if res := mustRun(t, m, RunRequest{ID: id, Command: "history"}); strings.Contains(res.Output, priv) || !strings.Contains(res.Output, "echo typed-line") {
		t.Fatalf("the history holds the lines that source the runs, or not the typed one: %q", res.Output)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "rc" {
		t.Fatalf("after the run, %s holds %v; want only rc", dir, ents)
	}
	if _, err := m.Kill(waitCtx(t), id); err != nil {
		t.Fatal(err)
	}
	if exists(dir) {
		t.Fatalf("%s is still there after Kill", dir)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if exists(priv) {
		t.Fatalf("%s is still there after Close", priv)
	}
}

// TestShellPipestatus: bash 5.2 loses PIPESTATUS when PROMPT_COMMAND
// comes from the environment; from the rcfile it is kept, for runs and
// for lines typed at the prompt alike.
func TestShellPipestatus(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	id := startShell(t, m)
	if res := mustRun(t, m, RunRequest{ID: id, Command: "false | true; echo ${PIPESTATUS[*]}"}); res.Output != "1 0" {
		t.Fatalf("run: %+v", res)
	}
	w := mustWrite(t, m, WriteRequest{ID: id, Input: "true | false | true; echo ${PIPESTATUS[*]}", Submit: true, WaitUntil: WaitUntilInput})
	if !strings.Contains(w.Output, "\n0 1 0") {
		t.Fatalf("typed: %+v", w)
	}
}

// TestShellRunCap: a run's output is cut as a read's is, at whole lines
// and characters around one marker that counts what was left out, lines
// the scrollback lost included; the spool gets the whole output and the
// result points to it.
func TestShellRunCap(t *testing.T) {
	testkit.Parallel(t)
	var spooled []string
	m := newManager(t, Options{Spool: SpoolFunc(func(id, text string) (string, error) {
		spooled = append(spooled, text)
		return "spool-" + strconv.Itoa(len(spooled)), nil
	})})
	id := startShell(t, m)
	marker := regexp.MustCompile(`^\[\.\.\. (\d+) bytes in (\d+) lines elided \.\.\.\]$`)
	// check returns the marker's figures after checking that every other
	// line is whole: want(i) is the text of line i of the whole output.
	check := func(name, out string, n int, want func(i int) string) (bytes, lines int, mark string) {
		t.Helper()
		if !utf8.ValidString(out) || len(out) > DefaultMaxOutputBytes {
			t.Fatalf("%s: %d bytes, valid UTF-8 %v", name, len(out), utf8.ValidString(out))
		}
		got := strings.Split(out, "\n")
		k := slices.IndexFunc(got, func(l string) bool { return marker.MatchString(l) })
		if k < 0 || slices.ContainsFunc(got[k+1:], marker.MatchString) {
			t.Fatalf("%s: not one marker:\n%s ... %s", name, got[:min(3, len(got))], got[max(len(got)-3, 0):])
		}
		f := marker.FindStringSubmatch(got[k])
		bytes, _ = strconv.Atoi(f[1])
		lines, _ = strconv.Atoi(f[2])
		tail := got[k+1:]
		for i, l := range got[:k] {
			if l != want(i) {
				t.Fatalf("%s: head line %d is %q, want %q", name, i, l, want(i))
			}
		}
		for i, l := range tail {
			if w := want(n - len(tail) + i); l != w {
				t.Fatalf("%s: tail line %d is %q, want %q", name, i, l, w)
			}
		}
		if k+lines+len(tail) != n {
			t.Fatalf("%s: %d head lines, %d elided, %d tail lines; want %d in all", name, k, lines, len(tail), n)
		}
		return bytes, lines, got[k]
	}
	num := func(i int) string { return strconv.Itoa(i + 1) }

	res := mustRun(t, m, RunRequest{ID: id, Command: "seq 1 20000"})
	whole := strings.Join(generate(20000, num), "\n")
	b, _, mark := check("seq 1 20000", res.Output, 20000, num)
	if res.Spool != "spool-1" || len(spooled) != 1 || spooled[0] != whole {
		t.Fatalf("seq 1 20000: spool %q, %d spooled", res.Spool, len(spooled))
	}
	// The two line breaks around the marker stand for the two the
	// elided text began and ended with.
	if kept := len(res.Output) - len(mark) - 2; b+kept != len(whole) {
		t.Errorf("seq 1 20000: %d bytes elided and %d kept; want %d in all", b, kept, len(whole))
	}

	wide := func(i int) string { return "ü日本語" + strings.Repeat("é", i%7) }
	res = mustRun(t, m, RunRequest{ID: id, Command: `awk 'BEGIN { for (i = 0; i < 5000; i++) { s = "ü日本語"; for (j = 0; j < i % 7; j++) s = s "é"; print s } }'`})
	check("UTF-8", res.Output, 5000, wide)
	if res.Spool != "spool-2" || spooled[1] != strings.Join(generate(5000, wide), "\n") {
		t.Fatalf("UTF-8: spool %q", res.Spool)
	}

	// Most of this leaves the scrollback before the run returns: the
	// marker comes first and counts it.
	res = mustRun(t, m, RunRequest{ID: id, Command: "seq 1 200000", TimeoutMS: ms(30000)})
	var lines int
	b, lines, mark = check("seq 1 200000", res.Output, 200000, num)
	if !strings.HasPrefix(res.Output, "[... ") || lines < 150000 {
		t.Fatalf("seq 1 200000: starts %q, %d lines elided", res.Output[:40], lines)
	}
	if kept, all := len(res.Output)-len(mark)-1, len(strings.Join(generate(200000, num), "\n")); b+kept != all {
		t.Errorf("seq 1 200000: %d bytes elided and %d kept; want %d in all", b, kept, all)
	}
	if res.Spool != "spool-3" || !strings.HasPrefix(spooled[2], "[... ") || !strings.HasSuffix(spooled[2], "\n199999\n200000") {
		t.Fatalf("seq 1 200000: spool %q", res.Spool)
	}

	if res := mustRun(t, m, RunRequest{ID: id, Command: "echo short"}); res.Output != "short" || res.Spool != "" || len(spooled) != 3 {
		t.Fatalf("a short run: %+v, %d spooled", res, len(spooled))
	}
}

// generate returns f(0) … f(n-1).
func generate(n int, f func(int) string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

// TestShellRunAfterPendingKeys: keys the model left at the prompt change
// nothing a run types after them: a pending prefix (C-x, then C-e would
// edit and execute the line; Esc), a search (C-r), a quoted insert (C-v).
func TestShellRunAfterPendingKeys(t *testing.T) {
	m := newManager(t, Options{})
	id := startShell(t, m)
	for _, keys := range []string{"\x18", "\x1b", "\x12abc", "\x16"} {
		mustWrite(t, m, WriteRequest{ID: id, Input: "echo partial" + keys, Literal: true, WaitMS: ms(100)})
		res, err := m.Run(waitCtx(t), RunRequest{ID: id, Command: "echo after", TimeoutMS: ms(5000)})
		if err != nil || res.Output != "after" || !res.PromptAfter {
			t.Fatalf("a run after %q: %+v %v", keys, res, err)
		}
	}
}
