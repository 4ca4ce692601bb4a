package agentpty

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"
	"unicode/utf8"
)

// Record writes the session from now on to w as an asciicast v2 recording
// (the format of asciinema: `asciinema play` and `asciinema cat` read it).
// The header gives the terminal's size, the time, the command and TERM; the
// first event redraws the screen as it is now, so a recording started late
// plays back right; then come "o" events with the output, "r" events with
// resizes, and "i" events with what is typed when Options.RecordInput is
// set (never input typed while echo is off, never a secret given to
// WriteSecret, which is masked in the output too), with an "m" marker
// naming each pty-run command, which is handed to the shell untyped.
//
// Record returns once the header and the first event are written; the
// rest is written by a goroutine of the recording's own, which reads the
// session's scrollback at w's pace: a slow w never slows the session. When
// w falls a whole scrollback (Options.ScrollbackBytes) behind, the
// recording skips to the screen as it is then, redrawn. The recording ends
// when the program's output is complete (it has exited), when the session
// is killed (Kill returns once the recording is written, waiting at most
// KillGrace for w), or at w's first error. Several recordings may run at
// once.
//
// Record gives no way to know when the last event is written; to close a
// file after it, use StartRecording and its Stop.
func (s *Session) Record(w io.Writer) error {
	_, err := s.StartRecording(w)
	return err
}

// StartRecording starts a recording as Record does and returns it, so the
// caller can end it and know when w has everything: call Stop (after the
// session's Wait when the recording should hold the program's whole
// output), then close w.
func (s *Session) StartRecording(w io.Writer) (*Recording, error) {
	r := newRecorder(w)
	t := newTap(s.m.opts.RecordInput, r.event)
	redraw, cols, rows, err := startTap(s, t, "record")
	if err != nil {
		return nil, err
	}
	shell := s.m.opts.Shell
	if s.sh != nil {
		shell = shellArgv
	}
	if err = r.header(cols, rows, s.command, shell); err == nil {
		err = r.event('o', redraw)
	}
	if err != nil {
		s.taps.drop(t)
		return nil, fmt.Errorf("agentpty: %s: record: %w", s.id, err)
	}
	go runTap(s, t)
	return &Recording{t: t, id: s.id}, nil
}

// Recording is a recording under way (Session.StartRecording).
type Recording struct {
	t  *tap
	id string // the session's
}

// Stop ends the recording once everything the session has rendered so far
// is written to w, and returns then: w may be closed after it. It returns
// w's error if one ended the recording, and ctx's (wrapped) if ctx ends
// first, leaving the writer to finish on its own. Once the program has
// exited and the session's Wait has returned, that is the whole output.
// Stop may be called more than once, and after the recording ended by
// itself.
func (r *Recording) Stop(ctx context.Context) error {
	if err := r.t.stopWait(ctx); err != nil {
		return fmt.Errorf("agentpty: %s: record: stop: %w", r.id, err)
	}
	if err := r.t.failure(); err != nil {
		return fmt.Errorf("agentpty: %s: record: %w", r.id, err)
	}
	return nil
}

// Done is closed when the recording has ended: stopped, the program's
// output complete, the session killed, or w failed.
func (r *Recording) Done() <-chan struct{} { return r.t.ended() }

// recorder writes asciicast v2 lines.
type recorder struct {
	w     io.Writer
	start time.Time
	carry [2][]byte // the start of a character cut off at the end of the last "o", "i" event
	line  []byte
}

// newRecorder writes to w, its times counted from now.
func newRecorder(w io.Writer) *recorder { return &recorder{w: w, start: time.Now()} }

// header writes the cast's header; SHELL is the program the session's
// command runs under, left out when there is none.
func (r *recorder) header(cols, rows int, command string, shell []string) error {
	env := map[string]string{"TERM": "xterm-256color"}
	if len(shell) > 0 {
		env["SHELL"] = shell[0]
	}
	h := struct {
		Version   int               `json:"version"`
		Width     int               `json:"width"`
		Height    int               `json:"height"`
		Timestamp int64             `json:"timestamp"`
		Command   string            `json:"command"`
		Env       map[string]string `json:"env"`
	}{2, cols, rows, r.start.Unix(), command, env}
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	_, err = r.w.Write(append(b, '\n'))
	return err
}

// event writes one event; text events hold whole characters only, the
// start of one cut off at the end waiting for the next event of its kind.
func (r *recorder) event(kind byte, p []byte) error {
	if kind == 'o' || kind == 'i' {
		c := &r.carry[0]
		if kind == 'i' {
			c = &r.carry[1]
		}
		p = append(*c, p...)
		cut := len(p)
		for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax+1; i-- {
			if utf8.RuneStart(p[i]) {
				if !utf8.FullRune(p[i:]) {
					cut = i
				}
				break
			}
		}
		*c = append([]byte(nil), p[cut:]...)
		p = p[:cut]
		if len(p) == 0 {
			return nil
		}
	}
	data, err := json.Marshal(string(p))
	if err != nil {
		return err
	}
	r.line = append(r.line[:0], '[')
	r.line = strconv.AppendFloat(r.line, time.Since(r.start).Seconds(), 'f', 6, 64)
	r.line = append(r.line, ", \""...)
	r.line = append(r.line, kind)
	r.line = append(r.line, "\", "...)
	r.line = append(r.line, data...)
	r.line = append(r.line, "]\n"...)
	_, err = r.w.Write(r.line)
	return err
}
