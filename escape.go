package agentpty

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeInput turns the model's input text into the bytes to type.
//
// A model cannot reliably put raw control bytes into the JSON it writes, so
// the text may name them with escapes:
//
//	\r \n \t      carriage return, line feed, tab
//	\e            ESC (0x1b)
//	\xHH          the one raw byte HH (two hex digits, either case), so \x80
//	              is the byte 0x80, not U+0080 in UTF-8
//	\uHHHH        the character U+HHHH in UTF-8; a surrogate pair written as
//	              two escapes (\uD83D\uDE00) is joined into one character
//	\\            one backslash
//
// Every other backslash passes through unchanged, with whatever follows it:
// an unknown escape (\b, \d, \a, \0: regexes a model types must arrive as
// typed), a short or malformed one (\x4, \u12g4), a lone surrogate, a
// trailing backslash. Bytes that are already control characters pass as they
// are, so the text \x03 and the byte 0x03 both type Ctrl-C.
func decodeInput(s string) []byte {
	i := strings.IndexByte(s, '\\')
	if i < 0 {
		return []byte(s)
	}
	// Every escape is at least as long as the bytes it names, so the
	// result fits in len(s).
	out := make([]byte, 0, len(s))
	for i >= 0 {
		out = append(out, s[:i]...)
		var n int
		out, n = appendInputEscape(out, s[i:])
		s = s[i+n:]
		i = strings.IndexByte(s, '\\')
	}
	return append(out, s...)
}

// appendInputEscape appends the bytes named by the escape at the start of s
// (s[0] is a backslash) and reports how many bytes of s it used. A backslash
// that starts no known escape is appended as itself and uses one byte, so
// what follows it is scanned as ordinary text.
func appendInputEscape(out []byte, s string) ([]byte, int) {
	if len(s) < 2 {
		return append(out, '\\'), 1
	}
	switch s[1] {
	case '\\':
		return append(out, '\\'), 2
	case 'r':
		return append(out, '\r'), 2
	case 'n':
		return append(out, '\n'), 2
	case 't':
		return append(out, '\t'), 2
	case 'e':
		return append(out, 0x1b), 2
	case 'x':
		if v, ok := inputHex(s[2:], 2); ok {
			return append(out, byte(v)), 4
		}
	case 'u':
		r, ok := inputHex(s[2:], 4)
		if !ok {
			break
		}
		if !utf16.IsSurrogate(r) {
			return utf8.AppendRune(out, r), 6
		}
		// A surrogate names no character by itself; only a high one
		// followed by an escaped low one does.
		if len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
			if lo, ok := inputHex(s[8:], 4); ok {
				if c := utf16.DecodeRune(r, lo); c != utf8.RuneError {
					return utf8.AppendRune(out, c), 12
				}
			}
		}
	}
	return append(out, '\\'), 1
}

// inputHex parses exactly n hex digits at the start of s.
func inputHex(s string, n int) (rune, bool) {
	if len(s) < n {
		return 0, false
	}
	var v rune
	for i := range n {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | rune(c)
	}
	return v, true
}
