// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Extended CQs (ibv_cq_ex) on $SRNIC_DEV: what ibv_create_cq_ex() refuses,
 * start_poll/next_poll/end_poll over the same ring ibv_poll_cq reads, every
 * read_* accessor, and completion timestamps: the device clock is
 * CLOCK_MONOTONIC in ns, the clock ibv_query_rt_values_ex() reads.
 */
#include "kselftest_harness.h"
#include "traffic.h"

#define TS_FLAGS (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | \
		  IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* The device clock through ibv_query_rt_values_ex(), in ns. */
static uint64_t dev_clock(struct ibv_context *ctx)
{
	struct ibv_values_ex v = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };

	if (ibv_query_rt_values_ex(ctx, &v) ||
	    !(v.comp_mask & IBV_VALUES_MASK_RAW_CLOCK))
		return 0;
	return v.raw_clock.tv_sec * 1000000000ull + v.raw_clock.tv_nsec;
}

/* start_poll until an entry is there, within WC_MS: 0, or the error. */
static int start_poll_wait(struct ibv_cq_ex *cq)
{
	struct ibv_poll_cq_attr attr = {};
	uint64_t end = now_ms() + WC_MS;
	int err;

	while ((err = ibv_start_poll(cq, &attr)) == ENOENT && now_ms() < end)
		sched_yield();
	return err;
}

/* next_poll until an entry is there, within WC_MS. */
static int next_poll_wait(struct ibv_cq_ex *cq)
{
	uint64_t end = now_ms() + WC_MS;
	int err;

	while ((err = ibv_next_poll(cq)) == ENOENT && now_ms() < end)
		sched_yield();
	return err;
}

FIXTURE(create) {
	struct env e;
};

FIXTURE_SETUP(create)
{
	ASSERT_EQ(0, env_open(&self->e));
}

FIXTURE_TEARDOWN(create)
{
	env_close(&self->e);
}

static int try_create(struct env *e, struct ibv_cq_init_attr_ex a)
{
	struct ibv_cq_ex *cq;

	errno = 0;
	cq = ibv_create_cq_ex(e->ctx, &a);
	if (!cq)
		return errno;
	ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
	return 0;
}

TEST_F(create, refused_and_accepted)
{
	struct ibv_cq_init_attr_ex a = { .cqe = 16 };
	uint64_t ok[] = { 0, IBV_WC_STANDARD_FLAGS, TS_FLAGS,
			  IBV_WC_STANDARD_FLAGS | TS_FLAGS,
			  IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_TM_INFO };
	uint64_t no[] = { IBV_WC_EX_WITH_CVLAN, IBV_WC_EX_WITH_FLOW_TAG,
			  1ull << 20 };

	for (unsigned int i = 0; i < ARRAY_SIZE(ok); i++) {
		a.wc_flags = ok[i];
		EXPECT_EQ(0, try_create(&self->e, a)) TH_LOG("wc_flags 0x%llx",
			(unsigned long long)ok[i]);
	}
	for (unsigned int i = 0; i < ARRAY_SIZE(no); i++) {
		a.wc_flags = IBV_WC_STANDARD_FLAGS | no[i];
		EXPECT_EQ(EOPNOTSUPP, try_create(&self->e, a))
			TH_LOG("wc_flags 0x%llx", (unsigned long long)no[i]);
	}
	a.wc_flags = 0;
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	a.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
	EXPECT_EQ(0, try_create(&self->e, a));
	a.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	EXPECT_EQ(EOPNOTSUPP, try_create(&self->e, a));
	a.flags = 1u << 5;
	EXPECT_EQ(EINVAL, try_create(&self->e, a));
	a.flags = 0;
	/* A parent domain is required with MASK_PD, not a plain PD (pd_test). */
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	a.parent_domain = self->e.pd;
	EXPECT_EQ(EINVAL, try_create(&self->e, a));
	a.parent_domain = NULL;
	a.comp_mask = 0;
	a.cqe = self->e.dev.max_cqe + 1;
	EXPECT_EQ(EINVAL, try_create(&self->e, a));
	a.cqe = 16;
	a.comp_vector = self->e.ctx->num_comp_vectors;
	EXPECT_EQ(EINVAL, try_create(&self->e, a));
}

/* query_device_ex reports the clock: 1 GHz (in kHz), all 64 bits. */
TEST_F(create, device_clock)
{
	struct ibv_device_attr_ex attr;
	uint64_t t0, d, t1;

	ASSERT_EQ(0, ibv_query_device_ex(self->e.ctx, NULL, &attr));
	EXPECT_EQ(1000000, attr.hca_core_clock);
	EXPECT_EQ(~0ull, attr.completion_timestamp_mask);
	t0 = clock_ns(CLOCK_MONOTONIC);
	d = dev_clock(self->e.ctx);
	t1 = clock_ns(CLOCK_MONOTONIC);
	EXPECT_LE(t0, d);
	EXPECT_LE(d, t1);
}

FIXTURE(cqex) {
	struct env e;
	struct ep a, b;
	uint32_t grh;
};

FIXTURE_VARIANT(cqex) {
	enum ibv_qp_type type;
	uint64_t wc_flags;
};

FIXTURE_VARIANT_ADD(cqex, rc) {
	.type = IBV_QPT_RC, .wc_flags = IBV_WC_STANDARD_FLAGS,
};
FIXTURE_VARIANT_ADD(cqex, rc_ts) {
	.type = IBV_QPT_RC, .wc_flags = IBV_WC_STANDARD_FLAGS | TS_FLAGS,
};
FIXTURE_VARIANT_ADD(cqex, ud_ts) {
	.type = IBV_QPT_UD, .wc_flags = IBV_WC_STANDARD_FLAGS | TS_FLAGS,
};

FIXTURE_SETUP(cqex)
{
	ASSERT_EQ(0, env_open(&self->e));
	struct qp_opts o = qp_defaults(&self->e, variant->type);

	o.cq_ex = 1;
	o.wc_flags = variant->wc_flags;
	o.cqe = 64;
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &self->a, &self->b))
		TH_LOG("pair with ibv_cq_ex: %s", strerror(errno));
	self->grh = variant->type == IBV_QPT_UD ? 40 : 0;
}

FIXTURE_TEARDOWN(cqex)
{
	ep_destroy(&self->a);
	ep_destroy(&self->b);
	env_close(&self->e);
}

/* An empty CQ: ENOENT, and no end_poll is owed. */
TEST_F(cqex, empty)
{
	struct ibv_poll_cq_attr attr = {};

	EXPECT_EQ(ENOENT, ibv_start_poll(self->a.cqx, &attr));
	EXPECT_EQ(ENOENT, ibv_start_poll(self->a.cqx, &attr));
	attr.comp_mask = 1;
	EXPECT_EQ(EINVAL, ibv_start_poll(self->a.cqx, &attr));
}

/* Every accessor on a send and a receive completion. */
TEST_F(cqex, accessors)
{
	struct ibv_cq_ex *s = self->a.cqx, *r = self->b.cqx;

	fill(self->a.buf, 300, 1);
	ASSERT_EQ(0, post_recv(&self->b, 0x77, 0, 4096));
	ASSERT_EQ(0, post_send1(&self->a, IBV_WR_SEND_WITH_IMM, 0x55, 0, 300,
				IBV_SEND_SIGNALED, NULL, 0, 0xc0ffee));

	ASSERT_EQ(0, start_poll_wait(s));
	EXPECT_EQ(0x55, s->wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, s->status);
	EXPECT_EQ(IBV_WC_SEND, ibv_wc_read_opcode(s));
	EXPECT_EQ(0, ibv_wc_read_vendor_err(s));
	EXPECT_EQ(self->a.qp->qp_num, ibv_wc_read_qp_num(s));
	EXPECT_EQ(0, ibv_wc_read_wc_flags(s) & IBV_WC_WITH_IMM);
	ibv_end_poll(s);

	ASSERT_EQ(0, start_poll_wait(r));
	EXPECT_EQ(0x77, r->wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, r->status);
	EXPECT_EQ(IBV_WC_RECV, ibv_wc_read_opcode(r));
	EXPECT_EQ(self->grh + 300, ibv_wc_read_byte_len(r));
	EXPECT_EQ(0xc0ffee, ntohl(ibv_wc_read_imm_data(r)));
	EXPECT_EQ(self->b.qp->qp_num, ibv_wc_read_qp_num(r));
	EXPECT_EQ(0, ibv_wc_read_slid(r));
	EXPECT_EQ(0, ibv_wc_read_dlid_path_bits(r));
	if (variant->type == IBV_QPT_UD) {
		/* As mlx5 on Ethernet: sl names the GRH slot's header (2 IPv4, 1 IPv6). */
		EXPECT_EQ(self->b.buf[20] == 0x45 ? 2 : 1, ibv_wc_read_sl(r));
		EXPECT_EQ(IBV_WC_WITH_IMM | IBV_WC_GRH, ibv_wc_read_wc_flags(r));
		EXPECT_EQ(self->a.qp->qp_num, ibv_wc_read_src_qp(r));
	} else {
		EXPECT_EQ(0, ibv_wc_read_sl(r));
		EXPECT_EQ(IBV_WC_WITH_IMM, ibv_wc_read_wc_flags(r));
	}
	ibv_end_poll(r);
	EXPECT_EQ(-1, verify(self->b.buf + self->grh, 300, 1));
	/* Polled and consumed: the next completion of each is the sentinel's. */
	expect_quiet_pair(_metadata, &self->a, &self->b);
}

/* An invalidating send: WITH_INV and the rkey through read_invalidated_rkey. */
TEST_F(cqex, invalidated_rkey)
{
	struct ibv_mr *wmr;
	struct ibv_mw *mw;
	struct ibv_send_wr wr = { .wr_id = 1, .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	if (variant->type != IBV_QPT_RC)
		SKIP(return, "SEND_WITH_INV is RC only");
	wmr = ibv_reg_mr(self->e.pd, self->b.buf, 65536,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	ASSERT_NE(NULL, wmr);
	mw = ibv_alloc_mw(self->e.pd, IBV_MW_TYPE_2);
	ASSERT_NE(NULL, mw);
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
		.mr = wmr, .addr = (uintptr_t)self->b.buf, .length = 4096,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	ASSERT_EQ(0, ibv_post_send(self->b.qp, &wr, &bad));
	WAIT_WC(self->b.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_BIND_MW);

	ASSERT_EQ(0, post_recv(&self->b, 2, 8192, 4096));
	ASSERT_EQ(0, post_send1(&self->a, IBV_WR_SEND, 3, 0, 8, IBV_SEND_SIGNALED,
				NULL, 0, 0));
	{
		struct ibv_send_wr inv, *b2;
		struct ibv_sge sg;

		WAIT_WC(self->a.cq, wc);
		wr_init(&inv, &sg, &self->a, IBV_WR_SEND_WITH_INV, 4, 0, 8,
			IBV_SEND_SIGNALED, NULL, 0, 0);
		inv.invalidate_rkey = wr.bind_mw.rkey;
		ASSERT_EQ(0, post_recv(&self->b, 5, 8192, 4096));
		ASSERT_EQ(0, ibv_post_send(self->a.qp, &inv, &b2));
	}
	/* The plain receive, then the invalidating one, in one poll session. */
	ASSERT_EQ(0, start_poll_wait(self->b.cqx));
	EXPECT_EQ(2, self->b.cqx->wr_id);
	EXPECT_EQ(0, ibv_wc_read_wc_flags(self->b.cqx) & IBV_WC_WITH_INV);
	ASSERT_EQ(0, next_poll_wait(self->b.cqx));
	EXPECT_EQ(5, self->b.cqx->wr_id);
	EXPECT_EQ(IBV_WC_SUCCESS, self->b.cqx->status);
	EXPECT_TRUE(ibv_wc_read_wc_flags(self->b.cqx) & IBV_WC_WITH_INV);
	EXPECT_EQ(wr.bind_mw.rkey, ibv_wc_read_invalidated_rkey(self->b.cqx));
	ibv_end_poll(self->b.cqx);
	WAIT_WC(self->a.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
	ibv_dealloc_mw(mw);
	ibv_dereg_mr(wmr);
}

/*
 * Many completions in one poll session, around the ring several times: the
 * consumer counter end_poll publishes is what lets the engine go on.  With
 * timestamps: non-decreasing, within the device clock read before the first
 * post and after the last poll, and the wall-clock value within
 * CLOCK_REALTIME's.
 */
TEST_F(cqex, sessions_and_timestamps)
{
	struct ibv_cq_ex *s = self->a.cqx;
	int ts = !!(variant->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP);
	uint64_t t0 = dev_clock(self->e.ctx), w0 = clock_ns(CLOCK_REALTIME);
	uint64_t prev = 0, id = 0, t1, w1;
	uint64_t stamps[64 * 4], walls[64 * 4];
	int got = 0, n = 40;

	ASSERT_NE(0, t0);
	ASSERT_LT(n, self->a.cqx->cqe + 1);
	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < n; i++)
			ASSERT_EQ(0, post_recv(&self->b, i, 64 * i, 64));
		for (int i = 0; i < n; i++)
			ASSERT_EQ(0, post_send1(&self->a, IBV_WR_SEND, id + i, 0,
						8, IBV_SEND_SIGNALED, NULL, 0, 0));
		/* One session for all n send completions. */
		ASSERT_EQ(0, start_poll_wait(s));
		for (int i = 0; i < n; i++) {
			if (i)
				ASSERT_EQ(0, next_poll_wait(s));
			EXPECT_EQ(id + i, s->wr_id);
			EXPECT_EQ(IBV_WC_SUCCESS, s->status);
			EXPECT_EQ(IBV_WC_SEND, ibv_wc_read_opcode(s));
			if (ts) {
				stamps[got] = ibv_wc_read_completion_ts(s);
				walls[got] = ibv_wc_read_completion_wallclock_ns(s);
			}
			got++;
		}
		EXPECT_EQ(ENOENT, ibv_next_poll(s));
		ibv_end_poll(s);
		/* The receives, through ibv_poll_cq on the same CQ. */
		for (int i = 0; i < n; i++) {
			struct ibv_wc wc;

			WAIT_WC(self->b.cq, wc);
			ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
			EXPECT_EQ(i, wc.wr_id);
		}
		id += n;
	}
	t1 = dev_clock(self->e.ctx);
	w1 = clock_ns(CLOCK_REALTIME);
	if (!ts)
		return;
	for (int i = 0; i < got; i++) {
		EXPECT_LE(t0, stamps[i]) TH_LOG("completion %d", i);
		EXPECT_LE(stamps[i], t1) TH_LOG("completion %d", i);
		EXPECT_LE(prev, stamps[i]) TH_LOG("completion %d went back", i);
		prev = stamps[i];
		/* Allow for the clocks' offset moving under NTP slewing. */
		EXPECT_LE(w0 - 1000000, walls[i]);
		EXPECT_LE(walls[i], w1 + 1000000);
	}
	EXPECT_LT(stamps[0], stamps[got - 1]);
}

/* Error completions through the extended API: status and vendor_err. */
TEST_F(cqex, flush_errors)
{
	struct ibv_cq_ex *r = self->b.cqx;

	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, post_recv(&self->b, 10 + i, 64 * i, 64));
	ASSERT_EQ(0, to_err(self->b.qp));
	ASSERT_EQ(0, start_poll_wait(r));
	for (int i = 0; i < 3; i++) {
		if (i)
			ASSERT_EQ(0, next_poll_wait(r));
		EXPECT_EQ(10 + i, r->wr_id);
		EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, r->status);
		EXPECT_EQ(self->b.qp->qp_num, ibv_wc_read_qp_num(r));
		EXPECT_EQ(0, ibv_wc_read_vendor_err(r));
	}
	ibv_end_poll(r);
	/* Nothing more: a receive posted in ERR is flushed after them, and next. */
	ASSERT_EQ(0, post_recv(&self->b, SENTINEL_ID, 0, 64));
	ASSERT_EQ(0, start_poll_wait(r));
	EXPECT_EQ(SENTINEL_ID, r->wr_id);
	EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, r->status);
	ibv_end_poll(r);
}

TEST_HARNESS_MAIN
