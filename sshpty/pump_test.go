//go:build linux

package sshpty

import (
	"io"
	"runtime"
	"testing"
	"time"
)

// What came with the process-id mark reaches a Read that began waiting
// before the pump took it over (a loaded machine runs the reader first),
// although no more output follows to wake the Read.
func TestReadWaitingGetsWhatCameWithTheMark(t *testing.T) {
	leaks := noLeaks(t)
	defer leaks()
	r, w := io.Pipe() // the channel: nothing more comes until it is closed
	term := newTerminal(&Backend{}, "pty-1", nil, nil, r, &hostInfo{})
	term.pre = []byte("job=7.\r\nready\r\n")
	got := make(chan string, 1)
	go func() {
		p := make([]byte, 64)
		n, _ := term.Read(p)
		got <- string(p[:n])
	}()
	for deadline := time.Now().Add(10 * time.Second); ; {
		term.omu.Lock()
		waiting := term.waiting
		term.omu.Unlock()
		if waiting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Read never waited")
		}
		runtime.Gosched() // Read is on its way to its wait
	}
	go term.pump()
	select {
	case s := <-got:
		if s != "job=7.\r\nready\r\n" {
			t.Errorf("Read returned %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Error("Read still waits for what the pump was handed with the mark")
		term.omu.Lock()
		term.closed = true
		term.ocond.Broadcast()
		term.omu.Unlock()
		<-got
	}
	w.Close() // the pump reads the end and returns
	for deadline := time.Now().Add(10 * time.Second); ; {
		term.omu.Lock()
		ended := term.oerr != nil || term.closed
		term.omu.Unlock()
		if ended {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pump never ended")
		}
		runtime.Gosched()
	}
}
