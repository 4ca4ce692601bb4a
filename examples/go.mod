module github.com/agentpty/agentpty/examples

go 1.26.0

require github.com/agentpty/agentpty v0.0.0-00010101000000-000000000000

require (
	github.com/creack/pty v1.1.24 // indirect
	github.com/hinshun/vt10x v0.0.0-20220301184237-5011da428d02 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

replace github.com/agentpty/agentpty => ../
