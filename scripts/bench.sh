#!/usr/bin/env bash
# The benchmark's guest side, run inside the VM by scripts/bench-host.sh (`make bench`): the same
# perftest runs on srnic0 and on rxe0 (each on its own veth pair, loopback through one device),
# the engine's idle CPU use, and the guest's limits (srnic-bench-limits).  Writes key=value lines
# to /out/raw.txt and every program's output to /out/logs/.  Asserts nothing about timing: a run
# that fails leaves its figure out (n/a in the report).  docs/bench.md lists the figures.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../tests/vm/lib.sh
source "$top/tests/vm/lib.sh"	# RDMAV_DRIVERS, srnic_setup_main_device, wait_gid
OUT=${BENCH_OUT:-/out}
RAW=$OUT/raw.txt
LOGS=$OUT/logs
SECS=${BENCH_SECS:-150}		# time limit of one perftest program
PORT=19500
DEVS=(srnic0 rxe0)
mkdir -p "$LOGS"
: >"$RAW"

put() { echo "$1=$2" >>"$RAW"; echo "bench: $1=$2"; }

listening() {
	local hex
	hex=$(printf '%04X' "$1")
	grep -qE "^ *[0-9]+: [0-9A-F]+:$hex [0-9A-F]+:0000 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# pair NAME DEV PROG ARGS...: perftest server in the background, client on 127.0.0.1; the
# client's output is left in $LOGS/NAME.DEV.client (server's in .server).  Status 0 if both ran.
pair() {
	local name=$1 dev=$2 prog=$3 spid st=0 base
	shift 3
	PORT=$((PORT + 1))
	base=$LOGS/$name.$dev
	timeout -k 5 "$SECS" "$prog" -d "$dev" -x 0 -F -p "$PORT" "$@" >"$base.server" 2>&1 &
	spid=$!
	for _ in $(seq 1 600); do
		listening "$PORT" && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	local t0=$SECONDS eng=/sys/kernel/debug/srnic/$dev/engine
	# srnic's engine counters around the run: which path ran the WQEs.
	[ -r "$eng" ] && head -n 1 "$eng" >"$base.engine"
	timeout -k 5 "$SECS" "$prog" -d "$dev" -x 0 -F -p "$PORT" "$@" 127.0.0.1 >"$base.client" 2>&1 || st=$?
	[ -r "$eng" ] && head -n 1 "$eng" >>"$base.engine"
	if [ $st = 0 ]; then
		wait "$spid" || st=$?
	else
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
	fi
	echo "bench: $prog $* on $dev: status $st, $((SECONDS - t0)) s"
	[ $st = 0 ] || tail -n 5 "$base.client" | sed 's/^/bench:   /'
	return $st
}

# perftest's result lines: "#bytes #iterations ..." then one numeric line per size.
# BW: bytes iters peak avg msgrate; latency: bytes iters min max typical avg stdev 99% 99.9%.
result_lines() { awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 5' "$1"; }

bw() {	# bw PREFIX KEY DEV ARGS...: BW average (MB/s) of the last result line
	local pre=$1 key=$2 dev=$3
	shift 3
	pair "$key" "$dev" ib_write_bw "$@" || return 0
	put "$pre.$key" "$(result_lines "$LOGS/$key.$dev.client" | tail -n 1 | awk '{print $4}')"
}

# Iterations per figure: srnic's runs long enough that a figure repeats within a few per cent
# (64 KiB READs at -n 20000 took 0.3 s and moved by 30 % between runs of one module; at -n 100000
# by 2 %), rxe's as many as its speed allows under $SECS.
counts() {	# counts DEV: sets N_BW N_QP8 N_RATE N_LAT
	if [ "$1" = rxe0 ]; then
		N_BW=1000 N_QP8=1000 N_RATE=200000 N_LAT=1000
	else
		N_BW=100000 N_QP8=12500 N_RATE=2000000 N_LAT=20000
	fi
}

# figures DEV PREFIX: the table's perftest figures on DEV, as PREFIX.<figure>.
figures() {
	local dev=$1 d=$2 lat sz line N_BW N_QP8 N_RATE N_LAT
	counts "$dev"
	bw "$d" write_bw_64k "$dev" -s 65536 -n $N_BW
	if pair read_bw_64k "$dev" ib_read_bw -s 65536 -n $N_BW; then
		put "$d.read_bw_64k" "$(result_lines "$LOGS/read_bw_64k.$dev.client" | tail -n 1 | awk '{print $4}')"
	fi
	bw "$d" write_bw_8qp_64k "$dev" -q 8 -s 65536 -n $N_QP8
	# Message rate: 8 B writes, 16 per post list, a completion per 16.
	if pair msg_rate_8b "$dev" ib_write_bw -s 8 -l 16 -Q 16 -n $N_RATE; then
		put "$d.msg_rate_8b" "$(result_lines "$LOGS/msg_rate_8b.$dev.client" | tail -n 1 | awk '{print $5}')"
	fi
	for lat in write send read atomic; do
		sz=(-s 8)
		[ $lat = atomic ] && sz=()
		if pair "${lat}_lat" "$dev" "ib_${lat}_lat" "${sz[@]}" -n $N_LAT; then
			line=$(result_lines "$LOGS/${lat}_lat.$dev.client" | tail -n 1)
			put "$d.${lat}_lat_typ" "$(awk '{print $5}' <<<"$line")"
			put "$d.${lat}_lat_99" "$(awk '{print $8}' <<<"$line")"
		fi
	done
}

# srnic_load new|base: srnic0 again, on this build's module or on $SRNIC_BENCH_BASE's, and the
# programs on the provider of the same tree ($SRNIC_BENCH_BASE_DRIVERS, when given).
NEW_DRIVERS=$RDMAV_DRIVERS
srnic_load() {
	rdma link del srnic0 2>/dev/null
	modprobe -r srnic 2>/dev/null || rmmod srnic 2>/dev/null
	export RDMAV_DRIVERS=$NEW_DRIVERS
	[ "$1" = base ] && [ -n "${SRNIC_BENCH_BASE_DRIVERS:-}" ] &&
		RDMAV_DRIVERS=$SRNIC_BENCH_BASE_DRIVERS
	if [ "$1" = base ]; then insmod "$SRNIC_BENCH_BASE"; else modprobe srnic; fi &&
		rdma link add srnic0 type srnic netdev "$SRNIC_NETDEV" && wait_gid srnic0
}

put meta.kernel "$(uname -r)"
put meta.smp "$(nproc)"
put meta.date "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
# perftest converts TSC cycles to time with this; limit.tsc_mhz is the TSC's measured rate.
put meta.cpuinfo_mhz "$(awk -F': *' '/^cpu MHz/ { print $2; exit }' /proc/cpuinfo)"

# The devices: srnic0 on srnic_veth0 (tests/vm/lib.sh), rxe0 on rxe_veth0.
srnic_setup_main_device || exit 1
modprobe rdma_rxe || exit 1
ip link add rxe_veth0 type veth peer name rxe_veth1 && ip link set rxe_veth0 up &&
	ip link set rxe_veth1 up && rdma link add rxe0 type rxe netdev rxe_veth0 && wait_gid rxe0 || exit 1

# The limits first, while nothing else runs.
"$top/build/cmake/scripts/bench/srnic-bench-limits" >>"$RAW" || echo "bench: limits probe failed"
grep '^limit\.' "$RAW" | sed 's/^/bench: /'

for dev in "${DEVS[@]}"; do
	d=${dev%0}
	figures "$dev" "$d"
	# The size sweep (CSV/JSON only): few iterations, sizes up to 8 MiB.
	if pair write_bw_sweep "$dev" ib_write_bw -a -n 50; then
		result_lines "$LOGS/write_bw_sweep.$dev.client" |
			awk -v d="$d" '{print d ".sweep." $1 "=" $4}' >>"$RAW"
	fi
done

# SRNIC_BENCH_BASE=PATH.ko (make bench BASE=...): this build's srnic figures against that module's,
# in this boot, alternating base/new for SRNIC_BENCH_ROUNDS rounds (ab.<round>.<new|base>.<figure>;
# the report's A/B table gives each side's mean).  srnic0 is on this build's module afterwards.
if [ -n "${SRNIC_BENCH_BASE:-}" ]; then
	for r in $(seq 1 "${SRNIC_BENCH_ROUNDS:-5}"); do
		for side in base new; do
			srnic_load "$side" || { echo "bench: cannot load the $side module"; break 2; }
			figures srnic0 "ab.$r.$side"
		done
	done
	srnic_load new || exit 1
fi

# Scale: an 8-byte WRITE WITH IMM ping-pong and a 16-deep 8-byte WRITE stream beside idle
# connected QPs (srnic-bench-scale) on each device: none, 1,024, 4,096 and 16,384 in one process,
# and 16,384 in 32 processes of 512; as scale.<dev>.<idle>.<figure>.
scale() {	# scale DEV KEY IDLE [PROCS]
	local dev=$1 key=$2 log
	shift 2
	log=$LOGS/scale.$key.$dev
	if timeout -k 5 900 "$top/build/cmake/scripts/bench/srnic-bench-scale" "$dev" 0 "$@" \
		>"$log" 2>&1; then
		grep '=' "$log" | sed "s/^/scale.${dev%0}.$key./" >>"$RAW"
	else
		echo "bench: scale $key on $dev failed"
		tail -n 3 "$log" | sed 's/^/bench:   /'
	fi
}
for dev in "${DEVS[@]}"; do
	for n in 0 1024 4096 16384; do scale "$dev" "$n" "$n"; done
	scale "$dev" p32x512 16384 32
done
grep '^scale\.' "$RAW" | sed 's/^/bench: /'

# Engine threads: with more than one (srnic.engines, by default one per two CPUs), the 8-QP
# write bandwidth again on a device with one, to show what the others add.
threads() { sed -n 's/.* threads \([0-9]*\).*/\1/p' "/sys/kernel/debug/srnic/$1/engine"; }
if [ "$(threads srnic0)" -gt 1 ] 2>/dev/null; then
	put srnic.engines "$(threads srnic0)"
	p=/sys/module/srnic/parameters/engines
	# The count is read when a device is made.
	rdma link del srnic0 && echo 1 >$p && rdma link add srnic0 type srnic netdev "$SRNIC_NETDEV" &&
		wait_gid srnic0 && pair write_bw_8qp_64k_1eng srnic0 ib_write_bw -q 8 -s 65536 -n 12500 &&
		put srnic.write_bw_8qp_64k_1eng "$(result_lines "$LOGS/write_bw_8qp_64k_1eng.srnic0.client" |
			tail -n 1 | awk '{print $4}')"
	echo 0 >$p
	rdma link del srnic0 2>/dev/null
	rdma link add srnic0 type srnic netdev "$SRNIC_NETDEV" && wait_gid srnic0 || exit 1
fi

# Fairness: fair_test's victim, an 8-byte WRITE at a time, beside another process posting SENDs
# of 128 MiB on the same device; its median and 99th percentile completion times.
"$VMBIN/fair_test" -t victim_beside_large_sends >"$LOGS/fair.srnic0" 2>&1
line=$(grep -o 'victim: [0-9]* WRITEs.*' "$LOGS/fair.srnic0")
if [ -n "$line" ]; then
	put srnic.fair_victim_p50 "$(sed -n 's/.* p50 \([0-9]*\) us.*/\1/p' <<<"$line")"
	put srnic.fair_victim_p99 "$(sed -n 's/.* p99 \([0-9]*\) us.*/\1/p' <<<"$line")"
else
	echo "bench: fair_test printed no victim figures (see logs/fair.srnic0)"
fi

# The engine's CPU use while idle: an ibv_rc_pingpong server holds a QP (made before it waits for
# its client) for 5 s; the engine threads srnic/srnic0/N's utime+stime before and after.  rxe has
# no such thread (its work runs in softirq/kworkers): n/a.
engine_pids() {
	local p
	for p in /proc/[0-9]*; do
		[[ "$(cat "$p/comm" 2>/dev/null)" == "srnic/$1/"* ]] && echo "${p#/proc/}"
	done
}
ticks() { local p t=0; for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo $t; }
epid=$(engine_pids srnic0)
if [ -n "$epid" ]; then
	PORT=$((PORT + 1))
	ibv_rc_pingpong -d srnic0 -g 0 -p "$PORT" >"$LOGS/idle.srnic0.server" 2>&1 &
	spid=$!
	for _ in $(seq 1 100); do listening "$PORT" && break; sleep 0.1; done
	sleep 1
	t0=$(ticks $epid)
	sleep 5
	t1=$(ticks $epid)
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	put srnic.idle_cpu_pct "$(awk -v a="$t0" -v b="$t1" -v hz="$(getconf CLK_TCK)" \
		'BEGIN { printf "%.1f", (b - a) * 100 / hz / 5 }')"
else
	echo "bench: no srnic/srnic0/N kernel thread"
fi

rdma link del rxe0
rdma link del srnic0
echo "bench: done"
