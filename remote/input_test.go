package remote

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"
	"time"
)

// A Write returns once the copier has sent its bytes (asked for more); a
// copier that does not read ends a Write at its deadline, and the chunk
// it holds goes before the next Write's bytes; Close ends both sides.
func TestInputDeadline(t *testing.T) {
	in := NewInput()
	// No copier reads: the deadline ends the Write with nothing handed over.
	in.SetDeadline(time.Now().Add(50 * time.Millisecond))
	if n, err := in.Write([]byte("lost")); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Write without a copier: %d, %v", n, err)
	}
	in.SetDeadline(time.Time{})
	var sent bytes.Buffer
	taken := make(chan []byte)
	release := make(chan struct{})
	copied := make(chan struct{})
	go func() { // a copier whose transport blocks until released
		defer close(copied)
		p := make([]byte, 4)
		for {
			n, err := in.Read(p)
			if err != nil {
				return
			}
			taken <- append([]byte(nil), p[:n]...)
			<-release
			sent.Write(p[:n])
		}
	}()
	in.SetDeadline(time.Now().Add(100 * time.Millisecond))
	done := make(chan error, 1)
	go func() {
		_, err := in.Write([]byte("abcdef"))
		done <- err
	}()
	if b := <-taken; string(b) != "abcd" {
		t.Fatalf("the copier took %q", b)
	}
	if err := <-done; !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a Write whose transport blocks: %v, want the deadline", err)
	}
	in.SetDeadline(time.Time{})
	go func() {
		_, err := in.Write([]byte("gh"))
		done <- err
	}()
	release <- struct{}{} // "abcd" goes
	if b := <-taken; string(b) != "ef" {
		t.Fatalf("after abcd the copier took %q, want the rest of its chunk", b)
	}
	release <- struct{}{}
	if b := <-taken; string(b) != "gh" {
		t.Fatalf("after the chunk that timed out the copier took %q, want the next Write's", b)
	}
	release <- struct{}{}
	if err := <-done; err != nil {
		t.Fatalf("Write: %v", err)
	}
	in.Close(io.ErrClosedPipe)
	<-copied
	if sent.String() != "abcdefgh" {
		t.Errorf("sent %q, want abcdefgh", sent.String())
	}
	if _, err := in.Write([]byte("x")); err != io.ErrClosedPipe {
		t.Errorf("Write after Close: %v", err)
	}
}
