#!/usr/bin/env bash
# `make bench`: boots one VM that runs scripts/bench.sh (srnic vs rxe, plus the guest's limits),
# then two guests on one wire (qemu/run-pair) that run scripts/bench-wire.sh (rxe with rxe, srnic
# with rxe, srnic with srnic across it; BENCH_WIRE=0 leaves them out), then turns the raw results into build/bench/<timestamp>/{table.md,results.csv,results.json,
# chart.svg} (build/bench/latest points at the newest).  SMP=N (default 2) sets the vCPUs.
# docs/bench.md describes the figures.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
smp=${SMP:-2}
# BASE=PATH.ko: an A/B of srnic against that module (built for the same kernel) in the same boot,
# the base rounds with the provider of the tree the module was built in (BASE_DRIVERS=PREFIX, by
# default PATH/../../build/cmake/libsrnic when there is one): the ABI may have changed since.
if [ -n "${BASE:-}" ]; then
	export SRNIC_BENCH_BASE SRNIC_BENCH_BASE_DRIVERS
	SRNIC_BENCH_BASE=$(realpath -e -- "$BASE") || { echo "bench: no such module: $BASE" >&2; exit 2; }
	SRNIC_BENCH_BASE_DRIVERS=${BASE_DRIVERS:-$(dirname "$SRNIC_BENCH_BASE")/../build/cmake/libsrnic}
	# A provider path is a prefix: libibverbs adds -rdmav<N>.so.
	compgen -G "$SRNIC_BENCH_BASE_DRIVERS-rdmav*.so" >/dev/null || SRNIC_BENCH_BASE_DRIVERS=
fi
stamp=$(date +%Y%m%d-%H%M%S)
dir=$top/build/bench/$stamp
mkdir -p "$dir"
st=0
qemu/run --smp "$smp" --timeout "${BENCH_TIMEOUT:-1500}" --out "$dir/vm" --module kernel/srnic.ko \
	-- scripts/bench.sh || st=$?
ln -sfn "$stamp" "$top/build/bench/latest"
if [ ! -s "$dir/vm/raw.txt" ]; then
	echo "bench: the guest wrote no results (qemu/run status $st); see $dir/vm/console.log" >&2
	exit 1
fi
cp "$dir/vm/raw.txt" "$dir/raw.txt"
if [ "${BENCH_WIRE:-1}" != 0 ]; then
	wst=0
	qemu/run-pair --timeout "${BENCH_WIRE_TIMEOUT:-2400}" --out "$dir/pair" --module kernel/srnic.ko \
		-- scripts/bench-wire.sh || wst=$?
	[ "$wst" = 0 ] || echo "bench: the wire's guests exited with status $wst; see $dir/pair" >&2
	[ "$st" != 0 ] || st=$wst
	cat "$dir/pair/a/raw.txt" >>"$dir/raw.txt" 2>/dev/null
fi
echo
build/cmake/scripts/bench/srnic-bench-report "$dir/raw.txt" "$dir"
echo
echo "bench: results in $dir (table.md, results.csv, results.json, chart.svg; logs in vm/logs)"
[ "$st" = 0 ] || echo "bench: qemu/run exited with status $st" >&2
exit "$st"
