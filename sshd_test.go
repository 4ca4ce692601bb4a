package agentpty

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testSSHD is an OpenSSH server of the test's own on 127.0.0.1, with a
// host key and configuration made for the test in a directory of its own.
type testSSHD struct {
	Port       int    // where it listens on 127.0.0.1
	User       string // the user who may log in
	Key        string // the client's private key, when logins are by key
	KnownHosts string // a known_hosts file naming the server's host key
	Dir        string // the directory holding the keys and the configuration
}

// sshdOptions says who may log in to a testSSHD.
type sshdOptions struct {
	// PasswordUser, when set, may log in by password only (the test sets
	// the password); otherwise the test's own user logs in with a key made
	// for the test.
	PasswordUser string
}

// startTestSSHD starts an sshd for the test and stops it, and whatever its
// connections run, when the test ends. It skips the test when sshd or
// ssh-keygen is missing (fails under AGENTPTY_REQUIRE=all).
func startTestSSHD(t *testing.T, opts sshdOptions) *testSSHD {
	t.Helper()
	need(t, "ssh", "ssh-keygen", "/usr/sbin/sshd")
	dir := t.TempDir()
	x := &testSSHD{User: opts.PasswordUser, KnownHosts: filepath.Join(dir, "known_hosts"), Dir: dir}
	keygen := func(k string) {
		t.Helper()
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", k).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v\n%s", err, out)
		}
	}
	hostKey := filepath.Join(dir, "host_ed25519")
	keygen(hostKey)
	auth := []string{"PasswordAuthentication yes", "PubkeyAuthentication no", "AuthorizedKeysFile none", "PermitRootLogin no"}
	if opts.PasswordUser == "" {
		u, err := user.Current()
		if err != nil {
			t.Fatal(err)
		}
		x.User, x.Key = u.Username, filepath.Join(dir, "client_ed25519")
		keygen(x.Key)
		pub, err := os.ReadFile(x.Key + ".pub")
		if err != nil {
			t.Fatal(err)
		}
		authorized := filepath.Join(dir, "authorized_keys")
		writeFile(t, authorized, string(pub))
		auth = []string{"PasswordAuthentication no", "PubkeyAuthentication yes", "AuthorizedKeysFile " + authorized, "PermitRootLogin prohibit-password"}
	}
	// A free port: taken from the kernel, then handed to sshd. Another
	// process could take it in between; sshd would then fail to start
	// and say so below.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	x.Port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	hostPub, err := os.ReadFile(hostKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, x.KnownHosts, "[127.0.0.1]:"+strconv.Itoa(x.Port)+" "+string(hostPub))
	conf := filepath.Join(dir, "sshd_config")
	writeFile(t, conf, strings.Join(append([]string{
		"Port " + strconv.Itoa(x.Port),
		"ListenAddress 127.0.0.1",
		"HostKey " + hostKey,
		"PidFile " + filepath.Join(dir, "sshd.pid"),
		"AllowUsers " + x.User,
		"KbdInteractiveAuthentication no",
		"UsePAM no",
		"StrictModes no", // the test's temporary directories are not root's alone
		"PrintMotd no",
		"PrintLastLog no",
	}, auth...), "\n")+"\n")
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil { // sshd's privilege separation directory
		t.Fatal(err)
	}
	// -D keeps sshd in the foreground, the test's child; -e puts its log on
	// stderr, where it says once it listens. Its own process group lets the
	// cleanup end the connections it forked too.
	cmd := exec.Command("/usr/sbin/sshd", "-D", "-e", "-f", conf)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stderr)
	var seen []string
	for sc.Scan() {
		seen = append(seen, sc.Text())
		if strings.Contains(sc.Text(), "Server listening on 127.0.0.1") {
			go func() { // the rest of its log, so sshd never blocks on it
				for sc.Scan() {
				}
			}()
			return x
		}
	}
	t.Fatalf("sshd did not start: %s", strings.Join(seen, "\n"))
	return nil
}

// Command is the ssh command line that logs in to the server and runs
// remote (a login shell when empty), with a terminal.
func (x *testSSHD) Command(remote string) string {
	args := []string{"ssh", "-tt", "-F", "/dev/null", "-p", strconv.Itoa(x.Port),
		"-o", "UserKnownHostsFile=" + x.KnownHosts, "-o", "StrictHostKeyChecking=yes", "-o", "LogLevel=ERROR"}
	if x.Key != "" {
		args = append(args, "-i", x.Key, "-o", "BatchMode=yes")
	}
	args = append(args, x.User+"@127.0.0.1")
	if remote != "" {
		args = append(args, shellQuote(remote))
	}
	return strings.Join(args, " ")
}

// TestSSHDHelper: the helper's server lets the key in and runs a command.
func TestSSHDHelper(t *testing.T) {
	x := startTestSSHD(t, sshdOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", "-c", strings.Replace(x.Command("echo in-$((40+2))"), "-tt", "-T", 1)).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "in-42" {
		t.Fatalf("ssh: %v\n%s", err, out)
	}
}
