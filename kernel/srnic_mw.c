// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Memory windows: allocation, and the three things the engine does with
 * them — bind (a BIND_MW work request), invalidate (LOCAL_INV, or a
 * SEND_WITH_INV arriving at the window's QP) and resolve an rkey that names
 * one for a remote access.  All three run in the engine without sleeping:
 * a window is found under RCU and changed or read under its spinlock;
 * deallocation unpublishes it and waits a grace period.
 *
 * A bound window holds a reference to its MR and counts in mr->num_mw, so
 * the MR (its translation, PD and rights) cannot change under the window:
 * deregistering or re-registering an MR with bound windows fails (EBUSY),
 * as the IB spec requires.
 */
#include "srnic_loc.h"

/* Rights a bind may ask for; LOCAL_WRITE is accepted and means nothing. */
#define SRNIC_MW_ACCESS \
	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ | \
	 IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC | IB_ZERO_BASED)
#define SRNIC_MW_REMOTE \
	(IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)

bool srnic_mr_mw_hold(struct srnic_mr *mr)
{
	bool ok;

	spin_lock(&mr->mw_lock);
	ok = !mr->mw_closed;
	if (ok) {
		mr->num_mw++;
		kref_get(&mr->ref);
	}
	spin_unlock(&mr->mw_lock);
	return ok;
}

void srnic_mr_mw_release(struct srnic_mr *mr)
{
	spin_lock(&mr->mw_lock);
	mr->num_mw--;
	spin_unlock(&mr->mw_lock);
	srnic_mr_put(mr);
}

int srnic_mr_mw_close(struct srnic_mr *mr)
{
	int err = 0;

	spin_lock(&mr->mw_lock);
	if (mr->num_mw)
		err = -EBUSY;
	else
		mr->mw_closed = true;
	spin_unlock(&mr->mw_lock);
	return err;
}

void srnic_mr_mw_reopen(struct srnic_mr *mr)
{
	spin_lock(&mr->mw_lock);
	mr->mw_closed = false;
	spin_unlock(&mr->mw_lock);
}

static u32 srnic_mw_key(u32 index, u8 key)
{
	return ((index | SRNIC_MKEY_MW) << SRNIC_MKEY_KEY_BITS) | key;
}

int srnic_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct srnic_mr_table *mrt = &to_sdev(ibmw->device)->mrt;
	struct srnic_mw *mw = to_smw(ibmw);
	u32 index;
	int err;

	if (ibmw->type != IB_MW_TYPE_1 && ibmw->type != IB_MW_TYPE_2)
		return -EINVAL;
	/* No driver data is defined; anything sent must be zero. */
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EOPNOTSUPP;
	if (!mrt->mw_gen)
		return -ENOMEM;
	spin_lock_init(&mw->lock);
	err = xa_alloc(&mrt->mw_xa, &index, NULL, XA_LIMIT(1, SRNIC_MAX_MW),
		       GFP_KERNEL);
	if (err)
		return err == -EBUSY ? -ENOMEM : err;
	mw->index = index;
	mw->rkey = srnic_mw_key(index, mrt->mw_gen[index]);
	ibmw->rkey = mw->rkey;
	xa_store(&mrt->mw_xa, index, mw, GFP_KERNEL);
	return 0;
}

/*
 * No grace period: the engine takes a window's lock only while it holds the
 * table's lock (srnic_mw_lock), so once the window has left the table under
 * that lock and its own lock has been taken once more, no engine holds it or
 * can find it, and the core may free it as soon as this returns.
 */
int srnic_dealloc_mw(struct ib_mw *ibmw)
{
	struct srnic_mr_table *mrt = &to_sdev(ibmw->device)->mrt;
	struct srnic_mw *mw = to_smw(ibmw);
	struct srnic_mr *mr;

	xa_lock(&mrt->mw_xa);
	spin_lock(&mw->lock);
	mr = mw->mr;
	mw->mr = NULL;
	/* The next window here gets a key byte its last rkey did not have. */
	mrt->mw_gen[mw->index] = (mw->rkey & SRNIC_MKEY_KEY_MASK) + 1;
	spin_unlock(&mw->lock);
	__xa_erase(&mrt->mw_xa, mw->index);
	xa_unlock(&mrt->mw_xa);
	if (mr)
		srnic_mr_mw_release(mr);
	return 0;
}

/*
 * The window an rkey names, with its lock held (taken under the table's
 * lock, which srnic_dealloc_mw relies on); NULL if none.
 */
static struct srnic_mw *srnic_mw_lock(struct srnic_dev *sdev, u32 key)
{
	struct xarray *xa = &sdev->mrt.mw_xa;
	struct srnic_mw *mw;

	if (!srnic_mkey_is_mw(key))
		return NULL;
	xa_lock(xa);
	mw = xa_load(xa, srnic_mkey_index(key) & ~SRNIC_MKEY_MW);
	if (mw)
		spin_lock(&mw->lock);
	xa_unlock(xa);
	return mw;
}

/* The checks of a bind (IB spec 10.6.7.2), with mw->lock held. */
static int srnic_mw_bind_check(struct srnic_qp *qp, struct srnic_mw *mw,
			       struct srnic_mr *mr, bool type1,
			       const struct srnic_wqe_bind *b)
{
	struct srnic_pd *pd = to_spd(qp->ibqp.pd);
	int access = b->access;

	if (mw->ibmw.pd != qp->ibqp.pd)
		return -EACCES;
	/* ibv_bind_mw() binds type 1 windows, a BIND_MW request type 2. */
	if (type1 != (mw->ibmw.type == IB_MW_TYPE_1))
		return -EINVAL;
	if (type1 && (access & IB_ZERO_BASED))
		return -EINVAL;
	if (!type1 && (mw->mr || !b->length))
		return -EINVAL;		/* not free, or an empty type 2 bind */
	if (!mr)
		return 0;
	if (srnic_mr_check(mr, pd, IB_ACCESS_MW_BIND, b->addr, b->length))
		return -EACCES;
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & IB_ACCESS_LOCAL_WRITE))
		return -EACCES;
	return 0;
}

/* BIND_MW, for @qp's engine.  0 or a negative errno (MW_BIND_ERR). */
int srnic_mw_bind(struct srnic_qp *qp, const struct srnic_wqe_ctrl *ctrl,
		  const struct srnic_wqe_bind *b)
{
	struct srnic_dev *sdev = to_sdev(qp->ibqp.device);
	struct srnic_mr *mr = NULL, *old = NULL;
	struct srnic_mw *mw;
	int err;

	if ((b->access & ~SRNIC_MW_ACCESS) ||
	    srnic_mkey_index(b->new_rkey) != srnic_mkey_index(b->mw_rkey))
		return -EINVAL;
	if (b->length) {
		mr = srnic_mr_get(sdev, b->mr_lkey);
		if (!mr)
			return -EINVAL;
	}
	mw = srnic_mw_lock(sdev, b->mw_rkey);
	if (!mw) {
		err = -EINVAL;
		goto out;
	}
	err = srnic_mw_bind_check(qp, mw, mr, ctrl->flags & SRNIC_WQE_BIND_TYPE1,
				  b);
	if (!err && mr && !srnic_mr_mw_hold(mr))
		err = -EINVAL;		/* the MR is being deregistered */
	if (!err) {
		old = mw->mr;
		mw->mr = mr;
		mw->rkey = b->new_rkey;
		mw->access = mr ? b->access & SRNIC_MW_REMOTE : 0;
		mw->zero_based = b->access & IB_ZERO_BASED;
		mw->addr = mr ? b->addr : 0;
		mw->length = mr ? b->length : 0;
		mw->qpn = mw->ibmw.type == IB_MW_TYPE_2 ? qp->qpn : 0;
	}
	spin_unlock(&mw->lock);
out:
	if (old)
		srnic_mr_mw_release(old);
	if (mr)
		srnic_mr_put(mr);
	return err;
}

/*
 * Invalidates the type 2 window @rkey names: LOCAL_INV posted to @qp, or
 * (@remote) a SEND_WITH_INV received by @qp, which must be the QP the
 * window was bound through.  0 or a negative errno.
 */
int srnic_mw_invalidate(struct srnic_qp *qp, u32 rkey, bool remote)
{
	struct srnic_dev *sdev = to_sdev(qp->ibqp.device);
	struct srnic_mr *old = NULL;
	struct srnic_mw *mw;
	int err = -EINVAL;

	mw = srnic_mw_lock(sdev, rkey);
	if (mw) {
		if (mw->rkey == rkey && mw->ibmw.type == IB_MW_TYPE_2 &&
		    mw->mr && mw->ibmw.pd == qp->ibqp.pd &&
		    (!remote || mw->qpn == qp->qpn)) {
			old = mw->mr;
			mw->mr = NULL;
			mw->access = 0;
			mw->length = 0;
			err = 0;
		}
		spin_unlock(&mw->lock);
	}
	if (old)
		srnic_mr_mw_release(old);
	return err;
}

/*
 * A remote access of @len bytes at @va through the window @rkey names,
 * arriving at @qp: on success @sg holds the window's MR (referenced) at
 * the translated iova.  -EACCES for any violation.
 */
int srnic_mw_range(struct srnic_qp *qp, u32 rkey, u64 va, u64 len,
		   int access, struct srnic_sg *sg)
{
	struct srnic_dev *sdev = to_sdev(qp->ibqp.device);
	struct srnic_mr *mr = NULL;
	struct srnic_mw *mw;
	u64 off, iova = 0;

	srnic_sg_init(sg, NULL, 0);
	mw = srnic_mw_lock(sdev, rkey);
	if (mw) {
		off = mw->zero_based ? va : va - mw->addr;
		if (mw->rkey == rkey && mw->mr &&
		    mw->ibmw.pd == qp->ibqp.pd &&
		    (mw->ibmw.type == IB_MW_TYPE_1 || mw->qpn == qp->qpn) &&
		    (mw->access & access) == access &&
		    (mw->zero_based || va >= mw->addr) &&
		    srnic_range_within(0, mw->length, off, len)) {
			mr = mw->mr;
			iova = mw->addr + off;
			/* The window's own reference keeps it above zero. */
			kref_get(&mr->ref);
		}
		spin_unlock(&mw->lock);
	}
	if (!mr)
		return -EACCES;
	sg->e[0] = (struct srnic_sge_ref){
		.mr = mr, .iova = iova, .len = len,
	};
	sg->n = 1;
	sg->total = len;
	return 0;
}
