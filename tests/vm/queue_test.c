// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * CQs, QPs, SRQs and AHs on user-allocated rings: lifecycle, the limits the
 * device reports being the limits enforced, the QP state machine, hostile
 * driver data, destroy order, and pins released when a process dies.
 */
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "srnic_test.h"

FIXTURE(q) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_device_attr attr;
};

FIXTURE_SETUP(q)
{
	self->ctx = open_named(srnic_test_dev());
	ASSERT_NE(NULL, self->ctx);
	ASSERT_EQ(0, ibv_query_device(self->ctx, &self->attr));
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
	self->cq = ibv_create_cq(self->ctx, 64, NULL, NULL, 0);
	ASSERT_NE(NULL, self->cq) TH_LOG("create_cq: %s", strerror(errno));
}

FIXTURE_TEARDOWN(q)
{
	if (self->cq)
		ibv_destroy_cq(self->cq);
	if (self->pd)
		ibv_dealloc_pd(self->pd);
	if (self->ctx)
		ibv_close_device(self->ctx);
}

static struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *cq,
			      enum ibv_qp_type type, struct ibv_qp_cap cap,
			      struct ibv_srq *srq)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq, .recv_cq = cq, .srq = srq, .cap = cap,
		.qp_type = type,
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &a);

	return qp;
}

static const struct ibv_qp_cap small_cap = {
	.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
	.max_recv_sge = 1,
};

TEST_F(q, cq_sizes)
{
	int sizes[] = { 1, 2, 63, 64, 1000, 4096 };

	for (unsigned int i = 0; i < ARRAY_SIZE(sizes); i++) {
		struct ibv_cq *cq = ibv_create_cq(self->ctx, sizes[i], NULL,
						  NULL, 0);

		ASSERT_NE(NULL, cq) TH_LOG("cqe %d: %s", sizes[i],
					   strerror(errno));
		EXPECT_GE(cq->cqe, sizes[i]);
		EXPECT_EQ(0, ibv_destroy_cq(cq));
	}
}

TEST_F(q, cq_limits_enforced)
{
	struct ibv_cq *cq;

	errno = 0;
	cq = ibv_create_cq(self->ctx, self->attr.max_cqe + 1, NULL, NULL, 0);
	EXPECT_EQ(NULL, cq);
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_cq(self->ctx, 0, NULL, NULL, 0));
	EXPECT_NE(0, errno);
	/* A bad completion vector. */
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_cq(self->ctx, 16, NULL, NULL, 99));
	EXPECT_NE(0, errno);
}

TEST_F(q, cq_resize)
{
	struct ibv_wc wc;

	ASSERT_EQ(0, ibv_resize_cq(self->cq, 1000));
	EXPECT_GE(self->cq->cqe, 1000);
	ASSERT_EQ(0, ibv_resize_cq(self->cq, 8));
	EXPECT_GE(self->cq->cqe, 8);
	EXPECT_LT(self->cq->cqe, 1000);
	EXPECT_NE(0, ibv_resize_cq(self->cq, self->attr.max_cqe + 1));
	/* Still a working, empty CQ. */
	EXPECT_EQ(0, ibv_poll_cq(self->cq, 1, &wc));
	EXPECT_EQ(0, ibv_req_notify_cq(self->cq, 0));
}

TEST_F(q, cq_with_channel)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(self->ctx);
	struct ibv_cq *cq;

	ASSERT_NE(NULL, ch);
	cq = ibv_create_cq(self->ctx, 16, NULL, ch, 0);
	ASSERT_NE(NULL, cq);
	/* The channel is in use: the core refuses to destroy it. */
	EXPECT_NE(0, ibv_destroy_comp_channel(ch));
	EXPECT_EQ(0, ibv_destroy_cq(cq));
	EXPECT_EQ(0, ibv_destroy_comp_channel(ch));
}

/* A receive-only QP asks for no send WRs at all (pyverbs' TM tests do). */
TEST_F(q, qp_without_send_queue)
{
	struct ibv_qp_cap cap = { .max_recv_wr = 8, .max_recv_sge = 1 };
	struct ibv_qp *qp = make_qp(self->pd, self->cq, IBV_QPT_RC, cap, NULL);

	ASSERT_NE(NULL, qp) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

TEST_F(q, qp_types_and_caps)
{
	enum ibv_qp_type types[] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };

	for (unsigned int i = 0; i < ARRAY_SIZE(types); i++) {
		struct ibv_qp_cap cap = {
			.max_send_wr = 100, .max_recv_wr = 50,
			.max_send_sge = 3, .max_recv_sge = 2,
			.max_inline_data = 100,
		};
		struct ibv_qp_init_attr init;
		struct ibv_qp_attr attr;
		struct ibv_qp *qp = make_qp(self->pd, self->cq, types[i], cap,
					    NULL);

		ASSERT_NE(NULL, qp) TH_LOG("type %d: %s", types[i],
					   strerror(errno));
		EXPECT_GE(qp->qp_num, 2u);
		ASSERT_EQ(0, ibv_query_qp(qp, &attr, IBV_QP_CAP, &init));
		/* Rounded up as hardware does, never below the request. */
		EXPECT_GE(init.cap.max_send_wr, 100u);
		EXPECT_GE(init.cap.max_recv_wr, 50u);
		EXPECT_GE(init.cap.max_send_sge, 3u);
		EXPECT_GE(init.cap.max_recv_sge, 2u);
		EXPECT_GE(init.cap.max_inline_data, 100u);
		EXPECT_LE(init.cap.max_inline_data, SRNIC_MAX_INLINE_DATA);
		EXPECT_EQ(types[i], init.qp_type);
		EXPECT_EQ(IBV_QPS_RESET, attr.qp_state);
		EXPECT_EQ(0, ibv_destroy_qp(qp));
	}
}

TEST_F(q, qp_limits_enforced)
{
	struct ibv_qp_cap cap = small_cap;

	cap.max_send_wr = self->attr.max_qp_wr + 1;
	errno = 0;
	EXPECT_EQ(NULL, make_qp(self->pd, self->cq, IBV_QPT_RC, cap, NULL));
	EXPECT_EQ(EINVAL, errno);
	cap = small_cap;
	cap.max_recv_wr = self->attr.max_qp_wr + 1;
	errno = 0;
	EXPECT_EQ(NULL, make_qp(self->pd, self->cq, IBV_QPT_RC, cap, NULL));
	EXPECT_EQ(EINVAL, errno);
	cap = small_cap;
	cap.max_send_sge = self->attr.max_sge + 1;
	errno = 0;
	EXPECT_EQ(NULL, make_qp(self->pd, self->cq, IBV_QPT_RC, cap, NULL));
	EXPECT_EQ(EINVAL, errno);
	cap = small_cap;
	cap.max_inline_data = SRNIC_MAX_INLINE_DATA + 1;
	errno = 0;
	EXPECT_EQ(NULL, make_qp(self->pd, self->cq, IBV_QPT_RC, cap, NULL));
	EXPECT_EQ(EINVAL, errno);
	/* Exactly the limits works. */
	cap = small_cap;
	cap.max_send_wr = self->attr.max_qp_wr;
	cap.max_send_sge = self->attr.max_sge;
	struct ibv_qp *qp = make_qp(self->pd, self->cq, IBV_QPT_RC, cap, NULL);

	ASSERT_NE(NULL, qp) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

TEST_F(q, qp_unsupported_types)
{
	struct ibv_qp_init_attr a = {
		.send_cq = self->cq, .recv_cq = self->cq, .cap = small_cap,
		.qp_type = IBV_QPT_DRIVER,
	};

	/* Raw packet QPs are supported now (raw_test); driver QPs are not. */
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_qp(self->pd, &a));
	EXPECT_EQ(EOPNOTSUPP, errno);
}

static int to_init(struct ibv_qp *qp, enum ibv_qp_type type)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ,
		.qkey = 0x11111111,
	};
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	mask |= type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS;
	return ibv_modify_qp(qp, &a, mask);
}

static int rc_to_rtr(struct ibv_qp *qp, uint32_t dest, struct ibv_context *ctx)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = dest, .rq_psn = 0x123456,
		.max_dest_rd_atomic = 4, .min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .hop_limit = 64, .sgid_index = 0 } },
	};

	if (ibv_query_gid(ctx, 1, 0, &a.ah_attr.grh.dgid))
		return -1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
				     IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				     IBV_QP_MIN_RNR_TIMER);
}

static int rc_to_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = 7, .sq_psn = 0x654321, .max_rd_atomic = 4,
	};

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
				     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

TEST_F(q, rc_state_machine)
{
	struct ibv_qp *qp = make_qp(self->pd, self->cq, IBV_QPT_RC, small_cap,
				    NULL);
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;

	ASSERT_NE(NULL, qp);
	/* RESET -> RTR skips INIT: refused. */
	EXPECT_NE(0, rc_to_rtr(qp, qp->qp_num, self->ctx));
	ASSERT_EQ(0, to_init(qp, IBV_QPT_RC));
	/* INIT needs no QKEY on RC; a missing required attribute fails. */
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR };
	EXPECT_NE(0, ibv_modify_qp(qp, &a, IBV_QP_STATE));
	ASSERT_EQ(0, rc_to_rtr(qp, qp->qp_num, self->ctx));
	ASSERT_EQ(0, rc_to_rts(qp));

	ASSERT_EQ(0, ibv_query_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV, &init));
	EXPECT_EQ(IBV_QPS_RTS, a.qp_state);
	EXPECT_EQ(IBV_MTU_1024, a.path_mtu);
	EXPECT_EQ(qp->qp_num, a.dest_qp_num);
	EXPECT_EQ(0x123456, a.rq_psn);
	EXPECT_EQ(0x654321, a.sq_psn);
	EXPECT_EQ(14, a.timeout);
	EXPECT_EQ(7, a.retry_cnt);
	EXPECT_EQ(7, a.rnr_retry);
	EXPECT_EQ(12, a.min_rnr_timer);
	EXPECT_EQ(4, a.max_rd_atomic);
	EXPECT_EQ(4, a.max_dest_rd_atomic);
	EXPECT_EQ(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
		  a.qp_access_flags);
	EXPECT_EQ(1, a.ah_attr.is_global);
	EXPECT_EQ(64, a.ah_attr.grh.hop_limit);

	/* Any state -> ERR -> RESET -> INIT again. */
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_ERR };
	EXPECT_EQ(0, ibv_modify_qp(qp, &a, IBV_QP_STATE));
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RESET };
	EXPECT_EQ(0, ibv_modify_qp(qp, &a, IBV_QP_STATE));
	EXPECT_EQ(0, to_init(qp, IBV_QPT_RC));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

TEST_F(q, modify_qp_bad_values)
{
	struct ibv_qp *qp = make_qp(self->pd, self->cq, IBV_QPT_RC, small_cap,
				    NULL);
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 2 };

	ASSERT_NE(NULL, qp);
	EXPECT_NE(0, ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
	a.port_num = 1;
	a.pkey_index = 1;
	EXPECT_NE(0, ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
	ASSERT_EQ(0, to_init(qp, IBV_QPT_RC));
	/* Depths beyond what query_device reports. */
	struct ibv_qp_attr r = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = qp->qp_num,
		.max_dest_rd_atomic = self->attr.max_qp_rd_atom + 1,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .hop_limit = 1 } },
	};
	ASSERT_EQ(0, ibv_query_gid(self->ctx, 1, 0, &r.ah_attr.grh.dgid));
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;

	EXPECT_EQ(EINVAL, ibv_modify_qp(qp, &r, mask));
	/* Without a GRH there is no RoCE address. */
	r.max_dest_rd_atomic = 1;
	r.ah_attr.is_global = 0;
	EXPECT_NE(0, ibv_modify_qp(qp, &r, mask));
	/* A failed modify leaves the state as it was. */
	struct ibv_qp_init_attr init;

	ASSERT_EQ(0, ibv_query_qp(qp, &a, IBV_QP_STATE, &init));
	EXPECT_EQ(IBV_QPS_INIT, a.qp_state);
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

TEST_F(q, ud_qp_to_rts)
{
	struct ibv_qp *qp = make_qp(self->pd, self->cq, IBV_QPT_UD, small_cap,
				    NULL);
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;

	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, to_init(qp, IBV_QPT_UD));
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR };
	ASSERT_EQ(0, ibv_modify_qp(qp, &a, IBV_QP_STATE));
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 5 };
	ASSERT_EQ(0, ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN));
	ASSERT_EQ(0, ibv_query_qp(qp, &a, IBV_QP_QKEY, &init));
	EXPECT_EQ(0x11111111u, a.qkey);
	EXPECT_EQ(IBV_QPS_RTS, a.qp_state);
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

TEST_F(q, srq_lifecycle_and_limit)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 100, .max_sge = 2 } };
	struct ibv_srq_attr attr;
	struct ibv_srq *srq = ibv_create_srq(self->pd, &sa);
	struct ibv_qp *qp;

	ASSERT_NE(NULL, srq) TH_LOG("%s", strerror(errno));
	EXPECT_GE(sa.attr.max_wr, 100u);
	EXPECT_GE(sa.attr.max_sge, 2u);
	ASSERT_EQ(0, ibv_query_srq(srq, &attr));
	EXPECT_EQ(sa.attr.max_wr, attr.max_wr);
	EXPECT_EQ(0, attr.srq_limit);
	attr.srq_limit = 10;
	EXPECT_EQ(0, ibv_modify_srq(srq, &attr, IBV_SRQ_LIMIT));
	ASSERT_EQ(0, ibv_query_srq(srq, &attr));
	EXPECT_EQ(10, attr.srq_limit);
	attr.srq_limit = sa.attr.max_wr + 1;
	EXPECT_NE(0, ibv_modify_srq(srq, &attr, IBV_SRQ_LIMIT));
	attr.max_wr = 1000;
	EXPECT_NE(0, ibv_modify_srq(srq, &attr, IBV_SRQ_MAX_WR));

	/* A QP on the SRQ; the SRQ cannot go first. */
	qp = make_qp(self->pd, self->cq, IBV_QPT_RC, small_cap, srq);
	ASSERT_NE(NULL, qp) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(EBUSY, ibv_destroy_srq(srq));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
	EXPECT_EQ(0, ibv_destroy_srq(srq));
}

TEST_F(q, srq_limits_enforced)
{
	struct ibv_srq_init_attr sa = {
		.attr = { .max_wr = self->attr.max_srq_wr + 1, .max_sge = 1 },
	};

	errno = 0;
	EXPECT_EQ(NULL, ibv_create_srq(self->pd, &sa));
	EXPECT_EQ(EINVAL, errno);
	sa.attr.max_wr = 16;
	sa.attr.max_sge = self->attr.max_srq_sge + 1;
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_srq(self->pd, &sa));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(q, ah_roce)
{
	struct ibv_ah_attr a = { .is_global = 1, .port_num = 1,
				 .grh = { .hop_limit = 64, .sgid_index = 0 } };
	struct ibv_ah *ah;

	ASSERT_EQ(0, ibv_query_gid(self->ctx, 1, 0, &a.grh.dgid));
	ah = ibv_create_ah(self->pd, &a);
	ASSERT_NE(NULL, ah) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(EBUSY, ibv_dealloc_pd(self->pd) ? EBUSY : 0);
	EXPECT_EQ(0, ibv_destroy_ah(ah));
	/* No GRH: no RoCE address. */
	a.is_global = 0;
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_ah(self->pd, &a));
	EXPECT_NE(0, errno);
}

/* The core's usecnt rules: an object in use cannot be destroyed. */
TEST_F(q, destroy_in_wrong_order)
{
	struct ibv_qp *qp = make_qp(self->pd, self->cq, IBV_QPT_RC, small_cap,
				    NULL);

	ASSERT_NE(NULL, qp);
	EXPECT_EQ(EBUSY, ibv_destroy_cq(self->cq));
	EXPECT_EQ(EBUSY, ibv_dealloc_pd(self->pd));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

TEST_F(q, many_objects)
{
	enum { N = 300 };
	static struct ibv_cq *cqs[N];
	static struct ibv_qp *qps[N];

	/* More queues than one UAR page has doorbells. */
	for (int i = 0; i < N; i++) {
		cqs[i] = ibv_create_cq(self->ctx, 4, NULL, NULL, 0);
		ASSERT_NE(NULL, cqs[i]) TH_LOG("cq %d: %s", i, strerror(errno));
		qps[i] = make_qp(self->pd, cqs[i], IBV_QPT_UD, small_cap, NULL);
		ASSERT_NE(NULL, qps[i]) TH_LOG("qp %d: %s", i, strerror(errno));
	}
	for (int i = 0; i < N; i++) {
		EXPECT_EQ(0, ibv_destroy_qp(qps[i]));
		EXPECT_EQ(0, ibv_destroy_cq(cqs[i]));
	}
}

/* A process that exits without destroying anything returns every pin. */
TEST(pins_released_at_exit)
{
	long before = srnic_pinned_pages(srnic_test_dev());
	int status;
	pid_t pid;

	if (before < 0)
		SKIP(return, "no srnic debugfs (mount debugfs)");
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct ibv_context *ctx = open_named(srnic_test_dev());
		struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 64, .max_sge = 1 } };

		if (!pd)
			_exit(1);
		for (int i = 0; i < 20; i++) {
			struct ibv_cq *cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);

			if (!cq || !make_qp(pd, cq, IBV_QPT_RC, small_cap, NULL) ||
			    !ibv_create_srq(pd, &sa))
				_exit(2);
		}
		if (srnic_pinned_pages(srnic_test_dev()) <= before)
			_exit(3);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(before, srnic_pinned_pages(srnic_test_dev()));
}

/* ---- hostile driver data, through the raw interface ---- */

FIXTURE(rawq) {
	int fd;
	struct srnic_raw_ctx c;
	void *ring;
	void *db;
};

FIXTURE_SETUP(rawq)
{
	self->fd = uverbs_open(srnic_test_dev());
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, uverbs_get_context(self->fd, &self->c, NULL, 0));
	self->ring = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->ring);
	self->db = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->db);
}

FIXTURE_TEARDOWN(rawq)
{
	close(self->c.core.async_fd);
	close(self->fd);
}

TEST_F(rawq, create_cq_bad_requests)
{
	long before = srnic_pinned_pages(srnic_test_dev());
	struct srnic_create_cq_req r = {
		.buf_addr = (uintptr_t)self->ring,
		.db_addr = (uintptr_t)self->db, .log_entries = 6,
	};
	struct srnic_create_cq_req bad;
	struct srnic_raw_cq out;

	/* The good request works, and its pins come back on destroy. */
	ASSERT_EQ(0, uverbs_create_cq(self->fd, 63, &r, sizeof(r), &out));
	EXPECT_NE(0, out.drv.cqn);
	EXPECT_LT(out.drv.db.slot, SRNIC_DBS_PER_UAR);
	EXPECT_EQ(0, uverbs_destroy_cq(self->fd, out.core.cq_handle));
	EXPECT_EQ(before, srnic_pinned_pages(srnic_test_dev()));

	/* Ring too small for the CQEs asked. */
	bad = r; bad.log_entries = 5;
	EXPECT_EQ(-EINVAL, uverbs_create_cq(self->fd, 63, &bad, sizeof(bad), &out));
	/* Absurd sizes. */
	bad = r; bad.log_entries = 40;
	EXPECT_EQ(-EINVAL, uverbs_create_cq(self->fd, 63, &bad, sizeof(bad), &out));
	bad = r; bad.log_entries = 0;
	EXPECT_EQ(-EINVAL, uverbs_create_cq(self->fd, 1, &bad, sizeof(bad), &out));
	/* Misaligned ring and doorbell record. */
	bad = r; bad.buf_addr += 8;
	EXPECT_EQ(-EINVAL, uverbs_create_cq(self->fd, 63, &bad, sizeof(bad), &out));
	bad = r; bad.db_addr += 4;
	EXPECT_EQ(-EINVAL, uverbs_create_cq(self->fd, 63, &bad, sizeof(bad), &out));
	/* Unmapped memory, kernel addresses, wrapping ranges. */
	bad = r; bad.buf_addr = 0x1000;
	EXPECT_EQ(-EFAULT, uverbs_create_cq(self->fd, 63, &bad, sizeof(bad), &out));
	bad = r; bad.db_addr = 0xffff888000000000ull;
	EXPECT_NE(0, uverbs_create_cq(self->fd, 63, &bad, sizeof(bad), &out));
	bad = r; bad.buf_addr = ~0ull & ~0xfffull;
	EXPECT_NE(0, uverbs_create_cq(self->fd, 63, &bad, sizeof(bad), &out));
	/* Unknown flags, trailing garbage, missing driver data. */
	bad = r; bad.flags = SRNIC_CQ_FLAG_TIMESTAMP << 1;
	EXPECT_EQ(-EOPNOTSUPP, uverbs_create_cq(self->fd, 63, &bad, sizeof(bad), &out));
	bad = r; bad.flags = 1u << 31;
	EXPECT_EQ(-EOPNOTSUPP, uverbs_create_cq(self->fd, 63, &bad, sizeof(bad), &out));
	struct { struct srnic_create_cq_req r; uint64_t junk; } longer = { r, 5 };

	EXPECT_EQ(-EOPNOTSUPP, uverbs_create_cq(self->fd, 63, &longer,
						sizeof(longer), &out));
	EXPECT_NE(0, uverbs_create_cq(self->fd, 63, &r, 8, &out));
	EXPECT_NE(0, uverbs_create_cq(self->fd, 63, NULL, 0, &out));
	/* A read-only ring cannot be pinned for the engine to write. */
	ASSERT_EQ(0, mprotect(self->ring, 1 << 16, PROT_READ));
	EXPECT_NE(0, uverbs_create_cq(self->fd, 63, &r, sizeof(r), &out));
	/* Nothing leaked on any of those paths. */
	EXPECT_EQ(before, srnic_pinned_pages(srnic_test_dev()));
}

TEST_HARNESS_MAIN
