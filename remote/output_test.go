package remote

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// What came with the start mark reaches a Read that began waiting before
// it came, although no more output follows to wake the Read; the marks
// leave the output, the start mark's payload is AwaitStart's, and the
// end of the output ends Read.
func TestOutputStartMarkAndFences(t *testing.T) {
	o := NewOutput("n0nce", nil)
	r, w := io.Pipe() // the transport: nothing more comes until it is closed
	pumped := make(chan struct{})
	go func() {
		o.Pump(r)
		close(pumped)
	}()
	got := make(chan string, 1)
	go func() {
		p := make([]byte, 64)
		n, _ := o.Read(p)
		got <- string(p[:n])
	}()
	if _, err := w.Write([]byte("banner\r\n\x1b]6973;n0nce;4242\ajob=7.\x1b]6973;n0nce;f3\a\r\nready\r\n")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if p := o.AwaitStart(ctx); PID(p) != 4242 {
		t.Errorf("AwaitStart: %q, want 4242", p)
	}
	select {
	case s := <-got:
		if s != "banner\r\njob=7.\r\nready\r\n" {
			t.Errorf("Read returned %q", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read still waits for what came with the mark")
	}
	if !o.AwaitFence(3) {
		t.Error("fence 3 was taken out but AwaitFence says it did not come")
	}
	w.Close()
	if n, err := o.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Errorf("Read at the end: %d, %v; want io.EOF", n, err)
	}
	<-pumped
	if o.AwaitFence(4) {
		t.Error("AwaitFence(4) after the end: true, for a fence that never came")
	}
}

// Output that never holds the start mark passes through once too much
// came; a closed Output ends a waiting AwaitStart and Read.
func TestOutputWithoutStartMark(t *testing.T) {
	o := NewOutput("n0nce", nil)
	big := strings.Repeat("x", maxPre+1)
	go o.Write([]byte(big))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if p := o.AwaitStart(ctx); p != "" {
		t.Errorf("AwaitStart: %q, want none", p)
	}
	p := make([]byte, len(big))
	n, err := io.ReadFull(o, p)
	if n != len(big) || err != nil {
		t.Errorf("read %d of %d: %v", n, len(big), err)
	}
	o.Close()
	if _, err := o.Read(p); err != io.ErrClosedPipe {
		t.Errorf("Read after Close: %v", err)
	}
}
