package testkit

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
)

// PyThreadReader is a Python program that reads lines on a second thread
// while its main thread runs main (its own lines of Python): it prompts
// "name? " and answers each line with "hello LINE". A program reading its
// terminal off its main thread, as Go, Java and Rust programs do.
func PyThreadReader(main string) string {
	return `import sys, threading, time
def r():
    print("name? ", end="", flush=True)
    for l in sys.stdin:
        print("hello " + l.strip() + "\nname? ", end="", flush=True)
t = threading.Thread(target=r, daemon=True)
t.start()
` + main
}

// GoroutineReader is a helper child's body that reads its lines on a
// goroutine while the main goroutine waits on a channel, as Go prompt and
// TUI libraries do: it prompts "name? " and answers each line with "hello
// LINE". The main goroutine keeps the main thread, so the thread blocked
// in read(0) is never the main one (without the lock it may be, by the
// scheduler's chance).
func GoroutineReader() {
	runtime.LockOSThread()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	fmt.Print("name? ")
	for l := range lines {
		fmt.Printf("hello %s\nname? ", l)
	}
}
