//go:build linux

package agentpty

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentpty/agentpty/internal/proc"
)

// TestSandboxRefusedCalls: io_uring (whose socket and file operations no
// seccomp filter sees) and the kernel keyrings (the host user's secrets)
// are refused in the sandbox, and work unconfined.
func TestSandboxRefusedCalls(t *testing.T) {
	need(t, "python3")
	script := try + fmt.Sprintf(`call() { python3 -c 'import ctypes, sys; sys.exit(eval(sys.argv[1]) < 0)' "$1"; }
try io_uring call 'ctypes.CDLL(None, use_errno=True).syscall(%d, 8, ctypes.create_string_buffer(120))'
try keyctl call 'ctypes.CDLL(None).syscall(%d, 0, -4, 1)'
echo "== end"`, unix.SYS_IO_URING_SETUP, unix.SYS_KEYCTL)
	sb := newTestSandbox(t, SandboxPolicy{})
	got, ctl := attack(t, sb, script)
	wantLines(t, ctl, "io_uring: done", "keyctl: done")
	wantLines(t, got, "io_uring: refused", "keyctl: refused")
}

// TestSandboxDiesWithHost: when the host process is killed, the sandboxed
// processes die with it, a program that ignores SIGHUP included; the
// unconfined control shows such a program outliving its host.
func TestSandboxDiesWithHost(t *testing.T) {
	if os.Getenv("AGENTPTY_TEST_SANDBOX_HOST") != "" {
		sandboxHost(t)
		return
	}
	for _, sandboxed := range []bool{true, false} {
		t.Run(fmt.Sprintf("sandboxed=%v", sandboxed), func(t *testing.T) {
			if _, err := NewSandbox(SandboxPolicy{}); err != nil {
				needKernel(t, err)
			}
			host := exec.Command(must(os.Executable()), "-test.run", "^TestSandboxDiesWithHost$")
			host.Env = append(os.Environ(), "AGENTPTY_TEST_SANDBOX_HOST="+strconv.FormatBool(sandboxed))
			out, err := host.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := host.Start(); err != nil {
				t.Fatal(err)
			}
			sid := 0
			for sc := bufio.NewScanner(out); sc.Scan(); {
				if v, ok := strings.CutPrefix(sc.Text(), "session "); ok {
					sid, _ = strconv.Atoi(v)
					break
				}
			}
			_ = host.Process.Kill()
			_ = host.Wait()
			if sid == 0 {
				t.Fatal("the host never reported its session")
			}
			defer proc.Signal(sid, syscall.SIGKILL)
			// The sandbox's processes die at once; the control's live on,
			// which a short wait shows.
			wait := 10 * time.Second
			if !sandboxed {
				wait = 2 * time.Second
			}
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			err = proc.WaitGone(ctx, sid)
			if sandboxed && err != nil {
				t.Errorf("processes %v of the sandbox outlived the host", proc.Members(sid))
			}
			if !sandboxed && err == nil {
				t.Errorf("the unconfined control died with its host: the test shows nothing")
			}
		})
	}
}

// sandboxHost is the host TestSandboxDiesWithHost kills: it starts a
// program that ignores SIGHUP and reports the session's id.
func sandboxHost(t *testing.T) {
	var sb Sandbox
	if os.Getenv("AGENTPTY_TEST_SANDBOX_HOST") == "true" {
		sb = must(NewSandbox(SandboxPolicy{}))
	}
	m := NewManager(Options{Sandbox: sb, Shell: sandboxShell})
	res, err := m.Start(context.Background(), StartRequest{Command: `trap '' HUP; echo "re""ady"; exec sleep 1000`, WaitFor: "ready"})
	if err != nil || !res.Matched {
		t.Fatalf("%v, %+v", err, res)
	}
	s, _ := m.Session(res.ID)
	fmt.Printf("session %d\n", s.PID())
	time.Sleep(time.Minute) // killed long before
}

// TestSandboxSurvivesThreadExit: threads of the host ending (a goroutine
// that exits locked ends its thread) do not end a sandboxed session,
// although bubblewrap dies with the thread that started it.
func TestSandboxSurvivesThreadExit(t *testing.T) {
	sb := newTestSandbox(t, SandboxPolicy{})
	m, res := sandboxed(t, sb, `echo "re""ady"; read -r line; echo "got $line"`, "ready")
	done := make(chan struct{})
	for range 32 {
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			done <- struct{}{}
		}()
	}
	for range 32 {
		<-done
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w, err := m.Write(ctx, WriteRequest{ID: res.ID, Input: "still here", Submit: true, WaitFor: "got still"})
	if err != nil || !w.Matched {
		t.Errorf("the session did not survive threads ending: %v, %+v", err, w)
	}
}
