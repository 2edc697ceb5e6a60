// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Fair scheduling: one QP's large messages must not hold another QP's
 * small ones for long.  The engine sends a message in pieces (at most
 * SRNIC_PIECE bytes each) and turns to other QPs between them, as a NIC
 * interleaves the packets of its QPs.  Also: pieces carry the data whole,
 * and a WQE rewritten while its pieces go fails rather than mixing two
 * messages.
 */
#include <signal.h>
#include <sys/prctl.h>

#include "kselftest_harness.h"
#include "traffic.h"
#include "raw_qp.h"

#define ATTACK_SGE 32
#define ATTACK_SGE_LEN (4u * MiB)
#define ATTACK_MSG ((uint64_t)ATTACK_SGE * ATTACK_SGE_LEN)	/* 128 MiB */

/* What the attacker reports when told to stop. */
struct attack_report {
	uint64_t messages;	/* completed, data checked */
	uint64_t errors;	/* a bad status, length or payload */
	char why[96];
};

static void attack_post(struct ep *a, struct ep *b, uint64_t id, int *err)
{
	struct ibv_sge ss[ATTACK_SGE], rs[ATTACK_SGE];
	struct ibv_send_wr wr = {}, *bad;
	struct ibv_recv_wr rw = {}, *rbad;

	/*
	 * 32 SGEs over the same 4 MiB: 128 MiB per message from 8 MiB of
	 * locked memory, as an unprivileged user could.
	 */
	for (int i = 0; i < ATTACK_SGE; i++) {
		ss[i] = (struct ibv_sge){ (uintptr_t)a->buf, ATTACK_SGE_LEN, a->mr->lkey };
		rs[i] = (struct ibv_sge){ (uintptr_t)b->buf, ATTACK_SGE_LEN, b->mr->lkey };
	}
	rw = (struct ibv_recv_wr){ .wr_id = id, .sg_list = rs, .num_sge = ATTACK_SGE };
	wr = (struct ibv_send_wr){ .wr_id = id, .sg_list = ss, .num_sge = ATTACK_SGE,
				   .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	*err = ibv_post_recv(b->qp, &rw, &rbad) || ibv_post_send(a->qp, &wr, &bad);
}

/* One completion from @cq checked, or a reason in @r. */
static int attack_reap(struct ibv_cq *cq, int recv, struct attack_report *r)
{
	struct ibv_wc wc;
	int n = ibv_poll_cq(cq, 1, &wc);

	if (n <= 0)
		return n;
	if (wc.status != IBV_WC_SUCCESS ||
	    (recv && wc.byte_len != ATTACK_MSG)) {
		r->errors++;
		snprintf(r->why, sizeof(r->why), "%s completion: %s, %u bytes",
			 recv ? "receive" : "send", ibv_wc_status_str(wc.status),
			 wc.byte_len);
	}
	return 1;
}

/*
 * The attacker: SENDs of 128 MiB, two in flight, until @stop_fd is
 * readable; then the report goes to @report_fd.
 */
static void attacker(int ready_fd, int stop_fd, int report_fd)
{
	struct attack_report r = {};
	struct env e;
	struct qp_opts o;
	struct ep a, b;
	struct pollfd pfd = { .fd = stop_fd, .events = POLLIN };
	int inflight = 0, err = 0, sends = 0, recvs = 0;
	uint64_t id = 0, end;

	if (env_open(&e)) {
		snprintf(r.why, sizeof(r.why), "env_open failed");
		goto out;
	}
	o = qp_defaults(&e, IBV_QPT_RC);
	o.send_sge = o.recv_sge = ATTACK_SGE;
	o.send_wr = o.recv_wr = 4;
	o.inline_data = 0;
	o.buf_len = ATTACK_SGE_LEN;
	if (pair_make(&e, &o, &o, &a, &b)) {
		snprintf(r.why, sizeof(r.why), "pair_make failed");
		goto out;
	}
	fill(a.buf, ATTACK_SGE_LEN, 91);
	for (; inflight < 2 && !err; inflight++)
		attack_post(&a, &b, id++, &err);
	if (write(ready_fd, "r", 1) != 1 || err)
		goto out;
	/*
	 * Its completions are looked for every millisecond: what is measured
	 * is the engine's sharing between QPs, not the CPU's between a
	 * spinning process and the victim (the scheduler's business).
	 */
	while (poll(&pfd, 1, 1) == 0 && !err) {
		sends += attack_reap(a.cq, 0, &r);
		recvs += attack_reap(b.cq, 1, &r);
		/* A message is done when both of its completions are. */
		while (sends && recvs) {
			sends--, recvs--, inflight--;
			r.messages++;
			attack_post(&a, &b, id++, &err);
			inflight++;
		}
	}
	/* The last messages finish before the data is checked. */
	end = now_ms() + scaled_ms(60000);
	while ((sends < inflight || recvs < inflight) && now_ms() < end) {
		sends += attack_reap(a.cq, 0, &r);
		recvs += attack_reap(b.cq, 1, &r);
		usleep(1000);
	}
	if (sends < inflight || recvs < inflight) {
		r.errors++;
		snprintf(r.why, sizeof(r.why), "%d messages never completed", inflight);
	} else if (verify(b.buf, ATTACK_SGE_LEN, 91) != -1) {
		r.errors++;
		snprintf(r.why, sizeof(r.why), "received data differs at %ld",
			 verify(b.buf, ATTACK_SGE_LEN, 91));
	}
	ep_destroy(&a);
	ep_destroy(&b);
out:
	if (err) {
		r.errors++;
		snprintf(r.why, sizeof(r.why), "post failed");
	}
	if (write(report_fd, &r, sizeof(r)) != sizeof(r))
		_exit(2);
	_exit(0);
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000ull + ts.tv_nsec / 1000;
}

/*
 * A victim's 8-byte RDMA WRITEs, each waited for, on the same device as
 * another process's 128 MiB SENDs.  Before messages went in pieces the
 * victim waited for each of those whole: 2.5 s per WRITE, or none done in
 * 30 s.  Fair, its p99 is a few milliseconds (an engine visit of the
 * attacker's QP, and the scheduler's ticks); the bound, 50 ms, leaves room
 * for a loaded host (TCG vCPUs wait for host CPUs) and is still fifty
 * times below starvation.  The figures are logged.
 */
#define VICTIM_OPS 400
FIXTURE(fair) {};
FIXTURE_SETUP(fair) {}
FIXTURE_TEARDOWN(fair) {}

TEST_F_TIMEOUT(fair, victim_beside_large_sends, 300)
{
	int ready[2], stop[2], report[2];
	static uint64_t lat[VICTIM_OPS];
	struct attack_report r = {};
	struct env e;
	struct ep a, b;
	struct qp_opts o;
	uint64_t end, p50, p90, p99, slow = 0;
	int n = 0, status;
	char c;
	pid_t pid;

	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(stop));
	ASSERT_EQ(0, pipe(report));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* Gone with the test, whatever becomes of it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		attacker(ready[1], stop[0], report[1]);
	}
	ASSERT_EQ(1, read(ready[0], &c, 1)) TH_LOG("the attacker did not start");

	ASSERT_EQ(0, env_open(&e));
	o = qp_defaults(&e, IBV_QPT_RC);
	o.buf_len = 64 * KiB;
	ASSERT_EQ(0, pair_make(&e, &o, &o, &a, &b));
	end = now_ms() + scaled_ms(30000);
	while (n < VICTIM_OPS && now_ms() < end) {
		struct ibv_wc wc;
		uint64_t t0 = now_us();

		ASSERT_EQ(0, post_send1(&a, IBV_WR_RDMA_WRITE, n, 0, 8,
					IBV_SEND_SIGNALED, &b, 0, 0));
		ASSERT_EQ(1, poll_one(a.cq, &wc, (int)(end - now_ms() + 1000)));
		ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
		lat[n++] = now_us() - t0;
	}

	ASSERT_EQ(1, write(stop[1], "s", 1));
	ASSERT_EQ((ssize_t)sizeof(r), read(report[0], &r, sizeof(r)));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ep_destroy(&a);
	ep_destroy(&b);
	env_close(&e);

	qsort(lat, n, sizeof(lat[0]), cmp_u64);
	p50 = n ? lat[n / 2] : 0;
	p90 = n ? lat[n * 9 / 10] : 0;
	p99 = n ? lat[n * 99 / 100] : 0;
	for (int i = 0; i < n; i++)
		slow += lat[i] >= 10000;
	TH_LOG("victim: %d WRITEs, p50 %llu us, p90 %llu us, p99 %llu us, max %llu us, %llu of 10 ms or more; attacker: %llu messages of 128 MiB",
	       n, (unsigned long long)p50, (unsigned long long)p90,
	       (unsigned long long)p99, (unsigned long long)(n ? lat[n - 1] : 0),
	       (unsigned long long)slow, (unsigned long long)r.messages);
	EXPECT_EQ(0, r.errors) TH_LOG("attacker: %s", r.why);
	/* The attacker was at work all along: its messages completed. */
	EXPECT_LE(1, r.messages);
	EXPECT_EQ(VICTIM_OPS, n);
	EXPECT_GT(scaled_ms(50) * 1000, p99);
}

/* ---- pieces carry the data whole ---- */

FIXTURE(pieces) {
	struct env e;
	struct ep a, b;
};

FIXTURE_VARIANT(pieces) {
	enum ibv_qp_type type;
};

FIXTURE_VARIANT_ADD(pieces, rc) { .type = IBV_QPT_RC };
FIXTURE_VARIANT_ADD(pieces, uc) { .type = IBV_QPT_UC };

FIXTURE_SETUP(pieces)
{
	struct qp_opts o;

	ASSERT_EQ(0, env_open(&self->e));
	o = qp_defaults(&self->e, variant->type);
	o.send_sge = o.recv_sge = 8;
	o.buf_len = 8 * MiB;
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &self->a, &self->b));
}

FIXTURE_TEARDOWN(pieces)
{
	ep_destroy(&self->a);
	ep_destroy(&self->b);
	env_close(&self->e);
}

/*
 * A SEND of 3 MiB + 7 gathered from 5 odd-sized pieces of memory and
 * scattered into 7 others: piece boundaries fall inside SGEs on both
 * sides.
 */
TEST_F(pieces, send_scattered)
{
	static const uint32_t gl[] = { 100003, 1048576, 65535, 1500000, 531638 };
	static const uint32_t sl[] = { 1, 65537, 999999, 7, 1200000, 811111, 169097 };
	struct ibv_sge gs[5], ss[7];
	struct ibv_send_wr wr = {}, *bad;
	struct ibv_recv_wr rw = {}, *rbad;
	struct ibv_wc wc;
	uint64_t total = 0, off = 0, rtotal = 0;

	for (int i = 0; i < 5; i++) {
		gs[i] = (struct ibv_sge){ (uintptr_t)self->a.buf + off + 64 * i, gl[i],
					  self->a.mr->lkey };
		off += gl[i] + 64 * i;
		total += gl[i];
	}
	off = 0;
	for (int i = 0; i < 7; i++) {
		ss[i] = (struct ibv_sge){ (uintptr_t)self->b.buf + off + 32 * (i + 1),
					  sl[i], self->b.mr->lkey };
		off += sl[i] + 32 * (i + 1);
		rtotal += sl[i];
	}
	ASSERT_EQ(total, rtotal);
	fill(self->a.buf, 8 * MiB, 17);
	memset(self->b.buf, 0xee, 8 * MiB);
	rw = (struct ibv_recv_wr){ .wr_id = 1, .sg_list = ss, .num_sge = 7 };
	ASSERT_EQ(0, ibv_post_recv(self->b.qp, &rw, &rbad));
	wr = (struct ibv_send_wr){ .wr_id = 2, .sg_list = gs, .num_sge = 5,
				   .opcode = IBV_WR_SEND_WITH_IMM, .imm_data = htonl(0x5eed),
				   .send_flags = IBV_SEND_SIGNALED };
	ASSERT_EQ(0, ibv_post_send(self->a.qp, &wr, &bad));
	WAIT_WC(self->a.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
	WAIT_WC(self->b.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
	EXPECT_EQ(total, wc.byte_len);
	EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
	EXPECT_EQ(htonl(0x5eed), wc.imm_data);

	/* Byte for byte, the gathered stream equals the scattered one. */
	for (uint64_t pos = 0, gi = 0, go = 0, si = 0, so = 0; pos < total; pos++) {
		uint8_t x = ((uint8_t *)(uintptr_t)gs[gi].addr)[go];
		uint8_t y = ((uint8_t *)(uintptr_t)ss[si].addr)[so];

		ASSERT_EQ(x, y) TH_LOG("byte %llu differs", (unsigned long long)pos);
		if (++go == gs[gi].length)
			gi++, go = 0;
		if (++so == ss[si].length)
			si++, so = 0;
	}
	/* Nothing past the receive SGEs was written. */
	EXPECT_EQ(0xee, ((uint8_t *)(uintptr_t)ss[6].addr)[ss[6].length]);
	EXPECT_EQ(0xee, ((uint8_t *)(uintptr_t)ss[0].addr)[-1]);
}

/* RDMA WRITE with immediate of 5 MiB + 3: data whole, one receive completion. */
TEST_F(pieces, write_with_imm)
{
	const uint32_t len = 5 * MiB + 3;
	struct ibv_wc wc;

	fill(self->a.buf, len, 23);
	memset(self->b.buf, 0, 8 * MiB);
	ASSERT_EQ(0, post_recv(&self->b, 9, 0, 0));
	ASSERT_EQ(0, post_send1(&self->a, IBV_WR_RDMA_WRITE_WITH_IMM, 1, 0, len,
				IBV_SEND_SIGNALED, &self->b, 1000, 0x1234));
	WAIT_WC(self->a.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	WAIT_WC(self->b.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM);
	EXPECT_EQ(9, wc.wr_id);
	EXPECT_EQ(len, wc.byte_len);
	EXPECT_EQ(-1, verify(self->b.buf + 1000, len, 23));
	EXPECT_EQ(-1, all_eq(self->b.buf, 1000, 0));
	EXPECT_EQ(-1, all_eq(self->b.buf + 1000 + len, 64, 0));
}

/* An RC READ of 6 MiB - 1 comes back whole. */
TEST_F(pieces, read)
{
	const uint32_t len = 6 * MiB - 1;
	struct ibv_wc wc;

	if (variant->type != IBV_QPT_RC)
		SKIP(return, "READ is an RC operation");
	fill(self->b.buf + 5, len, 29);
	memset(self->a.buf, 0, 8 * MiB);
	ASSERT_EQ(0, post_send1(&self->a, IBV_WR_RDMA_READ, 1, 0, len,
				IBV_SEND_SIGNALED, &self->b, 5, 0));
	WAIT_WC(self->a.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	EXPECT_EQ(len, wc.byte_len);
	EXPECT_EQ(-1, verify(self->a.buf, len, 29));
	EXPECT_EQ(-1, all_eq(self->a.buf + len, 64, 0));
}

/*
 * A WQE rewritten by its owner while its message goes in pieces: the
 * pieces after the change would carry another message (or none), so the
 * WQE fails with IBV_WC_LOC_QP_OP_ERR instead.  Through the raw uverbs QP of the
 * adversarial suites, whose ring the test writes itself: a 64 MiB RDMA
 * WRITE of the QP to itself, rewritten once its first piece has landed
 * and while a byte of its second-to-last piece has not: at most that piece
 * has read the old WQE, so the last one reads the new.
 */
FIXTURE(rewrite) {};
FIXTURE_SETUP(rewrite) {}
FIXTURE_TEARDOWN(rewrite) {}

/* What the owner turns the WQE into: half its length, or another operation. */
FIXTURE_VARIANT(rewrite) {
	int to_local_inv;
};

FIXTURE_VARIANT_ADD(rewrite, length) { .to_local_inv = 0 };
FIXTURE_VARIANT_ADD(rewrite, opcode) { .to_local_inv = 1 };

TEST_F(rewrite, between_pieces)
{
	const size_t len = 64 * MiB;
	struct ib_uverbs_reg_mr_resp m;
	struct raw_qp g;
	struct env e;
	const char *step;
	volatile uint8_t *dst;
	uint8_t *buf, *slot = NULL;
	struct srnic_wqe_ctrl *c;
	struct srnic_wqe_raddr *ra;
	struct srnic_wqe_data *d;
	int cqes = 0, errors = 0;
	uint64_t end;

	ASSERT_EQ(0, env_open(&e));
	ASSERT_EQ(0, raw_qp_make(&g, &e, &step)) TH_LOG("raw QP: %s", step);
	buf = raw_qp_anon(2 * len);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, uverbs_reg_mr(g.fd, g.pd.core.pd_handle, (uintptr_t)buf,
				   2 * len, (uintptr_t)buf, 0xf, &m));
	fill(buf, len, 37);
	buf[0] |= 1;	/* the first byte changes when it lands */
	dst = buf + len;
	memset((uint8_t *)dst, 0, len);

	slot = g.sq_ring;
	c = (struct srnic_wqe_ctrl *)slot;
	ra = (struct srnic_wqe_raddr *)(c + 1);
	d = (struct srnic_wqe_data *)(slot + SRNIC_SEND_HDR_RC);
	memset(slot, 0, SRNIC_SEND_HDR_RC + sizeof(*d));
	c->opcode = IBV_WR_RDMA_WRITE;
	c->flags = SRNIC_WQE_SIGNALED;
	c->num_sge = 1;
	ra->remote_addr = (uintptr_t)dst;
	ra->rkey = m.rkey;
	d->addr = (uintptr_t)buf;
	d->lkey = m.lkey;
	d->length = len;
	ASSERT_EQ(0, srnic_raw_ring_sq(g.fd, g.qp.core.qp_handle, g.qp_db,
				       raw_qp_sq_slot(&g), 1));
	end = now_ms() + scaled_ms(WC_MS);
	while (!dst[0] && now_ms() < end)
		;
	ASSERT_NE(0, dst[0]) TH_LOG("the first piece never landed");
	/*
	 * Half the length, a message of its own were it taken for one; or a
	 * LOCAL_INV, which would complete at once and leave the rest unsent.
	 */
	if (variant->to_local_inv)
		__atomic_store_n(&c->opcode, (uint8_t)IBV_WR_LOCAL_INV, __ATOMIC_SEQ_CST);
	else
		__atomic_store_n(&d->length, (uint32_t)(len / 2), __ATOMIC_SEQ_CST);
	if (dst[len - 2 * 64 * KiB])
		SKIP(goto out, "the WRITE outran the rewrite: no piece left to see it");
	while (!cqes && now_ms() < end)
		raw_qp_reap(&g, &cqes, &errors);
	EXPECT_EQ(1, cqes);
	EXPECT_EQ(1, errors) TH_LOG("the rewritten WQE completed without error");
	EXPECT_EQ(IBV_QPS_ERR, uverbs_query_qp_state(g.fd, g.qp.core.qp_handle));
	/* The last piece was never written. */
	EXPECT_EQ(-1, all_eq((uint8_t *)dst + len - 64 * KiB, 64 * KiB, 0));
out:
	raw_qp_free(&g);
	munmap(buf, 2 * len);
	env_close(&e);
}

TEST_HARNESS_MAIN
