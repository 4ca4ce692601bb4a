//go:build linux

package sshpty

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/agentpty/agentpty/internal/sshdtest"
)

// Dial's keys are the ssh-agent's, then ~/.ssh/id_ed25519, id_ecdsa and
// id_rsa, those that exist: with every key let in, the first of them
// logs in; a key the server refuses (the agent's, or a file's) does not
// keep the next ones from being offered. Each key is let in with a forced
// command that names it, so the login says which key it was.
func TestDialKeyOrder(t *testing.T) {
	srv := sshdtest.Start(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	dotSSH := filepath.Join(home, ".ssh")
	if err := os.Mkdir(dotSSH, 0o700); err != nil {
		t.Fatal(err)
	}
	known, _ := os.ReadFile(srv.KnownHosts)
	if err := os.WriteFile(filepath.Join(dotSSH, "known_hosts"), known, 0o600); err != nil {
		t.Fatal(err)
	}
	keys := map[string]crypto.Signer{"agent": newKey(t, "ed25519")}
	for _, n := range []string{"ed25519", "ecdsa", "rsa"} {
		keys[n] = newKey(t, n)
	}
	kr := agent.NewKeyring()
	serveAgent(t, kr)
	leaks := noLeaks(t)

	files := func(names ...string) {
		for _, n := range []string{"ed25519", "ecdsa", "rsa"} {
			os.Remove(filepath.Join(dotSSH, "id_"+n))
		}
		for _, n := range names {
			block, err := ssh.MarshalPrivateKey(keys[n], "")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dotSSH, "id_"+n), pem.EncodeToMemory(block), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	authorize := func(names ...string) {
		var lines []byte
		for _, n := range names {
			pub, err := ssh.NewPublicKey(keys[n].Public())
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, "command=\"echo logged-in-with-"+n+"\" "...)
			lines = append(lines, ssh.MarshalAuthorizedKey(pub)...)
		}
		if err := os.WriteFile(srv.AuthorizedKeys, lines, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	all := []string{"agent", "ed25519", "ecdsa", "rsa"}
	for _, tc := range []struct {
		name       string
		agent      bool     // the agent holds the agent's key
		files      []string // the key files in ~/.ssh
		authorized []string
		want       string // the key that logs in
	}{
		{"the agent's key first", true, []string{"ed25519", "ecdsa", "rsa"}, all, "agent"},
		{"an agent without keys: id_ed25519", false, []string{"ed25519", "ecdsa", "rsa"}, all, "ed25519"},
		{"no id_ed25519: id_ecdsa", false, []string{"ecdsa", "rsa"}, all, "ecdsa"},
		{"no id_ed25519 or id_ecdsa: id_rsa", false, []string{"rsa"}, all, "rsa"},
		{"the agent's key refused: id_ed25519", true, []string{"ed25519", "ecdsa", "rsa"}, all[1:], "ed25519"},
		{"only id_rsa let in", true, []string{"ed25519", "ecdsa", "rsa"}, []string{"rsa"}, "rsa"},
		{"only the agent's key let in", true, []string{"ed25519", "ecdsa", "rsa"}, []string{"agent"}, "agent"},
	} {
		if err := kr.RemoveAll(); err != nil {
			t.Fatal(err)
		}
		if tc.agent {
			if err := kr.Add(agent.AddedKey{PrivateKey: keys["agent"]}); err != nil {
				t.Fatal(err)
			}
		}
		files(tc.files...)
		authorize(tc.authorized...)
		b, err := Dial(context.Background(), srv.User+"@"+srv.Addr, DialConfig{KeepAlive: -1})
		if err != nil {
			t.Errorf("%s: Dial: %v\n%s", tc.name, err, srv.Log())
			continue
		}
		got := "(no session)"
		if sess, err := b.client.NewSession(); err == nil {
			out, _ := sess.Output("")
			got = strings.TrimSpace(string(out))
			sess.Close()
		}
		b.Close()
		if got != "logged-in-with-"+tc.want {
			t.Errorf("%s: %q; want logged-in-with-%s", tc.name, got, tc.want)
		}
	}
	leaks()
}

// newKey makes a private key of kind ed25519, ecdsa or rsa.
func newKey(t *testing.T, kind string) crypto.Signer {
	t.Helper()
	var k crypto.Signer
	var err error
	switch kind {
	case "ed25519":
		_, k, err = ed25519.GenerateKey(rand.Reader)
	case "ecdsa":
		k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "rsa":
		k, err = rsa.GenerateKey(rand.Reader, 2048)
	}
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// serveAgent serves kr as an ssh-agent on a unix socket named by
// SSH_AUTH_SOCK until t ends.
func serveAgent(t *testing.T, kr agent.Agent) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "agent")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSH_AUTH_SOCK", sock)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = agent.ServeAgent(kr, c)
				c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
}
