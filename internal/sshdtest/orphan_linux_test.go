package sshdtest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentpty/agentpty/internal/testkit"
)

// orphanEnv makes a re-run of this test binary start a server, print the
// listener's pid and block, so that a test can kill it as go test's
// timeout would.
const orphanEnv = "SSHDTEST_ORPHAN"

func TestMain(m *testing.M) {
	if os.Getenv(orphanEnv) != "" {
		s, err := start(os.Getenv(orphanEnv), Options{})
		if err != nil {
			fmt.Println("start:", err)
			os.Exit(1)
		}
		fmt.Println(s.Pid())
		select {}
	}
	os.Exit(m.Run())
}

// A test binary killed outright takes its sshd with it: the server is not
// left listening after the tests that started it are gone.
func TestServerDiesWithTheTestBinary(t *testing.T) {
	testkit.Need(t, Path)
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), orphanEnv+"="+t.TempDir())
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		_ = child.Process.Kill()
		_ = child.Wait()
		t.Fatalf("the child's server: %q", line)
	}
	if syscall.Kill(pid, 0) != nil {
		t.Fatalf("sshd %d is not running while its test binary lives", pid)
	}
	_ = child.Process.Kill()
	_ = child.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if st, ok := readState(pid); ok && st == 'Z' {
			break // dead, waiting for init to reap it
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("sshd %d still runs 10 s after its test binary was killed", pid)
		}
		time.Sleep(10 * time.Millisecond) // a bounded poll: the kernel signals it asynchronously
	}
}

// readState is the state letter of pid from /proc.
func readState(pid int) (byte, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return 0, false
	}
	return b[i+2], true
}
