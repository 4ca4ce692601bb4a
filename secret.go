package agentpty

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// secretMask stands in the output wherever a program printed a secret it
// was given: the same length whatever the secret's, so nothing of it shows.
const secretMask = "********"

// maskPause is how long the reader holds back output that may be the start
// of a secret before it passes it on: an echo split by a longer pause is
// masked from where it continues (and its first part too when that is at
// least maskShortest bytes).
const (
	maskPause    = 25 * time.Millisecond
	maskShortest = 4
)

// WriteSecret types a secret the user gave the host (not the model), then
// Enter, and returns what the program printed after it as Write does
// (waiting 700 ms; WriteSecretWith takes a write's wait options). It
// refuses with ErrInvalid unless the terminal is in line mode with echo
// off once its program reads, up to a second after the call (a password
// prompt: read -s, getpass, sudo, ssh), so
// the terminal cannot show it; with Options.SecretPrograms set, it refuses
// with ErrDenied unless every program that could read it is on that list.
// With Options.SecretRelays set, it also types into a relay on that list
// (ssh, telnet) whose terminal echoes nothing itself: the far side's
// prompt is then the host's to know.
// The secret never enters the scrollback, the settled text, the screen,
// events, recordings or error messages: from now on, wherever the program
// prints it anyway, the output holds "********" instead. That masking is
// cosmetic: a program that prints the secret transformed (reversed,
// base64) shows it. The session keeps the secret in memory to recognise
// it, and wipes it when the session is killed.
func (m *Manager) WriteSecret(ctx context.Context, id string, secret []byte) (WriteResult, error) {
	return m.WriteSecretWith(ctx, SecretRequest{ID: id, Secret: secret})
}

// WriteSecretWith is WriteSecret with a write's wait: for a prompt whose
// answer takes longer than 700 ms (sudo's check of a wrong password takes
// about two seconds), wait for the next prompt or for input.
func (m *Manager) WriteSecretWith(ctx context.Context, req SecretRequest) (WriteResult, error) {
	const op = "WriteSecret"
	id, secret := req.ID, req.Secret
	want, err := checkSecret(op, req)
	if err != nil {
		return WriteResult{}, err
	}
	s, err := m.lookup(op, id)
	if err != nil {
		return WriteResult{}, err
	}
	defer s.clock.use()()
	leave, err := s.turn(ctx, op) // in line with the session's other calls, so echo is checked just before typing
	if err != nil {
		return WriteResult{}, err
	}
	defer leave()
	if _, ok := s.term.(StateReader); !ok {
		return WriteResult{}, errorf(ErrUnsupported, "%s %s: this session's terminal cannot tell whether it echoes; a secret is typed only where it can", op, id)
	}
	if m.opts.SecretPrograms != nil && s.m.programs() == nil { // Validate refuses this; kept for a Backend that lost the capability
		return WriteResult{}, errorf(ErrDenied, "%s %s: this session's terminal cannot name the programs at its prompt, and Options.SecretPrograms is set", op, id)
	}
	// A prompt seen in the output may be printed before its program turns
	// echo off and reads: the checks below are made once it reads, or
	// once it has exited.
	if _, err := awaitReading(ctx, s); err != nil {
		return WriteResult{}, err
	}
	if st, exited := s.ended(); exited {
		return WriteResult{}, errorf(ErrExited, "%s %s: the program has exited (%s)", op, id, st)
	}
	if err := trustedReader(s, op, m.opts); err != nil {
		return WriteResult{}, err
	}
	s.sec.add(secret)
	input := append(append(make([]byte, 0, len(secret)+1), secret...), '\r')
	defer clear(input)
	return want.on(s, time.Time{}).writeInTurn(ctx, input)
}

// trustedReader is WriteSecret's last check before typing: a password
// prompt (echo off) whose program, and every other holder of the
// terminal, Options.SecretPrograms trusts when it is set; else a relay
// Options.SecretRelays trusts.
func trustedReader(s *Session, op string, opts Options) error {
	if !terminalEchoOff(s.term) {
		return trustedRelay(s, op, opts.SecretRelays)
	}
	if list := opts.SecretPrograms; list != nil {
		if err := s.m.programs().CheckPrograms(s.term, list); err != nil {
			return fmt.Errorf("%w: %s %s: Options.SecretPrograms: %w", ErrDenied, op, s.id, err)
		}
	}
	return nil
}

// trustedRelay is WriteSecret's check where the terminal is not at a
// password prompt of its own: nil only when relays (Options.SecretRelays)
// lists the relay in front, whose terminal echoes nothing itself.
func trustedRelay(s *Session, op string, relays []string) error {
	const notHidden = "the terminal echoes what is typed (echo is on, or a line editor reads the keys); a secret is typed only at a password prompt"
	if relays == nil {
		return errorf(ErrInvalid, "%s %s: %s (or, with Options.SecretRelays, into a relay the host trusts)", op, s.id, notHidden)
	}
	t, ok := s.term.(interface{ echoesNothing() bool })
	if !ok || s.m.programs() == nil {
		return errorf(ErrInvalid, "%s %s: %s; this session's terminal cannot name a relay in front (Options.SecretRelays)", op, s.id, notHidden)
	}
	if !t.echoesNothing() {
		return errorf(ErrInvalid, "%s %s: %s", op, s.id, notHidden)
	}
	if err := s.m.programs().CheckPrograms(s.term, relays); err != nil {
		return fmt.Errorf("%w: %s %s: Options.SecretRelays: %w", ErrDenied, op, s.id, err)
	}
	return nil
}

// fgProc is a process of the terminal's foreground group.
type fgProc struct {
	pid     int
	name    string // its command name
	exe     string // the path of its executable (/proc/PID/exe)
	reading bool   // blocked reading the terminal, or in poll or select on it
	waiting bool   // blocked waiting for a child, as a shell running a command
}

// asker is the process at the prompt: the first of procs reading the
// terminal, else the first (the group's leader).
func asker(procs []fgProc) fgProc {
	for _, p := range procs {
		if p.reading {
			return p
		}
	}
	if len(procs) > 0 {
		return procs[0]
	}
	return fgProc{}
}

// checkPrograms refuses a secret unless every process of the foreground
// group that could read it runs a program list trusts: a process waiting
// for its child (the shell that started the prompt's program) reads
// nothing meanwhile and is let be. Its errors say why, for the caller to
// wrap with the Options field whose list it is.
func checkPrograms(procs []fgProc, list []string) error {
	if len(procs) == 0 {
		return errors.New("the program at the prompt cannot be named")
	}
	if !asker(procs).reading {
		// A program that waits for a child now could read the secret once
		// the child has gone: only one reading it now is typed for.
		return fmt.Errorf("no program is reading the terminal (%s waits)", procs[0].name)
	}
	for _, p := range procs {
		if p.waiting {
			continue
		}
		if why := untrusted(p, list); why != "" {
			who := fmt.Sprintf("%s (pid %d)", p.name, p.pid)
			if p.exe != "" {
				who = fmt.Sprintf("%s (pid %d, %s)", p.name, p.pid, p.exe)
			}
			return fmt.Errorf("the secret is not typed into %s: %s", who, why)
		}
	}
	return nil
}

// masker replaces the session's secrets in its output before the reader
// stores it, holding back what may be the start of one until the rest
// comes or maskPause passes. Its mutex is taken before every lock of the
// session; the reader holds it while it stores and renders.
type masker struct {
	mu      sync.Mutex
	secrets [][]byte
	first   [256]bool // the first bytes of the secrets
	longest int
	// back is the newest output already passed on (at most longest-1
	// bytes), so that an echo resumed after a pause is still recognised;
	// pending is output held back, the start of a secret so far.
	back, pending []byte
	work, out     []byte
	timer         *time.Timer
	wiped         bool
}

// secrets is the part of a session that keeps the secrets given to
// WriteSecret and hides them in its output and in what taps see typed.
// The reader pays one atomic load for it while no secret was given.
//
// The masker's mutex is held by the reader while it stores and renders
// masked output: its place in the lock order is in session.go.
type secrets struct {
	mask       atomic.Pointer[masker] // nil until WriteSecret gives a secret
	hiddenSent atomic.Bool            // input_hidden was emitted and echo has stayed off since
}

// feeder is where masked output goes: the session's output pipeline.
type feeder interface{ feed(p []byte) }

// add makes the reader mask secret from now on.
func (sc *secrets) add(secret []byte) {
	sc.mask.CompareAndSwap(nil, &masker{}) // two first secrets at once make one masker
	sc.mask.Load().add(secret)
}

// pass hands p to to with every secret masked (masker.pass). It reports
// false, passing nothing, while no secret was given: the caller feeds p
// itself.
func (sc *secrets) pass(p []byte, to feeder) bool {
	k := sc.mask.Load()
	if k == nil {
		return false
	}
	k.pass(p, to)
	return true
}

// flush passes on to to what is held back (masker.flush).
func (sc *secrets) flush(to feeder) {
	if k := sc.mask.Load(); k != nil {
		k.flush(to)
	}
}

// wipe forgets the secrets (masker.wipe); called when the session is
// killed.
func (sc *secrets) wipe() {
	if k := sc.mask.Load(); k != nil {
		k.wipe()
	}
}

// maskInput returns p with the secrets masked, for recordings of what was
// typed.
func (sc *secrets) maskInput(p []byte) []byte {
	k := sc.mask.Load()
	if k == nil {
		return p
	}
	return k.maskInput(p)
}

// hidden notes whether the terminal echoes nothing in line mode now, and
// reports whether it has just stopped echoing, once announced is closed:
// input_hidden is due. Before Start has announced the session nothing is
// due: "created" comes first, and Start's own read notices echo off again.
func (sc *secrets) hidden(hidden bool, announced <-chan struct{}) bool {
	if !hidden {
		sc.hiddenSent.Store(false)
		return false
	}
	select {
	case <-announced:
	default:
		return false
	}
	return sc.hiddenSent.CompareAndSwap(false, true)
}

// add masks secret from now on.
func (k *masker) add(secret []byte) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, have := range k.secrets {
		if bytes.Equal(have, secret) {
			return
		}
	}
	k.secrets = append(k.secrets, bytes.Clone(secret))
	k.first[secret[0]] = true
	k.longest = max(k.longest, len(secret))
}

// pass hands p to to with every secret masked, holding back what may be
// the start of one for at most maskPause.
func (k *masker) pass(p []byte, to feeder) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if out := k.filter(p, false); len(out) > 0 {
		to.feed(out)
	}
	if len(k.pending) > 0 && !k.wiped {
		if k.timer == nil {
			k.timer = time.AfterFunc(maskPause, func() { k.flush(to) })
		} else {
			k.timer.Reset(maskPause)
		}
	}
}

// flush passes on to to what is held back, masked where it is the start
// of a secret at least maskShortest bytes long.
func (k *masker) flush(to feeder) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.pending) > 0 && !k.wiped {
		if out := k.filter(nil, true); len(out) > 0 {
			to.feed(out)
		}
	}
}

// wipe forgets the secrets, overwriting them, and drops what is held
// back.
func (k *masker) wipe() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.timer != nil {
		k.timer.Stop()
	}
	for _, sec := range k.secrets {
		clear(sec)
	}
	for _, b := range [][]byte{k.back, k.pending, k.work, k.out} {
		clear(b[:cap(b)])
	}
	k.secrets, k.back, k.pending, k.wiped = nil, nil, nil, true
}

// maskInput returns p with the secrets masked.
func (k *masker) maskInput(p []byte) []byte {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, sec := range k.secrets {
		p = bytes.ReplaceAll(p, sec, []byte(secretMask))
	}
	return p
}

// filter returns the output to pass on for p: what was held back and p,
// with every secret replaced by secretMask, less a new tail that may be
// the start of one (none when final). The result is valid until the next
// call.
func (k *masker) filter(p []byte, final bool) []byte {
	buf := append(append(append(k.work[:0], k.back...), k.pending...), p...)
	k.work = buf
	done := len(k.back) // buf[:done] was passed on already
	hold := len(buf)    // buf[hold:] is held back
	out := k.out[:0]
	for i := 0; i < len(buf); {
		if !k.first[buf[i]] {
			i++
			continue
		}
		n, partial := k.matchAt(buf[i:], final)
		switch {
		case n > 0:
			if i+n > done {
				out = append(out, buf[done:max(i, done)]...)
				out = append(out, secretMask...)
				done = i + n
			}
			i += n
		case partial:
			hold, i = max(i, done), len(buf)
		default:
			i++
		}
	}
	out = append(out, buf[done:hold]...)
	k.pending = append(k.pending[:0], buf[hold:]...)
	passed := buf[:hold]
	k.back = append(k.back[:0], passed[max(0, len(passed)-(k.longest-1)):]...)
	k.out = out
	return out
}

// matchAt reports a secret that b starts with (its length), or that b is
// the start of one (partial). When final, nothing more comes: a start of
// maskShortest bytes or more counts as the secret, a shorter one as text.
func (k *masker) matchAt(b []byte, final bool) (n int, partial bool) {
	for _, sec := range k.secrets {
		switch {
		case bytes.HasPrefix(b, sec):
			n = max(n, len(sec))
		case len(b) < len(sec) && bytes.HasPrefix(sec, b):
			if final && len(b) >= maskShortest {
				n = max(n, len(b))
			}
			partial = !final
		}
	}
	return n, partial && n == 0
}

// noteHidden emits input_hidden when the terminal has just stopped echoing
// in line mode (see secrets.hidden).
func noteHidden(s *Session, hidden bool) {
	if s.sec.hidden(hidden, s.announced) {
		name, exe := promptProgram(s.m.programs(), s.term)
		s.m.emit(Event{Kind: EventInputHidden, ID: s.id, PID: s.pid, Command: s.command, Time: time.Now(),
			Foreground: name, ForegroundExe: exe})
	}
}
