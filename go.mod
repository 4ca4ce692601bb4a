module github.com/agentpty/agentpty

go 1.26.0

require (
	github.com/creack/pty v1.1.24
	github.com/hinshun/vt10x v0.0.0-20220301184237-5011da428d02
	go.uber.org/goleak v1.3.0
	golang.org/x/crypto v0.56.0
	golang.org/x/sys v0.47.0
	mvdan.cc/sh/v3 v3.14.1
)
