//go:build linux || darwin

package agentpty

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

func init() { childModes["query"] = queryChild }

func queryChild() {
	// Asks the terminal a question in raw mode, as curses programs and
	// prompt toolkits do, and prints the answer it got.
	query := os.Getenv("AGENTPTY_TEST_QUERY")
	t, err := unix.IoctlGetTermios(0, ioctlGetTermios)
	if err != nil {
		fmt.Println("termios:", err)
		os.Exit(1)
	}
	raw := *t
	raw.Lflag &^= unix.ICANON | unix.ECHO
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	_ = unix.IoctlSetTermios(0, ioctlSetTermios, &raw)
	os.Stdout.WriteString(query)
	var got []byte
	b := make([]byte, 1)
	for {
		if _, err := os.Stdin.Read(b); err != nil {
			break
		}
		got = append(got, b[0])
		if c := b[0]; c == 'R' || c == 'c' || c == 'n' {
			break
		}
	}
	_ = unix.IoctlSetTermios(0, ioctlSetTermios, t)
	fmt.Printf("\r\nanswer %q end\r\n", got)
}
