// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The datapath through the standard verbs API only (libibverbs), so that the
 * same suite runs on any device: two QPs on the device named by $SRNIC_DEV
 * (GID index $SRNIC_GID, default 0), connected to each other on one host.
 * Every opcode and service, CQE fields, error statuses and flushes,
 * post-time errors, CQ overrun, ordering, events, destroy under traffic and
 * a process killed mid-transfer; data is checked byte for byte.  The
 * garbage-WQE test needs srnic's rings and SKIPs on other devices.
 *
 * Written to the InfiniBand spec (IBA vol. 1), and validated on rxe.  Where
 * rxe (Linux 6.12, rdma-core 44) deviates from the spec, the test still
 * follows the spec and says so in a comment starting "rxe:".  On rxe
 * (Linux 6.12.117) these fail, all for rxe's deviations:
 *   conn.{rc,uc}.bad_lkey        the failing WR completes as WR_FLUSH_ERR
 *   conn.{rc,uc}.recv_too_small  LOC_QP_OP_ERR (and REM_OP_ERR) instead of
 *                                LOC_LEN_ERR (and REM_INV_REQ_ERR)
 *   conn.{rc,uc}.post_in_err     a receive posted in ERR is never flushed
 *   rc.send_with_inv_and_local_inv  IBV_WC_WITH_INV never set
 *   dev.cq_overrun_qp_fatal      no IBV_EVENT_QP_FATAL; the QP stays in RTS
 *
 * Every wait is a poll loop with a deadline; a test never sleeps and hopes.
 * A check that something does NOT happen is a sentinel (expect_quiet_pair)
 * where one can follow it; only the others wait quiet_ms().
 */
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "srnic_test.h"
#include "uverbs_qp_raw.h"
#include "verbs_provider.h"

#include "traffic.h"
#include "raw_qp.h"

/*
 * A capability srnic has: asserted on srnic (without it, a regression, not
 * a skip); on another device, which may lack it, a reason to skip.
 */
#define NEED_CAP(cond, why) do { \
	if (!(cond)) { \
		ASSERT_FALSE(is_srnic(srnic_test_dev())) TH_LOG("srnic: %s", why); \
		SKIP(return, "%s", why); \
	} \
} while (0)

/* ---- fixtures ---- */

/* A device, a PD; tests build what they need. */
FIXTURE(dev) {
	struct env e;
};

FIXTURE_SETUP(dev)
{
	ASSERT_EQ(0, env_open(&self->e)) TH_LOG("cannot open %s (GID %d)",
						srnic_test_dev(), test_gid_index());
}

FIXTURE_TEARDOWN(dev)
{
	env_close(&self->e);
}

/* Two connected QPs of each connected service. */
FIXTURE(conn) {
	struct env e;
	struct ep a, b;
};

FIXTURE_VARIANT(conn) {
	enum ibv_qp_type type;
};

FIXTURE_VARIANT_ADD(conn, rc) { .type = IBV_QPT_RC };
FIXTURE_VARIANT_ADD(conn, uc) { .type = IBV_QPT_UC };

FIXTURE_SETUP(conn)
{
	ASSERT_EQ(0, env_open(&self->e));
	struct qp_opts o = qp_defaults(&self->e, variant->type);

	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &self->a, &self->b))
		TH_LOG("QP pair: %s", strerror(errno));
}

FIXTURE_TEARDOWN(conn)
{
	ep_destroy(&self->a);
	ep_destroy(&self->b);
	env_close(&self->e);
}

/* RC only: READ, atomics, fence, invalidation, RC error behaviour. */
FIXTURE(rc) {
	struct env e;
	struct ep a, b;
};

FIXTURE_SETUP(rc)
{
	ASSERT_EQ(0, env_open(&self->e));
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);

	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &self->a, &self->b))
		TH_LOG("QP pair: %s", strerror(errno));
}

FIXTURE_TEARDOWN(rc)
{
	ep_destroy(&self->a);
	ep_destroy(&self->b);
	env_close(&self->e);
}

FIXTURE(ud) {
	struct env e;
	struct ep a, b;
};

FIXTURE_SETUP(ud)
{
	ASSERT_EQ(0, env_open(&self->e));
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_UD);

	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &self->a, &self->b))
		TH_LOG("QP pair: %s", strerror(errno));
}

FIXTURE_TEARDOWN(ud)
{
	ep_destroy(&self->a);
	ep_destroy(&self->b);
	env_close(&self->e);
}

/*
 * One message x -> y by SEND or SEND_WITH_IMM of @len bytes from x's buffer
 * at @off into y's buffer at @roff; checks both CQEs and the data.
 */
static void send_one(struct __test_metadata *_metadata, struct ep *x,
		     struct ep *y, enum ibv_wr_opcode op, size_t off,
		     size_t roff, uint32_t len, unsigned int seed,
		     unsigned int flags)
{
	uint32_t grh = y->o.type == IBV_QPT_UD ? 40 : 0;
	struct ibv_wc wc;

	fill(x->buf + off, len, seed);
	memset(y->buf + roff, 0xee, grh + len + 64);
	ASSERT_EQ(0, post_recv(y, 0x5000 + seed, roff, grh + len + 16));
	ASSERT_EQ(0, post_send1(x, op, 0x1000 + seed, off, len,
				IBV_SEND_SIGNALED | flags, NULL, 0,
				0xabc000 + seed));
	WAIT_WC(x->cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
	EXPECT_EQ(0x1000 + seed, wc.wr_id);
	EXPECT_EQ(x->qp->qp_num, wc.qp_num);
	WAIT_WC(y->cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
	EXPECT_EQ(0x5000 + seed, wc.wr_id);
	EXPECT_EQ(grh + len, wc.byte_len);
	EXPECT_EQ(y->qp->qp_num, wc.qp_num);
	if (op == IBV_WR_SEND_WITH_IMM) {
		EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
		EXPECT_EQ(0xabc000 + seed, ntohl(wc.imm_data));
	} else {
		EXPECT_FALSE(wc.wc_flags & IBV_WC_WITH_IMM);
	}
	/* IBV_WC_GRH and src_qp mean something for UD only. */
	if (grh) {
		EXPECT_TRUE(wc.wc_flags & IBV_WC_GRH);
		EXPECT_EQ(x->qp->qp_num, wc.src_qp);
		/* sl names the slot's header, as mlx5's provider does (2 IPv4, 1 IPv6). */
		EXPECT_EQ(y->buf[roff + 20] == 0x45 ? 2 : 1, wc.sl);
	}
	EXPECT_EQ(-1, verify(y->buf + roff + grh, len, seed))
		TH_LOG("%u-byte message differs at %ld", len,
		       verify(y->buf + roff + grh, len, seed));
	/* Nothing written past the message. */
	EXPECT_EQ(-1, all_eq(y->buf + roff + grh + len, 64, 0xee));
}

/* RDMA WRITE (or WRITE_WITH_IMM) x -> y, checked. */
static void write_one(struct __test_metadata *_metadata, struct ep *x,
		      struct ep *y, enum ibv_wr_opcode op, size_t off,
		      size_t roff, uint32_t len, unsigned int seed)
{
	struct ibv_wc wc;

	fill(x->buf + off, len, seed);
	memset(y->buf + roff, 0xee, len + 64);
	if (op == IBV_WR_RDMA_WRITE_WITH_IMM)
		ASSERT_EQ(0, post_recv(y, 0x6000 + seed, 0, 0));
	ASSERT_EQ(0, post_send1(x, op, 0x2000 + seed, off, len,
				IBV_SEND_SIGNALED, y, roff, 0x77000 + seed));
	WAIT_WC(x->cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	EXPECT_EQ(0x2000 + seed, wc.wr_id);
	EXPECT_EQ(x->qp->qp_num, wc.qp_num);
	if (op == IBV_WR_RDMA_WRITE_WITH_IMM) {
		WAIT_WC(y->cq, wc);
		ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM);
		EXPECT_EQ(0x6000 + seed, wc.wr_id);
		EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
		EXPECT_EQ(0x77000 + seed, ntohl(wc.imm_data));
		EXPECT_EQ(len, wc.byte_len);
		EXPECT_EQ(y->qp->qp_num, wc.qp_num);
	}
	/*
	 * A plain WRITE gives the responder no completion; its data is
	 * visible once the requester's completion is (RC: acknowledged; UC
	 * on one host: delivered before the requester completes).
	 */
	if (y->o.type == IBV_QPT_UC && op == IBV_WR_RDMA_WRITE) {
		/* UC has no acknowledgement: wait for the data itself. */
		uint64_t end = now_ms() + WC_MS;

		while (verify(y->buf + roff, len, seed) != -1 && now_ms() < end)
			usleep(100);
	}
	EXPECT_EQ(-1, verify(y->buf + roff, len, seed))
		TH_LOG("%u-byte write differs at %ld", len,
		       verify(y->buf + roff, len, seed));
	EXPECT_EQ(-1, all_eq(y->buf + roff + len, 64, 0xee));
	if (op != IBV_WR_RDMA_WRITE_WITH_IMM)
		expect_quiet_pair(_metadata, x, y);
}

/* ================= every opcode on RC and UC ================= */

TEST_F(conn, send)
{
	uint32_t sizes[] = { 1, 8, 63, 1000, 4096, 4097 };

	for (unsigned int i = 0; i < ARRAY_SIZE(sizes); i++)
		send_one(_metadata, &self->a, &self->b, IBV_WR_SEND, 64 * i,
			 8192 * i, sizes[i], i, 0);
	/* And the other direction. */
	send_one(_metadata, &self->b, &self->a, IBV_WR_SEND, 0, 0, 3000, 77, 0);
}

TEST_F(conn, send_with_imm)
{
	send_one(_metadata, &self->a, &self->b, IBV_WR_SEND_WITH_IMM, 0, 0,
		 100, 1, 0);
	send_one(_metadata, &self->a, &self->b, IBV_WR_SEND_WITH_IMM, 8, 4096,
		 5000, 2, 0);
}

TEST_F(conn, rdma_write)
{
	uint32_t sizes[] = { 1, 8, 1000, 4096, 10000 };

	for (unsigned int i = 0; i < ARRAY_SIZE(sizes); i++)
		write_one(_metadata, &self->a, &self->b, IBV_WR_RDMA_WRITE,
			  8 * i, 16384 * i + 3, sizes[i], i);
}

TEST_F(conn, rdma_write_with_imm)
{
	write_one(_metadata, &self->a, &self->b, IBV_WR_RDMA_WRITE_WITH_IMM,
		  0, 0, 100, 1);
	write_one(_metadata, &self->a, &self->b, IBV_WR_RDMA_WRITE_WITH_IMM,
		  100, 7, 7000, 2);
}

/* Larger than any path MTU: segmented and reassembled. */
TEST_F_TIMEOUT(conn, large_messages, 120)
{
	uint32_t sizes[] = { 64 * KiB, MiB };

	for (unsigned int i = 0; i < ARRAY_SIZE(sizes); i++) {
		ASSERT_GT(sizes[i], mtu_bytes(self->e.port.active_mtu));
		send_one(_metadata, &self->a, &self->b, IBV_WR_SEND, 0, 0,
			 sizes[i], 10 + i, 0);
		write_one(_metadata, &self->a, &self->b, IBV_WR_RDMA_WRITE, 0,
			  0, sizes[i], 20 + i);
		write_one(_metadata, &self->a, &self->b,
			  IBV_WR_RDMA_WRITE_WITH_IMM, 64, 64, sizes[i], 30 + i);
	}
}

TEST_F(conn, zero_length)
{
	struct ibv_wc wc;

	/* SEND of no data: a receive completion of 0 bytes. */
	ASSERT_EQ(0, post_recv(&self->b, 1, 0, 16));
	ASSERT_EQ(0, post_send1(&self->a, IBV_WR_SEND, 2, 0, 0,
				IBV_SEND_SIGNALED, NULL, 0, 0));
	WAIT_WC(self->a.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
	WAIT_WC(self->b.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
	EXPECT_EQ(0, wc.byte_len);

	/* WRITE of no data. */
	memset(self->b.buf, 0xee, 64);
	ASSERT_EQ(0, post_send1(&self->a, IBV_WR_RDMA_WRITE, 3, 0, 0,
				IBV_SEND_SIGNALED, &self->b, 0, 0));
	WAIT_WC(self->a.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	EXPECT_EQ(-1, all_eq(self->b.buf, 64, 0xee));

	/* WRITE_WITH_IMM of no data: the immediate alone. */
	ASSERT_EQ(0, post_recv(&self->b, 4, 0, 0));
	ASSERT_EQ(0, post_send1(&self->a, IBV_WR_RDMA_WRITE_WITH_IMM, 5, 0, 0,
				IBV_SEND_SIGNALED, &self->b, 0, 0x1234));
	WAIT_WC(self->a.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	WAIT_WC(self->b.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM);
	EXPECT_EQ(0, wc.byte_len);
	EXPECT_EQ(0x1234, ntohl(wc.imm_data));
	EXPECT_EQ(-1, all_eq(self->b.buf, 64, 0xee));
}

/*
 * Inline data: copied at post time (the source is clobbered right after
 * the post returns) and the lkey is not checked (ibv_post_send(3)).
 */
TEST_F(conn, inline_data)
{
	uint32_t max = self->a.cap.max_inline_data;
	uint32_t sizes[] = { 1, 13, max / 2, max };
	struct ibv_send_wr wr, *bad;
	struct ibv_sge s[2];
	struct ibv_wc wc;

	NEED_CAP(max, "the device offers no inline data");
	ASSERT_GE(max, 64u); /* asked for 64 */
	for (unsigned int i = 0; i < ARRAY_SIZE(sizes); i++) {
		uint32_t len = sizes[i];

		if (!len)
			continue;
		fill(self->a.buf, len, i);
		memset(self->b.buf, 0xee, len + 64);
		ASSERT_EQ(0, post_recv(&self->b, i, 0, len + 64));
		wr_init(&wr, s, &self->a, i & 1 ? IBV_WR_SEND_WITH_IMM :
			IBV_WR_SEND, 100 + i, 0, len,
			IBV_SEND_SIGNALED | IBV_SEND_INLINE, NULL, 0, i);
		s[0].lkey = 0xdeadbeef;
		ASSERT_EQ(0, ibv_post_send(self->a.qp, &wr, &bad));
		memset(self->a.buf, 0, len);
		WAIT_WC(self->a.cq, wc);
		ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
		WAIT_WC(self->b.cq, wc);
		ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
		EXPECT_EQ(len, wc.byte_len);
		EXPECT_EQ(-1, verify(self->b.buf, len, i));
		EXPECT_EQ(-1, all_eq(self->b.buf + len, 64, 0xee));
	}
	/* Inline WRITE gathered from two pieces. */
	fill(self->a.buf + 1000, 20, 9);
	fill(self->a.buf + 3000, 30, 10);
	memset(self->b.buf, 0xee, 128);
	wr_init(&wr, s, &self->a, IBV_WR_RDMA_WRITE, 200, 1000, 20,
		IBV_SEND_SIGNALED | IBV_SEND_INLINE, &self->b, 0, 0);
	s[1] = (struct ibv_sge){ (uintptr_t)self->a.buf + 3000, 30, 0 };
	wr.num_sge = 2;
	ASSERT_EQ(0, ibv_post_send(self->a.qp, &wr, &bad));
	memset(self->a.buf + 1000, 0, 20);
	memset(self->a.buf + 3000, 0, 30);
	WAIT_WC(self->a.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	if (self->b.o.type == IBV_QPT_UC) {
		uint64_t end = now_ms() + WC_MS;

		while (verify(self->b.buf + 20, 30, 10) != -1 && now_ms() < end)
			usleep(100);
	}
	EXPECT_EQ(-1, verify(self->b.buf, 20, 9));
	EXPECT_EQ(-1, verify(self->b.buf + 20, 30, 10));
	EXPECT_EQ(-1, all_eq(self->b.buf + 50, 64, 0xee));
}

/* sq_sig_all = 0: only signaled WRs complete; sq_sig_all = 1: all do. */
TEST_F(conn, signaled_and_unsignaled)
{
	struct ibv_send_wr wr[9], *bad;
	struct ibv_sge s[9];
	struct ibv_wc wc;

	ASSERT_EQ(0, post_recv(&self->b, 1, 0, 64));
	for (int i = 0; i < 9; i++) {
		fill(self->a.buf + 4096 * i, 1000, i);
		wr_init(&wr[i], &s[i], &self->a, i < 8 ? IBV_WR_RDMA_WRITE :
			IBV_WR_SEND, 10 + i, 4096 * i, i < 8 ? 1000 : 8,
			i < 8 ? 0 : IBV_SEND_SIGNALED, &self->b,
			8192 + 4096 * i, 0);
		if (i)
			wr[i - 1].next = &wr[i];
	}
	ASSERT_EQ(0, ibv_post_send(self->a.qp, wr, &bad));
	WAIT_WC(self->a.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
	EXPECT_EQ(18, wc.wr_id);
	WAIT_WC(self->b.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
	/* The WRITEs before the SEND are all there when it arrives. */
	for (int i = 0; i < 8; i++)
		EXPECT_EQ(-1, verify(self->b.buf + 8192 + 4096 * i, 1000, i));
	/* The unsignaled WRITEs completed nothing. */
	expect_quiet_pair(_metadata, &self->a, &self->b);

	/* Another pair with sq_sig_all = 1. */
	struct qp_opts o = qp_defaults(&self->e, self->a.o.type);
	struct ep c, d;

	o.sig_all = 1;
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &c, &d));
	for (int i = 0; i < 4; i++) {
		wr_init(&wr[i], &s[i], &c, IBV_WR_RDMA_WRITE, 30 + i, 0, 100,
			0, &d, 0, 0);
		wr[i].next = i < 3 ? &wr[i + 1] : NULL;
	}
	ASSERT_EQ(0, ibv_post_send(c.qp, wr, &bad));
	for (int i = 0; i < 4; i++) {
		WAIT_WC(c.cq, wc);
		ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
		EXPECT_EQ(30 + i, wc.wr_id);
	}
	expect_quiet_pair(_metadata, &c, &d);
	ep_destroy(&c);
	ep_destroy(&d);
}

/* Gather on the sender, scatter on the receiver. */
TEST_F(conn, multi_sge)
{
	const struct { size_t off; uint32_t len; } g[3] = {
		{ 100, 7 }, { 5000, 1000 }, { 70000, 3000 } };
	const struct { size_t off; uint32_t len; } sc[4] = {
		{ 0, 500 }, { 9000, 2000 }, { 20000, 1000 }, { 30000, 1000 } };
	uint8_t expect[4007], got[4007];
	struct ibv_send_wr wr, *bad;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_sge s[4];
	struct ibv_wc wc;
	size_t n = 0;

	ASSERT_GE(self->a.cap.max_send_sge, 3u);
	ASSERT_GE(self->b.cap.max_recv_sge, 4u);
	for (int i = 0; i < 3; i++) {
		fill(self->a.buf + g[i].off, g[i].len, 40 + i);
		memcpy(expect + n, self->a.buf + g[i].off, g[i].len);
		n += g[i].len;
		s[i] = (struct ibv_sge){ (uintptr_t)self->a.buf + g[i].off,
					 g[i].len, self->a.mr->lkey };
	}
	memset(self->b.buf, 0xee, 40000);
	struct ibv_sge rs[4];

	for (int i = 0; i < 4; i++)
		rs[i] = (struct ibv_sge){ (uintptr_t)self->b.buf + sc[i].off,
					  sc[i].len, self->b.mr->lkey };
	rwr = (struct ibv_recv_wr){ .wr_id = 1, .sg_list = rs, .num_sge = 4 };
	ASSERT_EQ(0, ibv_post_recv(self->b.qp, &rwr, &rbad));
	wr = (struct ibv_send_wr){ .wr_id = 2, .sg_list = s, .num_sge = 3,
				   .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED };
	ASSERT_EQ(0, ibv_post_send(self->a.qp, &wr, &bad));
	WAIT_WC(self->a.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
	WAIT_WC(self->b.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
	EXPECT_EQ(4007, wc.byte_len);
	n = 0;
	for (int i = 0; i < 4 && n < sizeof(got); i++) {
		size_t k = sc[i].len < sizeof(got) - n ? sc[i].len :
							 sizeof(got) - n;

		memcpy(got + n, self->b.buf + sc[i].off, k);
		n += k;
	}
	EXPECT_EQ(0, memcmp(expect, got, sizeof(got)));
	/* The last scatter entry is used for 507 bytes only. */
	EXPECT_EQ(-1, all_eq(self->b.buf + 30000 + 507, 493, 0xee));

	/* WRITE gathered from the same three pieces, contiguous remotely. */
	memset(self->b.buf + 100000, 0xee, 5000);
	wr = (struct ibv_send_wr){ .wr_id = 3, .sg_list = s, .num_sge = 3,
				   .opcode = IBV_WR_RDMA_WRITE,
				   .send_flags = IBV_SEND_SIGNALED };
	wr.wr.rdma.remote_addr = (uintptr_t)self->b.buf + 100000;
	wr.wr.rdma.rkey = self->b.mr->rkey;
	ASSERT_EQ(0, ibv_post_send(self->a.qp, &wr, &bad));
	WAIT_WC(self->a.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	if (self->b.o.type == IBV_QPT_UC) {
		uint64_t end = now_ms() + WC_MS;

		while (memcmp(expect, self->b.buf + 100000, sizeof(expect)) &&
		       now_ms() < end)
			usleep(100);
	}
	EXPECT_EQ(0, memcmp(expect, self->b.buf + 100000, sizeof(expect)));
	EXPECT_EQ(-1, all_eq(self->b.buf + 100000 + 4007, 64, 0xee));
}

/* N sends arrive in order, each in the next receive WQE. */
TEST_F(conn, ordering)
{
	enum { N = 48, SZ = 256 };
	struct ibv_wc wc;

	for (int i = 0; i < N; i++)
		ASSERT_EQ(0, post_recv(&self->b, i, i * SZ, SZ));
	for (int i = 0; i < N; i++) {
		fill(self->a.buf + i * SZ, SZ, 100 + i);
		/* One post per message: as many doorbells as messages. */
		ASSERT_EQ(0, post_send1(&self->a, IBV_WR_SEND_WITH_IMM, i,
					i * SZ, SZ, IBV_SEND_SIGNALED, NULL, 0,
					i));
	}
	for (int i = 0; i < N; i++) {
		WAIT_WC(self->b.cq, wc);
		ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
		EXPECT_EQ((uint64_t)i, wc.wr_id);
		EXPECT_EQ((uint32_t)i, ntohl(wc.imm_data));
		EXPECT_EQ(-1, verify(self->b.buf + i * SZ, SZ, 100 + i));
	}
	for (int i = 0; i < N; i++) {
		WAIT_WC(self->a.cq, wc);
		ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
		EXPECT_EQ((uint64_t)i, wc.wr_id);
	}
}

/* A WRITE then a SEND: the written data is there when the SEND completes. */
TEST_F(conn, write_then_send)
{
	struct ibv_send_wr wr[2], *bad;
	struct ibv_sge s[2];
	struct ibv_wc wc;

	for (unsigned int round = 0; round < 3; round++) {
		fill(self->a.buf, 256 * KiB, 50 + round);
		memset(self->b.buf, 0, 256 * KiB);
		ASSERT_EQ(0, post_recv(&self->b, round, MiB, 64));
		wr_init(&wr[0], &s[0], &self->a, IBV_WR_RDMA_WRITE, 1, 0,
			256 * KiB, 0, &self->b, 0, 0);
		wr_init(&wr[1], &s[1], &self->a, IBV_WR_SEND, 2, MiB, 8,
			IBV_SEND_SIGNALED, NULL, 0, 0);
		wr[0].next = &wr[1];
		ASSERT_EQ(0, ibv_post_send(self->a.qp, wr, &bad));
		WAIT_WC(self->b.cq, wc);
		ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
		EXPECT_EQ(-1, verify(self->b.buf, 256 * KiB, 50 + round));
		WAIT_WC(self->a.cq, wc);
		ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
	}
}

/* ================= events ================= */

static int wait_channel(struct ibv_comp_channel *ch, struct ibv_cq **cq,
			int ms)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	void *ctx;

	if (poll(&pfd, 1, ms) != 1)
		return 0;
	return ibv_get_cq_event(ch, cq, &ctx) == 0;
}

TEST_F(conn, cq_events)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(env_of_peer(&self->e)->ctx);
	struct qp_opts oc = qp_defaults(&self->e, self->a.o.type), o = oc;
	struct ibv_cq *got;
	struct ibv_wc wc;
	struct ep c, d;
	int flags;

	ASSERT_NE(NULL, ch);
	flags = fcntl(ch->fd, F_GETFL);
	ASSERT_EQ(0, fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK));
	o.ch = ch;
	ASSERT_EQ(0, pair_make(&self->e, &oc, &o, &c, &d));

	/* Not armed: no event. */
	ASSERT_EQ(0, post_recv(&d, 1, 0, 64));
	ASSERT_EQ(0, post_send1(&c, IBV_WR_SEND, 2, 0, 8, IBV_SEND_SIGNALED,
				NULL, 0, 0));
	WAIT_WC(d.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
	WAIT_WC(c.cq, wc);
	/* Nothing on a channel is ordered after an event that must not come. */
	EXPECT_EQ(0, wait_channel(ch, &got, quiet_ms()));

	/* Armed: one event per arming. */
	for (int round = 0; round < 3; round++) {
		ASSERT_EQ(0, ibv_req_notify_cq(d.cq, 0));
		ASSERT_EQ(0, post_recv(&d, 10 + round, 0, 64));
		ASSERT_EQ(0, post_send1(&c, IBV_WR_SEND, 20 + round, 0, 8,
					IBV_SEND_SIGNALED, NULL, 0, 0));
		ASSERT_EQ(1, wait_channel(ch, &got, WC_MS))
			TH_LOG("round %d: no completion event", round);
		EXPECT_EQ(d.cq, got);
		ibv_ack_cq_events(got, 1);
		ASSERT_EQ(1, poll_one(d.cq, &wc, 0));
		ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
		EXPECT_EQ((uint64_t)10 + round, wc.wr_id);
		WAIT_WC(c.cq, wc);
	}
	/* Not rearmed: the next completion raises nothing. */
	ASSERT_EQ(0, post_recv(&d, 30, 0, 64));
	ASSERT_EQ(0, post_send1(&c, IBV_WR_SEND, 31, 0, 8, IBV_SEND_SIGNALED,
				NULL, 0, 0));
	WAIT_WC(d.cq, wc);
	EXPECT_EQ(0, wait_channel(ch, &got, quiet_ms()));
	WAIT_WC(c.cq, wc);
	ep_destroy(&c);
	ep_destroy(&d);
	EXPECT_EQ(0, ibv_destroy_comp_channel(ch));
}

/* Completion events raised on CPU @cpu of @ctx's device (debugfs cq_events), or -1. */
static long long cq_events_on(struct ibv_context *ctx, int cpu)
{
	char path[256], key[32], *all, *p;
	long long v = -1;

	snprintf(path, sizeof(path), "/sys/kernel/debug/srnic/%s/cq_events",
		 ibv_get_device_name(ctx->device));
	all = slurp(path);
	snprintf(key, sizeof(key), "cpu %d events ", cpu);
	p = all ? strstr(all, key) : NULL;
	if (p)
		v = atoll(p + strlen(key));
	free(all);
	return v;
}

/*
 * A vector per CPU, as rxe and siw report, and a CQ's events raised on the
 * CPU of its vector (the vector-th online CPU; all are online here), as a
 * NIC raises a vector's interrupt: NVMe over RDMA spreads its queues' CQs
 * over the vectors.  Before, the vectors were the engine threads and every
 * event ran on the engine's CPU.
 */
TEST_F(conn, events_on_the_cpu_of_their_vector)
{
	struct env *pe = env_of_peer(&self->e);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct ibv_wc wc;

	ASSERT_EQ(sysconf(_SC_NPROCESSORS_CONF), pe->ctx->num_comp_vectors);
	for (int v = 0; v < pe->ctx->num_comp_vectors && v < ncpu; v++) {
		struct ibv_comp_channel *ch = ibv_create_comp_channel(pe->ctx);
		struct qp_opts oc = qp_defaults(&self->e, self->a.o.type), o = oc;
		long long before, after;
		struct ibv_cq *got;
		struct ep c, d;

		ASSERT_NE(NULL, ch);
		ASSERT_EQ(0, fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK));
		o.ch = ch;
		o.comp_vector = v;
		ASSERT_EQ(0, pair_make(&self->e, &oc, &o, &c, &d));
		before = cq_events_on(pe->ctx, v);
		ASSERT_LE(0, before) TH_LOG("no cq_events in debugfs");
		ASSERT_EQ(0, ibv_req_notify_cq(d.cq, 0));
		ASSERT_EQ(0, post_recv(&d, 1, 0, 64));
		ASSERT_EQ(0, post_send1(&c, IBV_WR_SEND, 2, 0, 8, IBV_SEND_SIGNALED, NULL, 0, 0));
		ASSERT_EQ(1, wait_channel(ch, &got, WC_MS)) TH_LOG("vector %d: no event", v);
		ibv_ack_cq_events(got, 1);
		/* The other tests' CQs are gone: this one's is the only event. */
		after = cq_events_on(pe->ctx, v);
		EXPECT_EQ(before + 1, after) TH_LOG("vector %d", v);
		WAIT_WC(d.cq, wc);
		WAIT_WC(c.cq, wc);
		ep_destroy(&c);
		ep_destroy(&d);
		EXPECT_EQ(0, ibv_destroy_comp_channel(ch));
	}
}

/* Armed for solicited completions: an unsolicited SEND raises nothing. */
TEST_F(conn, solicited_events)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(env_of_peer(&self->e)->ctx);
	struct qp_opts oc = qp_defaults(&self->e, self->a.o.type), o = oc;
	struct ibv_cq *got;
	struct ibv_wc wc;
	struct ep c, d;

	ASSERT_NE(NULL, ch);
	ASSERT_EQ(0, fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK));
	o.ch = ch;
	ASSERT_EQ(0, pair_make(&self->e, &oc, &o, &c, &d));

	ASSERT_EQ(0, ibv_req_notify_cq(d.cq, 1));
	ASSERT_EQ(0, post_recv(&d, 1, 0, 64));
	ASSERT_EQ(0, post_recv(&d, 2, 64, 64));
	ASSERT_EQ(0, post_send1(&c, IBV_WR_SEND, 3, 0, 8, IBV_SEND_SIGNALED,
				NULL, 0, 0));
	WAIT_WC(c.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
	EXPECT_EQ(0, wait_channel(ch, &got, quiet_ms()))
		TH_LOG("event for an unsolicited message");
	ASSERT_EQ(0, post_send1(&c, IBV_WR_SEND_WITH_IMM, 4, 0, 8,
				IBV_SEND_SIGNALED | IBV_SEND_SOLICITED, NULL,
				0, 5));
	ASSERT_EQ(1, wait_channel(ch, &got, WC_MS))
		TH_LOG("no event for the solicited message");
	EXPECT_EQ(d.cq, got);
	ibv_ack_cq_events(got, 1);
	ASSERT_EQ(2, drain(d.cq, (struct ibv_wc[2]){}, 2, WC_MS));
	WAIT_WC(c.cq, wc);
	ep_destroy(&c);
	ep_destroy(&d);
	EXPECT_EQ(0, ibv_destroy_comp_channel(ch));
}

/* ================= errors on connected QPs ================= */

/* A bad lkey: local protection error, QP to ERR, the rest flushed. */
TEST_F(conn, bad_lkey)
{
	struct ibv_send_wr wr[3], *bad;
	struct ibv_sge s[3];
	struct ibv_wc wc;
	uint64_t rest[] = { 11, 12, 20, 21 };

	ASSERT_EQ(0, post_recv(&self->b, 1, 0, 4096));
	ASSERT_EQ(0, post_recv(&self->a, 20, 0, 64));
	ASSERT_EQ(0, post_recv(&self->a, 21, 64, 64));
	for (int i = 0; i < 3; i++) {
		wr_init(&wr[i], &s[i], &self->a, IBV_WR_SEND, 10 + i, 0, 100,
			IBV_SEND_SIGNALED, NULL, 0, 0);
		wr[i].next = i < 2 ? &wr[i + 1] : NULL;
	}
	s[0].lkey ^= 0x5a5a5a00;
	ASSERT_EQ(0, ibv_post_send(self->a.qp, wr, &bad));
	/*
	 * rxe: reports the failing WR itself as IBV_WC_WR_FLUSH_ERR (its
	 * requester moves the QP to ERR, and the flush overtakes the WR's own
	 * error completion); the IBA: the WR in error completes with its
	 * error, the WRs after it are flushed.
	 */
	WAIT_WC(self->a.cq, wc);
	ASSERT_WC(wc, IBV_WC_LOC_PROT_ERR, 0);
	EXPECT_EQ(10, wc.wr_id);
	EXPECT_EQ(self->a.qp->qp_num, wc.qp_num);
	check_flushed(_metadata, &self->a, rest, ARRAY_SIZE(rest));
	/* The message never left (a is in error: no sentinel can follow). */
	ASSERT_QUIET(self->b.cq);
}

/*
 * Receive buffer too small.
 * RC: the receiver completes the WQE with IBV_WC_LOC_LEN_ERR, the sender
 * gets a NAK (IBV_WC_REM_INV_REQ_ERR); both QPs go to ERR.
 * UC: the sender knows nothing (success).  The receiver either completes
 * the WQE with IBV_WC_LOC_LEN_ERR and goes to ERR, or drops the message
 * silently and the WQE takes the next message; both are accepted.
 * rxe: the receiver's WQE completes with IBV_WC_LOC_QP_OP_ERR (RC and UC)
 * and the RC sender gets IBV_WC_REM_OP_ERR: rxe's copy into the too-small
 * buffer fails with EINVAL, not ENOSPC, so it takes its "malformed WQE"
 * path instead of its length-error one.
 */
TEST_F(conn, recv_too_small)
{
	struct ibv_wc wc;

	ASSERT_EQ(0, post_recv(&self->b, 1, 0, 16));
	ASSERT_EQ(0, post_recv(&self->b, 2, 64, 4096));
	fill(self->a.buf, 64, 1);
	ASSERT_EQ(0, post_send1(&self->a, IBV_WR_SEND, 3, 0, 64,
				IBV_SEND_SIGNALED, NULL, 0, 0));
	WAIT_WC(self->a.cq, wc);
	if (self->a.o.type == IBV_QPT_RC) {
		EXPECT_EQ(IBV_WC_REM_INV_REQ_ERR, wc.status)
			TH_LOG("sender: %s", ibv_wc_status_str(wc.status));
		EXPECT_TRUE(wait_state(self->a.qp, IBV_QPS_ERR, WC_MS));
	} else {
		ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
		/* A message that fits, after it. */
		fill(self->a.buf + 4096, 8, 2);
		ASSERT_EQ(0, post_send1(&self->a, IBV_WR_SEND, 4, 4096, 8,
					IBV_SEND_SIGNALED, NULL, 0, 0));
		WAIT_WC(self->a.cq, wc);
		ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
	}
	WAIT_WC(self->b.cq, wc);
	EXPECT_EQ(1, wc.wr_id);
	EXPECT_EQ(self->b.qp->qp_num, wc.qp_num);
	if (self->a.o.type == IBV_QPT_UC && wc.status == IBV_WC_SUCCESS) {
		/* Dropped; the WQE took the next message. */
		EXPECT_EQ(8, wc.byte_len);
		EXPECT_EQ(-1, verify(self->b.buf, 8, 2));
		EXPECT_EQ(IBV_QPS_RTS, qp_state(self->b.qp));
		return;
	}
	EXPECT_EQ(IBV_WC_LOC_LEN_ERR, wc.status)
		TH_LOG("receiver: %s", ibv_wc_status_str(wc.status));
	/* The receiver's other receive is flushed. */
	uint64_t rest[] = { 2 };

	check_flushed(_metadata, &self->b, rest, 1);
}

/*
 * The IBA lets Post Send and Post Receive succeed in the Error state, and
 * every WR of a QP in Error completes with a flush error: those outstanding
 * when it entered ERR, and those posted afterwards, receives alone included.
 */
TEST_F(conn, post_in_err)
{
	uint64_t before[] = { 1, 2 };
	struct ibv_wc wc;

	ASSERT_EQ(0, post_recv(&self->a, 1, 0, 64));
	ASSERT_EQ(0, post_recv(&self->a, 2, 64, 64));
	ASSERT_EQ(0, to_err(self->a.qp));
	check_flushed(_metadata, &self->a, before, 2);
	/* Nothing but this post can make a sleeping engine flush it. */
	ASSERT_TRUE(wait_engine_asleep(WC_MS));
	/*
	 * rxe: a receive posted to a QP already in ERR is never flushed: the
	 * provider posts receives without a system call and rxe flushes its
	 * receive queue only when its responder task runs (on entering ERR,
	 * or after a send doorbell).
	 */
	ASSERT_EQ(0, post_recv(&self->a, 3, 0, 64));
	int seen3 = poll_one(self->a.cq, &wc, WC_MS) == 1;

	EXPECT_TRUE(seen3) TH_LOG("a receive posted in ERR never completed");
	if (seen3) {
		EXPECT_EQ(3, wc.wr_id);
		EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);
	}
	ASSERT_EQ(0, post_send1(&self->a, IBV_WR_SEND, 4, 0, 8,
				IBV_SEND_SIGNALED, NULL, 0, 0));
	ASSERT_EQ(0, post_recv(&self->a, 5, 0, 64));
	struct ibv_wc w[3];
	int want = seen3 ? 2 : 3;
	int got = drain(self->a.cq, w, want, WC_MS);

	/* 4 and 5 (and 3, if it waited for something to flush it). */
	EXPECT_GE(got, 2);
	for (int i = 0; i < got; i++) {
		EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, w[i].status);
		EXPECT_TRUE(w[i].wr_id >= 3 && w[i].wr_id <= 5);
	}
	EXPECT_EQ(IBV_QPS_ERR, qp_state(self->a.qp));
	/* The peer is not affected by a's local transition. */
	EXPECT_EQ(IBV_QPS_RTS, qp_state(self->b.qp));
}

/* Posting to a QP in RESET fails at post time (IBA 11.4.1.1, 11.4.1.2). */
TEST_F(dev, post_in_reset)
{
	enum ibv_qp_type types[] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };

	for (unsigned int i = 0; i < ARRAY_SIZE(types); i++) {
		struct qp_opts o = qp_defaults(&self->e, types[i]);
		struct ibv_send_wr wr, *bad;
		struct ibv_sge s;
		struct ep x;

		ASSERT_EQ(0, ep_create(&self->e, &o, &x));
		ASSERT_EQ(IBV_QPS_RESET, qp_state(x.qp));
		wr_init(&wr, &s, &x, IBV_WR_SEND, 1, 0, 8, IBV_SEND_SIGNALED,
			NULL, 0, 0);
		if (types[i] == IBV_QPT_UD) {
			struct ibv_ah_attr ah = ah_to_self(&self->e);

			x.ah = ibv_create_ah(self->e.pd, &ah);
			ASSERT_NE(NULL, x.ah);
			wr.wr.ud.ah = x.ah;
		}
		EXPECT_NE(0, ibv_post_send(x.qp, &wr, &bad))
			TH_LOG("type %d: send posted in RESET", types[i]);
		EXPECT_NE(0, post_recv(&x, 2, 0, 8))
			TH_LOG("type %d: receive posted in RESET", types[i]);
		/* In INIT receives may be posted, sends may not. */
		ASSERT_EQ(0, ep_to_init(&x));
		EXPECT_NE(0, ibv_post_send(x.qp, &wr, &bad))
			TH_LOG("type %d: send posted in INIT", types[i]);
		EXPECT_EQ(0, post_recv(&x, 3, 0, 8));
		ep_destroy(&x);
	}
}

/* ================= RC only ================= */

static void read_one(struct __test_metadata *_metadata, struct ep *x,
		     struct ep *y, size_t off, size_t roff, uint32_t len,
		     unsigned int seed)
{
	struct ibv_wc wc;

	fill(y->buf + roff, len, seed);
	memset(x->buf + off, 0xee, len + 64);
	ASSERT_EQ(0, post_send1(x, IBV_WR_RDMA_READ, 0x3000 + seed, off, len,
				IBV_SEND_SIGNALED, y, roff, 0));
	/* 1 MiB across the veth on the debug kernel: over 10 s at times. */
	ASSERT_EQ(1, poll_one(x->cq, &wc, scaled_ms(WC_MS)));
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	EXPECT_EQ(0x3000 + seed, wc.wr_id);
	EXPECT_EQ(x->qp->qp_num, wc.qp_num);
	EXPECT_EQ(-1, verify(x->buf + off, len, seed))
		TH_LOG("%u-byte read differs at %ld", len,
		       verify(x->buf + off, len, seed));
	EXPECT_EQ(-1, all_eq(x->buf + off + len, 64, 0xee));
	/* The responder has nothing to say about a READ. */
	expect_quiet_pair(_metadata, x, y);
}

TEST_F_TIMEOUT(rc, rdma_read, 120)
{
	uint32_t sizes[] = { 1, 8, 1000, 4096, 4097, 64 * KiB, MiB };

	for (unsigned int i = 0; i < ARRAY_SIZE(sizes); i++)
		read_one(_metadata, &self->a, &self->b, 8 * i, 3 + 8 * i,
			 sizes[i], i);
}

TEST_F(rc, rdma_read_zero_length_and_scatter)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge s[3];
	struct ibv_wc wc;

	ASSERT_EQ(0, post_send1(&self->a, IBV_WR_RDMA_READ, 1, 0, 0,
				IBV_SEND_SIGNALED, &self->b, 0, 0));
	WAIT_WC(self->a.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);

	/* One remote range read into three local pieces. */
	fill(self->b.buf, 6000, 3);
	memset(self->a.buf, 0xee, 100000);
	s[0] = (struct ibv_sge){ (uintptr_t)self->a.buf + 10, 1000, self->a.mr->lkey };
	s[1] = (struct ibv_sge){ (uintptr_t)self->a.buf + 50000, 7, self->a.mr->lkey };
	s[2] = (struct ibv_sge){ (uintptr_t)self->a.buf + 70000, 4993, self->a.mr->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 2, .sg_list = s, .num_sge = 3,
				   .opcode = IBV_WR_RDMA_READ,
				   .send_flags = IBV_SEND_SIGNALED };
	wr.wr.rdma.remote_addr = (uintptr_t)self->b.buf;
	wr.wr.rdma.rkey = self->b.mr->rkey;
	ASSERT_EQ(0, ibv_post_send(self->a.qp, &wr, &bad));
	WAIT_WC(self->a.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	EXPECT_EQ(0, memcmp(self->a.buf + 10, self->b.buf, 1000));
	EXPECT_EQ(0, memcmp(self->a.buf + 50000, self->b.buf + 1000, 7));
	EXPECT_EQ(0, memcmp(self->a.buf + 70000, self->b.buf + 1007, 4993));
	EXPECT_EQ(-1, all_eq(self->a.buf + 1010, 64, 0xee));
	EXPECT_EQ(-1, all_eq(self->a.buf + 74993, 64, 0xee));
}

static void atomic_one(struct __test_metadata *_metadata, struct ep *x,
		       struct ep *y, enum ibv_wr_opcode op, size_t roff,
		       uint64_t cmp_add, uint64_t swap, uint64_t *orig)
{
	struct ibv_send_wr wr = {}, *bad;
	struct ibv_sge s = { (uintptr_t)x->buf + 8192, 8, x->mr->lkey };
	struct ibv_wc wc;

	*(volatile uint64_t *)(x->buf + 8192) = 0x5a5a5a5a5a5a5a5aull;
	wr.wr_id = 77;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.atomic.remote_addr = (uintptr_t)y->buf + roff;
	wr.wr.atomic.rkey = y->mr->rkey;
	wr.wr.atomic.compare_add = cmp_add;
	wr.wr.atomic.swap = swap;
	ASSERT_EQ(0, ibv_post_send(x->qp, &wr, &bad));
	WAIT_WC(x->cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, op == IBV_WR_ATOMIC_CMP_AND_SWP ?
		  IBV_WC_COMP_SWAP : IBV_WC_FETCH_ADD);
	EXPECT_EQ(x->qp->qp_num, wc.qp_num);
	*orig = *(volatile uint64_t *)(x->buf + 8192);
}

/* Atomics on 8-byte aligned words: the original value comes back. */
TEST_F(rc, atomics)
{
	volatile uint64_t *t = (volatile uint64_t *)(self->b.buf + 4096 + 8);
	uint64_t orig;

	NEED_CAP(has_atomics(&self->e), "the device reports atomic_cap NONE");
	self->b.buf[4096] = 0x11;	/* neighbours stay untouched */
	self->b.buf[4096 + 16] = 0x22;
	*t = 0x1122334455667788ull;
	/* Compare matches: swapped. */
	atomic_one(_metadata, &self->a, &self->b, IBV_WR_ATOMIC_CMP_AND_SWP,
		   4096 + 8, 0x1122334455667788ull, 0xaabbccddeeff0011ull, &orig);
	EXPECT_EQ(0x1122334455667788ull, orig);
	EXPECT_EQ(0xaabbccddeeff0011ull, *t);
	/* Compare differs: unchanged, the current value returned. */
	atomic_one(_metadata, &self->a, &self->b, IBV_WR_ATOMIC_CMP_AND_SWP,
		   4096 + 8, 0x1122334455667788ull, 5, &orig);
	EXPECT_EQ(0xaabbccddeeff0011ull, orig);
	EXPECT_EQ(0xaabbccddeeff0011ull, *t);
	/* Fetch and add, with a carry across the 32-bit halves and a wrap. */
	*t = 0x00000000ffffffffull;
	atomic_one(_metadata, &self->a, &self->b, IBV_WR_ATOMIC_FETCH_AND_ADD,
		   4096 + 8, 1, 0, &orig);
	EXPECT_EQ(0x00000000ffffffffull, orig);
	EXPECT_EQ(0x0000000100000000ull, *t);
	atomic_one(_metadata, &self->a, &self->b, IBV_WR_ATOMIC_FETCH_AND_ADD,
		   4096 + 8, ~0ull, 0, &orig);
	EXPECT_EQ(0x0000000100000000ull, orig);
	EXPECT_EQ(0x00000000ffffffffull, *t);
	EXPECT_EQ(0x11, self->b.buf[4096]);
	EXPECT_EQ(0x22, self->b.buf[4096 + 16]);
	expect_quiet_pair(_metadata, &self->a, &self->b);
}

/*
 * A misaligned atomic: refused at post time, or the responder NAKs it
 * (IBV_WC_REM_INV_REQ_ERR: the IBA requires 8-byte aligned atomics).
 */
TEST_F(rc, atomic_misaligned)
{
	struct ibv_send_wr wr = {}, *bad;
	struct ibv_sge s = { (uintptr_t)self->a.buf, 8, self->a.mr->lkey };
	struct ibv_wc wc;
	int ret;

	NEED_CAP(has_atomics(&self->e), "the device reports atomic_cap NONE");
	memset(self->b.buf, 0x33, 32);
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.atomic.remote_addr = (uintptr_t)self->b.buf + 4;
	wr.wr.atomic.rkey = self->b.mr->rkey;
	wr.wr.atomic.compare_add = 1;
	ret = ibv_post_send(self->a.qp, &wr, &bad);
	if (!ret) {
		WAIT_WC(self->a.cq, wc);
		EXPECT_NE(IBV_WC_SUCCESS, wc.status);
	}
	EXPECT_EQ(-1, all_eq(self->b.buf, 32, 0x33));
}

/*
 * Fence: a SEND of what an earlier READ brings into the same buffer.
 * Without the fence the SEND could start before the READ response lands.
 */
TEST_F(rc, fence)
{
	struct ibv_send_wr wr[2], *bad;
	struct ibv_sge s[2];
	struct ibv_wc wc;

	for (unsigned int round = 0; round < 3; round++) {
		fill(self->b.buf, 64 * KiB, 60 + round);
		memset(self->a.buf + MiB, 0, 64 * KiB);
		memset(self->b.buf + MiB, 0, 64 * KiB);
		ASSERT_EQ(0, post_recv(&self->b, round, MiB, 64 * KiB));
		wr_init(&wr[0], &s[0], &self->a, IBV_WR_RDMA_READ, 1, MiB,
			64 * KiB, 0, &self->b, 0, 0);
		wr_init(&wr[1], &s[1], &self->a, IBV_WR_SEND, 2, MiB, 64 * KiB,
			IBV_SEND_SIGNALED | IBV_SEND_FENCE, NULL, 0, 0);
		wr[0].next = &wr[1];
		ASSERT_EQ(0, ibv_post_send(self->a.qp, wr, &bad));
		WAIT_WC(self->a.cq, wc);
		ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
		WAIT_WC(self->b.cq, wc);
		ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
		EXPECT_EQ(-1, verify(self->b.buf + MiB, 64 * KiB, 60 + round));
	}
}

/*
 * SEND_WITH_INV and LOCAL_INV.  A user process can only invalidate the
 * rkey of a type 2 memory window (fast-register MRs are kernel-only), so
 * the test needs both IBV_DEVICE_MEM_MGT_EXTENSIONS and type 2 windows.
 */
TEST_F(rc, send_with_inv_and_local_inv)
{
	struct ibv_device_attr *d = &self->e.dev;
	struct ibv_send_wr wr = {}, *bad;
	struct ibv_sge s;
	struct ibv_wc wc;
	struct ibv_mr *mr;
	struct ibv_mw *mw;
	uint32_t rkey = 0;

	NEED_CAP(d->device_cap_flags & IBV_DEVICE_MEM_MGT_EXTENSIONS,
		 "no IBV_DEVICE_MEM_MGT_EXTENSIONS");
	NEED_CAP(d->max_mw && (d->device_cap_flags & (IBV_DEVICE_MEM_WINDOW_TYPE_2A |
						      IBV_DEVICE_MEM_WINDOW_TYPE_2B)),
		 "no type 2 memory windows: no rkey a process may invalidate");
	mr = ibv_reg_mr(self->b.e->pd, self->b.buf, 64 * KiB,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_MW_BIND);
	ASSERT_NE(NULL, mr);
	mw = ibv_alloc_mw(self->b.e->pd, IBV_MW_TYPE_2);
	ASSERT_NE(NULL, mw);

	for (int round = 0; round < 2; round++) {
		/* Bind the window over the first 4 KiB of b's buffer. */
		rkey = ibv_inc_rkey(mw->rkey);
		wr = (struct ibv_send_wr){ .wr_id = 1, .opcode = IBV_WR_BIND_MW,
					   .send_flags = IBV_SEND_SIGNALED };
		wr.bind_mw.mw = mw;
		wr.bind_mw.rkey = rkey;
		wr.bind_mw.bind_info.mr = mr;
		wr.bind_mw.bind_info.addr = (uintptr_t)self->b.buf;
		wr.bind_mw.bind_info.length = 4096;
		wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
		ASSERT_EQ(0, ibv_post_send(self->b.qp, &wr, &bad));
		WAIT_WC(self->b.cq, wc);
		ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_BIND_MW);
		/* The window is now known by its new rkey (the next bind names it). */
		mw->rkey = rkey;

		/* The window's rkey works. */
		fill(self->a.buf, 256, 70 + round);
		wr = (struct ibv_send_wr){};
		s = (struct ibv_sge){ (uintptr_t)self->a.buf, 256, self->a.mr->lkey };
		wr.wr_id = 3;
		wr.sg_list = &s;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = (uintptr_t)self->b.buf + 128;
		wr.wr.rdma.rkey = rkey;
		ASSERT_EQ(0, ibv_post_send(self->a.qp, &wr, &bad));
		WAIT_WC(self->a.cq, wc);
		ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
		EXPECT_EQ(-1, verify(self->b.buf + 128, 256, 70 + round));

		if (round == 0) {
			/* SEND_WITH_INV: the receiver learns the rkey. */
			ASSERT_EQ(0, post_recv(&self->b, 4, 32 * KiB, 64));
			wr = (struct ibv_send_wr){};
			wr.wr_id = 5;
			wr.sg_list = &s;
			wr.num_sge = 1;
			s.length = 16;
			wr.opcode = IBV_WR_SEND_WITH_INV;
			wr.send_flags = IBV_SEND_SIGNALED;
			wr.invalidate_rkey = rkey;
			ASSERT_EQ(0, ibv_post_send(self->a.qp, &wr, &bad));
			WAIT_WC(self->a.cq, wc);
			ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
			WAIT_WC(self->b.cq, wc);
			ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
			/*
			 * rxe: copies the kernel's IB_WC_WITH_INVALIDATE (1 << 2)
			 * into the user CQE, where bit 2 means IBV_WC_IP_CSUM_OK;
			 * IBV_WC_WITH_INV (1 << 3) is never set.
			 */
			EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_INV)
				TH_LOG("wc_flags %#x", wc.wc_flags);
			EXPECT_EQ(rkey, wc.invalidated_rkey);
			EXPECT_EQ(16, wc.byte_len);
		} else {
			/* LOCAL_INV on the window's own side. */
			wr = (struct ibv_send_wr){ .wr_id = 6,
						   .opcode = IBV_WR_LOCAL_INV,
						   .send_flags = IBV_SEND_SIGNALED,
						   .invalidate_rkey = rkey };
			ASSERT_EQ(0, ibv_post_send(self->b.qp, &wr, &bad));
			WAIT_WC(self->b.cq, wc);
			ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_LOCAL_INV);
		}
	}
	/* The invalidated rkey no longer grants access. */
	memset(self->b.buf + 128, 0xee, 256);
	wr = (struct ibv_send_wr){};
	s = (struct ibv_sge){ (uintptr_t)self->a.buf, 256, self->a.mr->lkey };
	wr.wr_id = 7;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)self->b.buf + 128;
	wr.wr.rdma.rkey = rkey;
	ASSERT_EQ(0, ibv_post_send(self->a.qp, &wr, &bad));
	WAIT_WC(self->a.cq, wc);
	ASSERT_WC(wc, IBV_WC_REM_ACCESS_ERR, 0);
	EXPECT_EQ(-1, all_eq(self->b.buf + 128, 256, 0xee));
	EXPECT_EQ(0, ibv_dealloc_mw(mw));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
}

/* Whether debugfs "engine" shows QP @qpn holding a WQE for a retry. */
static int qp_retry_waiting(const char *qpn)
{
	char *s = slurp(dbg_path("engine")), *q, key[32];
	int waiting = 0;

	snprintf(key, sizeof(key), "\nqp %s ", qpn);
	q = s ? strstr(s, key) : NULL;
	if (q && (q = strstr(q, " rnr ")))
		waiting = atoi(q + 5);
	free(s);
	return waiting;
}

/*
 * A request to a destination that does not receive yet (INIT, not RTR) is
 * sent again after the transport timer, as an unanswered request on a wire
 * is: once the destination is ready it succeeds.
 */
TEST_F(dev, send_retried_until_peer_ready)
{
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);
	struct ep a, b;
	struct ibv_wc wc;
	char qpn[16];

	o.timeout = 18;		/* about a second per retry, 7 retries */
	ASSERT_EQ(0, ep_create(&self->e, &o, &a));
	ASSERT_EQ(0, ep_create(&self->e, &o, &b));
	ASSERT_EQ(0, ep_to_init(&b));
	ASSERT_EQ(0, ep_connect(&a, b.qp->qp_num));
	ASSERT_EQ(0, post_recv(&b, 1, 0, 64));
	fill(a.buf, 32, 40);
	ASSERT_EQ(0, post_send1(&a, IBV_WR_SEND, 2, 0, 32, IBV_SEND_SIGNALED,
				NULL, 0, 0));
	/* The first attempt found no receiver: the WQE waits to be resent. */
	snprintf(qpn, sizeof(qpn), "%u", a.qp->qp_num);
	ASSERT_TRUE(wait_until(qp_retry_waiting, qpn, 1, WC_MS))
		TH_LOG("the send was not held for a retry");
	ASSERT_EQ(0, ep_connect(&b, a.qp->qp_num));
	WAIT_WC(a.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
	WAIT_WC(b.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
	EXPECT_EQ(-1, verify(b.buf, 32, 40));
	ep_destroy(&a);
	ep_destroy(&b);
}

/* RNR retries exhausted: no receive posted, rnr_retry = 0. */
TEST_F(dev, rnr_retry_exceeded)
{
	struct qp_opts oa = qp_defaults(&self->e, IBV_QPT_RC);
	struct qp_opts ob = oa;
	struct ibv_send_wr wr[3], *bad;
	struct ibv_sge s[3];
	struct ibv_wc wc;
	struct ep a, b;
	uint64_t rest[] = { 2, 3, 10, 11 };

	oa.rnr_retry = 0;
	ASSERT_EQ(0, pair_make(&self->e, &oa, &ob, &a, &b));
	ASSERT_EQ(0, post_recv(&a, 10, 0, 64));
	ASSERT_EQ(0, post_recv(&a, 11, 64, 64));
	for (int i = 0; i < 3; i++) {
		wr_init(&wr[i], &s[i], &a, IBV_WR_SEND, 1 + i, 0, 32,
			IBV_SEND_SIGNALED, NULL, 0, 0);
		wr[i].next = i < 2 ? &wr[i + 1] : NULL;
	}
	ASSERT_EQ(0, ibv_post_send(a.qp, wr, &bad));
	WAIT_WC(a.cq, wc);
	ASSERT_WC(wc, IBV_WC_RNR_RETRY_EXC_ERR, 0);
	EXPECT_EQ(1, wc.wr_id);
	check_flushed(_metadata, &a, rest, ARRAY_SIZE(rest));
	/* The responder did not fail: RNR is no error of its own. */
	EXPECT_EQ(IBV_QPS_RTS, qp_state(b.qp));
	ep_destroy(&a);
	ep_destroy(&b);
}

/*
 * Remote access errors on WRITE and READ: the requester completes with
 * IBV_WC_REM_ACCESS_ERR, goes to ERR and flushes the rest; the target
 * memory is untouched.
 */
enum rem_case { BAD_RKEY, WRONG_PD, NO_RIGHT, OUT_OF_BOUNDS };

FIXTURE(rem_err) {
	struct env e;
	struct ep a, b;
};

FIXTURE_VARIANT(rem_err) {
	enum ibv_wr_opcode op;
	enum rem_case what;
};

FIXTURE_VARIANT_ADD(rem_err, write_bad_rkey) { IBV_WR_RDMA_WRITE, BAD_RKEY };
FIXTURE_VARIANT_ADD(rem_err, write_wrong_pd) { IBV_WR_RDMA_WRITE, WRONG_PD };
FIXTURE_VARIANT_ADD(rem_err, write_no_right) { IBV_WR_RDMA_WRITE, NO_RIGHT };
FIXTURE_VARIANT_ADD(rem_err, write_out_of_bounds) { IBV_WR_RDMA_WRITE, OUT_OF_BOUNDS };
FIXTURE_VARIANT_ADD(rem_err, read_bad_rkey) { IBV_WR_RDMA_READ, BAD_RKEY };
FIXTURE_VARIANT_ADD(rem_err, read_wrong_pd) { IBV_WR_RDMA_READ, WRONG_PD };
FIXTURE_VARIANT_ADD(rem_err, read_no_right) { IBV_WR_RDMA_READ, NO_RIGHT };
FIXTURE_VARIANT_ADD(rem_err, read_out_of_bounds) { IBV_WR_RDMA_READ, OUT_OF_BOUNDS };

FIXTURE_SETUP(rem_err)
{
	ASSERT_EQ(0, env_open(&self->e));
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);

	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &self->a, &self->b));
}

FIXTURE_TEARDOWN(rem_err)
{
	ep_destroy(&self->a);
	ep_destroy(&self->b);
	env_close(&self->e);
}

TEST_F(rem_err, requester_error)
{
	struct ibv_pd *pd2 = NULL;
	struct ibv_mr *mr2 = NULL;
	uint8_t *target = self->b.buf + MiB;
	uint64_t raddr = (uintptr_t)target;
	uint32_t rkey = 0, len = 64;
	struct ibv_send_wr wr[2], *bad;
	struct ibv_sge s[2];
	struct ibv_wc wc;
	uint64_t rest[] = { 2, 10 };

	switch (variant->what) {
	case BAD_RKEY:
		rkey = self->b.mr->rkey ^ 0x00ffff00;
		break;
	case WRONG_PD:
		pd2 = ibv_alloc_pd(self->e.ctx);
		ASSERT_NE(NULL, pd2);
		mr2 = ibv_reg_mr(pd2, target, 4096, IBV_ACCESS_LOCAL_WRITE |
				 IBV_ACCESS_REMOTE_WRITE |
				 IBV_ACCESS_REMOTE_READ);
		break;
	case NO_RIGHT:
		/* The other remote right, not the one the operation needs. */
		mr2 = ibv_reg_mr(self->e.pd, target, 4096,
				 IBV_ACCESS_LOCAL_WRITE |
				 (variant->op == IBV_WR_RDMA_WRITE ?
				  IBV_ACCESS_REMOTE_READ : IBV_ACCESS_REMOTE_WRITE));
		break;
	case OUT_OF_BOUNDS:
		mr2 = ibv_reg_mr(self->e.pd, target, 4096,
				 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				 IBV_ACCESS_REMOTE_READ);
		raddr += 4096 - 8;	/* 56 bytes past the end */
		break;
	}
	if (variant->what != BAD_RKEY) {
		ASSERT_NE(NULL, mr2);
		rkey = mr2->rkey;
	}
	memset(target, 0xee, 8192);
	fill(self->a.buf, len, 1);
	memset(self->a.buf + 4096, 0xcc, len);
	ASSERT_EQ(0, post_recv(&self->a, 10, 8192, 64));
	wr_init(&wr[0], &s[0], &self->a, variant->op, 1,
		variant->op == IBV_WR_RDMA_READ ? 4096 : 0, len,
		IBV_SEND_SIGNALED, NULL, 0, 0);
	wr[0].wr.rdma.remote_addr = raddr;
	wr[0].wr.rdma.rkey = rkey;
	wr_init(&wr[1], &s[1], &self->a, IBV_WR_SEND, 2, 0, 8,
		IBV_SEND_SIGNALED, NULL, 0, 0);
	wr[0].next = &wr[1];
	ASSERT_EQ(0, ibv_post_send(self->a.qp, wr, &bad));
	WAIT_WC(self->a.cq, wc);
	ASSERT_WC(wc, IBV_WC_REM_ACCESS_ERR, 0);
	EXPECT_EQ(1, wc.wr_id);
	EXPECT_EQ(self->a.qp->qp_num, wc.qp_num);
	check_flushed(_metadata, &self->a, rest, ARRAY_SIZE(rest));
	EXPECT_EQ(-1, all_eq(target, 8192, 0xee));
	if (mr2)
		EXPECT_EQ(0, ibv_dereg_mr(mr2));
	if (pd2)
		EXPECT_EQ(0, ibv_dealloc_pd(pd2));
}

/* ================= UC: no READ, no atomics ================= */

/*
 * The IBA's UC service carries SEND and RDMA WRITE only.  READ and
 * atomics on UC are refused at post time, or complete in error; nothing
 * reaches the peer either way.
 */
static void refused_op(struct __test_metadata *_metadata, struct ep *x,
		       struct ep *y, enum ibv_wr_opcode op)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge s;
	struct ibv_wc wc;
	int ret;

	memset(y->buf, 0x44, 64);
	fill(x->buf, 64, 5);
	wr_init(&wr, &s, x, op, 1, 0,
		op == IBV_WR_ATOMIC_CMP_AND_SWP ||
		op == IBV_WR_ATOMIC_FETCH_AND_ADD ? 8 : 64,
		IBV_SEND_SIGNALED, y, 0, 0);
	if (op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = (uintptr_t)y->buf;
		wr.wr.atomic.rkey = y->mr->rkey;
		wr.wr.atomic.compare_add = 0x4444444444444444ull;
		wr.wr.atomic.swap = 1;
	}
	ret = ibv_post_send(x->qp, &wr, &bad);
	if (ret) {
		EXPECT_EQ(&wr, bad);
	} else {
		WAIT_WC(x->cq, wc);
		EXPECT_NE(IBV_WC_SUCCESS, wc.status)
			TH_LOG("opcode %d completed successfully on QP type %d",
			       op, x->o.type);
		TH_LOG("opcode %d on QP type %d: completion %s", op, x->o.type,
		       ibv_wc_status_str(wc.status));
	}
	/* Refused at post time, x is as it was: a sentinel follows. */
	if (ret)
		expect_quiet_pair(_metadata, x, y);
	else
		ASSERT_QUIET(y->cq);	/* x may be in error: nothing follows */
	EXPECT_EQ(-1, all_eq(y->buf, 64, 0x44));
}

TEST_F(dev, uc_read_refused)
{
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_UC);
	struct ep a, b;

	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &a, &b));
	refused_op(_metadata, &a, &b, IBV_WR_RDMA_READ);
	ep_destroy(&a);
	ep_destroy(&b);
}

TEST_F(dev, uc_atomics_refused)
{
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_UC);
	struct ep a, b;

	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &a, &b));
	refused_op(_metadata, &a, &b, IBV_WR_ATOMIC_FETCH_AND_ADD);
	ep_destroy(&a);
	ep_destroy(&b);
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &a, &b));
	refused_op(_metadata, &a, &b, IBV_WR_ATOMIC_CMP_AND_SWP);
	ep_destroy(&a);
	ep_destroy(&b);
}

/* UD: only SEND (with or without immediate). */
TEST_F(dev, ud_rdma_refused)
{
	enum ibv_wr_opcode ops[] = { IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ,
				     IBV_WR_ATOMIC_FETCH_AND_ADD };
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_UD);

	for (unsigned int i = 0; i < ARRAY_SIZE(ops); i++) {
		struct ep a, b;

		ASSERT_EQ(0, pair_make(&self->e, &o, &o, &a, &b));
		refused_op(_metadata, &a, &b, ops[i]);
		ep_destroy(&a);
		ep_destroy(&b);
	}
}

/* ================= UD ================= */

TEST_F(ud, send)
{
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu);
	uint32_t sizes[] = { 0, 1, 100, mtu };

	for (unsigned int i = 0; i < ARRAY_SIZE(sizes); i++) {
		send_one(_metadata, &self->a, &self->b,
			 i & 1 ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND, 0,
			 8192 * i, sizes[i], i, 0);
		check_grh(_metadata, self->b.buf + 8192 * i, &self->a.e->gid,
			  &self->b.e->gid);
	}
	send_one(_metadata, &self->b, &self->a, IBV_WR_SEND_WITH_IMM, 0, 0,
		 500, 9, 0);
}

/* A wrong Q_Key: silently dropped; the next receive gets the next message. */
TEST_F(ud, qkey_mismatch)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge s;
	struct ibv_wc wc;

	ASSERT_EQ(0, post_recv(&self->b, 1, 0, 40 + 256));
	fill(self->a.buf, 64, 1);
	wr_init(&wr, &s, &self->a, IBV_WR_SEND, 2, 0, 64, IBV_SEND_SIGNALED,
		NULL, 0, 0);
	wr.wr.ud.remote_qkey = 0x22222222;
	ASSERT_EQ(0, ibv_post_send(self->a.qp, &wr, &bad));
	/* UD requesters complete once the message is sent. */
	WAIT_WC(self->a.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
	/*
	 * The right Q_Key: delivered into the receive still posted, the first
	 * completion (the sentinel: srnic delivers one QP's datagrams to
	 * another in order).
	 */
	fill(self->a.buf + 4096, 32, 2);
	wr_init(&wr, &s, &self->a, IBV_WR_SEND, 3, 4096, 32, IBV_SEND_SIGNALED,
		NULL, 0, 0);
	ASSERT_EQ(0, ibv_post_send(self->a.qp, &wr, &bad));
	WAIT_WC(self->a.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
	WAIT_WC(self->b.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
	EXPECT_EQ(1, wc.wr_id);
	EXPECT_EQ(40 + 32, wc.byte_len);
	EXPECT_EQ(-1, verify(self->b.buf + 40, 32, 2));
	/* The QPs are fine: a Q_Key violation is no QP error. */
	EXPECT_EQ(IBV_QPS_RTS, qp_state(self->b.qp));
}

/*
 * Larger than the MTU: C10-93.1.1 -- no packet is emitted, and the CI
 * generates no error for it.  So: refused at post time, or a successful
 * send completion, and nothing delivered.
 */
TEST_F(ud, larger_than_mtu)
{
	uint32_t mtu = mtu_bytes(self->e.port.active_mtu);
	struct ibv_wc wc;
	int ret;

	ASSERT_EQ(0, post_recv(&self->b, 1, 0, 40 + 2 * mtu));
	ret = post_send1(&self->a, IBV_WR_SEND, 2, 0, mtu + 1,
			 IBV_SEND_SIGNALED, NULL, 0, 0);
	if (!ret) {
		WAIT_WC(self->a.cq, wc);
		EXPECT_EQ(IBV_WC_SUCCESS, wc.status)
			TH_LOG("C10-93.1.1: no error for an oversized UD message; got %s",
			       ibv_wc_status_str(wc.status));
	}
	/* An MTU-sized one goes through, into the receive still posted: the sentinel. */
	fill(self->a.buf + 8192, mtu, 3);
	ASSERT_EQ(0, post_send1(&self->a, IBV_WR_SEND, 3, 8192, mtu,
				IBV_SEND_SIGNALED, NULL, 0, 0));
	WAIT_WC(self->a.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
	WAIT_WC(self->b.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
	EXPECT_EQ(1, wc.wr_id);
	EXPECT_EQ(40 + mtu, wc.byte_len);
	EXPECT_EQ(-1, verify(self->b.buf + 40, mtu, 3));
}

/* One sender of ud.receives_complete_in_queue_order, on its own thread. */
struct ud_sender {
	struct ep x;
	uint32_t n, long_every, mtu;	/* long_every: 0, or one in that many too long */
	atomic_int *finished;
	char err[128];
};

static void *ud_sender_main(void *arg)
{
	struct ud_sender *u = arg;
	struct ibv_wc wc;

	for (uint32_t i = 0; i < u->n; i++) {
		uint32_t len = u->long_every && i % u->long_every == 0 ? u->mtu : 64;

		if (post_send1(&u->x, IBV_WR_SEND, i, 0, len, IBV_SEND_SIGNALED, NULL, 0, 0) ||
		    poll_one(u->x.cq, &wc, WC_MS) != 1 || wc.status != IBV_WC_SUCCESS) {
			snprintf(u->err, sizeof(u->err), "datagram %u not sent", i);
			break;
		}
	}
	atomic_fetch_add(u->finished, 1);
	return NULL;
}

/*
 * Three senders' datagrams, each from its own thread and QP, into one UD
 * QP's receive queue, one in four of one sender's longer than its buffers
 * (dropped, its WQE kept for the next): the receives complete in the order
 * they were posted, one after another, whichever datagram each holds, up
 * to a sentinel sent after the senders' last.  Senders posting in their
 * own doorbell calls, or on other engines, deliver at once.  (The old
 * responder took a WQE, placed the data and completed it without holding
 * the queue between: a later WQE could complete first.)
 */
TEST_F_TIMEOUT(ud, receives_complete_in_queue_order, 240)
{
	enum { NS = 3, RQ = 512, SLOT = 512, BUF = 40 + 256 };
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_UD);
	uint32_t n = (uint32_t)fuzz_budget(8000), next = 0;
	/* Static: a sender still running after a failed assertion writes them. */
	static struct ud_sender s[NS];
	static atomic_int finished;
	uint64_t end = 0;
	pthread_t th[NS];
	struct ibv_wc wc;
	bool seen = false;
	struct ep r;

	atomic_store(&finished, 0);
	/* The long datagrams, an MTU, exceed the buffers. */
	ASSERT_LT(BUF - 40, mtu_bytes(self->e.port.active_mtu));
	o.recv_wr = RQ;
	o.cqe = 2 * RQ;
	ASSERT_EQ(0, ep_create(&self->e, &o, &r));
	ASSERT_EQ(0, ep_connect(&r, self->a.qp->qp_num));
	for (uint32_t i = 0; i < RQ; i++)
		ASSERT_EQ(0, post_recv(&r, i, (size_t)i * SLOT, BUF));
	for (int k = 0; k < NS; k++) {
		memset(&s[k], 0, sizeof(s[k]));
		s[k].n = n;
		s[k].mtu = mtu_bytes(self->e.port.active_mtu);
		s[k].long_every = k ? 0 : 4;
		s[k].finished = &finished;
		o = qp_defaults(&self->e, IBV_QPT_UD);
		ASSERT_EQ(0, ep_create(&self->e, &o, &s[k].x));
		s[k].x.dgid = &r.e->gid;
		ASSERT_EQ(0, ep_connect(&s[k].x, r.qp->qp_num));
		ASSERT_EQ(0, pthread_create(&th[k], NULL, ud_sender_main, &s[k]));
	}
	while (!seen) {
		int m = ibv_poll_cq(r.cq, 1, &wc);

		ASSERT_LE(0, m);
		if (!m) {
			if (!end && atomic_load(&finished) == NS) {
				ASSERT_EQ(0, post_send1(&s[0].x, IBV_WR_SEND_WITH_IMM, SENTINEL_ID,
							0, 0, IBV_SEND_SIGNALED, NULL, 0,
							SENTINEL_ID));
				end = now_ms() + WC_MS;
			}
			ASSERT_TRUE(!end || now_ms() < end) TH_LOG("no sentinel");
			continue;
		}
		ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
		ASSERT_EQ(next, wc.wr_id)
			TH_LOG("after %u receives in order, WQE %llu completed", next,
			       (unsigned long long)wc.wr_id);
		seen = wc.wc_flags & IBV_WC_WITH_IMM;
		if (seen) {
			EXPECT_EQ(SENTINEL_ID, ntohl(wc.imm_data));
			EXPECT_NE(0u, end) TH_LOG("a sentinel before it was sent");
			break;
		}
		ASSERT_EQ(40u + 64, wc.byte_len);
		ASSERT_EQ(0, post_recv(&r, next + RQ, (size_t)(next % RQ) * SLOT, BUF));
		next++;
	}
	TH_LOG("%u receives in order, of %u datagrams that fit", next, NS * n - (n + 3) / 4);
	for (int k = 0; k < NS; k++) {
		pthread_join(th[k], NULL);
		EXPECT_STREQ("", s[k].err);
		ep_destroy(&s[k].x);
	}
	ep_destroy(&r);
}

/* ================= SRQ ================= */

/* Receives from one SRQ shared by two QPs, fed by two senders. */
TEST_F(dev, srq_shared)
{
	enum { PER = 12, SZ = 512 };
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 64, .max_sge = 2 } };
	struct ibv_srq *srq = ibv_create_srq(env_of_peer(&self->e)->pd, &sa);
	struct qp_opts os = qp_defaults(&self->e, IBV_QPT_RC);
	struct qp_opts o = os;
	struct ep a1, a2, b1, b2;
	int next[2] = { 0, 0 };
	struct ibv_wc wc;

	ASSERT_NE(NULL, srq) TH_LOG("create_srq: %s", strerror(errno));
	os.srq = srq;
	ASSERT_EQ(0, pair_make(&self->e, &o, &os, &a1, &b1));
	ASSERT_EQ(0, pair_make(&self->e, &o, &os, &a2, &b2));
	/* Receive buffers in b1's buffer; the SRQ WRs name b1's MR. */
	for (int i = 0; i < 2 * PER; i++)
		ASSERT_EQ(0, post_recv(&b1, 100 + i, i * SZ, SZ));
	for (int i = 0; i < PER; i++) {
		fill(a1.buf + i * SZ, SZ, 1000 + i);
		fill(a2.buf + i * SZ, SZ, 2000 + i);
		ASSERT_EQ(0, post_send1(&a1, IBV_WR_SEND_WITH_IMM, i, i * SZ,
					SZ, IBV_SEND_SIGNALED, NULL, 0, 1000 + i));
		ASSERT_EQ(0, post_send1(&a2, IBV_WR_SEND_WITH_IMM, i, i * SZ,
					SZ, IBV_SEND_SIGNALED, NULL, 0, 2000 + i));
	}
	for (int k = 0; k < 2 * PER; k++) {
		struct ep *rx = k % 2 ? &b2 : &b1;
		int from;

		/* Completions come on each QP's own CQ. */
		if (poll_one(rx->cq, &wc, 0) != 1) {
			rx = k % 2 ? &b1 : &b2;
			if (poll_one(rx->cq, &wc, 0) != 1) {
				rx = &b1;
				struct ep *alt = &b2;
				uint64_t end = now_ms() + WC_MS;
				int got = 0;

				while (!got && now_ms() < end) {
					if (poll_one(rx->cq, &wc, 1) == 1)
						got = 1;
					else if (poll_one(alt->cq, &wc, 1) == 1)
						got = 1, rx = alt;
				}
				ASSERT_TRUE(got) TH_LOG("%d of %d received", k, 2 * PER);
			}
		}
		ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
		EXPECT_EQ(rx->qp->qp_num, wc.qp_num);
		ASSERT_GE(wc.wr_id, 100u);
		ASSERT_LT(wc.wr_id, 100u + 2 * PER);
		from = rx == &b1 ? 0 : 1;
		/* Each sender's messages in order. */
		EXPECT_EQ((uint32_t)(1000 * (from + 1) + next[from]),
			  ntohl(wc.imm_data));
		EXPECT_EQ(-1, verify(b1.buf + (wc.wr_id - 100) * SZ, SZ,
				     ntohl(wc.imm_data)));
		next[from]++;
	}
	EXPECT_EQ(PER, next[0]);
	EXPECT_EQ(PER, next[1]);
	ep_destroy(&a1);
	ep_destroy(&a2);
	ep_destroy(&b1);
	ep_destroy(&b2);
	EXPECT_EQ(0, ibv_destroy_srq(srq));
}

/* The SRQ limit: an event when the posted receives drop below it. */
TEST_F(dev, srq_limit_event)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 32, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(env_of_peer(&self->e)->pd, &sa);
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC), os = o;
	struct ibv_srq_attr attr = { .srq_limit = 4 };
	struct ibv_wc wc;
	struct ep a, b;

	ASSERT_NE(NULL, srq);
	os.srq = srq;
	ASSERT_EQ(0, pair_make(&self->e, &o, &os, &a, &b));
	for (int i = 0; i < 8; i++)
		ASSERT_EQ(0, post_recv(&b, i, i * 64, 64));
	ASSERT_EQ(0, ibv_modify_srq(srq, &attr, IBV_SRQ_LIMIT));
	for (int i = 0; i < 5; i++) {
		ASSERT_EQ(0, post_send1(&a, IBV_WR_SEND, i, 0, 8,
					IBV_SEND_SIGNALED, NULL, 0, 0));
		WAIT_WC(b.cq, wc);
		ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
	}
	EXPECT_TRUE(wait_async_event(env_of_peer(&self->e)->ctx, IBV_EVENT_SRQ_LIMIT_REACHED,
				     WC_MS));
	/* The limit disarms itself once reached. */
	ASSERT_EQ(0, ibv_query_srq(srq, &attr));
	EXPECT_EQ(0, attr.srq_limit);
	ep_destroy(&a);
	ep_destroy(&b);
	EXPECT_EQ(0, ibv_destroy_srq(srq));
}

/*
 * A QP on an SRQ that goes to ERR: IBV_EVENT_QP_LAST_WQE_REACHED
 * (the IBA's "Last WQE Reached" affiliated event, required for a QP
 * associated with an SRQ that enters the Error state).
 */
TEST_F(dev, srq_last_wqe_reached)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(env_of_peer(&self->e)->pd, &sa);
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC), os = o;
	struct pollfd pfd = { .fd = env_of_peer(&self->e)->ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	struct ep a, b;
	int found = 0;

	static uint8_t rbuf[4096];
	struct ibv_mr *rmr = ibv_reg_mr(env_of_peer(&self->e)->pd, rbuf, sizeof(rbuf),
					IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge rs = { (uintptr_t)rbuf, 64, rmr ? rmr->lkey : 0 };
	struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &rs, .num_sge = 1 };
	struct ibv_recv_wr *rbad;

	ASSERT_NE(NULL, srq);
	ASSERT_NE(NULL, rmr);
	os.srq = srq;
	ASSERT_EQ(0, pair_make(&self->e, &o, &os, &a, &b));
	/* The SRQ's receive buffer outlives the QPs. */
	ASSERT_EQ(0, ibv_post_srq_recv(srq, &rwr, &rbad));
	ASSERT_EQ(0, to_err(b.qp));
	uint64_t end = now_ms() + WC_MS;

	while (!found && now_ms() < end) {
		if (poll(&pfd, 1, 100) != 1)
			continue;
		ASSERT_EQ(0, ibv_get_async_event(env_of_peer(&self->e)->ctx, &ev));
		found = ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED &&
			ev.element.qp == b.qp;
		ibv_ack_async_event(&ev);
	}
	EXPECT_TRUE(found) TH_LOG("no IBV_EVENT_QP_LAST_WQE_REACHED");
	/* The SRQ's receive is not the QP's to flush: it is still there. */
	ep_destroy(&b);
	ep_destroy(&a);
	ASSERT_EQ(0, pair_make(&self->e, &o, &os, &a, &b));
	struct ibv_wc wc;

	ASSERT_EQ(0, post_send1(&a, IBV_WR_SEND, 2, 0, 8, IBV_SEND_SIGNALED,
				NULL, 0, 0));
	WAIT_WC(b.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
	EXPECT_EQ(1, wc.wr_id);
	EXPECT_EQ(8, wc.byte_len);
	ep_destroy(&a);
	ep_destroy(&b);
	EXPECT_EQ(0, ibv_destroy_srq(srq));
	EXPECT_EQ(0, ibv_dereg_mr(rmr));
}

/* ================= what the engine caches ================= */

/*
 * A QP's engine keeps the MRs its WQEs named last: once deregistered, an
 * MR's keys fail at once, the rkey with REM_ACCESS_ERR and the lkey with
 * LOC_PROT_ERR, even right after a WQE that used them and with the same
 * memory registered again (nothing is written there).
 */
TEST_F(dev, deregistered_keys_fail_right_after_use)
{
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	uint8_t *mem = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_sge from_a, from_mem;
	struct ibv_mr *mr, *again;
	struct ep a, b;
	uint32_t key;

	ASSERT_NE(MAP_FAILED, mem);
	/* The remote side. */
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &a, &b));
	mr = ibv_reg_mr(b.e->pd, mem, 4096, access);
	ASSERT_NE(NULL, mr);
	key = mr->rkey;
	from_a = (struct ibv_sge){ (uintptr_t)a.buf, 64, a.mr->lkey };
	fill(a.buf, 64, 1);
	ASSERT_EQ(IBV_WC_SUCCESS,
		  rdma_op_sge(&a, IBV_WR_RDMA_WRITE, &from_a, (uintptr_t)mem, key, 0));
	EXPECT_EQ(-1, verify(mem, 64, 1));
	ASSERT_EQ(0, ibv_dereg_mr(mr));
	again = ibv_reg_mr(b.e->pd, mem, 4096, access);
	ASSERT_NE(NULL, again);
	memset(mem, 0, 64);
	fill(a.buf, 64, 2);
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  rdma_op_sge(&a, IBV_WR_RDMA_WRITE, &from_a, (uintptr_t)mem, key, 0));
	EXPECT_EQ(-1, all_eq(mem, 64, 0));
	EXPECT_EQ(0, ibv_dereg_mr(again));
	ep_destroy(&a);
	ep_destroy(&b);

	/* The local side. */
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &a, &b));
	mr = ibv_reg_mr(self->e.pd, mem + 4096, 4096, access);
	ASSERT_NE(NULL, mr);
	key = mr->lkey;
	from_mem = (struct ibv_sge){ (uintptr_t)mem + 4096, 64, key };
	fill(mem + 4096, 64, 3);
	ASSERT_EQ(IBV_WC_SUCCESS,
		  rdma_op_sge(&a, IBV_WR_RDMA_WRITE, &from_mem, (uintptr_t)b.buf, b.mr->rkey, 0));
	EXPECT_EQ(-1, verify(b.buf, 64, 3));
	ASSERT_EQ(0, ibv_dereg_mr(mr));
	again = ibv_reg_mr(self->e.pd, mem + 4096, 4096, access);
	ASSERT_NE(NULL, again);
	memset(b.buf, 0, 64);
	EXPECT_EQ(IBV_WC_LOC_PROT_ERR,
		  rdma_op_sge(&a, IBV_WR_RDMA_WRITE, &from_mem, (uintptr_t)b.buf, b.mr->rkey, 0));
	EXPECT_EQ(-1, all_eq(b.buf, 64, 0));
	EXPECT_EQ(0, ibv_dereg_mr(again));
	ep_destroy(&a);
	ep_destroy(&b);
	munmap(mem, 2 * 4096);
}

/*
 * A QP's engine keeps its connected peer: once that QP is destroyed, the
 * next WQE finds no one (retries, then RETRY_EXC_ERR), even with a new QP,
 * likely at the same address, connected back to the sender, which must
 * not receive the write.
 */
TEST_F(dev, destroyed_peer_is_not_reached_after_use)
{
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);
	struct ep a, b, c;
	struct ibv_wc wc;

	o.retry_cnt = 1;
	o.timeout = 1;
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &a, &b));
	fill(a.buf, 64, 4);
	ASSERT_EQ(0, post_send1(&a, IBV_WR_RDMA_WRITE, 1, 0, 64,
				IBV_SEND_SIGNALED, &b, 0, 0));
	WAIT_WC(a.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	EXPECT_EQ(-1, verify(b.buf, 64, 4));

	/* a still names b's QPN; c answers to a's. */
	ibv_destroy_qp(b.qp);
	b.qp = NULL;
	ASSERT_EQ(0, ep_create(&self->e, &o, &c));
	ASSERT_EQ(0, ep_connect(&c, a.qp->qp_num));
	memset(c.buf, 0, 64);
	ASSERT_EQ(0, post_send1(&a, IBV_WR_RDMA_WRITE, 2, 0, 64,
				IBV_SEND_SIGNALED, &c, 0, 0));
	WAIT_WC(a.cq, wc);
	ASSERT_WC(wc, IBV_WC_RETRY_EXC_ERR, IBV_WC_RDMA_WRITE);
	EXPECT_EQ(-1, all_eq(c.buf, 64, 0));
	ep_destroy(&c);
	ep_destroy(&a);
	ep_destroy(&b);
}

/* ================= post-time errors ================= */

/*
 * A full send queue: the WR that does not fit fails with ENOMEM, bad_wr
 * names it, and nothing after it is posted.  The peer has no receive, so
 * (rnr_retry 7 = forever) every posted SEND stays outstanding until we
 * post receives; then exactly the posted ones arrive, in order.
 */
TEST_F(dev, send_queue_full)
{
	struct qp_opts oa = qp_defaults(&self->e, IBV_QPT_RC), ob = oa;
	static struct ibv_send_wr wr[600];
	static struct ibv_sge s[600];
	struct ibv_send_wr *bad = NULL;
	struct ibv_wc wc;
	struct ep a, b;
	uint32_t cap;
	int ret;

	oa.send_wr = 16;
	ob.recv_wr = 512;
	ASSERT_EQ(0, pair_make(&self->e, &oa, &ob, &a, &b));
	cap = a.cap.max_send_wr;
	ASSERT_GE(cap, 16u);
	ASSERT_LE(cap + 3, ARRAY_SIZE(wr));
	ASSERT_LE(cap, b.cap.max_recv_wr);
	for (uint32_t i = 0; i < cap + 3; i++) {
		wr_init(&wr[i], &s[i], &a, IBV_WR_SEND_WITH_IMM, i, 0, 0,
			IBV_SEND_SIGNALED, NULL, 0, i);
		wr[i].next = i + 1 < cap + 3 ? &wr[i + 1] : NULL;
	}
	ret = ibv_post_send(a.qp, wr, &bad);
	EXPECT_EQ(ENOMEM, ret);
	ASSERT_EQ(&wr[cap], bad) TH_LOG("bad_wr is WR %ld, the SQ holds %u",
					bad ? (long)(bad - wr) : -1L, cap);
	for (uint32_t i = 0; i < cap + 3; i++)
		ASSERT_EQ(0, post_recv(&b, i, 0, 0));
	for (uint32_t i = 0; i < cap; i++) {
		WAIT_WC(b.cq, wc);
		ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
		EXPECT_EQ(i, ntohl(wc.imm_data));
	}
	for (uint32_t i = 0; i < cap; i++) {
		WAIT_WC(a.cq, wc);
		ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
		EXPECT_EQ(i, wc.wr_id);
	}
	/* Nothing of what did not fit was sent (b's spare receives take the sentinel). */
	expect_quiet_pair(_metadata, &a, &b);
	ep_destroy(&a);
	ep_destroy(&b);
}

/* Too many SGEs, inline too long: EINVAL, bad_wr set, the QP unharmed. */
TEST_F(conn, post_invalid_wr)
{
	struct ibv_sge s[64];
	struct ibv_send_wr wr[3], *bad;
	struct ibv_recv_wr rwr, *rbad;
	uint32_t nsge = self->a.cap.max_send_sge + 1;
	struct ibv_wc wc;

	ASSERT_LE(nsge, ARRAY_SIZE(s));
	for (uint32_t i = 0; i < ARRAY_SIZE(s); i++)
		s[i] = (struct ibv_sge){ (uintptr_t)self->a.buf + i * 8, 8,
					 self->a.mr->lkey };
	/*
	 * A list: good, too many SGEs, good.  One receive: a third WR posted
	 * by mistake would land in send_one()'s receive below (RC), or
	 * complete on a's CQ (UC), and be seen.
	 */
	ASSERT_EQ(0, post_recv(&self->b, 1, 0, 4096));
	for (int i = 0; i < 3; i++)
		wr[i] = (struct ibv_send_wr){ .wr_id = 10 + i, .sg_list = s,
					      .num_sge = i == 1 ? nsge : 1,
					      .opcode = IBV_WR_SEND,
					      .send_flags = IBV_SEND_SIGNALED,
					      .next = i < 2 ? &wr[i + 1] : NULL };
	bad = NULL;
	EXPECT_EQ(EINVAL, ibv_post_send(self->a.qp, wr, &bad));
	EXPECT_EQ(&wr[1], bad);
	WAIT_WC(self->a.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
	EXPECT_EQ(10, wc.wr_id);
	WAIT_WC(self->b.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
	expect_quiet_pair(_metadata, &self->a, &self->b);

	/* Inline beyond max_inline_data. */
	uint32_t max = self->a.cap.max_inline_data;
	struct ibv_sge big = { (uintptr_t)self->a.buf, max + 1, self->a.mr->lkey };

	wr[0] = (struct ibv_send_wr){ .wr_id = 20, .sg_list = &big, .num_sge = 1,
				      .opcode = IBV_WR_SEND,
				      .send_flags = IBV_SEND_SIGNALED |
						    IBV_SEND_INLINE };
	bad = NULL;
	EXPECT_EQ(EINVAL, ibv_post_send(self->a.qp, wr, &bad));
	EXPECT_EQ(&wr[0], bad);
	/* Too many receive SGEs. */
	rwr = (struct ibv_recv_wr){ .wr_id = 30, .sg_list = s,
				    .num_sge = self->b.cap.max_recv_sge + 1 };
	ASSERT_LE(rwr.num_sge, (int)ARRAY_SIZE(s));
	rbad = NULL;
	EXPECT_EQ(EINVAL, ibv_post_recv(self->b.qp, &rwr, &rbad));
	EXPECT_EQ(&rwr, rbad);
	/* None of that harmed the QPs. */
	EXPECT_EQ(IBV_QPS_RTS, qp_state(self->a.qp));
	send_one(_metadata, &self->a, &self->b, IBV_WR_SEND, 0, 8192, 100, 1, 0);
	expect_quiet_pair(_metadata, &self->a, &self->b);
}

/* ================= CQ overrun ================= */

static int wait_async(struct ibv_context *ctx, enum ibv_event_type type,
		      struct ibv_async_event *out, int ms)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	uint64_t end = now_ms() + ms;

	while (now_ms() < end) {
		struct ibv_async_event ev;

		if (poll(&pfd, 1, 100) != 1)
			continue;
		if (ibv_get_async_event(ctx, &ev))
			return 0;
		*out = ev;
		ibv_ack_async_event(&ev);
		if (ev.event_type == type)
			return 1;
	}
	return 0;
}

/* Makes a's CQ (of 4) overflow with a.cq->cqe + 4 send completions. */
static void overrun(struct __test_metadata *_metadata, struct env *e,
		    struct ep *a, struct ep *b)
{
	struct qp_opts oa = qp_defaults(e, IBV_QPT_RC), ob = oa;
	int n;

	oa.cqe = 4;
	oa.send_wr = 128;
	ob.recv_wr = 128;
	ASSERT_EQ(0, pair_make(e, &oa, &ob, a, b));
	n = a->cq->cqe + 4;
	ASSERT_LE(n, (int)a->cap.max_send_wr) TH_LOG("CQ of %d", a->cq->cqe);
	for (int i = 0; i < n; i++) {
		ASSERT_EQ(0, post_recv(b, i, 0, 64));
		ASSERT_EQ(0, post_send1(a, IBV_WR_SEND, i, 0, 8,
					IBV_SEND_SIGNALED, NULL, 0, 0));
	}
}

/*
 * More completions than the CQ holds: IBV_EVENT_CQ_ERR (the IBA's "CQ
 * Error" affiliated event).
 * The process is fine, and so are other queues.
 */
TEST_F(dev, cq_overrun)
{
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);
	struct ibv_async_event ev;
	struct ep a, b, c, d;

	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &c, &d));
	overrun(_metadata, &self->e, &a, &b);
	ASSERT_EQ(1, wait_async(self->e.ctx, IBV_EVENT_CQ_ERR, &ev, WC_MS))
		TH_LOG("no IBV_EVENT_CQ_ERR on a CQ of %d", a.cq->cqe);
	EXPECT_EQ(a.cq, ev.element.cq);
	/* Another pair, other CQs: unharmed. */
	send_one(_metadata, &c, &d, IBV_WR_SEND, 0, 0, 4096, 1, 0);
	write_one(_metadata, &d, &c, IBV_WR_RDMA_WRITE, 0, 0, 4096, 2);
	ep_destroy(&a);
	ep_destroy(&b);
	/* And after the overrun queues are gone, still. */
	send_one(_metadata, &c, &d, IBV_WR_SEND, 0, 0, 100, 3, 0);
	ep_destroy(&c);
	ep_destroy(&d);
}

/*
 * After the overrun, the QP that tries to complete into the CQ in error has
 * a Local Work Queue Catastrophic Error (IBA affiliated event): IBV_EVENT_QP_FATAL,
 * and it is in ERR.
 * rxe: never raises QP_FATAL; its QP carries on (it drops the completions).
 */
TEST_F(dev, cq_overrun_qp_fatal)
{
	struct pollfd pfd = { .fd = self->e.ctx->async_fd, .events = POLLIN };
	int cq_err = 0, qp_fatal = 0;
	uint64_t end;
	struct ep a, b;

	overrun(_metadata, &self->e, &a, &b);
	end = now_ms() + WC_MS;
	while (!(cq_err && qp_fatal) && now_ms() < end) {
		struct ibv_async_event ev;

		if (poll(&pfd, 1, 100) != 1)
			continue;
		ASSERT_EQ(0, ibv_get_async_event(self->e.ctx, &ev));
		if (ev.event_type == IBV_EVENT_CQ_ERR && ev.element.cq == a.cq)
			cq_err = 1;
		if (ev.event_type == IBV_EVENT_QP_FATAL && ev.element.qp == a.qp)
			qp_fatal = 1;
		ibv_ack_async_event(&ev);
	}
	EXPECT_TRUE(cq_err);
	EXPECT_TRUE(qp_fatal) TH_LOG("no IBV_EVENT_QP_FATAL for the QP");
	EXPECT_TRUE(wait_state(a.qp, IBV_QPS_ERR, WC_MS))
		TH_LOG("QP in state %d", qp_state(a.qp));
	ep_destroy(&a);
	ep_destroy(&b);
}

/* ================= destroy under traffic ================= */

struct pinger {
	struct ep a, b;
	atomic_int stop;
	atomic_long rounds;
	char err[128];
};

/* Ping-pongs a->b until told to stop; no harness macros in a thread. */
static void *pinger_main(void *arg)
{
	struct pinger *p = arg;
	struct ibv_wc wc;

	while (!atomic_load(&p->stop)) {
		long r = atomic_load(&p->rounds);

		fill(p->a.buf, 256, (unsigned int)r);
		if (post_recv(&p->b, r, 0, 256) ||
		    post_send1(&p->a, IBV_WR_SEND, r, 0, 256,
			       IBV_SEND_SIGNALED, NULL, 0, 0)) {
			snprintf(p->err, sizeof(p->err), "post failed");
			break;
		}
		if (poll_one(p->a.cq, &wc, WC_MS) != 1 || wc.status) {
			snprintf(p->err, sizeof(p->err), "send: %s",
				 ibv_wc_status_str(wc.status));
			break;
		}
		if (poll_one(p->b.cq, &wc, WC_MS) != 1 || wc.status ||
		    verify(p->b.buf, 256, (unsigned int)r) != -1) {
			snprintf(p->err, sizeof(p->err), "recv %ld bad", r);
			break;
		}
		atomic_fetch_add(&p->rounds, 1);
	}
	return NULL;
}

/* Waits until the pinger made @more rounds (or failed). */
static int pinger_progress(struct pinger *p, long more)
{
	long want = atomic_load(&p->rounds) + more;
	uint64_t end = now_ms() + 2 * WC_MS;

	while (atomic_load(&p->rounds) < want && !p->err[0] && now_ms() < end)
		usleep(1000);
	return atomic_load(&p->rounds) >= want;
}

/* Starts WRITEs and SENDs x -> y that are still running when we return. */
static void start_storm(struct ep *x, struct ep *y)
{
	for (int i = 0; i < 16; i++)
		post_recv(y, i, 0, 64 * KiB);
	for (int i = 0; i < 24; i++)
		post_send1(x, i % 3 ? IBV_WR_RDMA_WRITE : IBV_WR_SEND, i,
			   0, 64 * KiB, i == 23 ? IBV_SEND_SIGNALED : 0, y,
			   64 * KiB * (i % 8), 0);
}

TEST_F_TIMEOUT(dev, destroy_under_traffic, 240)
{
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);
	struct pinger *p = calloc(1, sizeof(*p));
	pthread_t th;

	ASSERT_NE(NULL, p);
	o.buf_len = 64 * KiB;
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &p->a, &p->b));
	ASSERT_EQ(0, pthread_create(&th, NULL, pinger_main, p));
	ASSERT_TRUE(pinger_progress(p, 3)) TH_LOG("pinger: %s", p->err);

	for (int round = 0; round < 4; round++) {
		struct qp_opts v = qp_defaults(&self->e, IBV_QPT_RC);
		struct ep x, y;

		v.timeout = 8;		/* a peer that vanished fails sooner */
		v.retry_cnt = 1;
		ASSERT_EQ(0, pair_make(&self->e, &v, &v, &x, &y));
		start_storm(&x, &y);
		switch (round) {
		case 0:	/* the responder's QP, CQ and MR first */
			ASSERT_EQ(0, ibv_destroy_qp(y.qp));
			y.qp = NULL;
			ASSERT_EQ(0, ibv_destroy_cq(y.cq));
			y.cq = NULL;
			ASSERT_EQ(0, ibv_dereg_mr(y.mr));
			y.mr = NULL;
			break;
		case 1:	/* the target MR while WRITEs land in it */
			ASSERT_EQ(0, ibv_dereg_mr(y.mr));
			y.mr = NULL;
			break;
		case 2:	/* the requester's QP with WRs outstanding */
			ASSERT_EQ(0, ibv_destroy_qp(x.qp));
			x.qp = NULL;
			ASSERT_EQ(0, ibv_destroy_cq(x.cq));
			x.cq = NULL;
			ASSERT_EQ(0, ibv_dereg_mr(x.mr));
			x.mr = NULL;
			break;
		case 3:	/* the requester's source MR under its WRITEs */
			ASSERT_EQ(0, ibv_dereg_mr(x.mr));
			x.mr = NULL;
			break;
		}
		ep_destroy(&x);
		ep_destroy(&y);
		ASSERT_TRUE(pinger_progress(p, 2))
			TH_LOG("round %d: pinger stalled: %s", round, p->err);
	}
	atomic_store(&p->stop, 1);
	pthread_join(th, NULL);
	EXPECT_STREQ("", p->err);
	ep_destroy(&p->a);
	ep_destroy(&p->b);
	free(p);
}

/* ================= a process killed mid-transfer ================= */

static void child_writer(int fd)
{
	struct env e;
	struct ep a, b;
	struct ibv_wc wc;
	char c = 1;

	if (env_open(&e))
		_exit(2);
	struct qp_opts o = qp_defaults(&e, IBV_QPT_RC);

	if (pair_make(&e, &o, &o, &a, &b))
		_exit(3);
	for (unsigned int round = 0;; round++) {
		for (int i = 0; i < 8; i++)
			if (post_send1(&a, i & 1 ? IBV_WR_RDMA_READ :
				       IBV_WR_RDMA_WRITE, i, 0, MiB,
				       i == 7 ? IBV_SEND_SIGNALED : 0, &b, 0, 0))
				_exit(4);
		/* 8 MiB: across the wire on the debug kernel, over 10 s. */
		if (poll_one(a.cq, &wc, scaled_ms(WC_MS)) != 1)
			_exit(5);
		/* A failed batch: its status, in the exit code. */
		if (wc.status)
			_exit(32 + wc.status);
		if (write(fd, &c, 1) != 1)
			_exit(6);
		/* The next batch is in flight when the parent's kill lands. */
		for (int i = 0; i < 8; i++)
			post_send1(&a, IBV_WR_RDMA_WRITE, i, 0, MiB,
				   i == 7 ? IBV_SEND_SIGNALED : 0, &b, 0, 0);
		if (poll_one(a.cq, &wc, scaled_ms(WC_MS)) != 1)
			_exit(7);
		if (wc.status)
			_exit(64 + wc.status);
	}
}

TEST_F_TIMEOUT(dev, kill_child_mid_transfer, 240)
{
	for (int round = 0; round < 3; round++) {
		struct pollfd pfd;
		int fds[2], st;
		char c;
		pid_t pid;

		ASSERT_EQ(0, pipe(fds));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			close(fds[0]);
			child_writer(fds[1]);
		}
		close(fds[1]);
		pfd = (struct pollfd){ .fd = fds[0], .events = POLLIN };
		/* Round r kills after r + 1 batches. */
		for (int k = 0; k <= round; k++) {
			ASSERT_EQ(1, poll(&pfd, 1, 3 * scaled_ms(WC_MS)))
				TH_LOG("child made no progress");
			if (read(fds[0], &c, 1) != 1) {
				waitpid(pid, &st, 0);
				/* The child's exit status says which step failed. */
				ASSERT_TRUE(0) TH_LOG("child died before the kill: status %#x", st);
			}
		}
		ASSERT_EQ(0, kill(pid, SIGKILL));
		ASSERT_EQ(pid, waitpid(pid, &st, 0));
		EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
		close(fds[0]);

		/* This process's device works as before. */
		struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);
		struct ep a, b;

		ASSERT_EQ(0, pair_make(&self->e, &o, &o, &a, &b));
		send_one(_metadata, &a, &b, IBV_WR_SEND, 0, 0, 64 * KiB, round, 0);
		write_one(_metadata, &a, &b, IBV_WR_RDMA_WRITE, 0, 0, MiB, round);
		ep_destroy(&a);
		ep_destroy(&b);
	}
}

/* ================= garbage WQEs (srnic only) ================= */

/*
 * After raw_qp_wait(): the QP in ERR, and an error CQE among its CQEs,
 * within @ms, counting on.  An error completion takes the QP to ERR, and
 * so does a broken ring protocol (a producer out of the ring), and in ERR
 * what was posted and left is flushed: an error either way.
 */
static int garbage_settled(struct raw_qp *g, int ms, int *errors, int *cqes)
{
	uint64_t end = now_ms() + ms;

	for (;;) {
		raw_qp_reap(g, cqes, errors);
		if (*errors &&
		    uverbs_query_qp_state(g->fd, g->qp.core.qp_handle) == IBV_QPS_ERR)
			return 1;
		if (now_ms() > end)
			return 0;
		usleep(1000);
	}
}

/*
 * garbage_wqe_test() -- srnic only.
 *
 * Fills a QP's send ring with random bytes, rings the doorbell and expects
 * the engine to survive it: error completions, or the QP in ERR, within a
 * deadline; never a crash, never a hang.  Then the device still works.
 *
 * TODO(srnic_qp_sq_ring): once user/ provides
 * `void *srnic_qp_sq_ring(struct ibv_qp *)`, create the QP through
 * libibverbs and scribble on the provider's own ring instead.  Until then
 * the QP and its CQ are made through the raw uverbs interface with rings
 * this test owns (tests/vm/uverbs_qp_raw.h, include/srnic-abi.h).
 */
static void garbage_wqe_test(struct __test_metadata *_metadata,
			     struct env *e)
{
	const uint32_t entries = 1u << RAW_QP_LOG_SQ;
	const size_t sq_len = (size_t)entries << RAW_QP_LOG_STRIDE;
	char prov[32];

	if (!provider_name(srnic_test_dev(), prov, sizeof(prov)) ||
	    strcmp(prov, "srnic"))
		SKIP(return, "needs srnic's rings (provider of %s: %s)",
		     srnic_test_dev(), provider_name(srnic_test_dev(), prov,
						     sizeof(prov)) ? prov : "none");
	for (int round = 0; round < 12; round++) {
		uint64_t seed = 0x9e3779b97f4a7c15ull * (round + 1);
		struct raw_qp g;
		const char *step = "";
		uint32_t producer;
		int errors, cqes, err;

		err = raw_qp_make(&g, e, &step);
		ASSERT_EQ(0, err) TH_LOG("raw QP, %s: %s", step, strerror(-err));
		for (size_t i = 0; i < sq_len; i += 8) {
			uint64_t v = xorshift(&seed);

			memcpy((char *)g.sq_ring + i, &v, 8);
		}
		/*
		 * Rounds 0-7: a full ring of garbage; 8-9: one WQE; 10: a
		 * producer far ahead of the consumer; 11: a producer that
		 * went backwards after one ring's worth.
		 */
		producer = round < 8 ? entries : round < 10 ? 1 :
			   round == 10 ? 0x80000000u : entries;
		/* The wake-up system call must work (uverbs_cmd_mask POST_SEND). */
		EXPECT_EQ(0, srnic_raw_ring_sq(g.fd, g.qp.core.qp_handle,
					       g.qp_db,
					       raw_qp_sq_slot(&g), producer));
		if (round == 11) {
			usleep(1000);
			EXPECT_EQ(0, srnic_raw_ring_sq(g.fd, g.qp.core.qp_handle,
						       g.qp_db,
						       raw_qp_sq_slot(&g), 3));
		}
		ASSERT_EQ(1, raw_qp_wait(&g, WC_MS, &errors, &cqes))
			TH_LOG("round %d: no error completion and QP not in ERR "
			       "(%d CQEs) within %d ms", round, cqes, WC_MS);
		EXPECT_EQ(1, garbage_settled(&g, WC_MS, &errors, &cqes))
			TH_LOG("round %d: QP state %d, %d CQEs, %d errors", round,
			       uverbs_query_qp_state(g.fd, g.qp.core.qp_handle), cqes, errors);
		TH_LOG("round %d: %d CQEs, %d errors", round, cqes, errors);
		/* A WQE completes once at most: no more CQEs than the producer announced. */
		if (round < 10) {
			EXPECT_GE((int)producer, cqes) TH_LOG("round %d", round);
		}
		raw_qp_free(&g);
	}
	/* The device still works for everybody. */
	struct qp_opts o = qp_defaults(e, IBV_QPT_RC);
	struct ep a, b;

	ASSERT_EQ(0, pair_make(e, &o, &o, &a, &b));
	send_one(_metadata, &a, &b, IBV_WR_SEND, 0, 0, 4096, 1, 0);
	ep_destroy(&a);
	ep_destroy(&b);
}

TEST_F_TIMEOUT(dev, garbage_wqe, 240)
{
	garbage_wqe_test(_metadata, &self->e);
}

/*
 * A send ring whose stride cannot hold its QP type's WQE header (UD's is
 * 80 bytes) is refused: the engine would read a header past the slot.
 */
TEST_F(dev, ud_stride_below_header)
{
	struct srnic_raw_qp_caps caps = { .max_send_wr = 4, .max_recv_wr = 4,
					  .max_send_sge = 1, .max_recv_sge = 1 };
	struct srnic_create_qp_req qr = {};
	struct raw_qp g = { .fd = -1 };
	struct srnic_raw_qp ud;
	const char *step = "";
	int err;

	err = raw_qp_make(&g, &self->e, &step);
	ASSERT_EQ(0, err) TH_LOG("%s: %s", step, strerror(-err));
	qr.sq_buf_addr = (uintptr_t)g.sq_ring;
	qr.rq_buf_addr = (uintptr_t)g.rq_ring;
	qr.db_addr = (uintptr_t)g.qp_db + 64;
	qr.sq_log_entries = 2;
	qr.rq_log_entries = 2;
	qr.rq_log_stride = 5;
	qr.sq_log_stride = 6;
	err = uverbs_create_qp(g.fd, g.pd.core.pd_handle, g.cq.core.cq_handle,
			       g.cq.core.cq_handle, IB_UVERBS_QPT_UD, &caps, &qr,
			       &ud);
	EXPECT_EQ(-EINVAL, err);
	if (!err)
		uverbs_destroy_qp(g.fd, ud.core.qp_handle);
	/* The smallest stride that holds the header is taken. */
	qr.sq_log_stride = 7;
	err = uverbs_create_qp(g.fd, g.pd.core.pd_handle, g.cq.core.cq_handle,
			       g.cq.core.cq_handle, IB_UVERBS_QPT_UD, &caps, &qr,
			       &ud);
	EXPECT_EQ(0, err) TH_LOG("%s", strerror(-err));
	if (!err)
		EXPECT_EQ(0, uverbs_destroy_qp(g.fd, ud.core.qp_handle));
	raw_qp_free(&g);
}

TEST_HARNESS_MAIN
