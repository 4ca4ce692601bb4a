#!/usr/bin/env bash
# Fetches the pinned @xterm/xterm from npm and copies its built files and
# licence into static/xterm, where go:embed takes them. To move to another
# release: XTERM_VERSION=x.y.z ./update-xterm.sh, then change the default
# below and commit the files. static/app.js sends the person's input only
# as xterm.js's core marks it (coreService.onUserInput): TestWeb's "typing
# allowed" fails on a release without that hook.
set -euo pipefail
version="${XTERM_VERSION:-6.0.0}"
here="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "@xterm/xterm@$version" >/dev/null && tar xzf xterm-xterm-"$version".tgz)
dst="$here/static/xterm"
mkdir -p "$dst"
cp "$tmp/package/lib/xterm.js" "$tmp/package/css/xterm.css" "$tmp/package/LICENSE" "$dst/"
echo "$version" >"$dst/VERSION"
echo "static/xterm: @xterm/xterm $version"
