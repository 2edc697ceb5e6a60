// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * RoCEv2 packets from the wire, as a hostile peer writes them.  srnic sits
 * on one end of a veth pair; the other end is in a network namespace of
 * its own, from which the tests send hand-made IPv4/UDP 4791 packets with
 * a raw socket: good datagrams (delivered to a UD QP, GRH and immediate
 * included), then every header field wrong in turn (lengths, pad, ICRC,
 * version, opcode, QPN, Q_Key, destination address) and seeded random
 * garbage.  A bad packet is dropped and counted, never delivered; a good
 * datagram sent after the bad ones (a sentinel: one QP's packets are
 * handled in order) arrives and is the first completion.
 */
#include <fcntl.h>
#include <sched.h>
#include <arpa/inet.h>
#include <netinet/ip.h>
#include <netinet/udp.h>

#include "kselftest_harness.h"
#include "traffic.h"

#define W_VETH "srw"
#define W_DEV "srwd"
#define W_NS "srwns"
#define W_ME "10.77.0.1"	/* srnic's side */
#define W_PEER "10.77.0.2"	/* the hostile peer's */
#define W_QKEY 0x11111111u
#define W_SQP 0x123456u

/* CRC-32 as the ICRC uses it (reflected, 0xedb88320), without the final xor. */
static uint32_t crc32_raw(uint32_t crc, const uint8_t *p, size_t n)
{
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
	}
	return crc;
}

/*
 * The ICRC of the IPv4 packet @pkt (20-byte header): over 8 bytes of ones
 * (the LRH), the IP and UDP headers and the BTH with the variant fields
 * set to ones, then the rest up to the ICRC itself.
 */
static uint32_t icrc(const uint8_t *pkt, size_t len)
{
	uint8_t m[20 + 8 + 12], ones[8];
	uint32_t crc;

	memset(ones, 0xff, sizeof(ones));
	memcpy(m, pkt, sizeof(m));
	m[1] = 0xff;			/* TOS */
	m[8] = 0xff;			/* TTL */
	m[10] = m[11] = 0xff;		/* header checksum */
	m[26] = m[27] = 0xff;		/* UDP checksum */
	m[28 + 4] = 0xff;		/* BTH FECN, BECN, reserved */
	crc = crc32_raw(0xffffffffu, ones, 8);
	crc = crc32_raw(crc, m, sizeof(m));
	crc = crc32_raw(crc, pkt + sizeof(m), len - sizeof(m) - 4);
	return ~crc;
}

/* What a datagram is made of; tests spoil one field at a time. */
struct dgram {
	uint8_t opcode, flags_extra, tver;
	int pad;			/* -1: the right one */
	uint32_t dqpn, qkey;
	int imm;
	uint32_t imm_val;
	const char *daddr;
	uint32_t len;			/* payload */
	uint8_t fill;
	int udp_len_delta;		/* added to the UDP length field */
	int truncate;			/* bytes cut off the end */
	int bad_icrc;
};

static size_t build(uint8_t *b, const struct dgram *d)
{
	uint32_t pad = d->pad >= 0 ? (uint32_t)d->pad : (-d->len & 3);
	uint32_t hdrs = 12 + 8 + (d->imm ? 4 : 0);
	uint32_t l4 = 8 + hdrs + d->len + pad + 4;
	size_t len = 20 + l4;
	uint8_t *p;

	memset(b, 0, len);
	b[0] = 0x45;
	b[2] = len >> 8;
	b[3] = len;
	b[4] = 0x12;			/* id: set, so the kernel keeps it */
	b[5] = 0x34;
	b[6] = 0x40;			/* DF */
	b[8] = 64;
	b[9] = IPPROTO_UDP;
	inet_pton(AF_INET, W_PEER, b + 12);
	inet_pton(AF_INET, d->daddr ? d->daddr : W_ME, b + 16);
	b[20] = 0xc0;			/* UDP source port 0xc001 */
	b[21] = 0x01;
	b[22] = 4791 >> 8;
	b[23] = 4791 & 0xff;
	b[24] = (l4 + d->udp_len_delta) >> 8;
	b[25] = (l4 + d->udp_len_delta);
	p = b + 28;			/* BTH */
	p[0] = d->opcode;
	p[1] = (pad & 3) << 4 | d->flags_extra | (d->tver & 0xf);
	p[2] = p[3] = 0xff;
	p[5] = d->dqpn >> 16;
	p[6] = d->dqpn >> 8;
	p[7] = d->dqpn;
	p[11] = 7;			/* PSN */
	p += 12;			/* DETH */
	p[0] = d->qkey >> 24;
	p[1] = d->qkey >> 16;
	p[2] = d->qkey >> 8;
	p[3] = d->qkey;
	p[5] = (uint8_t)(W_SQP >> 16);
	p[6] = (uint8_t)(W_SQP >> 8);
	p[7] = (uint8_t)W_SQP;
	p += 8;
	if (d->imm) {
		uint32_t v = htonl(d->imm_val);

		memcpy(p, &v, 4);
		p += 4;
	}
	memset(p, d->fill, d->len);
	{
		uint32_t c = icrc(b, len) ^ (d->bad_icrc ? 1 : 0);

		/* Little end first. */
		b[len - 4] = c;
		b[len - 3] = c >> 8;
		b[len - 2] = c >> 16;
		b[len - 1] = c >> 24;
	}
	return len - d->truncate;
}

FIXTURE(wire) {
	struct env e;
	struct ep x;
	int raw;
	int made;
};

/*
 * Where srnic's netdev is: in the initial namespace, or in a namespace of
 * its own (the device routes and receives in its netdev's namespace).
 */
FIXTURE_VARIANT(wire) {
	int in_ns;
};
FIXTURE_VARIANT_ADD(wire, init_ns) { .in_ns = 0 };
FIXTURE_VARIANT_ADD(wire, own_ns) { .in_ns = 1 };

#define W_MY_NS "srwme"

/* Runs @cmd inside the peer's namespace. */
#define NS "ip netns exec " W_NS " "

static int ipv4_gid_ready(const char *dev)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "grep -qs '0000:0000:0000:0000:0000:ffff:0a4d:0001' "
		 "/sys/class/infiniband/%s/ports/1/gids/*", dev);
	return !sh("%s", cmd);
}

FIXTURE_SETUP(wire)
{
	struct qp_opts o;
	int self_ns, ns;

	const char *me = variant->in_ns ? "ip netns exec " W_MY_NS " " : "";

	sh("rdma link del " W_DEV " 2>/dev/null; ip link del " W_VETH "0 2>/dev/null;"
	   " ip netns exec " W_MY_NS " ip link del " W_VETH "0 2>/dev/null;"
	   " ip netns del " W_NS " 2>/dev/null; ip netns del " W_MY_NS " 2>/dev/null");
	ASSERT_EQ(0, sh("ip netns add " W_NS " && "
			"ip link add " W_VETH "0 type veth peer name " W_VETH "1 && "
			"ip link set " W_VETH "1 netns " W_NS));
	self->made = 1;
	if (variant->in_ns)
		ASSERT_EQ(0, sh("ip netns add " W_MY_NS " && ip link set " W_VETH "0 netns "
				W_MY_NS));
	/*
	 * No duplicate address detection: while the link-local address is
	 * tentative the core cannot resolve the UD QP's address handle.
	 */
	ASSERT_EQ(0, sh("%ssysctl -qw net.ipv6.conf." W_VETH "0.accept_dad=0 && "
			"%sip addr add " W_ME "/24 dev " W_VETH "0 && "
			"%sip link set " W_VETH "0 up && "
			NS "ip addr add " W_PEER "/24 dev " W_VETH "1 && "
			NS "ip link set " W_VETH "1 up && "
			"%srdma link add " W_DEV " type srnic netdev " W_VETH "0", me, me, me, me));
	ASSERT_TRUE(wait_until(ipv4_gid_ready, W_DEV, 1, 10000));
	ASSERT_EQ(0, env_open_dev(&self->e, W_DEV));
	o = qp_defaults(&self->e, IBV_QPT_UD);
	o.recv_wr = 256;
	ASSERT_EQ(0, ep_create(&self->e, &o, &self->x));
	ASSERT_EQ(0, ep_connect(&self->x, self->x.qp->qp_num));
	for (int i = 0; i < 256; i++)
		ASSERT_EQ(0, post_recv(&self->x, i, (size_t)i * 4096, 4096));
	/* The raw socket is made in the peer's namespace and stays there. */
	self_ns = open("/proc/self/ns/net", O_RDONLY);
	ns = open("/var/run/netns/" W_NS, O_RDONLY);
	ASSERT_LE(0, self_ns);
	ASSERT_LE(0, ns);
	ASSERT_EQ(0, setns(ns, CLONE_NEWNET));
	self->raw = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	ASSERT_EQ(0, setns(self_ns, CLONE_NEWNET));
	close(ns);
	close(self_ns);
	ASSERT_LE(0, self->raw);
}

FIXTURE_TEARDOWN(wire)
{
	if (self->raw > 0)
		close(self->raw);
	ep_destroy(&self->x);
	env_close(&self->e);
	if (self->made)
		sh("rdma link del " W_DEV "; ip link del " W_VETH "0 2>/dev/null;"
		   " ip netns del " W_NS "; ip netns del " W_MY_NS " 2>/dev/null");
}

static struct dgram good(const struct ep *x, uint32_t len, uint8_t fill)
{
	return (struct dgram){
		.opcode = 0x64, .pad = -1, .dqpn = x->qp->qp_num, .qkey = W_QKEY,
		.len = len, .fill = fill,
	};
}

static int send_pkt(int raw, const struct dgram *d)
{
	static uint8_t b[4096];
	struct sockaddr_in to = { .sin_family = AF_INET };
	size_t len = build(b, d);

	/* To srnic's side whatever the header says: its MAC, then its hook. */
	inet_pton(AF_INET, W_ME, &to.sin_addr);
	return sendto(raw, b, len, 0, (struct sockaddr *)&to, sizeof(to)) == (ssize_t)len ?
		       0 : -1;
}

static long long counter(const char *name)
{
	char path[256], *s;
	long long v;

	snprintf(path, sizeof(path), "/sys/class/infiniband/" W_DEV "/ports/1/hw_counters/%s",
		 name);
	s = slurp(path);
	v = s ? atoll(s) : -1;
	free(s);
	return v;
}

/* The next completion is the sentinel's (fill 0x5e): nothing came before it. */
static void expect_sentinel_first(struct __test_metadata *_metadata, FIXTURE_DATA(wire) *self)
{
	struct dgram s = good(&self->x, 64, 0x5e);
	struct ibv_wc wc;

	ASSERT_EQ(0, send_pkt(self->raw, &s));
	ASSERT_EQ(1, poll_one(self->x.cq, &wc, WC_MS));
	ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(40 + 64u, wc.byte_len);
	EXPECT_EQ(-1, all_eq(self->x.buf + wc.wr_id * 4096 + 40, 64, 0x5e))
		TH_LOG("the first completion is not the sentinel's");
	ASSERT_EQ(0, post_recv(&self->x, wc.wr_id, wc.wr_id * 4096, 4096));
}

/* A good datagram, with and without immediate: data, GRH, source QP, immediate. */
TEST_F(wire, good_datagrams_delivered)
{
	for (int imm = 0; imm < 2; imm++) {
		struct dgram d = good(&self->x, 1001, 0x40 + imm);
		const uint8_t *g;
		struct ibv_wc wc;
		uint8_t peer[4];

		d.opcode = imm ? 0x65 : 0x64;
		d.imm = imm;
		d.imm_val = 0xabcd0000 + imm;
		ASSERT_EQ(0, send_pkt(self->raw, &d));
		ASSERT_EQ(1, poll_one(self->x.cq, &wc, WC_MS));
		ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
		EXPECT_EQ(IBV_WC_RECV, wc.opcode);
		EXPECT_EQ(40 + 1001u, wc.byte_len);
		EXPECT_EQ(W_SQP, wc.src_qp);
		EXPECT_TRUE(wc.wc_flags & IBV_WC_GRH);
		EXPECT_EQ(imm, !!(wc.wc_flags & IBV_WC_WITH_IMM));
		if (imm)
			EXPECT_EQ(0xabcd0001, ntohl(wc.imm_data));
		g = self->x.buf + wc.wr_id * 4096;
		EXPECT_EQ(-1, all_eq(g + 40, 1001, 0x40 + imm));
		/* The IPv4 header in the GRH's last 20 bytes: from the peer, to us. */
		inet_pton(AF_INET, W_PEER, peer);
		EXPECT_EQ(0x45, g[20]);
		EXPECT_EQ(0, memcmp(g + 32, peer, 4));
		ASSERT_EQ(0, post_recv(&self->x, wc.wr_id, wc.wr_id * 4096, 4096));
	}
}

/* A packet whose ICRC is wrong: dropped, counted as such, nothing delivered. */
TEST_F(wire, bad_icrc_dropped_and_counted)
{
	long long icrc0 = counter("rx_icrc_errors"), drop0 = counter("rx_dropped");
	struct dgram d = good(&self->x, 100, 0xbb);

	ASSERT_LE(0, icrc0);
	d.bad_icrc = 1;
	ASSERT_EQ(0, send_pkt(self->raw, &d));
	expect_sentinel_first(_metadata, self);
	/* The core caches counters for a few milliseconds: polled, bounded. */
	for (int t = 0; t < 2000 && counter("rx_icrc_errors") == icrc0; t++)
		usleep(1000);
	EXPECT_EQ(1, counter("rx_icrc_errors") - icrc0);
	EXPECT_EQ(0, counter("rx_dropped") - drop0);
}

/* Every other field wrong in turn: each dropped and counted once, nothing delivered. */
TEST_F(wire, bad_packets_dropped_and_counted)
{
	long long icrc0 = counter("rx_icrc_errors"), drop0 = counter("rx_dropped");
	struct dgram d[16];
	int n = 0;

	ASSERT_LE(0, icrc0);
	for (int i = 0; i < 16; i++)
		d[i] = good(&self->x, 100, 0xbb);
	d[n++].udp_len_delta = -100;		/* shorter than its headers */
	d[n++].udp_len_delta = 64;		/* longer than the packet */
	d[n++].truncate = 30;			/* cut: the UDP length lies */
	d[n].pad = 3, d[n++].len = 2;		/* payload and pad not 4-byte aligned */
	d[n].pad = 3, d[n++].len = 0;		/* pad without payload, misaligned */
	d[n++].tver = 1;			/* transport version 1 */
	d[n++].opcode = 0x04;			/* RC SEND ONLY */
	d[n++].opcode = 0xff;
	d[n++].dqpn = 0;
	d[n++].dqpn = 0xffffff;
	d[n++].qkey = W_QKEY + 1;
	d[n].len = 0, d[n].udp_len_delta = -8, d[n++].truncate = 8; /* no DETH */
	d[n++].daddr = "10.77.0.9";		/* not our address */
	for (int i = 0; i < n; i++) {
		ASSERT_EQ(0, send_pkt(self->raw, &d[i])) TH_LOG("packet %d", i);
	}
	expect_sentinel_first(_metadata, self);
	/*
	 * The packets whose QPN is not the QP's may be another engine
	 * thread's to drop, and the core caches counters for a few
	 * milliseconds: bounded, polling the counters themselves.
	 */
	for (int t = 0; t < 2000 && counter("rx_dropped") - drop0 +
			counter("rx_icrc_errors") - icrc0 < n; t++)
		usleep(1000);
	EXPECT_EQ(n, counter("rx_dropped") - drop0 + counter("rx_icrc_errors") - icrc0);
}

/* Seeded random packets after a good header: no crash, the QP still receives. */
TEST_F(wire, random_garbage_survived)
{
	unsigned int seed = getenv("SRNIC_ADV_SEED") ? atoi(getenv("SRNIC_ADV_SEED")) : 4791;
	static uint8_t b[2048];
	struct sockaddr_in to = { .sin_family = AF_INET };
	int sent = 0;

	srand(seed);
	inet_pton(AF_INET, W_ME, &to.sin_addr);
	for (int i = 0; i < 3000; i++) {
		struct dgram d = good(&self->x, rand() % 1200, rand());
		size_t len = build(b, &d), k;

		/* Keep the IP and UDP headers (or it is not ours); spoil the rest. */
		for (k = 0; k < 1 + (size_t)rand() % 8; k++)
			b[28 + rand() % (len - 28)] = rand();
		if (rand() % 2) {
			uint32_t c = icrc(b, len);

			/* Half of them with a right ICRC: parsed further. */
			b[len - 4] = c, b[len - 3] = c >> 8;
			b[len - 2] = c >> 16, b[len - 1] = c >> 24;
		}
		if (rand() % 4 == 0)
			len -= rand() % (len - 28);
		sent += sendto(self->raw, b, len, 0, (struct sockaddr *)&to, sizeof(to)) ==
			(ssize_t)len;
	}
	TH_LOG("seed %u: %d random packets sent", seed, sent);
	EXPECT_LT(2900, sent);
	/* Whatever was delivered (a random spoil may leave a good datagram), then the sentinel. */
	for (int tries = 0; tries < 300; tries++) {
		struct ibv_wc wc;

		struct dgram s = good(&self->x, 64, 0x5e);

		ASSERT_EQ(0, send_pkt(self->raw, &s));
		ASSERT_EQ(1, poll_one(self->x.cq, &wc, WC_MS));
		ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
		ASSERT_EQ(0, post_recv(&self->x, wc.wr_id, wc.wr_id * 4096, 4096));
		if (wc.byte_len == 40 + 64 &&
		    all_eq(self->x.buf + wc.wr_id * 4096 + 40, 64, 0x5e) == -1)
			break;
	}
}

TEST_HARNESS_MAIN
