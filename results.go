package agentpty

import "time"

// One builder per result type: every path that returns a result fills it
// here, so a field (spool, a screen mode's cursor) reaches all of them.

// startResult is a start's result from what its wait collected.
func (w waitResult) startResult(id string) StartResult {
	return StartResult{ID: id, Output: w.output, Matched: w.matched, Exited: w.exited,
		ExitCode: w.exitCode, Signal: w.signal, Truncated: w.truncated, OutputLost: w.outputLost(), Spool: w.spool,
		InputHidden: w.inputHidden, State: w.state.State, Foreground: w.state.Foreground, ForegroundExe: w.foregroundExe,
		Cursor: w.cursor, Highlights: w.highlights, Waited: w.waited, StateGuessed: w.state.Guessed}
}

// startFromRun is a shell session's start whose first command ran.
func startFromRun(r RunResult) StartResult {
	return StartResult{ID: r.ID, Output: r.Output, Exited: r.Exited, ExitCode: r.ExitCode, Signal: r.Signal, Spool: r.Spool,
		Truncated: r.Truncated, OutputLost: r.OutputLost, InputHidden: r.InputHidden, State: r.State, Foreground: r.Foreground,
		ForegroundExe: r.ForegroundExe, PromptAfter: r.PromptAfter, Waited: r.Waited, StateGuessed: r.StateGuessed}
}

// writeResult is a write's result from what its wait collected.
func (w waitResult) writeResult(id string) WriteResult {
	return WriteResult{ID: id, Output: w.output, Matched: w.matched, Exited: w.exited, ExitCode: w.exitCode,
		Signal: w.signal, Truncated: w.truncated, OutputLost: w.outputLost(), InputHidden: w.inputHidden, Spool: w.spool,
		State: w.state.State, Foreground: w.state.Foreground, ForegroundExe: w.foregroundExe,
		Cursor: w.cursor, Highlights: w.highlights, Waited: w.waited, StateGuessed: w.state.Guessed}
}

// runResult is a run's result from what collect took, with the command's
// own output and the spool's reference to the whole of it. done: the
// command ended.
func (w waitResult) runResult(id string, state TerminalState, done bool, out, spool string) RunResult {
	state = resultState(state, w.exited)
	return RunResult{ID: id, Output: out, ExitCode: w.exitCode, Exited: w.exited, Signal: w.signal,
		Truncated: w.truncated, OutputLost: w.outputLost(), InputHidden: state.InputHidden, State: state.State, Foreground: state.Foreground,
		ForegroundExe: w.foregroundExe, Spool: spool,
		Waited: waitedHow(false, done || w.exited, !done, false, state), StateGuessed: state.Guessed}
}

// killResult is a kill's result: what no result returned yet, and how the
// program ended. Call with mu held; spool is handed the whole output
// after (see Manager.spool).
func (s *Session) killResult() (KillResult, string) {
	out, whole := s.text.settler().readWhole(s.m.opts.MaxOutputBytes, s.m.opts.Spool != nil, false)
	out, whole = s.sh.showRuns(out), s.sh.showRuns(whole)
	truncated, lost := s.text.readTo(s.out.rendered(), s.out.start())
	res := KillResult{ID: s.id, Output: out, Truncated: truncated, OutputLost: outputLost(truncated, lost)}
	st, _ := s.text.ended()
	res.ExitCode, res.Signal = st.exitFields()
	return res, whole
}

// waitResult is what a wait collected, shared by start and write.
type waitResult struct {
	output      string
	matched     bool
	exited      bool
	exitCode    *int
	signal      string
	truncated   int64
	lost        int64 // of truncated, what this result's output lost
	inputHidden bool
	// foregroundExe is the executable of the program at a password
	// prompt, while inputHidden.
	foregroundExe string
	spool         string
	state         TerminalState
	waited        string      // why the wait ended (WaitedMatch, ...)
	cursor        *Cursor     // with a screen mode (screenview.go)
	highlights    []Highlight // ...
}

// collect takes everything new as one result and marks it read; a peek
// marks nothing read. Without spool, Options.Spool is not handed the
// output, for a caller that returns an output of its own (pty-run).
func (s *Session) collect(matched, peek, spool bool) waitResult {
	s.mu.Lock()
	_, rows := s.text.size()
	redrawn := s.text.settler().redrawn(rows) // a redraw in place shows as its screen (screenview.go)
	var before string                         // ... after the text that came before it
	if redrawn {
		before = s.text.settler().textBeforeRedraw(s.m.opts.MaxOutputBytes / 2)
	}
	out, whole := s.text.settler().readWhole(s.m.opts.MaxOutputBytes, spool && s.m.opts.Spool != nil, peek)
	truncated, lost := s.text.wouldLose(s.out.start()) // a peek loses what a read would, and counts nothing
	if !peek {
		truncated, lost = s.text.readTo(s.out.rendered(), s.out.start())
	}
	st, exited := s.text.ended()
	w := waitResult{matched: matched, exited: exited, truncated: truncated, lost: lost}
	if exited {
		w.exitCode, w.signal = st.exitFields()
	}
	alt := s.text.settler().altScreen()
	s.mu.Unlock()

	if alt || redrawn {
		var scr Screen
		if !s.readScreen(callLimit(), func(d *display) { scr = d.read(alt, peek) }) {
			// The display is far behind: the text says more than a stale
			// screen of a redraw; a full-screen program's is the best
			// there is.
			redrawn = false
		}
		switch {
		case alt:
			out = joinScreen(out, scr.Text())
			if whole != "" {
				whole = joinScreen(whole, scr.Text())
			}
		case redrawn:
			out, whole = joinScreen(before, scr.Text()), "" // the frames' text mixed together: the screen says it
		}
	} else if !peek {
		s.disp.forgetShown()
	}
	w.output = s.sh.showRuns(out)
	w.spool = s.m.spool(s.id, s.sh.showRuns(whole))
	// EchoOff, from the last state read while it may be reused.
	if st, ok := s.seen.reuse(s.stamp(), time.Now()); ok {
		w.inputHidden = st.InputHidden
	} else {
		w.inputHidden = terminalEchoOff(s.term)
	}
	if w.inputHidden {
		_, w.foregroundExe = promptProgram(s.m.programs(), s.term)
	}
	noteHidden(s, w.inputHidden)
	return w
}

// outputLost is the result field output_lost: shown whenever truncated
// is, so a model that reads the session's count also reads whether this
// output is whole (0).
func outputLost(truncated, lost int64) *int64 {
	if truncated == 0 && lost == 0 {
		return nil
	}
	return &lost
}

// outputLost is outputLost of what the wait collected.
func (w waitResult) outputLost() *int64 { return outputLost(w.truncated, w.lost) }

// joinScreen appends the rendered screen to a read's text.
func joinScreen(out, screen string) string {
	if out != "" {
		out += "\n"
	}
	return out + screen
}
