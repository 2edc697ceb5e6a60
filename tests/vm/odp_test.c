// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * On-demand paging on $SRNIC_DEV: faults on first touch by every opcode on
 * both sides, invalidation (munmap and remap, MADV_DONTNEED, fork's COW),
 * implicit MRs, prefetch, errors, and a fault storm across QPs.  The ODP
 * counters in debugfs (srnic/<dev>/odp) show what the engine did.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "traffic.h"

#define ODP_LEN (4u << 20)	/* 1024 pages; tests use up to page 520 */
#define PAGE 4096u

struct odp_stats {
	long long page_faults, pages_faulted, invalidations, pages_invalidated,
		prefetches, pages_prefetched, implicit_children;
};

static int odp_stats(struct odp_stats *st)
{
	char *s = slurp(dbg_path("odp")), *p;

	memset(st, 0, sizeof(*st));
	if (!s)
		return -1;
#define FIELD(f) do { p = strstr(s, #f " "); if (p) st->f = atoll(p + sizeof(#f)); } while (0)
	FIELD(page_faults);
	FIELD(pages_faulted);
	FIELD(invalidations);
	FIELD(pages_invalidated);
	FIELD(prefetches);
	FIELD(pages_prefetched);
	FIELD(implicit_children);
#undef FIELD
	free(s);
	return 0;
}

static int has_odp(const struct env *e, uint32_t rc_caps, int implicit)
{
	struct ibv_device_attr_ex x;

	if (ibv_query_device_ex(e->ctx, NULL, &x))
		return 0;
	if (!(x.odp_caps.general_caps & IBV_ODP_SUPPORT))
		return 0;
	if (implicit && !(x.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT))
		return 0;
	return (x.odp_caps.per_transport_caps.rc_odp_caps & rc_caps) == rc_caps;
}

static int op1(struct ep *x, enum ibv_wr_opcode op, size_t off, uint32_t len,
	       uint64_t raddr, uint32_t rkey)
{
	return rdma_op(x, op, off, len, raddr, rkey, 5);
}

FIXTURE(odp) {
	struct env e;
	struct ep a, b;		/* both buffers ODP, never touched by the NIC */
	struct odp_stats st0;
};

FIXTURE_SETUP(odp)
{
	ASSERT_EQ(0, env_open(&self->e));
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);

	ASSERT_TRUE(has_odp(&self->e, IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV, 0))
		TH_LOG("srnic reports no ODP for RC send/receive");
	o.mr_access |= IBV_ACCESS_ON_DEMAND;
	o.buf_len = ODP_LEN;
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &self->a, &self->b));
	ASSERT_EQ(0, odp_stats(&self->st0)) TH_LOG("no %s", dbg_path("odp"));
}

FIXTURE_TEARDOWN(odp)
{
	ep_destroy(&self->a);
	ep_destroy(&self->b);
	env_close(&self->e);
}

/* Faults the engine took since the fixture began. */
static long long faults_since(const struct odp_stats *st0)
{
	struct odp_stats st;

	odp_stats(&st);
	return st.page_faults - st0->page_faults;
}

TEST_F(odp, caps_and_registration)
{
	struct ibv_device_attr_ex x;
	struct ibv_mr *mr;

	ASSERT_EQ(0, ibv_query_device_ex(self->e.ctx, NULL, &x));
	EXPECT_TRUE(x.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT);
	EXPECT_EQ(IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
		  IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
		  IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV,
		  x.odp_caps.per_transport_caps.rc_odp_caps);
	EXPECT_TRUE(x.odp_caps.per_transport_caps.ud_odp_caps & IBV_ODP_SUPPORT_RECV);
	/* Nothing is pinned for an ODP MR, so it may cover unmapped memory. */
	mr = ibv_reg_mr(self->e.pd, (void *)(64ul << 30), 1ul << 30,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	ASSERT_NE(NULL, mr) TH_LOG("%s", strerror(errno));
	/* ODP MRs are not re-registered in place. */
	EXPECT_NE(0, ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND |
				  IBV_ACCESS_REMOTE_READ));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
}

/* First touch by the NIC, every opcode, both sides; the data is right. */
TEST_F(odp, first_touch_every_opcode)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge s;
	struct ibv_wc wc;
	long long f;

	/* SEND: a's pages read, b's receive buffer written. */
	fill(self->a.buf, 3 * PAGE, 1);
	ASSERT_EQ(0, post_recv(&self->b, 1, PAGE / 2, 3 * PAGE));
	wr_init(&wr, &s, &self->a, IBV_WR_SEND, 2, 0, 3 * PAGE,
		IBV_SEND_SIGNALED, NULL, 0, 0);
	ASSERT_EQ(0, ibv_post_send(self->a.qp, &wr, &bad));
	WAIT_WC(self->a.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
	WAIT_WC(self->b.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
	EXPECT_EQ(3 * PAGE, wc.byte_len);
	EXPECT_EQ(-1, verify(self->b.buf + PAGE / 2, 3 * PAGE, 1));
	f = faults_since(&self->st0);
	EXPECT_LE(2, f) TH_LOG("%lld faults for a first SEND", f);

	/* WRITE into untouched pages of b. */
	fill(self->a.buf + 8 * PAGE, 2 * PAGE, 2);
	ASSERT_EQ(IBV_WC_SUCCESS,
		  op1(&self->a, IBV_WR_RDMA_WRITE, 8 * PAGE, 2 * PAGE,
		      (uintptr_t)self->b.buf + 100 * PAGE, self->b.mr->rkey));
	EXPECT_EQ(-1, verify(self->b.buf + 100 * PAGE, 2 * PAGE, 2));

	/* READ from b's pages the CPU wrote into a's untouched pages. */
	fill(self->b.buf + 50 * PAGE, PAGE, 3);
	ASSERT_EQ(IBV_WC_SUCCESS,
		  op1(&self->a, IBV_WR_RDMA_READ, 150 * PAGE, PAGE,
		      (uintptr_t)self->b.buf + 50 * PAGE, self->b.mr->rkey));
	EXPECT_EQ(-1, verify(self->a.buf + 150 * PAGE, PAGE, 3));

	/* Atomics on an untouched page, the result into another. */
	if (has_atomics(&self->e)) {
		ASSERT_EQ(IBV_WC_SUCCESS,
			  op1(&self->a, IBV_WR_ATOMIC_FETCH_AND_ADD, 200 * PAGE,
			      8, (uintptr_t)self->b.buf + 200 * PAGE,
			      self->b.mr->rkey));
		EXPECT_EQ(5, *(uint64_t *)(self->b.buf + 200 * PAGE));
		EXPECT_EQ(0, *(uint64_t *)(self->a.buf + 200 * PAGE));
	}
	/* Every new range faulted; the first SEND's pages did not again. */
	EXPECT_LE(f + 4, faults_since(&self->st0));
}

/* The second use of the same pages takes no fault. */
TEST_F(odp, mapped_pages_do_not_fault_again)
{
	long long f;

	fill(self->a.buf, PAGE, 4);
	ASSERT_EQ(IBV_WC_SUCCESS, op1(&self->a, IBV_WR_RDMA_WRITE, 0, PAGE,
				      (uintptr_t)self->b.buf, self->b.mr->rkey));
	f = faults_since(&self->st0);
	EXPECT_LE(2, f);
	for (int i = 0; i < 10; i++)
		ASSERT_EQ(IBV_WC_SUCCESS,
			  op1(&self->a, IBV_WR_RDMA_WRITE, 0, PAGE,
			      (uintptr_t)self->b.buf, self->b.mr->rkey));
	EXPECT_EQ(f, faults_since(&self->st0));
	EXPECT_EQ(-1, verify(self->b.buf, PAGE, 4));
}

/*
 * munmap and mmap again at the same address during traffic: the MR keeps
 * its key, the new pages are used (never the old ones).
 */
TEST_F(odp, munmap_and_remap)
{
	uint8_t *target = self->b.buf + 64 * PAGE;
	struct odp_stats st;
	void *p;

	fill(self->a.buf, 16 * PAGE, 5);
	ASSERT_EQ(IBV_WC_SUCCESS, op1(&self->a, IBV_WR_RDMA_WRITE, 0, 16 * PAGE,
				      (uintptr_t)target, self->b.mr->rkey));
	EXPECT_EQ(-1, verify(target, 16 * PAGE, 5));

	ASSERT_EQ(0, munmap(target, 16 * PAGE));
	odp_stats(&st);
	EXPECT_LT(self->st0.invalidations, st.invalidations);
	p = mmap(target, 16 * PAGE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ASSERT_EQ((void *)target, p);
	EXPECT_EQ(-1, all_eq(target, 16 * PAGE, 0));

	fill(self->a.buf, 16 * PAGE, 6);
	ASSERT_EQ(IBV_WC_SUCCESS, op1(&self->a, IBV_WR_RDMA_WRITE, 0, 16 * PAGE,
				      (uintptr_t)target, self->b.mr->rkey));
	EXPECT_EQ(-1, verify(target, 16 * PAGE, 6));
	/* And READ sees what the CPU writes into the new pages. */
	fill(target, PAGE, 7);
	ASSERT_EQ(IBV_WC_SUCCESS, op1(&self->a, IBV_WR_RDMA_READ, 32 * PAGE,
				      PAGE, (uintptr_t)target, self->b.mr->rkey));
	EXPECT_EQ(-1, verify(self->a.buf + 32 * PAGE, PAGE, 7));
}

/* Remapping a range again and again while the NIC writes into it. */
struct remapper {
	uint8_t *target;
	size_t len;
	atomic_int stop;
	int remaps, failed;
};

static void *remapper_main(void *arg)
{
	struct remapper *r = arg;

	while (!atomic_load(&r->stop) && r->remaps < 200) {
		/* MAP_FIXED replaces the pages at once: never a hole. */
		if (mmap(r->target, r->len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) !=
		    r->target)
			r->failed++;
		r->remaps++;
		sched_yield();
	}
	return NULL;
}

TEST_F_TIMEOUT(odp, remap_during_traffic, 240)
{
	struct remapper r = { .target = self->b.buf + 600 * PAGE,
			      .len = 8 * PAGE };
	struct odp_stats st;
	pthread_t t;
	int writes = 0;

	fill(self->a.buf, 8 * PAGE, 15);
	ASSERT_EQ(0, pthread_create(&t, NULL, remapper_main, &r));
	/* Every write succeeds, whichever pages it finds. */
	for (; writes < 300; writes++)
		ASSERT_EQ(IBV_WC_SUCCESS,
			  op1(&self->a, IBV_WR_RDMA_WRITE, 0, 8 * PAGE,
			      (uintptr_t)r.target, self->b.mr->rkey))
			TH_LOG("write %d, after %d remaps", writes, r.remaps);
	atomic_store(&r.stop, 1);
	pthread_join(t, NULL);
	EXPECT_EQ(0, r.failed);
	odp_stats(&st);
	EXPECT_LE(self->st0.invalidations + 1, st.invalidations);
	/* The pages there now get the next write, and only those. */
	fill(self->a.buf, 8 * PAGE, 16);
	ASSERT_EQ(IBV_WC_SUCCESS, op1(&self->a, IBV_WR_RDMA_WRITE, 0, 8 * PAGE,
				      (uintptr_t)r.target, self->b.mr->rkey));
	EXPECT_EQ(-1, verify(r.target, 8 * PAGE, 16));
}

/* MADV_DONTNEED drops the pages: the NIC then reads zeros, not old data. */
TEST_F(odp, madvise_dontneed)
{
	uint8_t *target = self->b.buf + 128 * PAGE;
	struct odp_stats st;

	fill(self->a.buf, 4 * PAGE, 8);
	ASSERT_EQ(IBV_WC_SUCCESS, op1(&self->a, IBV_WR_RDMA_WRITE, 0, 4 * PAGE,
				      (uintptr_t)target, self->b.mr->rkey));
	EXPECT_EQ(-1, verify(target, 4 * PAGE, 8));
	ASSERT_EQ(0, madvise(target, 4 * PAGE, MADV_DONTNEED));
	odp_stats(&st);
	EXPECT_LE(self->st0.pages_invalidated + 4, st.pages_invalidated);
	memset(self->a.buf + 16 * PAGE, 0xee, 4 * PAGE);
	ASSERT_EQ(IBV_WC_SUCCESS, op1(&self->a, IBV_WR_RDMA_READ, 16 * PAGE,
				      4 * PAGE, (uintptr_t)target,
				      self->b.mr->rkey));
	EXPECT_EQ(-1, all_eq(self->a.buf + 16 * PAGE, 4 * PAGE, 0));
	/* A write after it is seen by the CPU. */
	fill(self->a.buf, PAGE, 9);
	ASSERT_EQ(IBV_WC_SUCCESS, op1(&self->a, IBV_WR_RDMA_WRITE, 0, PAGE,
				      (uintptr_t)target, self->b.mr->rkey));
	EXPECT_EQ(-1, verify(target, PAGE, 9));
}

/*
 * fork: the parent's pages become copy-on-write.  What the NIC writes into
 * the parent's MR afterwards belongs to the parent; the child keeps the
 * contents it inherited.
 */
TEST_F(odp, fork_cow)
{
	uint8_t *target = self->b.buf + 256 * PAGE;
	int go[2], res[2], st;
	char c = 0;
	pid_t pid;

	fill(self->a.buf, 2 * PAGE, 10);
	ASSERT_EQ(IBV_WC_SUCCESS, op1(&self->a, IBV_WR_RDMA_WRITE, 0, 2 * PAGE,
				      (uintptr_t)target, self->b.mr->rkey));
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(res));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* Wait until the parent's NIC write is done, then look. */
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		c = verify(target, 2 * PAGE, 10) == -1 ? 'y' : 'n';
		_exit(write(res[1], &c, 1) == 1 ? 0 : 3);
	}
	fill(self->a.buf, 2 * PAGE, 11);
	ASSERT_EQ(IBV_WC_SUCCESS, op1(&self->a, IBV_WR_RDMA_WRITE, 0, 2 * PAGE,
				      (uintptr_t)target, self->b.mr->rkey));
	EXPECT_EQ(-1, verify(target, 2 * PAGE, 11));
	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(1, read(res[0], &c, 1));
	EXPECT_EQ('y', c) TH_LOG("the child saw the parent's later NIC write");
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st));
	/* And the parent's CPU writes reach the NIC's view. */
	fill(target, PAGE, 12);
	ASSERT_EQ(IBV_WC_SUCCESS, op1(&self->a, IBV_WR_RDMA_READ, 8 * PAGE,
				      PAGE, (uintptr_t)target, self->b.mr->rkey));
	EXPECT_EQ(-1, verify(self->a.buf + 8 * PAGE, PAGE, 12));
	close(go[0]);
	close(go[1]);
	close(res[0]);
	close(res[1]);
}

/* A range that is gone: the access completes in error, nothing else. */
TEST_F(odp, access_after_munmap)
{
	uint8_t *target = self->b.buf + 300 * PAGE;

	ASSERT_EQ(0, munmap(target, 4 * PAGE));
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  op1(&self->a, IBV_WR_RDMA_WRITE, 0, PAGE, (uintptr_t)target,
		      self->b.mr->rkey));
	EXPECT_TRUE(wait_state(self->a.qp, IBV_QPS_ERR, WC_MS));
	/* Put it back so that teardown's munmap of the buffer is whole. */
	ASSERT_EQ((void *)target, mmap(target, 4 * PAGE, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
				       -1, 0));
}

TEST_F(odp, local_buffer_unmapped)
{
	uint8_t *src = self->a.buf + 300 * PAGE;
	struct ibv_wc wc;

	ASSERT_EQ(0, munmap(src, 4 * PAGE));
	ASSERT_EQ(0, post_send1(&self->a, IBV_WR_RDMA_WRITE, 7, 300 * PAGE,
				PAGE, IBV_SEND_SIGNALED, &self->b, 0, 0));
	WAIT_WC(self->a.cq, wc);
	EXPECT_EQ(IBV_WC_LOC_PROT_ERR, wc.status);
	ASSERT_EQ((void *)src, mmap(src, 4 * PAGE, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
				    -1, 0));
}

/* PREFETCH_WRITE (synchronous) maps the range: no fault afterwards. */
TEST_F(odp, prefetch_then_no_fault)
{
	struct ibv_sge sge = { (uintptr_t)self->b.buf + 400 * PAGE, 8 * PAGE,
			       self->b.mr->lkey };
	struct odp_stats st;
	long long f;

	ASSERT_EQ(0, ibv_advise_mr(self->e.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				   IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1));
	odp_stats(&st);
	EXPECT_EQ(self->st0.prefetches + 1, st.prefetches);
	EXPECT_LE(self->st0.pages_prefetched + 8, st.pages_prefetched);
	/* a's side is prefetched too (for reading: PREFETCH). */
	sge = (struct ibv_sge){ (uintptr_t)self->a.buf, 8 * PAGE, self->a.mr->lkey };
	fill(self->a.buf, 8 * PAGE, 13);
	ASSERT_EQ(0, ibv_advise_mr(self->e.pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
				   IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1));
	f = faults_since(&self->st0);
	ASSERT_EQ(IBV_WC_SUCCESS,
		  op1(&self->a, IBV_WR_RDMA_WRITE, 0, 8 * PAGE,
		      (uintptr_t)self->b.buf + 400 * PAGE, self->b.mr->rkey));
	EXPECT_EQ(-1, verify(self->b.buf + 400 * PAGE, 8 * PAGE, 13));
	EXPECT_EQ(f, faults_since(&self->st0));
	EXPECT_EQ(0, f);
}

/* PREFETCH_NO_FAULT maps only what the CPU has mapped. */
TEST_F(odp, prefetch_no_fault)
{
	struct ibv_sge sge = { (uintptr_t)self->b.buf + 500 * PAGE, 4 * PAGE,
			       self->b.mr->lkey };
	struct odp_stats st1, st2, st3;

	/* 2 of the 4 pages, and no transparent huge page around them. */
	ASSERT_EQ(0, madvise(self->b.buf, ODP_LEN, MADV_NOHUGEPAGE));
	memset(self->b.buf + 500 * PAGE, 1, 2 * PAGE);
	ASSERT_EQ(0, ibv_advise_mr(self->e.pd,
				   IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
				   IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1));
	odp_stats(&st1);
	EXPECT_EQ(self->st0.pages_prefetched + 2, st1.pages_prefetched);
	EXPECT_EQ(self->st0.page_faults, st1.page_faults);
	/* The source side, mapped too, so that only b's pages can fault. */
	fill(self->a.buf, 2 * PAGE, 14);
	sge = (struct ibv_sge){ (uintptr_t)self->a.buf, 2 * PAGE, self->a.mr->lkey };
	ASSERT_EQ(0, ibv_advise_mr(self->e.pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
				   IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1));
	/* Writing the two mapped pages takes no fault... */
	odp_stats(&st2);
	ASSERT_EQ(IBV_WC_SUCCESS,
		  op1(&self->a, IBV_WR_RDMA_WRITE, 0, 2 * PAGE,
		      (uintptr_t)self->b.buf + 500 * PAGE, self->b.mr->rkey));
	odp_stats(&st3);
	EXPECT_EQ(st2.page_faults, st3.page_faults);
	/* ...the other two do. */
	ASSERT_EQ(IBV_WC_SUCCESS,
		  op1(&self->a, IBV_WR_RDMA_WRITE, 0, 2 * PAGE,
		      (uintptr_t)self->b.buf + 502 * PAGE, self->b.mr->rkey));
	odp_stats(&st3);
	EXPECT_EQ(st2.page_faults + 1, st3.page_faults);
	EXPECT_EQ(-1, verify(self->b.buf + 502 * PAGE, 2 * PAGE, 14));
}

TEST_F(odp, advise_refused)
{
	struct ibv_sge sge = { (uintptr_t)self->b.buf, PAGE, self->b.mr->lkey };
	struct ibv_mr *pinned;

	/* Outside the MR. */
	sge.addr += ODP_LEN;
	EXPECT_EQ(EINVAL, ibv_advise_mr(self->e.pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
					IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1));
	/* Not an ODP MR. */
	pinned = ibv_reg_mr(self->e.pd, self->a.buf, PAGE, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, pinned);
	sge = (struct ibv_sge){ (uintptr_t)self->a.buf, PAGE, pinned->lkey };
	EXPECT_EQ(EINVAL, ibv_advise_mr(self->e.pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
					IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1));
	EXPECT_EQ(0, ibv_dereg_mr(pinned));
}

/* ---- implicit ODP: one key for the whole address space ---- */

TEST_F(odp, implicit_several_mappings)
{
	enum { N = 3 };
	struct ibv_mr *imr;
	uint8_t *map[N], *hole[N];

	ASSERT_TRUE(has_odp(&self->e, IBV_ODP_SUPPORT_WRITE, 1))
		TH_LOG("srnic reports no implicit ODP");
	imr = ibv_reg_mr(self->e.pd, NULL, SIZE_MAX,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ON_DEMAND);
	ASSERT_NE(NULL, imr) TH_LOG("implicit MR: %s", strerror(errno));
	/* Separate mappings, far apart (other 16 MiB chunks). */
	for (int i = 0; i < N; i++) {
		map[i] = mmap(NULL, 64 * PAGE, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ASSERT_NE(MAP_FAILED, map[i]);
		/* Keep them apart: a hole of 32 MiB after each. */
		hole[i] = mmap(NULL, 32u << 20, PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ASSERT_NE(MAP_FAILED, hole[i]);
	}
	for (int i = 0; i < N; i++) {
		fill(self->a.buf, 8 * PAGE, 20 + i);
		/* a writes into map[i] through the implicit rkey... */
		ASSERT_EQ(IBV_WC_SUCCESS,
			  op1(&self->a, IBV_WR_RDMA_WRITE, 0, 8 * PAGE,
			      (uintptr_t)map[i] + 3 * PAGE, imr->rkey));
		EXPECT_EQ(-1, verify(map[i] + 3 * PAGE, 8 * PAGE, 20 + i));
	}
	/* ...and b sends from the mappings with the implicit lkey. */
	for (int i = 0; i < N; i++) {
		struct ibv_sge s = { (uintptr_t)map[i] + 3 * PAGE, 8 * PAGE,
				     imr->lkey };
		struct ibv_send_wr wr = { .wr_id = i, .sg_list = &s, .num_sge = 1,
					  .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;
		struct ibv_wc wc;

		ASSERT_EQ(0, post_recv(&self->a, 50 + i, 64 * PAGE, 8 * PAGE));
		ASSERT_EQ(0, ibv_post_send(self->b.qp, &wr, &bad));
		WAIT_WC(self->b.cq, wc);
		ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
		WAIT_WC(self->a.cq, wc);
		ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
		EXPECT_EQ(-1, verify(self->a.buf + 64 * PAGE, 8 * PAGE, 20 + i));
	}
	/* Unmapping one of them: the implicit key stops reaching it. */
	ASSERT_EQ(0, munmap(map[1], 64 * PAGE));
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  op1(&self->a, IBV_WR_RDMA_WRITE, 0, PAGE, (uintptr_t)map[1],
		      imr->rkey));
	EXPECT_EQ(0, ibv_dereg_mr(imr));
	munmap(map[0], 64 * PAGE);
	munmap(map[2], 64 * PAGE);
	for (int i = 0; i < N; i++)
		munmap(hole[i], 32u << 20);
}

/*
 * An implicit key aimed where the process has nothing mapped, or at kernel
 * addresses: each access fails, and no child range outlives its fault.
 */
TEST_F(odp, implicit_nothing_there)
{
	static const uint64_t where[] = {
		0x100000000000ull,		/* user space, never mapped */
		0xffff888000000000ull,		/* the kernel's direct map */
		0xfffffffffffff000ull,		/* the very top */
	};
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);
	struct odp_stats before, after;
	struct ibv_mr *imr;

	ASSERT_TRUE(has_odp(&self->e, IBV_ODP_SUPPORT_WRITE, 1))
		TH_LOG("srnic reports no implicit ODP");
	imr = ibv_reg_mr(self->e.pd, NULL, SIZE_MAX,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			 IBV_ACCESS_ON_DEMAND);
	ASSERT_NE(NULL, imr);
	odp_stats(&before);
	for (unsigned int i = 0; i < ARRAY_SIZE(where); i++) {
		struct ep x, y;

		/* Each error ends its QP pair: a new pair per address. */
		ASSERT_EQ(0, pair_make(&self->e, &o, &o, &x, &y));
		EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
			  op1(&x, IBV_WR_RDMA_WRITE, 0, 64, where[i], imr->rkey))
			TH_LOG("address %#llx", (unsigned long long)where[i]);
		ep_destroy(&x);
		ep_destroy(&y);
	}
	odp_stats(&after);
	EXPECT_EQ(before.implicit_children, after.implicit_children);
	EXPECT_EQ(0, ibv_dereg_mr(imr));
}

/* ---- UD and SRQ receives into ODP buffers ---- */

TEST_F(odp, ud_receive_faults)
{
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_UD);
	struct ep u, v;
	struct ibv_wc wc;

	o.mr_access |= IBV_ACCESS_ON_DEMAND;
	o.buf_len = ODP_LEN;
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &u, &v));
	for (int i = 0; i < 4; i++) {
		/* Each receive lands in pages the NIC has not seen. */
		ASSERT_EQ(0, post_recv(&v, 60 + i, (size_t)(10 + 4 * i) * PAGE,
				       1024 + 40));
		fill(u.buf + i * PAGE, 1024, 30 + i);
		ASSERT_EQ(0, post_send1(&u, IBV_WR_SEND, i, i * PAGE, 1024,
					IBV_SEND_SIGNALED, NULL, 0, 0));
		WAIT_WC(u.cq, wc);
		ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
		WAIT_WC(v.cq, wc);
		ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
		EXPECT_EQ(60 + i, wc.wr_id);
		EXPECT_EQ(-1, verify(v.buf + (10 + 4 * i) * PAGE + 40, 1024,
				     30 + i));
	}
	ep_destroy(&u);
	ep_destroy(&v);
}

/* ---- a fault storm: many QPs faulting at once, all data right ---- */

struct storm {
	struct ep *x, *y;
	int rounds;
	int errors;
};

static void *storm_main(void *arg)
{
	struct storm *s = arg;

	for (int r = 0; r < s->rounds; r++) {
		size_t off = (size_t)r * 2 * PAGE;

		fill(s->x->buf + off, PAGE + 100, r);
		if (op1(s->x, IBV_WR_RDMA_WRITE, off, PAGE + 100,
			(uintptr_t)s->y->buf + off + 50, s->y->mr->rkey) !=
			    IBV_WC_SUCCESS ||
		    verify(s->y->buf + off + 50, PAGE + 100, r) != -1)
			s->errors++;
	}
	return NULL;
}

TEST_F_TIMEOUT(odp, fault_storm, 240)
{
	enum { PAIRS = 8, ROUNDS = 32 };
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);
	struct ep x[PAIRS], y[PAIRS];
	struct storm s[PAIRS];
	pthread_t t[PAIRS];

	o.mr_access |= IBV_ACCESS_ON_DEMAND;
	o.buf_len = 2 * ROUNDS * PAGE;
	for (int i = 0; i < PAIRS; i++) {
		ASSERT_EQ(0, pair_make(&self->e, &o, &o, &x[i], &y[i]));
		s[i] = (struct storm){ &x[i], &y[i], ROUNDS, 0 };
	}
	for (int i = 0; i < PAIRS; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, storm_main, &s[i]));
	for (int i = 0; i < PAIRS; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(0, s[i].errors) TH_LOG("pair %d", i);
	}
	/* Each round touched new pages on both sides of each pair. */
	EXPECT_LE(PAIRS * ROUNDS, faults_since(&self->st0));
	for (int i = 0; i < PAIRS; i++) {
		ep_destroy(&x[i]);
		ep_destroy(&y[i]);
	}
}

TEST_HARNESS_MAIN
