#!/usr/bin/env bash
# The one place that chooses the guest kernel: the newest Debian 12 "6.12.*+deb12-amd64" ABI for
# which both the unsigned image and the matching headers are available (installed or installable).
# Prints the release string, e.g. 6.12.117+deb12-amd64. KVER in the environment overrides it.
set -euo pipefail
if [ -n "${KVER:-}" ]; then echo "$KVER"; exit 0; fi
pick() {
	# stdin: linux-image-*-unsigned package names; $1: predicate for the headers package.
	local v
	for v in $(sed -n 's/^linux-image-\(6\.12\.[0-9]*+deb12-amd64\)-unsigned$/\1/p' | sort -t. -k3,3nr -u); do
		if "$1" "linux-headers-$v"; then echo "$v"; return 0; fi
	done
	return 1
}
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
available() { apt-cache show "$1" >/dev/null 2>&1; }
# Prefer a pair already installed (no network needed), else the newest in the archive.
if v=$(dpkg-query -W -f='${Package}\n' 'linux-image-6.12.*-unsigned' 2>/dev/null |
	while read -r p; do installed "$p" && echo "$p"; done | pick installed); then
	echo "$v"; exit 0
fi
if v=$(apt-cache search --names-only '^linux-image-6\.12\..*\+deb12-amd64-unsigned$' | awk '{print $1}' | pick available); then
	echo "$v"; exit 0
fi
echo "kver.sh: no Debian 6.12 +deb12-amd64 image/headers pair found (run apt-get update?)" >&2
exit 1
