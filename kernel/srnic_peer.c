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
