#!/usr/bin/env bash
# README's "Two hosts" as the two-host part reads it (tests/vm/two-hosts.sh), on the host: the
# three blocks are found, every server line has its client, each client names $PEER, and the
# reader leaves out comments and blank lines (pinned on a README of its own).
# Usage: two_hosts_test.sh [README]   (default: the tree's README.md)
set -u
here=$(cd "$(dirname "$0")" && pwd)
readme=${1:-$here/../../README.md}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fails=0
ok() { if "${@:2}"; then echo "ok - $1"; else echo "not ok - $1"; fails=$((fails + 1)); fi; }

# block README NAME: readme_block NAME of that README.
block() {
	mkdir -p "$d/t" && cp "$1" "$d/t/README.md"
	top=$d/t bash -c '. "$0"; readme_block "$1"' "$here/../vm/two-hosts.sh" "$2"
}

printf '%s\n' 'text' '<!-- two-hosts:server -->' '```sh' 'srv one   # why' '' '# a comment' \
	'srv two' '```' 'more' '```sh' 'not this' '```' >"$d/fake.md"
ok "the reader takes a block's commands, not its comments or the next block" \
	test "$(block "$d/fake.md" server | tr '\n' '|')" = "srv one|srv two|"
ok "a block README lacks reads as nothing" test -z "$(block "$d/fake.md" client)"

each=$(block "$readme" each | wc -l)
srv=$(block "$readme" server | wc -l)
cli=$(block "$readme" client | wc -l)
ok "README has the set-up block ($each lines)" test "$each" -gt 0
ok "README's servers ($srv) and clients ($cli) pair up" test "$srv" -gt 0 -a "$srv" = "$cli"
ok "every client line names \$PEER" test "$(block "$readme" client | grep -vc '\$PEER')" = 0
echo "two_hosts_test: $fails failed"
[ "$fails" = 0 ]
