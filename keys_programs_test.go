package agentpty

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// arrowDown are the ways a write presses the down arrow: the key by name,
// and the escape a model types in input, which follows the cursor-key
// mode as the key does.
var arrowDown = []struct {
	name string
	req  WriteRequest
}{
	{"keys", WriteRequest{Keys: []string{"Down"}}},
	{"input", WriteRequest{Input: `\e[B`}},
}

// rawDown is what typing the escape did before it followed the mode: the
// bytes ESC [ B whatever the mode, which is not the arrow a program in
// application cursor mode reads.
var rawDown = WriteRequest{Input: "\x1b[B", Literal: true}

// press is req typed into session id with a full screen back.
func press(t *testing.T, m *Manager, id string, req WriteRequest, waitMS int) WriteResult {
	t.Helper()
	req.ID, req.Screen, req.WaitMS = id, ScreenFull, ms(waitMS)
	return mustWrite(t, m, req)
}

// sleepers starts n harmless processes for a test to look at, ended when
// it ends.
func sleepers(t *testing.T, n int) []int {
	t.Helper()
	var pids []int
	for range n {
		c := exec.Command("sleep", "1000")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = c.Process.Kill()
			_ = c.Wait()
		})
		pids = append(pids, c.Process.Pid)
	}
	return pids
}

// niceOf reads a process's nice value from /proc.
func niceOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b)[strings.LastIndexByte(string(b), ')')+2:])
	n, err := strconv.Atoi(f[16]) // field 19 of stat; f starts at field 3
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// litWith returns the first highlight whose text holds sub.
func litWith(hs []Highlight, sub string) (Highlight, bool) {
	for _, h := range hs {
		if strings.Contains(h.Text, sub) {
			return h, true
		}
	}
	return Highlight{}, false
}

// In htop the down arrow moves the selection to the next process. Typed
// as ESC [ B while htop has DECCKM on, htop reads Esc, [ and B, and [
// lowers the selected process's priority: the control shows that on a
// sleep of the test's own.
func TestKeysMoveHtopsSelection(t *testing.T) {
	need(t, "htop")
	pids := sleepers(t, 3)
	slices.Sort(pids) // htop lists them by PID
	list := strconv.Itoa(pids[0]) + "," + strconv.Itoa(pids[1]) + "," + strconv.Itoa(pids[2])
	m := newManager(t, Options{})
	start := func() (string, int) {
		t.Helper()
		res := mustStart(t, m, StartRequest{Command: "htop -d 100 -s PID -p " + list, Env: []string{"HTOPRC=" + t.TempDir() + "/htoprc"},
			Cols: 120, Rows: 30, WaitFor: "sleep", Screen: ScreenFull})
		w := press(t, m, res.ID, WriteRequest{}, 300)
		h, ok := litWith(w.Highlights, strconv.Itoa(pids[0]))
		if !ok {
			t.Fatalf("htop's selection is not on the first sleep %d: %+v\n%s", pids[0], w.Highlights, w.Output)
		}
		return res.ID, h.Row
	}
	for _, c := range arrowDown {
		id, row := start()
		w := press(t, m, id, c.req, 500)
		h, ok := litWith(w.Highlights, strconv.Itoa(pids[1]))
		if !ok || h.Row != row+1 {
			t.Errorf("%s: the selection did not move to the second sleep on row %d: %+v\n%s", c.name, row+1, w.Highlights, w.Output)
		}
		for _, pid := range pids {
			if n := niceOf(t, pid); n != 0 {
				t.Errorf("%s: the down arrow reniced sleep %d to %d", c.name, pid, n)
			}
		}
		if _, err := m.Kill(waitCtx(t), id); err != nil {
			t.Fatal(err)
		}
	}
	id, _ := start()
	press(t, m, id, rawDown, 500)
	if n := niceOf(t, pids[0]); n == 0 {
		t.Errorf("control: ESC [ B typed as it is left the selected sleep's nice at 0; the test cannot see a renice")
	}
}

// In a dialog menu the down arrow moves to the second item and Enter picks
// it. Typed as ESC [ B while dialog has DECCKM on, dialog takes the Esc as
// Cancel and exits 255: the control.
func TestKeysPickADialogMenuItem(t *testing.T) {
	need(t, "dialog")
	m := newManager(t, Options{})
	start := func() string {
		t.Helper()
		out := t.TempDir() + "/choice"
		res := mustStart(t, m, StartRequest{Command: "dialog --menu Pick 12 40 3 a one b two c three 2>" + out + "; echo \"rc=$? picked=$(cat " + out + ")\"; read x",
			Cols: 80, Rows: 24, WaitFor: "Cancel", Screen: ScreenFull})
		return res.ID
	}
	for _, c := range arrowDown {
		id := start()
		w := press(t, m, id, c.req, 500)
		if h, ok := litWith(w.Highlights, "two"); !ok || w.Exited || !strings.Contains(w.Output, "three") {
			t.Errorf("%s: the menu should stay open with the second item highlighted: %+v %+v\n%s", c.name, h, w.Highlights, w.Output)
		}
		w = mustWrite(t, m, WriteRequest{ID: id, Keys: []string{"Enter"}, WaitFor: "rc="})
		if !strings.Contains(w.Output, "rc=0 picked=b") {
			t.Errorf("%s: Enter should pick the second item: %q", c.name, w.Output)
		}
	}
	req := rawDown
	req.ID, req.WaitFor = start(), "rc="
	if w := mustWrite(t, m, req); !strings.Contains(w.Output, "rc=255") {
		t.Errorf("control: ESC [ B typed as it is should cancel dialog (rc=255): %q", w.Output)
	}
}

// In mc the down arrow moves the panel's selection bar from .. to the
// first file. The highlights of a read after it list the bar first and
// leave out the function-key labels on the last row, which are the same
// on every screen. Typed as ESC [ B, mc does not move the bar: the control.
func TestKeysMoveMcsSelection(t *testing.T) {
	need(t, "mc")
	dir := t.TempDir()
	for _, f := range []string{"alpha.txt", "beta.txt", "gamma.txt"} {
		if err := os.WriteFile(dir+"/"+f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := newManager(t, Options{})
	start := func() (string, WriteResult) {
		t.Helper()
		res := mustStart(t, m, StartRequest{Command: "mc --nosubshell --nomouse " + dir + " " + dir, Cwd: dir, Env: []string{"MC_HOME=" + t.TempDir()},
			Cols: 100, Rows: 24, WaitFor: "Quit"})
		w := press(t, m, res.ID, WriteRequest{}, 500)
		if _, ok := litWith(w.Highlights, "UP--DIR"); !ok {
			t.Fatalf("mc's selection bar is not on /..: %+v\n%s", w.Highlights, w.Output)
		}
		if _, ok := litWith(w.Highlights, "Help"); ok {
			t.Fatalf("the function-key labels are a row of key labels, not highlights: %+v", w.Highlights)
		}
		return res.ID, w
	}
	for _, c := range arrowDown {
		id, first := start()
		bar, _ := litWith(first.Highlights, "UP--DIR")
		w := press(t, m, id, c.req, 500)
		if len(w.Highlights) == 0 || !strings.Contains(w.Highlights[0].Text, "alpha.txt") || w.Highlights[0].Row != bar.Row+1 {
			t.Errorf("%s: the bar should move to alpha.txt on row %d and be listed first: %+v\n%s", c.name, bar.Row+1, w.Highlights, w.Output)
		}
		for _, h := range w.Highlights {
			if h.Row == 23 {
				t.Errorf("%s: the function-key labels are listed again: %+v", c.name, w.Highlights)
				break
			}
		}
	}
	id, first := start()
	bar, _ := litWith(first.Highlights, "UP--DIR")
	w := press(t, m, id, rawDown, 500)
	if h, ok := litWith(w.Highlights, "alpha.txt"); ok && h.Row == bar.Row+1 {
		t.Errorf("control: ESC [ B typed as it is moved mc's bar: %+v", w.Highlights)
	}
}

// vim moves its cursor down a row with the down arrow, whether it has
// turned on application cursor keys (its t_ks, the terminal's smkx) or
// left them off (t_ks empty); the keys follow the mode it is in.
func TestKeysMoveVimsCursorInBothModes(t *testing.T) {
	need(t, "vim")
	file := t.TempDir() + "/notes.txt"
	if err := os.WriteFile(file, []byte("one\ntwo\nthree\nfour\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, Options{})
	for _, c := range []struct {
		args      string
		appCursor bool
	}{
		{"", true},
		{" --cmd 'set t_ks= t_ke='", false},
	} {
		res := mustStart(t, m, StartRequest{Command: "vim -u NONE -N -i NONE" + c.args + " " + file, Cols: 60, Rows: 12, WaitFor: "four"})
		s, _ := m.Session(res.ID)
		w := press(t, m, res.ID, WriteRequest{}, 300)
		if got := s.keyModes(); got.appCursor != c.appCursor || *w.Cursor != (Cursor{0, 0}) {
			t.Fatalf("vim%s: cursor keys in application mode %v, want %v; cursor %v", c.args, got.appCursor, c.appCursor, *w.Cursor)
		}
		for i, down := range arrowDown {
			w = press(t, m, res.ID, down.req, 500)
			if want := (Cursor{i + 1, 0}); *w.Cursor != want {
				t.Errorf("vim%s: %s: the cursor is at %v, want %v\n%s", c.args, down.name, *w.Cursor, want, w.Output)
			}
		}
		mustWrite(t, m, WriteRequest{ID: res.ID, Keys: []string{":", "q", "!", "Enter"}, WaitMS: ms(300)})
	}
}
