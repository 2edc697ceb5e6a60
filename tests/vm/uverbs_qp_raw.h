/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Raw uverbs queue pairs for the VM suites: create, modify, query and destroy
 * a QP with rings the test owns, and ring its send doorbell by hand (the
 * doorbell record, the UAR slot, then the zero-WR post_send that wakes the
 * engine).  Only srnic's driver data is spoken here: a test that needs these
 * helpers runs on srnic devices only.  Builds on uverbs_raw.h.
 */
#ifndef SRNIC_UVERBS_QP_RAW_H
#define SRNIC_UVERBS_QP_RAW_H

#include <stdatomic.h>
#include <sys/mman.h>

#include "uverbs_raw.h"

struct srnic_raw_qp {
	struct ib_uverbs_create_qp_resp core;
	struct srnic_create_qp_resp drv;
};

/* Capabilities of a raw QP, as ibv_qp_cap holds them. */
struct srnic_raw_qp_caps {
	uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge;
	uint32_t max_inline_data;
};

static inline int uverbs_create_qp(int fd, uint32_t pd_handle,
				   uint32_t send_cq, uint32_t recv_cq,
				   uint8_t qp_type,
				   const struct srnic_raw_qp_caps *caps,
				   const struct srnic_create_qp_req *req,
				   struct srnic_raw_qp *out)
{
	struct ib_uverbs_create_qp cmd = {};

	memset(out, 0, sizeof(*out));
	cmd.response = (uintptr_t)out;
	cmd.pd_handle = pd_handle;
	cmd.send_cq_handle = send_cq;
	cmd.recv_cq_handle = recv_cq;
	cmd.max_send_wr = caps->max_send_wr;
	cmd.max_recv_wr = caps->max_recv_wr;
	cmd.max_send_sge = caps->max_send_sge;
	cmd.max_recv_sge = caps->max_recv_sge;
	cmd.max_inline_data = caps->max_inline_data;
	cmd.sq_sig_all = 1;
	cmd.qp_type = qp_type;
	return uverbs_write(fd, IB_USER_VERBS_CMD_CREATE_QP, &cmd, sizeof(cmd),
			    req, sizeof(*req), sizeof(*out));
}

static inline int uverbs_destroy_qp(int fd, uint32_t handle)
{
	struct ib_uverbs_destroy_qp_resp resp;
	struct ib_uverbs_destroy_qp cmd = { .qp_handle = handle };

	cmd.response = (uintptr_t)&resp;
	return uverbs_write(fd, IB_USER_VERBS_CMD_DESTROY_QP, &cmd, sizeof(cmd),
			    NULL, 0, sizeof(resp));
}

/* modify_qp with a prepared command (qp_handle and attr_mask set). */
static inline int uverbs_modify_qp(int fd, struct ib_uverbs_modify_qp *cmd)
{
	return uverbs_write(fd, IB_USER_VERBS_CMD_MODIFY_QP, cmd, sizeof(*cmd),
			    NULL, 0, 0);
}

/* The QP's state (enum ib_uverbs_qp_state values = enum ibv_qp_state), or -errno. */
static inline int uverbs_query_qp_state(int fd, uint32_t handle)
{
	struct ib_uverbs_query_qp_resp resp;
	struct ib_uverbs_query_qp cmd = {
		.qp_handle = handle, .attr_mask = 1 /* IB_QP_STATE */,
	};
	int err;

	memset(&resp, 0, sizeof(resp));
	cmd.response = (uintptr_t)&resp;
	err = uverbs_write(fd, IB_USER_VERBS_CMD_QUERY_QP, &cmd, sizeof(cmd),
			   NULL, 0, sizeof(resp));
	return err ? err : resp.qp_state;
}

/*
 * Moves a raw RC QP from RESET to RTS, connected to @dest_qpn through the
 * RoCE GID @gid (index @sgid_index on port 1).  Retries 0 and RNR retries 0:
 * a test that makes the QP fail wants it to fail fast.
 */
/*
 * RESET to RTS toward @dest_qpn at @gid, from our GID @sgid_index: both
 * PSNs @psn, a Local ACK Timeout of @timeout (4.096 us << it) and
 * @retry_cnt retries.
 */
static inline int uverbs_rc_to_rts_timed(int fd, uint32_t handle,
					 uint32_t dest_qpn, const uint8_t gid[16],
					 uint8_t sgid_index, uint8_t timeout,
					 uint8_t retry_cnt, uint32_t psn)
{
	struct ib_uverbs_modify_qp c;
	int err;

	memset(&c, 0, sizeof(c));
	c.qp_handle = handle;
	c.qp_state = 1; /* IB_QPS_INIT */
	c.port_num = 1;
	c.qp_access_flags = 0xf; /* LOCAL_WRITE | REMOTE_WRITE | _READ | _ATOMIC */
	c.attr_mask = 1 /* STATE */ | (1 << 3) /* ACCESS_FLAGS */ |
		      (1 << 4) /* PKEY_INDEX */ | (1 << 5) /* PORT */;
	err = uverbs_modify_qp(fd, &c);
	if (err)
		return err;

	memset(&c, 0, sizeof(c));
	c.qp_handle = handle;
	c.qp_state = 2; /* IB_QPS_RTR */
	memcpy(c.dest.dgid, gid, 16);
	c.dest.sgid_index = sgid_index;
	c.dest.hop_limit = 64;
	c.dest.is_global = 1;
	c.dest.port_num = 1;
	c.path_mtu = 3; /* IB_MTU_1024 */
	c.dest_qp_num = dest_qpn;
	c.rq_psn = psn;
	c.max_dest_rd_atomic = 1;
	c.min_rnr_timer = 1;
	c.attr_mask = 1 /* STATE */ | (1 << 7) /* AV */ | (1 << 8) /* PATH_MTU */ |
		      (1 << 12) /* RQ_PSN */ | (1 << 17) /* MAX_DEST_RD_ATOMIC */ |
		      (1 << 15) /* MIN_RNR_TIMER */ | (1 << 20) /* DEST_QPN */;
	err = uverbs_modify_qp(fd, &c);
	if (err)
		return err;

	memset(&c, 0, sizeof(c));
	c.qp_handle = handle;
	c.qp_state = 3; /* IB_QPS_RTS */
	c.timeout = timeout;
	c.retry_cnt = retry_cnt;
	c.rnr_retry = 0;
	c.sq_psn = psn;
	c.max_rd_atomic = 1;
	c.attr_mask = 1 /* STATE */ | (1 << 9) /* TIMEOUT */ |
		      (1 << 10) /* RETRY_CNT */ | (1 << 11) /* RNR_RETRY */ |
		      (1 << 16) /* SQ_PSN */ | (1 << 13) /* MAX_QP_RD_ATOMIC */;
	return uverbs_modify_qp(fd, &c);
}

/* ... with PSNs 0, the timeout of 10 and no retry. */
static inline int uverbs_rc_to_rts(int fd, uint32_t handle, uint32_t dest_qpn,
				   const uint8_t gid[16], uint8_t sgid_index)
{
	return uverbs_rc_to_rts_timed(fd, handle, dest_qpn, gid, sgid_index, 10, 0, 0);
}

/*
 * The conventional doorbell system call of soft devices: a post_send with
 * no work request.  Wakes the engine if it sleeps.
 */
static inline int uverbs_post_send_doorbell(int fd, uint32_t qp_handle)
{
	struct ib_uverbs_post_send_resp resp;
	struct ib_uverbs_post_send cmd = {
		.qp_handle = qp_handle, .wr_count = 0, .sge_count = 0,
		.wqe_size = sizeof(struct ib_uverbs_send_wr),
	};

	cmd.response = (uintptr_t)&resp;
	return uverbs_write(fd, IB_USER_VERBS_CMD_POST_SEND, &cmd, sizeof(cmd),
			    NULL, 0, sizeof(resp));
}

/*
 * Publishes @producer as the SQ producer the way the provider does: the
 * doorbell record (release), the UAR doorbell slot (release), a full
 * barrier, then the wake-up system call.  The wake-up is made
 * unconditionally: a test has no reason to save it.
 */
static inline int srnic_raw_ring_sq(int fd, uint32_t qp_handle,
				    struct srnic_qp_db *dbrec,
				    volatile struct srnic_db_slot *slot,
				    uint32_t producer)
{
	atomic_store_explicit((_Atomic uint32_t *)&dbrec->sq_producer, producer,
			      memory_order_release);
	atomic_store_explicit((_Atomic uint32_t *)&slot->value, producer,
			      memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
	return uverbs_post_send_doorbell(fd, qp_handle);
}

/* Maps the UAR page at @offset of the context on @fd (read/write, shared). */
static inline void *srnic_raw_map_uar(int fd, uint64_t offset)
{
	void *p = uverbs_mmap(fd, SRNIC_PAGE_SIZE, PROT_READ | PROT_WRITE,
			      offset);

	return p == MAP_FAILED ? NULL : p;
}

#endif /* SRNIC_UVERBS_QP_RAW_H */
