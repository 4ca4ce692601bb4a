package agentpty

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The run channel: a pty-run command reaches the shell as a file in the
// session's private directory, sourced by a fixed typed line, never as
// typed text. The channel is the local file system; a remote terminal
// needs its own way to put the file on the far side before typing the
// same line (a pipe over the terminal is not possible there, and a
// here-doc typed into the shell is text readline sees).

// writeNew creates path, which must not exist, readable by its owner
// only, holding text.
func writeNew(path, text string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o400) // O_EXCL: never through a symlink
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

// handOver writes command to a new run file and returns the line that
// runs it: the file sourced at the top level, so that bash executes
// exactly the text the Approver judged, parsed as a script, while neither
// readline nor the terminal ever sees it (no history expansion, no
// bracketed-paste end, no Ctrl-C or carriage return in it). The line
// starts by cancelling a key sequence left pending at the prompt (C-g:
// after C-x, C-e would edit and execute the line), then goes to the end of
// whatever was typed there and kills it (C-e C-u), so it is the only
// thing on the line.
func (sh *shell) handOver(command string) (string, string, error) {
	sh.files.Lock()
	defer sh.files.Unlock()
	if sh.dir == "" {
		return "", "", errors.New("the shell's directory is gone")
	}
	// The commands before this one have ended: their files were read.
	for _, f := range sh.stale {
		os.Remove(f)
	}
	sh.stale = nil
	sh.runs++
	path := filepath.Join(sh.dir, strconv.Itoa(sh.runs))
	if err := writeNew(path, command); err != nil {
		return "", "", err
	}
	return path, "\x07\x05\x15 . " + shellQuote(path) + "\r", nil
}

// done removes a run file once its command has ended; left keeps it until
// the next run, for a command that may not have been read yet.
func (sh *shell) done(path string, ended bool) {
	sh.files.Lock()
	defer sh.files.Unlock()
	if ended || sh.dir == "" {
		os.Remove(path)
		return
	}
	sh.stale = append(sh.stale, path)
}

// remove deletes the session's directory; nil does nothing.
func (sh *shell) remove() {
	if sh == nil {
		return
	}
	sh.files.Lock()
	defer sh.files.Unlock()
	if sh.dir != "" {
		os.RemoveAll(sh.dir)
		sh.dir, sh.stale = "", nil
	}
}

// shellQuote quotes s for bash as one word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
