// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Tag matching SRQs on $SRNIC_DEV: a sender RC QP "a" with its own receive
 * queue, connected to a receiver RC QP "b" on a TM SRQ whose list
 * operations complete on their own CQ (tcq).  Eager messages that match a
 * posted tag land in its buffer without the TMH; others go to the SRQ's
 * receive WQEs whole; rendezvous messages are read from the sender's
 * buffer, which then gets a FIN.  The variants vary the message size.
 *
 * With $SRNIC_PEER_DEV, b, its SRQ and tcq are on that device and the
 * messages cross the wire, a packet at a time (the large variant's span
 * 64 of them at an MTU of 1024); there a rendezvous is b's own RDMA READ,
 * and its FIN b's SEND, on b's send PSNs.
 */
#include <endian.h>
#include <infiniband/tm_types.h>

#include "kselftest_harness.h"
#include "traffic.h"

#define TMH 16u
#define TAG_BUF (256u * KiB)	/* where tags' buffers start in b's buffer */
#define RECV_BUF (1u * MiB)	/* where SRQ receive buffers start */
#define RNDV_SRC (1536u * KiB)	/* where a's rendezvous data is */

/* One extended completion, with the fields the tests look at. */
struct tmc {
	uint64_t wr_id, tag;
	uint32_t priv, byte_len, wc_flags;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
};

/* One completion of @cq within @ms: 1, or 0 on timeout. */
static int poll_tm(struct ibv_cq_ex *cq, struct tmc *c, int ms)
{
	struct ibv_poll_cq_attr pa = {};
	uint64_t end = now_ms() + ms;
	struct ibv_wc_tm_info tm;

	while (ibv_start_poll(cq, &pa) == ENOENT) {
		if (now_ms() > end)
			return 0;
		sched_yield();
	}
	ibv_wc_read_tm_info(cq, &tm);
	*c = (struct tmc){
		.wr_id = cq->wr_id, .status = cq->status,
		.opcode = ibv_wc_read_opcode(cq),
		.wc_flags = ibv_wc_read_wc_flags(cq),
		.byte_len = ibv_wc_read_byte_len(cq),
		.tag = tm.tag, .priv = tm.priv,
	};
	ibv_end_poll(cq);
	return 1;
}

#define WAIT_TM(cq, c) \
	ASSERT_EQ(1, poll_tm((cq), &(c), WC_MS)) \
		TH_LOG("no completion within %d ms", WC_MS)

#define TM_FLAGS (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID | IBV_WC_TM_SYNC_REQ)

FIXTURE(tm) {
	struct env e;
	struct ibv_device_attr_ex ex;
	struct ibv_cq_ex *tcq;
	struct ibv_srq *srq;
	struct ep a, b;
	uint32_t unexp;		/* unexpected messages handled */
};

FIXTURE_VARIANT(tm) {
	uint32_t len;		/* message length, TMH included */
};

FIXTURE_VARIANT_ADD(tm, small) { .len = 64 };
FIXTURE_VARIANT_ADD(tm, large) { .len = 64 * KiB };
/* Not a multiple of any MTU: on the wire, a short last packet. */
FIXTURE_VARIANT_ADD(tm, uneven) { .len = 5000 };

FIXTURE_SETUP(tm)
{
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 256,
		.wc_flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_TM_INFO,
	};
	struct qp_opts oa, ob;

	ASSERT_EQ(0, env_open(&self->e)) TH_LOG("cannot open %s", srnic_test_dev());
	ASSERT_EQ(0, ibv_query_device_ex(self->e.ctx, NULL, &self->ex));
	ASSERT_TRUE(self->ex.tm_caps.flags & IBV_TM_CAP_RC)
		TH_LOG("srnic reports no RC tag matching");
	self->tcq = ibv_create_cq_ex(env_of_peer(&self->e)->ctx, &ca);
	ASSERT_NE(NULL, self->tcq) TH_LOG("create_cq_ex: %s", strerror(errno));
	self->srq = tm_srq_create(env_of_peer(&self->e), ibv_cq_ex_to_cq(self->tcq),
				  self->ex.tm_caps.max_num_tags);
	ASSERT_NE(NULL, self->srq) TH_LOG("TM SRQ: %s", strerror(errno));
	oa = qp_defaults(&self->e, IBV_QPT_RC);
	ob = oa;
	ob.srq = self->srq;
	ob.cq_ex = 1;
	ob.wc_flags = ca.wc_flags;
	ASSERT_EQ(0, pair_make(&self->e, &oa, &ob, &self->a, &self->b));
}

FIXTURE_TEARDOWN(tm)
{
	ep_destroy(&self->a);
	ep_destroy(&self->b);
	if (self->srq)
		ibv_destroy_srq(self->srq);
	if (self->tcq)
		ibv_destroy_cq(ibv_cq_ex_to_cq(self->tcq));
	env_close(&self->e);
}

/* Posts one list operation; its return value (bad_wr checked). */
static int tm_op(struct ibv_srq *srq, struct ibv_ops_wr *wr)
{
	struct ibv_ops_wr *bad = NULL;
	int err = ibv_post_srq_ops(srq, wr, &bad);

	if (err && bad != wr)
		return -1;
	return err;
}

/* Adds @tag/@mask with tag buffer @i of b (@len bytes); the handle or -err. */
static int add_tag(FIXTURE_DATA(tm) *self, uint64_t recv_wr_id, uint64_t tag,
		   uint64_t mask, int i, uint32_t len)
{
	struct ibv_sge s = { (uintptr_t)self->b.buf + TAG_BUF + i * 64 * KiB,
			     len, self->b.mr->lkey };
	struct ibv_ops_wr wr = {
		.wr_id = 1000 + recv_wr_id, .opcode = IBV_WR_TAG_ADD,
		.flags = IBV_OPS_SIGNALED,
		.tm = { .unexpected_cnt = self->unexp,
			.add = { .recv_wr_id = recv_wr_id, .sg_list = &s,
				 .num_sge = 1, .tag = tag, .mask = mask } },
	};
	int err = tm_op(self->srq, &wr);

	return err ? -err : (int)wr.tm.handle;
}

/* A list operation without a buffer (DEL, SYNC). */
static int simple_op(FIXTURE_DATA(tm) *self, enum ibv_ops_wr_opcode op,
		     uint64_t wr_id, uint32_t handle, int flags)
{
	struct ibv_ops_wr wr = {
		.wr_id = wr_id, .opcode = op, .flags = flags,
		.tm = { .unexpected_cnt = self->unexp, .handle = handle },
	};

	return tm_op(self->srq, &wr);
}

/* Sends @len bytes of a's buffer at @off, starting with a TMH. */
static int send_tmh(struct ep *a, size_t off, uint8_t op, uint64_t tag,
		    uint32_t priv, uint32_t len)
{
	struct ibv_tmh h = { .opcode = op, .app_ctx = htobe32(priv),
			     .tag = htobe64(tag) };

	memcpy(a->buf + off, &h, sizeof(h));
	return post_send1(a, IBV_WR_SEND, tag, off, len, IBV_SEND_SIGNALED,
			  NULL, 0, 0);
}

/* The sender's completion of the last send: success. */
#define SENT(self) do { \
	struct ibv_wc __w; \
	WAIT_WC((self)->a.cq, __w); \
	ASSERT_WC(__w, IBV_WC_SUCCESS, IBV_WC_SEND); \
} while (0)

/* A list operation's completion: @op, @wr_id, @st. */
#define OP_DONE(self, op, id, st) do { \
	struct tmc __c; \
	WAIT_TM((self)->tcq, __c); \
	EXPECT_EQ((op), __c.opcode); \
	EXPECT_EQ((uint64_t)(id), __c.wr_id); \
	ASSERT_EQ((st), __c.status) TH_LOG("%s", ibv_wc_status_str(__c.status)); \
} while (0)

TEST_F(tm, caps)
{
	struct ibv_tm_caps *c = &self->ex.tm_caps;

	EXPECT_GE(c->max_num_tags, 1u);
	EXPECT_GE(c->max_sge, 1u);
	EXPECT_GE(c->max_ops, 1u);
	/* Room for the TMH and the RVH. */
	EXPECT_GE(c->max_rndv_hdr_size, 32u);
}

/* An eager message lands in the matching tag's buffer, TMH stripped. */
TEST_F(tm, eager_match)
{
	uint32_t len = variant->len, n = len - TMH;
	struct tmc c;

	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(i, add_tag(self, 10 + i, 0x100 + i, ~0ull, i, 64 * KiB));
		OP_DONE(self, IBV_WC_TM_ADD, 1010 + i, IBV_WC_SUCCESS);
	}
	memset(self->b.buf + TAG_BUF, 0xee, 3 * 64 * KiB);
	fill(self->a.buf + TMH, n, 7);
	ASSERT_EQ(0, send_tmh(&self->a, 0, IBV_TMH_EAGER, 0x101, 0xabcd, len));
	SENT(self);
	WAIT_TM(self->b.cqx, c);
	ASSERT_EQ(IBV_WC_SUCCESS, c.status);
	EXPECT_EQ(IBV_WC_TM_RECV, c.opcode);
	EXPECT_EQ(11u, c.wr_id);
	EXPECT_EQ(IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID, c.wc_flags & TM_FLAGS);
	EXPECT_EQ(0x101u, c.tag);
	EXPECT_EQ(0xabcdu, c.priv);
	EXPECT_EQ(n, c.byte_len);
	EXPECT_EQ(-1, verify(self->b.buf + TAG_BUF + 64 * KiB, n, 7));
	/* The other tags' buffers are untouched. */
	EXPECT_EQ(-1, all_eq(self->b.buf + TAG_BUF, 64 * KiB, 0xee));
	EXPECT_EQ(-1, all_eq(self->b.buf + TAG_BUF + 128 * KiB, 64 * KiB, 0xee));
	/* The tag was consumed: deleting it fails with TM_ERR. */
	ASSERT_EQ(0, simple_op(self, IBV_WR_TAG_DEL, 77, 1, IBV_OPS_SIGNALED));
	OP_DONE(self, IBV_WC_TM_DEL, 77, IBV_WC_TM_ERR);
}

/* Two tags match one message: the one posted first takes it. */
TEST_F(tm, oldest_tag_wins)
{
	struct tmc c;

	ASSERT_EQ(0, add_tag(self, 1, 0x55, ~0ull, 0, 64 * KiB));
	ASSERT_EQ(1, add_tag(self, 2, 0x55, ~0ull, 1, 64 * KiB));
	OP_DONE(self, IBV_WC_TM_ADD, 1001, IBV_WC_SUCCESS);
	OP_DONE(self, IBV_WC_TM_ADD, 1002, IBV_WC_SUCCESS);
	for (int i = 1; i <= 2; i++) {
		ASSERT_EQ(0, send_tmh(&self->a, 0, IBV_TMH_EAGER, 0x55, 0, variant->len));
		SENT(self);
		WAIT_TM(self->b.cqx, c);
		EXPECT_EQ((uint64_t)i, c.wr_id);
	}
}

/* The mask: only its bits of the incoming tag count. */
TEST_F(tm, tag_mask)
{
	struct tmc c;

	ASSERT_EQ(0, post_recv(&self->b, 500, RECV_BUF, 64 * KiB));
	ASSERT_EQ(0, add_tag(self, 1, 0x1200, 0xff00, 0, 64 * KiB));
	OP_DONE(self, IBV_WC_TM_ADD, 1001, IBV_WC_SUCCESS);
	/* Bits outside the mask differ: still a match. */
	ASSERT_EQ(0, send_tmh(&self->a, 0, IBV_TMH_EAGER, 0x12ab, 0, variant->len));
	SENT(self);
	WAIT_TM(self->b.cqx, c);
	EXPECT_EQ(1u, c.wr_id);
	EXPECT_EQ(IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID, c.wc_flags & TM_FLAGS);
	EXPECT_EQ(0x12abu, c.tag);
	/* The consumed entry is free again: the same handle. */
	ASSERT_EQ(0, add_tag(self, 2, 0x1200, 0xff00, 1, 64 * KiB));
	OP_DONE(self, IBV_WC_TM_ADD, 1002, IBV_WC_SUCCESS);
	/* A bit inside the mask differs: unexpected. */
	ASSERT_EQ(0, send_tmh(&self->a, 0, IBV_TMH_EAGER, 0x13ab, 0, variant->len));
	SENT(self);
	WAIT_TM(self->b.cqx, c);
	EXPECT_EQ(500u, c.wr_id);
	EXPECT_EQ(IBV_WC_TM_RECV, c.opcode);
	EXPECT_EQ(0u, c.wc_flags & TM_FLAGS);
}

/*
 * An unmatched message goes, TMH and all, to a receive WQE; matching then
 * stops until a sync reports it handled.
 */
TEST_F(tm, unexpected_then_sync)
{
	uint32_t len = variant->len;
	struct tmc c;

	ASSERT_EQ(0, post_recv(&self->b, 500, RECV_BUF, 64 * KiB));
	ASSERT_EQ(0, post_recv(&self->b, 501, RECV_BUF + 64 * KiB, 64 * KiB));
	fill(self->a.buf, len, 3);
	ASSERT_EQ(0, send_tmh(&self->a, 0, IBV_TMH_EAGER, 5, 9, len));
	SENT(self);
	WAIT_TM(self->b.cqx, c);
	ASSERT_EQ(IBV_WC_SUCCESS, c.status);
	EXPECT_EQ(IBV_WC_TM_RECV, c.opcode);
	EXPECT_EQ(500u, c.wr_id);
	EXPECT_EQ(0u, c.wc_flags & TM_FLAGS);
	EXPECT_EQ(len, c.byte_len);
	EXPECT_EQ(0, memcmp(self->b.buf + RECV_BUF, self->a.buf, len));

	/* Not yet synced: the ADD asks for a sync, and nothing matches. */
	ASSERT_EQ(0, add_tag(self, 1, 5, ~0ull, 0, 64 * KiB));
	WAIT_TM(self->tcq, c);
	EXPECT_EQ(IBV_WC_TM_ADD, c.opcode);
	EXPECT_EQ(IBV_WC_TM_SYNC_REQ, c.wc_flags & TM_FLAGS);
	ASSERT_EQ(0, send_tmh(&self->a, 0, IBV_TMH_EAGER, 5, 9, len));
	SENT(self);
	WAIT_TM(self->b.cqx, c);
	EXPECT_EQ(501u, c.wr_id);
	EXPECT_EQ(0u, c.wc_flags & TM_FLAGS);

	/* Both handled: in sync, the tag matches again. */
	self->unexp = 2;
	ASSERT_EQ(0, simple_op(self, IBV_WR_TAG_SYNC, 27, 0,
			       IBV_OPS_SIGNALED | IBV_OPS_TM_SYNC));
	WAIT_TM(self->tcq, c);
	EXPECT_EQ(IBV_WC_TM_SYNC, c.opcode);
	EXPECT_EQ(27u, c.wr_id);
	EXPECT_EQ(0u, c.wc_flags & TM_FLAGS);
	ASSERT_EQ(0, send_tmh(&self->a, 0, IBV_TMH_EAGER, 5, 9, len));
	SENT(self);
	WAIT_TM(self->b.cqx, c);
	EXPECT_EQ(1u, c.wr_id);
	EXPECT_EQ(IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID, c.wc_flags & TM_FLAGS);
}

/* A deleted tag matches nothing; deleting it twice fails. */
TEST_F(tm, del_then_unexpected)
{
	struct tmc c;
	int h;

	ASSERT_EQ(0, post_recv(&self->b, 500, RECV_BUF, 64 * KiB));
	h = add_tag(self, 1, 8, ~0ull, 0, 64 * KiB);
	ASSERT_GE(h, 0);
	OP_DONE(self, IBV_WC_TM_ADD, 1001, IBV_WC_SUCCESS);
	ASSERT_EQ(0, simple_op(self, IBV_WR_TAG_DEL, 40, h, IBV_OPS_SIGNALED));
	OP_DONE(self, IBV_WC_TM_DEL, 40, IBV_WC_SUCCESS);
	ASSERT_EQ(0, send_tmh(&self->a, 0, IBV_TMH_EAGER, 8, 0, variant->len));
	SENT(self);
	WAIT_TM(self->b.cqx, c);
	EXPECT_EQ(500u, c.wr_id);
	EXPECT_EQ(IBV_WC_TM_RECV, c.opcode);
	EXPECT_EQ(0u, c.wc_flags & TM_FLAGS);
	/* Unsignaled, but an error completes anyway. */
	ASSERT_EQ(0, simple_op(self, IBV_WR_TAG_DEL, 41, h, 0));
	OP_DONE(self, IBV_WC_TM_DEL, 41, IBV_WC_TM_ERR);
	/*
	 * A signaled-less success leaves nothing in the CQ: the signaled one
	 * after it (list operations complete in order) is the next there.
	 */
	ASSERT_EQ(0, simple_op(self, IBV_WR_TAG_SYNC, 42, 0, 0));
	ASSERT_EQ(0, simple_op(self, IBV_WR_TAG_SYNC, 43, 0, IBV_OPS_SIGNALED));
	OP_DONE(self, IBV_WC_TM_SYNC, 43, IBV_WC_SUCCESS);
}

/* NO_TAG messages go to receive WQEs and need no sync. */
TEST_F(tm, no_tag)
{
	struct tmc c;

	ASSERT_EQ(0, post_recv(&self->b, 500, RECV_BUF, 64 * KiB));
	ASSERT_EQ(0, add_tag(self, 1, 8, ~0ull, 0, 64 * KiB));
	OP_DONE(self, IBV_WC_TM_ADD, 1001, IBV_WC_SUCCESS);
	ASSERT_EQ(0, send_tmh(&self->a, 0, IBV_TMH_NO_TAG, 8, 0, variant->len));
	SENT(self);
	WAIT_TM(self->b.cqx, c);
	EXPECT_EQ(IBV_WC_TM_NO_TAG, c.opcode);
	EXPECT_EQ(500u, c.wr_id);
	EXPECT_EQ(variant->len, c.byte_len);
	/* Still in sync: the tag matches. */
	ASSERT_EQ(0, send_tmh(&self->a, 0, IBV_TMH_EAGER, 8, 0, variant->len));
	SENT(self);
	WAIT_TM(self->b.cqx, c);
	EXPECT_EQ(1u, c.wr_id);
	EXPECT_EQ(IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID, c.wc_flags & TM_FLAGS);
}

/* Writes a rendezvous header for @len bytes at a's RNDV_SRC with @rkey. */
static void rvh(struct ep *a, uint32_t rkey, uint32_t len)
{
	struct ibv_rvh r = { .va = htobe64((uintptr_t)a->buf + RNDV_SRC),
			     .rkey = htobe32(rkey), .len = htobe32(len) };

	memcpy(a->buf + TMH, &r, sizeof(r));
}

/* The match of a rendezvous for @want_tag, wr_id @id, app context @want_priv. */
#define RNDV_MATCHED(self, id, want_tag, want_priv) do { \
	struct tmc __c; \
	WAIT_TM((self)->b.cqx, __c); \
	ASSERT_EQ(IBV_WC_SUCCESS, __c.status); \
	EXPECT_EQ(IBV_WC_TM_RECV, __c.opcode); \
	EXPECT_EQ((uint64_t)(id), __c.wr_id); \
	EXPECT_EQ(IBV_WC_TM_MATCH, __c.wc_flags & TM_FLAGS); \
	EXPECT_EQ((uint64_t)(want_tag), __c.tag); \
	EXPECT_EQ((uint32_t)(want_priv), __c.priv); \
} while (0)

/* Its data: @len bytes in the tag's buffer, wr_id @id. */
#define RNDV_DATA(self, id, len) do { \
	struct tmc __c; \
	WAIT_TM((self)->b.cqx, __c); \
	ASSERT_EQ(IBV_WC_SUCCESS, __c.status) \
		TH_LOG("%s", ibv_wc_status_str(__c.status)); \
	EXPECT_EQ(IBV_WC_TM_RECV, __c.opcode); \
	EXPECT_EQ((uint64_t)(id), __c.wr_id); \
	EXPECT_EQ(IBV_WC_TM_DATA_VALID, __c.wc_flags & TM_FLAGS); \
	EXPECT_EQ((uint32_t)(len), __c.byte_len); \
} while (0)

/* The FIN for @want_tag in a's receive @id, at a's buffer offset @off. */
#define FIN_AT(self, wc, id, off, want_tag) do { \
	struct ibv_tmh __f; \
	ASSERT_WC((wc), IBV_WC_SUCCESS, IBV_WC_RECV); \
	EXPECT_EQ((uint64_t)(id), (wc).wr_id); \
	ASSERT_EQ(sizeof(__f), (wc).byte_len); \
	memcpy(&__f, (self)->a.buf + (off), sizeof(__f)); \
	EXPECT_EQ(IBV_TMH_FIN, __f.opcode); \
	EXPECT_EQ((uint64_t)(want_tag), be64toh(__f.tag)); \
} while (0)

/*
 * a's SEND completion and the FIN for @want_tag in receive @id (at @off),
 * in either order: across the wire the FIN may arrive before a's requester
 * has completed the SEND whose ACK came first.
 */
#define SENT_AND_FIN(self, id, off, want_tag) do { \
	struct ibv_wc __s; \
	bool __sent = false; \
	for (int __i = 0; __i < 2; __i++) { \
		WAIT_WC((self)->a.cq, __s); \
		if (!__sent && __s.opcode == IBV_WC_SEND) { \
			ASSERT_WC(__s, IBV_WC_SUCCESS, IBV_WC_SEND); \
			__sent = true; \
			continue; \
		} \
		FIN_AT(self, __s, id, off, want_tag); \
	} \
	EXPECT_TRUE(__sent); \
} while (0)

/* Rendezvous: matched, read from the sender, then a FIN to the sender. */
TEST_F(tm, rndv)
{
	uint32_t len = variant->len;

	ASSERT_EQ(0, post_recv(&self->a, 600, RECV_BUF, 64));
	ASSERT_EQ(0, add_tag(self, 1, 0x77, ~0ull, 0, 64 * KiB));
	OP_DONE(self, IBV_WC_TM_ADD, 1001, IBV_WC_SUCCESS);
	fill(self->a.buf + RNDV_SRC, len, 11);
	rvh(&self->a, self->a.mr->rkey, len);
	ASSERT_EQ(0, send_tmh(&self->a, 0, IBV_TMH_RNDV, 0x77, 4, 32));
	RNDV_MATCHED(self, 1, 0x77, 4);
	RNDV_DATA(self, 1, len);
	EXPECT_EQ(-1, verify(self->b.buf + TAG_BUF, len, 11));
	SENT_AND_FIN(self, 600, RECV_BUF, 0x77);
}

static const char *b_dev(FIXTURE_DATA(tm) *self)
{
	return ibv_get_device_name(env_of_peer(&self->e)->ctx->device);
}

/*
 * A rendezvous five times the variant's length (the large one's of several
 * of the engine's 64 KiB pieces, read by as many READs): every byte in
 * place and none past it, one FIN.  The READ's responses go straight into
 * the tag's buffer: none is staged to be copied later.
 */
TEST_F(tm, rndv_long)
{
	uint32_t len = 5 * variant->len, room = RECV_BUF - TAG_BUF;
	long long staged = dev_counter_now(b_dev(self), "rx_read_staged_packets");

	ASSERT_LE(0, staged);
	ASSERT_EQ(0, post_recv(&self->a, 600, RECV_BUF, 64));
	ASSERT_EQ(0, add_tag(self, 1, 0x78, ~0ull, 0, room));
	OP_DONE(self, IBV_WC_TM_ADD, 1001, IBV_WC_SUCCESS);
	memset(self->b.buf + TAG_BUF, 0xee, room);
	fill(self->a.buf + RNDV_SRC, len, 12);
	rvh(&self->a, self->a.mr->rkey, len);
	ASSERT_EQ(0, send_tmh(&self->a, 0, IBV_TMH_RNDV, 0x78, 5, 32));
	RNDV_MATCHED(self, 1, 0x78, 5);
	RNDV_DATA(self, 1, len);
	EXPECT_EQ(-1, verify(self->b.buf + TAG_BUF, len, 12));
	EXPECT_EQ(-1, all_eq(self->b.buf + TAG_BUF + len, room - len, 0xee));
	EXPECT_EQ(staged, dev_counter_now(b_dev(self), "rx_read_staged_packets"));
	SENT_AND_FIN(self, 600, RECV_BUF, 0x78);
	/* One FIN: b's message after it (b sends the FIN) is a's next. */
	expect_quiet_pair(_metadata, &self->b, &self->a);
}

#define OWN_SENDS 16
#define OWN_SRC (1536u * KiB)	/* b's own messages to a */

/*
 * Holds b's send queue: a SEND (wr_id 2000) a has no receive for, which
 * the RNR NAKs keep sending again for ever; 0 once one came back.
 */
static int hold_b(FIXTURE_DATA(tm) *self)
{
	long long before = dev_counter(b_dev(self), "rnr_naks_rcvd");

	fill(self->b.buf + OWN_SRC, 64, 15);
	if (before < 0 || post_send1(&self->b, IBV_WR_SEND, 2000, OWN_SRC, 64,
				     IBV_SEND_SIGNALED, NULL, 0, 0))
		return -1;
	return dev_counter_reaching(b_dev(self), "rnr_naks_rcvd",
				    before + 1) > before ? 0 : -1;
}

/*
 * b sends to a while a's rendezvous arrives: b's READ and FIN take their
 * turn among b's own SENDs (across the wire they share b's PSNs), and
 * every message arrives whole and in order, the FIN before the SENDs b
 * posts once the data came.
 */
TEST_F(tm, rndv_among_own_sends)
{
	uint32_t len = variant->len, sz = 4 * KiB;
	int seen = 0, fins = 0, sent = 0, data = 0;
	bool a_sent = false;
	struct ibv_wc wc;
	struct tmc c;

	for (int i = 0; i <= OWN_SENDS; i++)
		ASSERT_EQ(0, post_recv(&self->a, 700 + i, RECV_BUF + i * sz, sz));
	ASSERT_EQ(0, add_tag(self, 1, 0x79, ~0ull, 0, 64 * KiB));
	OP_DONE(self, IBV_WC_TM_ADD, 1001, IBV_WC_SUCCESS);
	fill(self->a.buf + RNDV_SRC, len, 13);
	rvh(&self->a, self->a.mr->rkey, len);
	for (int i = 0; i < OWN_SENDS; i++)
		fill(self->b.buf + OWN_SRC + i * sz, sz, 100 + i);
	/* Half of b's SENDs, a's rendezvous, and the rest once it is read. */
	for (int i = 0; i < OWN_SENDS / 2; i++)
		ASSERT_EQ(0, post_send1(&self->b, IBV_WR_SEND, 2000 + i,
					OWN_SRC + i * sz, sz, IBV_SEND_SIGNALED,
					NULL, 0, 0));
	ASSERT_EQ(0, send_tmh(&self->a, 0, IBV_TMH_RNDV, 0x79, 6, 32));
	/* b: its sends in order, and the tag's two completions in order. */
	while (sent + data < OWN_SENDS + 2) {
		WAIT_TM(self->b.cqx, c);
		ASSERT_EQ(IBV_WC_SUCCESS, c.status)
			TH_LOG("wr_id %llu: %s", (unsigned long long)c.wr_id,
			       ibv_wc_status_str(c.status));
		if (c.opcode == IBV_WC_SEND) {
			EXPECT_EQ(2000u + sent, c.wr_id);
			sent++;
			continue;
		}
		EXPECT_EQ(IBV_WC_TM_RECV, c.opcode);
		EXPECT_EQ(data ? IBV_WC_TM_DATA_VALID : IBV_WC_TM_MATCH,
			  c.wc_flags & TM_FLAGS);
		if (++data < 2)
			continue;
		for (int i = OWN_SENDS / 2; i < OWN_SENDS; i++)
			ASSERT_EQ(0, post_send1(&self->b, IBV_WR_SEND, 2000 + i,
						OWN_SRC + i * sz, sz,
						IBV_SEND_SIGNALED, NULL, 0, 0));
	}
	EXPECT_EQ(-1, verify(self->b.buf + TAG_BUF, len, 13));
	/* a: its SEND, b's messages in order, one FIN somewhere among them. */
	for (int i = 0; i <= OWN_SENDS; i++) {
		WAIT_WC(self->a.cq, wc);
		if (wc.opcode == IBV_WC_SEND && wc.wr_id == 0x79 && !a_sent) {
			ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_SEND);
			a_sent = true;
			i--;
			continue;
		}
		if (wc.byte_len == TMH) {
			FIN_AT(self, wc, 700 + i, RECV_BUF + i * sz, 0x79);
			/* Before the SENDs posted after the read. */
			EXPECT_LE(seen, OWN_SENDS / 2);
			fins++;
			continue;
		}
		ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
		EXPECT_EQ(700u + i, wc.wr_id);
		ASSERT_EQ(sz, wc.byte_len);
		EXPECT_EQ(-1, verify(self->a.buf + RECV_BUF + i * sz, sz, 100 + seen))
			TH_LOG("receive %d: not b's message %d", i, seen);
		seen++;
	}
	EXPECT_EQ(1, fins);
	EXPECT_EQ(OWN_SENDS, seen);
	if (!a_sent)
		SENT(self);
}

/*
 * b's send queue is held by a SEND a has no receive for (RNR, retried for
 * ever) when a's rendezvous arrives: the match completes at once, the
 * read waits its turn behind the SEND, and goes once a posts receives.
 * (On one host the read is made at the match, and the FIN, which finds no
 * receive, is lost: nothing waits there.)
 */
TEST_F(tm, rndv_waits_for_send_queue)
{
	uint32_t len = variant->len;
	struct ibv_wc wc;
	struct tmc c;

	if (!self->e.peer)
		SKIP(return, "on one host the read is made at the match");
	ASSERT_EQ(0, add_tag(self, 1, 0x7a, ~0ull, 0, 64 * KiB));
	OP_DONE(self, IBV_WC_TM_ADD, 1001, IBV_WC_SUCCESS);
	memset(self->b.buf + TAG_BUF, 0xee, 64 * KiB);
	fill(self->a.buf + RNDV_SRC, len, 14);
	rvh(&self->a, self->a.mr->rkey, len);
	ASSERT_EQ(0, hold_b(self)) TH_LOG("b's SEND was not refused");
	ASSERT_EQ(0, send_tmh(&self->a, 0, IBV_TMH_RNDV, 0x7a, 7, 32));
	SENT(self);
	RNDV_MATCHED(self, 1, 0x7a, 7);
	ASSERT_EQ(0, post_recv(&self->a, 600, RECV_BUF, 64));
	ASSERT_EQ(0, post_recv(&self->a, 601, RECV_BUF + 64, 64));
	/* The SEND first: the read waited behind it. */
	WAIT_TM(self->b.cqx, c);
	ASSERT_EQ(IBV_WC_SUCCESS, c.status);
	EXPECT_EQ(IBV_WC_SEND, c.opcode);
	EXPECT_EQ(2000u, c.wr_id);
	RNDV_DATA(self, 1, len);
	EXPECT_EQ(-1, verify(self->b.buf + TAG_BUF, len, 14));
	WAIT_WC(self->a.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
	EXPECT_EQ(600u, wc.wr_id);
	EXPECT_EQ(-1, verify(self->a.buf + RECV_BUF, 64, 15));
	WAIT_WC(self->a.cq, wc);
	FIN_AT(self, wc, 601, RECV_BUF + 64, 0x7a);
}

/*
 * a posts no receive for the FIN: b's RNR retries for it end (even with
 * rnr_retry 7, for ever for a WQE), the FIN is lost as on one host, and
 * b's QP goes on, its next SEND taking the FIN's PSN.
 */
TEST_F(tm, rndv_fin_lost_without_receive)
{
	uint32_t len = variant->len;
	long long lost;
	struct ibv_wc wc;
	struct tmc c;

	if (!self->e.peer)
		SKIP(return, "on one host the FIN is lost at once");
	lost = dev_counter(b_dev(self), "rnr_retry_exceeded");
	ASSERT_LE(0, lost);
	ASSERT_EQ(0, add_tag(self, 1, 0x7e, ~0ull, 0, 64 * KiB));
	OP_DONE(self, IBV_WC_TM_ADD, 1001, IBV_WC_SUCCESS);
	fill(self->a.buf + RNDV_SRC, len, 17);
	rvh(&self->a, self->a.mr->rkey, len);
	ASSERT_EQ(0, send_tmh(&self->a, 0, IBV_TMH_RNDV, 0x7e, 9, 32));
	SENT(self);
	RNDV_MATCHED(self, 1, 0x7e, 9);
	RNDV_DATA(self, 1, len);
	EXPECT_EQ(-1, verify(self->b.buf + TAG_BUF, len, 17));
	ASSERT_LT(lost, dev_counter_reaching(b_dev(self), "rnr_retry_exceeded",
					     lost + 1))
		TH_LOG("the FIN's RNR retries did not end");
	ASSERT_EQ(0, post_recv(&self->a, 600, RECV_BUF, 64));
	fill(self->b.buf + OWN_SRC, 64, 18);
	ASSERT_EQ(0, post_send1(&self->b, IBV_WR_SEND, 2000, OWN_SRC, 64,
				IBV_SEND_SIGNALED, NULL, 0, 0));
	WAIT_TM(self->b.cqx, c);
	ASSERT_EQ(IBV_WC_SUCCESS, c.status)
		TH_LOG("%s", ibv_wc_status_str(c.status));
	EXPECT_EQ(2000u, c.wr_id);
	WAIT_WC(self->a.cq, wc);
	ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
	EXPECT_EQ(64u, wc.byte_len);
	EXPECT_EQ(-1, verify(self->a.buf + RECV_BUF, 64, 18));
	EXPECT_EQ(IBV_QPS_RTS, qp_state(self->b.qp));
}

/*
 * The same held send queue, and b goes to error instead: the tag whose
 * data never came completes flushed, after its match, and nothing lands.
 */
TEST_F(tm, rndv_flushed)
{
	bool send_seen = false, tag_seen = false;
	struct tmc c;

	if (!self->e.peer)
		SKIP(return, "on one host the read is made at the match");
	ASSERT_EQ(0, add_tag(self, 1, 0x7b, ~0ull, 0, 64 * KiB));
	OP_DONE(self, IBV_WC_TM_ADD, 1001, IBV_WC_SUCCESS);
	memset(self->b.buf + TAG_BUF, 0xee, 64 * KiB);
	rvh(&self->a, self->a.mr->rkey, variant->len);
	ASSERT_EQ(0, hold_b(self)) TH_LOG("b's SEND was not refused");
	ASSERT_EQ(0, send_tmh(&self->a, 0, IBV_TMH_RNDV, 0x7b, 8, 32));
	SENT(self);
	RNDV_MATCHED(self, 1, 0x7b, 8);
	ASSERT_EQ(0, to_err(self->b.qp));
	for (int i = 0; i < 2; i++) {
		WAIT_TM(self->b.cqx, c);
		EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, c.status)
			TH_LOG("wr_id %llu: %s", (unsigned long long)c.wr_id,
			       ibv_wc_status_str(c.status));
		if (c.wr_id == 2000) {
			send_seen = true;
			continue;
		}
		EXPECT_EQ(1u, c.wr_id);
		EXPECT_EQ(IBV_WC_TM_RECV, c.opcode);
		tag_seen = true;
	}
	EXPECT_TRUE(send_seen && tag_seen);
	/* b is in error, its receives an SRQ's: nothing is ordered after the flush. */
	EXPECT_EQ(0, poll_tm(self->b.cqx, &c, quiet_ms()));
	EXPECT_EQ(-1, all_eq(self->b.buf + TAG_BUF, 64 * KiB, 0xee));
}

/* A rendezvous header at a's buffer offset @off: TMH, then RVH. */
static int send_rndv_at(struct ep *a, size_t off, uint64_t tag, uint32_t rkey,
			uint32_t len)
{
	struct ibv_rvh r = { .va = htobe64((uintptr_t)a->buf + RNDV_SRC),
			     .rkey = htobe32(rkey), .len = htobe32(len) };

	memcpy(a->buf + off + TMH, &r, sizeof(r));
	return send_tmh(a, off, IBV_TMH_RNDV, tag, 0, 32);
}

/* An empty rendezvous: matched, "read", completed with no bytes, FIN'd. */
TEST_F(tm, rndv_empty)
{

	ASSERT_EQ(0, post_recv(&self->a, 600, RECV_BUF, 64));
	ASSERT_EQ(0, add_tag(self, 1, 0x7c, ~0ull, 0, 64 * KiB));
	OP_DONE(self, IBV_WC_TM_ADD, 1001, IBV_WC_SUCCESS);
	ASSERT_EQ(0, send_rndv_at(&self->a, 0, 0x7c, self->a.mr->rkey, 0));
	RNDV_MATCHED(self, 1, 0x7c, 0);
	RNDV_DATA(self, 1, 0);
	SENT_AND_FIN(self, 600, RECV_BUF, 0x7c);
}

/*
 * A rendezvous longer than the tag's buffer is left to software at once,
 * nothing read (the sender's range is not touched, nor the buffer).
 */
TEST_F(tm, rndv_longer_than_buffer)
{
	struct tmc c;

	ASSERT_EQ(0, post_recv(&self->a, 600, RECV_BUF, 64));
	ASSERT_EQ(0, add_tag(self, 1, 0x7d, ~0ull, 0, 4 * KiB));
	OP_DONE(self, IBV_WC_TM_ADD, 1001, IBV_WC_SUCCESS);
	memset(self->b.buf + TAG_BUF, 0xee, 64 * KiB);
	ASSERT_EQ(0, send_rndv_at(&self->a, 0, 0x7d, self->a.mr->rkey,
				  4 * KiB + 1));
	SENT(self);
	RNDV_MATCHED(self, 1, 0x7d, 0);
	WAIT_TM(self->b.cqx, c);
	EXPECT_EQ(IBV_WC_TM_RNDV_INCOMPLETE, c.status);
	EXPECT_EQ(1u, c.wr_id);
	EXPECT_EQ(-1, all_eq(self->b.buf + TAG_BUF, 64 * KiB, 0xee));
	/* No FIN: b's message (b would send it) takes a's receive 600 first. */
	expect_quiet_pair(_metadata, &self->b, &self->a);
	EXPECT_EQ(IBV_QPS_RTS, qp_state(self->b.qp));
	EXPECT_EQ(IBV_QPS_RTS, qp_state(self->a.qp));
}

#define RNDV_FLOOD 6	/* more than a QP keeps (SRNIC_WIRE_READS, 4) */

/*
 * A sender floods rendezvous while b's send queue is held: b keeps a
 * bounded number for its own READs, and leaves the others to software at
 * once (RNDV_INCOMPLETE); those it kept are read once the queue moves.
 */
TEST_F(tm, rndv_flood_bounded)
{
	int matched = 0, incomplete = 0, kept = 0, data = 0, fins = 0;
	uint32_t len = variant->len;
	bool left[RNDV_FLOOD] = {};
	struct ibv_wc wc;
	struct tmc c;

	if (!self->e.peer)
		SKIP(return, "on one host the read is made at the match");
	for (int i = 0; i < RNDV_FLOOD; i++) {
		ASSERT_EQ(i, add_tag(self, i, 0x90 + i, ~0ull, i, 64 * KiB));
		OP_DONE(self, IBV_WC_TM_ADD, 1000 + i, IBV_WC_SUCCESS);
	}
	fill(self->a.buf + RNDV_SRC, len, 16);
	ASSERT_EQ(0, hold_b(self)) TH_LOG("b's SEND was not refused");
	for (int i = 0; i < RNDV_FLOOD; i++)
		ASSERT_EQ(0, send_rndv_at(&self->a, 64 * (i + 1), 0x90 + i,
					  self->a.mr->rkey, len));
	for (int i = 0; i < RNDV_FLOOD; i++)
		SENT(self);
	while (matched + incomplete < RNDV_FLOOD + RNDV_FLOOD - 4) {
		WAIT_TM(self->b.cqx, c);
		ASSERT_LT(c.wr_id, (uint64_t)RNDV_FLOOD);
		if (c.wc_flags & IBV_WC_TM_MATCH) {
			matched++;
			continue;
		}
		EXPECT_EQ(IBV_WC_TM_RNDV_INCOMPLETE, c.status)
			TH_LOG("wr_id %llu: %s", (unsigned long long)c.wr_id,
			       ibv_wc_status_str(c.status));
		left[c.wr_id] = true;
		incomplete++;
	}
	EXPECT_EQ(RNDV_FLOOD, matched);
	/* The queue moves: b's SEND, then the kept ones, each with its FIN. */
	for (int i = 0; i <= 4; i++)
		ASSERT_EQ(0, post_recv(&self->a, 600 + i, RECV_BUF + i * 64, 64));
	while (kept < 1 + 4) {
		WAIT_TM(self->b.cqx, c);
		ASSERT_EQ(IBV_WC_SUCCESS, c.status)
			TH_LOG("wr_id %llu: %s", (unsigned long long)c.wr_id,
			       ibv_wc_status_str(c.status));
		kept++;
		if (c.opcode == IBV_WC_SEND)
			continue;
		ASSERT_LT(c.wr_id, (uint64_t)RNDV_FLOOD);
		EXPECT_FALSE(left[c.wr_id]);
		EXPECT_EQ(IBV_WC_TM_DATA_VALID, c.wc_flags & TM_FLAGS);
		EXPECT_EQ(-1, verify(self->b.buf + TAG_BUF + c.wr_id * 64 * KiB,
				     len, 16));
		data++;
	}
	EXPECT_EQ(4, data);
	for (int i = 0; i <= 4; i++) {
		WAIT_WC(self->a.cq, wc);
		ASSERT_WC(wc, IBV_WC_SUCCESS, IBV_WC_RECV);
		fins += wc.byte_len == TMH;
	}
	EXPECT_EQ(4, fins);
}

/*
 * A rendezvous the receiver cannot read: on one host that is found before
 * reading, and left to software.  Across the wire it is b's RDMA READ that
 * a refuses (remote access error), and both QPs go to error as for any.
 */
TEST_F(tm, rndv_bad_rkey)
{
	struct ibv_wc wc;
	struct tmc c;

	ASSERT_EQ(0, post_recv(&self->a, 600, RECV_BUF, 64));
	ASSERT_EQ(0, add_tag(self, 1, 0x77, ~0ull, 0, 64 * KiB));
	OP_DONE(self, IBV_WC_TM_ADD, 1001, IBV_WC_SUCCESS);
	memset(self->b.buf + TAG_BUF, 0xee, 64 * KiB);
	rvh(&self->a, self->a.mr->rkey ^ 0x80, variant->len);
	ASSERT_EQ(0, send_tmh(&self->a, 0, IBV_TMH_RNDV, 0x77, 0, 32));
	WAIT_TM(self->b.cqx, c);
	EXPECT_EQ(IBV_WC_TM_MATCH, c.wc_flags & TM_FLAGS);
	WAIT_TM(self->b.cqx, c);
	EXPECT_EQ(1u, c.wr_id);
	EXPECT_EQ(-1, all_eq(self->b.buf + TAG_BUF, 64 * KiB, 0xee));
	if (self->e.peer) {
		EXPECT_EQ(IBV_WC_REM_ACCESS_ERR, c.status)
			TH_LOG("%s", ibv_wc_status_str(c.status));
		EXPECT_TRUE(wait_state(self->b.qp, IBV_QPS_ERR, WC_MS));
		/*
		 * a: the SEND (acknowledged, but the READ that puts a in
		 * error may come in the same batch as the ACK, before a's
		 * requester has completed it: then flushed) and the receive
		 * for the FIN, flushed: no FIN came.
		 */
		for (int i = 0; i < 2; i++) {
			WAIT_WC(self->a.cq, wc);
			if (wc.wr_id == 0x77) {
				EXPECT_TRUE(wc.status == IBV_WC_SUCCESS ||
					    wc.status == IBV_WC_WR_FLUSH_ERR)
					TH_LOG("%s", ibv_wc_status_str(wc.status));
				continue;
			}
			EXPECT_EQ(600u, wc.wr_id);
			EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);
		}
		EXPECT_EQ(IBV_QPS_ERR, qp_state(self->a.qp));
		return;
	}
	SENT(self);
	EXPECT_EQ(IBV_WC_TM_RNDV_INCOMPLETE, c.status);
	/* No FIN (b's message takes a's receive 600 first), and both QPs still work. */
	expect_quiet_pair(_metadata, &self->b, &self->a);
	EXPECT_EQ(IBV_QPS_RTS, qp_state(self->b.qp));
	EXPECT_EQ(IBV_QPS_RTS, qp_state(self->a.qp));
}

/* A message longer than the tag's buffer fails both sides. */
TEST_F(tm, eager_too_long)
{
	struct ibv_wc wc;
	struct tmc c;

	ASSERT_EQ(0, add_tag(self, 1, 3, ~0ull, 0, 8));
	OP_DONE(self, IBV_WC_TM_ADD, 1001, IBV_WC_SUCCESS);
	ASSERT_EQ(0, send_tmh(&self->a, 0, IBV_TMH_EAGER, 3, 0, variant->len));
	WAIT_WC(self->a.cq, wc);
	EXPECT_EQ(IBV_WC_REM_INV_REQ_ERR, wc.status);
	WAIT_TM(self->b.cqx, c);
	EXPECT_EQ(IBV_WC_LOC_LEN_ERR, c.status);
	EXPECT_EQ(1u, c.wr_id);
}

/* Requests the device refuses, each with its errno or status. */
TEST_F(tm, refusals)
{
	uint32_t max = self->ex.tm_caps.max_num_tags;
	struct ibv_sge s[2] = {
		{ (uintptr_t)self->b.buf, 64, self->b.mr->lkey },
		{ (uintptr_t)self->b.buf + 64, 64, self->b.mr->lkey },
	};
	struct ibv_ops_wr wr = { .wr_id = 5, .opcode = IBV_WR_TAG_ADD,
				 .flags = IBV_OPS_SIGNALED,
				 .tm.add = { .sg_list = s, .num_sge = 2 } };
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_srq *basic;
	struct tmc c;

	/* More SGEs than tm_caps.max_sge. */
	EXPECT_EQ(EINVAL, tm_op(self->srq, &wr));
	/* A handle beyond the list. */
	EXPECT_EQ(EINVAL, simple_op(self, IBV_WR_TAG_DEL, 1, max, IBV_OPS_SIGNALED));
	/* A buffer no MR of the PD covers: the ADD completes in error. */
	wr.tm.add.num_sge = 1;
	s[0].lkey ^= 0x80;
	EXPECT_EQ(0, tm_op(self->srq, &wr));
	OP_DONE(self, IBV_WC_TM_ADD, 5, IBV_WC_LOC_PROT_ERR);
	/* Beyond the MR. */
	s[0].lkey = self->b.mr->lkey;
	s[0].addr = (uintptr_t)self->b.buf + BUF_LEN - 8;
	EXPECT_EQ(0, tm_op(self->srq, &wr));
	OP_DONE(self, IBV_WC_TM_ADD, 5, IBV_WC_LOC_PROT_ERR);
	/* The list fills up. */
	for (uint32_t i = 0; i < max; i++) {
		ASSERT_EQ((int)i, add_tag(self, i, i, ~0ull, 0, 64));
		OP_DONE(self, IBV_WC_TM_ADD, 1000 + i, IBV_WC_SUCCESS);
	}
	EXPECT_EQ(-ENOMEM, add_tag(self, 9999, 1, ~0ull, 0, 64));
	/* A deleted entry is free again. */
	ASSERT_EQ(0, simple_op(self, IBV_WR_TAG_DEL, 3, 7, 0));
	EXPECT_EQ(7, add_tag(self, 7, 7, ~0ull, 0, 64));
	OP_DONE(self, IBV_WC_TM_ADD, 1007, IBV_WC_SUCCESS);
	EXPECT_EQ(0, poll_tm(self->tcq, &c, 0));
	/* A list bigger than the device's, and list operations elsewhere. */
	EXPECT_EQ(NULL, tm_srq_create(env_of_peer(&self->e),
					 ibv_cq_ex_to_cq(self->tcq), max + 1));
	EXPECT_EQ(EINVAL, errno);
	basic = ibv_create_srq(env_of_peer(&self->e)->pd, &sa);
	ASSERT_NE(NULL, basic);
	EXPECT_EQ(EOPNOTSUPP, tm_op(basic, &wr));
	EXPECT_EQ(0, ibv_destroy_srq(basic));
}

/*
 * Tear-down while messages run: the receiver's QP and the SRQ go while
 * the sender still has matched, unexpected and rendezvous messages queued.
 * Every send completes, nothing leaks (the suite's dmesg check).
 */
TEST_F(tm, destroy_in_flight)
{
	enum { N = 48 };
	struct ibv_wc wc;
	int done = 0;

	for (int i = 0; i < 8; i++)
		ASSERT_EQ(0, post_recv(&self->b, 500 + i, RECV_BUF + i * 4 * KiB,
				       4 * KiB));
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(0, post_recv(&self->a, 600 + i, RECV_BUF + i * 64, 64));
	for (int i = 0; i < 8; i++)
		ASSERT_LE(0, add_tag(self, i, i, ~0ull, i, 64 * KiB));
	rvh(&self->a, self->a.mr->rkey, 4 * KiB);
	for (int i = 0; i < N; i++) {
		uint8_t op = i % 3 == 2 ? IBV_TMH_RNDV : IBV_TMH_EAGER;

		/* Each message its own header: the engine reads them later. */
		memcpy(self->a.buf + 64 * (i + 1) + TMH, self->a.buf + TMH, 16);
		ASSERT_EQ(0, send_tmh(&self->a, 64 * (i + 1), op, i % 10, 0,
				      op == IBV_TMH_RNDV ? 32 : 48));
	}
	ASSERT_EQ(0, ibv_destroy_qp(self->b.qp));
	self->b.qp = NULL;
	ASSERT_EQ(0, ibv_destroy_srq(self->srq));
	self->srq = NULL;
	/* Sends have wr_id = tag < 10; FINs and flushed receives 600 on. */
	while (done < N && poll_one(self->a.cq, &wc, WC_MS) == 1)
		done += wc.wr_id < 600;
	EXPECT_EQ(N, done);
}

TEST_HARNESS_MAIN
