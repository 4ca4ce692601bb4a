package agentpty

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/agentpty/agentpty/internal/testkit"
)

// Helper children come from re-running the test binary, so the tests need
// no build step: AGENTPTY_TEST_CHILD names what the child does.
const childModeEnv = "AGENTPTY_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childModeEnv); mode != "" {
		runChild(mode)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(testkit.EmptyHome()))
}

// childModes are the helper children that tests of one OS add.
var childModes = map[string]func(){}

func runChild(mode string) {
	switch mode {
	case "ignore-term":
		// A program that will not go quietly: only SIGKILL ends it.
		signal.Ignore(syscall.SIGTERM, syscall.SIGHUP)
		fmt.Println("ready")
		idle()
	case "spawn":
		// Grandchildren in process groups of their own, as an interactive
		// shell's jobs are, that ignore the polite signals too.
		for i := 0; i < 2; i++ {
			c := exec.Command("sleep", "1000")
			c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := c.Start(); err != nil {
				fmt.Println("spawn failed:", err)
				os.Exit(1)
			}
			fmt.Printf("child %d\n", c.Process.Pid)
		}
		signal.Ignore(syscall.SIGTERM, syscall.SIGHUP)
		fmt.Println("ready")
		idle()
	case "winch":
		// Prints the terminal's size each time it changes.
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGWINCH)
		fmt.Println("ready")
		for range ch {
			ws, _ := unix.IoctlGetWinsize(0, unix.TIOCGWINSZ)
			fmt.Printf("size %dx%d\n", ws.Col, ws.Row)
		}
	default:
		if f := childModes[mode]; f != nil {
			f()
			return
		}
		fmt.Println("unknown child mode", mode)
		os.Exit(2)
	}
}

// idle blocks a helper child for good; select{} would trip the runtime's
// deadlock check.
func idle() {
	for {
		time.Sleep(time.Hour)
	}
}

// childCommand is the command line that runs this test binary as a helper
// child in mode.
func childCommand(mode string) (string, []string) {
	return "exec " + strconv.Quote(os.Args[0]) + " -test.run=^$", []string{childModeEnv + "=" + mode}
}

// need skips a test whose program is missing, unless AGENTPTY_REQUIRE=all
// asks for every test to run.
var need = testkit.Need

// newManager returns a manager that the test closes at its end, checking
// that nothing the sessions started is still running and that no file
// descriptor leaked (testkit.Managed). Goroutines are checked for the
// whole run by TestMain.
func newManager(t *testing.T, opts Options) *Manager {
	t.Helper()
	var m *Manager
	pids := func() (out []int) {
		for _, info := range m.List() {
			out = append(out, info.PID)
		}
		return out
	}
	opts.Env = append(slices.Clip(opts.Env), testkit.Managed(t, pids, func() error { return m.Close() }))
	m = NewManager(opts)
	return m
}

var openFDs = testkit.OpenFDs

func ms(n int) *int { return &n }

// readyCat is cat that says when the login profile is done: tests wait for
// that before killing, since killing bash mid-profile can leave pyenv's
// rehash lock behind and stall every later login shell.
const readyCat = "echo ready; exec cat"

// mustStart starts a session or fails the test.
func mustStart(t *testing.T, m *Manager, req StartRequest) StartResult {
	t.Helper()
	res, err := m.Start(context.Background(), req)
	testkit.Done(t, fmt.Sprintf("Start(%q)", req.Command), err, req.WaitFor, res.Matched, res.Output)
	return res
}

// mustWrite writes or fails the test, and fails if wait_for did not match.
func mustWrite(t *testing.T, m *Manager, req WriteRequest) WriteResult {
	t.Helper()
	res, err := m.Write(context.Background(), req)
	testkit.Done(t, fmt.Sprintf("Write(%q)", req.Input), err, req.WaitFor, res.Matched, res.Output)
	return res
}

// alive reports whether pid is a live process (not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] != 'Z'
}

// waitCtx bounds a test's blocking call; far beyond any wait the library
// makes, so it only turns a hang into a failure.
func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func isErr(err, target error) bool { return errors.Is(err, target) }

// awaitUnread waits until lit has arrived in output no result has returned
// yet, without reading it.
func awaitUnread(t *testing.T, s *Session, lit string) {
	t.Helper()
	matched, err := literalWait(lit).on(s, time.Now().Add(maxWait)).await(waitCtx(t))
	if err != nil || !matched {
		t.Fatalf("%q did not arrive: %v", lit, err)
	}
}
