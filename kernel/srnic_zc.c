// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Zero-copy transmit's completions.  An RC request's first transmission
 * may leave as the pages of its payload (srnic_net.c); its WQE completes
 * when the responder acknowledges it, but the netdev (or a queue before
 * it) may still hold the pages then: an ACK for a copy sent again can
 * overtake the first transmission waiting in a queue.  Each zero-copy
 * packet therefore carries a ubuf_info, the kernel's zero-copy completion
 * (as MSG_ZEROCOPY's): the stack calls it back once nothing reads the
 * pages any more, when the skb is freed or its pages copied (a veth
 * forwarding into another namespace, a local receiver).  The QP's ring
 * holds the PSNs of its packets out, in PSN order, and a WQE completes
 * only when none up to its last PSN is out (srnic_zc_released()).
 *
 * The ring outlives its QP while packets are out (one reference each); the
 * callback runs in any context, so the ring's lock is taken with
 * interrupts off, and it finds the QP only while the QP is there.
 */
#include "srnic_net.h"

/* Packets out per QP; when they are more, the next one is copied. */
#define SRNIC_ZC_OUT	64

struct srnic_zc_ring {
	refcount_t ref;			/* the QP's, and one per packet out */
	spinlock_t lock;
	struct srnic_qp *qp;		/* NULL once the QP is released */
	bool waiting;			/* a WQE waits: kick the QP's engine */
	u32 head, tail;			/* the packets out: [head, tail) */
	u32 psn[SRNIC_ZC_OUT];
	bool done[SRNIC_ZC_OUT];
};

struct srnic_zc_buf {
	struct ubuf_info ubuf;
	struct srnic_zc_ring *ring;
	u32 slot;
};

/* Packets out on every device: the module leaves only once they are back. */
static atomic_t srnic_zc_live = ATOMIC_INIT(0);

/*
 * A ring for @qp's connection, from RTS: its PSNs start anew (at sq_psn),
 * so a ring of an earlier connection, whose packets may still be out,
 * goes its own way (freed with its last packet).  Without memory the QP
 * copies every packet.
 */
int srnic_zc_init(struct srnic_qp *qp)
{
	struct srnic_zc_ring *r;

	srnic_zc_release(qp);
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	refcount_set(&r->ref, 1);
	spin_lock_init(&r->lock);
	r->qp = qp;
	qp->w.zc = r;
	return 0;
}

static void srnic_zc_put(struct srnic_zc_ring *r)
{
	if (refcount_dec_and_test(&r->ref))
		kfree(r);
}

/* The QP goes: its packets out keep the ring, not the QP. */
void srnic_zc_release(struct srnic_qp *qp)
{
	struct srnic_zc_ring *r = qp->w.zc;
	unsigned long flags;

	if (!r)
		return;
	spin_lock_irqsave(&r->lock, flags);
	r->qp = NULL;
	spin_unlock_irqrestore(&r->lock, flags);
	qp->w.zc = NULL;
	srnic_zc_put(r);
}

static void srnic_zc_complete(struct sk_buff *skb, struct ubuf_info *uarg,
			      bool zerocopy_success)
{
	struct srnic_zc_buf *b = container_of(uarg, struct srnic_zc_buf, ubuf);
	struct srnic_zc_ring *r = b->ring;
	unsigned long flags;

	/* Every skb that shares the pages holds a reference (skb_zcopy_set). */
	if (!refcount_dec_and_test(&uarg->refcnt))
		return;
	/*
	 * Module unload waits for srnic_zc_live, then for a grace period: the
	 * section keeps this code's text until the callback is out of it,
	 * in whatever context the stack calls it.
	 */
	rcu_read_lock();
	spin_lock_irqsave(&r->lock, flags);
	r->done[b->slot % SRNIC_ZC_OUT] = true;
	while (r->head != r->tail && r->done[r->head % SRNIC_ZC_OUT])
		r->head++;
	/* A WQE waits for its pages (srnic_zc_released()). */
	if (r->qp && r->waiting) {
		r->waiting = false;
		srnic_engine_kick(r->qp);
	}
	spin_unlock_irqrestore(&r->lock, flags);
	kfree(b);
	srnic_zc_put(r);
	if (atomic_dec_and_test(&srnic_zc_live))
		wake_up_var(&srnic_zc_live);
	rcu_read_unlock();
}

/* The callback, through ubuf_info_ops since 6.10, a member of its own before. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0)
static const struct ubuf_info_ops srnic_zc_ops = {
	.complete = srnic_zc_complete,
};

static void srnic_zc_set_callback(struct ubuf_info *u)
{
	u->ops = &srnic_zc_ops;
}
#else
static void srnic_zc_set_callback(struct ubuf_info *u)
{
	u->callback = srnic_zc_complete;
}
#endif

/*
 * A completion for @qp's zero-copy packet of PSN @psn, or NULL: the ring
 * is full, the PSN is not after the last one out (PSNs go out in order),
 * or there is no memory.  Then the packet is copied.  Its reference is
 * the skb's, and srnic_zc_abort() returns it if the skb never takes it.
 */
struct ubuf_info *srnic_zc_take(struct srnic_qp *qp, u32 psn)
{
	struct srnic_zc_ring *r = qp->w.zc;
	struct srnic_zc_buf *b;
	unsigned long flags;
	bool ok;

	if (!r)
		return NULL;
	b = kmalloc(sizeof(*b), SRNIC_ENGINE_GFP);
	if (!b)
		return NULL;
	spin_lock_irqsave(&r->lock, flags);
	ok = r->tail - r->head < SRNIC_ZC_OUT &&
	     (r->head == r->tail ||
	      srnic_psn_diff(psn, r->psn[(r->tail - 1) % SRNIC_ZC_OUT]) > 0);
	if (ok) {
		b->slot = r->tail++;
		r->psn[b->slot % SRNIC_ZC_OUT] = psn;
		r->done[b->slot % SRNIC_ZC_OUT] = false;
		refcount_inc(&r->ref);
	}
	spin_unlock_irqrestore(&r->lock, flags);
	if (!ok) {
		kfree(b);
		return NULL;
	}
	b->ring = r;
	srnic_zc_set_callback(&b->ubuf);
	b->ubuf.flags = SKBFL_ZEROCOPY_FRAG;
	refcount_set(&b->ubuf.refcnt, 1);
	atomic_inc(&srnic_zc_live);
	return &b->ubuf;
}

/* A completion taken for a packet that was not built: back at once. */
void srnic_zc_abort(struct ubuf_info *uarg)
{
	if (uarg)
		srnic_zc_complete(NULL, uarg, false);
}

/* Whether no zero-copy packet of @qp up to PSN @last is out. */
bool srnic_zc_released(struct srnic_qp *qp, u32 last)
{
	struct srnic_zc_ring *r = qp->w.zc;
	unsigned long flags;
	bool ok;

	if (!r || READ_ONCE(r->head) == READ_ONCE(r->tail))
		return true;
	spin_lock_irqsave(&r->lock, flags);
	ok = r->head == r->tail ||
	     srnic_psn_diff(r->psn[r->head % SRNIC_ZC_OUT], last) > 0;
	r->waiting |= !ok;
	spin_unlock_irqrestore(&r->lock, flags);
	return ok;
}

/* Module exit: every packet out came back (its callback is this module's code). */
void srnic_zc_cleanup(void)
{
	wait_var_event(&srnic_zc_live, !atomic_read(&srnic_zc_live));
	/* A callback past its last access, still in its RCU section. */
	synchronize_rcu();
}
