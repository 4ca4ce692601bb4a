package agentpty

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpty/agentpty/internal/testkit"
)

// Expect consumes up to the end of its match, byte-correct with multibyte
// text split across writes; the rest stays for the next Expect.
func TestExpectConsumesUpToTheMatch(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	start := mustStart(t, m, StartRequest{Command: "echo ready; read; " +
		// 日 is e6 97 a5: split across two writes with a pause between.
		`printf '\e[1mαβ\e[0mγ|\xe6\x97'; sleep 0.1; printf '\xa5本|\r\nend\n'; read`, WaitFor: "ready"})
	s, _ := m.Session(start.ID)
	ctx := waitCtx(t)
	if err := s.Send("\r"); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct{ re, want string }{
		{`β`, "\nαβ"}, // the Enter's echo comes first
		{`.`, "γ"},
		{`\|.`, "|日"},
		{`本\|\n`, "本|\n"},
		{`end`, "end"},
	} {
		got, err := s.Expect(ctx, regexp.MustCompile(step.re))
		if err != nil {
			t.Fatalf("Expect(%s): %v", step.re, err)
		}
		if got != step.want {
			t.Errorf("Expect(%s) = %q, want %q", step.re, got, step.want)
		}
	}
	// What a result returned is not matched again.
	if err := s.Send("x\r"); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, m, WriteRequest{ID: start.ID, WaitMS: ms(10000)}) // ends at exit
	_, err := s.Expect(ctx, regexp.MustCompile(`end`))
	if !isErr(err, ErrExited) || !strings.Contains(err.Error(), start.ID) {
		t.Errorf("Expect after exit, everything read: %v; want ErrExited naming %s", err, start.ID)
	}
	if _, err := s.Expect(ctx, nil); !isErr(err, ErrInvalid) {
		t.Errorf("Expect(nil): %v, want ErrInvalid", err)
	}
}

// Expect ends with its context, and says so.
func TestExpectContext(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{})
	start := mustStart(t, m, StartRequest{Command: readyCat, WaitFor: "ready"})
	s, _ := m.Session(start.ID)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := s.Expect(ctx, regexp.MustCompile(`never`))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "never") {
		t.Errorf("Expect past its deadline: %v", err)
	}
}

// memSpool keeps what it is given.
type memSpool struct {
	mu    sync.Mutex
	texts map[string]string
	fail  string // "error" or "panic"
}

func (p *memSpool) Put(id, text string) (string, error) {
	switch p.fail {
	case "error":
		return "", errors.New("disk full")
	case "panic":
		panic("spool broke")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	ref := "spool:" + id + ":" + string(rune('a'+len(p.texts)))
	p.texts[ref] = text
	return ref, nil
}

// Output over the cap goes whole to the spool and the result says where;
// a failing or panicking spool leaves the result as it is.
func TestSpool(t *testing.T) {
	testkit.Parallel(t)
	sp := &memSpool{texts: map[string]string{}}
	m := newManager(t, Options{MaxOutputBytes: 1000, Spool: sp})
	res := mustStart(t, m, StartRequest{Command: "seq 1 2000; echo end; read", WaitFor: "end"})
	if len(res.Output) > 1000 || res.Spool == "" {
		t.Fatalf("capped output of %d bytes, spool %q", len(res.Output), res.Spool)
	}
	whole := sp.texts[res.Spool]
	if !strings.HasPrefix(whole, "1\n2\n3\n") || !strings.Contains(whole, "\n1000\n1001\n") || !strings.HasSuffix(whole, "2000\nend") {
		t.Errorf("the spooled text is not the whole output: %d bytes, ends %q", len(whole), whole[max(0, len(whole)-40):])
	}
	out, err := m.Call(context.Background(), ToolWrite, json.RawMessage(`{"id":"`+res.ID+`","input":"x","submit":true,"wait_ms":10000}`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), `"spool"`) {
		t.Errorf("a short result carries a spool reference: %s", out)
	}
	// The same flood on kill, and truncated on pty-kill's result.
	res = mustStart(t, m, StartRequest{Command: "echo ready; read; seq 1 3000; echo fin; read", WaitFor: "ready"})
	s, _ := m.Session(res.ID)
	if err := s.Send("\r"); err != nil { // a write's result would read part of the flood
		t.Fatal(err)
	}
	awaitUnread(t, s, "fin")
	kill, err := m.Kill(waitCtx(t), res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if kill.Spool == "" || !strings.Contains(sp.texts[kill.Spool], "\n1500\n") {
		t.Errorf("kill's capped output: spool %q", kill.Spool)
	}

}

// A spool that fails or panics leaves the result as it is.
func TestSpoolFailing(t *testing.T) {
	testkit.Parallel(t)
	for _, fail := range []string{"error", "panic"} {
		t.Run(fail, func(t *testing.T) {
			m := newManager(t, Options{MaxOutputBytes: 1000, Spool: &memSpool{fail: fail}})
			res := mustStart(t, m, StartRequest{Command: "seq 1 2000; echo end; read", WaitFor: "end"})
			if res.Spool != "" || !strings.Contains(res.Output, "elided") || !strings.HasSuffix(res.Output, "end") {
				t.Errorf("a spool that fails with %s: result %q spool %q", fail, res.Output, res.Spool)
			}
		})
	}
}

// pty-kill's result carries truncated, as the others do.
func TestKillReportsTruncated(t *testing.T) {
	testkit.Parallel(t)
	m := newManager(t, Options{ScrollbackBytes: 8 << 10})
	res := mustStart(t, m, StartRequest{Command: "echo ready; read; seq 1 20000; echo end; read", WaitFor: "ready"})
	s, _ := m.Session(res.ID)
	if err := s.Send("\r"); err != nil { // a write's result would read part of the flood
		t.Fatal(err)
	}
	awaitUnread(t, s, "end")
	out, err := m.Call(context.Background(), ToolKill, json.RawMessage(`{"id":"`+res.ID+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	var kill KillResult
	if err := json.Unmarshal(out, &kill); err != nil {
		t.Fatal(err)
	}
	if kill.Truncated < 80000 || !strings.Contains(string(out), `"truncated":`) {
		t.Errorf("pty-kill after 108 KB through an 8 KiB ring: %s", out)
	}
}
