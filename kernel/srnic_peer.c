// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The transport to peers on this host: every srnic device is in a host-wide
 * registry, a destination GID names the device whose GID table holds it,
 * and a QPN on that device names the peer QP.  A RoCEv2 wire transport for
 * remote peers would take over where no local device owns the GID.
 */
#include <rdma/ib_cache.h>

#include "srnic_loc.h"

static DEFINE_XARRAY_ALLOC(srnic_registry);

int srnic_registry_add(struct srnic_dev *sdev)
{
	return xa_alloc(&srnic_registry, &sdev->id, sdev, xa_limit_31b,
			GFP_KERNEL);
}

void srnic_registry_del(struct srnic_dev *sdev)
{
	if (sdev->id != U32_MAX)
		xa_erase(&srnic_registry, sdev->id);
}

/* The registry id of the srnic device owning RoCEv2 GID @gid, or -1. */
int srnic_dev_by_gid(const u8 *gid)
{
	const struct ib_gid_attr *attr;
	struct srnic_dev *sdev;
	unsigned long id;
	int found = -1;

	xa_lock(&srnic_registry);
	xa_for_each(&srnic_registry, id, sdev) {
		attr = rdma_find_gid_by_port(&sdev->ibdev, (const union ib_gid *)gid,
					     IB_GID_TYPE_ROCE_UDP_ENCAP,
					     SRNIC_PORT, NULL);
		if (!IS_ERR(attr)) {
			rdma_put_gid_attr(attr);
			found = id;
			break;
		}
	}
	xa_unlock(&srnic_registry);
	return found;
}

atomic_t srnic_peer_gen = ATOMIC_INIT(0);

/*
 * Which QPs the engine scans and which QPs peers find change only through
 * these two, under the table's lock, with the device's generation bumped
 * in the same critical section: the engine thread's list of active QPs
 * (srnic_engine.c) is made under that lock and used only while the
 * generation has not changed, or inside the SRCU section that a QP
 * leaving the table waits for.
 */
void srnic_qp_set_active(struct srnic_dev *sdev, u32 qpn, bool active)
{
	xa_lock(&sdev->qps);
	if (active)
		__xa_set_mark(&sdev->qps, qpn, SRNIC_QP_ACTIVE);
	else
		__xa_clear_mark(&sdev->qps, qpn, SRNIC_QP_ACTIVE);
	WRITE_ONCE(sdev->qps_gen, sdev->qps_gen + 1);
	xa_unlock(&sdev->qps);
}

/*
 * Takes QP @qpn out of its device's table.  Then waits for every engine
 * batch that may have begun with the old peer generation: such a batch may
 * still use a cached pointer to the QP (without a reference), so the QP
 * must outlive it.
 */
void srnic_qp_unpublish(struct srnic_dev *sdev, u32 qpn)
{
	xa_lock(&sdev->qps);
	__xa_erase(&sdev->qps, qpn);
	WRITE_ONCE(sdev->qps_gen, sdev->qps_gen + 1);
	xa_unlock(&sdev->qps);
	atomic_inc(&srnic_peer_gen);
	synchronize_srcu_expedited(&srnic_engine_srcu);
}

/* QP @qpn of registry device @dev_id, referenced, or NULL. */
struct srnic_qp *srnic_peer_get(int dev_id, u32 qpn)
{
	struct srnic_qp *qp = NULL;
	struct srnic_dev *sdev;

	if (dev_id < 0)
		return NULL;
	xa_lock(&srnic_registry);
	sdev = xa_load(&srnic_registry, dev_id);
	if (sdev) {
		xa_lock(&sdev->qps);
		qp = xa_load(&sdev->qps, qpn);
		if (qp && !refcount_inc_not_zero(&qp->ref))
			qp = NULL;
		xa_unlock(&sdev->qps);
	}
	xa_unlock(&srnic_registry);
	return qp;
}

void srnic_qp_put(struct srnic_qp *qp)
{
	if (refcount_dec_and_test(&qp->ref))
		complete(&qp->drained);
}
