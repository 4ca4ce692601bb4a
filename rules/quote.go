package rules

import (
	"strconv"
	"strings"
)

// How Rules read quoted text: the escapes bash removes from double-quoted
// strings and decodes in $'...' strings, and the quoting of a value as a
// glob.

// globQuote escapes the characters globMatch treats specially.
func globQuote(s string) string {
	if !strings.ContainsAny(s, `*?\`) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// unescapeDouble removes the backslashes bash removes inside double
// quotes: before $ ` " \ and a newline.
func unescapeDouble(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// decodeANSI decodes the body of a $'...' string as bash does. It reports
// whether the result holds a NUL byte, where bash cuts the word short, and
// whether a \u or \U escape names a character beyond ASCII, which bash
// encodes as the locale says.
func decodeANSI(s string) (out string, nul, local bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		var wide bool
		i, wide = decodeEscape(&b, s, i+1)
		local = local || wide
	}
	out = b.String()
	return out, strings.Contains(out, "\x00"), local
}

// ansiEscapes are the escapes of $'...' that stand for one byte.
var ansiEscapes = map[byte]byte{'a': '\a', 'b': '\b', 'e': 0x1b, 'E': 0x1b, 'f': '\f', 'n': '\n',
	'r': '\r', 't': '\t', 'v': '\v', '\\': '\\', '\'': '\'', '"': '"', '?': '?'}

// decodeEscape decodes the escape of a $'...' string whose letter is
// s[i]. It returns the index of the escape's last byte and whether it
// names a character beyond ASCII.
func decodeEscape(b *strings.Builder, s string, i int) (last int, wide bool) {
	c := s[i]
	if e, ok := ansiEscapes[c]; ok {
		b.WriteByte(e)
		return i, false
	}
	switch c {
	case '0', '1', '2', '3', '4', '5', '6', '7':
		return decodeOctal(b, s, i), false
	case 'x', 'u', 'U':
		return decodeHex(b, s, i)
	case 'c':
		return decodeControl(b, s, i), false
	}
	b.WriteByte('\\')
	b.WriteByte(c)
	return i, false
}

// decodeOctal decodes \NNN, one to three octal digits from s[i], into a
// byte.
func decodeOctal(b *strings.Builder, s string, i int) int {
	v, n := 0, 0
	for n < 3 && i+n < len(s) && s[i+n] >= '0' && s[i+n] <= '7' {
		v = v*8 + int(s[i+n]-'0')
		n++
	}
	b.WriteByte(byte(v))
	return i + n - 1
}

// decodeHex decodes \xHH into a byte and \uHHHH and \UHHHHHHHH into a
// character, s[i] being the letter; without a digit the escape stays as
// written.
func decodeHex(b *strings.Builder, s string, i int) (last int, wide bool) {
	c := s[i]
	most := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
	v, n := 0, 0
	for n < most && i+1+n < len(s) && isHex(s[i+1+n]) {
		d, _ := strconv.ParseUint(s[i+1+n:i+2+n], 16, 8)
		v = v*16 + int(d)
		n++
	}
	switch {
	case n == 0:
		b.WriteByte('\\')
		b.WriteByte(c)
	case c == 'x':
		b.WriteByte(byte(v))
	default:
		wide = v > 0x7f
		b.WriteRune(rune(v))
	}
	return i + n, wide
}

// decodeControl decodes \cX, s[i] being the c, into control-X: \c? is
// DEL and \c\\ control-backslash.
func decodeControl(b *strings.Builder, s string, i int) int {
	switch {
	case i+1 == len(s):
		b.WriteString(`\c`)
	case s[i+1] == '?':
		b.WriteByte(0x7f)
		i++
	default:
		i++
		if s[i] == '\\' && i+1 < len(s) && s[i+1] == '\\' {
			i++ // \c\\ is control-backslash
		}
		b.WriteByte(s[i] & 0x1f)
	}
	return i
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
