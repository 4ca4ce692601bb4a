#!/usr/bin/env bash
# proxycheck.sh [VERSION]: install agentpty-mcp the way a user meets it.
#
# It clones the repository's HEAD into a temporary directory and releases
# it there as VERSION (v0.9.0 by default): the root tagged VERSION, then
# kubepty and cmd/agentpty-mcp, each with its requirements of agentpty's
# own modules set to VERSION, tidied, committed and tagged
# (kubepty/VERSION, cmd/agentpty-mcp/VERSION), as a release does. The go
# command itself then makes the modules' zips from that clone (go mod
# download, with git told that the module's GitHub address is the clone),
# and their download cache is served as a file:// module proxy. In an
# empty GOPATH and module cache, with that proxy first and the configured
# one after it for third-party modules (the local module cache stands in
# for it where it holds them), it runs
#
#	go install github.com/agentpty/agentpty/cmd/agentpty-mcp@VERSION
#
# runs the installed binary with --version and an MCP initialize and
# tools/list over stdio, runs the server's own MCP tests against it, and builds a new module that requires kubepty
# from the same proxy. Run by make proxycheck (part of make test).
set -euo pipefail
version=${1:-v0.9.0}
root=$(cd "$(dirname "$0")/.." && pwd)
begin=$(date +%s)
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
say() { echo "proxycheck: $*"; }

upstream=$(go env GOPROXY)
localcache=$(go env GOMODCACHE)/cache/download
devpath=$(go env GOPATH) devmodcache=$(go env GOMODCACHE)
unset GOFLAGS GOWORK
export GOWORK=off GOTOOLCHAIN=local
export GONOSUMDB=github.com/agentpty/agentpty GOPRIVATE= # no checksum database knows these modules

src=$tmp/src
git clone -q --no-local "$root" "$src"
git -C "$src" -c user.name=proxycheck -c user.email=proxycheck@localhost tag "$version"

# The clone is github.com/agentpty/agentpty for git, and so for go's
# direct fetches: agentpty's modules come from it, the rest from the
# configured proxy.
cat >"$tmp/gitconfig" <<CFG
[url "file://$src"]
	insteadOf = https://github.com/agentpty/agentpty
[user]
	name = proxycheck
	email = proxycheck@localhost
CFG
release() { # release DIR MODULE...: require MODULE@version, tidy, commit, tag
	local dir=$1
	shift
	for m in "$@"; do
		(cd "$src/$dir" && go mod edit -require="$m@$version")
	done
	(cd "$src/$dir" && GIT_CONFIG_GLOBAL=$tmp/gitconfig GOPRIVATE=github.com/agentpty/agentpty \
		GOPROXY="file://$localcache,$upstream" GOMODCACHE=$tmp/release-cache GOFLAGS=-mod=mod go mod tidy)
	git -C "$src" add -A "$dir"
	git -C "$src" -c user.name=proxycheck -c user.email=proxycheck@localhost commit -q -m "release $dir $version"
	git -C "$src" tag "$dir/$version"
}
release kubepty github.com/agentpty/agentpty
release cmd/agentpty-mcp github.com/agentpty/agentpty github.com/agentpty/agentpty/kubepty

# The go command makes the module zips from the tagged clone; its
# download cache is then a module proxy.
GIT_CONFIG_GLOBAL=$tmp/gitconfig GOPRIVATE=github.com/agentpty/agentpty GOPROXY=direct \
	GOMODCACHE=$tmp/proxy go mod download -x=false \
	"github.com/agentpty/agentpty@$version" \
	"github.com/agentpty/agentpty/kubepty@$version" \
	"github.com/agentpty/agentpty/cmd/agentpty-mcp@$version"
proxy=$tmp/proxy/cache/download
for m in github.com/agentpty/agentpty github.com/agentpty/agentpty/kubepty github.com/agentpty/agentpty/cmd/agentpty-mcp; do
	for f in info mod zip; do
		test -s "$proxy/$m/@v/$version.$f" || { say "no $m/@v/$version.$f in the proxy"; exit 1; }
	done
	echo "$version" >"$proxy/$m/@v/list"
done
built=$(date +%s)
say "released $version in a clone and made its proxy in $((built - begin)) s"

# A user's machine: nothing of agentpty's but the proxy, no git rewrite.
export GIT_CONFIG_GLOBAL=/dev/null GOPATH=$tmp/gopath GOMODCACHE=$tmp/gopath/pkg/mod GOBIN=$tmp/bin
export GOPROXY="file://$proxy,file://$localcache,$upstream"
mkdir -p "$tmp/empty"
(cd "$tmp/empty" && go install "github.com/agentpty/agentpty/cmd/agentpty-mcp@$version")
installed=$(date +%s)
say "go install ...cmd/agentpty-mcp@$version into an empty module cache: $((installed - built)) s"

got=$("$tmp/bin/agentpty-mcp" --version)
case $got in
"agentpty-mcp $version (github.com/agentpty/agentpty $version)") say "--version: $got" ;;
*) say "--version printed \"$got\"; want agentpty-mcp $version (github.com/agentpty/agentpty $version)"; exit 1 ;;
esac

# An MCP client's first words: initialize, initialized, tools/list, each
# answer awaited before the next; closing stdin then ends the server.
mcp_check() { # mcp_check BINARY: the replies, one JSON message a line
	local id line
	coproc SRV { timeout 120 "$1" --shell 'bash -c' 2>"$tmp/server.log"; }
	printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"proxycheck","version":"0"}}}' >&"${SRV[1]}"
	for id in 1 2; do
		while IFS= read -t 60 -r line <&"${SRV[0]}"; do
			echo "$line"
			case $line in *"\"id\":$id,"* | *"\"id\":$id}"*) break ;; esac
		done
		[ $id = 1 ] && printf '%s\n' '{"jsonrpc":"2.0","method":"notifications/initialized"}' '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' >&"${SRV[1]}"
	done
	# shellcheck disable=SC1083,SC2093 # closes the coprocess's stdin, a descriptor in a variable
	exec {SRV[1]}>&-
	wait "$SRV_PID" || true
}
reply=$(mcp_check "$tmp/bin/agentpty-mcp")
for want in '"id":1' "\"version\":\"$version\"" '"id":2' '"name":"pty-start"' '"name":"pty-write"' '"name":"pty-kill"'; do
	if ! grep -qF "$want" <<<"$reply"; then
		say "the installed server's replies lack $want:"
		echo "$reply"
		cat "$tmp/server.log"
		exit 1
	fi
done
say "initialize and tools/list over stdio: $(grep -o '"name":"pty-[a-z]*"' <<<"$reply" | sort -u | wc -l) tools"

# The server's own tests of the MCP protocol (the official SDK's client,
# and raw JSON-RPC), run against the installed binary instead of the
# checkout's (cmd/agentpty-mcp's serverCmd reads AGENTPTY_MCP_BINARY).
conformance='TestStdio|TestProgress|TestCancelKillsItsStart|TestShutdown|TestToolErrors|TestArgumentsArrayIsAnswered|TestWaitTotal|TestBadInputIsAnswered|TestCancelledRequestIsNotAnswered'
(cd "$root/cmd/agentpty-mcp" && env -u GOWORK -u GIT_CONFIG_GLOBAL -u GOBIN GOPATH="$devpath" GOMODCACHE="$devmodcache" GOPROXY="$upstream" \
	AGENTPTY_MCP_BINARY="$tmp/bin/agentpty-mcp" go test -count=1 -run "^($conformance)\$" . >"$tmp/conformance.log" 2>&1) || {
	say "the server's MCP tests fail against the installed binary:"
	cat "$tmp/conformance.log"
	exit 1
}
tested=$(date +%s)
say "the server's MCP tests ($(tr '|' ' ' <<<"$conformance")) pass against the installed binary: $((tested - installed)) s"

# kubepty, required by a new module from the same proxy.
mkdir -p "$tmp/user"
cd "$tmp/user"
go mod init -q example.com/user 2>/dev/null || go mod init example.com/user >/dev/null 2>&1
cat >main.go <<'GO'
package main

import (
	"fmt"

	"github.com/agentpty/agentpty"
	"github.com/agentpty/agentpty/kubepty"
)

func main() {
	var b agentpty.Backend = (*kubepty.Backend)(nil)
	fmt.Println(b != nil)
}
GO
go get "github.com/agentpty/agentpty/kubepty@$version" >/dev/null 2>&1 || go get "github.com/agentpty/agentpty/kubepty@$version"
go build -o /dev/null .
done=$(date +%s)
say "a module requiring kubepty@$version builds: $((done - tested)) s"
say "ok in $((done - begin)) s"
