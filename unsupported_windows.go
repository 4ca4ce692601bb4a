package agentpty

import (
	"context"
	"os"
	"os/exec"
	"sync/atomic"

	"github.com/agentpty/agentpty/internal/contain"
)

// Terminals here are Unix pseudo-terminals; on Windows every start fails
// with ErrUnsupported, so no session ever exists.

func startChild(*exec.Cmd, int, int) (*os.File, error) {
	return nil, errorf(ErrUnsupported, "%s: pseudo-terminal sessions need Linux or macOS", ToolStart)
}

func setSize(*os.File, int, int) error { return ErrUnsupported }

func pendingInput(*os.File) int { return 0 }

func echoOff(*os.File) bool { return false }
func readBlocks(any) bool   { return false }

func exitStatus(ps *os.ProcessState, err error) ExitStatus {
	if ps == nil {
		return ExitStatus{Code: -1, Signal: "unknown: " + err.Error()}
	}
	return ExitStatus{Code: ps.ExitCode()}
}

func (*Session) endAll(context.Context) error { return ErrUnsupported }

func signalForeground(*os.File, int, os.Signal) error { return ErrUnsupported }

func parseSignal(string) (os.Signal, bool) { return nil, false }

func tryWrite(*os.File, []byte) int { return 0 }

func processExists(int) bool { return false }

func foreground(*os.File) fgReport { return fgReport{} }

func readable(*os.File) bool { return false }

type terminalReader struct{ f *os.File }

func newTerminalReader(f *os.File, _ *atomic.Bool) (*terminalReader, error) {
	return &terminalReader{f}, nil
}

func (r *terminalReader) read(buf []byte) (int, error) { return r.f.Read(buf) }

func killAll(int, *contain.Group) {}

// procFiles keeps nothing open here: see the Linux one.
type procFiles struct{}

func (*procFiles) close() {}

func foregroundVia(*os.File, *procFiles) fgReport { return fgReport{} }
