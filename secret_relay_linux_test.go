package agentpty

import (
	"context"
	"strings"
	"testing"
)

// A relay's terminal is raw: the far side's password prompt is not this
// kernel's to see, so WriteSecret refuses it unless the host names the
// relay in Options.SecretRelays; then it types through ssh into a remote
// read -s, and the secret never shows.
func TestWriteSecretThroughATrustedRelay(t *testing.T) {
	cases := []struct {
		name   string
		relays []string
		want   error // nil: typed
	}{
		{"no relay trusted", nil, ErrInvalid},
		{"another relay trusted", []string{"telnet"}, ErrDenied},
		{"ssh trusted", []string{"ssh"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newManager(t, Options{Shell: []string{"bash", "-c"}, SecretRelays: c.relays}) // its leak check runs after sshd has stopped
			x := startTestSSHD(t, sshdOptions{})
			res := mustStart(t, m, StartRequest{Command: x.Command("PS1='remote$ ' exec bash --norc --noprofile -i"), WaitFor: "remote$ "})
			w := mustWrite(t, m, WriteRequest{ID: res.ID, Input: `read -s -p 'Pass''word: ' pw; echo; echo "len ${#pw}"`, Submit: true, WaitFor: "Password: "})
			if w.InputHidden {
				t.Errorf("input_hidden at the far side's prompt: the local terminal is raw, not at a prompt")
			}
			got, err := m.WriteSecretWith(context.Background(), SecretRequest{ID: res.ID, Secret: []byte("hunter2"), WaitFor: "len "})
			switch {
			case c.want != nil && !isErr(err, c.want):
				t.Fatalf("WriteSecret: %v, want %v", err, c.want)
			case c.want != nil:
				t.Logf("refused: %v", err)
			case err != nil:
				t.Fatalf("WriteSecret through ssh: %v", err)
			case !strings.Contains(got.Output, "len 7") || strings.Contains(got.Output, "hunter2"):
				t.Errorf("output %q: want the far side's answer, and no secret", got.Output)
			}
			if _, err := m.Kill(waitCtx(t), res.ID); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// After its password, sudo (with use_pty, Debian's default) relays the
// terminal to a pty of its own: while its command works, sudo waits on
// both, and a wait for input that ends on the pause says it is a guess.
func TestSudoAfterItsPasswordIsARelaysGuess(t *testing.T) {
	need(t, "python3")
	const secret = "Sudo-Pw-6160"
	user := testUser(t, secret)
	m := newManager(t, Options{})
	start := mustStart(t, m, StartRequest{
		Command: "setpriv --reuid=" + user + " --regid=" + user + " --init-groups -- " +
			`sudo -k -p "[sudo] pw: " python3 -c "import time; time.sleep(1.5); print('sl'+'ept')"`,
		WaitFor: "[sudo] pw: ",
	})
	awaitReader(t, m, start.ID)
	res, err := m.WriteSecretWith(waitCtx(t), SecretRequest{ID: start.ID, Secret: []byte(secret), WaitUntil: WaitUntilInput, WaitMS: ms(10000)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("waited %q state %q guessed %v foreground %q output %q", res.Waited, res.State, res.StateGuessed, res.Foreground, res.Output)
	if !strings.Contains(res.Output, "slept") && res.State == StateWaitingInput && (res.Waited != WaitedQuiet || !res.StateGuessed) {
		t.Errorf("sudo's command still works, and the result says it waits for input without saying it guesses")
	}
	if !strings.Contains(res.Output, "slept") {
		mustWrite(t, m, WriteRequest{ID: start.ID, WaitFor: "slept"})
	}
}
