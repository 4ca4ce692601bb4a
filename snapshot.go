package agentpty

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// snapshotGrace is how long a profile stopped past
// Options.ShellSnapshotTimeout has between SIGTERM and SIGKILL.
const snapshotGrace = time.Second

// snapshotMax bounds the output a snapshot may take: the profile's own
// output and the encoded state.
const snapshotMax = 8 << 20

// snapshotDump runs after the login profile, in the shell it set up, and
// prints that shell's state as a script between two marker lines, base64
// encoded so that no byte of it is a terminal control. Options that an
// interactive shell (a shell session) sets for itself are left as that
// shell has them: line editing, history, job control, and aliases
// expanding. $1 holds the
// names the environment exported before the profile ran: those the
// profile unexported are unset by the script. Variables bash sets for
// itself are left out. Written for bash 3.2 as well (macOS).
const snapshotDump = `{
printf 'unset -v BASH_ENV\n'
__e=" $(compgen -e | tr '\n' ' ') "
for __n in $1; do case $__e in *" $__n "*) ;; *) printf 'unset -v %s\n' "$__n";; esac; done
for __n in $(compgen -e); do
  case $__n in SHLVL|PWD|OLDPWD|_|SHELLOPTS|BASHOPTS) ;; *) declare -p "$__n";; esac
done
declare -f
declare -Fx | while read -r _ _ __n; do printf 'export -f %s\n' "$__n"; done
alias -p
shopt -p | while read -r __l; do case $__l in
  *login_shell|*restricted_shell) ;;
  *expand_aliases) printf '[[ $- == *i* ]] || %s\n' "$__l";;
  *) printf '%s\n' "$__l";;
esac; done
set +o | while read -r __l; do case $__l in *' emacs'|*' vi'|*' history'|*' monitor') ;; *) printf '%s\n' "$__l";; esac; done
} 2>/dev/null | { printf '\n%s-begin\n' "$2"; base64; printf '%s-end\n' "$2"; }
`

// profileFiles are the files a login bash reads (or that those commonly
// source) whose change makes a snapshot stale; relative ones are under
// HOME. A file they source from elsewhere (nvm.sh) is not followed.
var profileFiles = []string{
	"/etc/profile", "/etc/bash.bashrc", "/etc/bashrc", "/etc/environment", "/etc/profile.d",
	".bash_profile", ".bash_login", ".profile", ".bashrc", ".bash_aliases",
}

// snapshots makes and keeps the manager's snapshot of the login shell
// (Options.ShellSnapshot).
type snapshots struct {
	turn chan struct{} // one maker at a time; held while the profile runs

	mu      sync.Mutex // guards the fields below
	dir     string     // private directory of the snapshot files; "" until the first
	path    string     // the current snapshot; "" when none is usable
	stamps  string     // the profile files as they were when path (or the failure) was made
	failed  string     // why the last attempt failed, while stamps hold: not tried again until they change
	told    bool       // a start's notice has said why
	made    int
	closing bool
}

func newSnapshots() *snapshots { return &snapshots{turn: make(chan struct{}, 1)} }

// snapshotStart says how a start runs its command: argv and the variables
// to add, and a notice for the result when the snapshot could not serve.
type snapshotStart struct {
	path   string // the snapshot; "" when it could not serve
	argv   []string
	env    []string
	notice string
}

// startFrom returns how to run command from the login shell's snapshot,
// making the snapshot first when there is none or the profile changed.
// When no snapshot can serve, it returns the login shell's argv and says
// why in notice.
func (m *Manager) startFrom(ctx context.Context, command string) snapshotStart {
	login := snapshotStart{argv: append(append([]string(nil), m.opts.Shell...), command)}
	path, notice := m.snap.current(ctx, m)
	if path == "" {
		login.notice = notice
		return login
	}
	return snapshotStart{path: path, argv: []string{"bash", "-c", command}, env: []string{"BASH_ENV=" + path}}
}

// current returns a usable snapshot's path, making one if need be, or ""
// and why not.
func (sn *snapshots) current(ctx context.Context, m *Manager) (string, string) {
	env := childEnv(m.opts.Env)
	stamps := profileStamps(envValue(env, "HOME"))
	if p, why, ok := sn.cached(stamps); ok {
		return p, why
	}
	select {
	case sn.turn <- struct{}{}:
	case <-ctx.Done():
		return "", "shell snapshot: " + ctx.Err().Error()
	}
	defer func() { <-sn.turn }()
	if p, why, ok := sn.cached(stamps); ok { // made while this start waited
		return p, why
	}
	script, why := makeSnapshot(ctx, m, env)
	sn.mu.Lock()
	defer sn.mu.Unlock()
	sn.stamps = stamps
	if why != "" {
		sn.path, sn.failed, sn.told = "", why, true
		return "", why
	}
	path, err := sn.store(script)
	if err != nil {
		sn.path, sn.failed, sn.told = "", "shell snapshot: "+err.Error(), true
		return "", sn.failed
	}
	sn.path, sn.failed = path, ""
	return path, ""
}

// cached returns the snapshot made for stamps, or that it failed: why,
// for the first start that learns it, "" for the rest (one notice says
// it; every start would repeat it to a model that cannot act on it).
func (sn *snapshots) cached(stamps string) (string, string, bool) {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	if sn.stamps != stamps {
		return "", "", false
	}
	if sn.path != "" {
		return sn.path, "", true
	}
	if sn.failed != "" {
		why := sn.failed
		if sn.told {
			why = ""
		}
		sn.told = true
		return "", why, true
	}
	return "", "", false
}

// store writes script to a new file in the private directory, under mu.
// Earlier files stay until Close: a session started a moment ago may not
// have read its own yet.
func (sn *snapshots) store(script []byte) (string, error) {
	if sn.closing {
		return "", ErrClosed
	}
	if sn.dir == "" {
		dir, err := os.MkdirTemp("", "agentpty-snapshot-")
		if err != nil {
			return "", err
		}
		sn.dir = dir
	}
	sn.made++
	path := filepath.Join(sn.dir, "snapshot-"+strconv.Itoa(sn.made)+".sh")
	if err := os.WriteFile(path, script, 0o600); err != nil {
		return "", err
	}
	return path, nil
}

// close removes the snapshot files.
func (sn *snapshots) close() error {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	sn.closing, sn.path = true, ""
	if sn.dir == "" {
		return nil
	}
	return os.RemoveAll(sn.dir)
}

// makeSnapshot runs the login profile once, under a terminal as a session
// would (the sandbox and containment included), and returns the script
// that recreates the shell it set up, or why it could not.
func makeSnapshot(ctx context.Context, m *Manager, env []string) ([]byte, string) {
	nonce := make([]byte, 12)
	_, _ = rand.Read(nonce)
	mark := "agentpty-snapshot-" + hex.EncodeToString(nonce)
	var names []string
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); ok {
			names = append(names, k)
		}
	}
	argv := append(append([]string(nil), m.opts.Shell...), snapshotDump, "bash", strings.Join(names, " "), mark)
	began := time.Now()
	out, err := runCaptured(ctx, m, argv, m.opts.Env, m.opts.ShellSnapshotTimeout)
	took := time.Since(began).Round(time.Millisecond)
	script, ok := between(out, []byte(mark+"-begin"), []byte(mark+"-end"))
	if ok {
		dec, derr := base64.StdEncoding.DecodeString(stripSpace(script))
		if derr == nil && len(dec) > 0 {
			return dec, ""
		}
	}
	shown := lastBytes(plainText(out), 2000)
	if err != nil {
		return nil, fmt.Sprintf("shell snapshot: the login profile ran %v and was stopped (%v); it printed %q; this start and later ones run the login shell until a profile file changes", took, err, shown)
	}
	return nil, fmt.Sprintf("shell snapshot: the login profile ran %v and gave no state; it printed %q; this start and later ones run the login shell until a profile file changes", took, shown)
}

// lastBytes returns the end of text, at most n bytes of it, cut at a
// character.
func lastBytes(text string, n int) string {
	if len(text) <= n {
		return text
	}
	return "…" + strings.ToValidUTF8(text[len(text)-n:], "")
}

// between returns what lies between the lines begin and end in out.
func between(out, begin, end []byte) ([]byte, bool) {
	_, rest, ok := bytes.Cut(out, begin)
	if !ok {
		return nil, false
	}
	body, _, ok := bytes.Cut(rest, end)
	return body, ok
}

func stripSpace(b []byte) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '\n' || r == '\r' || r == '\t' {
			return -1
		}
		return r
	}, string(b))
}

// plainText renders a terminal's raw bytes as settled text.
func plainText(raw []byte) string {
	st := newSettler(len(raw) + 1024)
	st.write(raw)
	out, _ := st.readWhole(len(raw)+1024, false, false)
	return out
}

// profileStamps describes the profile files as they are now: a change of
// any (size, mtime, existence) makes a new snapshot.
func profileStamps(home string) string {
	var b strings.Builder
	stamp := func(p string) {
		fi, err := os.Stat(p)
		if err != nil {
			b.WriteString("-\n")
			return
		}
		fmt.Fprintf(&b, "%s %d %d\n", p, fi.Size(), fi.ModTime().UnixNano())
	}
	for _, p := range profileFiles {
		if !filepath.IsAbs(p) {
			if home == "" {
				continue
			}
			p = filepath.Join(home, p)
		}
		stamp(p)
		if p == "/etc/profile.d" {
			ents, _ := os.ReadDir(p)
			for _, e := range ents {
				stamp(filepath.Join(p, e.Name()))
			}
		}
	}
	return b.String()
}

// envValue returns the value env gives k; the last one wins, as for exec.
func envValue(env []string, k string) string {
	v := ""
	for _, kv := range env {
		if key, val, ok := strings.Cut(kv, "="); ok && key == k {
			v = val
		}
	}
	return v
}

// runCaptured runs argv under a terminal as a session would and returns
// its output once it exits, or what it printed within bound and an error.
// Nothing it started is left running: past the bound it is ended as a
// Kill ends a session, TERM first, so that a profile's exit traps run
// (pyenv's rehash releases its lock in one; a profile killed outright
// leaves the lock, and every later login shell waits on it).
func runCaptured(ctx context.Context, m *Manager, argv, env []string, bound time.Duration) ([]byte, error) {
	t, err := localBackend{m}.Start(ctx, Command{Argv: argv, Env: env, Cols: DefaultCols, Rows: DefaultRows, Name: "snapshot"})
	if err != nil {
		return nil, err
	}
	read := make(chan []byte, 1)
	go func() {
		var out bytes.Buffer
		buf := make([]byte, 32<<10)
		for out.Len() < snapshotMax {
			n, err := t.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				break
			}
		}
		read <- out.Bytes()
	}()
	exited := make(chan struct{})
	go func() {
		_, _ = t.Wait() // a profile that printed its state may exit as it likes
		close(exited)
	}()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case <-exited:
	case <-timer.C:
		err = fmt.Errorf("it ran past %v", bound)
	case <-ctx.Done():
		err = ctx.Err()
	}
	ectx, cancel := context.WithTimeout(context.Background(), snapshotGrace+killBound)
	_ = t.End(ectx, snapshotGrace)
	cancel()
	<-exited
	out := <-read // Wait set the read deadline: Read ends
	_ = t.Close()
	return out, err
}
