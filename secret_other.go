//go:build !linux

package agentpty

import (
	"errors"
	"os"
)

// fgProcs needs /proc to name the foreground group's executables; without
// it, no program can be trusted with a secret.
func fgProcs(*os.File) []fgProc { return nil }

func untrusted(fgProc, []string) string { return "this platform cannot name its executable" }

// soleReader needs /proc to list the processes holding the terminal.
func soleReader(*os.File, []fgProc) error {
	return errors.New("this platform cannot list the processes holding a terminal")
}
