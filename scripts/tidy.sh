#!/usr/bin/env bash
# tidy.sh [-diff]: go mod tidy in every module of the repository; with
# -diff, change nothing and fail when a go.mod or go.sum differs from what
# tidy leaves (make tidy, part of make lint).
#
# kubepty, examples and cmd/agentpty-mcp require agentpty's own modules by
# the version the next release tags, which no proxy serves yet; go.work
# points them at the checkout, but go mod tidy ignores go.work. So each
# module is tidied through a copy of its go.mod (-modfile) in which those
# requirements are replaced by the checkout: nothing else changes, and
# go.sum holds no line for agentpty's own modules (a release adds them).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
diff=0
[ "${1:-}" = -diff ] && diff=1
modules=(. kubepty examples cmd/agentpty-mcp)
own=(github.com/agentpty/agentpty=. github.com/agentpty/agentpty/kubepty=kubepty)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for mod in "${modules[@]}"; do
	dir=$root/$mod
	cp "$dir/go.mod" "$tmp/go.mod"
	if [ -f "$dir/go.sum" ]; then cp "$dir/go.sum" "$tmp/go.sum"; else : >"$tmp/go.sum"; fi
	replaced=()
	for o in "${own[@]}"; do
		path=${o%%=*} at=$root/${o#*=}
		if [ "$at" != "$dir" ] && grep -q "^[[:space:]]*$path v\|^require $path v" "$dir/go.mod"; then
			go mod edit -modfile="$tmp/go.mod" -replace="$path=$at"
			replaced+=("$path")
		fi
	done
	if [ $diff = 1 ]; then
		if ! (cd "$dir" && GOWORK=off GOFLAGS=-mod=mod go mod tidy -diff -modfile="$tmp/go.mod"); then
			echo "tidy: $mod: run scripts/tidy.sh" >&2
			fail=1
		fi
		continue
	fi
	(cd "$dir" && GOWORK=off GOFLAGS=-mod=mod go mod tidy -modfile="$tmp/go.mod")
	for path in "${replaced[@]}"; do
		go mod edit -modfile="$tmp/go.mod" -dropreplace="$path"
	done
	cp "$tmp/go.mod" "$dir/go.mod"
	grep -v "^github.com/agentpty/agentpty[/ ]" "$tmp/go.sum" >"$dir/go.sum" || : >"$dir/go.sum"
	[ -s "$dir/go.sum" ] || rm -f "$dir/go.sum"
done
exit $fail
