package agentpty

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agentpty/agentpty/internal/testkit"
)

// Each key name sends what xterm sends: the first column with the cursor
// keys and keypad in their normal modes, the second after CSI ? 1 h and
// ESC = (DECCKM and DECKPAM, as ncurses programs set them).
func TestKeyEncodings(t *testing.T) {
	testkit.Parallel(t)
	for _, c := range []struct{ name, normal, app string }{
		{"Up", "\x1b[A", "\x1bOA"},
		{"Down", "\x1b[B", "\x1bOB"},
		{"Right", "\x1b[C", "\x1bOC"},
		{"Left", "\x1b[D", "\x1bOD"},
		{"Home", "\x1b[H", "\x1bOH"},
		{"End", "\x1b[F", "\x1bOF"},
		{"down", "\x1b[B", "\x1bOB"}, // names in any case, as tmux reads them
		{"C-Up", "\x1b[1;5A", "\x1b[1;5A"},
		{"S-Down", "\x1b[1;2B", "\x1b[1;2B"},
		{"M-Left", "\x1b[1;3D", "\x1b[1;3D"},
		{"C-S-Right", "\x1b[1;6C", "\x1b[1;6C"},
		{"C-M-Left", "\x1b[1;7D", "\x1b[1;7D"},
		{"M-C-S-Up", "\x1b[1;8A", "\x1b[1;8A"},
		{"C-Home", "\x1b[1;5H", "\x1b[1;5H"},
		{"S-End", "\x1b[1;2F", "\x1b[1;2F"},
		{"F1", "\x1bOP", "\x1bOP"},
		{"F2", "\x1bOQ", "\x1bOQ"},
		{"F3", "\x1bOR", "\x1bOR"},
		{"F4", "\x1bOS", "\x1bOS"},
		{"S-F1", "\x1b[1;2P", "\x1b[1;2P"},
		{"C-F4", "\x1b[1;5S", "\x1b[1;5S"},
		{"F5", "\x1b[15~", "\x1b[15~"},
		{"F6", "\x1b[17~", "\x1b[17~"},
		{"F7", "\x1b[18~", "\x1b[18~"},
		{"F8", "\x1b[19~", "\x1b[19~"},
		{"F9", "\x1b[20~", "\x1b[20~"},
		{"F10", "\x1b[21~", "\x1b[21~"},
		{"F11", "\x1b[23~", "\x1b[23~"},
		{"F12", "\x1b[24~", "\x1b[24~"},
		{"S-F5", "\x1b[15;2~", "\x1b[15;2~"},
		{"C-F12", "\x1b[24;5~", "\x1b[24;5~"},
		{"Insert", "\x1b[2~", "\x1b[2~"},
		{"IC", "\x1b[2~", "\x1b[2~"},
		{"Delete", "\x1b[3~", "\x1b[3~"},
		{"DC", "\x1b[3~", "\x1b[3~"},
		{"PageUp", "\x1b[5~", "\x1b[5~"},
		{"PPage", "\x1b[5~", "\x1b[5~"},
		{"PgUp", "\x1b[5~", "\x1b[5~"},
		{"PageDown", "\x1b[6~", "\x1b[6~"},
		{"NPage", "\x1b[6~", "\x1b[6~"},
		{"PgDn", "\x1b[6~", "\x1b[6~"},
		{"C-PageDown", "\x1b[6;5~", "\x1b[6;5~"},
		{"M-Delete", "\x1b[3;3~", "\x1b[3;3~"},
		{"Enter", "\r", "\r"},
		{"M-Enter", "\x1b\r", "\x1b\r"},
		{"Tab", "\t", "\t"},
		{"S-Tab", "\x1b[Z", "\x1b[Z"},
		{"BTab", "\x1b[Z", "\x1b[Z"},
		{"M-Tab", "\x1b\t", "\x1b\t"},
		{"Escape", "\x1b", "\x1b"},
		{"M-Escape", "\x1b\x1b", "\x1b\x1b"},
		{"Space", " ", " "},
		{"C-Space", "\x00", "\x00"},
		{"M-Space", "\x1b ", "\x1b "},
		{"BSpace", "\x7f", "\x7f"},
		{"C-BSpace", "\b", "\b"},
		{"M-BSpace", "\x1b\x7f", "\x1b\x7f"},
		{"a", "a", "a"},
		{"A", "A", "A"},
		{"é", "é", "é"},
		{"~", "~", "~"},
		{"C-a", "\x01", "\x01"},
		{"C-c", "\x03", "\x03"},
		{"c-d", "\x04", "\x04"},
		{"C-z", "\x1a", "\x1a"},
		{"C-Z", "\x1a", "\x1a"},
		{"^c", "\x03", "\x03"},
		{"C-@", "\x00", "\x00"},
		{"C-[", "\x1b", "\x1b"},
		{"C-\\", "\x1c", "\x1c"},
		{"C-]", "\x1d", "\x1d"},
		{"C-^", "\x1e", "\x1e"},
		{"C-_", "\x1f", "\x1f"},
		{"C-/", "\x1f", "\x1f"},
		{"C--", "\x1f", "\x1f"},
		{"C-?", "\x7f", "\x7f"},
		{"M-x", "\x1bx", "\x1bx"},
		{"M-X", "\x1bX", "\x1bX"},
		{"M-.", "\x1b.", "\x1b."},
		{"C-M-a", "\x1b\x01", "\x1b\x01"},
		{"M-C-a", "\x1b\x01", "\x1b\x01"},
		{"-", "-", "-"},
		{"KP0", "0", "\x1bOp"},
		{"KP5", "5", "\x1bOu"},
		{"KP9", "9", "\x1bOy"},
		{"KP/", "/", "\x1bOo"},
		{"KP*", "*", "\x1bOj"},
		{"KP-", "-", "\x1bOm"},
		{"KP+", "+", "\x1bOk"},
		{"KP.", ".", "\x1bOn"},
		{"KPEnter", "\r", "\x1bOM"},
	} {
		keys, err := parseKeys("pty-write pty-1", []string{c.name})
		if err != nil {
			t.Errorf("%q: %v", c.name, err)
			continue
		}
		for _, m := range []struct {
			modes keyModes
			want  string
		}{{keyModes{}, c.normal}, {keyModes{appCursor: true, appKeypad: true}, c.app}} {
			if got := string(appendKey(nil, keys[0], m.modes)); got != m.want {
				t.Errorf("%q with %+v sends %q, want %q", c.name, m.modes, got, m.want)
			}
		}
	}
	// The two modes are apart: DECCKM alone moves the cursor keys, DECKPAM
	// alone the keypad.
	keys, _ := parseKeys("", []string{"Up", "KP1"})
	if got := string(appendKey(appendKey(nil, keys[0], keyModes{appKeypad: true}), keys[1], keyModes{appKeypad: true})); got != "\x1b[A\x1bOq" {
		t.Errorf("keypad mode alone: %q", got)
	}
	if got := string(appendKey(appendKey(nil, keys[0], keyModes{appCursor: true}), keys[1], keyModes{appCursor: true})); got != "\x1bOA1" {
		t.Errorf("cursor mode alone: %q", got)
	}
}

// A name that is no key is ErrInvalid naming it and where it was.
func TestKeyNamesInvalid(t *testing.T) {
	testkit.Parallel(t)
	for _, c := range []struct{ name, why string }{
		{"Esc", "tmux calls it Escape"},
		{"Return", "tmux calls it Enter"},
		{"Backspace", "tmux calls it BSpace"},
		{"Downn", "is not a key name"},
		{"", "is not a key name"},
		{"hello", "is not a key name"},
		{"X-Up", `unknown modifier "X-"`},
		{"S-a", "S- on a character"},
		{"C-1", "no control code"},
		{"C-Enter", "sends nothing different"},
		{"S-Escape", "sends nothing different"},
		{"C-KP1", "keypad"},
		{"\x03", "control character"},
	} {
		_, err := parseKeys("pty-write pty-7", []string{"Up", c.name})
		if !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), "agentpty: invalid argument: pty-write pty-7: keys[1] ") ||
			!strings.Contains(err.Error(), c.why) {
			t.Errorf("%q: %v, want ErrInvalid naming keys[1] and %q", c.name, err, c.why)
		}
	}
}

// Typed input's cursor keys follow DECCKM as a keyboard's do: only the six
// whole unmodified sequences, and not inside a bracketed paste.
func TestCursorKeysInInput(t *testing.T) {
	testkit.Parallel(t)
	app := keyModes{appCursor: true}
	for _, c := range []struct{ in, app string }{
		{"\x1b[A\x1b[B\x1b[C\x1b[D\x1b[H\x1b[F", "\x1bOA\x1bOB\x1bOC\x1bOD\x1bOH\x1bOF"},
		{"x\x1b[Bq", "x\x1bOBq"},
		{"\x1b[1;5A", "\x1b[1;5A"},
		{"\x1b[2~\x1b[Z\x1b[E", "\x1b[2~\x1b[Z\x1b[E"},
		{"\x1b\x1b[B", "\x1b\x1bOB"},
		{"\x1b[", "\x1b["},
		{"\x1b", "\x1b"},
		{"[B", "[B"},
		{"\x1b[200~a\x1b[Bb\x1b[201~\x1b[B", "\x1b[200~a\x1b[Bb\x1b[201~\x1bOB"},
		{"\x1b[200~\x1b[B", "\x1b[200~\x1b[B"},
	} {
		if got := string(cursorKeys([]byte(c.in), app)); got != c.app {
			t.Errorf("%q under DECCKM: %q, want %q", c.in, got, c.app)
		}
		if got := string(cursorKeys([]byte(c.in), keyModes{appKeypad: true})); got != c.in {
			t.Errorf("%q without DECCKM: %q, want it unchanged", c.in, got)
		}
	}
}

// The bytes keys send reach the program as the modes make them, and the
// Approver is asked about exactly those bytes: a program that turns on
// DECCKM and DECKPAM gets SS3 forms, one that turns them off CSI forms and
// plain digits; literal input goes as it is. cat -v shows what arrived.
func TestKeysReachTheProgramInItsModes(t *testing.T) {
	testkit.Parallel(t)
	var mu sync.Mutex
	var asked []string
	approver := ApproverFunc(func(_ context.Context, req ApprovalRequest) error {
		mu.Lock()
		defer mu.Unlock()
		if req.Tool == ToolWrite {
			asked = append(asked, req.Input)
		}
		return nil
	})
	m := newManager(t, Options{Approver: approver, ApproveWrites: true})
	lastAsked := func() string {
		mu.Lock()
		defer mu.Unlock()
		return asked[len(asked)-1]
	}
	for _, c := range []struct{ modes, want, typed string }{
		{`\033[?1h\033=`, "^[OH^[OD^[OB^[Ou^[[1;5A", "\x1bOH\x1bOD\x1bOB\x1bOu\x1b[1;5A\r"},
		{`\033[?1l\033>`, "^[[H^[[D^[[B5^[[1;5A", "\x1b[H\x1b[D\x1b[B5\x1b[1;5A\r"},
	} {
		res := mustStart(t, m, StartRequest{Command: "stty -echo; printf '" + c.modes + "'; echo ready; exec cat -v", WaitFor: "ready\n"}) // its line feed read too, or the write's output would hold the line again
		// Input's Home and Left, then the keys, then submit's Enter.
		w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: `\e[H\e[D`, Keys: []string{"Down", "KP5", "C-Up"}, Submit: true, WaitFor: c.want})
		if got := lastAsked(); got != c.typed || w.Output != c.want {
			t.Errorf("after %s: output %q, the Approver was asked about %q; want %q", c.modes, w.Output, got, c.typed)
		}
		w = mustWrite(t, m, WriteRequest{ID: res.ID, Input: "\x1b[A", Literal: true, Submit: true, WaitFor: "^[[A"})
		if got := lastAsked(); got != "\x1b[A\r" || w.Output != "^[[A" {
			t.Errorf("literal input after %s: output %q, asked %q", c.modes, w.Output, got)
		}
	}
}

// An unknown key name is ErrInvalid naming the session and the name, and
// nothing of the write is typed: not its input, not the keys before it.
func TestUnknownKeyTypesNothing(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: "stty -echo; echo ready; exec cat -v", WaitFor: "ready"})
	_, err := m.Call(waitCtx(t), ToolWrite, json.RawMessage(`{"id":"`+res.ID+`","input":"abc","keys":["Down","Bogus"],"submit":true}`))
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "pty-write "+res.ID+`: keys[1] "Bogus" is not a key name`) {
		t.Fatalf("an unknown key: %v", err)
	}
	if _, err := m.Call(waitCtx(t), ToolWrite, json.RawMessage(`{"id":"`+res.ID+`","keys":"Down"}`)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("keys as a string, not a list: %v", err)
	}
	raw, err := m.Call(waitCtx(t), ToolWrite, json.RawMessage(`{"id":"`+res.ID+`","input":"x","keys":["y","C-a","Enter"],"wait_for":"xy^A"}`))
	if err != nil || !strings.Contains(string(raw), `"output":"xy^A","matched":true`) {
		t.Fatalf("the next write reads only its own keys: %s %v", raw, err)
	}
}

// cursorKeys changes nothing but the [ of a cursor key to O: the length
// and every other byte stay, and nothing changes outside DECCKM.
func FuzzCursorKeys(f *testing.F) {
	for _, s := range []string{"\x1b[A", "a\x1b[1;5B\x1b[C", "\x1b[200~\x1b[D\x1b[201~\x1b[H", "\x1b\x1b[F", "\x1b["} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		in := string(p)
		if got := string(cursorKeys(p, keyModes{})); got != in {
			t.Fatalf("outside DECCKM %q became %q", in, got)
		}
		got := cursorKeys([]byte(in), keyModes{appCursor: true})
		if len(got) != len(in) {
			t.Fatalf("%q became %q", in, got)
		}
		for i := range got {
			if got[i] != in[i] && !(in[i] == '[' && got[i] == 'O' && i > 0 && in[i-1] == 0x1b && i+1 < len(in) && strings.IndexByte("ABCDHF", in[i+1]) >= 0) {
				t.Fatalf("%q became %q at %d", in, got, i)
			}
		}
	})
}

// What keys type is typed as input is: wait_for skips its echo. The line
// is typed key by key into bash's readline and wait_for returns once bash
// has run it, not at the echo of the line.
func TestWaitForSkipsTheEchoOfKeys(t *testing.T) {
	testkit.Parallel(t)
	need(t, "bash")
	m := newManager(t, Options{})
	res := mustStart(t, m, StartRequest{Command: "PS1='$ ' bash --norc -i", WaitFor: "$ "})
	var keys []string
	for _, r := range `sleep 0.5; echo "exit=$?"` {
		keys = append(keys, string(r))
	}
	w, err := m.Write(waitCtx(t), WriteRequest{ID: res.ID, Keys: append(keys, "Enter"), WaitFor: "exit="})
	if err != nil || !w.Matched || !strings.Contains(w.Output, "\nexit=0") {
		t.Fatalf("wait_for returned before bash printed exit=0: %+v %v", w, err)
	}
}
