package sshpty

import (
	"context"
	"fmt"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/agentpty/agentpty/remote"
)

// hupDelay is the local library's (remote.HupDelay): how long after
// SIGTERM what is left of the session gets SIGHUP. A variable so that a
// test can lengthen it.
var hupDelay = remote.HupDelay

// killBound is how long End waits for the host's kernel after SIGKILL
// before it names the survivors.
const killBound = remote.KillBound

// End ends the command and everything it started. On a Linux host the
// probe shell runs remote's end.sh, which signals every process of the command's
// session and process group (background jobs, nohup, a subshell's child)
// with TERM, HUP and KILL on the local library's schedule and names the
// survivors; the connection carries nothing while it waits. Elsewhere the
// "signal" requests OpenSSH honours (since 7.9, and not on a root login)
// reach the command's process group, and closing the channel hangs up the
// terminal. A lost connection has already hung up the terminal on the
// host: nothing is left to send. Once everything is gone End waits, up
// to remote.StatusWait, for the command's status to arrive: the session closes
// the channel next, and a status not yet read would be lost.
func (t *terminal) End(ctx context.Context, grace time.Duration) error {
	if t.pid > 0 && t.info.linux {
		out, err := t.end(ctx, hupDelay, grace)
		if ctx.Err() != nil { // cut short: SIGKILL now
			kctx, cancel := context.WithTimeout(context.Background(), 2*killBound)
			out, err = t.end(kctx, 0, 0)
			cancel()
		}
		if gone, left := remote.EndAnswer(strings.Split(out, "\n")); err == nil && left != "" {
			return fmt.Errorf("%s (%s): processes [%s] survived SIGKILL for %v", t.b, t.name, left, killBound)
		} else if err == nil && gone {
			remote.AwaitStatus(t.exited)
			return nil
		}
		if !t.b.alive() {
			return nil
		}
	}
	return t.endBySignals(ctx, grace)
}

// endBySignals is End through "signal" requests on the session's
// channel, on the local library's schedule (remote.Polite).
func (t *terminal) endBySignals(ctx context.Context, grace time.Duration) error {
	deadline := time.Now().Add(grace)
	if err := t.sess.Signal(ssh.SIGTERM); err != nil {
		return nil // the channel is gone, and the terminal with it
	}
	if remote.Polite(ctx, bySignals{t}, hupDelay, deadline) == nil {
		return nil
	}
	_ = t.sess.Signal(ssh.SIGKILL)
	tm := time.NewTimer(killBound)
	defer tm.Stop()
	select {
	case <-t.exited:
		return nil
	case <-tm.C:
		return fmt.Errorf("%s (%s): the command outlived SIGKILL for %v", t.b, t.name, killBound)
	}
}

// bySignals is the command as "signal" requests reach it, for
// remote.Polite: what ignores SIGTERM cannot be known without /proc.
type bySignals struct{ t *terminal }

func (s bySignals) Hup()             { _ = s.t.sess.Signal(ssh.SIGHUP) }
func (s bySignals) IgnoreTerm() bool { return false }

func (s bySignals) WaitEmpty(ctx context.Context) error {
	select {
	case <-s.t.exited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
