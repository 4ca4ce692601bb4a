// Command attach shows a person joining a session a model drives: it starts
// python3 under agentpty, lets "model" code type into it through
// Manager.Write every few seconds, and attaches the current terminal with
// Session.Attach. The person sees the screen as it is, then everything
// live, and can type into the REPL too; Ctrl-] detaches. What the person
// typed and what it printed then shows up in the model's next read, which
// the command prints after detaching.
//
//	go run ./attach               # python3
//	go run ./attach -c 'bash -i'  # any command
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/agentpty/agentpty"
)

// detachKey is Ctrl-], as in telnet.
const detachKey = 0x1d

func main() {
	command := flag.String("c", "python3 -q", "the command the session runs")
	every := flag.Duration("every", 4*time.Second, "how often the model types")
	flag.Parse()
	if err := run(*command, *every); err != nil {
		fmt.Fprintln(os.Stderr, "attach:", err)
		os.Exit(1)
	}
}

func run(command string, every time.Duration) error {
	if !term.IsTerminal(int(os.Stdin.Fd())) {
		return fmt.Errorf("stdin is not a terminal")
	}
	cols, rows, err := term.GetSize(int(os.Stdout.Fd()))
	if err != nil {
		return err
	}
	m := agentpty.NewManager(agentpty.Options{})
	defer m.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	start, err := m.Start(ctx, agentpty.StartRequest{Command: command, Cols: cols, Rows: rows, WaitMS: agentpty.Millis(3000)})
	if err != nil {
		return err
	}
	s, _ := m.Session(start.ID)

	// The model: types a line now and then, as a tool call would.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for n := 1; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			_, _ = m.Write(ctx, agentpty.WriteRequest{ID: start.ID, Input: fmt.Sprintf("print('model says', %d)", n), Submit: true, WaitMS: agentpty.Millis(0)})
		}
	}()

	old, err := term.MakeRaw(int(os.Stdin.Fd()))
	if err != nil {
		return err
	}
	fmt.Printf("attached to %s (%s); Ctrl-] detaches\r\n", start.ID, command)
	err = s.Attach(ctx, struct {
		io.Reader
		io.Writer
	}{&untilDetach{r: os.Stdin}, os.Stdout})
	_ = term.Restore(int(os.Stdin.Fd()), old)
	cancel()
	wg.Wait()
	if err != nil {
		return err
	}

	// What the person did reaches the model's next read.
	res, err := m.Write(context.Background(), agentpty.WriteRequest{ID: start.ID, WaitMS: agentpty.Millis(0)})
	if err != nil {
		return err
	}
	fmt.Printf("\ndetached. The model's next read of %s:\n%s\n", start.ID, res.Output)
	return nil
}

// untilDetach reads r until the detach key, then reports the end.
type untilDetach struct {
	r    io.Reader
	done bool
}

func (u *untilDetach) Read(p []byte) (int, error) {
	if u.done {
		return 0, io.EOF
	}
	n, err := u.r.Read(p)
	if i := bytes.IndexByte(p[:n], detachKey); i >= 0 {
		u.done = true
		if i == 0 {
			return 0, io.EOF
		}
		return i, nil
	}
	return n, err
}
