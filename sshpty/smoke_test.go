package sshpty

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/internal/sshdtest"
)

func TestSmoke(t *testing.T) {
	srv := sshdtest.Start(t)
	c, err := srv.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := New(c)
	t0 := time.Now()
	term, err := b.Start(context.Background(), agentpty.Command{Argv: []string{"bash", "-c", "echo hi $TERM $FOO; stty size; sleep 0.2; exit 3"}, Env: []string{"TERM=xterm", "FOO=b'ar"}, Cols: 77, Rows: 22, Name: "pty-1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pid %d %T start %v", term.PID(), term, time.Since(t0))
	if sr, ok := term.(agentpty.StateReader); ok {
		t0 := time.Now()
		t.Logf("echo %v fg %+v in %v", sr.EchoOff(), sr.Foreground(), time.Since(t0))
		for i := 0; i < 3; i++ {
			t0 = time.Now()
			t.Logf("echo %v fg %+v in %v", sr.EchoOff(), sr.Foreground(), time.Since(t0))
		}
	}
	out, _ := io.ReadAll(term)
	st, err := term.Wait()
	t.Logf("out %q st %v err %v", out, st, err)
	if !strings.Contains(string(out), "hi xterm b'ar") {
		t.Error("no output")
	}
	term.Close()
}
