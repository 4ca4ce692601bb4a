package sshpty

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

// DialConfig says how Dial connects. Its zero value is the common case:
// the host key checked against the user's and the system's known_hosts,
// the ssh-agent's keys, then the default key files.
type DialConfig struct {
	// KnownHosts are the known_hosts files the server's host key must be
	// listed in. Nil means ~/.ssh/known_hosts and /etc/ssh/ssh_known_hosts,
	// those that exist. A key no file lists fails the dial: there is no
	// way to turn the check off here (a host that wants that builds its
	// own ssh.Client and calls New).
	KnownHosts []string
	// KeyFiles are private keys offered after the agent's. Nil means
	// ~/.ssh/id_ed25519, id_ecdsa and id_rsa, those that exist; a key with
	// a passphrase is skipped (the agent holds those).
	KeyFiles []string
	// NoAgent leaves out the agent at $SSH_AUTH_SOCK.
	NoAgent bool
	// KeepAlive is how often the connection is checked: a server that
	// does not answer within the interval is taken as gone, and the
	// sessions end as a lost connection. Zero means 30 s; negative, none.
	KeepAlive time.Duration
}

// Dial connects to target, "user@host[:port]" (the user defaults to the
// current one, the port to 22), and returns a Backend that owns the
// connection: Close closes it. Sessions the server refuses past its
// MaxSessions go to another connection Dial makes the same way (as
// Options.Dial does for New).
func Dial(ctx context.Context, target string, cfg DialConfig) (*Backend, error) {
	userName, addr, err := parseTarget(target)
	if err != nil {
		return nil, err
	}
	hostKey, algos, err := hostKeyCheck(cfg.KnownHosts, addr)
	if err != nil {
		return nil, fmt.Errorf("agentpty: ssh %s: %w", target, err)
	}
	auth, closeAgent := authMethods(cfg)
	if len(auth) == 0 {
		return nil, fmt.Errorf("agentpty: ssh %s: no ssh-agent and no key file to authenticate with", target)
	}
	config := &ssh.ClientConfig{
		User:              userName,
		Auth:              auth,
		HostKeyCallback:   hostKey,
		HostKeyAlgorithms: algos,
	}
	client, err := handshake(ctx, addr, config)
	if err != nil {
		closeAgent()
		return nil, fmt.Errorf("agentpty: ssh %s: %w", target, err)
	}
	b := New(client)
	b.stop = watch(client, cfg.KeepAlive, closeAgent)
	// Sessions past the server's MaxSessions go to another connection
	// made the same way (the agent's connection is the first one's).
	b.dial = func(ctx context.Context) (*ssh.Client, func(), error) {
		c, err := handshake(ctx, addr, config)
		if err != nil {
			return nil, nil, fmt.Errorf("agentpty: ssh %s: %w", target, err)
		}
		return c, watch(c, cfg.KeepAlive, func() {}), nil
	}
	return b, nil
}

// watch checks c every keepalive interval (zero: 30 s; negative: none)
// and calls after once c has closed; the stop it returns closes c and
// waits for that.
func watch(c *ssh.Client, every time.Duration, after func()) (stop func()) {
	done := make(chan struct{})
	go func() {
		_ = c.Wait()
		after()
		close(done)
	}()
	if every == 0 {
		every = 30 * time.Second
	}
	if every > 0 {
		go keepAlive(c, every, done)
	}
	return func() { c.Close(); <-done }
}

// authMethods are the agent's keys (unless cfg leaves it out), then the
// key files'; closeAgent closes the connection to the agent. They are one
// method: the client tries a method name once, so the files' keys in a
// second "publickey" method would never be offered after the agent's
// were refused (or when the agent holds none).
func authMethods(cfg DialConfig) (auth []ssh.AuthMethod, closeAgent func()) {
	var agentConn net.Conn
	var ag agent.ExtendedAgent
	if sock := os.Getenv("SSH_AUTH_SOCK"); sock != "" && !cfg.NoAgent {
		if c, err := net.Dial("unix", sock); err == nil {
			agentConn, ag = c, agent.NewClient(c)
		}
	}
	files := keySigners(cfg.KeyFiles)
	if ag != nil || len(files) > 0 {
		auth = append(auth, ssh.PublicKeysCallback(func() ([]ssh.Signer, error) {
			var signers []ssh.Signer
			if ag != nil {
				signers, _ = ag.Signers() // an agent that fails leaves the files
			}
			return append(signers, files...), nil
		}))
	}
	return auth, func() {
		if agentConn != nil {
			agentConn.Close()
		}
	}
}

// handshake dials addr and runs the SSH handshake, both bounded by ctx.
func handshake(ctx context.Context, addr string, config *ssh.ClientConfig) (*ssh.Client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	sc, chans, reqs, err := ssh.NewClientConn(conn, addr, config)
	stop()
	if err != nil {
		conn.Close()
		return nil, err
	}
	_ = conn.SetDeadline(time.Time{})
	return ssh.NewClient(sc, chans, reqs), nil
}

// keepAlive sends a keepalive request every interval and closes the
// connection when one goes unanswered for an interval.
func keepAlive(c *ssh.Client, every time.Duration, done <-chan struct{}) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		answered := make(chan struct{})
		go func() {
			_, _, _ = c.SendRequest("keepalive@openssh.com", true, nil)
			close(answered)
		}()
		timer := time.NewTimer(every)
		select {
		case <-answered:
		case <-done:
		case <-timer.C:
			c.Close()
		}
		timer.Stop()
	}
}

// parseTarget splits "user@host[:port]".
func parseTarget(target string) (userName, addr string, err error) {
	host := target
	if i := strings.LastIndex(target, "@"); i >= 0 {
		userName, host = target[:i], target[i+1:]
	}
	if userName == "" {
		u, err := user.Current()
		if err != nil {
			return "", "", fmt.Errorf("agentpty: ssh %s: no user given and no current user: %w", target, err)
		}
		userName = u.Username
	}
	if host == "" {
		return "", "", fmt.Errorf("agentpty: ssh %q: no host (want user@host[:port])", target)
	}
	if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(strings.Trim(host, "[]"), "22")
	}
	return userName, host, nil
}

// hostKeyCheck reads the known_hosts files and returns the check and the
// host key algorithms they list for addr, so that the server shows the
// key the files know rather than another of its keys.
func hostKeyCheck(files []string, addr string) (ssh.HostKeyCallback, []string, error) {
	if files == nil {
		if home, err := os.UserHomeDir(); err == nil {
			files = append(files, filepath.Join(home, ".ssh", "known_hosts"))
		}
		files = append(files, "/etc/ssh/ssh_known_hosts")
	}
	var exist []string
	for _, f := range files {
		if _, err := os.Stat(f); err == nil {
			exist = append(exist, f)
		}
	}
	if len(exist) == 0 {
		return nil, nil, fmt.Errorf("no known_hosts file among %v: the host key cannot be checked", files)
	}
	cb, err := knownhosts.New(exist...)
	if err != nil {
		return nil, nil, err
	}
	// A key no file holds makes the check name the keys they hold.
	var keyErr *knownhosts.KeyError
	var algos []string
	if err := cb(addr, &net.TCPAddr{}, probeKey{}); errors.As(err, &keyErr) {
		for _, k := range keyErr.Want {
			if t := k.Key.Type(); t == ssh.KeyAlgoRSA {
				algos = append(algos, ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, t)
			} else {
				algos = append(algos, t)
			}
		}
	}
	return cb, algos, nil
}

// probeKey is a host key no known_hosts file lists.
type probeKey struct{}

func (probeKey) Type() string                        { return "agentpty-probe" }
func (probeKey) Marshal() []byte                     { return []byte("agentpty-probe") }
func (probeKey) Verify([]byte, *ssh.Signature) error { return errors.New("not a key") }

// keySigners loads the key files that exist and need no passphrase.
func keySigners(files []string) []ssh.Signer {
	if files == nil {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil
		}
		for _, n := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
			files = append(files, filepath.Join(home, ".ssh", n))
		}
	}
	var out []ssh.Signer
	for _, f := range files {
		pem, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if s, err := ssh.ParsePrivateKey(pem); err == nil {
			out = append(out, s)
		}
	}
	return out
}
