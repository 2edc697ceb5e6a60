// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Raw packet QPs: frames a raw QP sends loop back through the device's flow
 * table to the QPs whose flows match (byte-exact), none to the others; no
 * match drops the frame (debugfs counter); masks and priorities; RSS picks
 * the WQ a Toeplitz hash (computed here) names; refusals; objects destroyed
 * while frames keep coming.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <arpa/inet.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "traffic.h"

#define SLOT 2048u		/* one receive buffer */
#define NSLOTS 32u
#define FRAME_LEN 128u

static const uint8_t MAC_A[6] = { 0x02, 0x11, 0x22, 0x33, 0x44, 0x55 };
static const uint8_t MAC_B[6] = { 0x02, 0x11, 0x22, 0x33, 0x44, 0x66 };
static const uint8_t MAC_SRC[6] = { 0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee };
static const uint8_t MAC_FF[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const uint8_t MAC_SENTINEL[6] = { 0x02, 0x5e, 0x5e, 0x5e, 0x5e, 0x5e };

/* The RSS key of rdma-core's test_rss_traffic. */
static const uint8_t RSS_KEY[40] = {
	0x2c, 0xc6, 0x81, 0xd1, 0x5b, 0xdb, 0xf4, 0xf7, 0xfc, 0xa2,
	0x83, 0x19, 0xdb, 0x1a, 0x3e, 0x94, 0x6b, 0x9e, 0x38, 0xd9,
	0x2c, 0x9c, 0x03, 0xd1, 0xad, 0x99, 0x44, 0xa7, 0xd9, 0x56,
	0x3d, 0x59, 0x06, 0x3c, 0x25, 0xf3, 0xfc, 0x1f, 0xdc, 0x2a,
};

/* A raw QP in RTS with its own CQ and a registered buffer of NSLOTS slots. */
struct rawq {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
};

static int rawq_make(struct env *e, struct rawq *r)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RAW_PACKET,
		.cap = { .max_send_wr = 64, .max_recv_wr = NSLOTS,
			 .max_send_sge = 2, .max_recv_sge = 2 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

	memset(r, 0, sizeof(*r));
	r->buf = aligned_alloc(4096, SLOT * NSLOTS);
	r->cq = ibv_create_cq(e->ctx, 256, NULL, NULL, 0);
	if (!r->buf || !r->cq)
		return -1;
	memset(r->buf, 0, SLOT * NSLOTS);
	r->mr = ibv_reg_mr(e->pd, r->buf, SLOT * NSLOTS, IBV_ACCESS_LOCAL_WRITE);
	ia.send_cq = ia.recv_cq = r->cq;
	r->qp = r->mr ? ibv_create_qp(e->pd, &ia) : NULL;
	if (!r->qp || ibv_modify_qp(r->qp, &a, IBV_QP_STATE | IBV_QP_PORT))
		return -1;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(r->qp, &a, IBV_QP_STATE))
		return -1;
	a.qp_state = IBV_QPS_RTS;
	return ibv_modify_qp(r->qp, &a, IBV_QP_STATE);
}

static void rawq_destroy(struct rawq *r)
{
	if (r->qp)
		ibv_destroy_qp(r->qp);
	if (r->mr)
		ibv_dereg_mr(r->mr);
	if (r->cq)
		ibv_destroy_cq(r->cq);
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

static int rawq_recv(struct rawq *r, uint32_t slot)
{
	struct ibv_sge s = { (uintptr_t)(r->buf + slot * SLOT), SLOT, r->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &s, .num_sge = 1 }, *bad;

	return ibv_post_recv(r->qp, &wr, &bad);
}

/* Sends @len bytes at slot @slot of @r's buffer (lkey overridable). */
static int rawq_send(struct rawq *r, uint32_t slot, uint32_t len, uint32_t lkey)
{
	struct ibv_sge s = { (uintptr_t)(r->buf + slot * SLOT), len, lkey };
	struct ibv_send_wr wr = {
		.wr_id = slot, .sg_list = &s, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	return ibv_post_send(r->qp, &wr, &bad);
}

/* Ethernet | IPv4 | UDP, @len bytes in all, a payload from @seed. */
static void frame_udp4(uint8_t *p, const uint8_t *dmac, uint32_t sip,
		       uint32_t dip, uint16_t sport, uint16_t dport,
		       uint32_t len, unsigned int seed)
{
	uint16_t v16;
	uint32_t v32;

	memcpy(p, dmac, 6);
	memcpy(p + 6, MAC_SRC, 6);
	v16 = htons(0x0800), memcpy(p + 12, &v16, 2);
	memset(p + 14, 0, 28);
	p[14] = 0x45;
	v16 = htons(len - 14), memcpy(p + 16, &v16, 2);
	p[22] = 64;
	p[23] = IPPROTO_UDP;
	v32 = htonl(sip), memcpy(p + 26, &v32, 4);
	v32 = htonl(dip), memcpy(p + 30, &v32, 4);
	v16 = htons(sport), memcpy(p + 34, &v16, 2);
	v16 = htons(dport), memcpy(p + 36, &v16, 2);
	v16 = htons(len - 34), memcpy(p + 38, &v16, 2);
	fill(p + 42, len - 42, seed);
}

struct eth_flow {
	struct ibv_flow_attr attr;
	struct ibv_flow_spec_eth eth;
};

static struct ibv_flow *flow_dmac(struct ibv_qp *qp, const uint8_t *mac,
				  const uint8_t *mask, uint16_t prio)
{
	struct eth_flow f = {
		.attr = { .type = IBV_FLOW_ATTR_NORMAL, .size = sizeof(f),
			  .priority = prio, .num_of_specs = 1, .port = 1 },
		.eth = { .type = IBV_FLOW_SPEC_ETH,
			 .size = sizeof(struct ibv_flow_spec_eth) },
	};

	memcpy(f.eth.val.dst_mac, mac, 6);
	memcpy(f.eth.mask.dst_mac, mask, 6);
	return ibv_create_flow(qp, &f.attr);
}

/* A counter of debugfs "raw". */
static long long raw_stat(const char *name)
{
	char *s = slurp(dbg_path("raw")), *p;
	long long v = -1;

	p = s ? strstr(s, name) : NULL;
	if (p)
		v = atoll(p + strlen(name) + 1);
	free(s);
	return v;
}

/* Toeplitz, as Microsoft's RSS specifies it. */
static uint32_t toeplitz(const uint8_t *key, const uint8_t *in, int n)
{
	uint32_t v = (uint32_t)key[0] << 24 | key[1] << 16 | key[2] << 8 | key[3];
	uint32_t h = 0;

	for (int i = 0; i < n; i++)
		for (int b = 0; b < 8; b++) {
			if (in[i] & (0x80 >> b))
				h ^= v;
			v = v << 1 | (i + 4 < 40 && (key[i + 4] & (0x80 >> b)));
		}
	return h;
}

FIXTURE(raw) {
	struct env e;
	struct rawq tx, a, b;
	struct ibv_flow *fa, *fb;
};

FIXTURE_SETUP(raw)
{
	if (env_open(&self->e))
		SKIP(return, "no device %s", srnic_test_dev());
	if (self->e.port.link_layer != IBV_LINK_LAYER_ETHERNET)
		SKIP(return, "not an Ethernet port");
	ASSERT_EQ(0, rawq_make(&self->e, &self->tx));
	ASSERT_EQ(0, rawq_make(&self->e, &self->a));
	ASSERT_EQ(0, rawq_make(&self->e, &self->b));
	for (uint32_t i = 0; i < NSLOTS; i++) {
		ASSERT_EQ(0, rawq_recv(&self->a, i));
		ASSERT_EQ(0, rawq_recv(&self->b, i));
	}
}

FIXTURE_TEARDOWN(raw)
{
	if (self->fa)
		ibv_destroy_flow(self->fa);
	if (self->fb)
		ibv_destroy_flow(self->fb);
	rawq_destroy(&self->b);
	rawq_destroy(&self->a);
	rawq_destroy(&self->tx);
	env_close(&self->e);
}

/* Sends the frame in tx slot 0 and expects its send completion. */
static void send_ok(struct __test_metadata *_metadata, struct rawq *tx,
		    uint32_t len)
{
	struct ibv_wc wc;

	ASSERT_EQ(0, rawq_send(tx, 0, len, tx->mr->lkey));
	WAIT_WC(tx->cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
}

/* Expects @r to receive the frame in tx slot 0, byte for byte. */
static void got_frame(struct __test_metadata *_metadata, struct rawq *r,
		      struct rawq *tx, uint32_t len)
{
	struct ibv_wc wc;

	WAIT_WC(r->cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
	EXPECT_EQ(len, wc.byte_len);
	EXPECT_EQ(r->qp->qp_num, wc.qp_num);
	EXPECT_EQ(0, memcmp(r->buf + wc.wr_id * SLOT, tx->buf, len));
}

/*
 * Nothing more came to @r, nor back to @tx: a sentinel, not a wait.  A
 * flow of its own (for this frame alone) steers one more frame from @tx,
 * from its slot 1, to @r: @tx's frames are steered in order, so it is
 * @r's next completion, and its send @tx's.
 */
static void expect_sentinel_frame(struct __test_metadata *_metadata, struct rawq *tx,
				  struct rawq *r)
{
	struct ibv_flow *f = flow_dmac(r->qp, MAC_SENTINEL, MAC_FF, 0);
	struct ibv_wc wc;

	ASSERT_NE(NULL, f);
	frame_udp4(tx->buf + SLOT, MAC_SENTINEL, 0x5e5e5e5e, 0x5e5e5e5e, 0x5e5e, 0x5e5e,
		   FRAME_LEN, 0x5e);
	ASSERT_EQ(0, rawq_send(tx, 1, FRAME_LEN, tx->mr->lkey));
	WAIT_WC(tx->cq, wc);
	EXPECT_TRUE(wc.wr_id == 1 && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND)
		TH_LOG("before the sentinel's send: wr_id %llu (%s)",
		       (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
	WAIT_WC(r->cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
	EXPECT_EQ(FRAME_LEN, wc.byte_len);
	EXPECT_EQ(0, memcmp(r->buf + wc.wr_id * SLOT, tx->buf + SLOT, FRAME_LEN))
		TH_LOG("a frame came before the sentinel");
	EXPECT_EQ(0, ibv_destroy_flow(f));
}

TEST_F(raw, delivered_to_the_matching_flow_only)
{
	self->fa = flow_dmac(self->a.qp, MAC_A, MAC_FF, 0);
	self->fb = flow_dmac(self->b.qp, MAC_B, MAC_FF, 0);
	ASSERT_NE(NULL, self->fa);
	ASSERT_NE(NULL, self->fb);

	frame_udp4(self->tx.buf, MAC_A, 0x01010101, 0x02020202, 1, 2, FRAME_LEN, 1);
	send_ok(_metadata, &self->tx, FRAME_LEN);
	got_frame(_metadata, &self->a, &self->tx, FRAME_LEN);
	expect_sentinel_frame(_metadata, &self->tx, &self->b);

	/* The largest frame: the MTU after the header. */
	frame_udp4(self->tx.buf, MAC_B, 0x01010101, 0x02020202, 1, 2,
		   1500 + 14, 2);
	send_ok(_metadata, &self->tx, 1500 + 14);
	got_frame(_metadata, &self->b, &self->tx, 1500 + 14);
	/* Nothing to a; and the sender has no flow: nothing came back to it. */
	expect_sentinel_frame(_metadata, &self->tx, &self->a);
}

TEST_F(raw, no_flow_drops_and_counts)
{
	long long before = raw_stat("no_flow");

	ASSERT_LE(0, before);
	self->fa = flow_dmac(self->a.qp, MAC_A, MAC_FF, 0);
	ASSERT_NE(NULL, self->fa);
	frame_udp4(self->tx.buf, MAC_B, 1, 2, 3, 4, FRAME_LEN, 3);
	send_ok(_metadata, &self->tx, FRAME_LEN);
	expect_sentinel_frame(_metadata, &self->tx, &self->a);
	expect_sentinel_frame(_metadata, &self->tx, &self->b);
	EXPECT_EQ(before + 1, raw_stat("no_flow"));

	/* A destroyed flow steers nothing. */
	ASSERT_EQ(0, ibv_destroy_flow(self->fa));
	self->fa = NULL;
	frame_udp4(self->tx.buf, MAC_A, 1, 2, 3, 4, FRAME_LEN, 4);
	send_ok(_metadata, &self->tx, FRAME_LEN);
	expect_sentinel_frame(_metadata, &self->tx, &self->a);
	EXPECT_EQ(before + 2, raw_stat("no_flow"));
}

TEST_F(raw, masks)
{
	static const uint8_t top3[6] = { 0xff, 0xff, 0xff, 0, 0, 0 };
	struct {
		struct ibv_flow_attr attr;
		struct ibv_flow_spec_ipv4 ip;
		struct ibv_flow_spec_tcp_udp udp;
	} f = {
		.attr = { .type = IBV_FLOW_ATTR_NORMAL, .size = sizeof(f),
			  .num_of_specs = 2, .port = 1 },
		.ip = { .type = IBV_FLOW_SPEC_IPV4,
			.size = sizeof(struct ibv_flow_spec_ipv4) },
		.udp = { .type = IBV_FLOW_SPEC_UDP,
			 .size = sizeof(struct ibv_flow_spec_tcp_udp) },
	};

	/* A: the MAC's first three bytes.  B: 10.1.2.0/24 to UDP port 4791. */
	self->fa = flow_dmac(self->a.qp, MAC_A, top3, 0);
	f.ip.val.dst_ip = htonl(0x0a010203);	/* host bits: masked off */
	f.ip.mask.dst_ip = htonl(0xffffff00);
	f.udp.val.dst_port = htons(4791);
	f.udp.mask.dst_port = 0xffff;
	self->fb = ibv_create_flow(self->b.qp, &f.attr);
	ASSERT_NE(NULL, self->fa);
	ASSERT_NE(NULL, self->fb);

	/* MAC_B shares MAC_A's first bytes; another dst IP /24 for B. */
	frame_udp4(self->tx.buf, MAC_B, 1, 0x0a020299, 7, 4791, FRAME_LEN, 5);
	send_ok(_metadata, &self->tx, FRAME_LEN);
	got_frame(_metadata, &self->a, &self->tx, FRAME_LEN);
	expect_sentinel_frame(_metadata, &self->tx, &self->b);

	frame_udp4(self->tx.buf, MAC_SRC, 1, 0x0a0102fe, 9, 4791, FRAME_LEN, 6);
	send_ok(_metadata, &self->tx, FRAME_LEN);
	got_frame(_metadata, &self->b, &self->tx, FRAME_LEN);
	expect_sentinel_frame(_metadata, &self->tx, &self->a);

	/* Right subnet, wrong port: nobody. */
	frame_udp4(self->tx.buf, MAC_SRC, 1, 0x0a010201, 9, 4792, FRAME_LEN, 7);
	send_ok(_metadata, &self->tx, FRAME_LEN);
	expect_sentinel_frame(_metadata, &self->tx, &self->a);
	expect_sentinel_frame(_metadata, &self->tx, &self->b);
}

TEST_F(raw, best_priority_wins_equal_ones_share)
{
	self->fa = flow_dmac(self->a.qp, MAC_A, MAC_FF, 1);
	self->fb = flow_dmac(self->b.qp, MAC_A, MAC_FF, 0);
	ASSERT_NE(NULL, self->fa);
	ASSERT_NE(NULL, self->fb);
	frame_udp4(self->tx.buf, MAC_A, 1, 2, 3, 4, FRAME_LEN, 8);
	send_ok(_metadata, &self->tx, FRAME_LEN);
	got_frame(_metadata, &self->b, &self->tx, FRAME_LEN);
	expect_sentinel_frame(_metadata, &self->tx, &self->a);

	ASSERT_EQ(0, ibv_destroy_flow(self->fb));
	self->fb = flow_dmac(self->b.qp, MAC_A, MAC_FF, 1);
	ASSERT_NE(NULL, self->fb);
	send_ok(_metadata, &self->tx, FRAME_LEN);
	got_frame(_metadata, &self->a, &self->tx, FRAME_LEN);
	got_frame(_metadata, &self->b, &self->tx, FRAME_LEN);
}

TEST_F(raw, bad_frames_fail_the_send)
{
	struct ibv_wc wc;

	self->fa = flow_dmac(self->a.qp, MAC_A, MAC_FF, 0);
	frame_udp4(self->tx.buf, MAC_A, 1, 2, 3, 4, SLOT, 9);
	/* One byte more than MTU + VLAN header: refused, nothing delivered. */
	ASSERT_EQ(0, rawq_send(&self->tx, 0, 1500 + 18 + 1, self->tx.mr->lkey));
	WAIT_WC(self->tx.cq, wc);
	ASSERT_WC(wc, IBV_WC_LOC_LEN_ERR, 0);
	/* The sender is in error: no sentinel can follow its frame. */
	ASSERT_QUIET(self->a.cq);
	EXPECT_EQ(IBV_QPS_ERR, qp_state(self->tx.qp));
}

TEST_F(raw, short_frame_and_bad_lkey)
{
	struct ibv_wc wc;
	struct rawq t2;

	ASSERT_EQ(0, rawq_send(&self->tx, 0, 13, self->tx.mr->lkey));
	WAIT_WC(self->tx.cq, wc);
	ASSERT_WC(wc, IBV_WC_LOC_LEN_ERR, 0);

	ASSERT_EQ(0, rawq_make(&self->e, &t2));
	ASSERT_EQ(0, rawq_send(&t2, 0, FRAME_LEN, t2.mr->lkey ^ 0x80));
	WAIT_WC(t2.cq, wc);
	ASSERT_WC(wc, IBV_WC_LOC_PROT_ERR, 0);
	rawq_destroy(&t2);
}

TEST_F(raw, refusals)
{
	static const uint8_t zero[6];
	struct {
		struct ibv_flow_attr attr;
		struct ibv_flow_spec_ipv4 ip;
		struct ibv_flow_spec_ipv6 ip6;
	} f2 = {
		.attr = { .type = IBV_FLOW_ATTR_NORMAL, .size = sizeof(f2),
			  .num_of_specs = 2, .port = 1 },
		.ip = { .type = IBV_FLOW_SPEC_IPV4,
			.size = sizeof(struct ibv_flow_spec_ipv4) },
		.ip6 = { .type = IBV_FLOW_SPEC_IPV6,
			 .size = sizeof(struct ibv_flow_spec_ipv6) },
	};
	struct {
		struct ibv_flow_attr attr;
		struct ibv_flow_spec_tunnel vx;
	} f3 = {
		.attr = { .type = IBV_FLOW_ATTR_NORMAL, .size = sizeof(f3),
			  .num_of_specs = 1, .port = 1 },
		.vx = { .type = IBV_FLOW_SPEC_VXLAN_TUNNEL,
			.size = sizeof(struct ibv_flow_spec_tunnel) },
	};
	struct qp_opts o = qp_defaults(&self->e, IBV_QPT_UD);
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND_WITH_IMM }, *bad;
	struct ep ud;

	/* IPv4 and IPv6 at once can never match. */
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_flow(self->a.qp, &f2.attr));
	EXPECT_EQ(EINVAL, errno);
	/* Tunnels are not steered. */
	errno = 0;
	EXPECT_EQ(NULL, ibv_create_flow(self->a.qp, &f3.attr));
	EXPECT_EQ(EOPNOTSUPP, errno);
	/* Flows steer to raw QPs only. */
	ASSERT_EQ(0, ep_create(&self->e, &o, &ud));
	errno = 0;
	EXPECT_EQ(NULL, flow_dmac(ud.qp, MAC_A, zero, 0));
	EXPECT_EQ(EOPNOTSUPP, errno);
	ep_destroy(&ud);
	/* A raw QP sends frames: no immediate. */
	EXPECT_EQ(EINVAL, ibv_post_send(self->tx.qp, &wr, &bad));
}

/* Without CAP_NET_RAW (in a child that drops it), no raw QP. */
TEST_F(raw, needs_cap_net_raw)
{
	pid_t pid = fork();
	int status;

	ASSERT_LE(0, pid);
	if (!pid) {
		struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
		struct __user_cap_data_struct d[2];
		struct ibv_qp_init_attr ia = {
			.qp_type = IBV_QPT_RAW_PACKET,
			.cap = { .max_send_wr = 1, .max_recv_wr = 1,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};
		struct env e;
		struct ibv_cq *cq;

		if (syscall(SYS_capget, &h, d))
			_exit(2);
		d[CAP_NET_RAW / 32].effective &= ~(1u << (CAP_NET_RAW % 32));
		if (syscall(SYS_capset, &h, d) || env_open(&e))
			_exit(2);
		cq = ibv_create_cq(e.ctx, 4, NULL, NULL, 0);
		ia.send_cq = ia.recv_cq = cq;
		errno = 0;
		_exit(!cq || ibv_create_qp(e.pd, &ia) || errno != EPERM);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/* ---- RSS ---- */

#define NWQ 8

FIXTURE(rss) {
	struct env e;
	struct rawq tx;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct ibv_wq *wq[NWQ];
	struct ibv_rwq_ind_table *tbl;
	struct ibv_qp *qp;
	struct ibv_flow *flow;
};

static struct ibv_qp *rss_qp(struct env *e, struct ibv_rwq_ind_table *tbl,
			     uint8_t func, uint8_t key_len, uint64_t fields)
{
	struct ibv_qp_init_attr_ex ia = {
		.qp_type = IBV_QPT_RAW_PACKET,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE |
			     IBV_QP_INIT_ATTR_RX_HASH,
		.pd = e->pd,
		.rwq_ind_tbl = tbl,
		.rx_hash_conf = { .rx_hash_function = func,
				  .rx_hash_key_len = key_len,
				  .rx_hash_key = (uint8_t *)RSS_KEY,
				  .rx_hash_fields_mask = fields },
	};

	return ibv_create_qp_ex(e->ctx, &ia);
}

FIXTURE_SETUP(rss)
{
	struct ibv_rwq_ind_table_init_attr ta = {
		.log_ind_tbl_size = 3, .ind_tbl = self->wq,
	};

	if (env_open(&self->e))
		SKIP(return, "no device %s", srnic_test_dev());
	ASSERT_EQ(0, rawq_make(&self->e, &self->tx));
	self->cq = ibv_create_cq(self->e.ctx, 512, NULL, NULL, 0);
	self->buf = aligned_alloc(4096, NWQ * NSLOTS * SLOT);
	ASSERT_NE(NULL, self->cq);
	ASSERT_NE(NULL, self->buf);
	self->mr = ibv_reg_mr(self->e.pd, self->buf, NWQ * NSLOTS * SLOT,
			      IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, self->mr);
	for (int i = 0; i < NWQ; i++) {
		struct ibv_wq_init_attr wa = {
			.wq_type = IBV_WQT_RQ, .max_wr = NSLOTS, .max_sge = 1,
			.pd = self->e.pd, .cq = self->cq,
		};
		struct ibv_wq_attr ma = { .attr_mask = IBV_WQ_ATTR_STATE,
					  .wq_state = IBV_WQS_RDY };

		self->wq[i] = ibv_create_wq(self->e.ctx, &wa);
		ASSERT_NE(NULL, self->wq[i]);
		ASSERT_EQ(0, ibv_modify_wq(self->wq[i], &ma));
		for (uint32_t j = 0; j < NSLOTS; j++) {
			uint32_t slot = i * NSLOTS + j;
			struct ibv_sge s = { (uintptr_t)(self->buf + slot * SLOT),
					     SLOT, self->mr->lkey };
			struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &s,
						  .num_sge = 1 }, *bad;

			ASSERT_EQ(0, ibv_post_wq_recv(self->wq[i], &wr, &bad));
		}
	}
	self->tbl = ibv_create_rwq_ind_table(self->e.ctx, &ta);
	ASSERT_NE(NULL, self->tbl);
	self->qp = rss_qp(&self->e, self->tbl, IBV_RX_HASH_FUNC_TOEPLITZ, 40,
			  IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
			  IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP);
	ASSERT_NE(NULL, self->qp);
	self->flow = flow_dmac(self->qp, MAC_A, MAC_FF, 0);
	ASSERT_NE(NULL, self->flow);
}

FIXTURE_TEARDOWN(rss)
{
	if (self->flow)
		ibv_destroy_flow(self->flow);
	if (self->qp)
		ibv_destroy_qp(self->qp);
	if (self->tbl)
		ibv_destroy_rwq_ind_table(self->tbl);
	for (int i = 0; i < NWQ; i++)
		if (self->wq[i])
			ibv_destroy_wq(self->wq[i]);
	if (self->mr)
		ibv_dereg_mr(self->mr);
	if (self->cq)
		ibv_destroy_cq(self->cq);
	free(self->buf);
	rawq_destroy(&self->tx);
	env_close(&self->e);
}

TEST(toeplitz_reference)
{
	/* Microsoft's RSS verification suite, first IPv4 line. */
	static const uint8_t key[40] = {
		0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
		0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
		0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
		0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
	};
	static const uint8_t in[12] = { 66, 9, 149, 187, 161, 142, 100, 80,
					0x0a, 0xea, 0x06, 0xe6 };

	EXPECT_EQ(0x323e8fc2u, toeplitz(key, in, 8));
	EXPECT_EQ(0x51ccc178u, toeplitz(key, in, 12));
}

TEST_F(rss, hash_picks_the_wq)
{
	int per_wq[NWQ] = { 0 }, used = 0;

	for (uint32_t i = 0; i < 32; i++) {
		uint32_t sip = 0x01010101 + i * 0x01000307, dip = 0x02020202;
		uint16_t sport = 1000 + 7 * i, dport = 5678;
		uint8_t in[12];
		uint32_t h, want;
		struct ibv_wc wc;

		frame_udp4(self->tx.buf, MAC_A, sip, dip, sport, dport,
			   FRAME_LEN, 100 + i);
		memcpy(in, &(uint32_t){ htonl(sip) }, 4);
		memcpy(in + 4, &(uint32_t){ htonl(dip) }, 4);
		memcpy(in + 8, &(uint16_t){ htons(sport) }, 2);
		memcpy(in + 10, &(uint16_t){ htons(dport) }, 2);
		h = toeplitz(RSS_KEY, in, 12);
		want = h & (NWQ - 1);

		send_ok(_metadata, &self->tx, FRAME_LEN);
		WAIT_WC(self->cq, wc);
		ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
		EXPECT_EQ(FRAME_LEN, wc.byte_len);
		EXPECT_EQ(self->wq[want]->wq_num, wc.qp_num)
			TH_LOG("frame %u: hash %#x", i, h);
		EXPECT_EQ(want, wc.wr_id / NSLOTS);
		EXPECT_EQ(0, memcmp(self->buf + wc.wr_id * SLOT, self->tx.buf,
				    FRAME_LEN));
		if (!per_wq[want]++)
			used++;
	}
	/* 32 different 4-tuples do not all hash to one of 8 WQs. */
	EXPECT_LT(1, used);
}

TEST_F(rss, refusals)
{
	errno = 0;
	EXPECT_EQ(NULL, rss_qp(&self->e, self->tbl, IBV_RX_HASH_FUNC_TOEPLITZ,
			       16, IBV_RX_HASH_SRC_IPV4));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(NULL, rss_qp(&self->e, self->tbl, IBV_RX_HASH_FUNC_TOEPLITZ,
			       40, IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_INNER));
	EXPECT_EQ(EOPNOTSUPP, errno);
	/* A WQ in a table, a table under a QP: the core keeps them. */
	EXPECT_EQ(EBUSY, ibv_destroy_wq(self->wq[0]));
	EXPECT_EQ(EBUSY, ibv_destroy_rwq_ind_table(self->tbl));
}

/* ---- destruction while frames keep coming ---- */

struct sender {
	struct rawq *tx;
	atomic_bool stop;
	atomic_int sent, bad;
};

static void *send_loop(void *arg)
{
	struct sender *s = arg;
	struct ibv_wc wc;

	while (!atomic_load(&s->stop)) {
		if (rawq_send(s->tx, 0, FRAME_LEN, s->tx->mr->lkey) ||
		    poll_one(s->tx->cq, &wc, WC_MS) != 1 ||
		    wc.status != IBV_WC_SUCCESS) {
			atomic_fetch_add(&s->bad, 1);
			break;
		}
		atomic_fetch_add(&s->sent, 1);
	}
	return NULL;
}

static void wait_sent(struct sender *s, int n)
{
	int end = atomic_load(&s->sent) + n;

	for (uint64_t t = now_ms() + WC_MS; atomic_load(&s->sent) < end &&
	     !atomic_load(&s->bad) && now_ms() < t;)
		sched_yield();
}

TEST_F(rss, destroy_while_traffic_runs)
{
	struct sender s = { .tx = &self->tx };
	pthread_t th;

	frame_udp4(self->tx.buf, MAC_A, 1, 2, 3, 4, FRAME_LEN, 11);
	ASSERT_EQ(0, pthread_create(&th, NULL, send_loop, &s));
	wait_sent(&s, 20);
	ASSERT_EQ(0, ibv_destroy_flow(self->flow));
	self->flow = NULL;
	ASSERT_EQ(0, ibv_destroy_qp(self->qp));
	self->qp = NULL;
	ASSERT_EQ(0, ibv_destroy_rwq_ind_table(self->tbl));
	self->tbl = NULL;
	for (int i = 0; i < NWQ; i++) {
		ASSERT_EQ(0, ibv_destroy_wq(self->wq[i]));
		self->wq[i] = NULL;
	}
	wait_sent(&s, 20);
	atomic_store(&s.stop, true);
	pthread_join(th, NULL);
	EXPECT_EQ(0, atomic_load(&s.bad));
}

TEST_F(raw, destroy_while_traffic_runs)
{
	struct sender s = { .tx = &self->tx };
	struct ibv_wc wc[NSLOTS];
	pthread_t th;
	int got;

	self->fa = flow_dmac(self->a.qp, MAC_A, MAC_FF, 0);
	ASSERT_NE(NULL, self->fa);
	frame_udp4(self->tx.buf, MAC_A, 1, 2, 3, 4, FRAME_LEN, 12);
	ASSERT_EQ(0, pthread_create(&th, NULL, send_loop, &s));
	wait_sent(&s, 10);
	ASSERT_EQ(0, ibv_destroy_flow(self->fa));
	self->fa = NULL;
	/*
	 * Once the flow is gone, what A has is all it gets (the sender is
	 * another thread's: no sentinel is ordered after its frames).
	 */
	got = drain(self->a.cq, wc, NSLOTS, quiet_ms());
	EXPECT_LT(0, got);
	ASSERT_QUIET(self->a.cq);
	/* A QP with a flow cannot go; without, it can, mid-traffic. */
	self->fb = flow_dmac(self->b.qp, MAC_A, MAC_FF, 0);
	ASSERT_NE(NULL, self->fb);
	EXPECT_EQ(EBUSY, ibv_destroy_qp(self->b.qp));
	ASSERT_EQ(0, ibv_destroy_flow(self->fb));
	self->fb = NULL;
	rawq_destroy(&self->b);
	wait_sent(&s, 10);
	atomic_store(&s.stop, true);
	pthread_join(th, NULL);
	EXPECT_EQ(0, atomic_load(&s.bad));
}

TEST_HARNESS_MAIN
