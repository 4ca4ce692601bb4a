package agentpty

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/agentpty/agentpty/internal/testkit"
)

func (l *eventLog) String() string { return fmt.Sprintf("%+v", l.snapshot()) }

func (l *eventLog) count(kind EventKind) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.events {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// until returns sofar, after waiting for lit when sofar lacks it.
func until(t *testing.T, m *Manager, id, sofar, lit string) string {
	t.Helper()
	if strings.Contains(sofar, lit) {
		return sofar
	}
	return sofar + "\n" + mustWrite(t, m, WriteRequest{ID: id, WaitFor: lit}).Output
}

// secretTrail returns everything of a session where a secret could end up:
// the raw ring, the settled scrollback and the screen.
func secretTrail(s *Session) string {
	raw, _ := rawOutput(s)
	return string(raw) + "\n" + s.Scrollback() + "\n" + s.Screen().Text()
}

// assertNoSecret fails when secret appears in any of the places.
func assertNoSecret(t *testing.T, secret string, places map[string]string) {
	t.Helper()
	for name, text := range places {
		if strings.Contains(text, secret) {
			t.Errorf("the secret appears in %s: %q", name, text)
		}
	}
}

// A program that reads a password with read -s and then prints it anyway:
// the program got it, and nothing the library keeps or reports holds it.
func TestWriteSecretReadS(t *testing.T) {
	log := newEventLog()
	m := newManager(t, Options{OnEvent: log.add, RecordInput: true})
	const secret = "hunter2-Zq9"
	start := mustStart(t, m, StartRequest{
		Command: `read -s -p 'Password: ' pw; echo; echo "got ${#pw} echoed:$pw:"; read -p 'next> ' x; echo "x=$x"`,
		WaitFor: "Password: ",
	})
	s, _ := m.Session(start.ID)
	var rec bytes.Buffer
	if err := s.Record(&rec); err != nil {
		t.Fatal(err)
	}
	ctx := waitCtx(t)
	res, err := m.WriteSecret(ctx, start.ID, []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	out := until(t, m, start.ID, res.Output, "next> ")
	if !strings.Contains(out, "got 11 echoed:"+secretMask+":") {
		t.Errorf("the program did not get the secret, or its echo is not masked: %q", out)
	}

	// The prompt now echoes: a secret is refused, the error does not hold
	// it, and the session goes on.
	_, err = m.WriteSecret(ctx, start.ID, []byte("other-Secret"))
	if !isErr(err, ErrInvalid) || !strings.Contains(err.Error(), start.ID) || strings.Contains(err.Error(), "other-Secret") {
		t.Errorf("WriteSecret with echo on: %v; want ErrInvalid naming %s and not the secret", err, start.ID)
	}
	for _, bad := range []string{"", "a\rb", "x\x03"} {
		if _, err := m.WriteSecret(ctx, start.ID, []byte(bad)); !isErr(err, ErrInvalid) || (bad != "" && strings.Contains(err.Error(), bad)) {
			t.Errorf("WriteSecret(%q): %v; want ErrInvalid without the secret", bad, err)
		}
	}
	if _, err := m.WriteSecret(ctx, "pty-99", []byte(secret)); !isErr(err, ErrNoSession) {
		t.Errorf("WriteSecret to pty-99: %v, want ErrNoSession", err)
	}
	fin := mustWrite(t, m, WriteRequest{ID: start.ID, Input: "typed " + secret, Submit: true, WaitMS: ms(10000)})
	if !strings.Contains(fin.Output, "x=typed "+secretMask) {
		t.Errorf("a known secret typed with echo on is not masked in the output: %q", fin.Output)
	}
	places := map[string]string{"results": out + fin.Output, "session": secretTrail(s), "events": log.String()}
	kill, err := m.Kill(ctx, start.ID)
	if err != nil {
		t.Fatal(err)
	}
	places["kill"] = kill.Output
	places["recording"] = rec.String()
	assertNoSecret(t, secret, places)
	if n := log.count(EventInputHidden); n != 1 {
		t.Errorf("%d input_hidden events, want 1: %v", n, log.String())
	}
	if !strings.Contains(rec.String(), `"i", "typed `+secretMask) {
		t.Errorf("the recording lacks the typed input, masked:\n%s", rec.String())
	}
}

// A program that prints its prompt before it turns echo off and reads (as
// sudo does) is given a moment: a secret typed as soon as the prompt shows
// waits for the read rather than being refused for the echo still on.
func TestWriteSecretWaitsForTheRead(t *testing.T) {
	m := newManager(t, Options{})
	start := mustStart(t, m, StartRequest{Command: `printf 'Password: '; sleep 0.3; read -s pw; echo; echo "got ${#pw}"; read -p 'next> ' x`, WaitFor: "Password: "})
	res, err := m.WriteSecretWith(waitCtx(t), SecretRequest{ID: start.ID, Secret: []byte("Quick-Pw-13"), WaitFor: "next> "})
	if err != nil || !strings.Contains(res.Output, "got 11") {
		t.Fatalf("a secret typed as the prompt showed: %+v %v", res, err)
	}
	// One that exits meanwhile is reported as exited, not as echoing.
	gone := mustStart(t, m, StartRequest{Command: `printf 'Password: '; sleep 0.3; exit 3`, WaitFor: "Password: "})
	if _, err := m.WriteSecret(waitCtx(t), gone.ID, []byte("Quick-Pw-13")); !isErr(err, ErrExited) || !strings.Contains(err.Error(), "WriteSecret "+gone.ID) {
		t.Errorf("a secret for a program that exited while it was given its moment: %v; want ErrExited from WriteSecret", err)
	}
}

// The masker holds back what may be the start of a secret, whatever the
// chunks the output came in, and masks a secret echoed across a pause.
func TestMaskerEveryChunkSize(t *testing.T) {
	testkit.Parallel(t)
	const secret = "s3cr3t-pass"
	in := "a s3cr3 s3cr3t-pass and s3cr3t-pas\ns3cr3t-passs3cr3t-pass end s"
	want := "a s3cr3 " + secretMask + " and s3cr3t-pas\n" + secretMask + secretMask + " end s"
	for size := 1; size <= len(in); size++ {
		k := &masker{}
		k.secrets, k.longest = [][]byte{[]byte(secret)}, len(secret)
		k.first[secret[0]] = true
		var got []byte
		for i := 0; i < len(in); i += size {
			got = append(got, k.filter([]byte(in[i:min(i+size, len(in))]), false)...)
		}
		got = append(got, k.filter(nil, true)...)
		if string(got) != want {
			t.Fatalf("chunks of %d: %q, want %q", size, got, want)
		}
	}
	// An echo that pauses: the part before the pause is let through when
	// short, masked when long, and the rest is masked either way.
	for _, tc := range []struct {
		cut  int
		want string
	}{{3, "s3c" + secretMask}, {6, secretMask + secretMask}} {
		k := &masker{}
		k.secrets, k.longest = [][]byte{[]byte(secret)}, len(secret)
		k.first[secret[0]] = true
		got := append([]byte(nil), k.filter([]byte(secret[:tc.cut]), false)...)
		got = append(got, k.filter(nil, true)...) // the pause
		got = append(got, k.filter([]byte(secret[tc.cut:]), false)...)
		if string(got) != tc.want {
			t.Errorf("echo paused after %d bytes: %q, want %q", tc.cut, got, tc.want)
		}
	}
}

// A program that echoes the secret with pauses in the middle, in real time.
func TestWriteSecretEchoedWithPauses(t *testing.T) {
	m := newManager(t, Options{})
	const secret = "paused-Secret-77"
	start := mustStart(t, m, StartRequest{
		Command: `read -s -p 'pw: ' pw; echo; printf '%s' "${pw:0:2}"; sleep 0.2; printf '%s' "${pw:2:6}"; sleep 0.2; printf '%s|\n' "${pw:8}"; echo done`,
		WaitFor: "pw: ",
	})
	res, err := m.WriteSecret(waitCtx(t), start.ID, []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	out := until(t, m, start.ID, res.Output, "done")
	s, _ := m.Session(start.ID)
	assertNoSecret(t, secret[2:], map[string]string{"output": out, "session": secretTrail(s)})
	if !strings.Contains(out, "pa"+secretMask) {
		t.Errorf("output %q: want the 2 bytes before the first pause, then the mask", out)
	}
}

// python's getpass reads from the terminal with echo off.
func TestWriteSecretGetpass(t *testing.T) {
	need(t, "python3")
	m := newManager(t, Options{})
	const secret = "py-Secret-äö" // multibyte too
	start := mustStart(t, m, StartRequest{
		Command: `python3 -c 'import getpass; p = getpass.getpass("Secret: "); print("len", len(p)); print("echo", p); input("more> ")'`,
		WaitFor: "Secret: ",
	})
	res, err := m.WriteSecret(waitCtx(t), start.ID, []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	out := until(t, m, start.ID, res.Output, "more> ")
	if !strings.Contains(out, "len 12") || !strings.Contains(out, "echo "+secretMask) {
		t.Errorf("getpass did not get the secret, or its echo is not masked: %q", out)
	}
	s, _ := m.Session(start.ID)
	assertNoSecret(t, secret, map[string]string{"output": out, "session": secretTrail(s)})
}

// testUser makes a throwaway user with a password who may use sudo, and
// removes it when the test ends. It needs root.
func testUser(t *testing.T, password string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("creating a throwaway user with a password needs root; run the tests as root (CI does) to cover sudo and ssh")
	}
	need(t, "useradd", "userdel", "chpasswd", "sudo")
	return testkit.SudoUser(t, "aptytest"+strconv.Itoa(os.Getpid()%100000), password)
}

// sudo for a user with a password: a wrong one is refused, the right one
// runs the command as root, and neither shows anywhere.
func TestWriteSecretSudo(t *testing.T) {
	const secret = "Sudo-Pw-4711"
	user := testUser(t, secret)
	m := newManager(t, Options{})
	start := mustStart(t, m, StartRequest{
		// setpriv keeps the terminal (su would start a new session without
		// one, and sudo -u would put it in raw mode to relay its own).
		Command: "setpriv --reuid=" + user + " --regid=" + user + " --init-groups -- " +
			`sudo -k -p "[sudo] pw: " id -un; echo "sudo exit $?"`,
		WaitFor: "[sudo] pw: ",
	})
	ctx := waitCtx(t)
	wrong, err := m.WriteSecret(ctx, start.ID, []byte("Wrong-Pw-1"))
	if err != nil {
		t.Fatal(err)
	}
	before := until(t, m, start.ID, wrong.Output, "Sorry, try again")
	if i := strings.Index(before, "Sorry"); !strings.Contains(before[i:], "pw: ") {
		before += mustWrite(t, m, WriteRequest{ID: start.ID, WaitFor: "pw: "}).Output
	}
	res, err := m.WriteSecret(ctx, start.ID, []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	out := before + "\n" + until(t, m, start.ID, res.Output, "sudo exit")
	if !strings.Contains(out, "Sorry, try again") || !strings.Contains(out, "root\n") || !strings.Contains(out, "sudo exit 0") {
		t.Errorf("sudo: want a refusal, then root: %q", out)
	}
	s, _ := m.Session(start.ID)
	assertNoSecret(t, secret, map[string]string{"output": out, "session": secretTrail(s)})
	assertNoSecret(t, "Wrong-Pw-1", map[string]string{"output": out, "session": secretTrail(s)})
}

// ssh to a local sshd of the test's own with password authentication.
func TestWriteSecretSSH(t *testing.T) {
	need(t, "ssh", "ssh-keygen")
	const secret = "Ssh-Pw-0815"
	user := testUser(t, secret)
	m := newManager(t, Options{}) // its leak check runs after sshd has stopped
	port := startSSHD(t, user)
	start := mustStart(t, m, StartRequest{
		Command: "ssh -t -F /dev/null -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR " +
			"-o PubkeyAuthentication=no -o PreferredAuthentications=password -o NumberOfPasswordPrompts=1 " +
			"-p " + strconv.Itoa(port) + " " + user + `@127.0.0.1 'echo "ssh as $(id -un)"; read -p "remote> " x; echo "remote got $x"'`,
		WaitFor: "password: ",
	})
	ctx := waitCtx(t)
	res, err := m.WriteSecret(ctx, start.ID, []byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	more := until(t, m, start.ID, res.Output, "remote> ")
	// The remote side echoes the secret when the model types it in the
	// clear: masked too.
	fin := mustWrite(t, m, WriteRequest{ID: start.ID, Input: secret, Submit: true, WaitFor: "remote got"})
	out := more + "\n" + fin.Output
	if !strings.Contains(out, "ssh as "+user) || !strings.Contains(out, "remote got "+secretMask) {
		t.Errorf("ssh did not log in with the secret, or its echo is not masked: %q", out)
	}
	s, _ := m.Session(start.ID)
	assertNoSecret(t, secret, map[string]string{"output": out, "session": secretTrail(s)})
}

// startSSHD runs an sshd of the test's own on a free port of 127.0.0.1,
// with its own host key and config, that lets user in by password only.
func startSSHD(t *testing.T, user string) int {
	return startTestSSHD(t, sshdOptions{PasswordUser: user}).Port
}

// WriteSecretWith waits as a write does: for an answer that takes longer
// than WriteSecret's 700 ms, and it checks its wait options first.
func TestWriteSecretWithWaits(t *testing.T) {
	m := newManager(t, Options{})
	ctx := waitCtx(t)
	start := mustStart(t, m, StartRequest{Command: `read -s -p 'Password: ' pw; echo; sleep 1.5; echo "late ${#pw}"; read -p 'next> ' x`, WaitFor: "Password: "})
	for _, bad := range []SecretRequest{
		{ID: start.ID, Secret: []byte("x"), WaitMS: ms(-1)},
		{ID: start.ID, Secret: []byte("x"), WaitUntil: "output"},
		{ID: start.ID, Secret: []byte("x"), WaitForRegex: "("},
	} {
		if _, err := m.WriteSecretWith(ctx, bad); !isErr(err, ErrInvalid) || !strings.Contains(err.Error(), start.ID) {
			t.Errorf("WriteSecretWith(%+v): %v, want ErrInvalid naming %s", bad, err, start.ID)
		}
	}
	res, err := m.WriteSecretWith(ctx, SecretRequest{ID: start.ID, Secret: []byte("slow-1"), WaitFor: "next> "})
	if err != nil || !res.Matched || !strings.Contains(res.Output, "late 6") {
		t.Errorf("WriteSecretWith waiting for the next prompt: %+v %v", res, err)
	}
}
