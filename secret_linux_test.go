package agentpty

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeSudo is the attack: a prompt that looks like sudo's, started by the
// model, that prints what it is given reversed and in base64, past the
// mask.
const fakeSudo = `python3 -c 'import getpass, base64; p = getpass.getpass("[sudo] password for root: "); print("rev", p[::-1]); print("b64", base64.b64encode(p.encode()).decode()); input("done> ")'`

func reversed(s string) string {
	r := []rune(s)
	slices.Reverse(r)
	return string(r)
}

// Masking is cosmetic: without SecretPrograms a fake sudo prompt gets the
// secret and shows it transformed (the control). With the list, the
// secret is refused for it, naming the program, and typed nowhere; the
// input_hidden event and the result name the program asking.
func TestSecretProgramsRefuseFakePrompt(t *testing.T) {
	need(t, "python3", "sudo")
	const secret = "Fake-Sudo-Pw-93"
	b64 := base64.StdEncoding.EncodeToString([]byte(secret))
	ctx := waitCtx(t)

	open := newManager(t, Options{})
	start := mustStart(t, open, StartRequest{Command: fakeSudo, WaitFor: "password for root: "})
	res, err := open.WriteSecret(ctx, start.ID, []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	out := until(t, open, start.ID, res.Output, "done> ")
	if !strings.Contains(out, "rev "+reversed(secret)) || !strings.Contains(out, "b64 "+b64) {
		t.Fatalf("control: the fake prompt did not show the secret transformed: %q", out)
	}
	if _, err := open.Kill(ctx, start.ID); err != nil { // the next manager's leak check sees every session
		t.Fatal(err)
	}

	log := newEventLog()
	m := newManager(t, Options{SecretPrograms: []string{"sudo"}, OnEvent: log.add})
	for _, c := range []struct{ command, wait, name string }{
		{fakeSudo, "password for root: ", "python3"},
		{`read -s -p '[sudo] password for root: ' pw; echo "rev $(rev <<<"$pw")"`, "password for root: ", "bash"},
	} {
		start := mustStart(t, m, StartRequest{Command: c.command, WaitFor: c.wait})
		if !start.InputHidden || !strings.Contains(start.ForegroundExe, "/") {
			t.Errorf("%s: the result does not name the executable at the prompt: %+v", c.name, start)
		}
		ev := log.await(t, "input_hidden", func(e Event) bool { return e.Kind == EventInputHidden && e.ID == start.ID })
		if ev.Foreground != c.name || ev.ForegroundExe == "" {
			t.Errorf("%s: input_hidden event names %q (%q)", c.name, ev.Foreground, ev.ForegroundExe)
		}
		_, err := m.WriteSecret(ctx, start.ID, []byte(secret))
		if !isErr(err, ErrDenied) || !strings.Contains(err.Error(), c.name) || !strings.Contains(err.Error(), start.ID) ||
			!strings.Contains(err.Error(), "SecretPrograms") || strings.Contains(err.Error(), secret) {
			t.Errorf("%s: WriteSecret into a fake prompt: %v; want ErrDenied naming %s and the list", c.name, err, c.name)
		}
		s, _ := m.Session(start.ID)
		if st := s.State(); !st.InputHidden {
			t.Errorf("%s: the prompt is gone after a refused secret: %+v", c.name, st)
		}
		more := mustWrite(t, m, WriteRequest{ID: start.ID, WaitMS: ms(300)})
		assertNoSecret(t, reversed(secret), map[string]string{"output": more.Output, "session": secretTrail(s)})
		assertNoSecret(t, b64, map[string]string{"output": more.Output, "session": secretTrail(s)})
		if _, err := m.Kill(ctx, start.ID); err != nil {
			t.Fatal(err)
		}
	}
}

// A listed program is trusted only as the very file listed, owned by root
// and writable by no one else: a copy elsewhere, a copy others may write
// and one another user owns are refused.
func TestSecretProgramsTrustOnlyRootOwnedListed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing an executable's owner needs root; run the tests as root (CI does)")
	}
	dir := t.TempDir()
	bash := filepath.Join(dir, "bash")
	data, err := os.ReadFile("/bin/bash")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bash, data, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := waitCtx(t)
	prompt := "exec " + bash + ` -c 'read -s -p "Password: " pw; echo; echo "got ${#pw}"; read -p "next> " x'`
	for _, c := range []struct {
		list       []string
		mode       os.FileMode
		uid        int
		refusedFor string // "" when the secret is typed
	}{
		{[]string{"sudo", bash}, 0o755, 0, ""},
		{[]string{"bash"}, 0o755, 0, "Options.SecretPrograms: the secret is not typed into bash"},
		{[]string{bash}, 0o777, 0, "writable by others"},
		{[]string{bash}, 0o755, 65534, "not owned by root"},
	} {
		if err := os.Chmod(bash, c.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(bash, c.uid, 0); err != nil {
			t.Fatal(err)
		}
		m := newManager(t, Options{SecretPrograms: c.list})
		start := mustStart(t, m, StartRequest{Command: prompt, WaitFor: "Password: "})
		awaitReader(t, m, start.ID)
		if start.ForegroundExe != bash {
			t.Errorf("the result names the executable %q, want %q", start.ForegroundExe, bash)
		}
		res, err := m.WriteSecretWith(ctx, SecretRequest{ID: start.ID, Secret: []byte("pw-1234"), WaitFor: "next> "})
		switch {
		case c.refusedFor == "" && (err != nil || !res.Matched || !strings.Contains(res.Output, "got 7")):
			t.Errorf("list %q, %v uid %d: %+v %v; want the secret typed", c.list, c.mode, c.uid, res, err)
		case c.refusedFor != "" && (!isErr(err, ErrDenied) || !strings.Contains(err.Error(), c.refusedFor)):
			t.Errorf("list %q, %v uid %d: %v; want ErrDenied: %s", c.list, c.mode, c.uid, err, c.refusedFor)
		}
		if _, err := m.Kill(ctx, start.ID); err != nil {
			t.Fatal(err)
		}
	}
}

// sudo's real prompt, for a user with a password, is trusted under
// SecretPrograms {"sudo"}: the shell that started it waits for it and
// does not count. WriteSecretWith waits for sudo's answer.
func TestSecretProgramsSudo(t *testing.T) {
	const secret = "Sudo-Pw-5150"
	user := testUser(t, secret)
	m := newManager(t, Options{SecretPrograms: []string{"sudo"}})
	start := mustStart(t, m, StartRequest{
		Command: "setpriv --reuid=" + user + " --regid=" + user + " --init-groups -- " +
			`sudo -k -p "[sudo] pw: " id -un; echo "sudo exit $?"`,
		WaitFor: "[sudo] pw: ",
	})
	// Once sudo reads: until then the shell that forked it may still run.
	if at := awaitReader(t, m, start.ID); !strings.HasSuffix(at.ForegroundExe, "/sudo") {
		t.Errorf("the result names %q at sudo's prompt", at.ForegroundExe)
	}
	res, err := m.WriteSecretWith(waitCtx(t), SecretRequest{ID: start.ID, Secret: []byte(secret), WaitFor: "sudo exit"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Matched || !strings.Contains(res.Output, "root\n") || !strings.Contains(res.Output, "sudo exit 0") {
		t.Errorf("sudo with the list: %+v; want root in one call", res)
	}
}

// tracedLauncher starts argv[2:] as its child, traced (ptrace) when argv[1]
// is "trace", and waits for it: a parent that could read what the child
// reads.
const tracedLauncher = `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
pid = os.fork()
if pid == 0:
    if sys.argv[1] == "trace":
        libc.ptrace(0, 0, None, None)  # PTRACE_TRACEME
    os.execv(sys.argv[2], sys.argv[2:])
while True:
    _, st = os.waitpid(pid, 0)
    if not os.WIFSTOPPED(st):
        break
    sig = os.WSTOPSIG(st)
    libc.ptrace(7, pid, None, 0 if sig == 5 else sig)  # PTRACE_CONT
`

// A listed root-owned program is refused when code it did not come with
// runs in it: a library preloaded from a file the root does not own, or a
// parent tracing it. The controls (a root-owned library, no tracer) are
// typed into.
func TestSecretProgramsRefuseInjectedCode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing a file's owner needs root; run the tests as root (CI does)")
	}
	need(t, "python3")
	dir := t.TempDir()
	install := func(name, from string, uid int) string {
		t.Helper()
		data, err := os.ReadFile(from)
		if err != nil {
			t.Skipf("no %s to copy: %v", from, err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(path, uid, 0); err != nil {
			t.Fatal(err)
		}
		return path
	}
	bash := install("bash", "/bin/bash", 0)
	ownLib := install("libown.so", "/lib/x86_64-linux-gnu/libm.so.6", 0)
	foreignLib := install("libforeign.so", "/lib/x86_64-linux-gnu/libm.so.6", 65534)
	launcher := filepath.Join(dir, "launch.py")
	if err := os.WriteFile(launcher, []byte(tracedLauncher), 0o644); err != nil {
		t.Fatal(err)
	}
	prompt := bash + ` -c 'read -s -p "Password: " pw; echo; echo "got ${#pw}"; read -p "next> " x'`
	ctx := waitCtx(t)
	m := newManager(t, Options{SecretPrograms: []string{bash}})
	for _, c := range []struct {
		name, command, refusedFor string
	}{
		{"preloaded root-owned library", "LD_PRELOAD=" + ownLib + " exec " + prompt, ""},
		{"preloaded foreign library", "LD_PRELOAD=" + foreignLib + " exec " + prompt, "libforeign.so, which is not owned by root"},
		{"untraced child", "exec python3 " + launcher + " plain " + prompt, ""},
		{"traced child", "exec python3 " + launcher + " trace " + prompt, "traced by pid"},
	} {
		start := mustStart(t, m, StartRequest{Command: c.command, WaitFor: "Password: "})
		awaitReader(t, m, start.ID)
		res, err := m.WriteSecretWith(ctx, SecretRequest{ID: start.ID, Secret: []byte("pw-5678"), WaitFor: "next> "})
		switch {
		case c.refusedFor == "" && (err != nil || !strings.Contains(res.Output, "got 7")):
			t.Errorf("%s: %+v %v; want the secret typed", c.name, res, err)
		case c.refusedFor != "" && (!isErr(err, ErrDenied) || !strings.Contains(err.Error(), c.refusedFor)):
			t.Errorf("%s: %v; want ErrDenied: %s", c.name, err, c.refusedFor)
		}
		if _, err := m.Kill(ctx, start.ID); err != nil {
			t.Fatal(err)
		}
	}
}

// waitingThief turns echo off, shows a sudo-like prompt, then waits for a
// child of another session, and reads the terminal once the child is
// gone: at the moment WriteSecret looks, no process of the foreground
// group is running or reading. The child lives until the test kills it
// (it says its pid), so that moment does not depend on time.
const waitingThief = `python3 -c '
import os, subprocess, sys, termios
fd = sys.stdin.fileno()
a = termios.tcgetattr(fd)
a[3] &= ~termios.ECHO
termios.tcsetattr(fd, termios.TCSANOW, a)
child = subprocess.Popen(["sleep", "1000"], start_new_session=True)
print("child", child.pid)
print("[sudo] password for root: ", end="", flush=True)
child.wait()
line = sys.stdin.readline().strip()
print("\nrev", line[::-1])
input("done> ")
'`

// A program that waits for a child is let be as a shell running the
// prompt's program, but only beside a program that reads now: one that
// reads after its child has gone gets nothing. The control, without the
// list, shows it would get the secret.
func TestSecretProgramsRefuseWaitingReader(t *testing.T) {
	need(t, "python3")
	checkSecretThief(t, waitingThief, "password for root: ", "Waiting-Pw-77", "no program is reading", 1500)
}

// checkSecretThief starts command, which prompts with prompt and whose
// main thread waits for a child, and types secret: without SecretPrograms
// (the control) the thief must print it reversed; with {"sudo"} the write
// must be ErrDenied holding denial, and the secret appear nowhere within
// settleMS. A child the command names ("child PID") is killed once the
// secret is typed or refused, so that the thief reads only then.
func checkSecretThief(t *testing.T, command, prompt, secret, denial string, settleMS int) {
	t.Helper()
	ctx := waitCtx(t)
	for _, list := range [][]string{nil, {"sudo"}} {
		m := newManager(t, Options{SecretPrograms: list})
		start := mustStart(t, m, StartRequest{Command: command, WaitFor: prompt})
		s, _ := m.Session(start.ID)
		if !awaitChildWait(s.PID()) {
			t.Fatalf("the thief's main thread is not waiting for its child: the test would not show the fault")
		}
		res, err := m.WriteSecretWith(ctx, SecretRequest{ID: start.ID, Secret: []byte(secret), WaitMS: ms(0)})
		if child := regexp.MustCompile(`child (\d+)`).FindStringSubmatch(start.Output); child != nil {
			pid, _ := strconv.Atoi(child[1])
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatalf("killing the thief's child %d: %v", pid, err)
			}
		}
		switch {
		case list == nil && err != nil:
			t.Fatalf("control: %v; want the secret typed", err)
		case list == nil:
			if out := until(t, m, start.ID, res.Output, "done> "); !strings.Contains(out, "rev "+reversed(secret)) {
				t.Fatalf("control: %q; want the secret read by the thief", out)
			}
		case !isErr(err, ErrDenied) || !strings.Contains(err.Error(), denial):
			t.Errorf("with SecretPrograms: %+v %v; want ErrDenied ...%s", res, err, denial)
		}
		if list != nil {
			out := mustWrite(t, m, WriteRequest{ID: start.ID, WaitMS: ms(settleMS)})
			assertNoSecret(t, reversed(secret), map[string]string{"output": out.Output, "session": secretTrail(s)})
		}
		if _, err := m.Kill(ctx, start.ID); err != nil {
			t.Fatal(err)
		}
	}
}

func init() {
	// A host that is not root, typing a secret into sudo under
	// SecretPrograms: the kernel hides sudo's executable and memory from it.
	childModes["secret-host"] = func() {
		m := NewManager(Options{Shell: []string{"bash", "-c"}, SecretPrograms: []string{"sudo"}})
		defer m.Close()
		ctx := context.Background()
		start, err := m.Start(ctx, StartRequest{Command: `sudo -k -p "[sudo] pw: " id -un; echo "sudo exit $?"`, WaitFor: "[sudo] pw: "})
		if err != nil || !start.Matched {
			fmt.Printf("start: %v %q\n", err, start.Output)
			return
		}
		res, err := m.WriteSecretWith(ctx, SecretRequest{ID: start.ID, Secret: []byte(os.Getenv("AGENTPTY_TEST_SECRET")), WaitFor: "sudo exit"})
		fmt.Printf("sudo: matched %v, err %v, output %q\n", res.Matched, err, res.Output)
		fake, err := m.Start(ctx, StartRequest{Command: fakeSudo, WaitFor: "password for root: "})
		if err == nil {
			_, err = m.WriteSecret(ctx, fake.ID, []byte(os.Getenv("AGENTPTY_TEST_SECRET")))
		}
		fmt.Printf("fake: %v\n", err)
	}
}

// A host that is not root cannot look at sudo's executable or memory (sudo
// runs as root): it trusts sudo by its listed name, as the kernel keeps
// the session out of it, and still refuses a fake prompt.
func TestSecretProgramsSudoFromUnprivilegedHost(t *testing.T) {
	const secret = "Host-Pw-2468"
	user := testUser(t, secret)
	need(t, "setpriv", "python3")
	text := hostAs(t, user, "secret-host", secret)
	if !strings.Contains(text, "sudo: matched true, err <nil>") || !strings.Contains(text, `root\n`) || !strings.Contains(text, "sudo exit 0") {
		t.Errorf("sudo from a host that is not root, with SecretPrograms: %s", text)
	}
	if !strings.Contains(text, "fake: agentpty: denied") || !strings.Contains(text, "python3") {
		t.Errorf("a fake prompt from a host that is not root: %s", text)
	}
	if strings.Contains(text, secret) || strings.Contains(text, reversed(secret)) {
		t.Errorf("the secret shows: %s", text)
	}
}

// hostAs runs this test binary as user, in child mode mode with secret
// in its environment, and returns what it printed; within 150 s, as a
// host without a check may hang behind a sudo robbed of its password.
func hostAs(t *testing.T, user, mode, secret string) string {
	t.Helper()
	dir, bin := copyTestBinary(t, "agentpty-"+mode+"-", 0o755)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "setpriv", "--reuid="+user, "--regid="+user, "--init-groups", "--", bin, "-test.run=^$")
	cmd.WaitDelay = 5 * time.Second
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), childModeEnv+"="+mode, "AGENTPTY_TEST_SECRET="+secret, "HOME=/tmp")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the host as %s: %v\n%s", user, err, out)
	}
	return string(out)
}

// pty-run's result at a password prompt names the executable asking, as
// pty-start's and pty-write's do.
func TestRunResultNamesTheAsker(t *testing.T) {
	need(t, "python3")
	m := newManager(t, Options{})
	start := mustStart(t, m, StartRequest{Shell: true, WaitUntil: WaitUntilInput})
	res, err := m.Run(waitCtx(t), RunRequest{ID: start.ID, Command: `python3 -c 'import getpass; getpass.getpass("pw: ")'`, TimeoutMS: ms(10000)})
	if err != nil {
		t.Fatal(err)
	}
	if !res.InputHidden || !filepath.IsAbs(res.ForegroundExe) || !strings.HasPrefix(filepath.Base(res.ForegroundExe), "python3") {
		t.Errorf("pty-run at getpass's prompt: input_hidden %v, foreground_exe %q; want python3's path", res.InputHidden, res.ForegroundExe)
	}
	if _, err := m.Kill(waitCtx(t), start.ID); err != nil {
		t.Fatal(err)
	}
}

// awaitChildWait waits until pid blocks waiting for a child (a prompt is
// printed before the wait begins), up to a second; it reports whether it
// did.
func awaitChildWait(pid int) bool {
	for deadline := time.Now().Add(time.Second); ; time.Sleep(5 * time.Millisecond) {
		if inChildWait(pid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// awaitReader waits until the program at a password prompt reads: a
// prompt is printed before the read that takes the password, and
// SecretPrograms types only into a program reading now.
func awaitReader(t *testing.T, m *Manager, id string) WriteResult {
	t.Helper()
	return mustWrite(t, m, WriteRequest{ID: id, WaitUntil: "input"})
}
