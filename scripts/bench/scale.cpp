// srnic-bench-scale: a ping-pong and a WRITE stream beside idle connected QPs, for the scale table
// of `make bench` (docs/bench.md).  Usage:
//   srnic-bench-scale DEV GID_INDEX IDLE [PROCS]
// makes IDLE RC QPs on DEV, connected in pairs to each other and never used (spread over PROCS
// processes, each with its own context, when PROCS > 1), then on a second pair of QPs measures an
// 8-byte RDMA WRITE WITH IMM ping-pong (one way: half a round trip) and a stream of 8-byte RDMA
// WRITEs 16 deep.  Prints key=value lines: lat_p50_us, lat_p99_us, write_rate (WRITEs/s), and
// kmem_per_qp_b (the kernel's slab and vmalloc growth per idle QP, from /proc/meminfo).  Exits
// non-zero, printing why, if a step fails; times nothing it asserts.
#include <infiniband/verbs.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

constexpr int kLatIters = 20000;
constexpr double kRateSeconds = 2.0;
constexpr int kDepth = 16;

double now() {
	return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

[[noreturn]] void die(const char *what) {
	std::fprintf(stderr, "srnic-bench-scale: %s: %s\n", what, std::strerror(errno));
	std::exit(1);
}

struct Dev {
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_gid gid{};
	int gid_index = 0;
	ibv_mtu mtu = IBV_MTU_1024;
};

Dev open_dev(const char *name, int gid_index) {
	int n = 0;
	ibv_device **list = ibv_get_device_list(&n);
	Dev d;

	for (int i = 0; list && i < n && !d.ctx; i++)
		if (!std::strcmp(ibv_get_device_name(list[i]), name))
			d.ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!d.ctx)
		die("open device");
	ibv_port_attr port{};
	if (ibv_query_port(d.ctx, 1, &port) || ibv_query_gid(d.ctx, 1, gid_index, &d.gid))
		die("query port");
	d.mtu = port.active_mtu;
	d.gid_index = gid_index;
	d.pd = ibv_alloc_pd(d.ctx);
	if (!d.pd)
		die("alloc pd");
	return d;
}

ibv_qp *make_qp(const Dev &d, ibv_cq *scq, ibv_cq *rcq, uint32_t depth) {
	ibv_qp_init_attr a{};
	a.send_cq = scq;
	a.recv_cq = rcq;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = depth;
	a.cap.max_recv_wr = depth;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	return ibv_create_qp(d.pd, &a);
}

// RESET to RTS, connected to @dest on the same device.
int connect_qp(const Dev &d, ibv_qp *qp, uint32_t dest) {
	ibv_qp_attr a{};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	a = {};
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = d.mtu;
	a.dest_qp_num = dest;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = d.gid;
	a.ah_attr.grh.sgid_index = d.gid_index;
	a.ah_attr.grh.hop_limit = 64;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					 IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

// @n idle QPs on @d, connected in pairs; kept for the process's life.
void make_idle(const Dev &d, long n) {
	ibv_cq *cq = ibv_create_cq(d.ctx, 4, nullptr, nullptr, 0);

	if (!cq)
		die("idle CQ");
	for (long i = 0; i + 2 <= n; i += 2) {
		ibv_qp *a = make_qp(d, cq, cq, 1), *b = a ? make_qp(d, cq, cq, 1) : nullptr;

		if (!b || connect_qp(d, a, b->qp_num) || connect_qp(d, b, a->qp_num))
			die("idle QP");
	}
}

// A child with @n idle QPs of its own context, until @go reaches EOF.
[[noreturn]] void idle_child(const char *dev, int gid_index, long n, int ready, int go) {
	Dev d = open_dev(dev, gid_index);
	char c;

	make_idle(d, n);
	if (write(ready, &c, 1) != 1)
		_exit(1);
	while (read(go, &c, 1) > 0)
		;
	_exit(0);
}

// Slab and vmalloc of the kernel, in bytes.
long kernel_bytes() {
	std::ifstream f("/proc/meminfo");
	std::string key;
	long v, total = 0;
	std::string unit;

	while (f >> key >> v) {
		if (key == "Slab:" || key == "VmallocUsed:")
			total += v * 1024;
		std::getline(f, unit);
	}
	return total;
}

// One side of the ping-pong: its sends and receives complete on CQs of their own.
struct End {
	ibv_cq *scq, *rcq;
	ibv_qp *qp;
	ibv_mr *mr;
	char *buf;
};

End make_end(const Dev &d) {
	End e{};
	e.buf = static_cast<char *>(std::aligned_alloc(4096, 4096));
	e.scq = ibv_create_cq(d.ctx, 256, nullptr, nullptr, 0);
	e.rcq = ibv_create_cq(d.ctx, 256, nullptr, nullptr, 0);
	e.mr = e.buf ? ibv_reg_mr(d.pd, e.buf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)
		     : nullptr;
	e.qp = e.scq && e.rcq ? make_qp(d, e.scq, e.rcq, 64) : nullptr;
	if (!e.mr || !e.qp)
		die("ping-pong QP");
	return e;
}

int post_recv(End &e) {
	ibv_sge s{reinterpret_cast<uintptr_t>(e.buf), 8, e.mr->lkey};
	ibv_recv_wr wr{}, *bad;
	wr.sg_list = &s;
	wr.num_sge = 1;
	return ibv_post_recv(e.qp, &wr, &bad);
}

int post_write(End &from, const End &to, ibv_wr_opcode op) {
	ibv_sge s{reinterpret_cast<uintptr_t>(from.buf), 8, from.mr->lkey};
	ibv_send_wr wr{}, *bad;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(to.buf) + 64;
	wr.wr.rdma.rkey = to.mr->rkey;
	return ibv_post_send(from.qp, &wr, &bad);
}

// @n successful completions of @cq, spinning.
void wait_for(ibv_cq *cq, int n) {
	ibv_wc wc[kDepth];

	while (n > 0) {
		int got = ibv_poll_cq(cq, std::min(n, kDepth), wc);

		if (got < 0)
			die("poll");
		for (int i = 0; i < got; i++)
			if (wc[i].status != IBV_WC_SUCCESS) {
				errno = EIO;
				die(ibv_wc_status_str(wc[i].status));
			}
		n -= got;
	}
}

void ping_pong(End &a, End &b) {
	std::vector<double> lat;

	lat.reserve(kLatIters);
	for (int i = 0; i < kLatIters; i++) {
		double t0 = now();

		if (post_recv(b) || post_recv(a) || post_write(a, b, IBV_WR_RDMA_WRITE_WITH_IMM))
			die("post");
		wait_for(b.rcq, 1);
		if (post_write(b, a, IBV_WR_RDMA_WRITE_WITH_IMM))
			die("post");
		wait_for(a.rcq, 1);
		lat.push_back((now() - t0) / 2 * 1e6);
		// The send completions of the round trip, so the send queues never fill.
		wait_for(a.scq, 1);
		wait_for(b.scq, 1);
	}
	std::sort(lat.begin(), lat.end());
	std::printf("lat_p50_us=%.2f\nlat_p99_us=%.2f\n", lat[lat.size() / 2],
		    lat[lat.size() * 99 / 100]);
}

void write_rate(End &a, const End &b) {
	long done = 0;
	int out = 0;
	ibv_wc wc[kDepth];
	double t0 = now(), t1;

	do {
		while (out < kDepth) {
			if (post_write(a, b, IBV_WR_RDMA_WRITE))
				die("post");
			out++;
		}
		int n = ibv_poll_cq(a.scq, kDepth, wc);
		if (n < 0)
			die("poll");
		for (int i = 0; i < n; i++)
			if (wc[i].status != IBV_WC_SUCCESS) {
				errno = EIO;
				die(ibv_wc_status_str(wc[i].status));
			}
		out -= n;
		done += n;
		t1 = now();
	} while (t1 - t0 < kRateSeconds);
	wait_for(a.scq, out);
	std::printf("write_rate=%.0f\n", done / (t1 - t0));
}

} // namespace

int main(int argc, char **argv) {
	if (argc < 4) {
		std::fprintf(stderr, "usage: srnic-bench-scale DEV GID_INDEX IDLE [PROCS]\n");
		return 2;
	}
	const char *dev = argv[1];
	int gid_index = std::atoi(argv[2]), procs = argc > 4 ? std::atoi(argv[4]) : 1;
	long idle = std::atol(argv[3]);
	Dev d = open_dev(dev, gid_index);
	End a = make_end(d), b = make_end(d);
	int ready[2], go[2];
	long k0 = kernel_bytes();

	if (connect_qp(d, a.qp, b.qp->qp_num) || connect_qp(d, b.qp, a.qp->qp_num))
		die("connect the ping-pong");
	if (procs <= 1) {
		make_idle(d, idle);
	} else {
		if (pipe(ready) || pipe(go))
			die("pipe");
		for (int i = 0; i < procs; i++) {
			pid_t pid = fork();

			if (pid < 0)
				die("fork");
			if (!pid) {
				close(ready[0]);
				close(go[1]);
				idle_child(dev, gid_index, idle / procs, ready[1], go[0]);
			}
		}
		close(ready[1]);
		close(go[0]);
		for (int i = 0; i < procs; i++) {
			char c;
			if (read(ready[0], &c, 1) != 1)
				die("an idle process failed");
		}
	}
	if (idle)
		std::printf("kmem_per_qp_b=%ld\n", (kernel_bytes() - k0) / idle);
	ping_pong(a, b);
	write_rate(a, b);
	if (procs > 1) {
		close(go[1]);
		while (wait(nullptr) > 0)
			;
	}
	return 0;
}
