// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Device memory on $SRNIC_DEV: allocation limits, copies to and from it,
 * zero-based MRs over it used by every operation, and its lifetime.
 */
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "traffic.h"

FIXTURE(dm) {
	struct env e;
	struct ibv_device_attr_ex x;
};

FIXTURE_SETUP(dm)
{
	ASSERT_EQ(0, env_open(&self->e));
	ASSERT_EQ(0, ibv_query_device_ex(self->e.ctx, NULL, &self->x));
	ASSERT_NE(0, self->x.max_dm_size) TH_LOG("srnic reports no device memory");
}

FIXTURE_TEARDOWN(dm)
{
	env_close(&self->e);
}

static struct ibv_dm *dm_alloc(struct ibv_context *ctx, size_t len, int align)
{
	struct ibv_alloc_dm_attr a = { .length = len, .log_align_req = align };

	return ibv_alloc_dm(ctx, &a);
}

TEST_F(dm, limits)
{
	uint64_t max = self->x.max_dm_size;
	struct ibv_alloc_dm_attr bad = { .length = 64, .comp_mask = 1 };
	struct ibv_dm *dm[4];

	EXPECT_EQ(NULL, dm_alloc(self->e.ctx, max + 1, 0));
	EXPECT_EQ(NULL, dm_alloc(self->e.ctx, 0, 0));
	EXPECT_EQ(NULL, ibv_alloc_dm(self->e.ctx, &bad));
	/* The whole of it, in quarters; then nothing more. */
	for (int i = 0; i < 4; i++) {
		dm[i] = dm_alloc(self->e.ctx, max / 4, 0);
		ASSERT_NE(NULL, dm[i]) TH_LOG("quarter %d: %s", i, strerror(errno));
	}
	errno = 0;
	EXPECT_EQ(NULL, dm_alloc(self->e.ctx, 4, 0));
	EXPECT_EQ(ENOMEM, errno);
	EXPECT_EQ(0, ibv_free_dm(dm[2]));
	dm[2] = dm_alloc(self->e.ctx, max / 4, 12);
	ASSERT_NE(NULL, dm[2]);
	for (int i = 0; i < 4; i++)
		EXPECT_EQ(0, ibv_free_dm(dm[i]));
}

TEST_F(dm, copies)
{
	enum { LEN = 8192 + 12 };
	struct ibv_dm *dm = dm_alloc(self->e.ctx, LEN, 0);
	uint8_t in[LEN], out[LEN];

	ASSERT_NE(NULL, dm);
	fill(in, LEN, 1);
	ASSERT_EQ(0, ibv_memcpy_to_dm(dm, 0, in, LEN));
	memset(out, 0, LEN);
	ASSERT_EQ(0, ibv_memcpy_from_dm(out, dm, 0, LEN));
	EXPECT_EQ(0, memcmp(in, out, LEN));
	ASSERT_EQ(0, ibv_memcpy_from_dm(out, dm, 4096, 100));
	EXPECT_EQ(0, memcmp(in + 4096, out, 100));
	/* 4-byte granular offsets; nothing past the end. */
	EXPECT_EQ(EINVAL, ibv_memcpy_to_dm(dm, 2, in, 4));
	EXPECT_EQ(EINVAL, ibv_memcpy_to_dm(dm, LEN - 4, in, 8));
	EXPECT_EQ(EINVAL, ibv_memcpy_from_dm(out, dm, LEN + 4, 4));
	EXPECT_EQ(0, ibv_free_dm(dm));
}

/* Zero-based MRs over device memory, reached by every operation. */
TEST_F(dm, traffic)
{
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ZERO_BASED |
		     (has_atomics(&self->e) ? IBV_ACCESS_REMOTE_ATOMIC : 0);
	struct ibv_dm *dm = dm_alloc(self->e.ctx, 16384, 0);
	struct ibv_send_wr wr, *bad;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_sge s, rs;
	uint8_t buf[4096];
	struct ibv_mr *mr;
	struct ibv_wc wc;
	struct ep a, b;

	ASSERT_NE(NULL, dm);
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &a, &b));
	/* Only zero-based, only inside. */
	EXPECT_EQ(NULL, ibv_reg_dm_mr(self->e.pd, dm, 0, 4096,
				      access & ~IBV_ACCESS_ZERO_BASED));
	EXPECT_EQ(NULL, ibv_reg_dm_mr(self->e.pd, dm, 8192, 16384, access));
	/* The MR covers the DM's second half: its iova 0 is DM offset 8192. */
	mr = ibv_reg_dm_mr(self->e.pd, dm, 8192, 8192, access);
	ASSERT_NE(NULL, mr) TH_LOG("reg_dm_mr: %s", strerror(errno));
	/* The DM is in use. */
	EXPECT_NE(0, ibv_free_dm(dm));

	/* WRITE into it. */
	fill(a.buf, 4096, 2);
	ASSERT_EQ(IBV_WC_SUCCESS, rdma_op(&a, IBV_WR_RDMA_WRITE, 0, 4096, 100,
					  mr->rkey, 0));
	ASSERT_EQ(0, ibv_memcpy_from_dm(buf, dm, 8192 + 100, 4096));
	EXPECT_EQ(-1, verify(buf, 4096, 2));
	/* READ from it. */
	fill(buf, 1024, 3);
	ASSERT_EQ(0, ibv_memcpy_to_dm(dm, 8192 + 4096, buf, 1024));
	ASSERT_EQ(IBV_WC_SUCCESS, rdma_op(&a, IBV_WR_RDMA_READ, 8192, 1024,
					  4096, mr->rkey, 0));
	EXPECT_EQ(-1, verify(a.buf + 8192, 1024, 3));
	/* SEND from it (b's SGE is in the DM), into a's buffer. */
	rs = (struct ibv_sge){ (uintptr_t)a.buf + 16384, 1024, a.mr->lkey };
	rwr = (struct ibv_recv_wr){ .wr_id = 9, .sg_list = &rs, .num_sge = 1 };
	ASSERT_EQ(0, ibv_post_recv(a.qp, &rwr, &rbad));
	s = (struct ibv_sge){ 4096, 1024, mr->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 10, .sg_list = &s, .num_sge = 1,
				   .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED };
	ASSERT_EQ(0, ibv_post_send(b.qp, &wr, &bad));
	WAIT_WC(b.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
	WAIT_WC(a.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
	EXPECT_EQ(-1, verify(a.buf + 16384, 1024, 3));
	/* An atomic on it. */
	if (has_atomics(&self->e)) {
		uint64_t v = 40;

		ASSERT_EQ(0, ibv_memcpy_to_dm(dm, 8192 + 64, &v, 8));
		ASSERT_EQ(IBV_WC_SUCCESS,
			  rdma_op(&a, IBV_WR_ATOMIC_FETCH_AND_ADD, 24576, 8, 64,
				  mr->rkey, 2));
		ASSERT_EQ(0, ibv_memcpy_from_dm(&v, dm, 8192 + 64, 8));
		EXPECT_EQ(42, v);
		EXPECT_EQ(40, *(uint64_t *)(a.buf + 24576));
	}
	/* Past the MR (though inside the DM): refused. */
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  rdma_op(&a, IBV_WR_RDMA_WRITE, 0, 16, 8192 - 8, mr->rkey, 0));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(0, ibv_free_dm(dm));
	ep_destroy(&a);
	ep_destroy(&b);
}

/*
 * An MR over device memory from an offset that is not a multiple of 8: an
 * aligned iova there is a split 8 bytes, which no atomic may touch (a
 * locked instruction across two cache lines; an alignment fault on some
 * CPUs).  The atomic fails as a misaligned one does, and changes nothing.
 */
TEST_F(dm, atomic_on_a_split_word)
{
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC |
		     IBV_ACCESS_ZERO_BASED;
	struct ibv_dm *dm = dm_alloc(self->e.ctx, 4096, 0);
	uint8_t want[64], got[64];
	struct ibv_mr *mr;
	struct ep a, b;

	ASSERT_TRUE(has_atomics(&self->e)) TH_LOG("srnic reports atomic_cap NONE");
	ASSERT_NE(NULL, dm);
	fill(want, sizeof(want), 5);
	ASSERT_EQ(0, ibv_memcpy_to_dm(dm, 0, want, sizeof(want)));
	mr = ibv_reg_dm_mr(self->e.pd, dm, 4, 1024, access);
	ASSERT_NE(NULL, mr) TH_LOG("reg_dm_mr: %s", strerror(errno));
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &a, &b));
	EXPECT_EQ(IBV_WC_REM_INV_REQ_ERR,
		  rdma_op(&a, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 8, 8, mr->rkey, 2));
	ASSERT_EQ(0, ibv_memcpy_from_dm(got, dm, 0, sizeof(got)));
	EXPECT_EQ(0, memcmp(want, got, sizeof(got)));
	ep_destroy(&a);
	ep_destroy(&b);
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(0, ibv_free_dm(dm));
}

/* Device memory a process leaves behind is the device's again. */
TEST_F(dm, released_at_exit)
{
	uint64_t max = self->x.max_dm_size;
	struct ibv_dm *dm;
	int st;
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (!pid) {
		struct env e;

		if (env_open(&e))
			_exit(1);
		/* All of it, mapped and registered, and never freed. */
		dm = dm_alloc(e.ctx, max, 0);
		if (!dm || !ibv_reg_dm_mr(e.pd, dm, 0, max,
					  IBV_ACCESS_LOCAL_WRITE |
					  IBV_ACCESS_ZERO_BASED))
			_exit(2);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFEXITED(st));
	ASSERT_EQ(0, WEXITSTATUS(st));
	dm = dm_alloc(self->e.ctx, max, 0);
	ASSERT_NE(NULL, dm) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(0, ibv_free_dm(dm));
}

TEST_HARNESS_MAIN
