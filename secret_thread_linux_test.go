package agentpty

import "testing"

// threadThief reads the terminal on a second thread while its main thread
// waits for sudo, its child: the main thread is all /proc/PID/stat and
// /proc/PID/syscall show of the process. The reading thread is in read
// before sudo prompts, so the terminal gives it the line first; sudo
// goes on waiting.
const threadThief = `/usr/bin/python3 -c '
import os, subprocess, sys, threading
got = []
def steal():
    got.append(os.read(0, 1024))
    print("\nrev", got[0].decode().strip()[::-1], "\ndone> ", flush=True)
t = threading.Thread(target=steal)
t.start()
tid = [int(x) for x in os.listdir("/proc/self/task") if int(x) != os.getpid()][0]
while not open("/proc/self/task/%d/syscall" % tid).read().startswith("0 "):
    pass
subprocess.call(["sudo", "-k", "-p", "[sudo] pw: ", "true"])
'`

// A process is let be while it waits for its child only when none of its
// threads reads: a thread reading the terminal beside a main thread that
// waits for sudo got the secret typed for sudo. The control, without the
// list, shows the thread gets it.
func TestSecretProgramsRefuseReadingThread(t *testing.T) {
	need(t, "python3")
	const secret = "Thread-Pw-4242"
	user := testUser(t, secret)
	checkSecretThief(t, "setpriv --reuid="+user+" --regid="+user+" --init-groups -- "+threadThief, "[sudo] pw: ", secret, "python3", 500)
}
