package agentpty

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// callView is what a pty-write asks for besides typing: how its result
// shows the screen, whether it consumes output, and what happens to the
// terminal before typing.
type callView struct {
	screen     string        // "", ScreenFull or ScreenDiff
	peek       bool          // the result consumes nothing
	signal     os.Signal     // sent to the foreground group before typing; nil for none
	cols, rows int           // the size to take before typing; 0 keeps the current one
	waitUntil  string        // "", "input" or "settled" (checkWaitUntil)
	settle     time.Duration // with "settled": how long the output must be still
	secret     bool          // the input is a secret: no copy is kept to tell its echo
}

// writeView checks a write's screen, signal and size arguments before
// anything reaches the session, so a bad one leaves it untouched; who
// names the call in the errors.
func writeView(who string, req WriteRequest) (callView, error) {
	v := callView{screen: req.Screen, peek: req.Peek, cols: req.Cols, rows: req.Rows, waitUntil: req.WaitUntil}
	if err := checkScreen(who, req.Screen); err != nil {
		return v, err
	}
	if err := checkSize(who, req.Cols, req.Rows); err != nil {
		return v, err
	}
	settle, err := settleFor(who, req.WaitUntil, req.SettleMS)
	if err != nil {
		return v, err
	}
	v.settle = settle
	if req.SendSignal != "" {
		sig, ok := parseSignal(req.SendSignal)
		if !ok {
			return v, errorf(ErrInvalid, "%s %s: send_signal %q is not a signal name (SIGINT, INT) or number", ToolWrite, req.ID, req.SendSignal)
		}
		v.signal = sig
	}
	return v, nil
}

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

// checkWriteSize refuses a write of more than maxWriteKeys keys or
// maxWriteBytes of input, before either is read.
func checkWriteSize(who string, req WriteRequest) error {
	if n := len(req.Keys); n > maxWriteKeys {
		return errorf(ErrInvalid, "%s: %d keys, more than the %d one write may press", who, n, maxWriteKeys)
	}
	if n := len(req.Input); n > maxWriteBytes {
		return errorf(ErrInvalid, "%s: input is %d bytes, more than the %d one write may type", who, n, maxWriteBytes)
	}
	return nil
}

// signalNumber reads a signal given as a number ("2"), or reports false.
func signalNumber(name string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(name))
	return n, err == nil
}

// signalName spells a signal as the kernel's tables do: "int" and
// "SIGINT" both become "SIGINT".
func signalName(name string) string {
	name = strings.ToUpper(strings.TrimSpace(name))
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	return name
}

// beforeTyping does what a write asks before its input: it snapshots the
// screen for a diff, resizes the terminal, and signals the foreground
// group, in that order. It returns the snapshot (nil without a diff).
func (s *Session) beforeTyping(v callView) (*screenView, error) {
	var before *screenView
	if v.screen == ScreenDiff {
		b := s.view()
		before = &b
	}
	if v.cols > 0 || v.rows > 0 {
		cols, rows := s.size()
		if v.cols > 0 {
			cols = v.cols
		}
		if v.rows > 0 {
			rows = v.rows
		}
		if err := s.Resize(cols, rows); err != nil {
			return nil, err
		}
	}
	if v.signal != nil {
		if err := s.Signal(v.signal); err != nil {
			return nil, err
		}
	}
	return before, nil
}
