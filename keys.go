package agentpty

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentpty/agentpty/internal/cmdline"
)

// keyModes are the terminal modes that decide what a key sends, as the
// program last set them.
type keyModes struct {
	appCursor bool // DECCKM (CSI ? 1 h): cursor keys, Home and End as ESC O x
	appKeypad bool // DECKPAM (ESC =): the keypad as ESC O x
}

// Modifier bits, valued as xterm's modifier parameter less one: CSI 1;5A
// is Ctrl-Up because 1 + modCtrl is 5.
const (
	modShift = 1
	modMeta  = 2
	modCtrl  = 4
)

// keyKind says how a named key is encoded.
type keyKind uint8

const (
	keyChar   keyKind = iota // bytes of its own (a character, Enter, Tab, ...); M- puts ESC before them
	keyCursor                // CSI final, or SS3 final under DECCKM; modified: CSI 1;m final
	keySS3                   // SS3 final (F1-F4); modified: CSI 1;m final
	keyTilde                 // CSI n ~; modified: CSI n;m ~
	keyPad                   // a character, or SS3 final under DECKPAM
)

// key is one named key, ready to encode in the terminal's current modes.
type key struct {
	kind keyKind
	mods int    // modShift|modMeta|modCtrl, for the kinds xterm encodes them in
	meta bool   // keyChar: ESC before the bytes
	text string // keyChar: the bytes; keyPad: what the numeric keypad sends
	fin  byte   // final byte: keyCursor, keySS3, keyPad (its SS3 form)
	num  int    // keyTilde: the parameter
}

// namedKeys are the keys tmux's send-keys names (key-string.c), aliases
// included, in lower case (names are matched ignoring case), with what
// xterm sends for them unmodified.
var namedKeys = map[string]key{
	"up":    {kind: keyCursor, fin: 'A'},
	"down":  {kind: keyCursor, fin: 'B'},
	"right": {kind: keyCursor, fin: 'C'},
	"left":  {kind: keyCursor, fin: 'D'},
	"home":  {kind: keyCursor, fin: 'H'},
	"end":   {kind: keyCursor, fin: 'F'},

	"f1": {kind: keySS3, fin: 'P'},
	"f2": {kind: keySS3, fin: 'Q'},
	"f3": {kind: keySS3, fin: 'R'},
	"f4": {kind: keySS3, fin: 'S'},

	"f5":       {kind: keyTilde, num: 15},
	"f6":       {kind: keyTilde, num: 17},
	"f7":       {kind: keyTilde, num: 18},
	"f8":       {kind: keyTilde, num: 19},
	"f9":       {kind: keyTilde, num: 20},
	"f10":      {kind: keyTilde, num: 21},
	"f11":      {kind: keyTilde, num: 23},
	"f12":      {kind: keyTilde, num: 24},
	"insert":   {kind: keyTilde, num: 2},
	"ic":       {kind: keyTilde, num: 2},
	"delete":   {kind: keyTilde, num: 3},
	"dc":       {kind: keyTilde, num: 3},
	"pageup":   {kind: keyTilde, num: 5},
	"ppage":    {kind: keyTilde, num: 5},
	"pgup":     {kind: keyTilde, num: 5},
	"pagedown": {kind: keyTilde, num: 6},
	"npage":    {kind: keyTilde, num: 6},
	"pgdn":     {kind: keyTilde, num: 6},

	"enter":  {kind: keyChar, text: "\r"},
	"tab":    {kind: keyChar, text: "\t"},
	"btab":   {kind: keyChar, text: "\x1b[Z"},
	"escape": {kind: keyChar, text: "\x1b"},
	"space":  {kind: keyChar, text: " "},
	"bspace": {kind: keyChar, text: "\x7f"},

	"kp0":     {kind: keyPad, text: "0", fin: 'p'},
	"kp1":     {kind: keyPad, text: "1", fin: 'q'},
	"kp2":     {kind: keyPad, text: "2", fin: 'r'},
	"kp3":     {kind: keyPad, text: "3", fin: 's'},
	"kp4":     {kind: keyPad, text: "4", fin: 't'},
	"kp5":     {kind: keyPad, text: "5", fin: 'u'},
	"kp6":     {kind: keyPad, text: "6", fin: 'v'},
	"kp7":     {kind: keyPad, text: "7", fin: 'w'},
	"kp8":     {kind: keyPad, text: "8", fin: 'x'},
	"kp9":     {kind: keyPad, text: "9", fin: 'y'},
	"kp/":     {kind: keyPad, text: "/", fin: 'o'},
	"kp*":     {kind: keyPad, text: "*", fin: 'j'},
	"kp-":     {kind: keyPad, text: "-", fin: 'm'},
	"kp+":     {kind: keyPad, text: "+", fin: 'k'},
	"kp.":     {kind: keyPad, text: ".", fin: 'n'},
	"kpenter": {kind: keyPad, text: "\r", fin: 'M'},
}

// keyHints name the key meant by names models often try.
var keyHints = map[string]string{
	"esc": "Escape", "return": "Enter", "backspace": "BSpace", "bs": "BSpace", "del": "Delete",
	"ins": "Insert", "pgdown": "PageDown", "pageup": "PageUp", "spacebar": "Space", "shift-tab": "BTab",
	"arrowup": "Up", "arrowdown": "Down", "arrowleft": "Left", "arrowright": "Right",
}

// controlKeys are the characters that Ctrl turns into C0 bytes besides the
// letters, as tmux reads C-Space, C-@, C-[ and the rest.
var controlKeys = map[rune]byte{
	' ': 0, '@': 0, '2': 0,
	'[': 0x1b, '\\': 0x1c, '|': 0x1c, ']': 0x1d,
	'^': 0x1e, '6': 0x1e, '_': 0x1f, '-': 0x1f, '/': 0x1f,
	'?': 0x7f,
}

// parseKeys reads key names as tmux's send-keys spells them: Up, C-c,
// M-x, S-F5, C-M-Left, a single character. Names and modifier letters
// match in any case; a single character is itself. An unknown name is
// ErrInvalid naming it, with what stands for it.
func parseKeys(where string, names []string) ([]key, error) {
	keys := make([]key, 0, len(names))
	for i, name := range names {
		k, why := parseKey(name)
		if why != "" {
			return nil, errorf(ErrInvalid, "%s: keys[%d] %s %s; keys are named as tmux's send-keys names them "+
				"(Up, Down, Left, Right, Home, End, PageUp, PageDown, Insert, Delete, Enter, Tab, BTab, Escape, BSpace, Space, F1-F12, KP0-KP9, "+
				"a single character, with C-, M- or S- before it: C-c, M-x, C-Up); type text with input", where, i, cmdline.Quote(name), why)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// maxKeyName is longer than any key name with every modifier before it.
const maxKeyName = 32

// parseKey reads one key name, or says why it names no key.
func parseKey(name string) (key, string) {
	if len(name) > maxKeyName {
		return key{}, "is not a key name"
	}
	rest, mods := name, 0
	if len(rest) > 1 && rest[0] == '^' {
		rest, mods = rest[1:], modCtrl
	}
	for len(rest) > 2 && rest[1] == '-' {
		switch rest[0] {
		case 'C', 'c':
			mods |= modCtrl
		case 'M', 'm':
			mods |= modMeta
		case 'S', 's':
			mods |= modShift
		default:
			return key{}, "has an unknown modifier " + strconv.Quote(rest[:2])
		}
		rest = rest[2:]
	}
	if r, n := utf8.DecodeRuneInString(rest); n == len(rest) && r != utf8.RuneError {
		if r < ' ' || r == 0x7f {
			return key{}, "is a control character"
		}
		return charKey(r, mods)
	}
	lower := strings.ToLower(rest)
	k, ok := namedKeys[lower]
	if !ok {
		if hint, ok := keyHints[lower]; ok {
			return key{}, "is not a key name (tmux calls it " + hint + ")"
		}
		return key{}, "is not a key name"
	}
	switch k.kind {
	case keyCursor, keySS3, keyTilde:
		k.mods = mods // xterm encodes every combination in the sequence
		return k, ""
	case keyPad:
		if mods != 0 {
			return key{}, "puts a modifier on a keypad key, which xterm does not send"
		}
		return k, ""
	}
	return namedCharKey(lower, k, mods)
}

// namedCharKey applies modifiers to Enter, Tab, BTab, Escape, Space and
// BSpace as xterm does: Meta as an ESC before the key, S-Tab as BTab,
// C-Space as NUL and C-BSpace as BS.
func namedCharKey(name string, k key, mods int) (key, string) {
	switch {
	case name == "space":
		return charKey(' ', mods)
	case name == "tab" && mods&modShift != 0:
		k.text, mods = "\x1b[Z", mods&^modShift
	case name == "bspace" && mods&modCtrl != 0:
		k.text, mods = "\b", mods&^modCtrl
	}
	if mods&^modMeta != 0 {
		return key{}, "has a modifier xterm sends nothing different for"
	}
	k.meta = mods&modMeta != 0
	return k, ""
}

// charKey is a single character with modifiers: Ctrl makes a letter (or
// one of controlKeys) its C0 byte, Meta puts ESC before it. Shift is the
// character's own case, so S- on a character names nothing.
func charKey(r rune, mods int) (key, string) {
	if mods&modShift != 0 {
		return key{}, "puts S- on a character; type the shifted character itself"
	}
	text := string(r)
	if mods&modCtrl != 0 {
		switch c, ok := controlKeys[r]; {
		case ok:
			text = string(rune(c))
		case 'a' <= r && r <= 'z':
			text = string(r - 'a' + 1)
		case 'A' <= r && r <= 'Z':
			text = string(r - 'A' + 1)
		default:
			return key{}, "puts C- on a character that has no control code"
		}
	}
	return key{kind: keyChar, text: text, meta: mods&modMeta != 0}, ""
}

// appendKey appends what xterm sends for k in modes m.
func appendKey(dst []byte, k key, m keyModes) []byte {
	switch k.kind {
	case keyChar:
		if k.meta {
			dst = append(dst, 0x1b)
		}
		return append(dst, k.text...)
	case keyPad:
		if m.appKeypad {
			return append(dst, 0x1b, 'O', k.fin)
		}
		return append(dst, k.text...)
	case keyTilde:
		dst = append(dst, 0x1b, '[')
		dst = strconv.AppendInt(dst, int64(k.num), 10)
		if k.mods != 0 {
			dst = append(dst, ';')
			dst = strconv.AppendInt(dst, int64(1+k.mods), 10)
		}
		return append(dst, '~')
	}
	// keyCursor and keySS3: modifiers always take the CSI 1;m form.
	switch {
	case k.mods != 0:
		dst = append(dst, 0x1b, '[', '1', ';')
		dst = strconv.AppendInt(dst, int64(1+k.mods), 10)
		return append(dst, k.fin)
	case k.kind == keySS3 || m.appCursor:
		return append(dst, 0x1b, 'O', k.fin)
	}
	return append(dst, 0x1b, '[', k.fin)
}

// cursorKeys turns the cursor keys in typed input (ESC [ A, B, C, D, H,
// F, each a whole sequence) into what the keyboard sends under DECCKM,
// ESC O and the same letter; outside DECCKM, and inside a bracketed paste,
// input is left as it is. Modified forms (ESC [ 1 ; 5 A) are the same in
// both modes and stay as they are.
func cursorKeys(p []byte, m keyModes) []byte {
	if !m.appCursor || !bytes.Contains(p, []byte("\x1b[")) {
		return p
	}
	const pasteStart, pasteEnd = "\x1b[200~", "\x1b[201~"
	out := make([]byte, 0, len(p))
	for len(p) > 0 {
		i := bytes.IndexByte(p, 0x1b)
		if i < 0 {
			break
		}
		out, p = append(out, p[:i]...), p[i:]
		if bytes.HasPrefix(p, []byte(pasteStart)) {
			end := bytes.Index(p, []byte(pasteEnd))
			if end < 0 {
				end = len(p) - len(pasteEnd)
			}
			n := end + len(pasteEnd)
			out, p = append(out, p[:n]...), p[n:]
			continue
		}
		if len(p) >= 3 && p[1] == '[' && strings.IndexByte("ABCDHF", p[2]) >= 0 {
			out, p = append(out, 0x1b, 'O', p[2]), p[3:]
			continue
		}
		out, p = append(out, 0x1b), p[1:]
	}
	return append(out, p...)
}

// typedBytes is what a write types: input (escapes decoded unless
// literal, its cursor keys as the keyboard sends them in the terminal's
// modes, which modes reads when they are needed), then the keys, then the
// Enter of submit.
func typedBytes(req WriteRequest, keys []key, modes func() keyModes) []byte {
	var input []byte
	if req.Literal {
		input = []byte(req.Input)
	} else {
		input = decodeInput(req.Input)
	}
	if len(keys) > 0 || (!req.Literal && bytes.Contains(input, []byte("\x1b["))) {
		m := modes()
		if !req.Literal {
			input = cursorKeys(input, m)
		}
		for _, k := range keys {
			input = appendKey(input, k, m)
		}
	}
	if req.Submit {
		input = append(input, '\r')
	}
	return input
}
