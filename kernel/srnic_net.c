// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * RoCEv2 on the wire, the packet layer: packets to and from UDP port 4791
 * through the netdev a device is bound to.  UD datagrams are sent and
 * received here; RC and UC packets are checked here and handed to the wire
 * requester (srnic_net_req.c: acknowledgements, READ responses) or the
 * wire responder (srnic_net_resp.c: requests) of their QP.
 *
 * Receiving without a socket: rdma_rxe holds a UDP socket on 4791 from
 * the moment it loads (wildcard address, no reuse, no device binding), so
 * srnic cannot open its own.  A netfilter hook at PRE_ROUTING, in every
 * network namespace, takes the UDP 4791 packets that arrive on a netdev an
 * srnic device is bound to and are addressed to one of its GIDs (or to a
 * group), before any socket lookup, and leaves every other packet (rxe's on
 * its own netdevs, and those a router forwards, among them) to the stack.
 * Either module may load first.
 *
 * The hook runs in softirq: it only queues the packet for the engine
 * thread of its destination QP and kicks it.  The thread parses and
 * checks it in process context, inside srnic_engine_srcu (no sleeping
 * allocation there), and hands it to the QP's responder.  A queue holds
 * SRNIC_RXQ_MAX packets at most; more are dropped and counted.
 */
#include <linux/netfilter.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6.h>
#include <net/ip.h>
#include <net/ip6_route.h>
#include <net/ipv6.h>
#include <net/ipv6_stubs.h>
#include <net/net_namespace.h>
#include <net/route.h>
#include <net/udp.h>
#include <linux/hash.h>
#include <linux/crc32.h>

#include "srnic_net.h"
#include "srnic_transport.h"

#define SRNIC_RXQ_MAX		4096	/* packets queued per engine thread */
#define SRNIC_RX_BUDGET		64	/* packets per visit of the queue */

/* ---- receiving ---- */

/*
 * The UDP header of a packet to port 4791 at skb->data (IPv4 or IPv6), with
 * a BTH's worth after it in the linear part; else NULL.  Every packet of
 * the host passes here: the cheap tests first.
 */
static struct udphdr *srnic_net_udp(struct sk_buff *skb, u8 pf)
{
	struct udphdr *udp;
	u32 len;

	if (pf == NFPROTO_IPV4) {
		const struct iphdr *ip = ip_hdr(skb);

		/* RoCEv2 has no options and no fragments (DF). */
		if (ip->protocol != IPPROTO_UDP || ip->ihl != 5 ||
		    ip_is_fragment(ip))
			return NULL;
		len = sizeof(*ip);
	} else {
		if (ipv6_hdr(skb)->nexthdr != IPPROTO_UDP)
			return NULL;
		len = sizeof(struct ipv6hdr);
	}
	if (!pskb_may_pull(skb, len + sizeof(*udp)))
		return NULL;
	udp = (struct udphdr *)(skb_network_header(skb) + len);
	if (udp->dest != htons(SRNIC_ROCE_UDP_PORT) ||
	    !pskb_may_pull(skb, len + sizeof(*udp) + sizeof(struct srnic_bth)))
		return NULL;
	return (struct udphdr *)(skb_network_header(skb) + len);
}

/*
 * srnic's part of a received skb's cb, written as the skb is queued for
 * its thread: its QP, the device's connections begun by then (@gen,
 * srnic_net_resp_forget()), and, held behind a READ, what
 * srnic_net_resp_hold() found it to be.
 */
struct srnic_rx_cb {
	u64 gen;
	u32 qpn;
	u8 class;		/* enum srnic_held */
};

static struct srnic_rx_cb *srnic_rx_cb(struct sk_buff *skb)
{
	BUILD_BUG_ON(sizeof(struct srnic_rx_cb) > sizeof(skb->cb));
	BUILD_BUG_ON(SRNIC_HELD_EXCESS > U8_MAX);
	return (struct srnic_rx_cb *)skb->cb;
}

/*
 * Whether a packet to port 4791 on @sdev's netdev is for @sdev: to one of
 * its GIDs, or to a group (UD; its QPs' attachments decide).  A router's
 * netdev carries RoCEv2 between other hosts, and a host's other addresses
 * may have their own RoCE device (rxe) or socket.
 */
static bool srnic_net_for_us(struct srnic_dev *sdev, const struct sk_buff *skb,
			     u8 pf)
{
	struct in6_addr dgid;

	if (pf == NFPROTO_IPV4)
		ipv6_addr_set_v4mapped(ip_hdr(skb)->daddr, &dgid);
	else
		dgid = ipv6_hdr(skb)->daddr;
	return srnic_gid_is_mcast(dgid.s6_addr) ||
	       srnic_gid_is_ours(sdev, dgid.s6_addr);
}

static unsigned int srnic_net_hook(void *priv, struct sk_buff *skb,
				   const struct nf_hook_state *state)
{
	struct udphdr *udp = srnic_net_udp(skb, state->pf);
	const struct srnic_bth *bth;
	struct srnic_thread *t;
	struct srnic_rx_cb *cb;
	struct srnic_dev *sdev;

	if (!udp)
		return NF_ACCEPT;
	sdev = srnic_dev_by_netdev_rcu(state->in);
	if (!sdev)
		return NF_ACCEPT;
	/*
	 * The IP stack's copy of a multicast this host sent (it loops one
	 * back once the host joined the group): the device delivered to its
	 * own QPs already (srnic_mcast_deliver).
	 */
	if (skb->pkt_type == PACKET_LOOPBACK) {
		kfree_skb(skb);
		return NF_STOLEN;
	}
	/* Another host's (forwarded) or another device's: the stack's. */
	if (!srnic_net_for_us(sdev, skb, state->pf))
		return NF_ACCEPT;
	bth = (const struct srnic_bth *)(udp + 1);
	cb = srnic_rx_cb(skb);
	memset(cb, 0, sizeof(*cb));
	cb->qpn = srnic_bth_qpn(bth);
	cb->gen = atomic64_read(&sdev->rx_gen);
	t = &sdev->sched.threads[srnic_qp_engine(cb->qpn, sdev->sched.nthreads)];
	if (skb_queue_len(&t->rxq) >= SRNIC_RXQ_MAX) {
		srnic_count(sdev, SRNIC_PC_RX_DROPPED);
		kfree_skb(skb);
		return NF_STOLEN;
	}
	skb_queue_tail(&t->rxq, skb);
	srnic_thread_kick(t);
	return NF_STOLEN;
}

static const struct nf_hook_ops srnic_nf_ops[] = {
	{
		.hook = srnic_net_hook,
		.pf = NFPROTO_IPV4,
		.hooknum = NF_INET_PRE_ROUTING,
		.priority = NF_IP_PRI_FIRST,
	},
	{
		.hook = srnic_net_hook,
		.pf = NFPROTO_IPV6,
		.hooknum = NF_INET_PRE_ROUTING,
		.priority = NF_IP6_PRI_FIRST,
	},
};

/* The GIDs and the traffic fields of the packet's IP header. */
static void srnic_pkt_addrs(struct srnic_pkt *p)
{
	if (p->ipv4) {
		const struct iphdr *ip = (const struct iphdr *)p->l3;

		ipv6_addr_set_v4mapped(ip->saddr, (struct in6_addr *)p->sgid);
		ipv6_addr_set_v4mapped(ip->daddr, (struct in6_addr *)p->dgid);
		p->hop_limit = ip->ttl;
		p->traffic_class = ip->tos;
		p->flow_label = 0;
	} else {
		const struct ipv6hdr *ip6 = (const struct ipv6hdr *)p->l3;

		memcpy(p->sgid, &ip6->saddr, 16);
		memcpy(p->dgid, &ip6->daddr, 16);
		p->hop_limit = ip6->hop_limit;
		p->traffic_class = ip6_tclass(ip6_flowinfo(ip6));
		p->flow_label = be32_to_cpu(ip6_flowlabel(ip6));
	}
}

/*
 * A packet of at most this many bytes is made linear (a copy of a few
 * bytes); a longer one keeps its payload in page fragments, as a virtio or
 * veth netdev gives it, for the responder to copy from into its place.
 */
#define SRNIC_PKT_LINEAR_MAX	256

/*
 * The headers of a queued packet into its linear part (the hook pulled
 * them up to the BTH, whose opcode says how many follow), or all of it.
 */
static bool srnic_pkt_pull(struct sk_buff *skb)
{
	u32 bth = skb_network_offset(skb) + sizeof(struct udphdr) +
		  (skb->protocol == htons(ETH_P_IP) ? sizeof(struct iphdr) :
						      sizeof(struct ipv6hdr));
	u32 hdrs = bth + sizeof(struct srnic_bth);

	if (!skb_is_nonlinear(skb))
		return true;
	if (skb->len <= SRNIC_PKT_LINEAR_MAX || skb_has_frag_list(skb) ||
	    IS_ENABLED(CONFIG_HIGHMEM))
		return !skb_linearize(skb);
	if (!pskb_may_pull(skb, hdrs))
		return false;
	/* skb->data as it is after the pull: the opcode's byte. */
	return pskb_may_pull(skb, hdrs + srnic_opcode[skb->data[bth]].hdr_len);
}

/* The lengths and version of a queued packet, its headers linear. */
static bool srnic_pkt_check(struct srnic_dev *sdev, struct sk_buff *skb,
			    struct srnic_pkt *p)
{
	const struct udphdr *udp;
	u32 l3_len, ulen, min;

	if (!srnic_pkt_pull(skb))
		return false;
	p->sdev = sdev;
	p->skb = skb;
	p->l3 = skb_network_header(skb);
	p->ipv4 = skb->protocol == htons(ETH_P_IP);
	l3_len = p->ipv4 ? sizeof(struct iphdr) : sizeof(struct ipv6hdr);
	udp = (const struct udphdr *)(p->l3 + l3_len);
	ulen = ntohs(udp->len);
	min = sizeof(*udp) + sizeof(struct srnic_bth) + SRNIC_ICRC_BYTES;
	/* The UDP length is the packet's, within what arrived. */
	if (ulen < min || (const u8 *)udp - skb->data + ulen > skb->len)
		return false;
	p->bth = (const struct srnic_bth *)(udp + 1);
	if (srnic_bth_tver(p->bth))
		return false;
	p->next = (const u8 *)(p->bth + 1);
	p->after_bth = ulen - min;
	p->l4_len = ulen;
	p->psn = srnic_bth_psn(p->bth);
	return true;
}

/*
 * The ICRC of a received packet at @skb's data, whose headers are linear
 * and whose payload may be in page fragments (srnic_skb_ptr); @l4_len as
 * for srnic_icrc(), checked against the skb's length.
 */
static u32 srnic_icrc_skb(const struct sk_buff *skb, bool ipv4, u32 l4_len)
{
	u32 hdrs = (ipv4 ? sizeof(struct iphdr) : sizeof(struct ipv6hdr)) +
		   sizeof(struct udphdr) + sizeof(struct srnic_bth);
	const u8 *l3 = skb_network_header(skb);
	u32 crc = srnic_icrc_headers(l3, ipv4, 0);
	u32 off = l3 - skb->data + hdrs;
	u32 len = l4_len - sizeof(struct udphdr) - sizeof(struct srnic_bth) -
		  SRNIC_ICRC_BYTES;

	/* srnic_icrc.c masks these by offset. */
	BUILD_BUG_ON(sizeof(struct iphdr) != SRNIC_IPV4_HLEN ||
		     offsetof(struct iphdr, tos) != SRNIC_IPV4_TOS ||
		     offsetof(struct iphdr, ttl) != SRNIC_IPV4_TTL ||
		     offsetof(struct iphdr, check) != SRNIC_IPV4_CHECK);
	BUILD_BUG_ON(sizeof(struct ipv6hdr) != SRNIC_IPV6_HLEN ||
		     offsetof(struct ipv6hdr, flow_lbl) != 1 ||
		     offsetof(struct ipv6hdr, hop_limit) != SRNIC_IPV6_HOP_LIMIT);
	BUILD_BUG_ON(sizeof(struct udphdr) != SRNIC_UDP_HLEN ||
		     offsetof(struct udphdr, check) != SRNIC_UDP_CHECK);
	while (len) {
		size_t c;
		const u8 *s = srnic_skb_ptr(skb, off, &c);

		if (!s)
			break;
		c = min_t(size_t, c, len);
		crc = crc32_le(crc, s, c);
		off += c;
		len -= c;
	}
	return ~crc;
}

/*
 * Checks a queued packet's lengths, version and ICRC; fills @p.  Its
 * headers are linear afterwards.  False: drop it (counted here).
 */
static bool srnic_pkt_parse(struct srnic_dev *sdev, struct sk_buff *skb,
			    struct srnic_pkt *p)
{
	__le32 icrc;

	if (!srnic_pkt_check(sdev, skb, p) ||
	    skb_copy_bits(skb, p->next + p->after_bth - skb->data, &icrc,
			  sizeof(icrc))) {
		srnic_count(sdev, SRNIC_PC_RX_DROPPED);
		return false;
	}
	/* An RC FLUSH from rxe carries rxe's own ICRC (srnic_icrc.c). */
	if (le32_to_cpu(icrc) != srnic_icrc_skb(skb, p->ipv4, p->l4_len) &&
	    (p->bth->opcode != (SRNIC_OP_RC | SRNIC_OP_FLUSH) ||
	     skb_is_nonlinear(skb) ||
	     le32_to_cpu(icrc) != srnic_icrc_rxe_flush(p->l3, p->ipv4, p->l4_len))) {
		srnic_count(sdev, SRNIC_PC_ICRC_ERRORS);
		return false;
	}
	if (skb_is_nonlinear(skb))
		srnic_count(sdev, SRNIC_PC_RX_FRAGS);
	srnic_pkt_addrs(p);
	return true;
}


/* The datagram @p carries, as the responder sees a message. */
static void srnic_net_ud_msg(struct srnic_engine *eng,
			     const struct srnic_pkt *p, struct srnic_msg *m)
{
	const struct srnic_deth *deth = (const struct srnic_deth *)p->next;
	bool imm = p->flags & SRNIC_OPF_IMM;

	memset(m, 0, sizeof(*m));
	m->opcode = imm ? IB_UVERBS_WR_SEND_WITH_IMM : IB_UVERBS_WR_SEND;
	m->has_imm = imm;
	if (imm)
		m->imm = get_unaligned((const __be32 *)(deth + 1));
	m->solicited = srnic_bth_se(p->bth);
	m->len = p->plen;
	m->plen = m->len;
	srnic_sg_init_skb(&eng->wire, p->skb, p->poff, m->len);
	m->payload = &eng->wire;
	m->src_qpn = srnic_deth_sqp(deth);
	m->src_dev = -1;
	m->qkey = be32_to_cpu(deth->qkey);
	m->dqpn = srnic_bth_qpn(p->bth);
	m->sgid = p->sgid;
	m->dgid = p->dgid;
	m->hop_limit = p->hop_limit;
	m->traffic_class = p->traffic_class;
	m->flow_label = p->flow_label;
}

/*
 * A UD SEND ONLY (with immediate): a datagram for a UD QP of ours, or for
 * the QPs attached to a multicast group.  False if it names no such QP, or
 * its lengths or Q_Key are wrong.  (A QP that does not receive, or has no
 * receive WQE, loses it: its responder counts.)
 */
static bool srnic_net_recv_ud(struct srnic_engine *eng, struct srnic_pkt *p)
{
	struct srnic_msg m;
	struct srnic_qp *dst;
	enum srnic_resp r;

	srnic_net_ud_msg(eng, p, &m);
	if (srnic_gid_is_mcast(p->dgid)) {
		if (m.dqpn != SRNIC_MCAST_QPN)
			return false;
		srnic_mcast_deliver(eng, p->sdev, &m, 0);
		return true;
	}
	dst = srnic_qp_get(p->sdev, m.dqpn);
	if (!dst)
		return false;
	if (!srnic_qpt_ud(dst->ibqp.qp_type) ||
	    READ_ONCE(dst->attr.qkey) != m.qkey) {
		srnic_qp_put(dst);
		return false;
	}
	r = srnic_resp_recv(eng, dst, &m, true);
	if (r == SRNIC_RESP_FAULT) {
		/* The datagram is lost; its receive WQE waits for the next. */
		srnic_odp_fault_async(&eng->remote.fault, true);
		r = SRNIC_RESP_DROP;
	}
	srnic_resp_account(dst, &m, r);
	srnic_qp_put(dst);
	return true;
}

/*
 * A request @p for @qp while its READ's responses go out: it waits behind
 * them in the QP's queue (srnic_net_resp_reads), so that requests execute
 * in order, with what it is (srnic_net_resp_hold).  False when the queue
 * is full: dropped, the requester sends it again.
 */
static bool srnic_net_hold(struct srnic_qp *qp, const struct srnic_pkt *p,
			   struct sk_buff *skb)
{
	struct srnic_rx_cb *cb = srnic_rx_cb(skb);

	if (skb_queue_len(&qp->w.held) >= SRNIC_WIRE_HELD_MAX)
		return false;
	cb->class = srnic_net_resp_hold(qp, p);
	skb_queue_tail(&qp->w.held, skb);
	return true;
}

/*
 * The next request held behind @qp's READ, once no READ goes out: taken
 * from the queue under the responder's lock, with what it was
 * (srnic_net_resp_unhold).  NULL when there is none, or a READ goes out.
 */
static struct sk_buff *srnic_net_unhold(struct srnic_qp *qp)
{
	struct sk_buff *skb = NULL;

	spin_lock(&qp->w.rx_lock);
	if (!qp->w.rd.active)
		skb = skb_dequeue(&qp->w.held);
	if (skb)
		srnic_net_resp_unhold(qp, srnic_rx_cb(skb)->class);
	spin_unlock(&qp->w.rx_lock);
	return skb;
}

/*
 * A request for @qp while its READ's responses go out: held behind them,
 * or, a kept READ asked again (srnic_net_resp_read_again), in place of
 * what was held (dropped: the requester sends it again), and answered at
 * once in place of the READ going out when at or before it.  Returns
 * srnic_net_recv_request()'s.
 */
static int srnic_net_recv_reading(struct srnic_engine *eng,
				  struct srnic_qp *qp,
				  const struct srnic_pkt *p, struct sk_buff *skb)
{
	enum srnic_again again = srnic_net_resp_read_again(qp, p);

	if (again != SRNIC_AGAIN_NO)
		skb_queue_purge(&qp->w.held);
	if (again == SRNIC_AGAIN_NOW) {
		srnic_net_resp_rx(eng, qp, p);
		return 0;
	}
	return srnic_net_hold(qp, p, skb) ? 1 : -1;
}

/*
 * Whether @p, checked against @qp's connection before the responder's
 * lock was taken, is still for it under the lock: a reset and a new
 * connection may have come between (the state is published first, then
 * the path, then the responder forgotten under the lock).  A packet taken
 * from the netdev before the connection began, waiting in the thread's
 * queue or held behind a READ, is of an earlier one, whatever its
 * addresses and PSN say.
 */
static bool srnic_net_still_for(const struct srnic_qp *qp,
				const struct srnic_pkt *p)
{
	return srnic_qp_receives(READ_ONCE(qp->state)) &&
	       READ_ONCE(qp->xport) == &srnic_wire &&
	       !memcmp(p->sgid, qp->w.dgid, 16) &&
	       !memcmp(p->dgid, qp->sgid, 16) &&
	       srnic_pkt_since(p, qp->w.rx_gen);
}

/*
 * A request for @qp's responder, under its lock: a reset or a new
 * connection (srnic_net_resp_forget) waits for the packet, and a packet
 * after it finds the QP no longer receiving, or the responder started anew.
 */
static int srnic_net_recv_request(struct srnic_engine *eng, struct srnic_qp *qp,
				  const struct srnic_pkt *p, struct sk_buff *skb)
{
	int ret = 0;

	spin_lock(&qp->w.rx_lock);
	if (!srnic_net_still_for(qp, p))
		ret = -1;
	else if (!qp->w.rd.active)
		srnic_net_resp_rx(eng, qp, p);
	else
		ret = srnic_net_recv_reading(eng, qp, p, skb);
	/* Held beyond the resources, it was that one (srnic_net_unhold). */
	qp->w.rd_excess = false;
	spin_unlock(&qp->w.rx_lock);
	srnic_net_ack_prev(eng);
	return ret;
}

/*
 * The QP type a connected packet is for: its service's, and for XRC the
 * target of a request, the initiator of an answer.
 */
static enum ib_qp_type srnic_pkt_qpt(const struct srnic_pkt *p)
{
	switch (p->bth->opcode & SRNIC_OP_SERVICE_MASK) {
	case SRNIC_OP_RC:
		return IB_QPT_RC;
	case SRNIC_OP_UC:
		return IB_QPT_UC;
	default:
		return (p->flags & SRNIC_OPF_REQ) ? IB_QPT_XRC_TGT :
						    IB_QPT_XRC_INI;
	}
}

/*
 * An RC, UC or XRC packet: for a QP of the opcode's service, connected
 * across the wire to the packet's source address (a QP number alone would
 * let any host in).  Requests go to the QP's responder, answers to its
 * requester.  Returns 0 when done with @skb, 1 when it was kept to run
 * later, -1 to drop it.
 */
static int srnic_net_recv_connected(struct srnic_engine *eng,
				    struct srnic_pkt *p, struct sk_buff *skb)
{
	struct srnic_qp *qp;
	int ret = 0;

	qp = srnic_qp_get(p->sdev, srnic_bth_qpn(p->bth));
	if (!qp)
		return -1;
	/* A QP in error, or not yet receiving, answers nothing. */
	if (qp->ibqp.qp_type != srnic_pkt_qpt(p) ||
	    READ_ONCE(qp->xport) != &srnic_wire ||
	    memcmp(p->sgid, qp->w.dgid, 16) || memcmp(p->dgid, qp->sgid, 16) ||
	    !srnic_qp_receives(READ_ONCE(qp->state)))
		ret = -1;
	else if (!(p->flags & SRNIC_OPF_REQ))
		srnic_net_req_rx(eng, qp, p);
	else
		ret = srnic_net_recv_request(eng, qp, p, skb);
	srnic_qp_put(qp);
	return ret;
}

/*
 * Where the packet's parts are, by its opcode: the extension headers it
 * must have, then payload and pad, a multiple of 4 bytes in all.  False:
 * an opcode srnic does not know, or lengths that do not fit it.
 */
static bool srnic_pkt_layout(struct srnic_pkt *p)
{
	const struct srnic_opcode_info *op = &srnic_opcode[p->bth->opcode];
	u32 pad = srnic_bth_pad(p->bth);

	p->flags = op->flags;
	if (!(op->flags & SRNIC_OPF_VALID) ||
	    p->after_bth < op->hdr_len + pad || (p->after_bth & 3))
		return false;
	p->hdr_end = p->next + op->hdr_len;
	/* Headers are linear (srnic_pkt_pull): past them is hostile. */
	if (p->hdr_end > skb_tail_pointer(p->skb))
		return false;
	p->poff = p->hdr_end - p->skb->data;
	p->plen = p->after_bth - op->hdr_len - pad;
	p->op = p->bth->opcode & ~SRNIC_OP_SERVICE_MASK;
	p->xrc_srqn = 0;
	/* The XRCETH read here: the headers after it are where RC has them. */
	if (op->flags & SRNIC_OPF_XRCETH) {
		p->xrc_srqn = srnic_xrceth_srqn((const struct srnic_xrceth *)p->next);
		p->next += sizeof(struct srnic_xrceth);
	}
	return p->plen == 0 || (op->flags & SRNIC_OPF_PAYLOAD);
}

/* One packet from the queue: parsed, checked, handed to its responder. */
static void srnic_net_recv(struct srnic_thread *t, struct sk_buff *skb)
{
	struct srnic_pkt p;

	if (!srnic_pkt_parse(t->sdev, skb, &p))
		goto drop;
	p.gen = srnic_rx_cb(skb)->gen;
	/*
	 * The port's one P_Key is every QP's: a packet of another partition
	 * is dropped and counted, whatever it is for (rxe's check_keys()).
	 */
	if (!srnic_pkey_match(srnic_bth_pkey(p.bth), SRNIC_DEFAULT_PKEY)) {
		srnic_count(t->sdev, SRNIC_PC_RX_BAD_PKEY);
		goto drop;
	}
	if (!srnic_pkt_layout(&p))
		goto count;
	/* The hook took it for a GID of ours or a group; a group's is UD's. */
	if (!(p.flags & SRNIC_OPF_DETH) && srnic_gid_is_mcast(p.dgid))
		goto count;
	if (p.flags & SRNIC_OPF_DETH) {
		if (!srnic_net_recv_ud(&t->eng, &p))
			goto count;
	} else {
		int r = srnic_net_recv_connected(&t->eng, &p, skb);

		if (r > 0)
			return;
		if (r < 0)
			goto count;
	}
	consume_skb(skb);
	return;
count:
	srnic_count(t->sdev, SRNIC_PC_RX_DROPPED);
drop:
	kfree_skb(skb);
}

/*
 * The READs whose responses go out from thread @t's QPs: the next part of
 * each, then, where one is over, the requests that waited behind it, until
 * one of them is a READ again.  Returns the QPs served; one that waits for
 * the netdev's queue is not served, and its time goes to @timer.
 */
static int srnic_net_resp_reads(struct srnic_thread *t, unsigned long *timer)
{
	struct srnic_dev *sdev = t->sdev;
	struct srnic_qp *qp;
	struct sk_buff *skb;
	unsigned long i;
	bool more;
	int n = 0;

	xa_for_each_marked(&sdev->qps, i, qp, SRNIC_QP_READING) {
		if (srnic_qp_engine(i, sdev->sched.nthreads) != t->idx)
			continue;
		/* A visit under the responder's lock: a reset waits for it. */
		spin_lock(&qp->w.rx_lock);
		more = srnic_net_resp_read_waits(qp, timer);
		if (!more) {
			n++;
			more = srnic_net_resp_read_next(&t->eng, qp);
			if (!more)
				xa_clear_mark(&sdev->qps, i, SRNIC_QP_READING);
		}
		spin_unlock(&qp->w.rx_lock);
		if (more)
			continue;
		/* Each held request runs as it came, taking the lock itself. */
		while ((skb = srnic_net_unhold(qp)))
			srnic_net_recv(t, skb);
	}
	return n;
}

/*
 * The next packet of @t's queue, unless the fault rx_hold keeps it there
 * (for its QP; the packets behind it wait too) until the fault is turned
 * off (probability 0), looked at each tick, or SRNIC_RX_HOLD_MAX_MS: an
 * engine late to take packets, as a slow kernel's is, for as long as a
 * test needs.
 */
#define SRNIC_RX_HOLD_MAX_MS	60000

static struct sk_buff *srnic_net_rx_next(struct srnic_thread *t,
					 unsigned long *timer)
{
	struct srnic_dev *sdev = t->sdev;
	struct sk_buff *skb;

	if (t->rx_hold_until && time_before(jiffies, t->rx_hold_until) &&
	    test_bit(SRNIC_FAULT_RX_HOLD, &sdev->faults.armed)) {
		srnic_timer_min(timer, jiffies + 1);
		return NULL;
	}
	skb = skb_dequeue(&t->rxq);
	/* The packet held goes once let go, with no new draw. */
	if (!skb || t->rx_hold_until) {
		t->rx_hold_until = 0;
		return skb;
	}
	if (!srnic_should_fail(sdev, SRNIC_FAULT_RX_HOLD, srnic_rx_cb(skb)->qpn))
		return skb;
	t->rx_hold_until = (jiffies + msecs_to_jiffies(SRNIC_RX_HOLD_MAX_MS)) ?: 1;
	skb_queue_head(&t->rxq, skb);
	srnic_timer_min(timer, jiffies + 1);
	return NULL;
}

/*
 * Runs the packets queued for thread @t, SRNIC_RX_BUDGET at most, and the
 * READs its QPs answer; inside srnic_engine_srcu.  Returns the work done;
 * @timer gets the earliest time a READ waits for.
 */
int srnic_net_rx(struct srnic_thread *t, unsigned long *timer)
{
	struct sk_buff *skb;
	int n = 0;

	while (n < SRNIC_RX_BUDGET && (skb = srnic_net_rx_next(t, timer))) {
		WRITE_ONCE(t->rx_taken, t->rx_taken + 1);
		srnic_net_recv(t, skb);
		n++;
	}
	if (xa_marked(&t->sdev->qps, SRNIC_QP_READING))
		n += srnic_net_resp_reads(t, timer);
	srnic_net_ack_flush(&t->eng);
	return n;
}

/* ---- sending ---- */

/*
 * The route a connection found before, if it still holds (a route change
 * makes it stale).  Per CPU: with preemption off, as its users must.
 */
static struct dst_entry *srnic_net_route_cached(struct dst_cache *c, bool ipv4)
{
	struct dst_entry *dst;
	struct in6_addr a6;
	__be32 a4;

	local_bh_disable();
	dst = ipv4 ? (struct dst_entry *)dst_cache_get_ip4(c, &a4) :
		     dst_cache_get_ip6(c, &a6);
	local_bh_enable();
	return dst;
}

static void srnic_net_route_keep(struct dst_cache *c, struct dst_entry *dst,
				 const u8 *sgid, bool ipv4)
{
	local_bh_disable();
	if (ipv4)
		dst_cache_set_ip4(c, dst, *(const __be32 *)(sgid + 12));
	else
		dst_cache_set_ip6(c, dst, (const struct in6_addr *)sgid);
	local_bh_enable();
}

/*
 * The route of a packet from @sgid to @dgid out of @ndev, set on @skb;
 * kept in @cache (a connection's) for its next packets.
 */
static int srnic_net_route(struct net_device *ndev, struct sk_buff *skb,
			   const u8 *sgid, const u8 *dgid, bool ipv4,
			   struct dst_cache *cache)
{
	struct net *net = dev_net(ndev);
	struct dst_entry *dst;

	if (cache) {
		dst = srnic_net_route_cached(cache, ipv4);
		if (dst) {
			skb_dst_set(skb, dst);
			return 0;
		}
	}
	if (ipv4) {
		struct flowi4 fl = {
			.flowi4_oif = ndev->ifindex,
			.flowi4_proto = IPPROTO_UDP,
			.daddr = *(const __be32 *)(dgid + 12),
			.saddr = *(const __be32 *)(sgid + 12),
		};
		struct rtable *rt = ip_route_output_key(net, &fl);

		if (IS_ERR(rt))
			return PTR_ERR(rt);
		dst = &rt->dst;
	} else {
		struct flowi6 fl6 = {
			.flowi6_oif = ndev->ifindex,
			.flowi6_proto = IPPROTO_UDP,
		};

		memcpy(&fl6.daddr, dgid, 16);
		memcpy(&fl6.saddr, sgid, 16);
		dst = ipv6_stub->ipv6_dst_lookup_flow(net, NULL, &fl6, NULL);
		if (IS_ERR(dst))
			return PTR_ERR(dst);
	}
	if (cache)
		srnic_net_route_keep(cache, dst, sgid, ipv4);
	skb_dst_set(skb, dst);
	return 0;
}

/* The IP and UDP headers of a packet of @l4_len bytes after them. */
static void srnic_net_l3(struct sk_buff *skb, const struct srnic_txp *t,
			 bool ipv4, u32 l4_len)
{
	struct udphdr *udp;

	skb_reset_network_header(skb);
	if (ipv4) {
		struct iphdr *ip = ip_hdr(skb);

		ip->version = 4;
		ip->ihl = 5;
		ip->tos = t->traffic_class;
		ip->tot_len = htons(sizeof(*ip) + l4_len);
		ip->id = 0;		/* DF: no fragment to tell apart */
		ip->frag_off = htons(IP_DF);
		ip->ttl = t->hop_limit ? t->hop_limit : 64;
		ip->protocol = IPPROTO_UDP;
		memcpy(&ip->saddr, t->sgid + 12, 4);
		memcpy(&ip->daddr, t->dgid + 12, 4);
		ip_send_check(ip);
		skb->protocol = htons(ETH_P_IP);
		udp = (struct udphdr *)(ip + 1);
	} else {
		struct ipv6hdr *ip6 = ipv6_hdr(skb);

		ip6_flow_hdr(ip6, t->traffic_class, htonl(t->flow_label));
		ip6->payload_len = htons(l4_len);
		ip6->nexthdr = IPPROTO_UDP;
		ip6->hop_limit = t->hop_limit ? t->hop_limit : 64;
		memcpy(&ip6->saddr, t->sgid, 16);
		memcpy(&ip6->daddr, t->dgid, 16);
		skb->protocol = htons(ETH_P_IPV6);
		udp = (struct udphdr *)(ip6 + 1);
	}
	skb_set_transport_header(skb, (u8 *)udp - skb->data);
	udp->source = htons(t->sport);
	udp->dest = htons(SRNIC_ROCE_UDP_PORT);
	udp->len = htons(l4_len);
	udp->check = 0;		/* the ICRC covers the packet */
}

/*
 * Zero-copy transmit: a payload of at least this many bytes goes as the
 * pages it lies in (below it, copying costs less than taking the pages),
 * in at most SRNIC_NET_ZC_FRAGS pieces, and a fragment of its own for the
 * pad and ICRC; only through a netdev that takes page fragments
 * (NETIF_F_SG): for any other the stack would copy the packet again.
 */
#define SRNIC_NET_ZC_MIN	512
#define SRNIC_NET_ZC_FRAGS	8

/* The payload, pad and ICRC copied after the headers at @p. */
static void srnic_net_body_copy(struct sk_buff *skb, const struct srnic_txp *t,
				u8 *p, u32 pad, bool ipv4, u32 l4_len)
{
	if (t->len && t->payload)
		srnic_sg_read(t->payload, t->off, p, t->len);
	else if (t->len)
		memcpy(p, t->kdata + t->off, t->len);
	memset(p + t->len, 0, pad);
	put_unaligned_le32(t->rxe_flush_icrc ?
			   srnic_icrc_rxe_flush(skb_network_header(skb), ipv4, l4_len) :
			   srnic_icrc(skb_network_header(skb), ipv4, l4_len),
			   p + t->len + pad);
}

/*
 * The payload as the @n page pieces @f (each page then held by the skb,
 * whatever becomes of the MR), the pad and ICRC in a fragment after them.
 * The stack may not write those pages (SKBFL_SHARED_FRAG): they are the
 * user's.
 */
static int srnic_net_body_zc(struct sk_buff *skb, const struct srnic_txp *t,
			     const struct srnic_page_ref *f, u32 n, u32 pad,
			     bool ipv4)
{
	u32 crc = srnic_icrc_headers(skb_network_header(skb), ipv4, t->ext_len);
	u32 i, tail_len = pad + SRNIC_ICRC_BYTES;
	u8 *tail = netdev_alloc_frag(tail_len);
	struct page *tp;

	if (!tail)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		crc = crc32_le(crc, f[i].kva, f[i].len);
		get_page(f[i].page);
		skb_fill_page_desc(skb, i, f[i].page, f[i].off, f[i].len);
	}
	memset(tail, 0, pad);
	put_unaligned_le32(~crc32_le(crc, tail, pad), tail + pad);
	tp = virt_to_head_page(tail);
	skb_fill_page_desc(skb, n, tp, tail - (u8 *)page_address(tp), tail_len);
	skb->len += t->len + tail_len;
	skb->data_len += t->len + tail_len;
	skb->truesize += t->len + tail_len;
	skb_shinfo(skb)->flags |= SKBFL_SHARED_FRAG;
	return 0;
}

/*
 * Sends packet @t out of @sdev's netdev.  Lost, as on any wire, when there
 * is no route or no memory, or the netdev's queue is full (counted;
 * -ENOBUFS).  Inside srnic_engine_srcu (the payload's MRs held):
 * the skb is allocated without sleeping.
 */
int srnic_net_xmit(struct srnic_dev *sdev, const struct srnic_txp *t)
{
	struct net_device *ndev = READ_ONCE(sdev->ndev);
	bool ipv4 = ipv6_addr_v4mapped((const struct in6_addr *)t->dgid);
	u32 l3_len = ipv4 ? sizeof(struct iphdr) : sizeof(struct ipv6hdr);
	struct srnic_page_ref f[SRNIC_NET_ZC_FRAGS];
	u32 pad = -t->len & 3, l4_len, nf = 0, body;
	struct ubuf_info *uarg = NULL;
	struct srnic_bth *bth;
	struct sk_buff *skb;
	int err;
	u8 *p;

	if (t->zc && t->payload && t->len >= SRNIC_NET_ZC_MIN &&
	    (ndev->features & NETIF_F_SG))
		nf = srnic_sg_pages(t->payload, t->off, t->len, f, ARRAY_SIZE(f));
	/* Zero-copy only with its completion; without one, copied. */
	if (nf && !(uarg = srnic_zc_take(t->zc, t->psn)))
		nf = 0;
	body = t->len + pad + SRNIC_ICRC_BYTES;
	l4_len = sizeof(struct udphdr) + sizeof(*bth) + t->ext_len + body;
	skb = alloc_skb(LL_RESERVED_SPACE(ndev) + l3_len + l4_len -
			(nf ? body : 0) + ndev->needed_tailroom,
			GFP_NOWAIT | __GFP_NOWARN);
	if (!skb) {
		srnic_zc_abort(uarg);
		goto drop;
	}
	/* From here the skb returns it, when freed or its pages copied. */
	if (uarg)
		skb_zcopy_init(skb, uarg);
	skb_reserve(skb, LL_RESERVED_SPACE(ndev));
	if (srnic_net_route(ndev, skb, t->sgid, t->dgid, ipv4, t->route))
		goto drop;
	p = skb_put(skb, l3_len + l4_len - (nf ? body : 0));
	srnic_net_l3(skb, t, ipv4, l4_len);
	bth = (struct srnic_bth *)(p + l3_len + sizeof(struct udphdr));
	srnic_bth_set(bth, t->opcode, t->se, pad, t->dqpn, t->psn);
	if (t->ackreq)
		srnic_bth_set_ackreq(bth);
	p = (u8 *)(bth + 1);
	memcpy(p, t->ext, t->ext_len);
	if (!nf)
		srnic_net_body_copy(skb, t, p + t->ext_len, pad, ipv4, l4_len);
	else if (srnic_net_body_zc(skb, t, f, nf, pad, ipv4))
		goto drop;
	else
		srnic_count(sdev, SRNIC_PC_TX_ZCOPY);
	skb->dev = ndev;
	if (ipv4)
		err = ip_local_out(dev_net(ndev), NULL, skb);
	else
		err = ip6_local_out(dev_net(ndev), NULL, skb);
	/* The qdisc refused it (full): a NIC whose ring is full waits. */
	if (net_xmit_eval(err)) {
		srnic_count(sdev, SRNIC_PC_TX_DROPPED);
		return -ENOBUFS;
	}
	srnic_count(sdev, SRNIC_PC_TX_PACKETS);
	return 0;
drop:
	kfree_skb(skb);
	srnic_count(sdev, SRNIC_PC_TX_DROPPED);
	return -ENOBUFS;
}

void srnic_net_txp_path(struct srnic_qp *qp, struct srnic_txp *t)
{
	t->route = &qp->w.route;
	t->sgid = qp->sgid;
	t->dgid = qp->w.dgid;
	t->hop_limit = qp->w.hop_limit;
	t->traffic_class = qp->w.traffic_class;
	t->flow_label = qp->w.flow_label;
	t->sport = qp->w.sport;
	t->dqpn = qp->attr.dest_qp_num;
}

/* A UD datagram @m of @qp onto the wire, whatever becomes of it. */
static void srnic_net_send_ud(struct srnic_qp *qp, const struct srnic_msg *m)
{
	struct {
		struct srnic_deth deth;
		__be32 imm;
	} __packed ext;
	struct srnic_txp t = {
		.opcode = m->has_imm ? SRNIC_OP_UD_SEND_ONLY_IMM :
				       SRNIC_OP_UD_SEND_ONLY,
		.se = m->solicited,
		.dqpn = m->dqpn,
		.psn = qp->wire_psn++,
		.ext = &ext,
		.ext_len = sizeof(ext.deth) + (m->has_imm ? 4 : 0),
		.payload = m->payload,
		.len = m->len,
		.sgid = m->sgid,
		.dgid = m->dgid,
		.hop_limit = m->hop_limit,
		.traffic_class = m->traffic_class,
		.flow_label = m->flow_label,
		.sport = SRNIC_UDP_SPORT_BASE | hash_32(qp->qpn, 14),
	};

	/* The requester resolved a controlled Q_Key already (srnic_ud_av). */
	ext.deth.qkey = cpu_to_be32(m->qkey);
	ext.deth.sqp = cpu_to_be32(qp->qpn);
	ext.imm = m->imm;
	srnic_net_xmit(to_sdev(qp->ibqp.device), &t);
}

/*
 * The wire as a transport: a UD datagram goes, whatever becomes of it, as
 * on any wire; RC and UC pieces go through the wire requester.
 */
static void srnic_wire_request(struct srnic_engine *eng, struct srnic_qp *qp,
			       struct srnic_msg *m, struct srnic_reply *rep)
{
	rep->data = NULL;
	rep->r = SRNIC_RESP_OK;
	if (srnic_qpt_ud(qp->ibqp.qp_type))
		srnic_net_send_ud(qp, m);
	else
		srnic_net_req_request(eng, qp, m, rep);
}

static void srnic_wire_reply_done(struct srnic_engine *eng,
				  struct srnic_reply *rep)
{
}

static void srnic_wire_batch_end(struct srnic_engine *eng)
{
}

const struct srnic_transport srnic_wire = {
	.name = "wire",
	.request = srnic_wire_request,
	.reply_done = srnic_wire_reply_done,
	.batch_end = srnic_wire_batch_end,
	.ahead_pos = srnic_net_req_ahead_pos,
	.ahead = srnic_net_req_ahead,
	.forget = srnic_net_req_forget,
	.answered = srnic_net_req_answered,
};

/* ---- the hooks, in every namespace ---- */

static int __net_init srnic_net_ns_init(struct net *net)
{
	return nf_register_net_hooks(net, srnic_nf_ops,
				     ARRAY_SIZE(srnic_nf_ops));
}

static void __net_exit srnic_net_ns_exit(struct net *net)
{
	nf_unregister_net_hooks(net, srnic_nf_ops, ARRAY_SIZE(srnic_nf_ops));
}

static struct pernet_operations srnic_net_ops = {
	.init = srnic_net_ns_init,
	.exit = srnic_net_ns_exit,
};

int srnic_net_init(void)
{
	return register_pernet_subsys(&srnic_net_ops);
}

void srnic_net_cleanup(void)
{
	unregister_pernet_subsys(&srnic_net_ops);
}
