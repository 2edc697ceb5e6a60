// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Raw packet QPs: sends are whole Ethernet frames, receives take the frames
 * the device's flow table steers to the QP.  A frame a raw QP sends is
 * looped back to its own device's flow table (the NIC's local loopback) and
 * transmitted on the bound netdev.  RSS QPs receive through an indirection
 * table of receive WQs, picked by a Toeplitz hash of the frame's addresses
 * and ports.  Everything read from user memory (receive WQEs, frames) is a
 * copy or is only copied; frames are parsed within their length.
 */
#include <linux/if_vlan.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "srnic_loc.h"
#include "srnic_toeplitz.h"

enum srnic_flow_layers {
	SRNIC_FLOW_ETH = 1 << 0,
	SRNIC_FLOW_IPV4 = 1 << 1,
	SRNIC_FLOW_IPV6 = 1 << 2,
	SRNIC_FLOW_TCP = 1 << 3,
	SRNIC_FLOW_UDP = 1 << 4,
};

/* At most this many QPs receive one frame (flows of equal priority). */
#define SRNIC_FLOW_MAX_TARGETS 16
/* WQ numbers: apart from QPNs, so a CQE tells a WQ from a QP. */
#define SRNIC_WQN_BASE 0x800000

/* A frame's fields, laid out as the flow specs' filters. */
struct srnic_frame {
	const u8 *data;
	u32 len;
	u8 l4proto;
	bool ip4, ip6, l4;
	struct ib_flow_eth_filter eth;
	struct ib_flow_ipv4_filter ipv4;
	struct ib_flow_ipv6_filter ipv6;
	struct ib_flow_tcp_udp_filter ports;
};

/* Fills @f from the @len bytes at @data, as far as they go. */
static void srnic_frame_parse(struct srnic_frame *f, const u8 *data, u32 len)
{
	u32 off = ETH_HLEN;
	__be16 proto;

	memset(f, 0, sizeof(*f));
	f->data = data;
	f->len = len;
	memcpy(f->eth.dst_mac, data, ETH_ALEN);
	memcpy(f->eth.src_mac, data + ETH_ALEN, ETH_ALEN);
	memcpy(&proto, data + 2 * ETH_ALEN, 2);
	if (proto == htons(ETH_P_8021Q) && len >= VLAN_ETH_HLEN) {
		memcpy(&f->eth.vlan_tag, data + ETH_HLEN, 2);
		memcpy(&proto, data + ETH_HLEN + 2, 2);
		off = VLAN_ETH_HLEN;
	}
	f->eth.ether_type = proto;

	if (proto == htons(ETH_P_IP) && len >= off + sizeof(struct iphdr)) {
		struct iphdr ip;
		u32 ihl;

		memcpy(&ip, data + off, sizeof(ip));
		ihl = ip.ihl * 4;
		if (ip.version != 4 || ihl < sizeof(ip) || len < off + ihl)
			return;
		f->ip4 = true;
		f->ipv4 = (struct ib_flow_ipv4_filter){
			.src_ip = ip.saddr, .dst_ip = ip.daddr,
			.proto = ip.protocol, .tos = ip.tos, .ttl = ip.ttl,
			.flags = ntohs(ip.frag_off) >> 13,
		};
		f->l4proto = ip.protocol;
		/* Only a first fragment carries the ports. */
		if (ip.frag_off & htons(IP_OFFSET))
			return;
		off += ihl;
	} else if (proto == htons(ETH_P_IPV6) &&
		   len >= off + sizeof(struct ipv6hdr)) {
		struct ipv6hdr ip6;
		u32 word;

		memcpy(&ip6, data + off, sizeof(ip6));
		if (ip6.version != 6)
			return;
		memcpy(&word, &ip6, 4);
		f->ip6 = true;
		memcpy(f->ipv6.src_ip, &ip6.saddr, 16);
		memcpy(f->ipv6.dst_ip, &ip6.daddr, 16);
		f->ipv6.flow_label = htonl(ntohl(word) & 0xfffff);
		f->ipv6.traffic_class = ntohl(word) >> 20;
		f->ipv6.next_hdr = ip6.nexthdr;
		f->ipv6.hop_limit = ip6.hop_limit;
		f->l4proto = ip6.nexthdr;
		off += sizeof(ip6);
	} else {
		return;
	}
	if ((f->l4proto == IPPROTO_TCP || f->l4proto == IPPROTO_UDP) &&
	    len >= off + 4) {
		struct udphdr uh;	/* TCP's ports are at the same place */

		memcpy(&uh, data + off, 4);
		f->l4 = true;
		f->ports.src_port = uh.source;
		f->ports.dst_port = uh.dest;
	}
}

/* Whether @field matches @val under @mask (@val is already masked). */
static bool srnic_masked_eq(const void *field, const void *val,
			    const void *mask, size_t n)
{
	const u8 *f = field, *v = val, *m = mask;
	size_t i;

	for (i = 0; i < n; i++)
		if ((f[i] & m[i]) != v[i])
			return false;
	return true;
}

static bool srnic_flow_match(const struct srnic_flow *fl,
			     const struct srnic_frame *f)
{
	if ((fl->layers & SRNIC_FLOW_ETH) &&
	    !srnic_masked_eq(&f->eth, &fl->eth, &fl->eth_mask, sizeof(f->eth)))
		return false;
	if ((fl->layers & SRNIC_FLOW_IPV4) &&
	    (!f->ip4 || !srnic_masked_eq(&f->ipv4, &fl->ip4, &fl->ip4_mask,
					 sizeof(f->ipv4))))
		return false;
	if ((fl->layers & SRNIC_FLOW_IPV6) &&
	    (!f->ip6 || !srnic_masked_eq(&f->ipv6, &fl->ip6, &fl->ip6_mask,
					 sizeof(f->ipv6))))
		return false;
	if (fl->layers & (SRNIC_FLOW_TCP | SRNIC_FLOW_UDP)) {
		u8 proto = fl->layers & SRNIC_FLOW_TCP ? IPPROTO_TCP :
							 IPPROTO_UDP;

		if (!f->l4 || f->l4proto != proto ||
		    !srnic_masked_eq(&f->ports, &fl->l4, &fl->l4_mask,
				     sizeof(f->ports)))
			return false;
	}
	return true;
}

/*
 * The hash input of @f for the fields an RSS QP asked for, in the usual
 * order (source address, destination address, source port, destination
 * port); fields the frame does not have are left out.
 */
static u32 srnic_rss_hash(const struct srnic_rss *rss,
			  const struct srnic_frame *f)
{
	u8 in[36];
	u32 n = 0;
	u64 m = rss->fields;

#define SRNIC_HASH_IN(bit, ok, src, len)				\
	do {								\
		if ((m & (bit)) && (ok)) {				\
			memcpy(in + n, src, len);			\
			n += len;					\
		}							\
	} while (0)
	SRNIC_HASH_IN(SRNIC_RX_HASH_SRC_IPV4, f->ip4, &f->ipv4.src_ip, 4);
	SRNIC_HASH_IN(SRNIC_RX_HASH_DST_IPV4, f->ip4, &f->ipv4.dst_ip, 4);
	SRNIC_HASH_IN(SRNIC_RX_HASH_SRC_IPV6, f->ip6, f->ipv6.src_ip, 16);
	SRNIC_HASH_IN(SRNIC_RX_HASH_DST_IPV6, f->ip6, f->ipv6.dst_ip, 16);
	SRNIC_HASH_IN(SRNIC_RX_HASH_SRC_PORT_TCP,
		      f->l4 && f->l4proto == IPPROTO_TCP, &f->ports.src_port, 2);
	SRNIC_HASH_IN(SRNIC_RX_HASH_DST_PORT_TCP,
		      f->l4 && f->l4proto == IPPROTO_TCP, &f->ports.dst_port, 2);
	SRNIC_HASH_IN(SRNIC_RX_HASH_SRC_PORT_UDP,
		      f->l4 && f->l4proto == IPPROTO_UDP, &f->ports.src_port, 2);
	SRNIC_HASH_IN(SRNIC_RX_HASH_DST_PORT_UDP,
		      f->l4 && f->l4proto == IPPROTO_UDP, &f->ports.dst_port, 2);
#undef SRNIC_HASH_IN
	return srnic_toeplitz(rss->key, SRNIC_RSS_KEY_LEN, in, n);
}

/* A receive completion of WQ @rwq; an error puts the WQ in error. */
static void srnic_rwq_complete(struct srnic_rwq *rwq, u64 wr_id,
			       enum ib_wc_status status, u32 len)
{
	struct srnic_cqe cqe = {
		.wr_id = wr_id, .status = status, .opcode = IB_WC_RECV,
		.byte_len = status == IB_WC_SUCCESS ? len : 0,
		.qp_num = rwq->ibwq.wq_num,
	};

	if (status != IB_WC_SUCCESS) {
		spin_lock(&rwq->lock);
		rwq->state = IB_WQS_ERR;
		spin_unlock(&rwq->lock);
	}
	srnic_cq_post(to_scq(rwq->ibwq.cq), &cqe, false);
}

/* Places @frame into the next receive WQE of @rwq.  False if none is posted. */
static bool srnic_rwq_recv(struct srnic_engine *eng, struct srnic_rwq *rwq,
			   const struct srnic_sg *frame)
{
	struct srnic_dev *sdev = to_sdev(rwq->ibwq.device);
	struct srnic_srq_db *db = rwq->db.kva;
	struct srnic_recv_wqe_hdr *hdr = eng->rwqe;
	enum ib_wc_status status = IB_WC_SUCCESS;
	int ret = 0, err;

	spin_lock(&rwq->lock);
	if (rwq->state == IB_WQS_RDY)
		ret = srnic_ring_take(&rwq->wq, &rwq->cons, &db->producer,
				      &db->consumer, eng->rwqe);
	if (ret < 0)
		rwq->state = IB_WQS_ERR;	/* the owner broke the ring */
	spin_unlock(&rwq->lock);
	if (ret <= 0)
		return false;

	/* No ODP wait: a frame is not sent again, so a fault fails it. */
	if (hdr->num_sge > rwq->max_sge) {
		status = IB_WC_LOC_QP_OP_ERR;
	} else {
		err = srnic_sg_resolve(sdev, to_spd(rwq->ibwq.pd),
				       (struct srnic_wqe_data *)(hdr + 1),
				       hdr->num_sge, IB_ACCESS_LOCAL_WRITE,
				       &eng->remote, NULL);
		if (err == -EAGAIN)
			srnic_sg_drop_fault(&eng->remote);
		if (err)
			status = IB_WC_LOC_PROT_ERR;
		else if (eng->remote.total < frame->total)
			status = IB_WC_LOC_LEN_ERR;
		else
			srnic_sg_copy(&eng->remote, 0, frame, 0, frame->total);
		if (!err)
			srnic_sg_release(&eng->remote);
	}
	srnic_rwq_complete(rwq, hdr->wr_id, status, frame->total);
	return true;
}

/* Delivers @frame to @qp: its RQ (or SRQ), or for RSS the hash's WQ. */
static void srnic_raw_deliver(struct srnic_dev *sdev, struct srnic_engine *eng,
			      struct srnic_qp *qp, const struct srnic_frame *f,
			      const struct srnic_sg *frame)
{
	struct srnic_raw_stats *st = &sdev->raw_stats;
	struct srnic_msg m = {
		.opcode = IB_UVERBS_WR_SEND, .len = frame->total,
		.plen = frame->total, .payload = frame,
	};
	enum srnic_resp r;

	if (qp->rss) {
		struct ib_rwq_ind_table *tbl = qp->ibqp.rwq_ind_tbl;
		u32 i = srnic_rss_hash(qp->rss, f) &
			((1U << tbl->log_ind_tbl_size) - 1);

		if (srnic_rwq_recv(eng, to_srwq(tbl->ind_tbl[i]), frame))
			atomic64_inc(&st->delivered);
		else
			atomic64_inc(&st->no_wqe);
		return;
	}
	r = srnic_resp_recv(eng, qp, &m, true);
	if (r == SRNIC_RESP_OK)
		atomic64_inc(&st->delivered);
	else if (r == SRNIC_RESP_RNR || r == SRNIC_RESP_DROP)
		atomic64_inc(&st->no_wqe);
	/* Anything else completed the receive WQE in error. */
}

/*
 * Steers a frame through @sdev's flow table: every QP with a matching flow
 * of the best (lowest) matching priority gets one copy; no match, no copy.
 */
/* Not inlined: under KASAN the two frames together pass 2 KiB. */
static noinline_for_stack void
srnic_raw_steer(struct srnic_dev *sdev, struct srnic_engine *eng,
		const struct srnic_sg *frame)
{
	struct srnic_qp *to[SRNIC_FLOW_MAX_TARGETS];
	struct srnic_flow *fl;
	struct srnic_frame f;
	u32 n = 0, i, best = U32_MAX;

	srnic_frame_parse(&f, frame->kbuf, frame->total);
	rcu_read_lock();
	/* By priority: stop at the first flow past the best matching one. */
	list_for_each_entry_rcu(fl, &sdev->flows, list) {
		if (fl->priority > best || n == ARRAY_SIZE(to))
			break;
		if (!srnic_flow_match(fl, &f))
			continue;
		best = fl->priority;
		for (i = 0; i < n && to[i] != fl->qp; i++)
			;
		/* A reference keeps the QP (destroy waits) after the walk. */
		if (i == n && refcount_inc_not_zero(&fl->qp->ref))
			to[n++] = fl->qp;
	}
	rcu_read_unlock();
	if (!n)
		atomic64_inc(&sdev->raw_stats.no_flow);
	for (i = 0; i < n; i++) {
		srnic_raw_deliver(sdev, eng, to[i], &f, frame);
		srnic_qp_put(to[i]);
	}
}

/*
 * Executes a raw packet send: @frame (resolved SGEs or inline bytes) is a
 * whole Ethernet frame, of at least a header and at most the MTU after a
 * (VLAN) header.  Looped back to the flow table, then sent on the netdev;
 * a frame the netdev does not take is lost, as on a wire.
 */
enum ib_wc_status srnic_raw_send(struct srnic_dev *sdev,
				 struct srnic_engine *eng,
				 const struct srnic_sg *frame)
{
	struct net_device *ndev = sdev->ndev;
	u64 len = frame->total;
	struct srnic_sg kb;
	struct sk_buff *skb;

	if (len < ETH_HLEN || len > READ_ONCE(ndev->mtu) + VLAN_ETH_HLEN)
		return IB_WC_LOC_LEN_ERR;
	skb = alloc_skb(LL_RESERVED_SPACE(ndev) + len, SRNIC_ENGINE_GFP);
	if (!skb) {
		atomic64_inc(&sdev->raw_stats.tx_dropped);
		return IB_WC_SUCCESS;
	}
	skb_reserve(skb, LL_RESERVED_SPACE(ndev));
	srnic_sg_init(&kb, skb_put(skb, len), len);
	srnic_sg_copy(&kb, 0, frame, 0, len);
	srnic_raw_steer(sdev, eng, &kb);

	skb->dev = ndev;
	skb_reset_mac_header(skb);
	skb->protocol = eth_hdr(skb)->h_proto;
	if (dev_queue_xmit(skb) == NET_XMIT_SUCCESS)
		atomic64_inc(&sdev->raw_stats.tx);
	else
		atomic64_inc(&sdev->raw_stats.tx_dropped);
	return IB_WC_SUCCESS;
}

/* ---- flows ---- */

/* Takes one spec into @fl: value under mask, so matching needs no more. */
static int srnic_flow_spec(struct srnic_flow *fl, const union ib_flow_spec *s)
{
	void *val, *mask, *mval, *mmask;
	size_t len;
	u8 layer;
	size_t i;

	switch (s->type) {
	case IB_FLOW_SPEC_ETH:
		layer = SRNIC_FLOW_ETH;
		val = (void *)&s->eth.val, mask = (void *)&s->eth.mask;
		mval = &fl->eth, mmask = &fl->eth_mask, len = sizeof(fl->eth);
		break;
	case IB_FLOW_SPEC_IPV4:
		layer = SRNIC_FLOW_IPV4;
		val = (void *)&s->ipv4.val, mask = (void *)&s->ipv4.mask;
		mval = &fl->ip4, mmask = &fl->ip4_mask, len = sizeof(fl->ip4);
		break;
	case IB_FLOW_SPEC_IPV6:
		layer = SRNIC_FLOW_IPV6;
		val = (void *)&s->ipv6.val, mask = (void *)&s->ipv6.mask;
		mval = &fl->ip6, mmask = &fl->ip6_mask, len = sizeof(fl->ip6);
		break;
	case IB_FLOW_SPEC_TCP:
	case IB_FLOW_SPEC_UDP:
		layer = s->type == IB_FLOW_SPEC_TCP ? SRNIC_FLOW_TCP :
						      SRNIC_FLOW_UDP;
		val = (void *)&s->tcp_udp.val, mask = (void *)&s->tcp_udp.mask;
		mval = &fl->l4, mmask = &fl->l4_mask, len = sizeof(fl->l4);
		break;
	default:
		/* Inner headers, tunnels, IB, MPLS, actions. */
		return -EOPNOTSUPP;
	}
	/* One spec per layer; IPv4 and IPv6, or TCP and UDP, never match. */
	if ((fl->layers & layer) ||
	    ((layer & (SRNIC_FLOW_IPV4 | SRNIC_FLOW_IPV6)) &&
	     (fl->layers & (SRNIC_FLOW_IPV4 | SRNIC_FLOW_IPV6))) ||
	    ((layer & (SRNIC_FLOW_TCP | SRNIC_FLOW_UDP)) &&
	     (fl->layers & (SRNIC_FLOW_TCP | SRNIC_FLOW_UDP))))
		return -EINVAL;
	fl->layers |= layer;
	memcpy(mmask, mask, len);
	for (i = 0; i < len; i++)
		((u8 *)mval)[i] = ((u8 *)val)[i] & ((u8 *)mask)[i];
	return 0;
}

struct ib_flow *srnic_create_flow(struct ib_qp *ibqp,
				  struct ib_flow_attr *attr,
				  struct ib_udata *udata)
{
	struct srnic_dev *sdev = to_sdev(ibqp->device);
	const union ib_flow_spec *spec = (const void *)(attr + 1);
	struct srnic_flow *fl, *pos;
	unsigned int i;
	int err;

	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return ERR_PTR(-EOPNOTSUPP);
	/* Steering to UD QPs (IPoIB sniffing) is not offered. */
	if (ibqp->qp_type != IB_QPT_RAW_PACKET)
		return ERR_PTR(-EOPNOTSUPP);
	if (attr->type != IB_FLOW_ATTR_NORMAL || attr->flags)
		return ERR_PTR(-EOPNOTSUPP);
	fl = kzalloc(sizeof(*fl), GFP_KERNEL);
	if (!fl)
		return ERR_PTR(-ENOMEM);
	fl->qp = to_sqp(ibqp);
	fl->priority = attr->priority;
	for (i = 0; i < attr->num_of_specs; i++) {
		err = srnic_flow_spec(fl, spec);
		if (err) {
			kfree(fl);
			return ERR_PTR(err);
		}
		spec = (const void *)spec + spec->size;
	}
	mutex_lock(&sdev->flow_lock);
	/* After the flows of the same priority: first come, first listed. */
	list_for_each_entry(pos, &sdev->flows, list)
		if (pos->priority > fl->priority)
			break;
	list_add_tail_rcu(&fl->list, &pos->list);
	mutex_unlock(&sdev->flow_lock);
	return &fl->ibflow;
}

int srnic_destroy_flow(struct ib_flow *ibflow)
{
	struct srnic_flow *fl = container_of(ibflow, struct srnic_flow, ibflow);
	struct srnic_dev *sdev = to_sdev(fl->qp->ibqp.device);

	mutex_lock(&sdev->flow_lock);
	list_del_rcu(&fl->list);
	mutex_unlock(&sdev->flow_lock);
	/*
	 * A walk that found the flow took a QP reference (destroy_qp waits
	 * for it); the flow itself may be read until the grace period ends.
	 */
	kfree_rcu(fl, rcu);
	return 0;
}

/* ---- receive WQs and indirection tables ---- */

struct ib_wq *srnic_create_wq(struct ib_pd *ibpd, struct ib_wq_init_attr *init,
			      struct ib_udata *udata)
{
	struct srnic_dev *sdev = to_sdev(ibpd->device);
	struct srnic_create_wq_req req;
	struct srnic_rwq *rwq;
	int err, wqn;

	if (!udata || !udata->inlen)
		return ERR_PTR(-EOPNOTSUPP);
	if (init->wq_type != IB_WQT_RQ || init->create_flags)
		return ERR_PTR(-EOPNOTSUPP);
	if (!init->max_wr || init->max_wr > SRNIC_MAX_QP_WR ||
	    !init->max_sge || init->max_sge > SRNIC_MAX_SGE)
		return ERR_PTR(-EINVAL);
	err = srnic_udata_in(udata, &req, sizeof(req));
	if (err)
		return ERR_PTR(err);
	if (req.comp_mask || req.reserved)
		return ERR_PTR(-EINVAL);
	rwq = kzalloc(sizeof(*rwq), GFP_KERNEL);
	if (!rwq)
		return ERR_PTR(-ENOMEM);
	spin_lock_init(&rwq->lock);
	rwq->state = IB_WQS_RESET;
	err = srnic_recv_ring_pin(sdev, init->max_wr, init->max_sge,
				  SRNIC_MAX_QP_WR, req.buf_addr, req.db_addr,
				  req.log_entries, req.log_stride, &rwq->wq,
				  &rwq->db, &rwq->max_sge);
	if (err)
		goto err_free;
	wqn = ida_alloc_range(&sdev->wq_ida, SRNIC_WQN_BASE, 0xffffff,
			      GFP_KERNEL);
	if (wqn < 0) {
		err = wqn;
		goto err_ring;
	}
	rwq->ibwq.wq_num = wqn;
	rwq->ibwq.state = IB_WQS_RESET;
	init->max_wr = 1U << req.log_entries;
	init->max_sge = rwq->max_sge;
	return &rwq->ibwq;

err_ring:
	srnic_umem_release(sdev, &rwq->db);
	srnic_umem_release(sdev, &rwq->wq.ring);
err_free:
	kfree(rwq);
	return ERR_PTR(err);
}

int srnic_modify_wq(struct ib_wq *ibwq, struct ib_wq_attr *attr, u32 mask,
		    struct ib_udata *udata)
{
	struct srnic_rwq *rwq = to_srwq(ibwq);
	int err = 0;

	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EOPNOTSUPP;
	if (mask & ~(IB_WQ_STATE | IB_WQ_CUR_STATE))
		return -EOPNOTSUPP;
	if (!(mask & IB_WQ_STATE))
		return 0;
	spin_lock(&rwq->lock);
	if (attr->curr_wq_state != rwq->state) {
		err = -EINVAL;
	} else {
		/* Back to RESET: an empty ring, as the provider's now is. */
		if (attr->wq_state == IB_WQS_RESET) {
			rwq->cons = 0;
			WRITE_ONCE(((struct srnic_srq_db *)rwq->db.kva)->consumer,
				   0);
		}
		rwq->state = attr->wq_state;
		ibwq->state = attr->wq_state;
	}
	spin_unlock(&rwq->lock);
	return err;
}

int srnic_destroy_wq(struct ib_wq *ibwq, struct ib_udata *udata)
{
	struct srnic_dev *sdev = to_sdev(ibwq->device);
	struct srnic_rwq *rwq = to_srwq(ibwq);

	/* No table holds it (the core counts them): no engine reaches it. */
	ida_free(&sdev->wq_ida, ibwq->wq_num);
	srnic_umem_release(sdev, &rwq->db);
	srnic_umem_release(sdev, &rwq->wq.ring);
	kfree(rwq);
	return 0;
}

int srnic_create_rwq_ind_table(struct ib_rwq_ind_table *ibtbl,
			       struct ib_rwq_ind_table_init_attr *init,
			       struct ib_udata *udata)
{
	struct srnic_dev *sdev = to_sdev(ibtbl->device);

	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EOPNOTSUPP;
	if (init->log_ind_tbl_size > ilog2(SRNIC_MAX_RWQ_IND_TABLE_SIZE))
		return -EINVAL;
	ibtbl->ind_tbl_num = atomic_inc_return(&sdev->next_ind_tbl);
	return 0;
}

int srnic_destroy_rwq_ind_table(struct ib_rwq_ind_table *ibtbl)
{
	return 0;
}

/* An RSS raw packet QP: no queue of its own, a hash and the core's table. */
int srnic_create_rss_qp(struct srnic_dev *sdev, struct srnic_qp *qp,
			struct ib_qp_init_attr *init, struct ib_udata *udata)
{
	const u64 known = SRNIC_RX_HASH_FIELDS;
	struct srnic_create_qp_resp resp = {};
	struct srnic_create_qp_rss_req req;
	int err;

	if (init->create_flags || init->srq || init->cap.max_send_wr ||
	    init->cap.max_recv_wr)
		return -EINVAL;
	err = srnic_udata_in(udata, &req, sizeof(req));
	if (err)
		return err;
	if (req.comp_mask || req.reserved1 || memchr_inv(req.reserved0, 0,
							 sizeof(req.reserved0)))
		return -EINVAL;
	/* Inner headers, IPsec SPI, other functions: not offered. */
	if (req.rx_hash_function != SRNIC_RX_HASH_FUNC_TOEPLITZ ||
	    (req.rx_hash_fields_mask & ~known))
		return -EOPNOTSUPP;
	if (req.rx_hash_key_len != SRNIC_RSS_KEY_LEN)
		return -EINVAL;

	memset(&qp->cap, 0, sizeof(qp->cap));
	err = srnic_qp_init(qp, false);
	if (err)
		return err;
	qp->rss = kzalloc(sizeof(*qp->rss), GFP_KERNEL);
	if (!qp->rss)
		return -ENOMEM;
	qp->rss->fields = req.rx_hash_fields_mask;
	memcpy(qp->rss->key, req.rx_hash_key, SRNIC_RSS_KEY_LEN);
	err = srnic_qp_publish(sdev, qp, init);
	if (err)
		goto err_free;
	resp.qpn = qp->qpn;
	err = ib_copy_to_udata(udata, &resp, min(udata->outlen, sizeof(resp)));
	if (err) {
		srnic_qp_unpublish(sdev, qp->qpn);
		goto err_free;
	}
	return 0;

err_free:
	kfree(qp->rss);
	qp->rss = NULL;
	return err;
}

/* ---- device ---- */

static int srnic_raw_show(struct seq_file *m, void *unused)
{
	struct srnic_raw_stats *st = &((struct srnic_dev *)m->private)->raw_stats;

	seq_printf(m, "tx %lld tx_dropped %lld delivered %lld no_flow %lld no_wqe %lld\n",
		   atomic64_read(&st->tx), atomic64_read(&st->tx_dropped),
		   atomic64_read(&st->delivered), atomic64_read(&st->no_flow),
		   atomic64_read(&st->no_wqe));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(srnic_raw);

/* Before anything can fail in newlink: srnic_raw_cleanup() undoes it. */
void srnic_raw_init(struct srnic_dev *sdev)
{
	mutex_init(&sdev->flow_lock);
	INIT_LIST_HEAD(&sdev->flows);
	ida_init(&sdev->wq_ida);
}

void srnic_raw_debugfs(struct srnic_dev *sdev)
{
	debugfs_create_file("raw", 0400, sdev->debugfs, sdev, &srnic_raw_fops);
}

void srnic_raw_cleanup(struct srnic_dev *sdev)
{
	WARN_ON(!list_empty(&sdev->flows));
	ida_destroy(&sdev->wq_ida);
	mutex_destroy(&sdev->flow_lock);
}
