package agentpty

import (
	"context"
	"encoding/json"
	"strings"
	"time"
)

// ToolList is the tool that lists the sessions, so that a model that lost
// its context, or a second agent, can find a program started earlier.
const ToolList = "pty-list"

// ListRequest is the argument of pty-list; it has no fields.
type ListRequest struct{}

// ListResult is the result of pty-list.
type ListResult struct {
	// Sessions are the sessions not yet killed, oldest first.
	Sessions []ListedSession `json:"sessions"`
}

// ListedSession is one session in pty-list's result.
type ListedSession struct {
	ID      string `json:"id"`
	Command string `json:"command"`
	// State and Foreground are as in WriteResult.
	State      string `json:"state"`
	Foreground string `json:"foreground,omitempty"`
	// AgeSeconds is how long ago the session started, in whole seconds.
	AgeSeconds int64 `json:"age_seconds"`
	// LastLine is the last non-blank line of the settled output, read or
	// not; listing reads nothing, so the next pty-write still returns it.
	LastLine string `json:"last_line,omitempty"`
	// ExitCode and Signal say how the program ended, once it has.
	ExitCode *int   `json:"exit_code,omitempty"`
	Signal   string `json:"signal,omitempty"`
}

// lastLineCap bounds a listed line: a status line, not a screenful.
const lastLineCap = 200

// lastLineScan is how many settled lines are looked through for one that
// is not blank (a prompt's empty line, a cleared status area).
const lastLineScan = 8

// ListSessions returns the sessions as the tool pty-list does. It reads no
// output: what a later pty-write returns is unchanged.
func (m *Manager) ListSessions(ctx context.Context) (ListResult, error) {
	if err := ctx.Err(); err != nil {
		return ListResult{}, err
	}
	res := ListResult{Sessions: []ListedSession{}}
	now := time.Now()
	for _, info := range m.List() {
		s, ok := m.Session(info.ID)
		if !ok {
			continue // killed while listing
		}
		st := s.State()
		ls := ListedSession{ID: info.ID, Command: info.Command, State: st.State, Foreground: st.Foreground,
			AgeSeconds: int64(now.Sub(info.Started) / time.Second), LastLine: lastLine(s.Tail(lastLineScan)),
			ExitCode: info.ExitCode, Signal: info.Signal}
		res.Sessions = append(res.Sessions, ls)
	}
	return res, nil
}

// lastLine is the last line of lines with text, trimmed and capped.
func lastLine(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" {
			continue
		}
		if r := []rune(l); len(r) > lastLineCap {
			l = string(r[:lastLineCap]) + "…"
		}
		return l
	}
	return ""
}

var listTool = Tool{
	Name:         ToolList,
	Title:        "List terminal sessions",
	Annotations:  ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
	OutputSchema: outputSchema(ListResult{}),
	Description: "List the terminal sessions that are still held (not killed): id, command, state, foreground program, age_seconds, " +
		"the last line of output, and exit_code or signal for those that ended. " +
		"Use it to find a session started earlier (a dev server, a long job) and continue it with pty-write. Reads no output.",
	InputSchema: json.RawMessage(`{
  "type": "object",
  "properties": {},
  "additionalProperties": false
}`),
}
