// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Device and port queries, user contexts and protection domains: the verbs
 * entry points that own no queue.
 */
#include <net/addrconf.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>

#include "srnic_loc.h"

void srnic_init_device_attr(struct srnic_dev *sdev, struct ib_device_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	addrconf_addr_eui48((unsigned char *)&attr->sys_image_guid,
			    sdev->ndev->dev_addr);
	attr->vendor_id = SRNIC_VENDOR_ID;
	attr->vendor_part_id = SRNIC_VENDOR_PART_ID;
	attr->hw_ver = SRNIC_HW_VER;
	attr->fw_ver = SRNIC_FW_VER;
	attr->max_mr_size = SRNIC_MAX_MR_SIZE;
	attr->page_size_cap = SRNIC_MR_PGSZ_BITMAP;
	attr->max_qp = SRNIC_MAX_QP;
	attr->max_qp_wr = SRNIC_MAX_QP_WR;
	attr->max_send_sge = SRNIC_MAX_SGE;
	attr->max_recv_sge = SRNIC_MAX_SGE;
	attr->max_sge_rd = SRNIC_MAX_SGE;
	attr->max_cq = SRNIC_MAX_CQ;
	attr->max_cqe = SRNIC_MAX_CQE;
	attr->max_mr = srnic_max_mr;
	attr->max_mw = SRNIC_MAX_MW;
	attr->max_dm_size = SRNIC_MAX_DM_SIZE;
	attr->max_pd = SRNIC_MAX_PD;
	attr->max_pkeys = 1;
	attr->max_qp_rd_atom = SRNIC_MAX_QP_RD_ATOM;
	attr->max_qp_init_rd_atom = SRNIC_MAX_QP_RD_ATOM;
	attr->max_res_rd_atom = SRNIC_MAX_QP_RD_ATOM * SRNIC_MAX_QP;
	attr->max_srq = SRNIC_MAX_SRQ;
	attr->max_srq_wr = SRNIC_MAX_SRQ_WR;
	attr->max_srq_sge = SRNIC_MAX_SGE;
	attr->max_wq_type_rq = SRNIC_MAX_WQ;
	attr->rss_caps.supported_qpts = BIT(IB_QPT_RAW_PACKET);
	attr->rss_caps.max_rwq_indirection_tables = SRNIC_MAX_WQ;
	attr->rss_caps.max_rwq_indirection_table_size =
		SRNIC_MAX_RWQ_IND_TABLE_SIZE;
	attr->max_raw_ethy_qp = SRNIC_MAX_QP;
	attr->max_ah = SRNIC_MAX_AH;
	attr->max_mcast_grp = SRNIC_MAX_MCAST_GRP;
	attr->max_mcast_qp_attach = SRNIC_MAX_MCAST_QP_ATTACH;
	attr->max_total_mcast_qp_attach = SRNIC_MAX_MCAST_GRP *
					  SRNIC_MAX_MCAST_QP_ATTACH;
	attr->local_ca_ack_delay = SRNIC_LOCAL_CA_ACK_DELAY;
	/* List operations execute at once: max_ops only bounds a request. */
	attr->tm_caps.max_rndv_hdr_size = SRNIC_TM_MAX_RNDV_HDR;
	attr->tm_caps.max_num_tags = SRNIC_TM_MAX_TAGS;
	attr->tm_caps.flags = IB_TM_CAP_RNDV_RC;
	attr->tm_caps.max_ops = SRNIC_TM_MAX_TAGS;
	attr->tm_caps.max_sge = SRNIC_TM_MAX_SGE;
	/*
	 * Memory windows of type 1 and 2B; "memory management extensions":
	 * fast registration for kernel consumers (REG_MR, LOCAL_INV and
	 * SEND_WITH_INV of their MRs), LOCAL_INV and SEND_WITH_INV of type 2
	 * windows for everyone.
	 */
	attr->max_fast_reg_page_list_len = SRNIC_MAX_FR_PAGES;
	attr->device_cap_flags = IB_DEVICE_PORT_ACTIVE_EVENT |
				 IB_DEVICE_RC_RNR_NAK_GEN |
				 IB_DEVICE_SYS_IMAGE_GUID |
				 IB_DEVICE_MEM_WINDOW |
				 IB_DEVICE_MEM_WINDOW_TYPE_2B |
				 IB_DEVICE_MEM_MGT_EXTENSIONS |
				 IB_DEVICE_XRC | SRNIC_DEVICE_ATOMIC_WRITE |
				 SRNIC_DEVICE_FLUSH_GLOBAL;
	attr->atomic_cap = IB_ATOMIC_HCA;
	/*
	 * Completion timestamps are CLOCK_MONOTONIC in ns: a 1 GHz clock
	 * (in kHz here) using all 64 bits.
	 */
	attr->hca_core_clock = 1000000;
	attr->timestamp_mask = U64_MAX;
	/*
	 * Kernel PDs share the device's local_dma_lkey: an MR per PD would
	 * take a slot of the MR table (the one ib_mad's PD needs on every
	 * device among them) from what max_mr promises users.
	 */
	attr->kernel_cap_flags = IBK_ALLOW_USER_UNREG | IBK_ON_DEMAND_PAGING |
				 IBK_LOCAL_DMA_LKEY;
	/* ODP: explicit and implicit MRs, every operation of every transport. */
	attr->odp_caps.general_caps = IB_ODP_SUPPORT | IB_ODP_SUPPORT_IMPLICIT;
	attr->odp_caps.per_transport_caps.rc_odp_caps =
		IB_ODP_SUPPORT_SEND | IB_ODP_SUPPORT_RECV |
		IB_ODP_SUPPORT_WRITE | IB_ODP_SUPPORT_READ |
		IB_ODP_SUPPORT_ATOMIC | IB_ODP_SUPPORT_SRQ_RECV;
	attr->odp_caps.per_transport_caps.uc_odp_caps =
		IB_ODP_SUPPORT_SEND | IB_ODP_SUPPORT_RECV |
		IB_ODP_SUPPORT_WRITE | IB_ODP_SUPPORT_SRQ_RECV;
	attr->odp_caps.per_transport_caps.ud_odp_caps =
		IB_ODP_SUPPORT_SEND | IB_ODP_SUPPORT_RECV |
		IB_ODP_SUPPORT_SRQ_RECV;
	attr->odp_caps.per_transport_caps.xrc_odp_caps =
		attr->odp_caps.per_transport_caps.rc_odp_caps;
}

static int srnic_query_device(struct ib_device *ibdev,
			      struct ib_device_attr *attr,
			      struct ib_udata *udata)
{
	/* No driver-specific query data is defined. */
	if (udata->inlen || udata->outlen)
		return -EINVAL;
	*attr = to_sdev(ibdev)->attr;
	return 0;
}

enum ib_port_state srnic_netdev_port_state(const struct net_device *ndev)
{
	return netif_running(ndev) && netif_carrier_ok(ndev) ? IB_PORT_ACTIVE :
								IB_PORT_DOWN;
}

static int srnic_query_port(struct ib_device *ibdev, u32 port,
			    struct ib_port_attr *attr)
{
	struct srnic_dev *sdev = to_sdev(ibdev);
	struct net_device *ndev = sdev->ndev;

	/* The core zeroed *attr and validated port. */
	attr->state = srnic_netdev_port_state(ndev);
	attr->phys_state = attr->state == IB_PORT_ACTIVE ?
				   IB_PORT_PHYS_STATE_LINK_UP :
				   IB_PORT_PHYS_STATE_DISABLED;
	attr->max_mtu = IB_MTU_4096;
	attr->active_mtu = iboe_get_mtu(READ_ONCE(ndev->mtu));
	attr->gid_tbl_len = SRNIC_GID_TABLE_LEN;
	attr->pkey_tbl_len = 1;
	attr->max_msg_sz = SRNIC_MAX_MSG_SIZE;
	attr->max_vl_num = 1;
	/* Connection management through QP1 (ib_cm answers for the port). */
	attr->port_cap_flags = IB_PORT_CM_SUP;
	/*
	 * The netdev's link speed; while the netdev is being unregistered the
	 * core no longer finds it, and the slowest speed is reported instead
	 * of failing the query (the core's GID cache would log the failure).
	 */
	if (ib_get_eth_speed(ibdev, port, &attr->active_speed,
			     &attr->active_width)) {
		attr->active_speed = IB_SPEED_SDR;
		attr->active_width = IB_WIDTH_1X;
	}
	return 0;
}

static int srnic_get_port_immutable(struct ib_device *ibdev, u32 port,
				    struct ib_port_immutable *immutable)
{
	struct ib_port_attr attr;
	int err;

	err = ib_query_port(ibdev, port, &attr);
	if (err)
		return err;
	immutable->pkey_tbl_len = attr.pkey_tbl_len;
	immutable->gid_tbl_len = attr.gid_tbl_len;
	/*
	 * RoCEv2 with MADs and CM over QP1: the port gets RoCEv2 GIDs from
	 * the netdev's addresses, and ib_mad, ib_cm and rdma_cm bind it.
	 */
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static enum rdma_link_layer srnic_get_link_layer(struct ib_device *ibdev,
						 u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

static int srnic_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			    u16 *pkey)
{
	if (index > 0)
		return -EINVAL;
	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

static void srnic_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	u64 v = to_sdev(ibdev)->attr.fw_ver;

	snprintf(str, IB_FW_VERSION_NAME_MAX, "%u.%u.%u", SRNIC_FW_VER_MAJOR(v),
		 SRNIC_FW_VER_MINOR(v), SRNIC_FW_VER_SUB(v));
}

static int srnic_alloc_ucontext(struct ib_ucontext *ibuc,
				struct ib_udata *udata)
{
	struct srnic_dev *sdev = to_sdev(ibuc->device);
	struct srnic_ucontext *suc = to_suc(ibuc);
	struct srnic_alloc_ucontext_resp resp = {};
	struct srnic_alloc_ucontext_req req = {};
	int err;

	/* The request is optional; what we do not understand must be zero. */
	if (udata->inlen) {
		err = ib_copy_from_udata(&req, udata,
					 min(udata->inlen, sizeof(req)));
		if (err)
			return err;
		if (req.comp_mask || req.reserved ||
		    !ib_is_udata_cleared(udata, sizeof(req),
					 udata->inlen > sizeof(req) ?
						 udata->inlen - sizeof(req) : 0))
			return -EOPNOTSUPP;
	}
	if (udata->outlen < sizeof(resp))
		return -EINVAL;

	if (atomic_inc_return(&sdev->num_ucontext) > SRNIC_MAX_UCONTEXT) {
		err = -ENOMEM;
		goto err_count;
	}

	err = srnic_uar_init(suc);
	if (err)
		goto err_uar;
	suc->status = srnic_mmap_insert(suc, SRNIC_MMAP_STATUS,
					sdev->status_page, false,
					&resp.status_mmap_offset);
	if (IS_ERR(suc->status)) {
		err = PTR_ERR(suc->status);
		suc->status = NULL;
		goto err_uar;
	}

	/* A fresh context's first two entries: the ABI fixes them. */
	err = srnic_uar0_offset(suc, &resp.uar_mmap_offset);
	if (err)
		goto err_status;
	if (resp.uar_mmap_offset != SRNIC_UAR0_MMAP_OFFSET ||
	    resp.status_mmap_offset != SRNIC_STATUS_MMAP_OFFSET) {
		err = -EPROTO;
		goto err_status;
	}
	resp.abi_version = SRNIC_ABI_VERSION;
	resp.page_size = SRNIC_PAGE_SIZE;
	resp.num_uars = 1;
	resp.dbs_per_uar = SRNIC_DBS_PER_UAR;
	resp.num_engines = sdev->sched.nthreads;
	err = ib_copy_to_udata(udata, &resp, sizeof(resp));
	if (err)
		goto err_status;
	return 0;

err_status:
	rdma_user_mmap_entry_remove(&suc->status->rdma);
err_uar:
	srnic_uar_cleanup(suc);
err_count:
	atomic_dec(&sdev->num_ucontext);
	return err;
}

/*
 * ibv_import_device: what another process learns of a context it shares.
 * The core answers the generic part; the offsets a provider needs are
 * fixed by the ABI (SRNIC_UAR0_MMAP_OFFSET, SRNIC_STATUS_MMAP_OFFSET).
 */
static int srnic_query_ucontext(struct ib_ucontext *ibuc,
				struct uverbs_attr_bundle *attrs)
{
	return 0;
}

static void srnic_dealloc_ucontext(struct ib_ucontext *ibuc)
{
	struct srnic_ucontext *suc = to_suc(ibuc);

	rdma_user_mmap_entry_remove(&suc->status->rdma);
	srnic_uar_cleanup(suc);
	atomic_dec(&to_sdev(ibuc->device)->num_ucontext);
}

/*
 * Device removal with contexts open.  Having this op makes the core tear the
 * contexts down and return at once (the process sees DEVICE_FATAL) instead of
 * waiting for every process to close its device file.  Every srnic mapping is
 * made with rdma_user_mmap_io(), so the core has already zapped them; there
 * is no other state to detach.
 */
static void srnic_disassociate_ucontext(struct ib_ucontext *ibuc)
{
}

static int srnic_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct srnic_dev *sdev = to_sdev(ibpd->device);
	struct srnic_pd *spd = to_spd(ibpd);
	struct srnic_alloc_pd_resp resp = {};
	int pdn, err;

	pdn = ida_alloc_max(&sdev->pd_ida, SRNIC_MAX_PD - 1, GFP_KERNEL);
	if (pdn < 0)
		return pdn == -ENOSPC ? -ENOMEM : pdn;
	spd->pdn = pdn;

	if (udata && udata->outlen) {
		resp.pdn = pdn;
		err = ib_copy_to_udata(udata, &resp,
				       min(udata->outlen, sizeof(resp)));
		if (err) {
			ida_free(&sdev->pd_ida, pdn);
			return err;
		}
	}
	atomic_inc(&sdev->num_pd);
	return 0;
}

static int srnic_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct srnic_dev *sdev = to_sdev(ibpd->device);

	ida_free(&sdev->pd_ida, to_spd(ibpd)->pdn);
	atomic_dec(&sdev->num_pd);
	return 0;
}

int srnic_udata_in(struct ib_udata *udata, void *req, size_t len)
{
	int err;

	if (udata->inlen < len)
		return -EINVAL;
	err = ib_copy_from_udata(req, udata, len);
	if (err)
		return err;
	if (!ib_is_udata_cleared(udata, len, udata->inlen - len))
		return -EOPNOTSUPP;
	return 0;
}

const struct ib_device_ops srnic_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = SRNIC_ABI_VERSION,
	.device_group = &srnic_attr_group,

	.query_device = srnic_query_device,
	.query_port = srnic_query_port,
	.alloc_hw_port_stats = srnic_alloc_hw_port_stats,
	.get_hw_stats = srnic_get_hw_stats,
	.counter_alloc_stats = srnic_counter_alloc_stats,
	.counter_bind_qp = srnic_counter_bind_qp,
	.counter_unbind_qp = srnic_counter_unbind_qp,
	.counter_update_stats = srnic_counter_update_stats,
	.counter_dealloc = srnic_counter_dealloc,
	.fill_res_qp_entry = srnic_fill_res_qp_entry,
	.fill_res_qp_entry_raw = srnic_fill_res_qp_entry_raw,
	.fill_res_cq_entry = srnic_fill_res_cq_entry,
	.fill_res_mr_entry = srnic_fill_res_mr_entry,
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
	.fill_res_srq_entry = srnic_fill_res_srq_entry,
#endif
	.get_port_immutable = srnic_get_port_immutable,
	.get_link_layer = srnic_get_link_layer,
	.query_pkey = srnic_query_pkey,
	.get_dev_fw_str = srnic_get_dev_fw_str,

	.alloc_ucontext = srnic_alloc_ucontext,
	.query_ucontext = srnic_query_ucontext,
	.dealloc_ucontext = srnic_dealloc_ucontext,
	.disassociate_ucontext = srnic_disassociate_ucontext,
	.mmap = srnic_mmap,
	.mmap_free = srnic_mmap_free,

	.alloc_pd = srnic_alloc_pd,
	.dealloc_pd = srnic_dealloc_pd,

	.create_cq = srnic_create_cq,
	.destroy_cq = srnic_destroy_cq,
	.resize_cq = srnic_resize_cq,
	.poll_cq = srnic_poll_cq,
	.req_notify_cq = srnic_req_notify_cq,
	.create_qp = srnic_create_qp,
	.modify_qp = srnic_modify_qp,
	.query_qp = srnic_query_qp,
	.destroy_qp = srnic_destroy_qp,
	.create_srq = srnic_create_srq,
	.modify_srq = srnic_modify_srq,
	.query_srq = srnic_query_srq,
	.destroy_srq = srnic_destroy_srq,
	.create_ah = srnic_create_ah,
	.create_user_ah = srnic_create_ah,
	.destroy_ah = srnic_destroy_ah,
	.post_send = srnic_post_send,
	.post_recv = srnic_post_recv,
	.post_srq_recv = srnic_post_srq_recv,
	.attach_mcast = srnic_attach_mcast,
	.detach_mcast = srnic_detach_mcast,
	.get_dma_mr = srnic_get_dma_mr,
	.alloc_mr = srnic_alloc_mr,
	.map_mr_sg = srnic_map_mr_sg,
	.reg_user_mr = srnic_reg_user_mr,
	.rereg_user_mr = srnic_rereg_user_mr,
	.dereg_mr = srnic_dereg_mr,
	.alloc_mw = srnic_alloc_mw,
	.alloc_xrcd = srnic_alloc_xrcd,
	.dealloc_xrcd = srnic_dealloc_xrcd,
	.advise_mr = srnic_advise_mr,
	.alloc_dm = srnic_alloc_dm,
	.dealloc_dm = srnic_dealloc_dm,
	.reg_dm_mr = srnic_reg_dm_mr,
	.dealloc_mw = srnic_dealloc_mw,
	.create_flow = srnic_create_flow,
	.destroy_flow = srnic_destroy_flow,
	.create_wq = srnic_create_wq,
	.modify_wq = srnic_modify_wq,
	.destroy_wq = srnic_destroy_wq,
	.create_rwq_ind_table = srnic_create_rwq_ind_table,
	.destroy_rwq_ind_table = srnic_destroy_rwq_ind_table,

	INIT_RDMA_OBJ_SIZE(ib_cq, srnic_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_pd, srnic_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, srnic_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, srnic_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ah, srnic_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_mw, srnic_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_xrcd, srnic_xrcd, ibxrcd),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, srnic_ucontext, ibuc),
	INIT_RDMA_OBJ_SIZE(ib_rwq_ind_table, srnic_ind_tbl, ibtbl),
};
