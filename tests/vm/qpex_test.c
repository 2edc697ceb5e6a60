// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The ibv_wr_* send API (ibv_qp_ex) on $SRNIC_DEV: every builder and setter
 * per QP type, batches, and what post time refuses: ibv_wr_complete()
 * returns the error and nothing of the batch executes, as after
 * ibv_wr_abort().
 */
#include "kselftest_harness.h"
#include "traffic.h"

/* The ibv_qp_ex operations of each QP type (what ibv_post_send takes). */
static uint64_t ops_of(enum ibv_qp_type t)
{
	uint64_t ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;

	if (t != IBV_QPT_UD)
		ops |= IBV_QP_EX_WITH_RDMA_WRITE |
		       IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
		       IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW;
	if (t == IBV_QPT_RC)
		ops |= IBV_QP_EX_WITH_RDMA_READ |
		       IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
		       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
		       IBV_QP_EX_WITH_ATOMIC_WRITE |
		       IBV_QP_EX_WITH_SEND_WITH_INV;
	return ops;
}

/*
 * Begins a WR of @op through the builder (wr_id and flags set first);
 * remote address @roff in @peer's buffer, @arg the immediate (host order)
 * or the rkey to invalidate.
 */
static void wr_build(struct ep *x, enum ibv_wr_opcode op, uint64_t wr_id,
		     unsigned int flags, struct ep *peer, size_t roff,
		     uint32_t arg)
{
	struct ibv_qp_ex *q = x->qpx;
	uint64_t raddr = peer ? (uintptr_t)peer->buf + roff : 0;
	uint32_t rkey = peer ? peer->mr->rkey : 0;

	q->wr_id = wr_id;
	q->wr_flags = flags;
	switch (op) {
	case IBV_WR_SEND:
		ibv_wr_send(q);
		break;
	case IBV_WR_SEND_WITH_IMM:
		ibv_wr_send_imm(q, htonl(arg));
		break;
	case IBV_WR_SEND_WITH_INV:
		ibv_wr_send_inv(q, arg);
		break;
	case IBV_WR_RDMA_WRITE:
		ibv_wr_rdma_write(q, rkey, raddr);
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		ibv_wr_rdma_write_imm(q, rkey, raddr, htonl(arg));
		break;
	case IBV_WR_RDMA_READ:
		ibv_wr_rdma_read(q, rkey, raddr);
		break;
	default:
		abort();
	}
	if (x->o.type == IBV_QPT_UD)
		ibv_wr_set_ud_addr(q, x->ah, x->peer_qpn, QKEY);
}

/* One signaled WR of @op with one SGE of x's buffer; wr_complete's result. */
static int wr_post1(struct ep *x, enum ibv_wr_opcode op, uint64_t wr_id,
		    size_t off, uint32_t len, struct ep *peer, size_t roff,
		    uint32_t arg)
{
	ibv_wr_start(x->qpx);
	wr_build(x, op, wr_id, IBV_SEND_SIGNALED, peer, roff, arg);
	ibv_wr_set_sge(x->qpx, x->mr->lkey, (uintptr_t)x->buf + off, len);
	return ibv_wr_complete(x->qpx);
}

/* The sender's completion of @wr_id with @op, successful. */
#define WAIT_SENT(x, id, op) do { \
	struct ibv_wc __w; \
	WAIT_WC((x)->cq, __w); \
	ASSERT_WC(__w, IBV_WC_SUCCESS, (op)); \
	EXPECT_EQ((uint64_t)(id), __w.wr_id); \
} while (0)

FIXTURE(qpex) {
	struct env e;
	struct ep a, b;
	uint32_t grh;		/* UD receives start with a 40-byte GRH */
};

FIXTURE_VARIANT(qpex) {
	enum ibv_qp_type type;
};

FIXTURE_VARIANT_ADD(qpex, rc) { .type = IBV_QPT_RC };
FIXTURE_VARIANT_ADD(qpex, uc) { .type = IBV_QPT_UC };
FIXTURE_VARIANT_ADD(qpex, ud) { .type = IBV_QPT_UD };

FIXTURE_SETUP(qpex)
{
	ASSERT_EQ(0, env_open(&self->e));
	struct qp_opts o = qp_defaults(&self->e, variant->type);

	o.send_ops = ops_of(variant->type);
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &self->a, &self->b))
		TH_LOG("QPs with send_ops_flags 0x%llx: %s",
		       (unsigned long long)o.send_ops, strerror(errno));
	ASSERT_NE(NULL, self->a.qpx);
	self->grh = variant->type == IBV_QPT_UD ? 40 : 0;
}

FIXTURE_TEARDOWN(qpex)
{
	ep_destroy(&self->a);
	ep_destroy(&self->b);
	env_close(&self->e);
}

/* b's receive of a message of @len at b.buf + @off (after any GRH). */
static void expect_recv(struct __test_metadata *_metadata, struct ep *b,
			uint32_t grh, uint64_t wr_id, uint32_t len,
			enum ibv_wc_opcode op, unsigned int flags)
{
	struct ibv_wc wc;

	WAIT_WC(b->cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, op);
	EXPECT_EQ(wr_id, wc.wr_id);
	EXPECT_EQ(grh + len, wc.byte_len);
	EXPECT_EQ(flags, wc.wc_flags & (IBV_WC_WITH_IMM | IBV_WC_WITH_INV));
}

TEST_F(qpex, send)
{
	/* UD messages fit the path MTU (1024 on the test netdev). */
	uint32_t sizes[] = { 0, 1, 1000, 4096 };
	unsigned int n = ARRAY_SIZE(sizes) - (variant->type == IBV_QPT_UD);

	for (unsigned int i = 0; i < n; i++) {
		fill(self->a.buf, sizes[i], i);
		memset(self->b.buf, 0, 8192);
		ASSERT_EQ(0, post_recv(&self->b, 100 + i, 0, 8192));
		ASSERT_EQ(0, wr_post1(&self->a, IBV_WR_SEND, i, 0, sizes[i],
				      NULL, 0, 0));
		WAIT_SENT(&self->a, i, IBV_WC_SEND);
		expect_recv(_metadata, &self->b, self->grh, 100 + i, sizes[i],
			    IBV_WC_RECV, 0);
		EXPECT_EQ(-1, verify(self->b.buf + self->grh, sizes[i], i));
	}
}

TEST_F(qpex, send_imm)
{
	struct ibv_wc wc;

	fill(self->a.buf, 512, 7);
	ASSERT_EQ(0, post_recv(&self->b, 9, 0, 4096));
	ASSERT_EQ(0, wr_post1(&self->a, IBV_WR_SEND_WITH_IMM, 1, 0, 512, NULL,
			      0, 0x12345678));
	WAIT_SENT(&self->a, 1, IBV_WC_SEND);
	WAIT_WC(self->b.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
	EXPECT_EQ(self->grh + 512, wc.byte_len);
	EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
	EXPECT_EQ(0x12345678u, ntohl(wc.imm_data));
	EXPECT_EQ(self->b.qp->qp_num, wc.qp_num);
	if (variant->type == IBV_QPT_UD)
		EXPECT_EQ(self->a.qp->qp_num, wc.src_qp);
	EXPECT_EQ(-1, verify(self->b.buf + self->grh, 512, 7));
}

/* Gather lists: three pieces of x's buffer, concatenated at the receiver. */
TEST_F(qpex, sge_list)
{
	struct ibv_sge sg[3] = {
		{ (uintptr_t)self->a.buf + 100, 10, self->a.mr->lkey },
		{ (uintptr_t)self->a.buf + 5000, 1000, self->a.mr->lkey },
		{ (uintptr_t)self->a.buf + 9001, 1, self->a.mr->lkey },
	};
	uint8_t expect[1011];

	fill(self->a.buf, 16384, 3);
	memcpy(expect, self->a.buf + 100, 10);
	memcpy(expect + 10, self->a.buf + 5000, 1000);
	memcpy(expect + 1010, self->a.buf + 9001, 1);
	ASSERT_EQ(0, post_recv(&self->b, 5, 0, 4096));
	ibv_wr_start(self->a.qpx);
	wr_build(&self->a, IBV_WR_SEND, 2, IBV_SEND_SIGNALED, NULL, 0, 0);
	ibv_wr_set_sge_list(self->a.qpx, 3, sg);
	ASSERT_EQ(0, ibv_wr_complete(self->a.qpx));
	WAIT_SENT(&self->a, 2, IBV_WC_SEND);
	expect_recv(_metadata, &self->b, self->grh, 5, 1011, IBV_WC_RECV, 0);
	EXPECT_EQ(0, memcmp(expect, self->b.buf + self->grh, sizeof(expect)));
}

/*
 * Inline data is copied by the setter: the caller's buffers (unregistered
 * stack memory here) may change right after ibv_wr_complete().
 */
TEST_F(qpex, inline_data)
{
	char p1[] = "inline ", p2[] = "data, ", p3[] = "three pieces";
	struct ibv_data_buf list[3] = {
		{ p1, strlen(p1) }, { p2, strlen(p2) }, { p3, strlen(p3) },
	};
	const char *want = "inline data, three pieces";
	uint64_t one = 0x0102030405060708ull;

	ASSERT_GE(self->a.cap.max_inline_data, 64);
	ASSERT_EQ(0, post_recv(&self->b, 1, 0, 4096));
	ASSERT_EQ(0, post_recv(&self->b, 2, 4096, 4096));
	ibv_wr_start(self->a.qpx);
	wr_build(&self->a, IBV_WR_SEND, 1, IBV_SEND_SIGNALED, NULL, 0, 0);
	ibv_wr_set_inline_data_list(self->a.qpx, 3, list);
	wr_build(&self->a, IBV_WR_SEND, 2, IBV_SEND_SIGNALED, NULL, 0, 0);
	ibv_wr_set_inline_data(self->a.qpx, &one, sizeof(one));
	ASSERT_EQ(0, ibv_wr_complete(self->a.qpx));
	memset(p1, 'x', strlen(p1));
	memset(p3, 'x', strlen(p3));
	one = 0;
	WAIT_SENT(&self->a, 1, IBV_WC_SEND);
	WAIT_SENT(&self->a, 2, IBV_WC_SEND);
	expect_recv(_metadata, &self->b, self->grh, 1, strlen(want), IBV_WC_RECV, 0);
	expect_recv(_metadata, &self->b, self->grh, 2, 8, IBV_WC_RECV, 0);
	EXPECT_EQ(0, memcmp(want, self->b.buf + self->grh, strlen(want)));
	EXPECT_EQ(0x0102030405060708ull,
		  *(uint64_t *)(self->b.buf + 4096 + self->grh));
}

TEST_F(qpex, rdma_write)
{
	uint64_t word = 0xfeedfacecafebeefull;
	struct ibv_wc wc;

	if (variant->type == IBV_QPT_UD)
		SKIP(return, "no RDMA on UD");
	fill(self->a.buf, 10000, 5);
	memset(self->b.buf, 0, 20000);
	ASSERT_EQ(0, wr_post1(&self->a, IBV_WR_RDMA_WRITE, 1, 0, 10000,
			      &self->b, 100, 0));
	WAIT_SENT(&self->a, 1, IBV_WC_RDMA_WRITE);
	EXPECT_EQ(-1, verify(self->b.buf + 100, 10000, 5));
	EXPECT_EQ(-1, all_eq(self->b.buf, 100, 0));
	expect_quiet_pair(_metadata, &self->a, &self->b);

	/* Inline RDMA WRITE. */
	ibv_wr_start(self->a.qpx);
	wr_build(&self->a, IBV_WR_RDMA_WRITE, 2, IBV_SEND_SIGNALED, &self->b,
		 12000, 0);
	ibv_wr_set_inline_data(self->a.qpx, &word, sizeof(word));
	ASSERT_EQ(0, ibv_wr_complete(self->a.qpx));
	WAIT_SENT(&self->a, 2, IBV_WC_RDMA_WRITE);
	EXPECT_EQ(word, *(uint64_t *)(self->b.buf + 12000));

	/* With immediate: data in place and a receive with the immediate. */
	fill(self->a.buf, 3000, 6);
	ASSERT_EQ(0, post_recv(&self->b, 77, 0, 16));
	ASSERT_EQ(0, wr_post1(&self->a, IBV_WR_RDMA_WRITE_WITH_IMM, 3, 0, 3000,
			      &self->b, 14000, 0xabcdef01));
	WAIT_SENT(&self->a, 3, IBV_WC_RDMA_WRITE);
	WAIT_WC(self->b.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM);
	EXPECT_EQ(77, wc.wr_id);
	EXPECT_EQ(3000, wc.byte_len);
	EXPECT_EQ(0xabcdef01u, ntohl(wc.imm_data));
	EXPECT_EQ(-1, verify(self->b.buf + 14000, 3000, 6));
}

TEST_F(qpex, rdma_read)
{
	if (variant->type != IBV_QPT_RC)
		SKIP(return, "RDMA READ is RC only");
	fill(self->b.buf + 50000, 70000, 8);
	memset(self->a.buf, 0, 80000);
	ASSERT_EQ(0, wr_post1(&self->a, IBV_WR_RDMA_READ, 4, 1000, 70000,
			      &self->b, 50000, 0));
	WAIT_SENT(&self->a, 4, IBV_WC_RDMA_READ);
	EXPECT_EQ(-1, verify(self->a.buf + 1000, 70000, 8));
	EXPECT_EQ(-1, all_eq(self->a.buf, 1000, 0));
}

TEST_F(qpex, atomics)
{
	volatile uint64_t *t = (volatile uint64_t *)(self->b.buf + 8192);
	uint64_t *orig = (uint64_t *)(self->a.buf + 64);
	uint64_t raddr = (uintptr_t)t;

	if (variant->type != IBV_QPT_RC)
		SKIP(return, "atomics are RC only");
	*t = 40;
	ibv_wr_start(self->a.qpx);
	self->a.qpx->wr_id = 1;
	self->a.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_fetch_add(self->a.qpx, self->b.mr->rkey, raddr, 2);
	ibv_wr_set_sge(self->a.qpx, self->a.mr->lkey, (uintptr_t)orig, 8);
	ASSERT_EQ(0, ibv_wr_complete(self->a.qpx));
	WAIT_SENT(&self->a, 1, IBV_WC_FETCH_ADD);
	EXPECT_EQ(40, *orig);
	EXPECT_EQ(42, *t);

	/* Compare and swap: a miss leaves the target, a hit swaps. */
	ibv_wr_start(self->a.qpx);
	self->a.qpx->wr_id = 2;
	ibv_wr_atomic_cmp_swp(self->a.qpx, self->b.mr->rkey, raddr, 41, 7);
	ibv_wr_set_sge(self->a.qpx, self->a.mr->lkey, (uintptr_t)orig, 8);
	self->a.qpx->wr_id = 3;
	ibv_wr_atomic_cmp_swp(self->a.qpx, self->b.mr->rkey, raddr, 42, 7);
	ibv_wr_set_sge(self->a.qpx, self->a.mr->lkey, (uintptr_t)orig + 8, 8);
	ASSERT_EQ(0, ibv_wr_complete(self->a.qpx));
	WAIT_SENT(&self->a, 2, IBV_WC_COMP_SWAP);
	WAIT_SENT(&self->a, 3, IBV_WC_COMP_SWAP);
	EXPECT_EQ(42, orig[0]);
	EXPECT_EQ(42, orig[1]);
	EXPECT_EQ(7, *t);
}

/* One signaled ATOMIC WRITE of @val to @raddr in b through ibv_wr_*. */
static int wr_atomic_write1(struct ep *a, uint64_t wr_id, uint32_t rkey,
			    uint64_t raddr, uint64_t val)
{
	ibv_wr_start(a->qpx);
	a->qpx->wr_id = wr_id;
	a->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(a->qpx, rkey, raddr, &val);
	return ibv_wr_complete(a->qpx);
}

/*
 * ATOMIC WRITE (IBA 1.5): 8 bytes stored at once, through ibv_wr_* and
 * through ibv_post_send (its gather list must hold exactly 8 bytes).
 */
TEST_F(qpex, atomic_write)
{
	volatile uint64_t *t = (volatile uint64_t *)(self->b.buf + 8192);
	uint64_t *src = (uint64_t *)(self->a.buf + 64);
	struct ibv_sge sg[2] = {
		{ (uintptr_t)src, 4, self->a.mr->lkey },
		{ (uintptr_t)src + 4, 4, self->a.mr->lkey },
	};
	struct ibv_send_wr wr = {
		.wr_id = 2, .sg_list = sg, .num_sge = 2,
		.opcode = IBV_WR_ATOMIC_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)t,
			     .rkey = self->b.mr->rkey },
	}, *bad;

	if (variant->type != IBV_QPT_RC)
		SKIP(return, "ATOMIC WRITE is RC only");
	*t = 1;
	ASSERT_EQ(0, wr_atomic_write1(&self->a, 1, self->b.mr->rkey,
				      (uintptr_t)t, 0x1122334455667788ull));
	WAIT_SENT(&self->a, 1, IBV_WC_ATOMIC_WRITE);
	EXPECT_EQ(0x1122334455667788ull, *t);

	*src = 0x0102030405060708ull;
	ASSERT_EQ(0, ibv_post_send(self->a.qp, &wr, &bad));
	WAIT_SENT(&self->a, 2, IBV_WC_ATOMIC_WRITE);
	EXPECT_EQ(0x0102030405060708ull, *t);

	/* Not 8 bytes: refused at post time, nothing executes. */
	sg[1].length = 3;
	EXPECT_EQ(EINVAL, ibv_post_send(self->a.qp, &wr, &bad));
	sg[1].length = 5;
	EXPECT_EQ(EINVAL, ibv_post_send(self->a.qp, &wr, &bad));
	/* Its data travels in the WQE: no gather list may be set. */
	ibv_wr_start(self->a.qpx);
	ibv_wr_atomic_write(self->a.qpx, self->b.mr->rkey, (uintptr_t)t, src);
	ibv_wr_set_sge(self->a.qpx, self->a.mr->lkey, (uintptr_t)src, 8);
	EXPECT_EQ(EINVAL, ibv_wr_complete(self->a.qpx));
	expect_quiet_pair(_metadata, &self->a, &self->b);
	EXPECT_EQ(0x0102030405060708ull, *t);
}

/* A misaligned target is an invalid request; the target is untouched. */
TEST_F(qpex, atomic_write_misaligned)
{
	uint64_t *t = (uint64_t *)(self->b.buf + 8192);
	struct ibv_wc wc;

	if (variant->type != IBV_QPT_RC)
		SKIP(return, "ATOMIC WRITE is RC only");
	t[0] = t[1] = 0;
	ASSERT_EQ(0, wr_atomic_write1(&self->a, 5, self->b.mr->rkey,
				      (uintptr_t)t + 4, ~0ull));
	WAIT_WC(self->a.cq, wc);
	ASSERT_WC(wc, IBV_WC_REM_INV_REQ_ERR, 0);
	EXPECT_EQ(0, t[0]);
	EXPECT_EQ(0, t[1]);
}

/* ATOMIC WRITE needs remote write access, as RDMA WRITE does. */
TEST_F(qpex, atomic_write_needs_remote_write)
{
	uint64_t *t = (uint64_t *)(self->b.buf + 8192);
	struct ibv_mr *ro;
	struct ibv_wc wc;

	if (variant->type != IBV_QPT_RC)
		SKIP(return, "ATOMIC WRITE is RC only");
	ro = ibv_reg_mr(self->e.pd, self->b.buf, 16384,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC);
	ASSERT_NE(NULL, ro);
	*t = 3;
	ASSERT_EQ(0, wr_atomic_write1(&self->a, 6, ro->rkey, (uintptr_t)t, 9));
	WAIT_WC(self->a.cq, wc);
	ASSERT_WC(wc, IBV_WC_REM_ACCESS_ERR, 0);
	EXPECT_EQ(3, *t);
	ibv_dereg_mr(ro);
}

/*
 * Type 2 memory windows through the wr_* API: ibv_wr_bind_mw() on b's QP,
 * ibv_wr_local_inv() and (RC) ibv_wr_send_inv() end the window's life.
 */
TEST_F(qpex, bind_mw_and_invalidate)
{
	struct ibv_mr *wmr;
	struct ibv_mw *mw;
	struct ibv_wc wc;
	uint32_t rkey;
	uint64_t win = (uintptr_t)self->b.buf + 65536;

	if (variant->type == IBV_QPT_UD)
		SKIP(return, "no memory windows on UD");
	wmr = ibv_reg_mr(self->e.pd, self->b.buf, self->b.o.buf_len,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	ASSERT_NE(NULL, wmr);
	mw = ibv_alloc_mw(self->e.pd, IBV_MW_TYPE_2);
	ASSERT_NE(NULL, mw);

	for (int round = 0; round < 2; round++) {
		struct ibv_mw_bind_info bi = {
			.mr = wmr, .addr = win, .length = 16384,
			.mw_access_flags = IBV_ACCESS_REMOTE_WRITE,
		};

		rkey = ibv_inc_rkey(mw->rkey);
		ibv_wr_start(self->b.qpx);
		self->b.qpx->wr_id = 0xb1;
		self->b.qpx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_bind_mw(self->b.qpx, mw, rkey, &bi);
		ASSERT_EQ(0, ibv_wr_complete(self->b.qpx));
		WAIT_SENT(&self->b, 0xb1, IBV_WC_BIND_MW);
		mw->rkey = rkey;

		/* A WRITE through the window lands in it. */
		fill(self->a.buf, 4096, round);
		ibv_wr_start(self->a.qpx);
		self->a.qpx->wr_id = 0xa1;
		self->a.qpx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(self->a.qpx, rkey, win + 100);
		ibv_wr_set_sge(self->a.qpx, self->a.mr->lkey,
			       (uintptr_t)self->a.buf, 4096);
		ASSERT_EQ(0, ibv_wr_complete(self->a.qpx));
		WAIT_SENT(&self->a, 0xa1, IBV_WC_RDMA_WRITE);
		EXPECT_EQ(-1, verify(self->b.buf + 65536 + 100, 4096, round));

		if (round == 0 || variant->type == IBV_QPT_UC) {
			/*
			 * Invalidated by its own QP (round 1 binding it
			 * again shows the window was freed).
			 */
			ibv_wr_start(self->b.qpx);
			self->b.qpx->wr_id = 0x1f;
			self->b.qpx->wr_flags = IBV_SEND_SIGNALED;
			ibv_wr_local_inv(self->b.qpx, rkey);
			ASSERT_EQ(0, ibv_wr_complete(self->b.qpx));
			WAIT_SENT(&self->b, 0x1f, IBV_WC_LOCAL_INV);
		} else if (variant->type == IBV_QPT_RC) {
			/* Invalidated by the peer's SEND_WITH_INV. */
			ASSERT_EQ(0, post_recv(&self->b, 0x5e, 0, 4096));
			ASSERT_EQ(0, wr_post1(&self->a, IBV_WR_SEND_WITH_INV,
					      0xa2, 0, 16, NULL, 0, rkey));
			WAIT_SENT(&self->a, 0xa2, IBV_WC_SEND);
			WAIT_WC(self->b.cq, wc);
			ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
			EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_INV);
			EXPECT_EQ(rkey, wc.invalidated_rkey);
		}
		/*
		 * The invalidated rkey grants nothing: UC loses the WRITE, RC
		 * fails it (last, as it moves the QPs to error).
		 */
		if (variant->type == IBV_QPT_RC && round == 0)
			continue;
		memset(self->b.buf + 65536, 0, 8192);
		ibv_wr_start(self->a.qpx);
		self->a.qpx->wr_id = 0xa3;
		self->a.qpx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(self->a.qpx, rkey, win);
		ibv_wr_set_sge(self->a.qpx, self->a.mr->lkey,
			       (uintptr_t)self->a.buf, 64);
		ASSERT_EQ(0, ibv_wr_complete(self->a.qpx));
		WAIT_WC(self->a.cq, wc);
		EXPECT_EQ(0xa3, wc.wr_id);
		EXPECT_EQ(variant->type == IBV_QPT_RC ? IBV_WC_REM_ACCESS_ERR :
			  IBV_WC_SUCCESS, wc.status);
		EXPECT_EQ(-1, all_eq(self->b.buf + 65536, 8192, 0));
	}
	ibv_dealloc_mw(mw);
	ibv_dereg_mr(wmr);
}

/*
 * A batch of many WRs, mixed opcodes, signaled and not: executed in order,
 * one doorbell for all of them.
 */
TEST_F(qpex, batch)
{
	enum ibv_wr_opcode ops[] = { IBV_WR_SEND, IBV_WR_SEND_WITH_IMM };
	int n = 24;

	ASSERT_LE(n, self->a.cap.max_send_wr);
	for (int i = 0; i < n; i++)
		ASSERT_EQ(0, post_recv(&self->b, 1000 + i, 512 * i, 512));
	ibv_wr_start(self->a.qpx);
	for (int i = 0; i < n; i++) {
		fill(self->a.buf + 512 * i, 100 + i, i);
		wr_build(&self->a, ops[i % 2], i, i % 3 ? 0 : IBV_SEND_SIGNALED,
			 NULL, 0, i);
		ibv_wr_set_sge(self->a.qpx, self->a.mr->lkey,
			       (uintptr_t)self->a.buf + 512 * i, 100 + i);
	}
	/*
	 * Nothing runs before wr_complete (no sentinel can be posted while
	 * the batch is open).
	 */
	ASSERT_QUIET(self->b.cq);
	ASSERT_EQ(0, ibv_wr_complete(self->a.qpx));
	for (int i = 0; i < n; i += 3)
		WAIT_SENT(&self->a, i, IBV_WC_SEND);
	for (int i = 0; i < n; i++) {
		expect_recv(_metadata, &self->b, self->grh, 1000 + i, 100 + i,
			    IBV_WC_RECV, i % 2 ? IBV_WC_WITH_IMM : 0);
		EXPECT_EQ(-1, verify(self->b.buf + 512 * i + self->grh,
				     100 + i, i));
	}
	/* The unsignaled ones completed nothing. */
	expect_quiet_pair(_metadata, &self->a, &self->b);
}

/*
 * After a refused or aborted batch nothing of it has run, and the next
 * batch uses the same slots: its first WR is the first to complete, on
 * both sides (the sentinel: a WR of the batch that ran would come first).
 */
static void expect_clean(struct __test_metadata *_metadata, FIXTURE_DATA(qpex) *self,
			 uint64_t id)
{
	ASSERT_EQ(0, post_recv(&self->b, id + 1000, 0, 4096));
	fill(self->a.buf, 64, (unsigned int)id);
	ASSERT_EQ(0, wr_post1(&self->a, IBV_WR_SEND, id, 0, 64, NULL, 0, 0));
	WAIT_SENT(&self->a, id, IBV_WC_SEND);
	expect_recv(_metadata, &self->b, self->grh, id + 1000, 64, IBV_WC_RECV, 0);
	EXPECT_EQ(-1, verify(self->b.buf + self->grh, 64, (unsigned int)id));
}

/*
 * ibv_post_send() with IBV_SEND_INLINE refuses READ and the fetching
 * atomics as the builder does (their answer lands in the list): EINVAL,
 * bad_wr that WR, nothing posted, b's memory untouched.
 */
static void post_send_inline_refused(struct __test_metadata *_metadata,
				     FIXTURE_DATA(qpex) *self)
{
	const enum ibv_wr_opcode ops[] = { IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
					   IBV_WR_ATOMIC_FETCH_AND_ADD };
	uint64_t raddr = (uintptr_t)self->b.buf + 2048;

	for (unsigned int i = 0; i < ARRAY_SIZE(ops); i++) {
		struct ibv_sge s = { (uintptr_t)self->a.buf, 8, self->a.mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 60 + i, .sg_list = &s, .num_sge = 1, .opcode = ops[i],
			.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
		}, *bad = NULL;

		if (ops[i] == IBV_WR_RDMA_READ)
			wr.wr.rdma = (typeof(wr.wr.rdma)){ raddr, self->b.mr->rkey };
		else
			wr.wr.atomic = (typeof(wr.wr.atomic)){ raddr, 1, 2, self->b.mr->rkey };
		memset(self->b.buf + 2048, 0x5a, 8);
		EXPECT_EQ(EINVAL, ibv_post_send(self->a.qp, &wr, &bad)) TH_LOG("opcode %d", ops[i]);
		EXPECT_EQ(&wr, bad);
		expect_clean(_metadata, self, 11 + i);
		EXPECT_EQ(-1, all_eq(self->b.buf + 2048, 8, 0x5a)) TH_LOG("opcode %d", ops[i]);
	}
}

TEST_F(qpex, post_errors)
{
	struct ibv_qp_ex *q = self->a.qpx;
	uint32_t nsge = self->a.cap.max_send_sge + 1;
	struct ibv_sge sg[64];
	static uint8_t big[4096];

	ASSERT_LE(nsge, 64);
	for (uint32_t i = 0; i < nsge; i++)
		sg[i] = (struct ibv_sge){ (uintptr_t)self->a.buf + 64 * i, 64,
					  self->a.mr->lkey };

	/* A setter with no WR begun. */
	ibv_wr_start(q);
	ibv_wr_set_sge(q, self->a.mr->lkey, (uintptr_t)self->a.buf, 8);
	EXPECT_EQ(EINVAL, ibv_wr_complete(q));
	expect_clean(_metadata, self, 1);

	/* More SGEs than the QP has, after a good WR in the same batch. */
	ibv_wr_start(q);
	wr_build(&self->a, IBV_WR_SEND, 50, IBV_SEND_SIGNALED, NULL, 0, 0);
	ibv_wr_set_sge(q, self->a.mr->lkey, (uintptr_t)self->a.buf, 8);
	wr_build(&self->a, IBV_WR_SEND, 51, IBV_SEND_SIGNALED, NULL, 0, 0);
	ibv_wr_set_sge_list(q, nsge, sg);
	EXPECT_EQ(EINVAL, ibv_wr_complete(q));
	expect_clean(_metadata, self, 2);

	/* Inline data beyond max_inline_data. */
	ibv_wr_start(q);
	wr_build(&self->a, IBV_WR_SEND, 52, IBV_SEND_SIGNALED, NULL, 0, 0);
	ibv_wr_set_inline_data(q, big, self->a.cap.max_inline_data + 1);
	EXPECT_EQ(EINVAL, ibv_wr_complete(q));
	expect_clean(_metadata, self, 3);

	/* More WRs than the send queue holds. */
	ibv_wr_start(q);
	for (uint32_t i = 0; i <= self->a.cap.max_send_wr; i++) {
		wr_build(&self->a, IBV_WR_SEND, 100 + i, IBV_SEND_SIGNALED,
			 NULL, 0, 0);
		ibv_wr_set_sge(q, self->a.mr->lkey, (uintptr_t)self->a.buf, 8);
	}
	EXPECT_EQ(ENOMEM, ibv_wr_complete(q));
	expect_clean(_metadata, self, 4);

	/* Aborted: the WRs built are dropped. */
	ibv_wr_start(q);
	for (int i = 0; i < 3; i++) {
		wr_build(&self->a, IBV_WR_SEND, 200 + i, IBV_SEND_SIGNALED,
			 NULL, 0, 0);
		ibv_wr_set_sge(q, self->a.mr->lkey, (uintptr_t)self->a.buf, 8);
	}
	ibv_wr_abort(q);
	expect_clean(_metadata, self, 5);

	/* An empty batch is fine and posts nothing. */
	ibv_wr_start(q);
	EXPECT_EQ(0, ibv_wr_complete(q));
	expect_clean(_metadata, self, 6);

	if (variant->type == IBV_QPT_UD) {
		/* A UD send without its address. */
		ibv_wr_start(q);
		q->wr_id = 53;
		ibv_wr_send(q);
		ibv_wr_set_sge(q, self->a.mr->lkey, (uintptr_t)self->a.buf, 8);
		EXPECT_EQ(EINVAL, ibv_wr_complete(q));
		expect_clean(_metadata, self, 7);
	} else {
		/* A UD address on a connected QP. */
		ibv_wr_start(q);
		wr_build(&self->a, IBV_WR_SEND, 54, 0, NULL, 0, 0);
		ibv_wr_set_ud_addr(q, self->a.ah, 1, QKEY);
		EXPECT_EQ(EINVAL, ibv_wr_complete(q));
		expect_clean(_metadata, self, 8);
		/* No data on a LOCAL_INV. */
		ibv_wr_start(q);
		q->wr_id = 55;
		ibv_wr_local_inv(q, 0x1234);
		ibv_wr_set_sge(q, self->a.mr->lkey, (uintptr_t)self->a.buf, 8);
		EXPECT_EQ(EINVAL, ibv_wr_complete(q));
		expect_clean(_metadata, self, 9);
	}
	if (variant->type == IBV_QPT_RC) {
		/* No inline data for a READ to scatter into. */
		ibv_wr_start(q);
		wr_build(&self->a, IBV_WR_RDMA_READ, 56, 0, &self->b, 0, 0);
		ibv_wr_set_inline_data(q, big, 8);
		EXPECT_EQ(EINVAL, ibv_wr_complete(q));
		expect_clean(_metadata, self, 10);
		post_send_inline_refused(_metadata, self);
	}
}

/*
 * Posting needs RTS: a QP in RESET or INIT refuses the batch; once in RTS,
 * nothing of it runs (the sentinel is the first to complete).
 */
TEST_F(qpex, post_before_rts)
{
	struct qp_opts o = qp_defaults(&self->e, variant->type);
	struct ep x, y;

	o.send_ops = ops_of(variant->type);
	ASSERT_EQ(0, ep_create(&self->e, &o, &x));
	ASSERT_EQ(0, ep_create(env_of_peer(&self->e), &o, &y));
	for (int st = 0; st < 2; st++) {
		if (st)
			ASSERT_EQ(0, ep_to_init(&x));
		ibv_wr_start(x.qpx);
		x.qpx->wr_id = 1;
		ibv_wr_send(x.qpx);
		ibv_wr_set_sge(x.qpx, x.mr->lkey, (uintptr_t)x.buf, 8);
		if (variant->type == IBV_QPT_UD)
			ibv_wr_set_ud_addr(x.qpx, self->a.ah, 1, QKEY);
		EXPECT_EQ(EINVAL, ibv_wr_complete(x.qpx));
	}
	x.dgid = &y.e->gid;
	y.dgid = &x.e->gid;
	ASSERT_EQ(0, ep_connect(&x, y.qp->qp_num));
	ASSERT_EQ(0, ep_connect(&y, x.qp->qp_num));
	expect_quiet_pair(_metadata, &x, &y);
	ep_destroy(&x);
	ep_destroy(&y);
}

/* An operation the QP was not created for fails the batch (EOPNOTSUPP). */
TEST_F(qpex, op_not_requested)
{
	struct qp_opts o = qp_defaults(&self->e, variant->type);
	struct ep x, y;

	o.send_ops = IBV_QP_EX_WITH_SEND;
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &x, &y));
	ibv_wr_start(x.qpx);
	x.qpx->wr_id = 1;
	ibv_wr_send_imm(x.qpx, 0);
	ibv_wr_set_sge(x.qpx, x.mr->lkey, (uintptr_t)x.buf, 8);
	if (variant->type == IBV_QPT_UD)
		ibv_wr_set_ud_addr(x.qpx, x.ah, x.peer_qpn, QKEY);
	EXPECT_EQ(EOPNOTSUPP, ibv_wr_complete(x.qpx));
	/* TSO and ATOMIC_WRITE are not offered, whatever was asked. */
	ibv_wr_start(x.qpx);
	ibv_wr_send_tso(x.qpx, x.buf, 40, 1000);
	EXPECT_EQ(EOPNOTSUPP, ibv_wr_complete(x.qpx));
	expect_quiet_pair(_metadata, &x, &y);
	ep_destroy(&x);
	ep_destroy(&y);
}

FIXTURE(create) {
	struct env e;
	struct ibv_cq *cq;
};

FIXTURE_SETUP(create)
{
	ASSERT_EQ(0, env_open(&self->e));
	self->cq = ibv_create_cq(self->e.ctx, 16, NULL, NULL, 0);
	ASSERT_NE(NULL, self->cq);
}

FIXTURE_TEARDOWN(create)
{
	if (self->cq)
		ibv_destroy_cq(self->cq);
	env_close(&self->e);
}

static struct ibv_qp *create_ex(FIXTURE_DATA(create) *self,
				enum ibv_qp_type t, uint64_t ops, int with_ops)
{
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = self->cq, .recv_cq = self->cq, .qp_type = t,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.pd = self->e.pd, .comp_mask = IBV_QP_INIT_ATTR_PD,
	};

	if (with_ops) {
		ia.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		ia.send_ops_flags = ops;
	}
	return ibv_create_qp_ex(self->e.ctx, &ia);
}

/* Every flag a type cannot do is refused with EOPNOTSUPP; the rest work. */
TEST_F(create, send_ops_flags)
{
	enum ibv_qp_type types[] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };

	for (unsigned int t = 0; t < ARRAY_SIZE(types); t++) {
		uint64_t ok = ops_of(types[t]);
		struct ibv_qp *qp;

		for (int bit = 0; bit < 20; bit++) {
			if (ok & (1ull << bit))
				continue;
			errno = 0;
			qp = create_ex(self, types[t], 1ull << bit, 1);
			EXPECT_EQ(NULL, qp) TH_LOG("type %d accepted op bit %d",
						   types[t], bit);
			EXPECT_EQ(EOPNOTSUPP, errno);
			if (qp)
				ibv_destroy_qp(qp);
		}
		qp = create_ex(self, types[t], ok, 1);
		ASSERT_NE(NULL, qp) TH_LOG("type %d: %s", types[t], strerror(errno));
		EXPECT_NE(NULL, ibv_qp_to_qp_ex(qp));
		ibv_destroy_qp(qp);
		/* Without SEND_OPS_FLAGS there is no ibv_qp_ex. */
		qp = create_ex(self, types[t], 0, 0);
		ASSERT_NE(NULL, qp);
		EXPECT_EQ(NULL, ibv_qp_to_qp_ex(qp));
		ibv_destroy_qp(qp);
	}
}

TEST_HARNESS_MAIN
