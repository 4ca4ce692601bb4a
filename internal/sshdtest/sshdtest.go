//go:build unix

// Package sshdtest runs a real OpenSSH server (Debian's /usr/sbin/sshd) on
// 127.0.0.1 for tests: a free port, a throwaway host key and client key in
// a temporary directory, its own sshd_config, and the user running the
// tests allowed in with that key (or one user by password). It is for
// tests only.
package sshdtest

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/agentpty/agentpty/internal/testkit"
)

// Path is where Debian's openssh-server puts the server.
const Path = "/usr/sbin/sshd"

// Server is one sshd listening on 127.0.0.1.
type Server struct {
	// Addr is "127.0.0.1:PORT".
	Addr string
	// User is the user the tests log in as (the one running them).
	User string
	// Dir holds the keys, the config and known_hosts.
	Dir string
	// KeyFile is the client's private key (OpenSSH format, no passphrase).
	KeyFile string
	// KnownHosts is a known_hosts file that lists the server's host key.
	KnownHosts string
	// AuthorizedKeys is the authorized_keys file the server reads at each
	// login: a test may rewrite it to let other keys in.
	AuthorizedKeys string
	// Signer is the client's key.
	Signer ssh.Signer
	// HostKey is the server's public host key.
	HostKey ssh.PublicKey

	password bool // the User logs in by password
	cmd      *exec.Cmd
	logs     chan struct{} // closed once the log reader is done
	mu       sync.Mutex
	log      bytes.Buffer
	once     sync.Once
}

// Options say who may log in to a Server.
type Options struct {
	// PasswordUser, when set, is the only user who may log in, and by
	// password only (the test sets the password); otherwise the user
	// running the tests logs in with the client key made for the server.
	PasswordUser string
	// MaxSessions is the server's MaxSessions, the channels it allows a
	// connection; 0 means 200, more than any test opens (OpenSSH's own
	// default is 10).
	MaxSessions int
	// SetEnv are variables ("NAME=value") the server sets for every
	// login (sshd_config's SetEnv), beside its marker (see markerVar).
	SetEnv []string
}

// Start starts a server for t that lets the user running the tests in
// with its client key, and stops it when t ends. It skips t when sshd is
// missing, unless AGENTPTY_REQUIRE=all asks every test to run.
func Start(t testing.TB) *Server { return StartWith(t, Options{}) }

// StartWith is Start for the users opts allow in.
func StartWith(t testing.TB, opts Options) *Server {
	t.Helper()
	if _, err := os.Stat(Path); err != nil {
		testkit.Lacks(t, "%s is not installed (Debian: openssh-server), and the SSH tests need a real OpenSSH server: %v", Path, err)
	}
	s, err := start(t.TempDir(), opts)
	if err != nil {
		t.Fatalf("sshdtest: %v", err)
	}
	t.Cleanup(func() {
		testkit.NoneMarked(t, markerVar+"="+s.Dir, "a login to the test's sshd")
		s.Stop()
	})
	return s
}

// markerVar is set, to the server's Dir, for every login to a server: the
// processes a test started there are found by it, whatever became of
// their parents and sessions.
const markerVar = "AGENTPTY_SSHD_TEST"

// start starts a server on a port freePort found. Another process can
// take the port between freePort's check and sshd's bind: sshd then says
// so and ends, and start tries another port, three times in all.
func start(dir string, opts Options) (*Server, error) {
	for tries := 1; ; tries++ {
		s, err := startOn(dir, opts)
		if err == nil || tries == 3 || !(strings.Contains(err.Error(), "Address already in use") || strings.Contains(err.Error(), "Cannot bind")) {
			return s, err
		}
	}
}

// startOn is one try of start.
func startOn(dir string, opts Options) (*Server, error) {
	s := &Server{Dir: dir, User: opts.PasswordUser, password: opts.PasswordUser != "", KeyFile: filepath.Join(dir, "id_ed25519"), KnownHosts: filepath.Join(dir, "known_hosts"), AuthorizedKeys: filepath.Join(dir, "authorized_keys"), logs: make(chan struct{})}
	if s.User == "" {
		u, err := user.Current()
		if err != nil {
			return nil, err
		}
		s.User = u.Username
	}
	hostKey := filepath.Join(dir, "host_ed25519")
	if err := s.makeKeys(hostKey); err != nil {
		return nil, err
	}
	// The privilege separation directory sshd insists on.
	_ = os.MkdirAll("/run/sshd", 0o755)
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	line := knownhosts.Line([]string{knownhosts.Normalize(s.Addr)}, s.HostKey)
	if err := os.WriteFile(s.KnownHosts, []byte(line+"\n"), 0o600); err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(cfg, []byte(s.config(port, hostKey, opts)), 0o600); err != nil {
		return nil, err
	}
	if err := s.launch(cfg); err != nil {
		return nil, err
	}
	return s, nil
}

// makeKeys writes the host key and the client key, and lets the client
// key in.
func (s *Server) makeKeys(hostKey string) error {
	hostPub, err := writeKey(hostKey)
	if err != nil {
		return err
	}
	clientPub, err := writeKey(s.KeyFile)
	if err != nil {
		return err
	}
	pem, _ := os.ReadFile(s.KeyFile)
	if s.Signer, err = ssh.ParsePrivateKey(pem); err != nil {
		return err
	}
	s.HostKey = hostPub
	return os.WriteFile(s.AuthorizedKeys, ssh.MarshalAuthorizedKey(clientPub), 0o600)
}

// config is the server's sshd_config.
func (s *Server) config(port int, hostKey string, opts Options) string {
	auth := "PermitRootLogin prohibit-password\nPubkeyAuthentication yes\nPasswordAuthentication no\n"
	if opts.PasswordUser != "" {
		auth = "PermitRootLogin no\nPubkeyAuthentication no\nPasswordAuthentication yes\nAllowUsers " + opts.PasswordUser + "\n"
	}
	maxSessions := opts.MaxSessions
	if maxSessions == 0 {
		maxSessions = 200
	}
	env := []string{markerVar + "=" + s.Dir}
	if opts.PasswordUser == "" {
		// The developer's own logins start in an empty HOME, so that the
		// login shell (bash sources ~/.bashrc when sshd runs it) does not
		// run the developer's profile.
		env = append(env, "HOME="+s.Dir)
	}
	auth += "SetEnv " + strings.Join(append(env, opts.SetEnv...), " ") + "\n"
	return fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
PidFile %s
AuthorizedKeysFile %s
StrictModes no
UsePAM no
KbdInteractiveAuthentication no
PrintMotd no
PrintLastLog no
MaxSessions %d
MaxStartups 100
ClientAliveInterval 0
Subsystem sftp internal-sftp
LogLevel INFO
`, port, hostKey, filepath.Join(s.Dir, "sshd.pid"), s.AuthorizedKeys, maxSessions) + auth
}

// launch runs sshd in the foreground (-D), its log (-e) kept for failure
// messages, and returns once it says it listens.
func (s *Server) launch(cfg string) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	s.cmd = exec.Command(Path, "-D", "-e", "-f", cfg)
	s.cmd.Stdout, s.cmd.Stderr = w, w
	dieWithTests(s.cmd)
	err = s.cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return err
	}
	ready := make(chan bool, 1)
	go s.readLog(r, ready)
	select {
	case ok := <-ready:
		if ok {
			return nil
		}
	case <-time.After(10 * time.Second):
	}
	s.Stop()
	return fmt.Errorf("sshd did not start listening on %s: %s", s.Addr, s.Log())
}

// readLog keeps the server's log until it ends, telling ready whether
// the server said it listens.
func (s *Server) readLog(r *os.File, ready chan<- bool) {
	defer close(s.logs)
	defer r.Close()
	sc := bufio.NewScanner(r)
	said := false
	for sc.Scan() {
		s.mu.Lock()
		s.log.WriteString(sc.Text() + "\n")
		s.mu.Unlock()
		if !said && strings.Contains(sc.Text(), "Server listening on") {
			said = true
			ready <- true
		}
	}
	if !said {
		ready <- false
	}
}

// Command is the ssh command line that logs in to the server and runs
// remote (a login shell when empty) with a terminal: by password for a
// PasswordUser, else with the client key.
func (s *Server) Command(remote string) string {
	_, port, _ := net.SplitHostPort(s.Addr)
	args := []string{"ssh", "-tt", "-F", "/dev/null", "-p", port,
		"-o", "UserKnownHostsFile=" + s.KnownHosts, "-o", "StrictHostKeyChecking=yes", "-o", "LogLevel=ERROR"}
	if !s.password {
		args = append(args, "-i", s.KeyFile, "-o", "BatchMode=yes")
	}
	args = append(args, s.User+"@127.0.0.1")
	if remote != "" {
		args = append(args, "'"+strings.ReplaceAll(remote, "'", `'\''`)+"'")
	}
	return strings.Join(args, " ")
}

// Log returns what the server logged so far.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// Marked lists the live processes logins to the server started (see
// markerVar), for a test to end what it left running whatever it reached.
func (s *Server) Marked() []testkit.MarkedProc { return testkit.Marked(markerVar + "=" + s.Dir) }

// Pid is the listening server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Kill kills the server and every per-connection server it started, as a
// crash would: the clients' connections drop.
func (s *Server) Kill() {
	s.once.Do(func() {
		// Each per-connection server runs in a session of its own: they
		// are found as the listener's descendants named sshd (the
		// commands they run are left to the hang-up, as in a crash).
		for _, pid := range s.servers() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		_ = s.cmd.Wait()
		<-s.logs
	})
}

// Freeze stops (SIGSTOP) every per-connection server, as a host that
// stops answering while its kernel still acknowledges the TCP segments;
// thaw lets them go on (SIGCONT).
func (s *Server) Freeze() (thaw func()) {
	pids := s.servers()[1:]
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGSTOP)
	}
	return func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
}

// Stop ends the server (as Kill).
func (s *Server) Stop() { s.Kill() }

// ClientConfig is a client configuration for the server: the test user,
// the client key and the server's host key checked.
func (s *Server) ClientConfig() *ssh.ClientConfig {
	return &ssh.ClientConfig{
		User:            s.User,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(s.Signer)},
		HostKeyCallback: ssh.FixedHostKey(s.HostKey),
		Timeout:         10 * time.Second,
	}
}

// Dial connects to the server.
func (s *Server) Dial() (*ssh.Client, error) {
	return ssh.Dial("tcp", s.Addr, s.ClientConfig())
}

// writeKey writes a new ed25519 private key to path in OpenSSH's format
// and returns its public half.
func writeKey(path string) (ssh.PublicKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		return nil, err
	}
	return ssh.NewPublicKey(pub)
}

// freePort asks the kernel for a port no one listens on. A variable for
// the tests.
var freePort = func() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
