package agentpty

import (
	"context"
	"fmt"
	"regexp"
	"unicode/utf8"
)

// Expect waits until re matches the output no read has returned yet, and
// returns that output up to the end of the match, consuming it: the rest
// stays for the next Expect. It is for Go code that drives a program
// directly (with Send), as go-expect does; it waits until ctx ends, or
// fails with ErrExited once the program has exited and its output came
// without a match.
//
// Expect matches the program's text: escape sequences (colours, cursor
// moves, titles), carriage returns and other control bytes but newline and
// tab are left out, and characters are whole, so a pattern never matches
// half of one however the output was split. Expect keeps its own place in
// the output: what a tool result (pty-start, pty-write) returned is never
// matched again, but a tool read after Expect returns every line touched
// since the last tool read, including text Expect returned.
func (s *Session) Expect(ctx context.Context, re *regexp.Regexp) (string, error) {
	if re == nil {
		return "", errorf(ErrInvalid, "%s: expect: the pattern is nil", s.id)
	}
	leave, err := s.turn(ctx, "expect") // a read like the tools' calls: one at a time, in arrival order
	if err != nil {
		return "", err
	}
	defer leave()
	e := &s.exp
	for {
		s.mu.Lock()
		ch := s.text.changes()
		e.skipTo(s.text.returned()) // a result returned it
		end, over := s.out.rendered(), s.text.complete()
		s.mu.Unlock()
		e.fill(end, &s.out)
		if out, off, ok := e.match(re); ok {
			s.mu.Lock()
			s.text.readTo(off, s.out.start())
			s.mu.Unlock()
			return out, nil
		}
		if over {
			st, _ := s.ended()
			return "", errorf(ErrExited, "%s: expect %q: the program exited (%s) and its output did not match; it ended %q", s.id, re, st, e.tail())
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return "", fmt.Errorf("agentpty: %s: expect %q: %w; the output not yet matched ends %q", s.id, re, ctx.Err(), e.tail())
		}
	}
}

// expectState is Expect's place in the output, used only by the call
// whose turn it is.
type expectState struct {
	off  int64   // ring offset consumed up to
	text []byte  // the text of the output from off on
	ends []int64 // ends[i] is the ring offset just after text[i]'s character
	raw  int64   // ring offset taken up to ...
	rest []byte  // ... of which this tail (an escape or character cut off) is not text yet
}

// skipTo drops everything before ring offset off, once that is past what
// Expect consumed.
func (e *expectState) skipTo(off int64) {
	if off <= e.off {
		return
	}
	i := 0
	for i < len(e.ends) && e.ends[i] <= off {
		i++
	}
	if i == len(e.ends) && off > e.raw-int64(len(e.rest)) {
		e.text, e.ends, e.rest = e.text[:0], e.ends[:0], e.rest[:0]
		e.raw = max(e.raw, off)
	} else {
		e.text, e.ends = append(e.text[:0], e.text[i:]...), append(e.ends[:0], e.ends[i:]...)
	}
	e.off = off
}

// match consumes the text up to the end of re's first match and returns
// it and the ring offset it ends at; ok is false when re does not match.
func (e *expectState) match(re *regexp.Regexp) (out string, off int64, ok bool) {
	loc := re.FindIndex(e.text)
	if loc == nil {
		return "", 0, false
	}
	out, off = e.take(loc[1])
	return out, off, true
}

// take consumes the first n bytes of text and returns them and the ring
// offset they end at.
func (e *expectState) take(n int) (string, int64) {
	out := string(e.text[:n])
	if n > 0 {
		e.off = e.ends[n-1]
	}
	e.text, e.ends = append(e.text[:0], e.text[n:]...), append(e.ends[:0], e.ends[n:]...)
	return out, e.off
}

// tail is the end of the unmatched text, for an error message.
func (e *expectState) tail() string {
	t := e.text[max(0, len(e.text)-200):]
	for len(t) > 0 && !utf8.RuneStart(t[0]) {
		t = t[1:]
	}
	return string(t)
}

// fill adds the output up to ring offset end, read from out, to the text.
func (e *expectState) fill(end int64, out *output) {
	if end <= e.raw {
		return
	}
	raw, lost := out.appendRange(e.rest, e.raw, end)
	n := len(raw) - len(e.rest)
	if lost > 0 { // the ring dropped output Expect never saw: go on after it
		raw = raw[len(e.rest):]
		e.raw += lost
		e.off = max(e.off, e.raw)
	}
	base := e.raw - int64(len(raw)-n)
	if lost > 0 {
		base = e.raw
	}
	var used int
	e.text, e.ends, used = expectStrip(e.text, e.ends, raw, base)
	e.raw += int64(n)
	e.rest = append(e.rest[:0], raw[used:]...)
}

// expectStrip appends the text of raw, whose first byte is at ring offset
// base, to text, and the ring offset after each byte's character to ends.
// It returns how much of raw it used: an escape sequence or a character cut
// off at the end waits for the rest.
func expectStrip(text []byte, ends []int64, raw []byte, base int64) ([]byte, []int64, int) {
	i := 0
	for i < len(raw) {
		c := raw[i]
		switch {
		case c == 0x1b:
			n := escapeLen(raw[i:])
			if n == 0 {
				return text, ends, i
			}
			i += n
		case c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f):
			text = append(text, c)
			ends = append(ends, base+int64(i)+1)
			i++
		case c < 0x80:
			i++ // other control bytes: \r, \b, BEL
		default:
			if !utf8.FullRune(raw[i:]) {
				return text, ends, i
			}
			_, size := utf8.DecodeRune(raw[i:])
			text = append(text, raw[i:i+size]...)
			for k := 0; k < size; k++ {
				ends = append(ends, base+int64(i+size))
			}
			i += size
		}
	}
	return text, ends, i
}

// escapeLen is the length of the escape sequence p starts with, or 0 when
// it is cut off at the end of p. A sequence longer than any a program
// sends counts as ended, so nothing waits on it for good.
func escapeLen(p []byte) int {
	const longest = 4 << 10
	if len(p) < 2 {
		return 0
	}
	switch c := p[1]; {
	case c == '[':
		for i := 2; i < len(p); i++ {
			if p[i] >= 0x40 && p[i] <= 0x7e {
				return i + 1
			}
			if i >= longest {
				return i
			}
		}
	case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
		for i := 2; i < len(p); i++ {
			switch {
			case p[i] == 0x07 && c == ']':
				return i + 1
			case p[i] == 0x1b && i+1 < len(p) && p[i+1] == '\\':
				return i + 2
			case i >= longest:
				return i
			}
		}
	case c >= 0x20 && c <= 0x2f: // ESC ( B and the like: one more byte
		if len(p) >= 3 {
			return 3
		}
	default:
		return 2
	}
	return 0
}
