package agentpty

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/agentpty/agentpty/internal/testkit"
)

func TestDecodeInput(t *testing.T) {
	testkit.Parallel(t)
	cases := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"plain", "ls -la", "ls -la"},
		{"utf8", "echo 日本 é", "echo 日本 é"},
		{"invalid utf8 passes", "a\xffb\x80", "a\xffb\x80"},

		{"cr", `ls\r`, "ls\r"},
		{"lf", `a\nb`, "a\nb"},
		{"tab", `ca\t`, "ca\t"},
		{"esc", `\e`, "\x1b"},
		{"cursor up", `\e[A`, "\x1b[A"},
		{"crlf", `\r\n`, "\r\n"},
		{"adjacent", `\n\n\t\e\r`, "\n\n\t\x1b\r"},

		{"ctrl-c text", `\x03`, "\x03"},
		{"ctrl-c byte", "\x03", "\x03"},
		{"ctrl-d and text", `\x04exit\n`, "\x04exit\n"},
		{"hex lower", `\x1b`, "\x1b"},
		{"hex upper", `\x1B`, "\x1b"},
		{"hex mixed", `\xFf`, "\xff"},
		{"hex raw byte not utf8", `\x80`, "\x80"},
		{"hex nul", `\x00`, "\x00"},
		{"hex pair", `\x41\x42`, "AB"},
		{"hex then digits", `\x414`, "A4"},
		{"hex short", `\x4`, `\x4`},
		{"hex short then escape", `\x4\n`, "\\x4\n"},
		{"hex bad digit", `\x4g`, `\x4g`},
		{"hex bad first", `\xg1`, `\xg1`},
		{"hex bare", `\x`, `\x`},

		{"u bmp", `\u00e9`, "é"},
		{"u upper", `\u00E9`, "é"},
		{"u cjk", `\u65e5\u672c`, "日本"},
		{"u ascii", `\u0041`, "A"},
		{"u nul", `\u0000`, "\x00"},
		{"u 0080 is utf8", `\u0080`, "\u0080"},
		{"u replacement", `\uFFFD`, "\uFFFD"},
		{"u short", `\u12`, `\u12`},
		{"u short then text", `\u12 x`, `\u12 x`},
		{"u bad digit", `\u12g4`, `\u12g4`},
		{"u bare", `\u`, `\u`},
		{"u five digits", `\u00411`, "A1"},
		{"u pair", `\uD83D\uDE00`, "😀"},
		{"u pair lower", `\ud83d\ude00`, "😀"},
		{"u lone high", `\uD83D`, `\uD83D`},
		{"u lone high then text", `\uD83Dx`, `\uD83Dx`},
		{"u lone low", `\uDE00`, `\uDE00`},
		{"u high high low", `\uD83D\uD83D\uDE00`, `\uD83D` + "😀"},
		{"u high then bmp", `\uD83D\u0041`, `\uD83D` + "A"},
		{"u high then short", `\uD83D\uDE0`, `\uD83D\uDE0`},
		{"u low high", `\uDE00\uD83D`, `\uDE00\uD83D`},

		{"backslash", `\\`, `\`},
		{"backslash n", `\\n`, `\n`},
		{"backslash then lf", `\\\n`, "\\\n"},
		{"two backslashes", `\\\\`, `\\`},
		{"backslash hex text", `\\x41`, `\x41`},
		{"three backslashes", `\\\`, `\\`},

		{"unknown", `\q`, `\q`},
		{"unknown b", `\b`, `\b`},
		{"unknown a", `\a`, `\a`},
		{"unknown nul", `\0`, `\0`},
		{"unknown U", `\U0001F600`, `\U0001F600`},
		{"regex", `grep -E '\d+\.\d+\b'\n`, "grep -E '\\d+\\.\\d+\\b'\n"},
		{"windows path", `C:\Users\me`, `C:\Users\me`},
		{"trailing", `abc\`, `abc\`},
		{"lone", `\`, `\`},
		{"backslash then raw ctrl", "\\\x03", "\\\x03"},
		{"backslash then multibyte", `\é`, `\é`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := decodeInput(c.in)
			if !bytes.Equal(got, []byte(c.want)) {
				t.Errorf("decodeInput(%q) = %q, want %q", c.in, got, c.want)
			}
			if ref := decodeInputReference(c.in); !bytes.Equal(got, ref) {
				t.Errorf("decodeInput(%q) = %q, reference gives %q", c.in, got, ref)
			}
		})
	}
}

// TestDecodeInputAllocs: text without escapes is one copy; with escapes, one
// buffer sized from the input.
func TestDecodeInputAllocs(t *testing.T) {
	for _, s := range []string{"plain text to type", `python3\r`, `\e[A\e[A\r`} {
		if n := testing.AllocsPerRun(100, func() { _ = decodeInput(s) }); n > 1 {
			t.Errorf("decodeInput(%q): %v allocations, want at most 1", s, n)
		}
	}
}

// decodeInputReference is decodeInput written a second, obvious way: one
// regular expression for the known escapes, everything else left as it is.
// The surrogate pair comes first so a leftmost-first match prefers it.
var inputEscapeRE = regexp.MustCompile(`\\(?:\\|[rnte]|x[0-9a-fA-F]{2}|u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|u[0-9a-fA-F]{4})`)

func decodeInputReference(s string) []byte {
	return inputEscapeRE.ReplaceAllFunc([]byte(s), func(m []byte) []byte {
		switch m[1] {
		case '\\':
			return []byte{'\\'}
		case 'r':
			return []byte{'\r'}
		case 'n':
			return []byte{'\n'}
		case 't':
			return []byte{'\t'}
		case 'e':
			return []byte{0x1b}
		case 'x':
			v, _ := strconv.ParseUint(string(m[2:4]), 16, 8)
			return []byte{byte(v)}
		}
		v, _ := strconv.ParseUint(string(m[2:6]), 16, 16)
		r := rune(v)
		if len(m) == 12 {
			lo, _ := strconv.ParseUint(string(m[8:12]), 16, 16)
			r = utf16.DecodeRune(r, rune(lo))
		} else if utf16.IsSurrogate(r) {
			return m
		}
		return utf8.AppendRune(nil, r)
	})
}

// inputEscapeBytes writes every byte of s as \xHH, upper or lower case by
// the byte's parity so both get exercised.
func inputEscapeBytes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i]&1 == 0 {
			fmt.Fprintf(&b, `\x%02x`, s[i])
		} else {
			fmt.Fprintf(&b, `\x%02X`, s[i])
		}
	}
	return b.String()
}

// inputEscapeRunes writes every character of s as \uHHHH (a surrogate pair
// beyond the BMP) and every byte that is not UTF-8 as \xHH.
func inputEscapeRunes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x10000:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04X\u%04X`, hi, lo)
		}
		i += size
	}
	return b.String()
}

func FuzzDecodeInput(f *testing.F) {
	for _, s := range []string{
		"", "ls -la", `\r\n\t\e`, `\x03`, "\x03", `\x80\xFf`, `\x4`, `\u12`,
		`\u00e9\u65E5`, `\uD83D\uDE00`, `\uD83D\uD83D\uDE00`, `\uDE00`, `\\`,
		`\\\n`, `\q\b\a\0`, `abc\`, `\`, "a\xffb", `grep '\d+\b'`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := decodeInput(s)
		if len(got) > len(s) {
			t.Fatalf("decodeInput(%q) = %q: longer than its input", s, got)
		}
		if !strings.Contains(s, `\`) && string(got) != s {
			t.Fatalf("decodeInput(%q) = %q: text without escapes changed", s, got)
		}
		if ref := decodeInputReference(s); !bytes.Equal(got, ref) {
			t.Fatalf("decodeInput(%q) = %q, reference gives %q", s, got, ref)
		}
		// Any bytes survive being written out as escapes.
		if e := inputEscapeBytes(s); string(decodeInput(e)) != s {
			t.Fatalf("decodeInput(%q) = %q, want %q", e, decodeInput(e), s)
		}
		if e := inputEscapeRunes(s); string(decodeInput(e)) != s {
			t.Fatalf("decodeInput(%q) = %q, want %q", e, decodeInput(e), s)
		}
		// Doubling every backslash types the text literally.
		if e := strings.ReplaceAll(s, `\`, `\\`); string(decodeInput(e)) != s {
			t.Fatalf("decodeInput(%q) = %q, want %q", e, decodeInput(e), s)
		}
	})
}

func BenchmarkDecodeInput(b *testing.B) {
	for _, bc := range []struct{ name, in string }{
		{"plain", strings.Repeat("print('hello, world') ", 20)},
		{"escapes", strings.Repeat(`\e[A\x03\u65e5ls -la\r\n`, 20)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.in)))
			b.ReportAllocs()
			for b.Loop() {
				_ = decodeInput(bc.in)
			}
		})
	}
}
