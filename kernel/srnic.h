/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * srnic: a software RDMA NIC.  Umbrella header: the objects every part of the
 * driver shares.  Cross-file prototypes live in srnic_loc.h.
 */
#ifndef SRNIC_H
#define SRNIC_H

#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/mutex.h>
#include <linux/list.h>
#include <linux/idr.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "srnic-abi.h"
#include "srnic_compat.h"

#define SRNIC_DRV_NAME		"srnic"
#define SRNIC_LINK_TYPE		"srnic"

/* The one port every srnic device has: RoCEv2 on the bound netdev. */
#define SRNIC_PORT		1

/*
 * Identity.  0x1ead is not an IEEE OUI of any vendor; software devices
 * report an arbitrary non-zero id, as rxe and siw do.
 */
#define SRNIC_VENDOR_ID		0x0001ead0
#define SRNIC_VENDOR_PART_ID	1
#define SRNIC_HW_VER		1
/* 0.1.0, packed as SRNIC_FW_VER_* in srnic-abi.h unpack it. */
#define SRNIC_FW_VER		((0ULL << 32) | (1 << 16) | 0)

/*
 * Limits.  They are reported by query_device and enforced when the objects
 * they count are created; object types the driver cannot create yet fail
 * with EOPNOTSUPP in the core, whatever these say.
 */
#define SRNIC_MAX_UCONTEXT	1024
#define SRNIC_MAX_PD		(64 * 1024)
#define SRNIC_MAX_QP		(64 * 1024)
#define SRNIC_MAX_QP_WR		(32 * 1024)
#define SRNIC_MAX_SGE		32
#define SRNIC_MAX_CQ		(64 * 1024)
#define SRNIC_MAX_CQE		((1 << 22) - 1)
#define SRNIC_MAX_MR		(256 * 1024)
#define SRNIC_MAX_MR_SIZE	(1ULL << 40)
#define SRNIC_MAX_MSG_SIZE	(1U << 31)
#define SRNIC_GID_TABLE_LEN	32
#define SRNIC_UARS_PER_UCONTEXT	1
#define SRNIC_NUM_ENGINES	1

struct srnic_dev {
	struct ib_device ibdev;		/* first: ib_alloc_device() */
	struct list_head dev_list;	/* srnic_devices, see srnic_main.c */
	struct net_device *ndev;	/* held by the core (ib_device_set_netdev) */

	/* What query_device reports: the core zeroes ibdev.attrs first. */
	struct ib_device_attr attr;

	/* Last port state announced with an async event; under RTNL. */
	enum ib_port_state port_state;

	/* Engine status page, mapped read-only into every context. */
	struct page *status_page;

	atomic_t num_ucontext;
	atomic_t num_pd;
	struct ida pd_ida;
};

enum srnic_mmap_type {
	SRNIC_MMAP_UAR,		/* context-private doorbell page, writable */
	SRNIC_MMAP_STATUS,	/* device engine status page, read-only */
};

struct srnic_mmap_entry {
	struct rdma_user_mmap_entry rdma;
	enum srnic_mmap_type type;
	struct page *page;
	bool owns_page;		/* freed with the entry (UAR) or not (status) */
};

struct srnic_ucontext {
	struct ib_ucontext ibuc;
	struct srnic_mmap_entry *uar;
	struct srnic_mmap_entry *status;
};

struct srnic_pd {
	struct ib_pd ibpd;
	u32 pdn;
};

/* Queues: objects the control path fills in; for now only their core part. */
struct srnic_cq {
	struct ib_cq ibcq;
};

struct srnic_qp {
	struct ib_qp ibqp;
};

static inline struct srnic_dev *to_sdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct srnic_dev, ibdev);
}

static inline struct srnic_ucontext *to_suc(struct ib_ucontext *ibuc)
{
	return container_of(ibuc, struct srnic_ucontext, ibuc);
}

static inline struct srnic_pd *to_spd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct srnic_pd, ibpd);
}

static inline struct srnic_mmap_entry *
to_smmap(struct rdma_user_mmap_entry *rdma)
{
	return container_of(rdma, struct srnic_mmap_entry, rdma);
}

#define srnic_dbg(sdev, fmt, ...) ibdev_dbg(&(sdev)->ibdev, fmt, ##__VA_ARGS__)
#define srnic_info(sdev, fmt, ...) ibdev_info(&(sdev)->ibdev, fmt, ##__VA_ARGS__)

#endif /* SRNIC_H */
