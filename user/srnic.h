/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/* libsrnic: the rdma-core provider for srnic devices.  Shared declarations. */
#ifndef SRNIC_USER_H
#define SRNIC_USER_H

#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/ib_user_ioctl_verbs.h>

#include "verbs_provider.h"
#include "srnic-abi.h"

/* Driver data of the commands, on top of the core commands. */
VERBS_DRV_CMD(srnic_get_context, ibv_get_context, ib_uverbs_get_context_resp,
	      srnic_alloc_ucontext_req, srnic_alloc_ucontext_resp);
/* alloc_pd has no driver request, only a driver response. */
struct srnic_alloc_pd_cmd_resp {
	struct ib_uverbs_alloc_pd_resp ibv_resp;
	struct srnic_alloc_pd_resp drv_payload;
};
static_assert(sizeof(struct srnic_alloc_pd_cmd_resp) ==
	      sizeof(struct ib_uverbs_alloc_pd_resp) +
	      sizeof(struct srnic_alloc_pd_resp), "alloc_pd resp padding");

struct srnic_device {
	struct verbs_device vdev;
};

struct srnic_context {
	struct verbs_context vctx;	/* libibverbs' part, first */
	void *uar;			/* num_uars doorbell pages */
	size_t uar_len;
	uint32_t dbs_per_uar;
	uint32_t num_engines;
	/* Engine status, kernel-written, mapped read-only. */
	const volatile struct srnic_engine_status *status;
};

struct srnic_pd {
	struct ibv_pd ibpd;
	uint32_t pdn;
};

static inline struct srnic_context *to_sctx(struct ibv_context *ibctx)
{
	return (struct srnic_context *)((char *)ibctx -
					offsetof(struct srnic_context,
						 vctx.context));
}

static inline struct srnic_pd *to_spd(struct ibv_pd *ibpd)
{
	return (struct srnic_pd *)((char *)ibpd - offsetof(struct srnic_pd, ibpd));
}

#endif /* SRNIC_USER_H */
