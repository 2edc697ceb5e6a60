// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Address handles for UD on RoCEv2.  The core has resolved the destination
 * MAC from the GID before we are called; the provider builds its address
 * vector from the attributes and the MAC we return.  Kernel consumers
 * (ib_mad, ib_cm) create AHs in atomic context: nothing here sleeps.
 */
#include "srnic_loc.h"

int srnic_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
			 struct ib_udata *udata)
{
	struct srnic_dev *sdev = to_sdev(ibah->device);
	const struct rdma_ah_attr *ah = init->ah_attr;
	struct srnic_create_ah_resp resp = {};
	struct srnic_ah *sah = to_sah(ibah);
	const struct ib_global_route *grh;
	int err;

	if (ah->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    !(rdma_ah_get_ah_flags(ah) & IB_AH_GRH) ||
	    rdma_ah_get_port_num(ah) != SRNIC_PORT)
		return -EINVAL;
	if (atomic_inc_return(&sdev->num_ah) > SRNIC_MAX_AH) {
		atomic_dec(&sdev->num_ah);
		return -ENOMEM;
	}
	grh = rdma_ah_read_grh(ah);
	memcpy(sah->av.dgid, grh->dgid.raw, sizeof(sah->av.dgid));
	memcpy(sah->av.dmac, ah->roce.dmac, ETH_ALEN);
	sah->av.sgid_index = grh->sgid_index;
	sah->av.hop_limit = grh->hop_limit;
	sah->av.flow_label = grh->flow_label;
	sah->av.traffic_class = grh->traffic_class;
	sah->av.sl = rdma_ah_get_sl(ah);

	if (udata && udata->outlen) {
		memcpy(resp.dmac, ah->roce.dmac, ETH_ALEN);
		err = ib_copy_to_udata(udata, &resp,
				       min(udata->outlen, sizeof(resp)));
		if (err) {
			atomic_dec(&sdev->num_ah);
			return err;
		}
	}
	return 0;
}

int srnic_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	atomic_dec(&to_sdev(ibah->device)->num_ah);
	return 0;
}
