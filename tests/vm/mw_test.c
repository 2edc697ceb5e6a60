// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Memory windows on $SRNIC_DEV: type 1 (ibv_bind_mw) and type 2
 * (IBV_WR_BIND_MW, LOCAL_INV, SEND_WITH_INV), enforced by the engine.
 *
 * The windows sit on "wmr", a second MR over b's buffer with only local
 * write and bind rights: whatever a remote access reaches, the window
 * granted.  An error completion moves a QP to ERR, so a test that expects
 * one expects it last (or makes a fresh pair).
 */
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "traffic.h"

#define WIN_OFF (64 * KiB)	/* window start in b's buffer */
#define WIN_LEN (16 * KiB)

static int has_mw(const struct env *e, int type)
{
	int t2 = IBV_DEVICE_MEM_WINDOW_TYPE_2A | IBV_DEVICE_MEM_WINDOW_TYPE_2B;

	return e->dev.max_mw &&
	       (type == IBV_MW_TYPE_1 ? !!(e->dev.device_cap_flags & IBV_DEVICE_MEM_WINDOW) :
					!!(e->dev.device_cap_flags & t2));
}

/* Waits for one completion on @x's CQ; its status, or -1. */
static int wait_status(struct ep *x, struct ibv_wc *wc)
{
	return poll_one(x->cq, wc, WC_MS) == 1 ? (int)wc->status : -1;
}

/*
 * Binds @mw over [addr, addr + len) of @mr through @x's QP, the way its
 * type is bound; on success *@rkey is the window's new rkey.  Returns the
 * completion status, or -1 if the post was refused or nothing completed.
 */
static int mw_bind(struct ep *x, struct ibv_mw *mw, struct ibv_mr *mr,
		uint64_t addr, uint64_t len, int access, uint32_t *rkey)
{
	struct ibv_send_wr wr = { .wr_id = 0xb1, .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	int st;

	if (mw->type == IBV_MW_TYPE_1) {
		struct ibv_mw_bind b = {
			.wr_id = 0xb1, .send_flags = IBV_SEND_SIGNALED,
			.bind_info = { .mr = mr, .addr = addr, .length = len,
				       .mw_access_flags = access },
		};

		if (ibv_bind_mw(x->qp, mw, &b))
			return -1;
		st = wait_status(x, &wc);
		*rkey = mw->rkey;
	} else {
		wr.bind_mw.mw = mw;
		wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
		wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
			.mr = mr, .addr = addr, .length = len,
			.mw_access_flags = access,
		};
		if (ibv_post_send(x->qp, &wr, &bad))
			return -1;
		st = wait_status(x, &wc);
		if (st == IBV_WC_SUCCESS)
			mw->rkey = wr.bind_mw.rkey;
		*rkey = wr.bind_mw.rkey;
	}
	if (st == IBV_WC_SUCCESS && (wc.opcode != IBV_WC_BIND_MW || wc.wr_id != 0xb1))
		return -1;
	return st;
}

/* LOCAL_INV of @rkey through @x: the completion status, or -1. */
static int local_inv(struct ep *x, uint32_t rkey)
{
	struct ibv_send_wr wr = { .wr_id = 0x1f, .opcode = IBV_WR_LOCAL_INV,
				  .send_flags = IBV_SEND_SIGNALED,
				  .invalidate_rkey = rkey }, *bad;
	struct ibv_wc wc;
	int st;

	if (ibv_post_send(x->qp, &wr, &bad))
		return -1;
	st = wait_status(x, &wc);
	if (st == IBV_WC_SUCCESS && wc.opcode != IBV_WC_LOCAL_INV)
		return -1;
	return st;
}

static int rdma(struct ep *x, enum ibv_wr_opcode op, size_t off, uint32_t len,
		uint64_t raddr, uint32_t rkey)
{
	return rdma_op(x, op, off, len, raddr, rkey, 0);
}

FIXTURE(mw) {
	struct env e;
	struct ep a, b;
	struct ibv_mr *wmr;	/* b's buffer: local write + bind only */
	struct ibv_mw *mw;
	uint32_t rkey;
};

FIXTURE_VARIANT(mw) {
	int type;
	int zero_based;
};

FIXTURE_VARIANT_ADD(mw, type1) { .type = IBV_MW_TYPE_1 };
FIXTURE_VARIANT_ADD(mw, type2) { .type = IBV_MW_TYPE_2 };
FIXTURE_VARIANT_ADD(mw, type2_zero_based) { .type = IBV_MW_TYPE_2, .zero_based = 1 };

FIXTURE_SETUP(mw)
{
	ASSERT_EQ(0, env_open(&self->e));
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);

	ASSERT_TRUE(has_mw(&self->e, variant->type))
		TH_LOG("srnic reports no memory windows of type %d", variant->type);
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &self->a, &self->b));
	self->wmr = ibv_reg_mr(self->e.pd, self->b.buf, self->b.o.buf_len,
			       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	ASSERT_NE(NULL, self->wmr);
	self->mw = ibv_alloc_mw(self->e.pd, variant->type);
	ASSERT_NE(NULL, self->mw) TH_LOG("alloc_mw: %s", strerror(errno));
	EXPECT_EQ(variant->type, self->mw->type);
}

FIXTURE_TEARDOWN(mw)
{
	if (self->mw)
		ibv_dealloc_mw(self->mw);
	if (self->wmr)
		ibv_dereg_mr(self->wmr);
	ep_destroy(&self->a);
	ep_destroy(&self->b);
	env_close(&self->e);
}

/* Binds the fixture's window over the test area with @access. */
static int bind_window(FIXTURE_DATA(mw) *self, const FIXTURE_VARIANT(mw) *variant,
		       int access)
{
	if (variant->zero_based)
		access |= IBV_ACCESS_ZERO_BASED;
	return mw_bind(&self->b, self->mw, self->wmr,
		    (uintptr_t)self->b.buf + WIN_OFF, WIN_LEN, access,
		    &self->rkey);
}

/* The remote address of byte @off of the window. */
static uint64_t win_addr(FIXTURE_DATA(mw) *self,
			 const FIXTURE_VARIANT(mw) *variant, uint64_t off)
{
	return variant->zero_based ? off : (uintptr_t)self->b.buf + WIN_OFF + off;
}

#define RW (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

TEST_F(mw, write_read_atomic)
{
	uint64_t *res;

	ASSERT_TRUE(has_atomics(&self->e)) TH_LOG("srnic reports atomic_cap NONE");
	ASSERT_EQ(IBV_WC_SUCCESS, bind_window(self, variant, RW | IBV_ACCESS_REMOTE_ATOMIC));
	EXPECT_NE(self->wmr->rkey, self->rkey);

	/* WRITE lands where the window says. */
	fill(self->a.buf, 4096, 3);
	memset(self->b.buf + WIN_OFF, 0, WIN_LEN);
	ASSERT_EQ(IBV_WC_SUCCESS, rdma(&self->a, IBV_WR_RDMA_WRITE, 0, 4096,
				       win_addr(self, variant, 100), self->rkey));
	EXPECT_EQ(-1, verify(self->b.buf + WIN_OFF + 100, 4096, 3));
	EXPECT_EQ(-1, all_eq(self->b.buf + WIN_OFF, 100, 0));

	/* READ of the last 1000 bytes of the window. */
	fill(self->b.buf + WIN_OFF + WIN_LEN - 1000, 1000, 4);
	ASSERT_EQ(IBV_WC_SUCCESS, rdma(&self->a, IBV_WR_RDMA_READ, 8192, 1000,
				       win_addr(self, variant, WIN_LEN - 1000),
				       self->rkey));
	EXPECT_EQ(-1, verify(self->a.buf + 8192, 1000, 4));

	res = (uint64_t *)(self->b.buf + WIN_OFF + 64);
	*res = 40;
	{
		struct ibv_send_wr wr, *bad;
		struct ibv_sge s;
		struct ibv_wc wc;

		wr_init(&wr, &s, &self->a, IBV_WR_ATOMIC_FETCH_AND_ADD, 9,
			12288, 8, IBV_SEND_SIGNALED, NULL, 0, 0);
		wr.wr.atomic.remote_addr = win_addr(self, variant, 64);
		wr.wr.atomic.rkey = self->rkey;
		wr.wr.atomic.compare_add = 2;
		ASSERT_EQ(0, ibv_post_send(self->a.qp, &wr, &bad));
		ASSERT_EQ(IBV_WC_SUCCESS, wait_status(&self->a, &wc));
	}
	EXPECT_EQ(42, *res);
	EXPECT_EQ(40, *(uint64_t *)(self->a.buf + 12288));
}

TEST_F(mw, beyond_the_window)
{
	ASSERT_EQ(IBV_WC_SUCCESS, bind_window(self, variant, RW));
	memset(self->b.buf + WIN_OFF + WIN_LEN - 8, 0xee, 16);
	/* Inside the MR, but 8 of the 16 bytes are past the window. */
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  rdma(&self->a, IBV_WR_RDMA_WRITE, 0, 16,
		       win_addr(self, variant, WIN_LEN - 8), self->rkey));
	EXPECT_EQ(-1, all_eq(self->b.buf + WIN_OFF + WIN_LEN - 8, 16, 0xee));
	EXPECT_TRUE(wait_state(self->a.qp, IBV_QPS_ERR, WC_MS));
}

TEST_F(mw, rights_of_the_window)
{
	ASSERT_EQ(IBV_WC_SUCCESS, bind_window(self, variant,
					      IBV_ACCESS_REMOTE_READ));
	ASSERT_EQ(IBV_WC_SUCCESS, rdma(&self->a, IBV_WR_RDMA_READ, 0, 64,
				       win_addr(self, variant, 0), self->rkey));
	memset(self->b.buf + WIN_OFF, 0xee, 64);
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  rdma(&self->a, IBV_WR_RDMA_WRITE, 0, 64,
		       win_addr(self, variant, 0), self->rkey));
	EXPECT_EQ(-1, all_eq(self->b.buf + WIN_OFF, 64, 0xee));
}

/* Type 1: a zero-length bind; type 2: LOCAL_INV.  Then nothing passes. */
TEST_F(mw, unbind_revokes)
{
	ASSERT_EQ(IBV_WC_SUCCESS, bind_window(self, variant, RW));
	ASSERT_EQ(IBV_WC_SUCCESS, rdma(&self->a, IBV_WR_RDMA_WRITE, 0, 64,
				       win_addr(self, variant, 0), self->rkey));
	if (variant->type == IBV_MW_TYPE_1) {
		uint32_t old = self->rkey;

		ASSERT_EQ(IBV_WC_SUCCESS, mw_bind(&self->b, self->mw, self->wmr,
					       0, 0, 0, &self->rkey));
		EXPECT_NE(old, self->rkey);
		/* Neither the old rkey nor the new one grants anything. */
		memset(self->b.buf + WIN_OFF, 0xee, 64);
		EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
			  rdma(&self->a, IBV_WR_RDMA_WRITE, 0, 64,
			       win_addr(self, variant, 0), old));
	} else {
		ASSERT_EQ(IBV_WC_SUCCESS, local_inv(&self->b, self->rkey));
		memset(self->b.buf + WIN_OFF, 0xee, 64);
		EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
			  rdma(&self->a, IBV_WR_RDMA_WRITE, 0, 64,
			       win_addr(self, variant, 0), self->rkey));
	}
	EXPECT_EQ(-1, all_eq(self->b.buf + WIN_OFF, 64, 0xee));
}

/* A new binding has a new rkey; the old one is dead. */
TEST_F(mw, rebind_moves_the_rkey)
{
	uint32_t old;

	ASSERT_EQ(IBV_WC_SUCCESS, bind_window(self, variant, RW));
	old = self->rkey;
	if (variant->type == IBV_MW_TYPE_2) {
		/* A bound type 2 window cannot be bound again... */
		ASSERT_EQ(IBV_WC_SUCCESS, local_inv(&self->b, old));
	}
	/* ...the second binding covers the first page of the buffer. */
	ASSERT_EQ(IBV_WC_SUCCESS, mw_bind(&self->b, self->mw, self->wmr,
				       (uintptr_t)self->b.buf, 4096,
				       IBV_ACCESS_REMOTE_WRITE, &self->rkey));
	EXPECT_NE(old, self->rkey);
	EXPECT_EQ(old >> 8, self->rkey >> 8);
	fill(self->a.buf, 128, 5);
	ASSERT_EQ(IBV_WC_SUCCESS, rdma(&self->a, IBV_WR_RDMA_WRITE, 0, 128,
				       (uintptr_t)self->b.buf + 256, self->rkey));
	EXPECT_EQ(-1, verify(self->b.buf + 256, 128, 5));
	memset(self->b.buf + WIN_OFF, 0xee, 128);
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  rdma(&self->a, IBV_WR_RDMA_WRITE, 0, 128,
		       win_addr(self, variant, 0), old));
	EXPECT_EQ(-1, all_eq(self->b.buf + WIN_OFF, 128, 0xee));
}

TEST_F(mw, dealloc_revokes)
{
	ASSERT_EQ(IBV_WC_SUCCESS, bind_window(self, variant, RW));
	ASSERT_EQ(0, ibv_dealloc_mw(self->mw));
	self->mw = NULL;
	memset(self->b.buf + WIN_OFF, 0xee, 64);
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  rdma(&self->a, IBV_WR_RDMA_WRITE, 0, 64,
		       win_addr(self, variant, 0), self->rkey));
	EXPECT_EQ(-1, all_eq(self->b.buf + WIN_OFF, 64, 0xee));
}

/* An MR with a bound window can be neither deregistered nor re-registered. */
TEST_F(mw, mr_busy_while_bound)
{
	ASSERT_EQ(IBV_WC_SUCCESS, bind_window(self, variant, RW));
	errno = 0;
	EXPECT_NE(0, ibv_dereg_mr(self->wmr));
	EXPECT_EQ(EBUSY, errno);
	EXPECT_NE(0, ibv_rereg_mr(self->wmr, IBV_REREG_MR_CHANGE_ACCESS, NULL,
				  NULL, 0, IBV_ACCESS_LOCAL_WRITE));
	/* Still bound, still working. */
	fill(self->a.buf, 64, 6);
	ASSERT_EQ(IBV_WC_SUCCESS, rdma(&self->a, IBV_WR_RDMA_WRITE, 0, 64,
				       win_addr(self, variant, 0), self->rkey));
	EXPECT_EQ(-1, verify(self->b.buf + WIN_OFF, 64, 6));
	if (variant->type == IBV_MW_TYPE_1) {
		ASSERT_EQ(IBV_WC_SUCCESS, mw_bind(&self->b, self->mw, self->wmr,
						  0, 0, 0, &self->rkey));
	} else {
		ASSERT_EQ(IBV_WC_SUCCESS, local_inv(&self->b, self->rkey));
	}
	EXPECT_EQ(0, ibv_dereg_mr(self->wmr));
	self->wmr = NULL;
}

/*
 * Type 2 windows belong to the QP they were bound through; type 1 windows
 * to the PD.  Another connected pair in the same PD tries the rkey.
 */
TEST_F(mw, other_qp_of_the_pd)
{
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);
	struct ep c, d;
	int st;

	ASSERT_EQ(IBV_WC_SUCCESS, bind_window(self, variant, RW));
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &c, &d));
	memset(self->b.buf + WIN_OFF, 0xee, 64);
	fill(c.buf, 64, 7);
	st = rdma(&c, IBV_WR_RDMA_WRITE, 0, 64, win_addr(self, variant, 0),
		  self->rkey);
	if (variant->type == IBV_MW_TYPE_1) {
		EXPECT_EQ(IBV_WC_SUCCESS, st);
		EXPECT_EQ(-1, verify(self->b.buf + WIN_OFF, 64, 7));
	} else {
		EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, st);
		EXPECT_EQ(-1, all_eq(self->b.buf + WIN_OFF, 64, 0xee));
	}
	ep_destroy(&c);
	ep_destroy(&d);
}

/*
 * SEND_WITH_INV: a type 2 window of the receiver's is invalidated and the
 * receive completion names it; a type 1 window cannot be, and both sides
 * fail (invalid request).
 */
TEST_F(mw, send_with_invalidate)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge s;
	struct ibv_wc wc;

	ASSERT_EQ(IBV_WC_SUCCESS, bind_window(self, variant, RW));
	ASSERT_EQ(0, post_recv(&self->b, 0x5e, 0, 256));
	wr_init(&wr, &s, &self->a, IBV_WR_SEND_WITH_INV, 0x5d, 0, 32,
		IBV_SEND_SIGNALED, NULL, 0, 0);
	wr.invalidate_rkey = self->rkey;
	ASSERT_EQ(0, ibv_post_send(self->a.qp, &wr, &bad));
	if (variant->type == IBV_MW_TYPE_1) {
		EXPECT_EQ(IBV_WC_REM_INV_REQ_ERR, wait_status(&self->a, &wc));
		EXPECT_EQ(IBV_WC_REM_INV_REQ_ERR, wait_status(&self->b, &wc));
		EXPECT_EQ(0x5e, wc.wr_id);
		return;
	}
	ASSERT_EQ(IBV_WC_SUCCESS, wait_status(&self->a, &wc));
	EXPECT_EQ(IBV_WC_SEND, wc.opcode);
	ASSERT_EQ(IBV_WC_SUCCESS, wait_status(&self->b, &wc));
	EXPECT_EQ(IBV_WC_RECV, wc.opcode);
	EXPECT_EQ(32, wc.byte_len);
	EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_INV);
	EXPECT_FALSE(wc.wc_flags & IBV_WC_WITH_IMM);
	EXPECT_EQ(self->rkey, wc.invalidated_rkey);
	memset(self->b.buf + WIN_OFF, 0xee, 64);
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  rdma(&self->a, IBV_WR_RDMA_WRITE, 0, 64,
		       win_addr(self, variant, 0), self->rkey));
	EXPECT_EQ(-1, all_eq(self->b.buf + WIN_OFF, 64, 0xee));
}

/* LOCAL_INV of a type 1 window, or of a type 2 window twice, fails. */
TEST_F(mw, local_invalidate_refused)
{
	ASSERT_EQ(IBV_WC_SUCCESS, bind_window(self, variant, RW));
	if (variant->type == IBV_MW_TYPE_2)
		ASSERT_EQ(IBV_WC_SUCCESS, local_inv(&self->b, self->rkey));
	EXPECT_EQ(IBV_WC_LOC_QP_OP_ERR, local_inv(&self->b, self->rkey));
	EXPECT_TRUE(wait_state(self->b.qp, IBV_QPS_ERR, WC_MS));
}

/* ---- binds the engine refuses, each on a fresh pair ---- */

enum bad_bind {
	NO_BIND_RIGHT, MR_OTHER_PD, MW_OTHER_PD, OUTSIDE_MR, WRITE_NO_LOCAL_WRITE,
	ALREADY_BOUND, ZERO_LENGTH, TYPE1_ZERO_BASED,
};

FIXTURE(bad_bind) {
	struct env e;
	struct ep a, b;
	struct ibv_pd *pd2;
	struct ibv_mr *mr;
	struct ibv_mw *mw;
};

FIXTURE_VARIANT(bad_bind) {
	int type;
	enum bad_bind what;
};

FIXTURE_VARIANT_ADD(bad_bind, t1_no_bind_right) { IBV_MW_TYPE_1, NO_BIND_RIGHT };
FIXTURE_VARIANT_ADD(bad_bind, t2_no_bind_right) { IBV_MW_TYPE_2, NO_BIND_RIGHT };
FIXTURE_VARIANT_ADD(bad_bind, t1_mr_other_pd) { IBV_MW_TYPE_1, MR_OTHER_PD };
FIXTURE_VARIANT_ADD(bad_bind, t2_mr_other_pd) { IBV_MW_TYPE_2, MR_OTHER_PD };
FIXTURE_VARIANT_ADD(bad_bind, t1_mw_other_pd) { IBV_MW_TYPE_1, MW_OTHER_PD };
FIXTURE_VARIANT_ADD(bad_bind, t2_mw_other_pd) { IBV_MW_TYPE_2, MW_OTHER_PD };
FIXTURE_VARIANT_ADD(bad_bind, t1_outside_mr) { IBV_MW_TYPE_1, OUTSIDE_MR };
FIXTURE_VARIANT_ADD(bad_bind, t2_outside_mr) { IBV_MW_TYPE_2, OUTSIDE_MR };
FIXTURE_VARIANT_ADD(bad_bind, t2_write_no_local_write) { IBV_MW_TYPE_2, WRITE_NO_LOCAL_WRITE };
FIXTURE_VARIANT_ADD(bad_bind, t2_already_bound) { IBV_MW_TYPE_2, ALREADY_BOUND };
FIXTURE_VARIANT_ADD(bad_bind, t2_zero_length) { IBV_MW_TYPE_2, ZERO_LENGTH };
FIXTURE_VARIANT_ADD(bad_bind, t1_zero_based) { IBV_MW_TYPE_1, TYPE1_ZERO_BASED };

FIXTURE_SETUP(bad_bind)
{
	ASSERT_EQ(0, env_open(&self->e));
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND;
	struct ibv_pd *mr_pd = self->e.pd, *mw_pd = self->e.pd;

	ASSERT_TRUE(has_mw(&self->e, variant->type))
		TH_LOG("srnic reports no memory windows of type %d", variant->type);
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &self->a, &self->b));
	self->pd2 = ibv_alloc_pd(self->e.ctx);
	ASSERT_NE(NULL, self->pd2);
	if (variant->what == NO_BIND_RIGHT)
		access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	if (variant->what == WRITE_NO_LOCAL_WRITE)
		access = IBV_ACCESS_MW_BIND;
	if (variant->what == MR_OTHER_PD)
		mr_pd = self->pd2;
	if (variant->what == MW_OTHER_PD)
		mr_pd = mw_pd = self->pd2;	/* only the QP's PD differs */
	self->mr = ibv_reg_mr(mr_pd, self->b.buf, 256 * KiB, access);
	ASSERT_NE(NULL, self->mr);
	self->mw = ibv_alloc_mw(mw_pd, variant->type);
	ASSERT_NE(NULL, self->mw);
}

FIXTURE_TEARDOWN(bad_bind)
{
	if (self->mw)
		ibv_dealloc_mw(self->mw);
	if (self->mr)
		ibv_dereg_mr(self->mr);
	ep_destroy(&self->a);
	ep_destroy(&self->b);
	if (self->pd2)
		ibv_dealloc_pd(self->pd2);
	env_close(&self->e);
}

TEST_F(bad_bind, refused)
{
	uint64_t addr = (uintptr_t)self->b.buf, len = 4096;
	int access = IBV_ACCESS_REMOTE_WRITE;
	uint32_t rkey, first = 0;

	switch (variant->what) {
	case OUTSIDE_MR:
		addr += 256 * KiB - 100;
		break;
	case ALREADY_BOUND:
		ASSERT_EQ(IBV_WC_SUCCESS, mw_bind(&self->b, self->mw, self->mr,
					       addr, len, access, &first));
		break;
	case ZERO_LENGTH:
		len = 0;
		break;
	case TYPE1_ZERO_BASED:
		access |= IBV_ACCESS_ZERO_BASED;
		break;
	default:
		break;
	}
	if (variant->type == IBV_MW_TYPE_1 && variant->what == MR_OTHER_PD) {
		/* libibverbs itself refuses it; nothing is posted. */
		EXPECT_EQ(-1, mw_bind(&self->b, self->mw, self->mr, addr, len,
				   access, &rkey));
		EXPECT_EQ(IBV_QPS_RTS, qp_state(self->b.qp));
		return;
	}
	if (variant->what == ZERO_LENGTH) {
		/* No MR either: nothing for the provider to refuse. */
		EXPECT_EQ(IBV_WC_MW_BIND_ERR, mw_bind(&self->b, self->mw, NULL,
						   0, 0, access, &rkey));
	} else {
		EXPECT_EQ(IBV_WC_MW_BIND_ERR, mw_bind(&self->b, self->mw, self->mr,
						   addr, len, access, &rkey));
	}
	/* A failed bind is a QP error, as every error completion is. */
	EXPECT_TRUE(wait_state(self->b.qp, IBV_QPS_ERR, WC_MS));
}

/* ---- the rest: allocation, post-time checks, process exit ---- */

FIXTURE(dev) {
	struct env e;
};

FIXTURE_SETUP(dev)
{
	ASSERT_EQ(0, env_open(&self->e));
	ASSERT_TRUE(has_mw(&self->e, IBV_MW_TYPE_1) && has_mw(&self->e, IBV_MW_TYPE_2))
		TH_LOG("srnic reports no memory windows of type 1 and 2");
}

FIXTURE_TEARDOWN(dev)
{
	env_close(&self->e);
}

TEST_F(dev, alloc)
{
	enum { N = 1000 };
	struct ibv_mw **mw = calloc(N, sizeof(*mw));
	struct ibv_mr *mr;

	ASSERT_NE(NULL, mw);
	EXPECT_TRUE(self->e.dev.device_cap_flags & IBV_DEVICE_MEM_MGT_EXTENSIONS);
	/* Only types 1 and 2 exist. */
	errno = 0;
	EXPECT_EQ(NULL, ibv_alloc_mw(self->e.pd, 3));
	EXPECT_NE(0, errno);
	EXPECT_NE(EOPNOTSUPP, errno);
	mr = ibv_reg_mr(self->e.pd, mw, 4096, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr);
	for (int i = 0; i < N; i++) {
		mw[i] = ibv_alloc_mw(self->e.pd, i & 1 ? IBV_MW_TYPE_2 : IBV_MW_TYPE_1);
		ASSERT_NE(NULL, mw[i]) TH_LOG("window %d: %s", i, strerror(errno));
		/* Window rkeys are never an MR's. */
		EXPECT_NE(mr->rkey >> 8, mw[i]->rkey >> 8);
		for (int j = 0; j < i; j++)
			ASSERT_NE(mw[j]->rkey >> 8, mw[i]->rkey >> 8);
	}
	for (int i = 0; i < N; i++)
		EXPECT_EQ(0, ibv_dealloc_mw(mw[i]));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	free(mw);
}

/* What post time refuses: the bad WR is named, the queue is untouched. */
TEST_F(dev, post_time_checks)
{
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);
	struct qp_opts ou = qp_defaults(&self->e, IBV_QPT_UC);
	struct ibv_mw *mw1 = ibv_alloc_mw(self->e.pd, IBV_MW_TYPE_1);
	struct ibv_mw *mw2 = ibv_alloc_mw(self->e.pd, IBV_MW_TYPE_2);
	struct ibv_send_wr wr = { .opcode = IBV_WR_BIND_MW }, *bad = NULL;
	struct ibv_mw_bind mb = {};
	struct ep a, b, c, d;
	uint32_t rkey;

	ou.mr_access |= IBV_ACCESS_MW_BIND;
	ASSERT_NE(NULL, mw1);
	ASSERT_NE(NULL, mw2);
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &a, &b));
	ASSERT_EQ(0, pair_make(&self->e, &ou, &ou, &c, &d));
	mb.bind_info = (struct ibv_mw_bind_info){ a.mr, (uintptr_t)a.buf, 64,
						  IBV_ACCESS_REMOTE_WRITE };
	/* Type 1 windows are bound by ibv_bind_mw() only... */
	wr.bind_mw.mw = mw1;
	wr.bind_mw.rkey = ibv_inc_rkey(mw1->rkey);
	wr.bind_mw.bind_info = mb.bind_info;
	EXPECT_EQ(EINVAL, ibv_post_send(a.qp, &wr, &bad));
	EXPECT_EQ(&wr, bad);
	/* ...type 2 windows by a work request only. */
	EXPECT_EQ(EINVAL, ibv_bind_mw(a.qp, mw2, &mb));
	/* SEND_WITH_INV is RC's alone. */
	wr = (struct ibv_send_wr){ .opcode = IBV_WR_SEND_WITH_INV };
	bad = NULL;
	EXPECT_EQ(EINVAL, ibv_post_send(c.qp, &wr, &bad));
	EXPECT_EQ(&wr, bad);
	/* Nothing of it reached a queue. */
	expect_quiet_pair(_metadata, &a, &b);
	expect_quiet_pair(_metadata, &c, &d);
	/* UC binds windows (and invalidates them) as RC does. */
	EXPECT_EQ(IBV_WC_SUCCESS, mw_bind(&c, mw2, c.mr, (uintptr_t)c.buf, 64,
					  IBV_ACCESS_REMOTE_WRITE, &rkey));
	EXPECT_EQ(IBV_WC_SUCCESS, local_inv(&c, rkey));
	ep_destroy(&a);
	ep_destroy(&b);
	ep_destroy(&c);
	ep_destroy(&d);
	EXPECT_EQ(0, ibv_dealloc_mw(mw1));
	EXPECT_EQ(0, ibv_dealloc_mw(mw2));
}

TEST_F(dev, local_invalidate_of_an_mr)
{
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);
	struct ep a, b;

	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &a, &b));
	/* User MRs cannot be invalidated: that is for fast-register MRs. */
	EXPECT_EQ(IBV_WC_LOC_QP_OP_ERR, local_inv(&a, b.mr->rkey));
	ep_destroy(&a);
	ep_destroy(&b);
}

static int pinned_back(const char *want)
{
	return pinned_pages() == atoll(want);
}

/*
 * A process that exits with windows bound to its MR: the context teardown
 * must get past the MR it cannot deregister first, and unpin everything.
 */
TEST_F(dev, exit_with_bound_windows)
{
	long long before = pinned_pages();
	char want[32];
	int st;
	pid_t pid;

	ASSERT_LE(0, before) TH_LOG("no %s (debugfs mounted?)",
				    dbg_path("pinned_pages"));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct env e;
		struct qp_opts o;
		struct ep a, b;
		struct ibv_mw *w1, *w2;
		uint32_t k;

		if (env_open(&e))
			_exit(1);
		o = qp_defaults(&e, IBV_QPT_RC);
		o.mr_access |= IBV_ACCESS_MW_BIND;
		if (pair_make(&e, &o, &o, &a, &b))
			_exit(2);
		w1 = ibv_alloc_mw(e.pd, IBV_MW_TYPE_1);
		w2 = ibv_alloc_mw(e.pd, IBV_MW_TYPE_2);
		if (!w1 || !w2)
			_exit(3);
		if (mw_bind(&b, w1, b.mr, (uintptr_t)b.buf, 4096,
			 IBV_ACCESS_REMOTE_WRITE, &k) != IBV_WC_SUCCESS ||
		    mw_bind(&b, w2, b.mr, (uintptr_t)b.buf, 4096,
			 IBV_ACCESS_REMOTE_WRITE, &k) != IBV_WC_SUCCESS)
			_exit(4);
		if (pinned_pages() <= before)
			_exit(5);
		_exit(0);	/* no cleanup at all */
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFEXITED(st));
	ASSERT_EQ(0, WEXITSTATUS(st));
	snprintf(want, sizeof(want), "%lld", before);
	EXPECT_TRUE(wait_until(pinned_back, want, 1, WC_MS))
		TH_LOG("pinned pages %lld, %lld before", pinned_pages(), before);
}

TEST_HARNESS_MAIN
