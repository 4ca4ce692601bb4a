package agentpty

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/agentpty/agentpty/internal/testkit"
)

// playback plays a recording with `asciinema cat` in a session of
// cols×rows of m (asciinema wants a terminal) and returns the screen it
// leaves.
func playback(t *testing.T, m *Manager, cast []byte, cols, rows int) []string {
	t.Helper()
	need(t, "asciinema")
	file := filepath.Join(t.TempDir(), "session.cast")
	if err := os.WriteFile(file, cast, 0o600); err != nil {
		t.Fatal(err)
	}
	// The recording's terminal queries are answered as it plays (a
	// terminal answers what it is shown); asciinema reads none of it, and
	// with echo on the answers would show on the screen.
	res := mustStart(t, m, StartRequest{Command: "stty -echo; exec asciinema cat " + file, Cols: cols, Rows: rows,
		Env: []string{"LANG=C.UTF-8", "LC_ALL=C.UTF-8"}, WaitMS: ms(0)})
	s, _ := m.Session(res.ID)
	st, err := s.Wait(waitCtx(t))
	if err != nil || st.Code != 0 {
		t.Fatalf("asciinema cat: %v %v: %s", st, err, s.Scrollback())
	}
	return s.Screen().Lines
}

// castEvents parses a recording: its header and its events.
func castEvents(t *testing.T, cast []byte) (map[string]any, [][]any) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(cast))
	sc.Buffer(nil, 1<<24)
	var header map[string]any
	var events [][]any
	for i := 0; sc.Scan(); i++ {
		if i == 0 {
			if err := json.Unmarshal(sc.Bytes(), &header); err != nil {
				t.Fatalf("header %q: %v", sc.Text(), err)
			}
			continue
		}
		var ev []any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || len(ev) != 3 {
			t.Fatalf("event %d %q: %v", i, sc.Text(), err)
		}
		events = append(events, ev)
	}
	return header, events
}

func sameLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n%s\n-- the session's screen --\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// vim recorded from its start, through typing and a resize, plays back as
// the screen the session shows.
func TestRecordVimPlaysBack(t *testing.T) {
	need(t, "vim", "asciinema")
	m := newManager(t, Options{RecordInput: true})
	start := mustStart(t, m, StartRequest{Command: "echo ready; read; exec vim -u NONE -N -i NONE -n", Cwd: t.TempDir(), Cols: 60, Rows: 12, WaitFor: "ready"})
	s, _ := m.Session(start.ID)
	var cast bytes.Buffer
	if err := s.Record(&cast); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, m, WriteRequest{ID: start.ID, Submit: true, WaitFor: "~", WaitMS: ms(10000)})
	mustWrite(t, m, WriteRequest{ID: start.ID, Input: `ihello 日本 world\e`, WaitFor: "world"})
	if err := s.Resize(50, 10); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, m, WriteRequest{ID: start.ID, Input: `:set number\r`, WaitFor: "1 hello"})
	// SIGKILL leaves vim's screen up, as a crash does; the recording ends
	// with the output.
	if err := s.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Wait(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	want := s.Screen().Lines
	if _, err := m.Kill(waitCtx(t), start.ID); err != nil {
		t.Fatal(err)
	}
	header, events := castEvents(t, cast.Bytes())
	if header["version"] != 2.0 || header["width"] != 60.0 || header["height"] != 12.0 || header["command"] == "" ||
		header["timestamp"] == nil || header["env"].(map[string]any)["TERM"] != "xterm-256color" {
		t.Errorf("header %v", header)
	}
	kinds := map[string]int{}
	var resize, input string
	for _, ev := range events {
		kind := ev[1].(string)
		kinds[kind]++
		switch kind {
		case "r":
			resize = ev[2].(string)
		case "i":
			input += ev[2].(string)
		}
	}
	if resize != "50x10" || kinds["o"] < 3 || !strings.Contains(input, "ihello 日本 world\x1b") {
		t.Errorf("events %v, resize %q, input %q", kinds, resize, input)
	}
	sameLines(t, "asciinema cat", playback(t, m, cast.Bytes(), 50, 10), want)
}

// A recording started late begins with the screen as it is, colours and
// all, so it plays back right too.
func TestRecordStartedLate(t *testing.T) {
	testkit.Parallel(t)
	need(t, "asciinema")
	m := newManager(t, Options{})
	start := mustStart(t, m, StartRequest{
		Command: `printf '\e[1;31mred\e[0m plain\n\e[44mblue\e[0m\n'; read -p 'one> ' a; printf '\e[2;1Hover'; read -p 'two> ' b`,
		Cols:    40, Rows: 6, WaitFor: "one> ",
	})
	s, _ := m.Session(start.ID)
	var cast bytes.Buffer
	if err := s.Record(&cast); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, m, WriteRequest{ID: start.ID, Input: "x", Submit: true, WaitFor: "two> "})
	want := s.Screen().Lines
	if _, err := m.Kill(waitCtx(t), start.ID); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cast.String(), `\u001b[0;1;38;5;1m`) && !strings.Contains(cast.String(), `\u001b[0;1;38;5;9m`) {
		t.Errorf("the first event does not redraw the colours: %s", cast.String())
	}
	sameLines(t, "asciinema cat", playback(t, m, cast.Bytes(), 40, 6), want)
	if err := s.Record(&cast); !isErr(err, ErrExited) {
		t.Errorf("Record after Kill: %v, want ErrExited", err)
	}
}

// blockedWriter blocks every Write until released.
type blockedWriter struct {
	release chan struct{}
	once    sync.Once
	entered chan struct{}
	buf     bytes.Buffer
}

func (w *blockedWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.entered) })
	<-w.release
	return w.buf.Write(p)
}

// A writer that stops does not stall the session: the program floods and
// finishes while the recording waits; released, the recording skips to
// the screen as it is and still plays back right.
func TestRecordSlowWriterStallsNothing(t *testing.T) {
	testkit.Parallel(t)
	need(t, "asciinema")
	m := newManager(t, Options{ScrollbackBytes: 64 << 10})
	start := mustStart(t, m, StartRequest{Command: "echo ready; read; seq 1 200000; read -p 'done> ' x", Cols: 40, Rows: 8, WaitFor: "ready"})
	s, _ := m.Session(start.ID)
	w := &blockedWriter{release: make(chan struct{}), entered: make(chan struct{})}
	recorded := make(chan error, 1)
	go func() { recorded <- s.Record(w) }()
	<-w.entered // Record is blocked in its header: the tap is registered
	res := mustWrite(t, m, WriteRequest{ID: start.ID, Submit: true, WaitFor: "done> ", WaitMS: ms(30000)})
	if res.Truncated == 0 {
		t.Errorf("the flood did not pass the ring (truncated %d): the test shows nothing", res.Truncated)
	}
	want := s.Screen().Lines
	close(w.release)
	if err := <-recorded; err != nil {
		t.Fatal(err)
	}
	if _, err := m.Kill(waitCtx(t), start.ID); err != nil {
		t.Fatal(err)
	}
	sameLines(t, "asciinema cat after a stalled writer", playback(t, m, w.buf.Bytes(), 40, 8), want)
}

// failWriter fails after n writes.
type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n--; w.n < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

// A writer that fails at once makes Record fail and leaves nothing behind;
// one that fails later ends its recording only.
func TestRecordWriterFails(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	start := mustStart(t, m, StartRequest{Command: readyCat, WaitFor: "ready"})
	s, _ := m.Session(start.ID)
	for _, n := range []int{0, 1} {
		err := s.Record(&failWriter{n: n})
		if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), start.ID) {
			t.Errorf("Record to a writer failing after %d writes: %v", n, err)
		}
	}
	late := &failWriter{n: 2}
	if err := s.Record(late); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, m, WriteRequest{ID: start.ID, Input: "more", Submit: true, WaitFor: "more\nmore"})
	taps := tapCount(s)
	if taps > 1 {
		t.Errorf("%d taps left after failed recordings", taps)
	}
}

// A pty-run command is typed input like a write's, so a recording with
// RecordInput holds it as an "i" event. The header names the bash a shell
// session runs, not Options.Shell.
func TestRecordRunInput(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{RecordInput: true, Shell: []string{"sh", "-c"}})
	start := mustStart(t, m, StartRequest{Shell: true})
	s, _ := m.Session(start.ID)
	var cast bytes.Buffer
	if err := s.Record(&cast); err != nil {
		t.Fatal(err)
	}
	r, err := m.Run(waitCtx(t), RunRequest{ID: start.ID, Command: "echo run-typed"})
	if err != nil || !r.PromptAfter || r.Output != "run-typed" {
		t.Fatalf("run: %v %+v", err, r)
	}
	if _, err := m.Kill(waitCtx(t), start.ID); err != nil {
		t.Fatal(err)
	}
	header, events := castEvents(t, cast.Bytes())
	if sh := header["env"].(map[string]any)["SHELL"]; sh != "bash" {
		t.Errorf("a shell session's recording names SHELL %v, want the bash it runs", sh)
	}
	// The command is handed to the shell, not typed: a marker names it.
	var input, marks string
	for _, ev := range events {
		switch ev[1] {
		case "i":
			input += ev[2].(string)
		case "m":
			marks += ev[2].(string)
		}
	}
	if marks != "echo run-typed" || !strings.Contains(input, " . '") || strings.Contains(input, "run-typed") {
		t.Errorf("the run's command: markers %q, input events %q", marks, input)
	}
}

// gatedWriter writes to a file, holding each write while held is set
// until release is closed: a slow disk.
type gatedWriter struct {
	f       *os.File
	held    atomic.Bool
	release chan struct{}
}

func (w *gatedWriter) Write(p []byte) (int, error) {
	if w.held.Load() {
		<-w.release
	}
	return w.f.Write(p)
}

// castOutput is the output events of the recording in file, joined.
func castOutput(t *testing.T, file string) string {
	t.Helper()
	cast, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, events := castEvents(t, cast)
	var out strings.Builder
	for _, ev := range events {
		if ev[1] == "o" {
			out.WriteString(ev[2].(string))
		}
	}
	return out.String()
}

// Stop returns once every frame rendered so far is in the file, however
// slow the file is, so closing it then keeps the whole recording; after
// the program has exited and Wait returned, that is all of its output.
func TestRecordStopWritesEveryFrame(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	ctx := waitCtx(t)
	dir := t.TempDir()

	start := mustStart(t, m, StartRequest{Command: "echo ready; read; seq -f 'frame-%g' 1 300; echo all-out; read", WaitFor: "ready"})
	s, _ := m.Session(start.ID)
	f, err := os.Create(filepath.Join(dir, "live.cast"))
	if err != nil {
		t.Fatal(err)
	}
	w := &gatedWriter{f: f, release: make(chan struct{})}
	rec, err := s.StartRecording(w)
	if err != nil {
		t.Fatal(err)
	}
	w.held.Store(true) // the file stalls from here on
	mustWrite(t, m, WriteRequest{ID: start.ID, Submit: true, WaitFor: "all-out"})
	stopped := make(chan error, 1)
	go func() { stopped <- rec.Stop(ctx) }()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while the file still held back the frames", err)
	default:
	}
	close(w.release)
	if err := <-stopped; err != nil {
		t.Fatalf("Stop: %v", err)
	}
	select {
	case <-rec.Done():
	default:
		t.Error("Done is not closed after Stop returned")
	}
	f.Close()
	out := castOutput(t, f.Name())
	for _, want := range []string{"frame-1\r\n", "frame-150\r\n", "frame-300\r\n", "all-out"} {
		if !strings.Contains(out, want) {
			t.Errorf("the closed recording lacks %q; it holds %d bytes of output", want, len(out))
		}
	}
	if err := rec.Stop(ctx); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
	if _, err := m.Kill(ctx, start.ID); err != nil {
		t.Fatal(err)
	}

	// The program runs to its end: Wait, then Stop, then Close.
	start = mustStart(t, m, StartRequest{Command: "echo ready; read; seq -f 'line-%g' 1 3000", WaitFor: "ready"})
	s, _ = m.Session(start.ID)
	f, err = os.Create(filepath.Join(dir, "exit.cast"))
	if err != nil {
		t.Fatal(err)
	}
	if rec, err = s.StartRecording(f); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, m, WriteRequest{ID: start.ID, Submit: true, WaitMS: ms(0)})
	if _, err := s.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rec.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	f.Close()
	if out := castOutput(t, f.Name()); !strings.Contains(out, "line-3000\r\n") {
		t.Errorf("the recording of a program that exited lacks its last line; it ends %q", out[max(0, len(out)-80):])
	}
	if _, err := m.Kill(ctx, start.ID); err != nil {
		t.Fatal(err)
	}
}

// Stop on a recording whose writer failed returns the writer's error.
func TestRecordStopReportsWriterError(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	start := mustStart(t, m, StartRequest{Command: readyCat, WaitFor: "ready"})
	s, _ := m.Session(start.ID)
	w := &failWriter{n: 2}
	rec, err := s.StartRecording(w)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, m, WriteRequest{ID: start.ID, Input: "x", Submit: true, WaitFor: "x\nx"})
	if err := rec.Stop(waitCtx(t)); err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), start.ID) {
		t.Errorf("Stop after the writer failed: %v, want the writer's error naming %s", err, start.ID)
	}
	if _, err := m.Kill(context.Background(), start.ID); err != nil {
		t.Fatal(err)
	}
}
