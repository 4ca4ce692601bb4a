module github.com/agentpty/agentpty

go 1.24.0

require github.com/hinshun/vt10x v0.0.0-20220301184237-5011da428d02
