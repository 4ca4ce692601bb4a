package agentpty

// One builder per result type: every path that returns a result fills it
// here, so a field (spool, a screen mode's cursor) reaches all of them.

// startResult is a start's result from what its wait collected.
func (s *Session) startResult(w waitResult) StartResult {
	return StartResult{ID: s.id, Output: w.output, Matched: w.matched, Exited: w.exited,
		ExitCode: w.exitCode, Signal: w.signal, Truncated: w.truncated, Spool: w.spool,
		InputHidden: w.inputHidden, State: w.state.State, Foreground: w.state.Foreground, ForegroundExe: w.foregroundExe,
		Cursor: w.cursor, Highlights: w.highlights}
}

// startFromRun is a shell session's start whose first command ran.
func startFromRun(r RunResult) StartResult {
	return StartResult{ID: r.ID, Output: r.Output, Exited: r.Exited, ExitCode: r.ExitCode, Signal: r.Signal, Spool: r.Spool,
		Truncated: r.Truncated, InputHidden: r.InputHidden, State: r.State, Foreground: r.Foreground,
		ForegroundExe: r.ForegroundExe, PromptAfter: r.PromptAfter}
}

// writeResult is a write's result from what its wait collected.
func (s *Session) writeResult(w waitResult) WriteResult {
	return WriteResult{ID: s.id, Output: w.output, Matched: w.matched, Exited: w.exited, ExitCode: w.exitCode,
		Signal: w.signal, Truncated: w.truncated, InputHidden: w.inputHidden, Spool: w.spool,
		State: w.state.State, Foreground: w.state.Foreground, ForegroundExe: w.foregroundExe,
		Cursor: w.cursor, Highlights: w.highlights}
}

// runResult is a run's result from what collect took, with the command's
// own output and the whole of it for the spool; a zero state is taken now.
func (s *Session) runResult(w waitResult, state TerminalState, out, whole string) RunResult {
	if state.State == "" {
		state = s.State()
	}
	state = resultState(state, w.exited)
	return RunResult{ID: s.id, Output: out, ExitCode: w.exitCode, Exited: w.exited, Signal: w.signal,
		Truncated: w.truncated, InputHidden: state.InputHidden, State: state.State, Foreground: state.Foreground,
		ForegroundExe: w.foregroundExe, Spool: s.m.spool(s.id, whole)}
}

// killResult is a kill's result: what no result returned yet, and how the
// program ended. Call with mu held; spool is handed the whole output
// after (see Manager.spool).
func (s *Session) killResult() (KillResult, string) {
	out, whole := s.settle.readWhole(s.m.opts.MaxOutputBytes, s.m.opts.Spool != nil, false)
	res := KillResult{ID: s.id, Output: out, Truncated: s.readTo(s.settled.Load())}
	res.ExitCode, res.Signal = s.status.exitFields()
	return res, whole
}
