// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Operating srnic: port counters (`rdma statistic show`, hw_counters),
 * per-QP counters (`rdma statistic qp`), resource dumps (`rdma resource
 * show -dd` and `-r`), tracepoints, fault injection (debugfs fault/), and
 * that every capability query_device reports is what the device does.
 */
#include <ctype.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "traffic.h"

static const char *test_netdev(void)
{
	const char *n = getenv("SRNIC_NETDEV");

	return n && *n ? n : "srnic_veth0";
}

/* ---- reading counters and knobs ---- */

static long long hw_counter(const char *name)
{
	return dev_counter(srnic_test_dev(), name);
}

/*
 * A port counter once it reads @want, or what it reads after 2 s: the core
 * caches the values it reads for a few milliseconds.
 */
static long long counter_reaches(const char *name, long long want)
{
	uint64_t end = now_ms() + 2000;
	long long v;

	while ((v = hw_counter(name)) != want && now_ms() < end)
		usleep(2000);
	return v;
}

static int knob_write(const char *kind, const char *field, long long v)
{
	char path[64];
	FILE *f;
	int err;

	snprintf(path, sizeof(path), "fault/%s%s%s", kind, *kind ? "/" : "",
		 field);
	f = fopen(dbg_path(path), "w");
	if (!f)
		return -errno;
	fprintf(f, "%lld\n", v);
	err = fflush(f) ? -errno : 0;
	if (fclose(f) && !err)
		err = -errno;
	return err;
}

static long long knob_read(const char *kind, const char *field)
{
	char path[64], *s;
	long long v;

	snprintf(path, sizeof(path), "fault/%s/%s", kind, field);
	s = slurp(dbg_path(path));
	v = s ? atoll(s) : -1;
	free(s);
	return v;
}

static const char *const kinds[] = { "drop", "rnr", "odp", "cq_overrun",
				     "alloc", "delay", "duplicate", "corrupt",
				     "odp_busy" };

/* Arms @kind for @qpn's events: @times failures (-1: no limit) at @percent. */
static int arm(const char *kind, uint32_t qpn, int times, int percent)
{
	return knob_write(kind, "qpn", qpn) ?: knob_write(kind, "times", times) ?:
	       knob_write(kind, "probability", percent);
}

/* Every knob back to "off"; the sequence restarts from seed 1. */
static void faults_off(void)
{
	for (unsigned int i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		knob_write(kinds[i], "probability", 0);
		knob_write(kinds[i], "times", -1);
		knob_write(kinds[i], "interval", 1);
		knob_write(kinds[i], "qpn", 0);
	}
	knob_write("", "seed", 1);
	knob_write("", "delay_us", 1000);
}

/* A command's whole standard output, NUL-terminated (or NULL). */
static char *run_out(const char *fmt, ...)
{
	char cmd[512], *buf;
	size_t len = 0, cap = 1 << 16;
	va_list ap;
	FILE *f;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	f = popen(cmd, "r");
	buf = malloc(cap);
	if (!f || !buf) {
		if (f)
			pclose(f);
		free(buf);
		return NULL;
	}
	len = fread(buf, 1, cap - 1, f);
	buf[len] = 0;
	if (pclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The number after `"name":` in JSON text (the first one), or -1. */
static long long json_num(const char *s, const char *name)
{
	char key[64];
	const char *p;

	snprintf(key, sizeof(key), "\"%s\":", name);
	p = s ? strstr(s, key) : NULL;
	return p ? atoll(p + strlen(key)) : -1;
}

/* ---- traffic ---- */

/* @n SENDs of @len bytes from @a to @b, each received, all checked. */
static void sends(struct __test_metadata *_metadata, struct ep *a,
		  struct ep *b, int n, uint32_t len)
{
	/* UD receives start with the 40-byte GRH. */
	uint32_t grh = a->o.type == IBV_QPT_UD ? 40 : 0;
	struct ibv_wc wc;

	for (int i = 0; i < n; i++) {
		fill(a->buf, len, 100 + i);
		ASSERT_EQ(0, post_recv(b, 1000 + i, 0, len + grh));
		ASSERT_EQ(0, post_send1(a, IBV_WR_SEND, i, 0, len,
					IBV_SEND_SIGNALED, NULL, 0, 0));
		WAIT_WC(a->cq, wc);
		ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
		WAIT_WC(b->cq, wc);
		ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
		ASSERT_EQ(len + grh, wc.byte_len);
		ASSERT_EQ(-1, verify(b->buf + grh, len, 100 + i));
	}
}

FIXTURE(ops) {
	struct env e;
	struct ep a, b;
};

FIXTURE_VARIANT(ops) {
	enum ibv_qp_type type;
};

FIXTURE_VARIANT_ADD(ops, rc) { .type = IBV_QPT_RC };
FIXTURE_VARIANT_ADD(ops, ud) { .type = IBV_QPT_UD };

FIXTURE_SETUP(ops)
{
	struct qp_opts o;

	if (access(dbg_path("fault"), F_OK))
		SKIP(return, "no %s (debugfs not mounted or old srnic)",
		     dbg_path("fault"));
	faults_off();
	ASSERT_EQ(0, env_open(&self->e));
	o = qp_defaults(&self->e, variant->type);
	o.timeout = 10;		/* 4 ms: retransmissions come soon */
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &self->a, &self->b));
}

FIXTURE_TEARDOWN(ops)
{
	faults_off();
	/* A failed auto-mode test must not bind the next suites' QPs. */
	sh("rdma statistic qp set link %s/1 auto off 2>/dev/null", srnic_test_dev());
	ep_destroy(&self->a);
	ep_destroy(&self->b);
	env_close(&self->e);
}

/* ---- counters ---- */

TEST_F(ops, port_counters_count_messages)
{
	long long tx = hw_counter("tx_msgs"), rx = hw_counter("rx_msgs");
	long long wqes = hw_counter("wqes") + hw_counter("inline_wqes");
	char *out;

	ASSERT_LE(0, tx);
	sends(_metadata, &self->a, &self->b, 10, 256);
	EXPECT_EQ(tx + 10, counter_reaches("tx_msgs", tx + 10));
	EXPECT_EQ(rx + 10, counter_reaches("rx_msgs", rx + 10));
	/* The engine thread's WQEs and the doorbell calls'. */
	EXPECT_LE(wqes + 10, hw_counter("wqes") + hw_counter("inline_wqes"));
	/* The same counter through netlink. */
	out = run_out("rdma -j statistic show link %s/1", srnic_test_dev());
	ASSERT_NE(NULL, out);
	EXPECT_LE(tx + 10, json_num(out, "tx_msgs")) TH_LOG("%s", out);
	free(out);
}

/*
 * The counter @qpn is bound to, as its JSON object from `rdma statistic qp
 * show` (whose lqpn filter finds only counters of one QP), or NULL.
 */
static char *qp_stat(const char *dev, uint32_t qpn)
{
	char *all = run_out("rdma -j statistic qp show link %s/1", dev);
	char *p = all, *obj = NULL;

	while (p && !obj && (p = strstr(p, "\"cntn\":"))) {
		char *end = strchr(p, '}'), *l = strstr(p, "\"lqpn\":");

		if (!end)
			break;
		/* "lqpn":[6,7] or "lqpn":6 */
		for (l = l && l < end ? l + 7 : end; l < end && !obj; l++) {
			char *next;
			unsigned long v = strtoul(l, &next, 10);

			if (next == l)
				continue;
			if (v == qpn)
				obj = strndup(p, end - p);
			l = next - 1;
		}
		p = end;
	}
	free(all);
	return obj;
}

TEST_F(ops, qp_counters_auto_mode)
{
	const char *dev = srnic_test_dev();
	struct qp_opts o = qp_defaults(&self->e, variant->type);
	struct ep c, d;
	char *out;

	/* Auto mode binds QPs as they reach INIT: a new pair, then. */
	ASSERT_EQ(0, sh("rdma statistic qp set link %s/1 auto type on", dev));
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &c, &d));
	sends(_metadata, &c, &d, 7, 100);
	out = qp_stat(dev, c.qp->qp_num);
	ASSERT_NE(NULL, out);
	/* type on: both QPs share one counter, which saw both ends. */
	EXPECT_EQ(7, json_num(out, "tx_msgs")) TH_LOG("%s", out);
	EXPECT_EQ(700, json_num(out, "tx_bytes")) TH_LOG("%s", out);
	EXPECT_EQ(7, json_num(out, "rx_msgs")) TH_LOG("%s", out);
	free(out);
	ep_destroy(&c);
	ep_destroy(&d);
	EXPECT_EQ(0, sh("rdma statistic qp set link %s/1 auto off", dev));
}

TEST_F(ops, qp_counters_manual_bind)
{
	const char *dev = srnic_test_dev();
	uint32_t qa = self->a.qp->qp_num;
	long long cntn;
	char *out;

	sends(_metadata, &self->a, &self->b, 3, 64);	/* before: not counted */
	ASSERT_EQ(0, sh("rdma statistic qp bind link %s/1 lqpn %u", dev, qa));
	sends(_metadata, &self->a, &self->b, 5, 64);
	out = qp_stat(dev, qa);
	ASSERT_NE(NULL, out);
	EXPECT_EQ(5, json_num(out, "tx_msgs")) TH_LOG("%s", out);
	EXPECT_EQ(320, json_num(out, "tx_bytes")) TH_LOG("%s", out);
	EXPECT_EQ(0, json_num(out, "rx_msgs")) TH_LOG("%s", out);
	cntn = json_num(out, "cntn");
	free(out);
	ASSERT_LT(0, cntn);
	EXPECT_EQ(0, sh("rdma statistic qp unbind link %s/1 cntn %lld lqpn %u",
			dev, cntn, qa));
	out = qp_stat(dev, qa);
	EXPECT_TRUE(!out || json_num(out, "tx_msgs") < 0) TH_LOG("%s", out);
	free(out);
}

/* ---- resource dumps ---- */

TEST_F(ops, resource_dumps_show_engine_state)
{
	const char *dev = srnic_test_dev();
	uint32_t qa = self->a.qp->qp_num;
	char *out;

	sends(_metadata, &self->a, &self->b, 4, 64);
	out = run_out("rdma -j -dd resource show qp link %s/1 lqpn %u", dev, qa);
	ASSERT_NE(NULL, out);
	EXPECT_EQ(4, json_num(out, "drv_sq_consumer")) TH_LOG("%s", out);
	EXPECT_EQ(4, json_num(out, "drv_sq_producer")) TH_LOG("%s", out);
	EXPECT_LE(6, json_num(out, "drv_sq_log_entries")) TH_LOG("%s", out);
	EXPECT_EQ(0, json_num(out, "drv_engine")) TH_LOG("%s", out);
	free(out);

	out = run_out("rdma -j -dd resource show cq dev %s", dev);
	ASSERT_NE(NULL, out);
	EXPECT_LE(0, json_num(out, "drv_cqn")) TH_LOG("%s", out);
	EXPECT_LE(0, json_num(out, "drv_log_entries")) TH_LOG("%s", out);
	free(out);

	out = run_out("rdma -j -dd resource show mr dev %s", dev);
	ASSERT_NE(NULL, out);
	EXPECT_LE(4096, json_num(out, "drv_page_size")) TH_LOG("%s", out);
	EXPECT_LE(1, json_num(out, "drv_blocks")) TH_LOG("%s", out);
	free(out);

	/* Raw: the QP context, struct srnic_res_qp_raw, as bytes. */
	out = run_out("rdma -j -r resource show qp link %s/1 lqpn %u", dev, qa);
	ASSERT_NE(NULL, out);
	EXPECT_NE(NULL, strstr(out, "\"data\"")) TH_LOG("%s", out);
	free(out);
}

/* ---- tracepoints ---- */

static const char *tracefs(void)
{
	if (!access("/sys/kernel/tracing/events", F_OK))
		return "/sys/kernel/tracing";
	if (!sh("mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null") &&
	    !access("/sys/kernel/tracing/events", F_OK))
		return "/sys/kernel/tracing";
	return NULL;
}

/* Lines of @text holding every one of the (up to three) strings. */
static int count_lines(const char *text, const char *a, const char *b,
		       const char *c)
{
	int n = 0;

	for (const char *l = text; l && *l;) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);
		char *line = strndup(l, len);

		if (strstr(line, a) && (!b || strstr(line, b)) &&
		    (!c || strstr(line, c)))
			n++;
		free(line);
		l = e ? e + 1 : NULL;
	}
	return n;
}

TEST_F(ops, tracepoints_record_the_datapath)
{
	const char *t = tracefs();
	char qa[32], qb[32], dq[32], path[256], *text;

	if (!t)
		SKIP(return, "no tracefs");
	snprintf(path, sizeof(path), "%s/events/srnic/enable", t);
	if (access(path, W_OK))
		SKIP(return, "no srnic events in %s", t);
	snprintf(qa, sizeof(qa), "qpn=%u ", self->a.qp->qp_num);
	snprintf(qb, sizeof(qb), "qpn=%u ", self->b.qp->qp_num);
	snprintf(dq, sizeof(dq), "dqpn=%u ", self->b.qp->qp_num);
	ASSERT_EQ(0, sh("echo > %s/trace && echo 1 > %s/events/srnic/enable", t, t));
	sends(_metadata, &self->a, &self->b, 6, 128);
	ASSERT_EQ(0, sh("echo 0 > %s/events/srnic/enable", t));
	snprintf(path, sizeof(path), "%s/trace", t);
	text = slurp(path);
	ASSERT_NE(NULL, text);
	EXPECT_EQ(6, count_lines(text, "srnic_wqe:", srnic_test_dev(), qa));
	EXPECT_EQ(6, count_lines(text, "srnic_msg:", qa, dq));
	EXPECT_EQ(6, count_lines(text, "srnic_msg:", dq, "resp=0"));
	/* Send and receive completions, each on its own QP's CQ. */
	EXPECT_EQ(6, count_lines(text, "srnic_cqe:", qa, "status=0"));
	EXPECT_EQ(6, count_lines(text, "srnic_cqe:", qb, "status=0"));
	free(text);
	/* Every event has its format, for perf and trace-cmd. */
	for (const char *ev = "doorbell wqe msg retry cqe odp_fault odp_invalidate "
			      "engine_sleep engine_wake"; *ev;) {
		char name[32];
		int len = strcspn(ev, " ");

		snprintf(name, sizeof(name), "%.*s", len, ev);
		EXPECT_EQ(0, sh("test -r %s/events/srnic/srnic_%s/format", t, name))
			TH_LOG("srnic_%s", name);
		ev += len + (ev[len] == ' ');
	}
}

/* ---- fault injection ---- */

TEST_F(ops, fault_knobs_refuse_bad_values)
{
	EXPECT_EQ(-EINVAL, knob_write("drop", "probability", 101));
	EXPECT_EQ(-EINVAL, knob_write("drop", "interval", 0));
	EXPECT_EQ(-EINVAL, knob_write("drop", "times", -2));
	EXPECT_EQ(-EINVAL, knob_write("rnr", "qpn", 1 << 24));
	EXPECT_NE(0, knob_write("rnr", "injected", 5));
	EXPECT_EQ(0, knob_read("drop", "probability"));
	EXPECT_EQ(-1, knob_read("drop", "times"));
}

TEST_F(ops, drop_once_is_retransmitted)
{
	long long re = hw_counter("retransmits");

	if (variant->type != IBV_QPT_RC)
		SKIP(return, "RC: a lost UD message is just lost");
	ASSERT_EQ(0, arm("drop", self->a.qp->qp_num, 1, 100));
	sends(_metadata, &self->a, &self->b, 3, 512);
	EXPECT_EQ(1, knob_read("drop", "injected"));
	EXPECT_EQ(re + 1, counter_reaches("retransmits", re + 1));
}

TEST_F(ops, drop_always_exceeds_retries)
{
	long long ex = hw_counter("retry_exceeded");
	struct ibv_wc wc;

	if (variant->type != IBV_QPT_RC)
		SKIP(return, "RC only");
	ASSERT_EQ(0, arm("drop", self->a.qp->qp_num, -1, 100));
	ASSERT_EQ(0, post_recv(&self->b, 1, 0, 64));
	ASSERT_EQ(0, post_send1(&self->a, IBV_WR_SEND, 7, 0, 64,
				IBV_SEND_SIGNALED, NULL, 0, 0));
	WAIT_WC(self->a.cq, wc);
	ASSERT_WC(wc, IBV_WC_RETRY_EXC_ERR, 0);
	/* retry_cnt 7: the first try and seven more. */
	EXPECT_EQ(8, knob_read("drop", "injected"));
	EXPECT_EQ(ex + 1, counter_reaches("retry_exceeded", ex + 1));
	EXPECT_EQ(IBV_QPS_RTS, qp_state(self->b.qp));
}

/*
 * A message in pieces (2 MiB: 32 of 64 KiB) on a lossy path: each lost
 * piece is sent again, and an acknowledged piece gives the next one the
 * whole retry_cnt (7) again, as an ACK does on a wire.  Every second
 * request is lost (interval 2): about one drop per piece, never two in a
 * row, and far more than one budget's worth, so a budget spent per message
 * fails this with RETRY_EXC_ERR.
 */
TEST_F(ops, lost_pieces_each_get_the_retries)
{
	const uint32_t len = 2 * MiB - 4096;
	struct ibv_wc wc;

	if (variant->type != IBV_QPT_RC)
		SKIP(return, "RC: UD messages are not sent in pieces");
	fill(self->a.buf, len, 71);
	memset(self->b.buf, 0, BUF_LEN);
	ASSERT_EQ(0, knob_write("drop", "interval", 2));
	ASSERT_EQ(0, arm("drop", self->a.qp->qp_num, -1, 100));
	ASSERT_EQ(0, post_send1(&self->a, IBV_WR_RDMA_WRITE, 1, 0, len,
				IBV_SEND_SIGNALED, &self->b, 4096, 0));
	WAIT_WC(self->a.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	EXPECT_EQ(-1, verify(self->b.buf + 4096, len, 71));
	EXPECT_LT(16, knob_read("drop", "injected"));
}

TEST_F(ops, lost_ud_messages_follow_the_seed)
{
	enum { N = 48 };
	uint64_t got[2] = {};
	struct ibv_wc wc;

	if (variant->type != IBV_QPT_UD)
		SKIP(return, "UD: losses show at the receiver");
	ASSERT_EQ(0, knob_write("drop", "qpn", self->a.qp->qp_num));
	for (int run = 0; run < 2; run++) {
		long long lost;
		int seen = 0;

		ASSERT_EQ(0, knob_write("", "seed", 0x5eed));
		ASSERT_EQ(0, knob_write("drop", "probability", 50));
		for (int i = 0; i < N; i++)
			ASSERT_EQ(0, post_recv(&self->b, i, 0, 64 + 40));
		for (int i = 0; i < N; i++) {
			ASSERT_EQ(0, post_send1(&self->a, IBV_WR_SEND_WITH_IMM,
						i, 0, 64, IBV_SEND_SIGNALED,
						NULL, 0, i));
			WAIT_WC(self->a.cq, wc);
			ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
		}
		ASSERT_EQ(0, knob_write("drop", "probability", 0));
		lost = knob_read("drop", "injected");
		EXPECT_LT(0, lost);
		EXPECT_GT(N, lost);
		/* Nothing more is sent: the count received is exact. */
		while (seen < N - lost) {
			WAIT_WC(self->b.cq, wc);
			ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
			got[run] |= 1ull << ntohl(wc.imm_data);
			seen++;
		}
		/* Flush the receives left, for the second run. */
		ASSERT_EQ(0, to_err(self->b.qp));
		while (poll_one(self->b.cq, &wc, 500) == 1)
			EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);
		ep_destroy(&self->b);
		{
			struct qp_opts o = qp_defaults(&self->e, IBV_QPT_UD);

			ASSERT_EQ(0, ep_create(&self->e, &o, &self->b));
			ASSERT_EQ(0, ep_connect(&self->b, self->a.qp->qp_num));
			self->a.peer_qpn = self->b.qp->qp_num;
		}
	}
	EXPECT_EQ(got[0], got[1]) TH_LOG("0x%llx vs 0x%llx",
		(unsigned long long)got[0], (unsigned long long)got[1]);
}

/*
 * One SEND_WITH_IMM of @len bytes from @a to @b, a receive posted for it;
 * waits for the sender's completion only.
 */
static void send_imm(struct __test_metadata *_metadata, struct ep *a,
		     struct ep *b, uint32_t imm, uint32_t len)
{
	uint32_t grh = a->o.type == IBV_QPT_UD ? 40 : 0;
	struct ibv_wc wc;

	ASSERT_EQ(0, post_recv(b, imm, 0, len + grh));
	ASSERT_EQ(0, post_send1(a, IBV_WR_SEND_WITH_IMM, imm, 0, len,
				IBV_SEND_SIGNALED, NULL, 0, imm));
	WAIT_WC(a->cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
}

/*
 * The immediates @b received, in order, up to and including the sentinel
 * 0xffff (sent last, with no fault armed): what arrived before it is all
 * that arrived.
 */
static int recv_imms(struct __test_metadata *_metadata, struct ep *a,
		     struct ep *b, uint32_t *imm, int max)
{
	struct ibv_wc wc;
	int n = 0;

	faults_off();
	send_imm(_metadata, a, b, 0xffff, 8);
	do {
		if (poll_one(b->cq, &wc, WC_MS) != 1 ||
		    wc.status != IBV_WC_SUCCESS || n == max)
			return -1;
		imm[n++] = ntohl(wc.imm_data);
	} while (imm[n - 1] != 0xffff);
	return n;
}

TEST_F(ops, delay_holds_one_request_without_a_retry)
{
	long long re = hw_counter("retransmits");
	uint64_t start, took;
	uint32_t imm[8];

	EXPECT_EQ(-EINVAL, knob_write("", "delay_us", 1000001));
	ASSERT_EQ(0, knob_write("", "delay_us", 300000));
	ASSERT_EQ(0, arm("delay", self->a.qp->qp_num, 1, 100));
	start = now_ms();
	send_imm(_metadata, &self->a, &self->b, 1, 64);
	took = now_ms() - start;
	/* Not before the delay; no upper bound, the machine may be slow. */
	EXPECT_LE(300, took);
	EXPECT_EQ(1, knob_read("delay", "injected"));
	send_imm(_metadata, &self->a, &self->b, 2, 64);
	ASSERT_EQ(3, recv_imms(_metadata, &self->a, &self->b, imm, 8));
	EXPECT_EQ(1, imm[0]);
	EXPECT_EQ(2, imm[1]);
	EXPECT_EQ(re, hw_counter("retransmits"));
}

TEST_F(ops, duplicate_is_executed_once_or_received_twice)
{
	long long dup = hw_counter("duplicate_request");
	uint32_t imm[8];
	int n;

	ASSERT_EQ(0, arm("duplicate", self->a.qp->qp_num, 2, 100));
	/* UD's copies need receive WQEs of their own, there when they arrive. */
	if (variant->type == IBV_QPT_UD) {
		ASSERT_EQ(0, post_recv(&self->b, 90, 0, 64 + 40));
		ASSERT_EQ(0, post_recv(&self->b, 91, 0, 64 + 40));
	}
	send_imm(_metadata, &self->a, &self->b, 1, 64);
	send_imm(_metadata, &self->a, &self->b, 2, 64);
	EXPECT_EQ(2, knob_read("duplicate", "injected"));
	n = recv_imms(_metadata, &self->a, &self->b, imm, 8);
	if (variant->type == IBV_QPT_RC) {
		/* The responder knows a copy by its PSN: acknowledged, not executed. */
		ASSERT_EQ(3, n);
		EXPECT_EQ(1, imm[0]);
		EXPECT_EQ(2, imm[1]);
		EXPECT_EQ(dup + 2, counter_reaches("duplicate_request", dup + 2));
	} else {
		/* UD has no PSN: each copy is one more message. */
		ASSERT_EQ(5, n);
		EXPECT_EQ(1, imm[0]);
		EXPECT_EQ(1, imm[1]);
		EXPECT_EQ(2, imm[2]);
		EXPECT_EQ(2, imm[3]);
	}
}

TEST_F(ops, duplicate_atomic_adds_once)
{
	volatile uint64_t *target = (uint64_t *)(self->b.buf + 4096);

	if (variant->type != IBV_QPT_RC)
		SKIP(return, "atomics are RC's");
	*target = 1000;
	ASSERT_EQ(0, arm("duplicate", self->a.qp->qp_num, -1, 100));
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(IBV_WC_SUCCESS,
			  rdma_op(&self->a, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 8,
				  (uintptr_t)target, self->b.mr->rkey, 5));
	EXPECT_EQ(4, knob_read("duplicate", "injected"));
	EXPECT_EQ(1020, *target);
	/* The last fetch returned the value before its (single) add. */
	EXPECT_EQ(1015, *(uint64_t *)self->a.buf);
}

TEST_F(ops, corrupt_is_caught_by_the_icrc_check)
{
	long long icrc = hw_counter("rx_icrc_errors");
	long long re = hw_counter("retransmits");
	uint32_t imm[8];
	int n;

	ASSERT_EQ(0, arm("corrupt", self->a.qp->qp_num, 1, 100));
	send_imm(_metadata, &self->a, &self->b, 1, 64);
	EXPECT_EQ(1, knob_read("corrupt", "injected"));
	EXPECT_EQ(icrc + 1, counter_reaches("rx_icrc_errors", icrc + 1));
	n = recv_imms(_metadata, &self->a, &self->b, imm, 8);
	if (variant->type == IBV_QPT_RC) {
		/* Dropped, then retransmitted after the timeout: delivered once. */
		ASSERT_EQ(2, n);
		EXPECT_EQ(1, imm[0]);
		EXPECT_EQ(re + 1, counter_reaches("retransmits", re + 1));
	} else {
		/* UD: lost; its receive WQE takes the sentinel. */
		ASSERT_EQ(1, n);
	}
}

TEST_F(ops, rnr_once_is_retried)
{
	long long sent = hw_counter("rnr_naks_sent");
	long long retries = hw_counter("rnr_retries");

	if (variant->type != IBV_QPT_RC)
		SKIP(return, "RC only");
	ASSERT_EQ(0, arm("rnr", self->b.qp->qp_num, 1, 100));
	sends(_metadata, &self->a, &self->b, 2, 64);
	EXPECT_EQ(sent + 1, counter_reaches("rnr_naks_sent", sent + 1));
	EXPECT_EQ(retries + 1, counter_reaches("rnr_retries", retries + 1));
}

TEST_F(ops, rnr_without_retries_fails_the_send)
{
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);
	struct ep c, d;
	struct ibv_wc wc;

	if (variant->type != IBV_QPT_RC)
		SKIP(return, "RC only");
	o.rnr_retry = 0;
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &c, &d));
	ASSERT_EQ(0, arm("rnr", d.qp->qp_num, -1, 100));
	ASSERT_EQ(0, post_recv(&d, 1, 0, 64));	/* posted, yet RNR */
	ASSERT_EQ(0, post_send1(&c, IBV_WR_SEND, 9, 0, 64,
				IBV_SEND_SIGNALED, NULL, 0, 0));
	WAIT_WC(c.cq, wc);
	EXPECT_EQ(IBV_WC_RNR_RETRY_EXC_ERR, wc.status) TH_LOG("%s", ibv_wc_status_str(wc.status));
	EXPECT_EQ(IBV_QPS_RTS, qp_state(d.qp));
	EXPECT_EQ(1, knob_read("rnr", "injected"));
	ep_destroy(&c);
	ep_destroy(&d);
}

/*
 * One 4 KiB send from fresh ODP memory (its first touch is a page fault),
 * @kind armed for @times faults: the send's completion status.
 */
static int odp_send_with(struct __test_metadata *_metadata,
			 FIXTURE_DATA(ops) *self,
			 const FIXTURE_VARIANT(ops) *variant,
			 const char *kind, int times)
{
	struct ibv_send_wr wr = { .wr_id = 5, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_sge s;
	struct ibv_mr *mr;
	struct ibv_wc wc = { .status = IBV_WC_GENERAL_ERR };
	uint8_t *p;

	p = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	mr = ibv_reg_mr(self->e.pd, p, 1 << 16, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_ON_DEMAND);
	EXPECT_NE(NULL, mr);
	if (!mr)
		goto out;
	EXPECT_EQ(0, knob_write(kind, "times", times));
	EXPECT_EQ(0, knob_write(kind, "probability", 100));
	EXPECT_EQ(0, post_recv(&self->b, 1, 0, 4096));
	s = (struct ibv_sge){ (uintptr_t)p, 4096, mr->lkey };
	wr.sg_list = &s;
	if (variant->type == IBV_QPT_UD) {
		wr.wr.ud.ah = self->a.ah;
		wr.wr.ud.remote_qpn = self->a.peer_qpn;
		wr.wr.ud.remote_qkey = QKEY;
	}
	EXPECT_EQ(0, ibv_post_send(self->a.qp, &wr, &bad));
	EXPECT_EQ(1, poll_one(self->a.cq, &wc, WC_MS));
	ibv_dereg_mr(mr);
out:
	munmap(p, 1 << 16);
	return wc.status;
}

TEST_F(ops, odp_fault_failure_is_a_protection_error)
{
	int st = odp_send_with(_metadata, self, variant, "odp", 1);

	EXPECT_EQ(IBV_WC_LOC_PROT_ERR, st) TH_LOG("%s", ibv_wc_status_str(st));
	EXPECT_EQ(1, knob_read("odp", "injected"));
}

/*
 * A fault whose range kept changing for the core's whole second (-EBUSY)
 * goes again: the send completes.  (Seen as an error completion under
 * adversarial_test's odp_churn on a busy host.)
 */
TEST_F(ops, odp_fault_busy_goes_again)
{
	int st = odp_send_with(_metadata, self, variant, "odp_busy", 3);

	EXPECT_EQ(IBV_WC_SUCCESS, st) TH_LOG("%s", ibv_wc_status_str(st));
	EXPECT_EQ(3, knob_read("odp_busy", "injected"));
}

/* ... but not for ever: a range that never settles fails the WQE. */
TEST_F(ops, odp_fault_busy_for_ever_is_a_protection_error)
{
	int st = odp_send_with(_metadata, self, variant, "odp_busy", -1);

	EXPECT_EQ(IBV_WC_LOC_PROT_ERR, st) TH_LOG("%s", ibv_wc_status_str(st));
	/* SRNIC_ODP_BUSY_TRIES tries, each found busy. */
	EXPECT_EQ(8, knob_read("odp_busy", "injected"));
}

TEST_F(ops, cq_overrun_raises_cq_error)
{
	long long ov = hw_counter("cq_overruns");
	struct ibv_wc wc;

	ASSERT_EQ(0, arm("cq_overrun", self->a.qp->qp_num, 1, 100));
	ASSERT_EQ(0, post_recv(&self->b, 1, 0, 64));
	ASSERT_EQ(0, post_send1(&self->a, IBV_WR_SEND, 3, 0, 64,
				IBV_SEND_SIGNALED, NULL, 0, 0));
	EXPECT_TRUE(wait_async_event(self->e.ctx, IBV_EVENT_CQ_ERR, WC_MS));
	EXPECT_TRUE(wait_state(self->a.qp, IBV_QPS_ERR, WC_MS));
	EXPECT_EQ(0, ibv_poll_cq(self->a.cq, 1, &wc));
	EXPECT_EQ(ov + 1, counter_reaches("cq_overruns", ov + 1));
}

TEST_F(ops, failed_allocations_leave_nothing)
{
	long long pinned = pinned_pages();
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_srq *srq;

	ASSERT_EQ(0, knob_write("alloc", "probability", 100));
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_cq(self->e.ctx, 16, NULL, NULL, 0));
	EXPECT_EQ(ENOMEM, errno);
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_mr(self->e.pd, self->a.buf, 4096,
				   IBV_ACCESS_LOCAL_WRITE));
	EXPECT_EQ(ENOMEM, errno);
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_srq(self->e.pd, &sa));
	EXPECT_EQ(ENOMEM, errno);
	EXPECT_EQ(pinned, pinned_pages());
	EXPECT_EQ(3, knob_read("alloc", "injected"));
	/* And creation works again once the knob is off. */
	ASSERT_EQ(0, knob_write("alloc", "probability", 0));
	cq = ibv_create_cq(self->e.ctx, 16, NULL, NULL, 0);
	mr = ibv_reg_mr(self->e.pd, self->a.buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	srq = ibv_create_srq(self->e.pd, &sa);
	EXPECT_NE(NULL, cq);
	EXPECT_NE(NULL, mr);
	EXPECT_NE(NULL, srq);
	if (srq)
		ibv_destroy_srq(srq);
	if (mr)
		ibv_dereg_mr(mr);
	if (cq)
		ibv_destroy_cq(cq);
}

/* ---- what query_device reports is what the device does ---- */

FIXTURE(caps) {
	struct env e;
	struct ibv_device_attr_ex ax;
};

FIXTURE_SETUP(caps)
{
	ASSERT_EQ(0, env_open(&self->e));
	ASSERT_EQ(0, ibv_query_device_ex(self->e.ctx, NULL, &self->ax));
}

FIXTURE_TEARDOWN(caps)
{
	env_close(&self->e);
}

TEST_F(caps, identity)
{
	struct ibv_device_attr *a = &self->ax.orig_attr;

	/* docs/design.md: a soft RoCE device's vendor id, srnic's part id. */
	EXPECT_EQ(0xffffff, a->vendor_id);
	EXPECT_EQ(0x5352, a->vendor_part_id);
	EXPECT_NE(0, a->sys_image_guid);
	EXPECT_EQ(a->sys_image_guid, a->node_guid);
	EXPECT_TRUE(a->device_cap_flags & IBV_DEVICE_SYS_IMAGE_GUID);
	EXPECT_LT(0, a->local_ca_ack_delay);
	EXPECT_GT(32, a->local_ca_ack_delay);
}

/* page_size_cap: 4K, 2M and 1G blocks; a 2M-backed MR uses 2M blocks. */
TEST_F(caps, page_sizes)
{
	const size_t len = 4 << 20;
	char *thp = slurp("/sys/kernel/mm/transparent_hugepage/enabled");
	uint8_t *raw, *p;
	struct ibv_mr *mr;
	char *out;

	EXPECT_EQ(4096 | (2 << 20) | (1 << 30),
		  self->ax.orig_attr.page_size_cap & (4096 | (2 << 20) | (1 << 30)));
	if (!thp || strstr(thp, "[never]")) {
		free(thp);
		SKIP(return, "no transparent huge pages");
	}
	free(thp);
	raw = mmap(NULL, len * 2, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, raw);
	p = (uint8_t *)(((uintptr_t)raw + (2 << 20) - 1) & ~(uintptr_t)((2 << 20) - 1));
	ASSERT_EQ(0, madvise(p, len, MADV_HUGEPAGE));
	memset(p, 1, len);
	mr = ibv_reg_mr(self->e.pd, p, len, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr);
	out = run_out("rdma -j -dd resource show mr dev %s mrlen %zu",
		      srnic_test_dev(), len);
	ASSERT_NE(NULL, out);
	/* Huge pages are the kernel's to give: without one, 4K blocks. */
	if (json_num(out, "drv_page_size") != 2 << 20 &&
	    !sh("grep -q 'AnonHugePages: *0 kB' /proc/%d/smaps_rollup", getpid())) {
		TH_LOG("no huge page backs the buffer: %s", out);
	} else {
		EXPECT_EQ(2 << 20, json_num(out, "drv_page_size")) TH_LOG("%s", out);
	}
	free(out);
	ibv_dereg_mr(mr);
	munmap(raw, len * 2);
}

TEST_F(caps, rnr_nak_generation)
{
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);
	struct ep a, b;
	struct ibv_wc wc;

	ASSERT_TRUE(self->ax.orig_attr.device_cap_flags & IBV_DEVICE_RC_RNR_NAK_GEN);
	o.rnr_retry = 0;
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &a, &b));
	/* No receive posted: the responder answers RNR. */
	ASSERT_EQ(0, post_send1(&a, IBV_WR_SEND, 1, 0, 8, IBV_SEND_SIGNALED,
				NULL, 0, 0));
	ASSERT_EQ(1, poll_one(a.cq, &wc, WC_MS));
	EXPECT_EQ(IBV_WC_RNR_RETRY_EXC_ERR, wc.status);
	ep_destroy(&a);
	ep_destroy(&b);
}

TEST_F(caps, port_events_and_link_downed)
{
	long long downed = hw_counter("link_downed");

	ASSERT_TRUE(self->ax.orig_attr.device_cap_flags & IBV_DEVICE_PORT_ACTIVE_EVENT);
	ASSERT_EQ(0, sh("ip link set %s down", test_netdev()));
	EXPECT_TRUE(wait_async_event(self->e.ctx, IBV_EVENT_PORT_ERR, 5000));
	ASSERT_EQ(0, sh("ip link set %s up", test_netdev()));
	EXPECT_TRUE(wait_async_event(self->e.ctx, IBV_EVENT_PORT_ACTIVE, 5000));
	EXPECT_EQ(downed + 1, counter_reaches("link_downed", downed + 1));
}

TEST_F(caps, comp_vectors)
{
	int n = self->e.ctx->num_comp_vectors;
	struct ibv_cq *cq;

	ASSERT_LT(0, n);
	cq = ibv_create_cq(self->e.ctx, 4, NULL, NULL, n - 1);
	EXPECT_NE(NULL, cq);
	if (cq)
		ibv_destroy_cq(cq);
	EXPECT_EQ(NULL, ibv_create_cq(self->e.ctx, 4, NULL, NULL, n));
}

/* Each queue limit holds exactly: the maximum works, one more does not. */
TEST_F(caps, queue_limits)
{
	struct ibv_device_attr *a = &self->ax.orig_attr;
	struct ibv_cq *cq = ibv_create_cq(self->e.ctx, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = a->max_sge, .max_recv_sge = a->max_sge },
	};
	struct ibv_srq_init_attr sa = {
		.attr = { .max_wr = a->max_srq_wr, .max_sge = a->max_srq_sge },
	};
	struct ibv_qp *qp;
	struct ibv_srq *srq;

	ASSERT_NE(NULL, cq);
	qp = ibv_create_qp(self->e.pd, &qa);
	EXPECT_NE(NULL, qp);
	if (qp)
		ibv_destroy_qp(qp);
	qa.cap.max_send_sge = a->max_sge + 1;
	EXPECT_EQ(NULL, ibv_create_qp(self->e.pd, &qa));
	qa.cap.max_send_sge = 1;
	qa.cap.max_send_wr = a->max_qp_wr + 1;
	EXPECT_EQ(NULL, ibv_create_qp(self->e.pd, &qa));
	srq = ibv_create_srq(self->e.pd, &sa);
	EXPECT_NE(NULL, srq);
	if (srq)
		ibv_destroy_srq(srq);
	sa.attr.max_wr = a->max_srq_wr + 1;
	EXPECT_EQ(NULL, ibv_create_srq(self->e.pd, &sa));
	sa.attr.max_wr = 4;
	sa.attr.max_sge = a->max_srq_sge + 1;
	EXPECT_EQ(NULL, ibv_create_srq(self->e.pd, &sa));
	EXPECT_EQ(NULL, ibv_create_cq(self->e.ctx, a->max_cqe + 1, NULL, NULL, 0));
	ibv_destroy_cq(cq);
}

/* Raw packet QPs and RSS: what rss_caps says, a QP of exactly that. */
TEST_F(caps, raw_packet_and_rss)
{
	struct ibv_device_attr_ex *ax = &self->ax;
	struct ibv_cq *cq = ibv_create_cq(self->e.ctx, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RAW_PACKET,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_wq_init_attr wa = {
		.wq_type = IBV_WQT_RQ, .max_wr = 4, .max_sge = 1,
		.pd = self->e.pd, .cq = cq,
	};
	static uint8_t key[40] = { 1, 2, 3 };
	struct ibv_rwq_ind_table_init_attr ta = { .log_ind_tbl_size = 0 };
	struct ibv_qp_init_attr_ex ia = {
		.qp_type = IBV_QPT_RAW_PACKET,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE |
			     IBV_QP_INIT_ATTR_RX_HASH,
		.pd = self->e.pd,
		.rx_hash_conf = { .rx_hash_key_len = 40, .rx_hash_key = key },
	};
	struct ibv_rwq_ind_table *tbl;
	struct ibv_qp *qp;
	struct ibv_wq *wq;

	ASSERT_NE(NULL, cq);
	EXPECT_LT(0, ax->orig_attr.max_raw_ethy_qp);
	qp = ibv_create_qp(self->e.pd, &qa);
	EXPECT_NE(NULL, qp) TH_LOG("raw packet QP: %s", strerror(errno));
	if (qp)
		ibv_destroy_qp(qp);

	EXPECT_TRUE(ax->rss_caps.supported_qpts & (1 << IBV_QPT_RAW_PACKET));
	EXPECT_EQ(IBV_RX_HASH_FUNC_TOEPLITZ, ax->rss_caps.rx_hash_function);
	ASSERT_NE(0, ax->rss_caps.rx_hash_fields_mask);
	EXPECT_LE(1, ax->rss_caps.max_rwq_indirection_table_size);
	wq = ibv_create_wq(self->e.ctx, &wa);
	ASSERT_NE(NULL, wq);
	ta.ind_tbl = &wq;
	tbl = ibv_create_rwq_ind_table(self->e.ctx, &ta);
	ASSERT_NE(NULL, tbl);
	ia.rwq_ind_tbl = tbl;
	ia.rx_hash_conf.rx_hash_function = ax->rss_caps.rx_hash_function;
	ia.rx_hash_conf.rx_hash_fields_mask = ax->rss_caps.rx_hash_fields_mask;
	qp = ibv_create_qp_ex(self->e.ctx, &ia);
	EXPECT_NE(NULL, qp) TH_LOG("every reported field: %s", strerror(errno));
	if (qp)
		ibv_destroy_qp(qp);
	/* A field it does not report (the inner headers') is refused. */
	ia.rx_hash_conf.rx_hash_fields_mask |= IBV_RX_HASH_INNER;
	EXPECT_EQ(NULL, ibv_create_qp_ex(self->e.ctx, &ia));
	ibv_destroy_rwq_ind_table(tbl);
	ibv_destroy_wq(wq);
	ibv_destroy_cq(cq);
}

/* No multicast yet: the limits say so, and attaching fails. */
TEST_F(caps, multicast_limits)
{
	struct ibv_device_attr *a = &self->ax.orig_attr;
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_UD);
	union ibv_gid mgid = { .raw = { 0xff, 0x0e } };
	struct ep x;

	ASSERT_EQ(0, ep_create(&self->e, &o, &x));
	EXPECT_EQ(a->max_mcast_grp == 0, ibv_attach_mcast(x.qp, &mgid, 0) != 0);
	ep_destroy(&x);
}

TEST_HARNESS_MAIN
