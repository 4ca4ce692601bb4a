package agentpty

import (
	"regexp"
	"strings"
	"time"

	"github.com/agentpty/agentpty/internal/cmdline"
)

// The validator: every request a tool or method takes is checked here,
// whole, before the session is looked up and before anything is typed, so
// a bad one leaves the session as it was. Each check wraps ErrInvalid (or
// ErrUnsupported, for a terminal that cannot do what is asked) and names
// the call and the value; who names the call ("pty-write pty-3").

// What one write may type, checked before anything is decoded or
// converted: more keys than a person presses in an hour, more text than
// any command line, are a mistake or an attack on the host's memory.
const (
	maxWriteKeys  = 4096
	maxWriteBytes = 1 << 20
	// maxArgsBytes bounds a call's JSON: input of maxWriteBytes, each
	// byte spelt as a \u escape, fits.
	maxArgsBytes = 8 << 20
)

// checkStart checks a start and returns its wait.
func checkStart(req StartRequest) (*waiter, error) {
	if strings.TrimSpace(req.Command) == "" && !req.Shell {
		return nil, errorf(ErrInvalid, "%s: command is empty", ToolStart)
	}
	if req.Shell && strings.TrimSpace(req.Command) != "" {
		if err := checkRunCommand(ToolStart, req.Command); err != nil {
			return nil, err
		}
	}
	if err := checkWaitUntil(ToolStart, "", req.WaitUntil); err != nil {
		return nil, err
	}
	settle, err := settleFor(ToolStart, req.WaitUntil, req.SettleMS)
	if err != nil {
		return nil, err
	}
	if len(req.Command) > cmdline.MaxBytes {
		return nil, errorf(ErrInvalid, "%s: command is %d bytes; exec takes at most %d", ToolStart, len(req.Command), cmdline.MaxBytes)
	}
	if err := checkSize(ToolStart, req.Cols, req.Rows); err != nil {
		return nil, err
	}
	if err := checkWaitMS(ToolStart, req.WaitMS); err != nil {
		return nil, err
	}
	if err := checkScreen(ToolStart, req.Screen); err != nil {
		return nil, err
	}
	w, err := checkPattern(ToolStart, req.WaitFor, req.WaitForRegex)
	if err != nil {
		return nil, err
	}
	w.waitMS, w.until = req.WaitMS, untilFor(req.WaitUntil, settle)
	w.view.screen = req.Screen
	return w, nil
}

// checkWrite checks a write and returns its wait, with what it asks for
// besides typing, and the keys it presses.
func checkWrite(req WriteRequest) (*waiter, []key, error) {
	who := ToolWrite + " " + req.ID
	if err := checkWaitMS(who, req.WaitMS); err != nil {
		return nil, nil, err
	}
	if err := checkWaitUntil(ToolWrite, req.ID, req.WaitUntil); err != nil {
		return nil, nil, err
	}
	v := callView{screen: req.Screen, peek: req.Peek, cols: req.Cols, rows: req.Rows}
	if err := checkScreen(who, req.Screen); err != nil {
		return nil, nil, err
	}
	if err := checkSize(who, req.Cols, req.Rows); err != nil {
		return nil, nil, err
	}
	settle, err := settleFor(who, req.WaitUntil, req.SettleMS)
	if err != nil {
		return nil, nil, err
	}
	if req.SendSignal != "" {
		sig, ok := parseSignal(req.SendSignal)
		if !ok {
			return nil, nil, errorf(ErrInvalid, "%s: send_signal %q is not a signal name (SIGINT, INT) or number", who, req.SendSignal)
		}
		v.signal = sig
	}
	w, err := checkPattern(who, req.WaitFor, req.WaitForRegex)
	if err != nil {
		return nil, nil, err
	}
	w.waitMS, w.until, w.view = req.WaitMS, untilFor(req.WaitUntil, settle), v
	if n := len(req.Keys); n > maxWriteKeys {
		return nil, nil, errorf(ErrInvalid, "%s: %d keys, more than the %d one write may press", who, n, maxWriteKeys)
	}
	if n := len(req.Input); n > maxWriteBytes {
		return nil, nil, errorf(ErrInvalid, "%s: input is %d bytes, more than the %d one write may type", who, n, maxWriteBytes)
	}
	keys, err := parseKeys(who, req.Keys)
	if err != nil {
		return nil, nil, err
	}
	return w, keys, nil
}

// checkSecret checks a secret's write (op names the method) and returns
// its wait.
func checkSecret(op string, req SecretRequest) (*waiter, error) {
	who := op + " " + req.ID
	if err := checkWaitMS(who, req.WaitMS); err != nil {
		return nil, err
	}
	if err := checkWaitUntil(op, req.ID, req.WaitUntil); err != nil {
		return nil, err
	}
	w, err := checkPattern(who, req.WaitFor, req.WaitForRegex)
	if err != nil {
		return nil, err
	}
	if err := checkID(op, req.ID); err != nil {
		return nil, err
	}
	if len(req.Secret) == 0 {
		return nil, errorf(ErrInvalid, "%s: the secret is empty", who)
	}
	for _, b := range req.Secret {
		if b < 0x20 || b == 0x7f {
			return nil, errorf(ErrInvalid, "%s: the secret holds a control byte, which the terminal would act on", who)
		}
	}
	settle, _ := settleFor(who, req.WaitUntil, nil) // "settled" waits its default
	w.waitMS, w.until = req.WaitMS, untilFor(req.WaitUntil, settle)
	w.view.secret = true
	return w, nil
}

// checkID refuses a call on a session (write, run, kill, secret) that
// names none.
func checkID(tool, id string) error {
	if id == "" {
		return errorf(ErrInvalid, "%s: id is missing", tool)
	}
	return nil
}

// checkRun checks a run's timeout and wait; its command is checked by
// checkRunCommand once the session is known to be a shell session.
func checkRun(req RunRequest) error {
	if req.TimeoutMS != nil && *req.TimeoutMS < 0 {
		return errorf(ErrInvalid, "%s %s: timeout_ms %d is negative", ToolRun, req.ID, *req.TimeoutMS)
	}
	return checkWaitUntil(ToolRun, req.ID, req.WaitUntil)
}

// checkRunCommand refuses a command a shell session cannot run as it was
// judged: bash drops NUL bytes from what it reads, so "r\x00m" would be
// judged as one word and run as rm.
func checkRunCommand(who, command string) error {
	if strings.TrimSpace(command) == "" {
		return errorf(ErrInvalid, "%s: command is empty", who)
	}
	if i := strings.IndexByte(command, 0); i >= 0 {
		return errorf(ErrInvalid, "%s: command holds a NUL byte at %d, which bash would drop", who, i)
	}
	return nil
}

// checkPattern checks a call's wait_for and wait_for_regex and returns a
// wait for them; neither is a wait for no pattern.
func checkPattern(who, lit, pattern string) (*waiter, error) {
	switch {
	case lit != "" && pattern != "":
		return nil, errorf(ErrInvalid, "%s: give wait_for or wait_for_regex, not both", who)
	case pattern != "":
		re, err := regexp.Compile(pattern)
		if err != nil {
			return nil, errorf(ErrInvalid, "%s: wait_for_regex %q is not an RE2 pattern: %v", who, pattern, err)
		}
		return &waiter{re: re}, nil
	case lit != "":
		return literalWait(lit), nil
	}
	return &waiter{}, nil
}

// checkWaitMS refuses a negative wait_ms.
func checkWaitMS(who string, waitMS *int) error {
	if waitMS != nil && *waitMS < 0 {
		return errorf(ErrInvalid, "%s: wait_ms %d is negative", who, *waitMS)
	}
	return nil
}

// untilFor is the wait a checked wait_until asks for, with settle from
// settleFor.
func untilFor(waitUntil string, settle time.Duration) untilMode {
	return untilMode{input: waitUntil == WaitUntilInput, settle: settle}
}

// checkWaitUntil checks a request's wait_until.
func checkWaitUntil(tool, id, v string) error {
	run := tool == ToolRun // a run waits for its prompt: nothing to settle
	if v == "" || v == WaitUntilInput || v == WaitUntilSettled && !run {
		return nil
	}
	if id != "" {
		tool += " " + id
	}
	if run {
		return errorf(ErrInvalid, "%s: wait_until %q is not %q", tool, v, WaitUntilInput)
	}
	return errorf(ErrInvalid, "%s: wait_until %q is not %q or %q", tool, v, WaitUntilInput, WaitUntilSettled)
}

// checkInputWait refuses wait_until "input" (input) where the terminal
// cannot tell that its program waits for input: a wait would only run out.
func checkInputWait(who string, term Terminal, input bool) error {
	if _, ok := term.(StateReader); ok || !input {
		return nil
	}
	return errorf(ErrUnsupported, "%s: wait_until %q: this session's terminal cannot tell when its program waits for input", who, WaitUntilInput)
}

// settleFor checks a request's settle_ms against its wait_until and
// returns how long a settled wait needs the output still.
func settleFor(who, waitUntil string, settleMS *int) (time.Duration, error) {
	if settleMS == nil {
		if waitUntil == WaitUntilSettled {
			return defaultSettle, nil
		}
		return 0, nil
	}
	if waitUntil != WaitUntilSettled {
		return 0, errorf(ErrInvalid, "%s: settle_ms %d applies only with wait_until %q", who, *settleMS, WaitUntilSettled)
	}
	d := time.Duration(*settleMS) * time.Millisecond
	if d <= 0 || d > maxSettle {
		return 0, errorf(ErrInvalid, "%s: settle_ms %d is outside 1-%d", who, *settleMS, maxSettle.Milliseconds())
	}
	return d, nil
}

// checkSize checks a request's cols and rows: 0 means the default (or,
// on a write, the current size); anything else must be within the limits.
func checkSize(who string, cols, rows int) error {
	if cols < 0 || cols > maxCols {
		return errorf(ErrInvalid, "%s: cols %d is outside 1-%d", who, cols, maxCols)
	}
	if rows < 0 || rows > maxRows {
		return errorf(ErrInvalid, "%s: rows %d is outside 1-%d", who, rows, maxRows)
	}
	return nil
}

// checkResize checks Resize's size, where 0 has no meaning.
func checkResize(id string, cols, rows int) error {
	if cols < 1 || cols > maxCols || rows < 1 || rows > maxRows {
		return errorf(ErrInvalid, "%s: size %dx%d is outside 1-%d columns by 1-%d rows", id, cols, rows, maxCols, maxRows)
	}
	return nil
}

// checkScreen reports a screen mode other than "", "full" and "diff".
func checkScreen(who, mode string) error {
	switch mode {
	case "", ScreenFull, ScreenDiff:
		return nil
	}
	return errorf(ErrInvalid, "%s: screen %q is not %q or %q", who, mode, ScreenFull, ScreenDiff)
}
