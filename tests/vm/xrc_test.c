// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * XRC on $SRNIC_DEV: an XRC domain with two XRC SRQs (each with its own
 * CQ), a target QP of the domain and an initiator QP connected to it.
 * Messages go to the SRQ they name and complete on that SRQ's CQ; RDMA is
 * checked against the PD of the SRQ named; wrong SRQ numbers fail.
 */
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "traffic.h"

#define NSRQ 2

FIXTURE(xrc) {
	struct env e;
	struct ibv_xrcd *xrcd;
	struct ibv_cq *scq, *rcq[NSRQ];
	struct ibv_srq *srq[NSRQ];
	uint32_t srqn[NSRQ];
	struct ibv_qp *ini, *tgt;
	uint8_t *buf;
	struct ibv_mr *mr;
};

static int xrc_connect(struct env *e, struct ibv_qp *qp, uint32_t dest, int send)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
						    IBV_ACCESS_REMOTE_READ };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = e->port.active_mtu;
	a.dest_qp_num = dest;
	a.rq_psn = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr = ah_to_self(e);
	/* Responder resources are the target's alone. */
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  (send ? 0 : IBV_QP_MAX_DEST_RD_ATOMIC |
				      IBV_QP_MIN_RNR_TIMER)))
		return -1;
	if (!send)
		return 0;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			     IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

FIXTURE_SETUP(xrc)
{
	struct ibv_xrcd_init_attr xa = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = -1, .oflags = O_CREAT,
	};
	struct ibv_qp_init_attr_ex qa = {};

	ASSERT_EQ(0, env_open(&self->e));
	ASSERT_TRUE(self->e.dev.device_cap_flags & IBV_DEVICE_XRC) TH_LOG("srnic reports no XRC");
	self->xrcd = ibv_open_xrcd(self->e.ctx, &xa);
	ASSERT_NE(NULL, self->xrcd) TH_LOG("open_xrcd: %s", strerror(errno));
	self->scq = ibv_create_cq(self->e.ctx, 64, NULL, NULL, 0);
	ASSERT_NE(NULL, self->scq);
	for (int i = 0; i < NSRQ; i++) {
		struct ibv_srq_init_attr_ex sa = {
			.attr = { .max_wr = 16, .max_sge = 1 },
			.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
				     IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
			.srq_type = IBV_SRQT_XRC, .pd = self->e.pd,
			.xrcd = self->xrcd,
		};

		self->rcq[i] = ibv_create_cq(self->e.ctx, 64, NULL, NULL, 0);
		ASSERT_NE(NULL, self->rcq[i]);
		sa.cq = self->rcq[i];
		self->srq[i] = ibv_create_srq_ex(self->e.ctx, &sa);
		ASSERT_NE(NULL, self->srq[i]) TH_LOG("%s", strerror(errno));
		ASSERT_EQ(0, ibv_get_srq_num(self->srq[i], &self->srqn[i]));
	}
	EXPECT_NE(self->srqn[0], self->srqn[1]);
	qa = (struct ibv_qp_init_attr_ex){
		.qp_type = IBV_QPT_XRC_RECV, .comp_mask = IBV_QP_INIT_ATTR_XRCD,
		.xrcd = self->xrcd,
	};
	self->tgt = ibv_create_qp_ex(self->e.ctx, &qa);
	ASSERT_NE(NULL, self->tgt) TH_LOG("XRC_RECV: %s", strerror(errno));
	qa = (struct ibv_qp_init_attr_ex){
		.qp_type = IBV_QPT_XRC_SEND, .comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = self->e.pd, .send_cq = self->scq,
		.cap = { .max_send_wr = 16, .max_send_sge = 1 },
	};
	self->ini = ibv_create_qp_ex(self->e.ctx, &qa);
	ASSERT_NE(NULL, self->ini) TH_LOG("XRC_SEND: %s", strerror(errno));
	ASSERT_EQ(0, xrc_connect(&self->e, self->tgt, self->ini->qp_num, 0));
	ASSERT_EQ(0, xrc_connect(&self->e, self->ini, self->tgt->qp_num, 1));
	self->buf = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->buf);
	self->mr = ibv_reg_mr(self->e.pd, self->buf, 1 << 20,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			      IBV_ACCESS_REMOTE_READ);
	ASSERT_NE(NULL, self->mr);
}

FIXTURE_TEARDOWN(xrc)
{
	if (self->mr)
		ibv_dereg_mr(self->mr);
	if (self->buf)
		munmap(self->buf, 1 << 20);
	if (self->ini)
		ibv_destroy_qp(self->ini);
	if (self->tgt)
		ibv_destroy_qp(self->tgt);
	for (int i = 0; i < NSRQ; i++) {
		if (self->srq[i])
			ibv_destroy_srq(self->srq[i]);
		if (self->rcq[i])
			ibv_destroy_cq(self->rcq[i]);
	}
	if (self->scq)
		ibv_destroy_cq(self->scq);
	if (self->xrcd)
		ibv_close_xrcd(self->xrcd);
	env_close(&self->e);
}

static int srq_recv(FIXTURE_DATA(xrc) *self, int i, uint64_t id, size_t off)
{
	struct ibv_sge s = { (uintptr_t)self->buf + off, 4096, self->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &s, .num_sge = 1 }, *bad;

	return ibv_post_srq_recv(self->srq[i], &wr, &bad);
}

/* One signaled WR from the initiator to XRC SRQ number @srqn; its status. */
static int xsend(FIXTURE_DATA(xrc) *self, enum ibv_wr_opcode op, uint32_t srqn,
		 size_t off, uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge s = { (uintptr_t)self->buf + off, len, self->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 0x5e, .sg_list = &s, .num_sge = 1,
				  .opcode = op, .send_flags = IBV_SEND_SIGNALED,
				  .imm_data = htonl(0x1234) }, *bad;
	struct ibv_wc wc;

	wr.qp_type.xrc.remote_srqn = srqn;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(self->ini, &wr, &bad))
		return -1;
	return poll_one(self->scq, &wc, WC_MS) == 1 ? (int)wc.status : -1;
}

/* Each message lands in the SRQ it names and completes on its CQ. */
TEST_F(xrc, send_to_each_srq)
{
	struct ibv_wc wc;

	for (int i = 0; i < NSRQ; i++)
		ASSERT_EQ(0, srq_recv(self, i, 100 + i, (size_t)(1 + i) * 65536));
	for (int i = NSRQ - 1; i >= 0; i--) {
		fill(self->buf, 1000, 10 + i);
		ASSERT_EQ(IBV_WC_SUCCESS, xsend(self, IBV_WR_SEND_WITH_IMM,
						self->srqn[i], 0, 1000, 0, 0));
		WAIT_WC(self->rcq[i], wc);
		ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
		EXPECT_EQ(100 + i, wc.wr_id);
		EXPECT_EQ(1000, wc.byte_len);
		EXPECT_EQ(self->tgt->qp_num, wc.qp_num);
		EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
		EXPECT_EQ(0x1234, ntohl(wc.imm_data));
		EXPECT_EQ(-1, verify(self->buf + (size_t)(1 + i) * 65536, 1000,
				     10 + i));
		/* Nothing on the other SRQ's CQ. */
		EXPECT_EQ(0, ibv_poll_cq(self->rcq[1 - i], 1, &wc));
	}
}

/* RDMA through the target QP, checked against the named SRQ's PD. */
TEST_F(xrc, rdma_against_the_srq_pd)
{
	struct ibv_pd *pd2 = ibv_alloc_pd(self->e.ctx);
	struct ibv_mr *other;

	ASSERT_NE(NULL, pd2);
	fill(self->buf, 512, 20);
	ASSERT_EQ(IBV_WC_SUCCESS,
		  xsend(self, IBV_WR_RDMA_WRITE, self->srqn[0], 0, 512,
			(uintptr_t)self->buf + 300000, self->mr->rkey));
	EXPECT_EQ(-1, verify(self->buf + 300000, 512, 20));
	ASSERT_EQ(IBV_WC_SUCCESS,
		  xsend(self, IBV_WR_RDMA_READ, self->srqn[1], 4096, 512,
			(uintptr_t)self->buf + 300000, self->mr->rkey));
	EXPECT_EQ(-1, verify(self->buf + 4096, 512, 20));
	/* An MR of another PD than the SRQ's is no target. */
	other = ibv_reg_mr(pd2, self->buf + 512 * 1024, 4096,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	ASSERT_NE(NULL, other);
	EXPECT_EQ(IBV_WC_REM_ACCESS_ERR,
		  xsend(self, IBV_WR_RDMA_WRITE, self->srqn[0], 0, 64,
			(uintptr_t)self->buf + 512 * 1024, other->rkey));
	EXPECT_EQ(0, ibv_dereg_mr(other));
	EXPECT_EQ(0, ibv_dealloc_pd(pd2));
}

/* A number that is no XRC SRQ of the target's domain: invalid request. */
TEST_F(xrc, unknown_srq)
{
	struct ibv_srq_init_attr basic = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(self->e.pd, &basic);
	uint32_t n;

	ASSERT_NE(NULL, srq);
	/* A basic SRQ has no XRC number. */
	EXPECT_NE(0, ibv_get_srq_num(srq, &n));
	EXPECT_EQ(IBV_WC_REM_INV_REQ_ERR,
		  xsend(self, IBV_WR_SEND, self->srqn[0] + self->srqn[1] + 7, 0,
			16, 0, 0));
	EXPECT_EQ(0, ibv_destroy_srq(srq));
}

/* What posting refuses on XRC QPs. */
TEST_F(xrc, post_time_checks)
{
	struct ibv_sge s = { (uintptr_t)self->buf, 16, self->mr->lkey };
	struct ibv_recv_wr rwr = { .sg_list = &s, .num_sge = 1 }, *rbad;
	struct ibv_send_wr wr = { .sg_list = &s, .num_sge = 1,
				  .opcode = IBV_WR_SEND }, *bad;

	/* Receives go to XRC SRQs, never to the QPs. */
	EXPECT_NE(0, ibv_post_recv(self->ini, &rwr, &rbad));
	EXPECT_NE(0, ibv_post_recv(self->tgt, &rwr, &rbad));
	/* A target QP has no send queue. */
	EXPECT_NE(0, ibv_post_send(self->tgt, &wr, &bad));
}

/* A second handle on the target QP (ibv_open_qp) and its domain's life. */
TEST_F(xrc, open_qp)
{
	struct ibv_qp_open_attr oa = {
		.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
			     IBV_QP_OPEN_ATTR_TYPE,
		.qp_num = self->tgt->qp_num, .xrcd = self->xrcd,
		.qp_type = IBV_QPT_XRC_RECV,
	};
	struct ibv_qp *q = ibv_open_qp(self->e.ctx, &oa);
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	struct ibv_wc wc;

	ASSERT_NE(NULL, q) TH_LOG("open_qp: %s", strerror(errno));
	EXPECT_EQ(self->tgt->qp_num, q->qp_num);
	ASSERT_EQ(0, ibv_query_qp(q, &a, IBV_QP_STATE, &ia));
	EXPECT_EQ(IBV_QPS_RTR, a.qp_state);
	/* Destroying the creator's handle leaves the QP to the other. */
	ASSERT_EQ(0, ibv_destroy_qp(self->tgt));
	self->tgt = NULL;
	ASSERT_EQ(0, srq_recv(self, 0, 7, 0));
	ASSERT_EQ(IBV_WC_SUCCESS, xsend(self, IBV_WR_SEND, self->srqn[0],
					65536, 64, 0, 0));
	WAIT_WC(self->rcq[0], wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
	EXPECT_EQ(q->qp_num, wc.qp_num);
	EXPECT_EQ(0, ibv_destroy_qp(q));
}

TEST_HARNESS_MAIN
