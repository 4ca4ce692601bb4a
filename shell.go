package agentpty

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentpty/agentpty/internal/cmdline"
)

// ToolRun is the tool that runs one command in a shell session.
const ToolRun = "pty-run"

// Runs, as DESIGN.md fixes them.
const (
	defaultRunTimeout = 10 * time.Second
	// promptSettle bounds the wait, after a command's end mark, for the
	// shell to be back at its prompt reading input (a background job that
	// keeps printing would otherwise hold the run).
	promptSettle = 100 * time.Millisecond
)

// RunRequest is the argument of pty-run.
type RunRequest struct {
	// ID names a shell session (pty-start with shell: true). Required.
	ID string `json:"id"`
	// Command is typed at the shell's prompt as it is, as one paste (so it
	// may span lines). Required.
	Command string `json:"command"`
	// TimeoutMS bounds the wait for the prompt to return; nil means 10000.
	// Capped at 30000.
	TimeoutMS *int `json:"timeout_ms,omitempty"`
	// WaitUntil "input" is what a run always does besides waiting for the
	// prompt: it returns when the command waits for input.
	WaitUntil string `json:"wait_until,omitempty"`
}

// RunResult is the result of pty-run.
type RunResult struct {
	ID string `json:"id"`
	// Output is what the command printed: no echo of the command line, no
	// prompt.
	Output string `json:"output"`
	// ExitCode is the command's exit status, once the prompt has returned
	// (or the shell's own, once it exited).
	ExitCode *int `json:"exit_code,omitempty"`
	// PromptAfter is true when the prompt came back: the command ended.
	// False when the timeout ran out first or the command waits for input;
	// pty-write continues it, and the write during which the prompt returns
	// carries prompt_after and the exit code.
	PromptAfter bool   `json:"prompt_after"`
	Exited      bool   `json:"exited"`
	Signal      string `json:"signal,omitempty"`
	Truncated   int64  `json:"truncated,omitempty"`
	// OutputLost is as in StartResult.
	OutputLost  *int64 `json:"output_lost,omitempty"`
	InputHidden bool   `json:"input_hidden,omitempty"`
	State       string `json:"state"`
	Foreground  string `json:"foreground,omitempty"`
	// ForegroundExe is as in WriteResult.
	ForegroundExe string `json:"foreground_exe,omitempty"`
	// Spool is the reference Options.Spool returned for the whole output
	// when Output was cut to MaxOutputBytes; empty otherwise.
	Spool string `json:"spool,omitempty"`
	// Waited and StateGuessed are as in WriteResult; a run's Waited is
	// "exit" when the command ended.
	Waited       string `json:"waited,omitempty"`
	StateGuessed bool   `json:"state_guessed,omitempty"`
}

// shellArgv is what a shell session's start is asked about as: an
// interactive bash that reads no profile and no rc file of the user's.
// It runs as `bash --rcfile RC -i`, RC being the session's own (see
// shell.rc).
var shellArgv = []string{"bash", "--norc", "--noprofile", "-i"}

// shellPos is a place in the settled text: a line number and a byte
// offset in that line's text.
type shellPos struct{ line, off int }

// shell is the state of a shell session's prompt, followed through the
// OSC 133 marks the shell prints (A prompt start, B command start, C
// output start, D;status command end). Each mark carries the session's
// nonce, so a program printing a look-alike is not taken for the shell.
// Guarded by the session's mu: the settler calls onOSC while rendering.
type shell struct {
	nonce  string
	st     *settler
	prompt bool     // the shell shows its prompt: the last mark was A or B
	busy   bool     // a command runs: C came and its D has not
	from   shellPos // where the running (or last) command's output starts
	to     shellPos // where the last command's output ended
	status int      // the last command's exit status
	ends   int      // commands ended (D marks) so far
	// The bytes of lines no read had returned before the command's output
	// began (its echoed line): the settler's count of lost text holds
	// them too once the output's start is lost.
	preBytes int

	// The session's directory (in the manager's private one, or on the
	// backend's machine): the rcfile, and a file per pty-run holding its
	// command. files guards these fields and is held across the files'
	// I/O; it is taken without mu.
	files sync.Mutex
	fs    shellFiles
	dir   string   // "" once removed
	runs  int      // run files written so far
	stale []string // run files whose command may not have been read yet

	shown runShown // the commands, for the text read (runshown.go)
}

// newShell makes a shell session's directory and rcfile with fs: in the
// manager's private directory, or where a Backend runs its commands.
// snapshot, when set, is the login shell's snapshot to load first
// (Options.ShellSnapshot).
func newShell(ctx context.Context, fs shellFiles, num int, snapshot string) (*shell, error) {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	sh := &shell{nonce: hex.EncodeToString(b), fs: fs}
	dir, err := fs.mkdir(ctx, "pty-"+strconv.Itoa(num))
	if err != nil {
		return nil, err
	}
	sh.dir = dir
	// The path is typed: it must hold nothing readline acts on.
	if !utf8.ValidString(dir) || strings.ContainsFunc(dir, func(r rune) bool { return r < ' ' || r >= 0x7f && r < 0xa0 }) {
		sh.remove(ctx)
		return nil, errorf(ErrInvalid, "%s: the temporary directory %q holds a control character or invalid UTF-8, which cannot be typed", ToolStart, dir)
	}
	if err := fs.write(ctx, sh.rc(), sh.rcText(snapshot)); err != nil {
		sh.remove(ctx)
		return nil, err
	}
	return sh, nil
}

// argv is the shell's command line.
func (sh *shell) argv() []string { return []string{"bash", "--rcfile", sh.rc(), "-i"} }

func (sh *shell) rc() string { return sh.dir + "/rc" }

// rcText sets the prompt up. PS0 sets __agentpty_ran through an
// arithmetic offset that expands to nothing, so D follows only a command
// that ran (not an empty line). Nothing here is exported: a shell started
// inside prints no marks. History expansion is off, since runs are typed
// as a fixed line; those lines start with a space and stay out of the
// history. From an rcfile, not the environment, PROMPT_COMMAND keeps
// PIPESTATUS (bash 5.2 loses it when PROMPT_COMMAND was inherited).
func (sh *shell) rcText(snapshot string) string {
	mark := func(body string) string { return `\[\e]133;` + body + `;aid=` + sh.nonce + `\a\]` }
	load := ""
	if snapshot != "" {
		load = ". " + cmdline.ShellQuote(snapshot) + "\n"
	}
	return load + "set +H\n" +
		"HISTCONTROL=${HISTCONTROL:+$HISTCONTROL:}ignorespace\n" +
		"PS1='" + mark("A") + `\$ ` + mark("B") + "'\n" +
		"PS2=\n" +
		"PS0='${PS0:__agentpty_ran=1:0}" + mark("C") + "'\n" +
		"PROMPT_COMMAND='__agentpty_st=$?; [[ -n $__agentpty_ran ]] && " +
		`printf '\''\e]133;D;%s;aid=` + sh.nonce + `\a'\'' "$__agentpty_st"; unset __agentpty_ran'` + "\n" +
		"export -n PS0 PS1 PS2 PROMPT_COMMAND\n"
}

// attach makes the settler report the marks.
func (sh *shell) attach(st *settler) {
	sh.st = st
	st.oscHook = sh.onOSC
}

// onOSC follows one OSC string: 133;KIND[;STATUS];aid=NONCE.
func (sh *shell) onOSC(p []byte) {
	rest, ok := bytes.CutPrefix(p, []byte("133;"))
	if !ok || sh.st.alt {
		return
	}
	rest, ok = bytes.CutSuffix(rest, []byte(";aid="+sh.nonce))
	if !ok || len(rest) == 0 {
		return
	}
	switch rest[0] {
	case 'A', 'B':
		sh.prompt = true
	case 'C':
		if !sh.busy {
			sh.busy, sh.from = true, sh.st.cursorPos()
			sh.preBytes = 0
			for i := sh.st.firstTouched(); i >= 0 && i < sh.from.line; i = sh.st.nextTouched(i) {
				sh.preBytes += int(sh.st.line(i).n) + 1
			}
		}
		sh.prompt = false
	case 'D':
		if !sh.busy {
			return
		}
		code, err := strconv.Atoi(string(bytes.TrimPrefix(rest[1:], []byte(";"))))
		if err != nil {
			code = -1
		}
		sh.busy, sh.to, sh.status = false, sh.st.cursorPos(), code
		sh.ends++
	}
}

// lost returns the bytes and lines of the running (or last) command's
// output that the scrollback dropped before anyone read them. Call with
// the session's mu held.
func (sh *shell) lost() (bytes, lines int) {
	st := sh.st
	if st.lines == nil || sh.from.line >= st.base {
		return 0, 0
	}
	return max(st.lostBytes-sh.preBytes, 0), st.base - sh.from.line
}

// The marks as the session reads them; call these with the session's mu
// held, as the settler holds it while it reports a mark.

// running reports whether a command runs: its C mark came and its D has
// not.
func (sh *shell) running() bool { return sh.busy }

// showsPrompt reports whether the shell shows its prompt: the last mark
// was A or B.
func (sh *shell) showsPrompt() bool { return sh.prompt }

// endCount is how many commands have ended (D marks) so far.
func (sh *shell) endCount() int { return sh.ends }

// lastStatus is the exit status of the last command that ended.
func (sh *shell) lastStatus() int { return sh.status }

// output is the settled text of the command's output: the last command's
// once done, else what the running one printed so far ("" when none
// runs).
func (sh *shell) output(done bool) string {
	switch {
	case done:
		return sh.st.textBetween(sh.from, sh.to)
	case sh.busy:
		return sh.st.textBetween(sh.from, sh.st.cursorPos())
	}
	return ""
}

// showRuns puts each pty-run command back in t where the shell echoed the
// line that sources its run file (runShown.text); nil leaves t as it is.
func (sh *shell) showRuns(t string) string {
	if sh == nil {
		return t
	}
	return sh.shown.text(t)
}

// showRunLines is showRuns on each of ls, in place.
func (sh *shell) showRunLines(ls []string) []string {
	if sh == nil {
		return ls
	}
	return sh.shown.lines(ls)
}

// handOver writes command to a new run file and returns the line that
// runs it: the file sourced at the top level, so that bash executes
// exactly the text the Approver judged, parsed as a script, while neither
// readline nor the terminal ever sees it (no history expansion, no
// bracketed-paste end, no Ctrl-C or carriage return in it). The line
// starts by cancelling a key sequence left pending at the prompt (C-g:
// after C-x, C-e would edit and execute the line), then goes to the end of
// whatever was typed there and kills it (C-e C-u), so it is the only
// thing on the line.
func (sh *shell) handOver(ctx context.Context, command string) (string, string, error) {
	sh.files.Lock()
	defer sh.files.Unlock()
	if sh.dir == "" {
		return "", "", errors.New("the shell's directory is gone")
	}
	// The commands before this one have ended: their files were read.
	for _, f := range sh.stale {
		sh.fs.removeRun(f)
	}
	sh.stale = nil
	sh.runs++
	path := sh.dir + "/" + strconv.Itoa(sh.runs)
	if err := sh.fs.write(ctx, path, command); err != nil {
		return "", "", err
	}
	sh.shown.add(sh.dir, sh.runs, command)
	return path, "\x07\x05\x15 . " + cmdline.ShellQuote(path) + "\r", nil
}

// done removes a run file once its command has ended; left keeps it until
// the next run, for a command that may not have been read yet.
func (sh *shell) done(path string, ended bool) {
	sh.files.Lock()
	defer sh.files.Unlock()
	if ended || sh.dir == "" {
		sh.fs.removeRun(path)
		return
	}
	sh.stale = append(sh.stale, path)
}

// remove deletes the session's directory, within ctx on another machine;
// nil does nothing.
func (sh *shell) remove(ctx context.Context) {
	if sh == nil {
		return
	}
	sh.files.Lock()
	defer sh.files.Unlock()
	if sh.dir != "" {
		sh.fs.removeAll(ctx, sh.dir)
		sh.dir, sh.stale = "", nil
	}
}

// cursorPos is where the cursor stands in the settled text.
func (s *settler) cursorPos() shellPos {
	var b []byte
	for _, v := range s.cells[:min(s.col, settleExtent(s.cells))] {
		b = s.appendCell(b, v, 0)
	}
	return shellPos{s.cur, len(b)}
}

// textBetween returns the settled text from one place to another, lines
// joined by "\n", without a last line break. Lines the scrollback dropped
// are left out.
func (s *settler) textBetween(from, to shellPos) string {
	if s.lines == nil {
		return ""
	}
	s.sync()
	var b strings.Builder
	first := max(from.line, s.base)
	for i := first; i <= min(to.line, s.lastLine()); i++ {
		t := s.text(i)
		lo, hi := 0, len(t)
		if i == from.line {
			lo = min(from.off, hi)
		}
		if i == to.line {
			hi = min(to.off, hi)
		}
		if i > first {
			b.WriteByte('\n')
		}
		if lo < hi {
			b.Write(t[lo:hi])
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// runLines is a run's output in lines, as elide reads them.
type runLines []string

func (r runLines) firstTouched() int { return min(len(r), 1) - 1 }
func (r runLines) lastLine() int     { return len(r) - 1 }
func (r runLines) text(i int) []byte { return []byte(r[i]) }

func (r runLines) nextTouched(i int) int {
	if i+1 < len(r) {
		return i + 1
	}
	return -1
}

func (r runLines) prevTouched(i int) int { return min(i, len(r)) - 1 }

// capRun cuts a run's output to limit as a read's is cut (whole lines,
// head and tail around a marker, see elide), the lines the scrollback
// lost before it counted in the marker. whole is the output uncut, for
// the spool, when anything was left out.
func capRun(out string, limit, lostBytes, lostLines int) (capped, whole string) {
	if lostLines == 0 && (limit <= 0 || len(out) <= limit) {
		return out, ""
	}
	lines := strings.Split(out, "\n")
	capped = elide(runLines(lines), limit, len(out), lostBytes, lostLines, len(lines))
	if lostLines > 0 {
		out = settleMarker(lostBytes, lostLines) + "\n" + out
	}
	return capped, out
}

// Run types one command at a shell session's prompt and waits for the
// prompt to return, as the tool pty-run does.
func (m *Manager) Run(ctx context.Context, req RunRequest) (RunResult, error) {
	if err := checkRun(req); err != nil {
		return RunResult{}, err
	}
	s, err := m.lookup(ToolRun, req.ID)
	if err != nil {
		return RunResult{}, err
	}
	if s.sh == nil {
		return RunResult{}, errorf(ErrInvalid, "%s %s: not a shell session (pty-start with shell: true makes one); use pty-write to type into it", ToolRun, s.id)
	}
	if err := checkRunCommand(ToolRun+" "+s.id, req.Command); err != nil {
		return RunResult{}, err
	}
	// A shell session runs whatever it is given: every command is asked
	// about, whatever Options.ApproveWrites says.
	cols, rows := s.size()
	ar := ApprovalRequest{Tool: ToolRun, ID: s.id, Command: req.Command, Cols: cols, Rows: rows}
	if err := m.approve(ctx, ar); err != nil {
		return RunResult{}, err
	}
	limit := defaultRunTimeout
	if req.TimeoutMS != nil {
		limit = time.Duration(*req.TimeoutMS) * time.Millisecond
	}
	leave, err := s.turn(ctx, ToolRun)
	if err != nil {
		return RunResult{}, err
	}
	defer leave()
	return runCommand(ctx, s, req.Command, time.Now().Add(min(limit, maxWait)))
}

// runCommand types command at s's prompt and waits until its D mark, the
// command waits for input, the shell exits or the deadline passes.
func runCommand(ctx context.Context, s *Session, command string, deadline time.Time) (RunResult, error) {
	defer s.clock.use()()
	if st, exited := s.ended(); exited {
		return RunResult{}, errorf(ErrExited, "%s %s: the shell has exited (%s)", ToolRun, s.id, st)
	}
	s.mu.Lock()
	busy := s.sh.running()
	s.mu.Unlock()
	if busy {
		return RunResult{}, errorf(ErrInvalid, "%s %s: a command is still running; continue it with pty-write (\\x03 interrupts it)", ToolRun, s.id)
	}
	// The first prompt may still be on its way.
	if err := waitOn(s, deadline).awaitCond(ctx, func() bool { return atPrompt(s) }); err != nil {
		return RunResult{}, err
	}
	s.mu.Lock()
	prompt, ends := s.sh.showsPrompt(), s.sh.endCount()
	s.mu.Unlock()
	if !prompt {
		w := s.collect(false, false, false)
		return w.runResult(s.id, TerminalState{State: StateRunning}, false, "", ""), nil
	}
	s.collect(false, false, false) // what came before the command is not its output
	file, input, err := s.sh.handOver(ctx, command)
	if err != nil {
		return RunResult{}, fmt.Errorf("agentpty: %s %s: hand the command to the shell: %w", ToolRun, s.id, err)
	}
	// The command is not typed: recordings that keep input name it in an
	// asciicast marker.
	tapInput(s, 'm', []byte(command))
	if n, err := s.typeInput(ctx, []byte(input), deadline); err != nil {
		s.sh.done(file, false)
		return RunResult{}, fmt.Errorf("agentpty: %s %s: typed %d of %d bytes: %w", ToolRun, s.id, n, len(input), err)
	}
	if err := awaitRunEnd(ctx, s, deadline, ends); err != nil {
		s.sh.done(file, false)
		return RunResult{}, err
	}
	_, done := shellEnded(s, ends)
	s.sh.done(file, done)
	if done {
		// The prompt is on its way; the state a moment later says so.
		settle := time.Now().Add(promptSettle)
		if deadline.Before(settle) {
			settle = deadline
		}
		_ = waitOn(s, settle).awaitCond(ctx, func() bool { return readingPrompt(s) })
	}
	return runCollect(s, done), nil
}

// awaitRunEnd waits until s's shell has ended more than ends commands,
// the command waits for input, the shell exits or the deadline passes.
func awaitRunEnd(ctx context.Context, s *Session, deadline time.Time, ends int) error {
	ended := func() (bool, bool) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.sh.endCount() > ends, s.sh.running()
	}
	return waitOn(s, deadline).awaitCond(ctx, func() bool {
		if done, busy := ended(); done || !busy {
			return done
		}
		// The state before the marks: waiting_input means every byte is
		// rendered, so a D that came before it is seen below.
		state := s.State()
		done, _ := ended()
		return done || state.State == StateWaitingInput
	})
}

// runCollect is a run's result once its command is done, or waits: the
// command's own output, or what it printed so far and its screen.
func runCollect(s *Session, done bool) RunResult {
	var state TerminalState
	s.mu.Lock()
	out := s.sh.output(done)
	lostBytes, lostLines := s.sh.lost()
	alt := s.text.settler().altScreen()
	s.mu.Unlock()
	w := s.collect(false, false, false)
	if alt && !done { // a full-screen program waits: its screen, as pty-write shows it
		if out != "" {
			out += "\n"
		}
		s.readScreen(callLimit(), func(d *display) {
			out += d.snapshot().Text() // the text only: Screen() would copy every cell
		})
	}
	state = s.State()
	out, whole := capRun(out, s.m.opts.MaxOutputBytes, lostBytes, lostLines)
	res := w.runResult(s.id, state, done, out, s.m.spool(s.id, whole))
	if done && !w.exited {
		code, _ := shellEnded(s, -1)
		res.PromptAfter, res.ExitCode = true, &code
	}
	return res
}

// shellEnds is how many commands s's shell has ended so far, -1 outside a
// shell session.
func shellEnds(s *Session) int {
	if s.sh == nil {
		return -1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sh.endCount()
}

// shellEnded reports the exit status of the last command when one ended
// since shellEnds returned ends.
func shellEnded(s *Session, ends int) (int, bool) {
	if s.sh == nil {
		return 0, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sh.lastStatus(), s.sh.endCount() > ends
}

// approvedCommand is what the Approver is asked to start.
func approvedCommand(req StartRequest) string {
	if req.Shell && strings.TrimSpace(req.Command) == "" {
		return strings.Join(shellArgv, " ")
	}
	return req.Command
}

// awaitShellStart is Start's wait in shell session s: for the first prompt,
// then for the first command when one is given.
func awaitShellStart(ctx context.Context, s *Session, req StartRequest) (StartResult, error) {
	leave, err := s.turn(ctx, ToolStart)
	if err != nil {
		return StartResult{ID: s.id}, err
	}
	defer leave()
	limit := defaultRunTimeout
	if req.WaitMS != nil {
		limit = time.Duration(*req.WaitMS) * time.Millisecond
	}
	deadline := time.Now().Add(min(limit, maxWait))
	if strings.TrimSpace(req.Command) != "" {
		r, err := runCommand(ctx, s, req.Command, deadline)
		if err != nil {
			return StartResult{ID: s.id}, err
		}
		return startFromRun(r), nil
	}
	defer s.clock.use()()
	if err := waitOn(s, deadline).awaitCond(ctx, func() bool { return readingPrompt(s) }); err != nil {
		return StartResult{ID: s.id}, err
	}
	st := s.State()
	w := s.collect(false, false, true)
	w.state = resultState(st, w.exited)
	w.waited = waitedHow(false, w.exited, true, false, w.state)
	return w.startResult(s.id), nil
}

// readingPrompt reports whether s's shell shows its prompt and reads it.
// The state comes first: waiting_input means the prompt's mark, printed
// before it, has been rendered. A terminal that cannot tell has only the
// mark.
func readingPrompt(s *Session) bool {
	if _, ok := s.term.(StateReader); !ok {
		return atPrompt(s)
	}
	return s.State().State == StateWaitingInput && atPrompt(s)
}

// atPrompt reports whether s's shell shows its prompt.
func atPrompt(s *Session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sh.showsPrompt()
}
