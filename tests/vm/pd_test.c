// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Sharing on $SRNIC_DEV: thread domains and parent domains (queues made
 * through a parent domain take their rings from its allocators and give
 * them back; the PD under it stays until it goes), and a context imported
 * from its command FD with its PD, MR and DM.
 */
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "traffic.h"

#define MAX_BUFS 16

/* An allocator that serves page-aligned memory and records its calls. */
struct pool {
	int mode;		/* 0: serve, 1: USE_DEFAULT, 2: fail, 3: misalign */
	int allocs, frees;
	uint64_t types;		/* resource types seen, one bit each */
	struct { void *p; size_t len; } buf[MAX_BUFS];
};

static void *pool_alloc(struct ibv_pd *pd, void *pd_context, size_t size,
			size_t alignment, uint64_t resource_type)
{
	struct pool *p = pd_context;
	void *mem;

	p->allocs++;
	p->types |= 1ull << (resource_type & 63);
	if (p->mode == 1)
		return IBV_ALLOCATOR_USE_DEFAULT;
	if (p->mode == 2)
		return NULL;
	if (posix_memalign(&mem, alignment < 8192 ? 8192 : alignment, size + 64))
		return NULL;
	for (int i = 0; i < MAX_BUFS; i++)
		if (!p->buf[i].p) {
			p->buf[i].p = mem;
			p->buf[i].len = size;
			break;
		}
	return p->mode == 3 ? (char *)mem + 64 : mem;
}

static void pool_free(struct ibv_pd *pd, void *pd_context, void *ptr,
		      uint64_t resource_type)
{
	struct pool *p = pd_context;

	p->frees++;
	for (int i = 0; i < MAX_BUFS; i++)
		if (p->buf[i].p == ptr || (char *)p->buf[i].p + 64 == ptr) {
			free(p->buf[i].p);
			p->buf[i].p = NULL;
		}
}

FIXTURE(pdom) {
	struct env e;
	struct ibv_td *td;
	struct ibv_pd *par;
	struct pool pool;
};

FIXTURE_SETUP(pdom)
{
	struct ibv_td_init_attr ta = {};
	struct ibv_parent_domain_init_attr pa = {
		.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			     IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT,
		.alloc = pool_alloc, .free = pool_free,
	};

	ASSERT_EQ(0, env_open(&self->e));
	self->td = ibv_alloc_td(self->e.ctx, &ta);
	ASSERT_NE(NULL, self->td) TH_LOG("alloc_td: %s", strerror(errno));
	pa.pd = self->e.pd;
	pa.td = self->td;
	pa.pd_context = &self->pool;
	self->par = ibv_alloc_parent_domain(self->e.ctx, &pa);
	ASSERT_NE(NULL, self->par) TH_LOG("parent domain: %s", strerror(errno));
}

FIXTURE_TEARDOWN(pdom)
{
	if (self->par)
		ibv_dealloc_pd(self->par);
	if (self->td)
		ibv_dealloc_td(self->td);
	env_close(&self->e);
}

static struct ibv_cq *pcq(FIXTURE_DATA(pdom) *self)
{
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 64, .wc_flags = IBV_WC_STANDARD_FLAGS,
		.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD,
		.parent_domain = self->par,
	};
	struct ibv_cq_ex *cq = ibv_create_cq_ex(self->e.ctx, &ca);

	return cq ? ibv_cq_ex_to_cq(cq) : NULL;
}

/* Every queue's ring comes from the allocator and goes back to it. */
TEST_F(pdom, queues_use_the_allocators)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_cq *cq = pcq(self);
	struct ibv_srq *srq;
	struct ibv_qp *qp;

	ASSERT_NE(NULL, cq) TH_LOG("cq_ex on a parent domain: %s", strerror(errno));
	qa.send_cq = qa.recv_cq = cq;
	qp = ibv_create_qp(self->par, &qa);
	ASSERT_NE(NULL, qp) TH_LOG("%s", strerror(errno));
	srq = ibv_create_srq(self->par, &sa);
	ASSERT_NE(NULL, srq);
	/* CQ, SQ, RQ and SRQ rings: four allocations of four types. */
	EXPECT_EQ(4, self->pool.allocs);
	EXPECT_EQ(4, __builtin_popcountll(self->pool.types));
	/* The PD under it cannot go while the parent domain exists. */
	EXPECT_EQ(EBUSY, ibv_dealloc_pd(self->e.pd));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
	EXPECT_EQ(0, ibv_destroy_srq(srq));
	EXPECT_EQ(0, ibv_destroy_cq(cq));
	EXPECT_EQ(4, self->pool.frees);
}

/* Traffic between QPs whose rings the allocator serves. */
TEST_F(pdom, traffic)
{
	struct ibv_cq *cq = pcq(self);
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ep a = {}, b = {};
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);
	struct ibv_wc wc;

	ASSERT_NE(NULL, cq);
	/* Two endpoints whose QPs come from the parent domain. */
	for (struct ep *x = &a; x; x = x == &a ? &b : NULL) {
		x->e = &self->e;
		x->o = o;
		x->cq = cq;
		x->buf = mmap(NULL, o.buf_len, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ASSERT_NE(MAP_FAILED, x->buf);
		/* An MR through the parent domain is the PD's. */
		x->mr = ibv_reg_mr(self->par, x->buf, o.buf_len, o.mr_access);
		ASSERT_NE(NULL, x->mr);
		qa.send_cq = qa.recv_cq = cq;
		x->qp = ibv_create_qp(self->par, &qa);
		ASSERT_NE(NULL, x->qp);
	}
	ASSERT_EQ(0, ep_connect(&a, b.qp->qp_num));
	ASSERT_EQ(0, ep_connect(&b, a.qp->qp_num));
	ASSERT_EQ(0, post_recv(&b, 1, 0, 256));
	fill(a.buf, 200, 3);
	ASSERT_EQ(0, post_send1(&a, IBV_WR_SEND, 2, 0, 200, IBV_SEND_SIGNALED,
				NULL, 0, 0));
	for (int i = 0; i < 2; i++) {
		WAIT_WC(cq, wc);
		ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
	}
	EXPECT_EQ(-1, verify(b.buf, 200, 3));
	ibv_destroy_qp(a.qp);
	ibv_destroy_qp(b.qp);
	a.qp = b.qp = NULL;
	a.cq = b.cq = NULL;
	ep_destroy(&a);
	ep_destroy(&b);
	EXPECT_EQ(0, ibv_destroy_cq(cq));
	EXPECT_EQ(self->pool.allocs, self->pool.frees);
}

/* USE_DEFAULT falls back; NULL and misaligned memory fail the creation. */
TEST_F(pdom, allocator_answers)
{
	struct ibv_cq_init_attr_ex plain = {
		.cqe = 4, .comp_mask = IBV_CQ_INIT_ATTR_MASK_PD,
		.parent_domain = self->e.pd, .wc_flags = IBV_WC_STANDARD_FLAGS,
	};
	struct ibv_cq *cq;

	self->pool.mode = 1;
	cq = pcq(self);
	ASSERT_NE(NULL, cq);
	EXPECT_EQ(0, ibv_destroy_cq(cq));
	EXPECT_EQ(0, self->pool.frees);	/* the default one was freed */
	self->pool.mode = 2;
	errno = 0;
	EXPECT_EQ(NULL, pcq(self));
	EXPECT_EQ(ENOMEM, errno);
	self->pool.mode = 3;
	EXPECT_EQ(NULL, pcq(self));
	/* The misaligned buffer went back to the allocator. */
	EXPECT_EQ(1, self->pool.frees);
	/* A plain PD is no parent domain for a CQ. */
	EXPECT_EQ(NULL, ibv_create_cq_ex(self->e.ctx, &plain));
}

/* ---- sharing a context: ibv_import_device and the object imports ---- */

TEST_F(pdom, import_context_pd_mr_dm)
{
	struct ibv_context *ctx2;
	struct ibv_pd *pd2;
	struct ibv_mr *mr2;
	struct ibv_alloc_dm_attr da = { .length = 3 * 4096 };
	struct ibv_dm *dm, *dm2;
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);
	struct env e2;
	struct ep a, b, c, d;
	uint8_t buf[64];
	int fd;

	fd = dup(self->e.ctx->cmd_fd);
	ASSERT_LE(0, fd);
	ctx2 = ibv_import_device(fd);
	ASSERT_NE(NULL, ctx2) TH_LOG("import_device: %s", strerror(errno));
	pd2 = ibv_import_pd(ctx2, self->e.pd->handle);
	ASSERT_NE(NULL, pd2) TH_LOG("import_pd: %s", strerror(errno));

	/* An MR of the first context, seen from the second. */
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &a, &b));
	mr2 = ibv_import_mr(pd2, b.mr->handle);
	ASSERT_NE(NULL, mr2) TH_LOG("import_mr: %s", strerror(errno));
	EXPECT_EQ(b.mr->lkey, mr2->lkey);
	EXPECT_EQ(b.mr->rkey, mr2->rkey);
	EXPECT_EQ(b.mr->length, mr2->length);
	/* (Its address is the sharer's to tell: the kernel knows the iova.) */

	/* Queues of the imported context, on the imported PD, carry traffic. */
	e2 = self->e;
	e2.ctx = ctx2;
	e2.pd = pd2;
	ASSERT_EQ(0, pair_make(&e2, &o, &o, &c, &d));
	fill(c.buf, 512, 9);
	ASSERT_EQ(IBV_WC_SUCCESS, rdma_op(&c, IBV_WR_RDMA_WRITE, 0, 512,
					  (uintptr_t)b.buf + 1024, mr2->rkey, 0));
	EXPECT_EQ(-1, verify(b.buf + 1024, 512, 9));
	ep_destroy(&c);
	ep_destroy(&d);

	/* Device memory written in one context is read in the other. */
	dm = ibv_alloc_dm(self->e.ctx, &da);
	ASSERT_NE(NULL, dm);
	dm2 = ibv_import_dm(ctx2, dm->handle);
	ASSERT_NE(NULL, dm2) TH_LOG("import_dm: %s", strerror(errno));
	fill(buf, sizeof(buf), 10);
	ASSERT_EQ(0, ibv_memcpy_to_dm(dm, 8192, buf, sizeof(buf)));
	memset(buf, 0, sizeof(buf));
	ASSERT_EQ(0, ibv_memcpy_from_dm(buf, dm2, 8192, sizeof(buf)));
	EXPECT_EQ(-1, verify(buf, sizeof(buf), 10));

	ibv_unimport_dm(dm2);
	EXPECT_EQ(0, ibv_free_dm(dm));
	ibv_unimport_mr(mr2);
	ibv_unimport_pd(pd2);
	ep_destroy(&a);
	ep_destroy(&b);
	EXPECT_EQ(0, ibv_close_device(ctx2));
}

TEST_HARNESS_MAIN
