package agentpty_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/agentpty/agentpty"
)

// A program that asks a question: start it, wait for the prompt, answer.
func Example() {
	m := agentpty.NewManager(agentpty.Options{})
	defer m.Close()
	ctx := context.Background()

	start, err := m.Start(ctx, agentpty.StartRequest{
		Command: `read -p 'name? ' n; echo "hello $n"`,
		WaitFor: "name? ",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q\n", start.Output)

	// The wait ends early when the program exits.
	res, err := m.Write(ctx, agentpty.WriteRequest{ID: start.ID, Input: "world", Submit: true, WaitMS: agentpty.Millis(5000)})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q exited=%v code=%d\n", res.Output, res.Exited, *res.ExitCode)
	// Output:
	// "name? "
	// "name? world\nhello world" exited=true code=0
}

// A host's tool dispatcher passes the model's JSON straight through.
func ExampleManager_Call() {
	m := agentpty.NewManager(agentpty.Options{})
	defer m.Close()

	for _, t := range m.Tools() {
		fmt.Println(t.Name)
	}
	out, err := m.Call(context.Background(), "pty-start", json.RawMessage(`{"command":"echo hi; exit 3","wait_ms":10000}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(out))
	// Output:
	// pty-start
	// pty-write
	// pty-run
	// pty-kill
	// pty-list
	// {"id":"pty-1","output":"hi","matched":false,"exited":true,"exit_code":3,"state":"exited","waited":"exit"}
}

// Backslash escapes in input are typed as the keys they name: \x03 is
// Ctrl-C.
func ExampleManager_Write_interrupt() {
	m := agentpty.NewManager(agentpty.Options{})
	defer m.Close()
	ctx := context.Background()

	start, _ := m.Start(ctx, agentpty.StartRequest{Command: "echo waiting; sleep 100; echo not reached", WaitFor: "waiting"})
	res, _ := m.Write(ctx, agentpty.WriteRequest{ID: start.ID, Input: `\x03`, WaitMS: agentpty.Millis(5000)})
	fmt.Println(res.Exited, res.Signal)
	// Output:
	// true SIGINT
}

// A password prompt turns echo off; input_hidden tells the model.
func ExampleWriteResult_inputHidden() {
	m := agentpty.NewManager(agentpty.Options{})
	defer m.Close()
	ctx := context.Background()

	start, _ := m.Start(ctx, agentpty.StartRequest{Command: "read -s -p 'Password: ' pw; echo; echo ${#pw} chars", WaitFor: "Password: "})
	poll, _ := m.Write(ctx, agentpty.WriteRequest{ID: start.ID, WaitMS: agentpty.Millis(0)})
	fmt.Println("hidden:", poll.InputHidden)
	res, _ := m.Write(ctx, agentpty.WriteRequest{ID: start.ID, Input: "hunter2", Submit: true, WaitFor: "chars"})
	// The prompt's line comes back whole now that it has ended.
	fmt.Printf("%v %q\n", strings.Contains(res.Output, "hunter2"), res.Output)
	// Output:
	// hidden: true
	// false "Password: \n7 chars"
}

// A full-screen program's output is its screen, as a person sees it.
func ExampleSession_Screen() {
	m := agentpty.NewManager(agentpty.Options{})
	defer m.Close()
	ctx := context.Background()

	// Switch to the alternate screen and draw at row 2, column 3.
	start, _ := m.Start(ctx, agentpty.StartRequest{Command: `printf '\e[?1049h\e[2;3Hhello'; read`, Cols: 20, Rows: 4, WaitFor: "hello"})
	fmt.Printf("%q\n", start.Output)

	s, _ := m.Session(start.ID)
	scr := s.Screen()
	fmt.Println(scr.AltScreen, scr.Cursor, scr.Rows, scr.Cols)
	// Output:
	// "\n  hello"
	// true {1 7} 4 20
}

// An Approver sees every start before anything runs.
func ExampleApproverFunc() {
	m := agentpty.NewManager(agentpty.Options{
		Approver: agentpty.ApproverFunc(func(ctx context.Context, req agentpty.ApprovalRequest) error {
			if strings.Contains(req.Command, "rm ") {
				return errors.New("no deleting")
			}
			return nil
		}),
	})
	defer m.Close()

	_, err := m.Start(context.Background(), agentpty.StartRequest{Command: "rm -rf build"})
	fmt.Println(errors.Is(err, agentpty.ErrDenied))
	fmt.Println(err)
	// Output:
	// true
	// agentpty: denied: pty-start "rm -rf build": no deleting
}

// Go tests drive a REPL with Send and Expect, as with go-expect: each
// Expect consumes the output up to the end of its match.
func ExampleSession_Expect() {
	m := agentpty.NewManager(agentpty.Options{})
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	start, err := m.Start(ctx, agentpty.StartRequest{Command: "python3 -q", WaitFor: ">>> ",
		Env: []string{"PYTHON_BASIC_REPL=1"}}) // the same REPL on every Python 3
	if err != nil {
		fmt.Println(err)
		return
	}
	s, _ := m.Session(start.ID)
	number := regexp.MustCompile(`\d{20}`)
	_ = s.Send("2**64\r")
	out, err := s.Expect(ctx, number)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(number.FindString(out))

	// Type only at a prompt: keys typed earlier are echoed twice, once by
	// the terminal and once by readline.
	_, _ = s.Expect(ctx, regexp.MustCompile(`>>> `))
	_ = s.Send("print('日本' * 2)\r")
	_, _ = s.Expect(ctx, regexp.MustCompile(`\)\n`)) // past the echo
	out, _ = s.Expect(ctx, regexp.MustCompile(`(日本)+`))
	fmt.Printf("%q\n", out)
	// Output:
	// 18446744073709551616
	// "日本日本"
}
