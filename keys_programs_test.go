package agentpty

import (
	"os"
	"os/exec"
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
