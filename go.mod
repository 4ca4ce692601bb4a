module github.com/agentpty/agentpty

go 1.24.0
