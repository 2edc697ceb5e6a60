// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Reproducers of what a hostile or careless user did to srnic, each a test
 * that failed (or hung the guest) before its fix: keys of index 0 and
 * reserved slots, a QP impersonating another's peer, teardown of thousands
 * of windows and MRs, device memory kept past its budget, the extended CQ's
 * completion channel, and `rdma statistic`.
 */
#include <pthread.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "traffic.h"
#include "srnic-abi.h"

/* Time limits, with room for TCG and a loaded host. */
#define FAST_MS scaled_ms(2000)

FIXTURE(keys) {
	struct env e;
	struct ep a, b;
};

FIXTURE_SETUP(keys)
{
	struct qp_opts o;

	ASSERT_EQ(0, env_open(&self->e));
	o = qp_defaults(&self->e, IBV_QPT_RC);
	o.retry_cnt = 1;
	o.timeout = 1;
	ASSERT_EQ(0, pair_make(&self->e, &o, &o, &self->a, &self->b));
}

FIXTURE_TEARDOWN(keys)
{
	ep_destroy(&self->a);
	ep_destroy(&self->b);
	env_close(&self->e);
}

/* One signaled WR from a, completed within FAST_MS: its status. */
static int one_wr(struct __test_metadata *_metadata, struct ep *x,
		  enum ibv_wr_opcode op, uint32_t lkey, uint64_t raddr,
		  uint32_t rkey)
{
	struct ibv_sge s = { (uintptr_t)x->buf, 8, lkey };
	struct ibv_send_wr wr = {
		.wr_id = 7, .sg_list = &s, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	uint64_t t0 = now_ms();
	struct ibv_wc wc;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(x->qp, &wr, &bad))
		return -1;
	if (poll_one(x->cq, &wc, WC_MS) != 1)
		return -1;
	EXPECT_GT(FAST_MS, now_ms() - t0) TH_LOG("completion took %llu ms",
		  (unsigned long long)(now_ms() - t0));
	return wc.status;
}

/* Both QPs back to RESET and connected again (same QPNs, empty CQs). */
static int reconnect(struct ep *a, struct ep *b)
{
	struct ibv_qp_attr r = { .qp_state = IBV_QPS_RESET };
	struct ibv_wc wc;

	if (ibv_modify_qp(a->qp, &r, IBV_QP_STATE) ||
	    ibv_modify_qp(b->qp, &r, IBV_QP_STATE))
		return -1;
	while (ibv_poll_cq(a->cq, 1, &wc) > 0 || ibv_poll_cq(b->cq, 1, &wc) > 0)
		;
	return ep_connect(a, b->qp->qp_num) || ep_connect(b, a->qp->qp_num);
}

/* Keys naming index 0, which the table reserves, in every key byte. */
static const uint32_t zero_index_keys[] = { 0, 0x01, 0x7f, 0xff };

TEST_F(keys, write_rkey_index0_is_remote_access_error)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(zero_index_keys); i++) {
		ASSERT_EQ(IBV_WC_REM_ACCESS_ERR,
			  one_wr(_metadata, &self->a, IBV_WR_RDMA_WRITE,
				 self->a.mr->lkey, (uintptr_t)self->b.buf,
				 zero_index_keys[i]));
		ASSERT_EQ(0, reconnect(&self->a, &self->b));
	}
}

TEST_F(keys, write_lkey_index0_is_local_protection_error)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(zero_index_keys); i++) {
		ASSERT_EQ(IBV_WC_LOC_PROT_ERR,
			  one_wr(_metadata, &self->a, IBV_WR_RDMA_WRITE,
				 zero_index_keys[i], (uintptr_t)self->b.buf,
				 self->b.mr->rkey));
		ASSERT_EQ(0, reconnect(&self->a, &self->b));
	}
}

TEST_F(keys, read_and_atomic_with_rkey_index0)
{
	ASSERT_EQ(IBV_WC_REM_ACCESS_ERR,
		  one_wr(_metadata, &self->a, IBV_WR_RDMA_READ,
			 self->a.mr->lkey, (uintptr_t)self->b.buf, 0));
	ASSERT_TRUE(has_atomics(&self->e)) TH_LOG("srnic reports atomic_cap NONE");
	ASSERT_EQ(0, reconnect(&self->a, &self->b));
	ASSERT_EQ(IBV_WC_REM_ACCESS_ERR,
		  one_wr(_metadata, &self->a, IBV_WR_ATOMIC_FETCH_AND_ADD,
			 self->a.mr->lkey, (uintptr_t)self->b.buf, 0));
}

/* A window's index 0 and the top of the window space. */
TEST_F(keys, window_rkeys_of_reserved_indexes)
{
	static const uint32_t mw_keys[] = { 0x80000000u, 0x800000ffu,
					    0xffffffffu };

	for (unsigned int i = 0; i < ARRAY_SIZE(mw_keys); i++) {
		ASSERT_EQ(IBV_WC_REM_ACCESS_ERR,
			  one_wr(_metadata, &self->a, IBV_WR_RDMA_WRITE,
				 self->a.mr->lkey, (uintptr_t)self->b.buf,
				 mw_keys[i]));
		ASSERT_EQ(0, reconnect(&self->a, &self->b));
	}
}

/* A type 1 bind naming an MR by lkey 0. */
TEST_F(keys, bind_with_lkey_index0)
{
	struct ibv_mw *mw = ibv_alloc_mw(self->e.pd, IBV_MW_TYPE_1);
	struct ibv_mr fake = *self->a.mr;
	struct ibv_mw_bind bind = {
		.wr_id = 9, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = &fake, .addr = (uintptr_t)self->a.buf,
			       .length = 64,
			       .mw_access_flags = IBV_ACCESS_REMOTE_WRITE },
	};
	struct ibv_wc wc;
	uint64_t t0 = now_ms();

	ASSERT_NE(NULL, mw);
	fake.lkey = 0;
	fake.rkey = 0;
	ASSERT_EQ(0, ibv_bind_mw(self->a.qp, mw, &bind));
	ASSERT_EQ(1, poll_one(self->a.cq, &wc, WC_MS));
	EXPECT_NE(IBV_WC_SUCCESS, wc.status);
	EXPECT_GT(FAST_MS, now_ms() - t0);
	ASSERT_EQ(0, ibv_dealloc_mw(mw));
}

/* ibv_advise_mr naming lkey 0 (an ODP prefetch): refused, not a hang. */
TEST_F(keys, advise_mr_lkey_index0)
{
	struct ibv_sge s = { (uintptr_t)self->a.buf, 4096, 0 };
	int err;

	err = ibv_advise_mr(self->e.pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
			    IBV_ADVISE_MR_FLAG_FLUSH, &s, 1);
	EXPECT_NE(0, err);
}

/*
 * Re-registration reserves the MR's slot while it swaps the translation:
 * WRITEs aimed at the MR meanwhile must fail or succeed, never spin.
 */
struct rereg_arg {
	struct ibv_mr *mr;
	volatile int stop;
	int rounds, err;
};

static void *rereg_loop(void *p)
{
	struct rereg_arg *r = p;

	while (!r->stop && r->rounds < 400) {
		int acc = (r->rounds & 1) ? IBV_ACCESS_LOCAL_WRITE |
			  IBV_ACCESS_REMOTE_WRITE : IBV_ACCESS_LOCAL_WRITE |
			  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

		if (ibv_rereg_mr(r->mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL,
				 0, acc)) {
			r->err = errno;
			break;
		}
		r->rounds++;
	}
	return NULL;
}

TEST_F(keys, writes_during_rereg)
{
	struct rereg_arg r = { .mr = self->b.mr };
	pthread_t t;
	int ok = 0, failed = 0;

	ASSERT_EQ(0, pthread_create(&t, NULL, rereg_loop, &r));
	while (r.rounds < 400 && !r.err && ok + failed < 2000) {
		int st = one_wr(_metadata, &self->a, IBV_WR_RDMA_WRITE,
				self->a.mr->lkey, (uintptr_t)self->b.buf,
				self->b.mr->rkey);

		ASSERT_TRUE(st == IBV_WC_SUCCESS ||
			    st == IBV_WC_REM_ACCESS_ERR) TH_LOG("status %d", st);
		if (st == IBV_WC_SUCCESS) {
			ok++;
			continue;
		}
		failed++;
		ASSERT_EQ(0, reconnect(&self->a, &self->b));
	}
	r.stop = 1;
	pthread_join(t, NULL);
	EXPECT_EQ(0, r.err);
	TH_LOG("%d rereg rounds, %d writes ok, %d refused", r.rounds, ok, failed);
	EXPECT_LT(0, r.rounds);
	/*
	 * How many writes find the slot reserved depends only on scheduling
	 * (back-to-back reregs leave it free for microseconds); once they
	 * stop, the MR must be whole again under the same key.
	 */
	EXPECT_EQ(IBV_WC_SUCCESS,
		  one_wr(_metadata, &self->a, IBV_WR_RDMA_WRITE,
			 self->a.mr->lkey, (uintptr_t)self->b.buf,
			 self->b.mr->rkey));
}

/* ---- a QP on another device posing as the connected peer ---- */

#define IMP_VETH "srnic_imp"

FIXTURE(impostor) {
	struct env v, m;	/* the victim's device, the impostor's */
	struct ep a, b;		/* victim pair a <-> b on one device */
	struct ep x;		/* the impostor */
	struct ibv_cq *scq;
	struct ibv_qp *spare[64];
	int nspare;
	int made;
};

FIXTURE_SETUP(impostor)
{
	const char *main_dev = srnic_test_dev();
	char saved[64];

	snprintf(saved, sizeof(saved), "%s", main_dev);
	/*
	 * No duplicate address detection: while an address is tentative the
	 * core cannot resolve a path to it (modify to RTR: ETIMEDOUT).
	 */
	ASSERT_EQ(0, sh("ip link add %s0 type veth peer name %s1 && "
			"sysctl -qw net.ipv6.conf.%s0.accept_dad=0 && "
			"sysctl -qw net.ipv6.conf.%s1.accept_dad=0 && "
			"ip link set %s0 up && ip link set %s1 up && "
			"rdma link add %sv type srnic netdev %s0 && "
			"rdma link add %sm type srnic netdev %s1",
			IMP_VETH, IMP_VETH, IMP_VETH, IMP_VETH, IMP_VETH,
			IMP_VETH, IMP_VETH, IMP_VETH, IMP_VETH, IMP_VETH));
	self->made = 1;
	ASSERT_TRUE(wait_until(gid_ready, IMP_VETH "v", 1, 10000));
	ASSERT_TRUE(wait_until(gid_ready, IMP_VETH "m", 1, 10000));
	ASSERT_TRUE(wait_until(port_active, IMP_VETH "v", 1, 10000));
	ASSERT_TRUE(wait_until(port_active, IMP_VETH "m", 1, 10000));
	ASSERT_EQ(0, env_open_dev(&self->v, IMP_VETH "v"));
	ASSERT_EQ(0, env_open_dev(&self->m, IMP_VETH "m"));
	setenv("SRNIC_DEV", saved, 1);
}

FIXTURE_TEARDOWN(impostor)
{
	ep_destroy(&self->x);
	while (self->nspare)
		ibv_destroy_qp(self->spare[--self->nspare]);
	if (self->scq)
		ibv_destroy_cq(self->scq);
	ep_destroy(&self->a);
	ep_destroy(&self->b);
	env_close(&self->m);
	env_close(&self->v);
	if (self->made)
		sh("rdma link del %sv; rdma link del %sm; ip link del %s0",
		   IMP_VETH, IMP_VETH, IMP_VETH);
}

TEST_F(impostor, rc_peer_is_checked_by_address_not_qpn)
{
	struct qp_opts o = qp_defaults(&self->v, IBV_QPT_RC);
	struct qp_opts ox = qp_defaults(&self->m, IBV_QPT_RC);
	struct ibv_wc wc;
	uint32_t target;

	ASSERT_EQ(0, ep_create(&self->v, &o, &self->a)) TH_LOG("%s", strerror(errno));
	ASSERT_EQ(0, ep_create(&self->v, &o, &self->b)) TH_LOG("%s", strerror(errno));
	ASSERT_EQ(0, ep_connect(&self->a, self->b.qp->qp_num))
		TH_LOG("victim a: %s", strerror(errno));
	ASSERT_EQ(0, ep_connect(&self->b, self->a.qp->qp_num))
		TH_LOG("victim b: %s", strerror(errno));
	target = self->b.qp->qp_num;
	/* The impostor gets b's QPN on its own device (QPNs go up). */
	ox.retry_cnt = 1;
	ox.timeout = 1;
	self->scq = ibv_create_cq(self->m.ctx, 4, NULL, NULL, 0);
	ASSERT_NE(NULL, self->scq);
	for (;;) {
		struct ibv_qp_init_attr init = {
			.send_cq = self->scq, .recv_cq = self->scq,
			.cap = { .max_send_wr = 1, .max_recv_wr = 1,
				 .max_send_sge = 1, .max_recv_sge = 1 },
			.qp_type = IBV_QPT_RC,
		};
		struct ibv_qp *q;

		ASSERT_GT(64, self->nspare);
		q = ibv_create_qp(self->m.pd, &init);
		ASSERT_NE(NULL, q);
		self->spare[self->nspare++] = q;
		if (q->qp_num + 1 >= target)
			break;
	}
	ASSERT_EQ(0, ep_create(&self->m, &ox, &self->x));
	ASSERT_EQ(target, self->x.qp->qp_num);
	for (int i = 0; i < 8; i++)
		ASSERT_EQ(0, post_recv(&self->a, 100 + i, 0, 4096));
	memset(self->a.buf, 0x5a, 8192);
	fill(self->x.buf, 8192, 3);

	/* It connects to a, on the victim's GID, as b is: nothing answers. */
	for (int i = 0; i < 2; i++) {
		struct ibv_qp_attr r = { .qp_state = IBV_QPS_RESET };
		struct env fake = self->m;

		fake.gid = self->v.gid;	/* the destination: a's device */
		self->x.e = &fake;
		if (i)
			ASSERT_EQ(0, ibv_modify_qp(self->x.qp, &r, IBV_QP_STATE));
		ASSERT_EQ(0, ep_connect(&self->x, self->a.qp->qp_num))
			TH_LOG("connect: %s", strerror(errno));
		self->x.e = &self->m;
		ASSERT_EQ(0, post_send1(&self->x, i ? IBV_WR_RDMA_WRITE :
					IBV_WR_SEND, i, 0, 64,
					IBV_SEND_SIGNALED, &self->a, 4096, 0));
		ASSERT_EQ(1, poll_one(self->x.cq, &wc, WC_MS));
		EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, wc.status)
			TH_LOG("%s: %s", i ? "WRITE" : "SEND",
			       ibv_wc_status_str(wc.status));
	}

	/* The victim saw nothing: its first receive is b's sentinel. */
	EXPECT_EQ(-1, all_eq(self->a.buf, 8192, 0x5a));
	EXPECT_EQ(IBV_QPS_RTS, qp_state(self->a.qp));
	fill(self->b.buf, 64, 77);
	ASSERT_EQ(0, post_send1(&self->b, IBV_WR_SEND, 3, 0, 64,
				IBV_SEND_SIGNALED, NULL, 0, 0));
	ASSERT_EQ(1, poll_one(self->b.cq, &wc, WC_MS));
	ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
	ASSERT_EQ(1, poll_one(self->a.cq, &wc, WC_MS));
	ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(100, wc.wr_id) TH_LOG("the impostor's message was received");
	EXPECT_EQ(-1, verify(self->a.buf, 64, 77));
	EXPECT_EQ(IBV_QPS_RTS, qp_state(self->a.qp));
}

/* ---- tearing down thousands of windows and MRs ---- */

#define MANY_MW 4096
/* 65,536 MRs, or a quarter of a smaller table (srnic.max_mr on a debug kernel). */
#define MANY_MR 65536

static int make_many(struct ibv_pd *pd, void *page, struct ibv_mw **mws,
		     struct ibv_mr **mrs, int nmw, int nmr)
{
	for (int i = 0; i < nmw; i++) {
		mws[i] = ibv_alloc_mw(pd, (i & 1) ? IBV_MW_TYPE_2 :
						    IBV_MW_TYPE_1);
		if (!mws[i])
			return -1;
	}
	for (int i = 0; i < nmr; i++) {
		mrs[i] = ibv_reg_mr(pd, page, 4096, IBV_ACCESS_LOCAL_WRITE |
				    IBV_ACCESS_REMOTE_WRITE);
		if (!mrs[i])
			return -1;
	}
	return 0;
}

FIXTURE(teardown) {
	struct env e;
	void *page;
	int many_mr;
};

FIXTURE_SETUP(teardown)
{
	ASSERT_EQ(0, env_open(&self->e));
	self->many_mr = self->e.dev.max_mr / 4 < MANY_MR ?
			self->e.dev.max_mr / 4 : MANY_MR;
	self->page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->page);
}

FIXTURE_TEARDOWN(teardown)
{
	env_close(&self->e);
	munmap(self->page, 4096);
}

TEST_F_TIMEOUT(teardown, thousands_freed_explicitly_in_seconds, 900)
{
	struct ibv_mw **mws = calloc(MANY_MW, sizeof(*mws));
	struct ibv_mr **mrs = calloc(self->many_mr, sizeof(*mrs));
	long long base = pinned_pages();
	uint64_t t0;

	ASSERT_EQ(0, make_many(self->e.pd, self->page, mws, mrs, MANY_MW,
			       self->many_mr));
	EXPECT_EQ(base + self->many_mr, pinned_pages());
	t0 = now_ms();
	for (int i = 0; i < MANY_MW; i++)
		ASSERT_EQ(0, ibv_dealloc_mw(mws[i]));
	TH_LOG("%d windows freed in %llu ms", MANY_MW,
	       (unsigned long long)(now_ms() - t0));
	EXPECT_GT(scaled_ms(5000), now_ms() - t0);
	t0 = now_ms();
	for (int i = 0; i < self->many_mr; i++)
		ASSERT_EQ(0, ibv_dereg_mr(mrs[i]));
	EXPECT_EQ(base, pinned_pages());
	TH_LOG("%d MRs freed in %llu ms", self->many_mr,
	       (unsigned long long)(now_ms() - t0));
	EXPECT_GT(scaled_ms(10000), now_ms() - t0);
	free(mws);
	free(mrs);
}

TEST_F_TIMEOUT(teardown, thousands_freed_by_exit_in_seconds, 900)
{
	long long base = pinned_pages();
	int fds[2], st;
	uint64_t t0;
	char c;
	pid_t pid;

	ASSERT_EQ(0, pipe(fds));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct env e;
		struct ibv_mw **mws = calloc(MANY_MW, sizeof(*mws));
		struct ibv_mr **mrs = calloc(self->many_mr, sizeof(*mrs));

		if (env_open(&e) ||
		    make_many(e.pd, self->page, mws, mrs, MANY_MW, self->many_mr))
			_exit(1);
		c = 1;
		if (write(fds[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(fds[1]);
	ASSERT_EQ(1, read(fds[0], &c, 1));
	EXPECT_EQ(base + self->many_mr, pinned_pages());
	t0 = now_ms();
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	EXPECT_EQ(base, pinned_pages());
	TH_LOG("%d windows and %d MRs freed by exit in %llu ms", MANY_MW,
	       self->many_mr, (unsigned long long)(now_ms() - t0));
	EXPECT_GT(scaled_ms(10000), now_ms() - t0);
	close(fds[0]);
}

/* ---- device memory holds its budget while it is mapped ---- */

TEST_F(teardown, dm_budget_held_while_mapped)
{
	size_t len = SRNIC_DM_MAX_PAGES * 4096;
	struct ibv_alloc_dm_attr attr = { .length = len };
	struct ibv_dm *dm = ibv_alloc_dm(self->e.ctx, &attr), *again;
	/* Another context asks: the budget is the device's. */
	struct ibv_context *other = open_named(srnic_test_dev());
	void *map;

	ASSERT_NE(NULL, dm) TH_LOG("srnic's device memory: %s", strerror(errno));
	ASSERT_NE(NULL, other);
	/* A second mapping of the same pages, by the process itself. */
	map = uverbs_mmap(self->e.ctx->cmd_fd, len, PROT_READ | PROT_WRITE,
			  (off_t)SRNIC_DM_MMAP_PGOFF(dm->handle) * 4096);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(0, ibv_free_dm(dm));
	/* The pages live on: the budget is still spent. */
	again = ibv_alloc_dm(other, &attr);
	EXPECT_EQ(NULL, again) TH_LOG("a freed DM's pages, still mapped, "
				      "no longer count");
	if (again)
		ibv_free_dm(again);
	ASSERT_EQ(0, munmap(map, len));
	again = ibv_alloc_dm(other, &attr);
	ASSERT_NE(NULL, again) TH_LOG("budget not returned: %s", strerror(errno));
	ASSERT_EQ(0, ibv_free_dm(again));
	ibv_close_device(other);
}

/* ---- the extended CQ's completion channel ---- */

TEST_F(teardown, cq_ex_channel_is_destroyable)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(self->e.ctx);
	int cookie;
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 16, .channel = ch, .cq_context = &cookie,
		.wc_flags = IBV_WC_STANDARD_FLAGS,
	};
	struct ibv_cq_ex *cq;

	ASSERT_NE(NULL, ch);
	cq = ibv_create_cq_ex(self->e.ctx, &ca);
	ASSERT_NE(NULL, cq);
	EXPECT_EQ(&cookie, ibv_cq_ex_to_cq(cq)->cq_context);
	EXPECT_EQ(ch, ibv_cq_ex_to_cq(cq)->channel);
	ASSERT_EQ(0, ibv_destroy_cq(ibv_cq_ex_to_cq(cq)));
	ASSERT_EQ(0, ibv_destroy_comp_channel(ch));
}

/* ---- rdma statistic with an srnic device present ---- */

TEST(rdma_statistic_show)
{
	char out[256];

	ASSERT_EQ(0, sh_err(out, sizeof(out), "rdma statistic show")) TH_LOG("%s", out);
	ASSERT_EQ(0, sh("rdma statistic show link %s/1 | grep -q wqes",
			srnic_test_dev()));
}

TEST_HARNESS_MAIN
