package agentpty

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentpty/agentpty/internal/proc"
)

// odThief starts od in a session of its own, reading the terminal through
// /dev/tty and printing each byte on its own line (no mask catches it),
// then a genuine sudo prompt in front of it.
const odThief = `setsid od -An -c -w1 < /dev/tty & sudo -k -p "[sudo] pw: " true; echo "sudo exit $?"`

// hiddenThief is odThief's reader made not dumpable: a host that is not
// root cannot look at its descriptors.
const hiddenThief = `setsid python3 -c 'import ctypes, os, sys; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0); sys.stdout.write("got " + os.read(0, 100).decode()); sys.stdout.flush()' < /dev/tty & sudo -k -p "[sudo] pw: " true; echo "sudo exit $?"`

// odLeak matches od's printing of secret, a byte a line.
func odLeak(secret string) *regexp.Regexp {
	parts := make([]string, 0, len(secret))
	for _, c := range secret {
		parts = append(parts, regexp.QuoteMeta(string(c)))
	}
	return regexp.MustCompile(strings.Join(parts, `[ \t]*\r?\n[ \t]*`))
}

// awaitHolderReading waits until a process named comm, of this user, is
// blocked in read(2), up to 20 s: the thief is in place before the secret
// is typed.
func awaitHolderReading(comm string) bool {
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, pid := range proc.Pids() {
			st, ok := proc.ReadStat(pid, make([]byte, 512))
			if !ok || st.Comm != comm || realUID(pid) != os.Getuid() {
				continue
			}
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/syscall", pid)); err == nil && strings.HasPrefix(string(b), "0 ") {
				return true
			}
			if _, err := os.ReadFile(fmt.Sprintf("/proc/%d/syscall", pid)); err != nil {
				return true // not dumpable: started, and its system call hidden
			}
		}
	}
	return false
}

// A process outside the foreground group that holds the terminal (od,
// after setsid) reads a secret typed into a genuine sudo prompt: the
// control, without SecretPrograms, shows od printing it. With the list
// the secret is refused, naming od, and appears nowhere.
func TestSecretProgramsRefuseOtherHolder(t *testing.T) {
	const secret = "Od-Thief-Pw-31"
	user := testUser(t, secret)
	need(t, "setpriv", "od", "setsid")
	ctx := waitCtx(t)
	for _, list := range [][]string{nil, {"sudo"}} {
		// Both read the terminal, and the kernel hands the line to one:
		// the control tries again when sudo took it (about one try in two on
		// a loaded machine; eight tries miss one run in 250).
		for try := 1; !odThiefTry(t, ctx, user, secret, list); try++ {
			if try == 8 {
				t.Fatalf("control: od printed the secret in none of %d tries; want it to, typed without SecretPrograms", try)
			}
		}
	}
}

// odThiefTry runs the od attack once under list: the control (no list)
// types the secret and reports whether od printed it; with the list it
// must be refused, naming od, and leak nowhere (true).
func odThiefTry(t *testing.T, ctx context.Context, user, secret string, list []string) (leaked bool) {
	t.Helper()
	leaked = true
	m := newManager(t, Options{Shell: []string{"bash", "-c"}, SecretPrograms: list})
	start := mustStart(t, m, StartRequest{
		Command: "setpriv --reuid=" + user + " --regid=" + user + " --init-groups -- bash -c '" + strings.ReplaceAll(odThief, "'", `'\''`) + "'",
		WaitFor: "[sudo] pw: ",
	})
	awaitReader(t, m, start.ID)
	if !awaitOd(t, user) {
		t.Fatal("od is not reading the terminal: the test would not show the fault")
	}
	s, _ := m.Session(start.ID)
	_, err := m.WriteSecretWith(ctx, SecretRequest{ID: start.ID, Secret: []byte(secret), WaitMS: ms(0)})
	switch {
	case list == nil && err != nil:
		t.Fatalf("control: %v; want the secret typed", err)
	case list == nil:
		out := mustWrite(t, m, WriteRequest{ID: start.ID, WaitForRegex: odLeak(secret).String(), WaitMS: ms(15000)})
		if !odLeak(secret).MatchString(secretTrail(s)) {
			t.Logf("control: %q: sudo read the line before od", out.Output)
			leaked = false
		}
	case !isErr(err, ErrDenied) || !strings.Contains(err.Error(), "od (pid") || !strings.Contains(err.Error(), "holds the terminal"):
		t.Errorf("with SecretPrograms: %v; want ErrDenied naming od", err)
	default:
		out := mustWrite(t, m, WriteRequest{ID: start.ID, WaitMS: ms(500)})
		if odLeak(secret).MatchString(secretTrail(s)) || strings.Contains(out.Output, secret) {
			t.Errorf("the secret leaked: %q", out.Output)
		}
	}
	if _, err := m.Kill(ctx, start.ID); err != nil {
		t.Fatal(err)
	}
	return leaked
}

// awaitOd waits for user's od to read the terminal.
func awaitOd(t *testing.T, user string) bool {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		out, _ := exec.Command("pgrep", "-u", user, "-x", "od").Output()
		for _, pid := range strings.Fields(string(out)) {
			if b, err := os.ReadFile("/proc/" + pid + "/syscall"); err == nil && strings.HasPrefix(string(b), "0 ") {
				return true
			}
		}
	}
	return false
}

func init() {
	// A host that is not root, typing a secret into sudo under
	// SecretPrograms while a thief holds the terminal: od, which it can
	// look at, and a process that is not dumpable, which it cannot.
	childModes["secret-holders"] = func() {
		m := NewManager(Options{Shell: []string{"bash", "-c"}, SecretPrograms: []string{"sudo"}})
		defer m.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for _, c := range []struct{ name, command, comm string }{{"od", odThief, "od"}, {"hidden", hiddenThief, "python3"}} {
			start, err := m.Start(ctx, StartRequest{Command: c.command, WaitFor: "[sudo] pw: "})
			if err != nil || !start.Matched {
				fmt.Printf("%s start: %v %q\n", c.name, err, start.Output)
				return
			}
			ready := awaitHolderReading(c.comm)
			_, _ = m.Write(ctx, WriteRequest{ID: start.ID, WaitUntil: "input"})
			_, err = m.WriteSecretWith(ctx, SecretRequest{ID: start.ID, Secret: []byte(os.Getenv("AGENTPTY_TEST_SECRET")), WaitMS: ms(0)})
			out, _ := m.Write(ctx, WriteRequest{ID: start.ID, WaitMS: ms(1500)})
			s, _ := m.Session(start.ID)
			fmt.Printf("%s: ready %v, err %v, leaked %v\n", c.name, ready, err,
				odLeak(os.Getenv("AGENTPTY_TEST_SECRET")).MatchString(secretTrail(s)) || strings.Contains(out.Output, "got ********"))
			_, _ = m.Kill(ctx, start.ID)
		}
	}
}

// A host that is not root refuses a secret while a thief holds the
// terminal: od, named, and a process that is not dumpable, whose
// descriptors it cannot look at. (TestSecretProgramsSudoFromUnprivilegedHost
// is the control: with no other holder, sudo gets the secret.)
func TestSecretProgramsHoldersFromUnprivilegedHost(t *testing.T) {
	const secret = "Host-Thief-Pw-97"
	user := testUser(t, secret)
	need(t, "setpriv", "python3", "od", "setsid")
	text := hostAs(t, user, "secret-holders", secret)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`od: ready true, err agentpty: denied.*od \(pid \d+\) holds the terminal.*leaked false`),
		regexp.MustCompile(`hidden: ready true, err agentpty: denied.*python3 \(pid \d+\) holds the terminal: its descriptors cannot be looked at.*leaked false`),
	} {
		if !want.MatchString(text) {
			t.Errorf("from a host that is not root: %s; want %s", text, want)
		}
	}
	if strings.Contains(text, secret) {
		t.Errorf("the secret shows: %s", text)
	}
}
