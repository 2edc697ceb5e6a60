// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The engine's contract with the provider: a sleeping engine is woken by a
 * post (the NEED_WAKEUP protocol through the zero-WR post_send), and a send
 * slot is free again as soon as its completion can be polled.
 */
#include <sys/mman.h>
#include <time.h>

#include "kselftest_harness.h"
#include "srnic_test.h"

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ull + ts.tv_nsec / 1000000;
}

/* Polls @cq for one completion for at most @ms; returns 1, 0 or -1. */
static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	uint64_t end = now_ms() + ms;

	do {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n)
			return n;
	} while (now_ms() < end);
	return 0;
}

FIXTURE(pair) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *a, *b;
	struct ibv_mr *mr;
	char buf[4096];
};

static int connect_rc(struct ibv_qp *qp, uint32_t dest, union ibv_gid *gid)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	a = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = dest, .max_dest_rd_atomic = 1,
		.min_rnr_timer = 1,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = *gid, .hop_limit = 1 } },
	};
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				  IBV_QP_MAX_DEST_RD_ATOMIC |
				  IBV_QP_MIN_RNR_TIMER))
		return -1;
	a = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = 7, .max_rd_atomic = 1,
	};
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
				     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

FIXTURE_SETUP(pair)
{
	/* A one-entry send queue, as perftest's latency tests use. */
	struct ibv_qp_init_attr ia = {
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	union ibv_gid gid;

	self->ctx = open_named(srnic_test_dev());
	ASSERT_NE(NULL, self->ctx);
	self->pd = ibv_alloc_pd(self->ctx);
	self->cq = ibv_create_cq(self->ctx, 16, NULL, NULL, 0);
	ASSERT_NE(NULL, self->cq);
	ia.send_cq = ia.recv_cq = self->cq;
	self->a = ibv_create_qp(self->pd, &ia);
	self->b = ibv_create_qp(self->pd, &ia);
	ASSERT_NE(NULL, self->a);
	ASSERT_NE(NULL, self->b);
	ASSERT_EQ(1, ia.cap.max_send_wr);
	self->mr = ibv_reg_mr(self->pd, self->buf, sizeof(self->buf),
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	ASSERT_NE(NULL, self->mr);
	ASSERT_EQ(0, ibv_query_gid(self->ctx, 1, 0, &gid));
	ASSERT_EQ(0, connect_rc(self->a, self->b->qp_num, &gid));
	ASSERT_EQ(0, connect_rc(self->b, self->a->qp_num, &gid));
}

FIXTURE_TEARDOWN(pair)
{
	ibv_destroy_qp(self->a);
	ibv_destroy_qp(self->b);
	ibv_dereg_mr(self->mr);
	ibv_destroy_cq(self->cq);
	ibv_dealloc_pd(self->pd);
	ibv_close_device(self->ctx);
}

static int post_write(FIXTURE_DATA(pair) *self, uint64_t id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)self->buf, .length = 8, .lkey = self->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)self->buf + 64,
			     .rkey = self->mr->rkey },
	}, *bad;

	return ibv_post_send(self->a, &wr, &bad);
}

/*
 * The slot of a completed WQE is free when its CQE is polled: with one
 * entry, every post right after a completion must be accepted.
 */
TEST_F(pair, slot_free_when_completion_polled)
{
	struct ibv_wc wc;

	for (uint64_t i = 0; i < 3000; i++) {
		ASSERT_EQ(0, post_write(self, i)) TH_LOG("post %llu",
							 (unsigned long long)i);
		ASSERT_EQ(1, poll_one(self->cq, &wc, 10000));
		ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
		ASSERT_EQ(i, wc.wr_id);
	}
}

/* Resizing a CQ keeps the completions not yet polled, in order. */
TEST_F(pair, resize_keeps_unpolled_completions)
{
	const int k = 12;
	struct ibv_wc wc;
	int i;

	/*
	 * k writes through the one-entry SQ, none polled: each post waits
	 * for the previous one's slot, so k completions pile up in the CQ.
	 */
	for (i = 0; i < k; i++) {
		uint64_t end = now_ms() + 10000;

		while (post_write(self, i) && now_ms() < end)
			;
		ASSERT_LT(now_ms(), end) TH_LOG("post %d never accepted", i);
	}
	ASSERT_EQ(0, ibv_resize_cq(self->cq, 100));
	EXPECT_GE(self->cq->cqe, 100);
	for (i = 0; i < k; i++) {
		ASSERT_EQ(1, poll_one(self->cq, &wc, 10000)) TH_LOG("cqe %d", i);
		EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
		EXPECT_EQ(i, wc.wr_id);
	}
	EXPECT_EQ(0, ibv_poll_cq(self->cq, 1, &wc));
}

/* A post to an engine that sleeps wakes it (the NEED_WAKEUP protocol). */
TEST_F(pair, post_wakes_sleeping_engine)
{
	const volatile struct srnic_engine_status *st;
	struct srnic_raw_ctx raw;
	struct ibv_wc wc;
	int fd, round;

	/* A second, raw context only to watch the engine's status page. */
	fd = uverbs_open(srnic_test_dev());
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, uverbs_get_context(fd, &raw, NULL, 0));
	st = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd,
		  raw.drv.status_mmap_offset);
	ASSERT_NE(MAP_FAILED, (void *)st);

	for (round = 0; round < 20; round++) {
		uint64_t end = now_ms() + 10000;

		/* Wait (bounded) until the engine announces it sleeps. */
		while (!(st[0].flags & SRNIC_ENGINE_NEED_WAKEUP) &&
		       now_ms() < end)
			usleep(100);
		ASSERT_TRUE(st[0].flags & SRNIC_ENGINE_NEED_WAKEUP);
		ASSERT_EQ(0, post_write(self, round));
		ASSERT_EQ(1, poll_one(self->cq, &wc, 10000))
			TH_LOG("round %d: the post did not wake the engine",
			       round);
		ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
	}
	munmap((void *)st, 4096);
	close(raw.core.async_fd);
	close(fd);
}

TEST_HARNESS_MAIN
