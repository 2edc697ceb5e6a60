/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Inside the RoCEv2 transport: what the packet layer (srnic_net.c), the
 * wire requester (srnic_net_req.c) and the wire responder
 * (srnic_net_resp.c) share.  A received packet reaches them parsed and
 * checked (lengths, version, ICRC, opcode, destination QP and its peer's
 * address); every field they read beyond that is still hostile.
 */
#ifndef SRNIC_NET_H
#define SRNIC_NET_H

#include "srnic_loc.h"
#include "srnic_hdr.h"

/*
 * A received packet, parsed: where its parts are and what they say.  The
 * headers are in the skb's linear part; the payload may be in its page
 * fragments (srnic_pkt_copy, srnic_sg_init_skb).
 */
struct srnic_pkt {
	struct srnic_dev *sdev;
	const struct sk_buff *skb;
	const u8 *l3;
	bool ipv4;
	const struct srnic_bth *bth;
	u8 op;				/* its opcode, the service's bits off */
	u32 flags;			/* srnic_opcode[opcode].flags */
	u32 xrc_srqn;			/* an XRC request's XRCETH */
	const u8 *next;			/* the extension headers after BTH (and XRCETH) */
	u32 after_bth;			/* bytes from @next to the ICRC */
	u32 l4_len;			/* the UDP header's length */
	const u8 *hdr_end;		/* the end of the extension headers */
	u32 poff;			/* the payload, from skb->data */
	u32 plen;			/* payload, without the pad */
	u32 psn;
	u8 sgid[16], dgid[16];
	u8 hop_limit, traffic_class;
	u32 flow_label;
	u64 gen;			/* srnic_dev.rx_gen as the netdev gave it */
};

/*
 * Whether @p came from the netdev after the connection that began at @gen
 * (srnic_dev.rx_gen) did: one taken before is an earlier connection's,
 * whatever its addresses and PSN say.
 */
static inline bool srnic_pkt_since(const struct srnic_pkt *p, u64 gen)
{
	return p->gen >= gen;
}

/* A packet to send: its BTH fields, extension headers and payload. */
struct srnic_txp {
	u8 opcode;
	bool se, ackreq;
	u32 dqpn, psn;
	const void *ext;		/* the extension headers, in wire order */
	u32 ext_len;
	const struct srnic_sg *payload;	/* @len bytes from @off of it */
	const void *kdata;		/* ... or of this, if no @payload */
	u64 off;
	u32 len;
	/* Addresses: ours, the destination's, and the IP header's fields. */
	const u8 *sgid, *dgid;
	u8 hop_limit, traffic_class;
	u32 flow_label;
	u16 sport;
	struct dst_cache *route;	/* the connection's route, or NULL */
	bool rxe_flush_icrc;		/* a FLUSH with rxe's ICRC (srnic_icrc.c) */
	/*
	 * The QP whose zero-copy completions (srnic_zc.c) the payload may go
	 * with, as its pages: only an RC request's first transmission, whose
	 * WQE completes once the responder has it and the stack has let go
	 * of the pages.  Anything that completes once built (UD, UC) and a
	 * READ's responses (the requests behind the READ may rewrite its
	 * memory as soon as they are built) copy it, so that the bytes and
	 * the ICRC that leave are those of the moment it was built.
	 */
	struct srnic_qp *zc;
};

/* The @len bytes at @off of @p's payload into @buf (within the payload). */
static inline void srnic_pkt_copy(const struct srnic_pkt *p, u32 off, void *buf,
				  u32 len)
{
	if (skb_copy_bits(p->skb, p->poff + off, buf, len))
		memset(buf, 0, len);	/* cannot be: the lengths were checked */
}

int srnic_net_xmit(struct srnic_dev *sdev, const struct srnic_txp *t);
/* The packet fields of @qp's connection (its path), into @t. */
void srnic_net_txp_path(struct srnic_qp *qp, struct srnic_txp *t);

/* srnic_zc.c: zero-copy transmit's completions */
int srnic_zc_init(struct srnic_qp *qp);
void srnic_zc_release(struct srnic_qp *qp);
struct ubuf_info *srnic_zc_take(struct srnic_qp *qp, u32 psn);
void srnic_zc_abort(struct ubuf_info *uarg);
bool srnic_zc_released(struct srnic_qp *qp, u32 last);

/* srnic_net_req.c: the requester's side of RC and UC on the wire */
void srnic_net_req_request(struct srnic_engine *eng, struct srnic_qp *qp,
			   struct srnic_msg *m, struct srnic_reply *rep);
void srnic_net_req_rx(struct srnic_engine *eng, struct srnic_qp *qp,
		      const struct srnic_pkt *p);
bool srnic_net_req_ahead_pos(struct srnic_qp *qp, u32 *idx, u64 *off);
void srnic_net_req_forget(struct srnic_qp *qp);
bool srnic_net_req_answered(struct srnic_qp *qp);
void srnic_net_req_begin(struct srnic_qp *qp);
bool srnic_net_req_ahead(struct srnic_engine *eng, struct srnic_qp *qp,
			 u32 idx, struct srnic_msg *m);

/* srnic_net_resp.c: the responder's side */
/* What a request held behind the READ going out is (srnic_net_resp_hold). */
enum srnic_held {
	SRNIC_HELD_OTHER,
	SRNIC_HELD_OWED,	/* a READ or atomic in sequence, counted */
	SRNIC_HELD_EXCESS,	/* ... one beyond the responder resources */
};

enum srnic_held srnic_net_resp_hold(struct srnic_qp *qp,
				    const struct srnic_pkt *p);
void srnic_net_resp_unhold(struct srnic_qp *qp, enum srnic_held h);
bool srnic_net_resp_read_next(struct srnic_engine *eng, struct srnic_qp *qp);
bool srnic_net_resp_read_waits(struct srnic_qp *qp, unsigned long *timer);
/* A request come while a READ's responses go out (srnic_net_resp_read_again). */
enum srnic_again {
	SRNIC_AGAIN_NO,		/* no kept READ asked again: held as it is */
	SRNIC_AGAIN_NOW,	/* ... one at or before the READ going out */
	SRNIC_AGAIN_AFTER,	/* ... one past it */
};

enum srnic_again srnic_net_resp_read_again(const struct srnic_qp *qp,
					   const struct srnic_pkt *p);
/* The success ACK the batch held back (srnic_net_resp.c), sent. */
void srnic_net_ack_flush(struct srnic_engine *eng);
void srnic_net_ack_prev(struct srnic_engine *eng);
void srnic_net_resp_rx(struct srnic_engine *eng, struct srnic_qp *qp,
		       const struct srnic_pkt *p);
void srnic_net_resp_forget(struct srnic_qp *qp, u32 epsn);

#endif /* SRNIC_NET_H */
