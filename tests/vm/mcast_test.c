// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * UD multicast on $SRNIC_DEV: QPs attached to a group's GID receive the
 * datagrams sent to it (QPN 0xFFFFFF), each its own copy with the GRH; a
 * detached or never attached QP receives none, nor does a
 * sender that asked IBV_QP_CREATE_BLOCK_SELF_MCAST_LB; attach and detach
 * refuse what the verbs refuse; the device's limits hold and a QP that
 * leaves frees its place, as does a process that exits attached; a QP
 * attached with several LIDs leaves at the last detach, and random attach,
 * detach and destroy get the verbs' answers.  "Received nothing" is shown by a sentinel: a
 * unicast datagram from the same sender, sent after, arrives first.
 */
#include <arpa/inet.h>

#include "kselftest_harness.h"
#include "traffic.h"

#define MC_QPN 0xffffffu
#define MC_LEN 100u
#define SENTINEL 0x5e5e5eu
#define MC_SEND_OFF (48 * KiB)	/* receive slots are 4 KiB each below it */

/* Group number @n, in the family of the device's GID. */
static union ibv_gid group_gid(const struct env *e, unsigned int n)
{
	static const uint8_t v4[12] = { [10] = 0xff, [11] = 0xff };
	union ibv_gid g = {};

	if (!memcmp(e->gid.raw, v4, 12)) {
		memcpy(g.raw, v4, 12);
		g.raw[12] = 239;
		g.raw[13] = 1;
	} else {
		/* Not ff0e::1, whose address (all nodes) the netdev always has. */
		g.raw[0] = 0xff;
		g.raw[1] = 0x0e;
		g.raw[12] = 0x51;
	}
	g.raw[14] = n >> 8;
	g.raw[15] = n;
	return g;
}

/* The Ethernet address the group's frames go to, as the netdev lists it. */
static void group_mac_hex(const union ibv_gid *g, char *hex)
{
	static const uint8_t v4[12] = { [10] = 0xff, [11] = 0xff };

	if (!memcmp(g->raw, v4, 12))
		sprintf(hex, "01005e%02x%02x%02x", g->raw[13] & 0x7f,
			g->raw[14], g->raw[15]);
	else
		sprintf(hex, "3333%02x%02x%02x%02x", g->raw[12], g->raw[13],
			g->raw[14], g->raw[15]);
}

/* Whether the device's netdev receives frames sent to @g's address. */
static int netdev_listens(const char *dev, const union ibv_gid *g)
{
	char hex[16];

	group_mac_hex(g, hex);
	return sh("grep -q \" $(cat /sys/class/infiniband/%s/ports/1/gid_attrs/ndevs/0)"
		  " .* %s$\" /proc/net/dev_mcast", dev, hex) == 0;
}

FIXTURE(mc) {
	struct env e;
	struct ep s, r1, r2;
	union ibv_gid mgid;
	struct ibv_ah *mah;	/* the sender's, to the group */
	/* Receive completions the sender's CQ gave while a send was awaited. */
	struct ibv_wc s_rx[8];
	int s_nrx;
};

static int ud_ep(struct env *e, struct ep *x, uint32_t create_flags)
{
	struct qp_opts o = qp_defaults(e, IBV_QPT_UD);

	o.buf_len = 64 * KiB;
	o.create_flags = create_flags;
	if (ep_create(e, &o, x))
		return -1;
	return ep_connect(x, x->qp->qp_num);
}

/* Two receivers; the sender is made by each test, with its flags. */
FIXTURE_SETUP(mc)
{
	ASSERT_EQ(0, env_open(&self->e));
	ASSERT_NE(0, self->e.dev.max_mcast_grp) TH_LOG("srnic reports no multicast groups");
	ASSERT_EQ(0, ud_ep(&self->e, &self->r1, 0));
	ASSERT_EQ(0, ud_ep(&self->e, &self->r2, 0));
	self->mgid = group_gid(&self->e, 1);
}

FIXTURE_TEARDOWN(mc)
{
	if (self->mah)
		ibv_destroy_ah(self->mah);
	ep_destroy(&self->s);
	ep_destroy(&self->r1);
	ep_destroy(&self->r2);
	env_close(&self->e);
}

/* The sender, with @flags, and its AH to the group. */
static void make_sender(struct __test_metadata *_metadata,
			FIXTURE_DATA(mc) *self, uint32_t flags)
{
	struct ibv_ah_attr ah = ah_to_self(&self->e);

	ASSERT_EQ(0, ud_ep(&self->e, &self->s, flags))
		TH_LOG("UD QP with create flags %#x: %s", flags, strerror(errno));
	ah.grh.dgid = self->mgid;
	self->mah = ibv_create_ah(self->e.pd, &ah);
	ASSERT_NE(NULL, self->mah) TH_LOG("AH to the group: %s", strerror(errno));
}

/*
 * One signaled SEND_WITH_IMM from the sender to (@ah, @qpn, @qkey), waited
 * for; a receive completion of its own met on the way is kept for
 * next_recv() (the sender's send and receive completions share a CQ).
 */
static void send_dgram(struct __test_metadata *_metadata, FIXTURE_DATA(mc) *self,
		       struct ibv_ah *ah, uint32_t qpn, uint32_t qkey,
		       uint32_t imm)
{
	struct ep *s = &self->s;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;

	/* From past the receive slots: the sender may receive too. */
	fill(s->buf + MC_SEND_OFF, MC_LEN, imm);
	wr_init(&wr, &sge, s, IBV_WR_SEND_WITH_IMM, imm, MC_SEND_OFF, MC_LEN,
		IBV_SEND_SIGNALED, NULL, 0, imm);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = qkey;
	ASSERT_EQ(0, ibv_post_send(s->qp, &wr, &bad));
	for (;;) {
		WAIT_WC(s->cq, wc);
		if (!(wc.opcode & IBV_WC_RECV))
			break;
		ASSERT_LT(self->s_nrx, ARRAY_SIZE(self->s_rx));
		self->s_rx[self->s_nrx++] = wc;
	}
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
	EXPECT_EQ(imm, wc.wr_id);
}

/* @r's next receive completion: one kept by send_dgram() first. */
static void next_recv(struct __test_metadata *_metadata, FIXTURE_DATA(mc) *self,
		      struct ep *r, struct ibv_wc *wc)
{
	if (r == &self->s && self->s_nrx) {
		*wc = self->s_rx[0];
		memmove(self->s_rx, self->s_rx + 1,
			--self->s_nrx * sizeof(self->s_rx[0]));
		return;
	}
	ASSERT_EQ(1, poll_one(r->cq, wc, WC_MS)) TH_LOG("no completion within %d ms", WC_MS);
}

static void mc_send(struct __test_metadata *_metadata, FIXTURE_DATA(mc) *self,
		    uint32_t imm)
{
	send_dgram(_metadata, self, self->mah, MC_QPN, QKEY, imm);
}

/* A unicast datagram from the sender to @r: what @r must receive next. */
static void sentinel_to(struct __test_metadata *_metadata,
			FIXTURE_DATA(mc) *self, struct ep *r)
{
	send_dgram(_metadata, self, self->s.ah, r->qp->qp_num, QKEY, SENTINEL);
}

/* Receive buffers for @n datagrams on @r (slot i at 4 KiB * i). */
static void post_recvs(struct __test_metadata *_metadata, struct ep *r, int n)
{
	for (int i = 0; i < n; i++)
		ASSERT_EQ(0, post_recv(r, i, 4096 * i, 40 + MC_LEN + 16));
}

/*
 * @r's next completion: the datagram with immediate @imm from the sender,
 * to @dgid, its bytes in receive slot @slot.
 */
static void expect_dgram(struct __test_metadata *_metadata,
			 FIXTURE_DATA(mc) *self, struct ep *r, uint32_t imm,
			 const union ibv_gid *dgid, int slot)
{
	struct ibv_wc wc;

	next_recv(_metadata, self, r, &wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
	ASSERT_EQ(imm, ntohl(wc.imm_data)) TH_LOG("QP %u: immediate %#x, wanted %#x",
		  r->qp->qp_num, ntohl(wc.imm_data), imm);
	EXPECT_EQ(slot, wc.wr_id);
	EXPECT_EQ(40 + MC_LEN, wc.byte_len);
	EXPECT_TRUE(wc.wc_flags & IBV_WC_GRH);
	EXPECT_EQ(self->s.qp->qp_num, wc.src_qp);
	EXPECT_EQ(r->qp->qp_num, wc.qp_num);
	check_grh(_metadata, r->buf + 4096 * slot, &self->e.gid, dgid);
	EXPECT_EQ(-1, verify(r->buf + 4096 * slot + 40, MC_LEN, imm));
}

static void expect_mc(struct __test_metadata *_metadata, FIXTURE_DATA(mc) *self,
		      struct ep *r, uint32_t imm, int slot)
{
	expect_dgram(_metadata, self, r, imm, &self->mgid, slot);
}

static void expect_sentinel(struct __test_metadata *_metadata,
			    FIXTURE_DATA(mc) *self, struct ep *r, int slot)
{
	expect_dgram(_metadata, self, r, SENTINEL, &self->e.gid, slot);
}

static int attach(struct ep *x, const union ibv_gid *g)
{
	return ibv_attach_mcast(x->qp, g, 0);
}

static int detach(struct ep *x, const union ibv_gid *g)
{
	return ibv_detach_mcast(x->qp, g, 0);
}

/* Every attached QP gets each datagram, in order, with the GRH. */
TEST_F(mc, delivered_to_every_attached_qp)
{
	make_sender(_metadata, self, 0);
	ASSERT_EQ(0, attach(&self->r1, &self->mgid));
	ASSERT_EQ(0, attach(&self->r2, &self->mgid));
	post_recvs(_metadata, &self->r1, 3);
	post_recvs(_metadata, &self->r2, 3);
	for (uint32_t i = 1; i <= 3; i++)
		mc_send(_metadata, self, i);
	for (int i = 0; i < 3; i++) {
		expect_mc(_metadata, self, &self->r1, i + 1, i);
		expect_mc(_metadata, self, &self->r2, i + 1, i);
	}
	/* One copy each: a sentinel comes next. */
	post_recvs(_metadata, &self->r1, 1);
	sentinel_to(_metadata, self, &self->r1);
	expect_sentinel(_metadata, self, &self->r1, 0);
}

/*
 * An attached sender receives its own datagrams (the default), unless it
 * was created with IBV_QP_CREATE_BLOCK_SELF_MCAST_LB (@flags).
 */
static void sender_attached(struct __test_metadata *_metadata,
			    FIXTURE_DATA(mc) *self, uint32_t flags)
{
	make_sender(_metadata, self, flags);
	ASSERT_EQ(0, attach(&self->s, &self->mgid));
	ASSERT_EQ(0, attach(&self->r1, &self->mgid));
	post_recvs(_metadata, &self->s, 2);
	post_recvs(_metadata, &self->r1, 1);
	mc_send(_metadata, self, 7);
	expect_mc(_metadata, self, &self->r1, 7, 0);
	if (!flags) {
		expect_mc(_metadata, self, &self->s, 7, 0);
	} else {
		sentinel_to(_metadata, self, &self->s);
		expect_sentinel(_metadata, self, &self->s, 0);
	}
}

TEST_F(mc, attached_sender_receives_its_own)
{
	sender_attached(_metadata, self, 0);
}

TEST_F(mc, blocked_sender_skips_itself)
{
	sender_attached(_metadata, self, IBV_QP_CREATE_BLOCK_SELF_MCAST_LB);
}

/* The flag is for UD QPs only; no other creation flag is taken. */
TEST_F(mc, create_flags_refused_elsewhere)
{
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);
	struct ep x;

	o.buf_len = 64 * KiB;
	o.create_flags = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;
	EXPECT_NE(0, ep_create(&self->e, &o, &x));
	o = qp_defaults(&self->e, IBV_QPT_UD);
	o.buf_len = 64 * KiB;
	o.create_flags = IBV_QP_CREATE_SCATTER_FCS;
	EXPECT_NE(0, ep_create(&self->e, &o, &x));
}

/* A detached QP, and one never attached, receive nothing. */
TEST_F(mc, detached_qp_receives_nothing)
{
	make_sender(_metadata, self, 0);
	ASSERT_EQ(0, attach(&self->r1, &self->mgid));
	ASSERT_EQ(0, attach(&self->r2, &self->mgid));
	ASSERT_EQ(0, detach(&self->r1, &self->mgid));
	post_recvs(_metadata, &self->r1, 1);
	post_recvs(_metadata, &self->r2, 1);
	post_recvs(_metadata, &self->s, 1);
	mc_send(_metadata, self, 3);
	expect_mc(_metadata, self, &self->r2, 3, 0);
	sentinel_to(_metadata, self, &self->r1);
	expect_sentinel(_metadata, self, &self->r1, 0);
	sentinel_to(_metadata, self, &self->s);
	expect_sentinel(_metadata, self, &self->s, 0);
}

/* A wrong Q_Key, or a unicast QPN to the group's GID: not delivered. */
TEST_F(mc, wrong_qkey_or_qpn_not_delivered)
{
	make_sender(_metadata, self, 0);
	ASSERT_EQ(0, attach(&self->r1, &self->mgid));
	post_recvs(_metadata, &self->r1, 1);
	send_dgram(_metadata, self, self->mah, MC_QPN, QKEY + 1, 1);
	send_dgram(_metadata, self, self->mah, self->r1.qp->qp_num, QKEY, 2);
	sentinel_to(_metadata, self, &self->r1);
	expect_sentinel(_metadata, self, &self->r1, 0);
}

/* Attaching twice is one attachment: one copy, and one detach undoes it. */
TEST_F(mc, attach_twice_is_once)
{
	make_sender(_metadata, self, 0);
	ASSERT_EQ(0, attach(&self->r1, &self->mgid));
	ASSERT_EQ(0, attach(&self->r1, &self->mgid));
	post_recvs(_metadata, &self->r1, 2);
	mc_send(_metadata, self, 4);
	expect_mc(_metadata, self, &self->r1, 4, 0);
	sentinel_to(_metadata, self, &self->r1);
	expect_sentinel(_metadata, self, &self->r1, 1);
	EXPECT_EQ(0, detach(&self->r1, &self->mgid));
	EXPECT_NE(0, detach(&self->r1, &self->mgid));
}

/* What attach and detach refuse, and the netdev's filter following them. */
TEST_F(mc, attach_refusals_and_netdev_filter)
{
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_RC);
	union ibv_gid other = group_gid(&self->e, 2);
	struct ep rc;

	o.buf_len = 64 * KiB;
	ASSERT_EQ(0, ep_create(&self->e, &o, &rc));
	EXPECT_NE(0, attach(&rc, &self->mgid));		/* not UD */
	ep_destroy(&rc);
	EXPECT_NE(0, attach(&self->r1, &self->e.gid));	/* not a group */
	EXPECT_NE(0, detach(&self->r1, &self->mgid));	/* not attached */
	ASSERT_EQ(0, attach(&self->r2, &other));
	EXPECT_NE(0, detach(&self->r1, &other));	/* another QP's */

	EXPECT_FALSE(netdev_listens(srnic_test_dev(), &self->mgid));
	ASSERT_EQ(0, attach(&self->r1, &self->mgid));
	ASSERT_EQ(0, attach(&self->r2, &self->mgid));
	EXPECT_TRUE(netdev_listens(srnic_test_dev(), &self->mgid));
	ASSERT_EQ(0, detach(&self->r1, &self->mgid));
	EXPECT_TRUE(netdev_listens(srnic_test_dev(), &self->mgid));
	ASSERT_EQ(0, detach(&self->r2, &self->mgid));
	EXPECT_FALSE(netdev_listens(srnic_test_dev(), &self->mgid));
	/* The core keeps an attached QP from being destroyed. */
	EXPECT_EQ(EBUSY, ibv_destroy_qp(self->r2.qp));
	EXPECT_EQ(0, detach(&self->r2, &other));
	EXPECT_FALSE(netdev_listens(srnic_test_dev(), &other));
}

/* A process that exits attached leaves its groups (and the filter). */
TEST_F(mc, exit_leaves_groups)
{
	union ibv_gid g = group_gid(&self->e, 3);
	pid_t pid;
	int st;

	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct env e;
		struct ep x;

		if (env_open(&e) || ud_ep(&e, &x, 0) || attach(&x, &g) ||
		    !netdev_listens(srnic_test_dev(), &g))
			_exit(1);
		_exit(0);		/* attached, nothing destroyed */
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	EXPECT_FALSE(netdev_listens(srnic_test_dev(), &g));
	/* The group is gone: this process's QP makes it anew. */
	EXPECT_EQ(0, attach(&self->r1, &g));
	EXPECT_TRUE(netdev_listens(srnic_test_dev(), &g));
	EXPECT_EQ(0, detach(&self->r1, &g));
}

/* QPs per group: the limit holds, and a detached QP frees its place. */
TEST_F(mc, qps_per_group_limit)
{
	uint32_t n = self->e.dev.max_mcast_qp_attach;
	struct ibv_qp_init_attr init = {
		.send_cq = self->r1.cq, .recv_cq = self->r1.cq,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_UD,
	};
	struct ibv_qp **qp;
	uint32_t i;

	ASSERT_GT(n, 1);
	ASSERT_GE(self->e.dev.max_total_mcast_qp_attach, n);
	ASSERT_LT(n, 4096) TH_LOG("max_mcast_qp_attach %u: too many to try", n);
	qp = calloc(n + 1, sizeof(*qp));
	ASSERT_NE(NULL, qp);
	for (i = 0; i <= n; i++) {
		qp[i] = ibv_create_qp(self->e.pd, &init);
		ASSERT_NE(NULL, qp[i]);
	}
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, ibv_attach_mcast(qp[i], &self->mgid, 0)) TH_LOG("QP %u", i);
	EXPECT_EQ(ENOMEM, ibv_attach_mcast(qp[n], &self->mgid, 0));
	ASSERT_EQ(0, ibv_detach_mcast(qp[0], &self->mgid, 0));
	EXPECT_EQ(0, ibv_attach_mcast(qp[n], &self->mgid, 0));
	for (i = 0; i <= n; i++) {
		if (i)
			EXPECT_EQ(0, ibv_detach_mcast(qp[i], &self->mgid, 0));
		EXPECT_EQ(0, ibv_destroy_qp(qp[i]));
	}
	free(qp);
	/* Every QP gone: the group is gone, its address too. */
	EXPECT_FALSE(netdev_listens(srnic_test_dev(), &self->mgid));
}

/* Groups per device: the limit holds, and detaching frees a place. */
TEST_F(mc, groups_limit)
{
	uint32_t n = self->e.dev.max_mcast_grp, i;
	union ibv_gid g;

	ASSERT_LT(n, 65536) TH_LOG("max_mcast_grp %u: too many to try", n);
	for (i = 0; i < n; i++) {
		g = group_gid(&self->e, i);
		ASSERT_EQ(0, attach(&self->r1, &g)) TH_LOG("group %u", i);
	}
	g = group_gid(&self->e, n);
	EXPECT_EQ(ENOMEM, attach(&self->r2, &g));
	/* A group that exists still takes another QP. */
	g = group_gid(&self->e, 0);
	EXPECT_EQ(0, attach(&self->r2, &g));
	g = group_gid(&self->e, 1);
	ASSERT_EQ(0, detach(&self->r1, &g));
	g = group_gid(&self->e, n);
	EXPECT_EQ(0, attach(&self->r2, &g));
}

/*
 * The core keeps one attachment per (GID, LID) and RoCE ignores the LID: a
 * QP attached with two LIDs stays a member until both are detached, and
 * then nothing of it is left (before, the second detach was refused, the
 * core kept its entry, and the QP could never be destroyed: EBUSY).
 */
TEST_F(mc, attached_per_lid_detached_per_lid)
{
	make_sender(_metadata, self, 0);
	ASSERT_EQ(0, ibv_attach_mcast(self->r1.qp, &self->mgid, 0));
	ASSERT_EQ(0, ibv_attach_mcast(self->r1.qp, &self->mgid, 7));
	ASSERT_EQ(0, ibv_detach_mcast(self->r1.qp, &self->mgid, 0));
	/* Still a member, by LID 7. */
	post_recvs(_metadata, &self->r1, 2);
	mc_send(_metadata, self, 4);
	expect_mc(_metadata, self, &self->r1, 4, 0);
	EXPECT_EQ(0, ibv_detach_mcast(self->r1.qp, &self->mgid, 7));
	EXPECT_FALSE(netdev_listens(srnic_test_dev(), &self->mgid));
	EXPECT_EQ(0, ibv_destroy_qp(self->r1.qp));
	self->r1.qp = NULL;
}

#define RMC_QPS 4	/* the last one RC */
#define RMC_GIDS 6
#define RMC_LIDS 3
#define RMC_OPS 3000

/*
 * Attach, detach and destroy as a careless program does them, seeded
 * (SRNIC_ADV_SEED; printed): random QPs (UD, one RC), GIDs (groups of both
 * address families, the all-nodes group the netdev has anyway, GIDs that
 * are no multicast), LIDs.  Every answer is the verbs' (a model of the
 * core's one attachment per QP, GID and LID): attaching again is nothing,
 * detaching what is not attached is EINVAL, an attached QP cannot be
 * destroyed (EBUSY); a group's address is on the netdev while a QP is
 * attached to it.  At the end every attachment goes and no address is left.
 */
TEST_F(mc, random_attach_detach)
{
	uint64_t seed = srnic_test_seed();
	static const uint16_t lids[RMC_LIDS] = { 0, 7, 0xffff };
	bool att[RMC_QPS][RMC_GIDS][RMC_LIDS] = {};
	struct qp_opts rc = qp_defaults(&self->e, IBV_QPT_RC);
	union ibv_gid g[RMC_GIDS] = {};
	struct ep q[RMC_QPS] = {};
	unsigned int op, i, j, k, ok = 0;

	TH_LOG("seed 0x%llx (SRNIC_ADV_SEED reproduces it)", (unsigned long long)seed);
	g[0] = group_gid(&self->e, 100);
	g[1] = group_gid(&self->e, 101);
	g[2].raw[0] = 0xff;			/* ff02::1, all nodes */
	g[2].raw[1] = 0x02;
	g[2].raw[15] = 1;
	g[3].raw[10] = g[3].raw[11] = 0xff;	/* ::ffff:239.2.0.5 */
	g[3].raw[12] = 239;
	g[3].raw[13] = 2;
	g[3].raw[15] = 5;
	g[4].raw[0] = 0xfe;			/* fe80::1: no group */
	g[4].raw[1] = 0x80;
	g[4].raw[15] = 1;
	/* g[5] stays ::, no group either. */
	for (i = 0; i < RMC_QPS - 1; i++)
		ASSERT_EQ(0, ud_ep(&self->e, &q[i], 0));
	ASSERT_EQ(0, ep_create(&self->e, &rc, &q[RMC_QPS - 1]));
	for (op = 0; op < RMC_OPS; op++) {
		uint64_t r = xorshift(&seed);
		bool ud, mc, any = false;
		int want, got;

		i = r % RMC_QPS;
		j = (r >> 8) % RMC_GIDS;
		k = (r >> 16) % RMC_LIDS;
		ud = i < RMC_QPS - 1;
		mc = j < 4;
		switch ((r >> 24) % 16) {
		case 0:		/* destroy and make again */
			for (j = 0; j < RMC_GIDS; j++)
				for (k = 0; k < RMC_LIDS; k++)
					any |= att[i][j][k];
			want = any ? EBUSY : 0;
			got = ibv_destroy_qp(q[i].qp);
			ASSERT_EQ(want, got) TH_LOG("op %u: destroy QP %u", op, i);
			if (!got) {
				q[i].qp = NULL;
				ep_destroy(&q[i]);
				ASSERT_EQ(0, ud ? ud_ep(&self->e, &q[i], 0) :
						  ep_create(&self->e, &rc, &q[i]));
			}
			break;
		case 1 ... 8:
			want = ud && mc ? 0 : EINVAL;
			got = ibv_attach_mcast(q[i].qp, &g[j], lids[k]);
			ASSERT_EQ(want, got) TH_LOG("op %u: attach QP %u group %u LID %#x",
						    op, i, j, lids[k]);
			att[i][j][k] |= !got;
			break;
		default:
			want = att[i][j][k] ? 0 : EINVAL;
			got = ibv_detach_mcast(q[i].qp, &g[j], lids[k]);
			ASSERT_EQ(want, got) TH_LOG("op %u: detach QP %u group %u LID %#x",
						    op, i, j, lids[k]);
			att[i][j][k] = false;
			break;
		}
		ok += !got;
		if (op % 500 == 499)
			for (j = 0; j < 4; j++) {
				if (j == 2)
					continue;	/* the netdev's own */
				for (any = false, i = 0; i < RMC_QPS; i++)
					for (k = 0; k < RMC_LIDS; k++)
						any |= att[i][j][k];
				EXPECT_EQ(any, netdev_listens(srnic_test_dev(), &g[j]))
					TH_LOG("op %u: group %u", op, j);
			}
	}
	TH_LOG("%u operations, %u succeeded", op, ok);
	for (i = 0; i < RMC_QPS; i++) {
		for (j = 0; j < RMC_GIDS; j++)
			for (k = 0; k < RMC_LIDS; k++)
				if (att[i][j][k])
					EXPECT_EQ(0, ibv_detach_mcast(q[i].qp, &g[j], lids[k]));
		EXPECT_EQ(0, ibv_destroy_qp(q[i].qp));
		q[i].qp = NULL;
		ep_destroy(&q[i]);
	}
	for (j = 0; j < 4; j++)
		if (j != 2)
			EXPECT_FALSE(netdev_listens(srnic_test_dev(), &g[j]));
}

TEST_HARNESS_MAIN
