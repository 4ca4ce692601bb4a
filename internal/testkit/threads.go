package testkit

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
