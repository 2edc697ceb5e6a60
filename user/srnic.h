/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/* libsrnic: the rdma-core provider for srnic devices.  Shared declarations. */
#ifndef SRNIC_USER_H
#define SRNIC_USER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/ib_user_ioctl_verbs.h>

#include "verbs_provider.h"
#include "srnic-abi.h"

/*
 * The queues' locks: a test-and-set spinlock inlined into the fast paths.
 * pthread_spin_lock() is the same lock behind a call through the PLT, and
 * an empty poll or a post took two such calls.
 */
struct srnic_lock {
	atomic_bool held;
};

static inline int srnic_lock_init(struct srnic_lock *l)
{
	atomic_init(&l->held, false);
	return 0;
}

static inline void srnic_lock(struct srnic_lock *l)
{
	while (atomic_exchange_explicit(&l->held, true, memory_order_acquire))
		while (atomic_load_explicit(&l->held, memory_order_relaxed))
			__builtin_ia32_pause();
}

static inline void srnic_unlock(struct srnic_lock *l)
{
	atomic_store_explicit(&l->held, false, memory_order_release);
}

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

VERBS_DRV_CMD(srnic_create_cq_cmd, ibv_create_cq, ib_uverbs_create_cq_resp,
	      srnic_create_cq_req, srnic_create_cq_resp);
VERBS_DRV_CMD_EX(srnic_create_cq_ex_cmd, ibv_create_cq_ex,
		 ib_uverbs_ex_create_cq_resp, srnic_create_cq_req,
		 srnic_create_cq_resp);
VERBS_DRV_CMD(srnic_resize_cq_cmd, ibv_resize_cq, ib_uverbs_resize_cq_resp,
	      srnic_resize_cq_req, srnic_resize_cq_resp);
VERBS_DRV_CMD(srnic_create_qp_cmd, ibv_create_qp, ib_uverbs_create_qp_resp,
	      srnic_create_qp_req, srnic_create_qp_resp);
/* The extended command: it carries creation flags. */
VERBS_DRV_CMD_EX(srnic_create_qp_ex_cmd, ibv_create_qp_ex,
		 ib_uverbs_ex_create_qp_resp, srnic_create_qp_req,
		 srnic_create_qp_resp);
VERBS_DRV_CMD_EX(srnic_create_qp_rss_cmd, ibv_create_qp_ex,
		 ib_uverbs_ex_create_qp_resp, srnic_create_qp_rss_req,
		 srnic_create_qp_resp);
/* create_wq has a driver request and no driver response. */
struct srnic_create_wq_cmd {
	struct ibv_create_wq ibv_cmd;
	struct srnic_create_wq_req drv_payload;
};
static_assert(sizeof(struct srnic_create_wq_cmd) ==
	      sizeof(struct ibv_create_wq) + sizeof(struct srnic_create_wq_req),
	      "create_wq padding");
VERBS_DRV_CMD(srnic_create_xsrq_cmd, ibv_create_xsrq, ib_uverbs_create_srq_resp,
	      srnic_create_srq_req, srnic_create_srq_resp);

/* create_ah has no driver request, only a driver response. */
struct srnic_create_ah_cmd_resp {
	struct ib_uverbs_create_ah_resp ibv_resp;
	struct srnic_create_ah_resp drv_payload;
};
static_assert(sizeof(struct srnic_create_ah_cmd_resp) ==
	      sizeof(struct ib_uverbs_create_ah_resp) +
	      sizeof(struct srnic_create_ah_resp), "create_ah resp padding");

struct srnic_device {
	struct verbs_device vdev;
};

/* A page of doorbell records, handed out in 64-byte slots. */
#define SRNIC_DBREC_SLOT 64u
#define SRNIC_DBRECS_PER_PAGE (SRNIC_PAGE_SIZE / SRNIC_DBREC_SLOT)

struct srnic_dbrec_page {
	struct srnic_dbrec_page *next;
	void *mem;
	uint64_t used;		/* bitmap of SRNIC_DBRECS_PER_PAGE slots */
};

/* A UAR page mapped into this process, by its mmap offset. */
struct srnic_uar_map {
	uint64_t mmap_offset;
	void *addr;
};

/* The smallest send ring made for a QP that sends: 32 entries. */
#define SRNIC_SQ_MIN_LOG_ENTRIES 5u

struct srnic_context {
	struct verbs_context vctx;	/* libibverbs' part, first */
	uint32_t dbs_per_uar;
	uint32_t num_engines;
	/* Engine status, kernel-written, mapped read-only. */
	const volatile struct srnic_engine_status *status;

	pthread_mutex_t lock;		/* the tables below */
	struct srnic_dbrec_page *dbrec_pages;
	/* By the page's index in the context; [0]: the initial page. */
	struct srnic_uar_map uar_maps[SRNIC_MAX_UARS];
	/* By engine thread: its bell page, once a QP of it was made. */
	struct srnic_uar_map bell_maps[SRNIC_MAX_ENGINES];
};

/*
 * Where a doorbell's marks go (srnic-abi.h): its page's summary, the
 * page's word in its engine thread's bell page, and that page's top word.
 */
struct srnic_marks {
	__u64 *rung;
	__u64 *page;
	__u64 *top;
	__u64 rung_bit, page_bit, top_bit;
};

struct srnic_cq {
	struct verbs_cq vcq;
	struct srnic_lock lock;
	struct srnic_cqe *ring;
	size_t ring_len;
	struct srnic_pd *owner;		/* parent domain whose allocator made it */
	uint32_t log_entries;
	uint32_t consumer;		/* free running */
	uint32_t arm_sn;
	uint32_t cqn;
	struct srnic_cq_db *db;		/* doorbell record */
	struct srnic_db_slot *doorbell;	/* in a UAR page */
	/* ibv_cq_ex polling: the entry between start_poll and end_poll. */
	const struct srnic_cqe *cur;
};

struct srnic_wq {
	void *ring;
	size_t ring_len;
	struct srnic_pd *owner;		/* parent domain whose allocator made it */
	uint32_t log_entries;
	uint32_t log_stride;
};

struct srnic_qp {
	struct verbs_qp vqp;
	struct srnic_lock sq_lock;
	struct srnic_lock rq_lock;
	struct srnic_wq sq;
	struct srnic_wq rq;
	uint32_t sq_head;		/* free-running producer counters */
	uint32_t sq_tail;		/* the engine's sq_consumer, as last read */
	uint32_t rq_head;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
	struct srnic_qp_db *db;
	struct srnic_db_slot *doorbell;
	struct srnic_marks marks;
	/* The status record of the engine thread that serves the QP. */
	const volatile struct srnic_engine_status *engine;
	/* The ibv_wr_* batch between wr_start and wr_complete/wr_abort. */
	struct {
		uint64_t ops;		/* send_ops_flags asked at creation */
		uint32_t start;		/* sq_head at wr_start */
		int err;		/* first error of the batch */
		struct srnic_wqe_ctrl *cur; /* the WQE setters fill */
		bool ud_set;		/* cur has its UD address */
	} wr;
};

struct srnic_srq {
	struct verbs_srq vsrq;
	struct srnic_lock lock;
	struct srnic_wq wq;
	uint32_t head;
	uint32_t max_sge;
	struct srnic_srq_db *db;
	uint32_t srqn;
	bool tm;		/* IBV_SRQT_TM: ibv_post_srq_ops works */
};

/* A receive WQ (RSS): an SRQ-like ring of its own. */
struct srnic_rwq {
	struct ibv_wq ibwq;
	struct srnic_lock lock;
	struct srnic_wq wq;
	uint32_t head;
	uint32_t max_sge;
	struct srnic_srq_db *db;
};

struct srnic_ah {
	struct ibv_ah ibah;
	struct srnic_av av;
};

/*
 * A PD, or a parent domain (@protection set): a PD's kernel handle with a
 * thread domain and the application's allocators for queue memory.
 */
struct srnic_pd {
	struct ibv_pd ibpd;
	uint32_t pdn;
	_Atomic int users;		/* parent domains on this PD */
	struct srnic_pd *protection;
	struct ibv_td *td;
	void *(*alloc)(struct ibv_pd *pd, void *pd_context, size_t size,
		       size_t alignment, uint64_t resource_type);
	void (*free)(struct ibv_pd *pd, void *pd_context, void *ptr,
		     uint64_t resource_type);
	void *pd_context;
};

/* resource_type of a parent domain's allocator calls. */
enum srnic_res_type {
	SRNIC_RES_CQ = 1,
	SRNIC_RES_SQ = 2,
	SRNIC_RES_RQ = 3,
	SRNIC_RES_SRQ = 4,
};

/* srnic_mr.c */
struct ibv_mr *srnic_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			    uint64_t hca_va, int access);
int srnic_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		   void *addr, size_t length, int access);
int srnic_dereg_mr(struct verbs_mr *vmr);
struct ibv_mw *srnic_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int srnic_dealloc_mw(struct ibv_mw *mw);
int srnic_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		    uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sge);

/* srnic_dm.c */
struct ibv_dm *srnic_alloc_dm(struct ibv_context *ctx,
			      struct ibv_alloc_dm_attr *attr);
int srnic_free_dm(struct ibv_dm *ibdm);
struct ibv_dm *srnic_import_dm(struct ibv_context *ctx, uint32_t dm_handle);
void srnic_unimport_dm(struct ibv_dm *ibdm);
struct ibv_mr *srnic_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *ibdm,
			       uint64_t dm_offset, size_t length,
			       unsigned int access);

/* srnic_post.c: WQE segments, shared by ibv_post_send and ibv_wr_* */
/* srnic.c: a device mapping that children do not inherit. */
void *srnic_map_device(int cmd_fd, size_t len, int prot, off_t offset);

bool srnic_send_opcode_ok(enum ibv_qp_type type, enum ibv_wr_opcode op);
struct srnic_wqe_ctrl *srnic_sq_next(struct srnic_qp *qp);
int srnic_wqe_begin(struct srnic_qp *qp, struct srnic_wqe_ctrl *ctrl,
		    uint64_t wr_id, enum ibv_wr_opcode op,
		    unsigned int send_flags, uint32_t imm);
int srnic_wqe_set_atomic_write(struct srnic_wqe_ctrl *ctrl,
			       const struct ibv_send_wr *wr);
void srnic_wqe_set_raddr(struct srnic_wqe_ctrl *ctrl, uint64_t addr,
			 uint32_t rkey, uint64_t compare_add, uint64_t swap);
int srnic_wqe_set_bind(struct srnic_wqe_ctrl *ctrl, const struct ibv_mw *mw,
		       uint32_t new_rkey, const struct ibv_mw_bind_info *bi,
		       bool type1);
int srnic_wqe_set_ud(struct srnic_wqe_ctrl *ctrl, const struct ibv_ah *ibah,
		     uint32_t remote_qpn, uint32_t remote_qkey);
int srnic_wqe_set_sges(struct srnic_qp *qp, struct srnic_wqe_ctrl *ctrl,
		       const struct ibv_sge *sg, size_t num_sge);
void srnic_wqe_inline_begin(struct srnic_wqe_ctrl *ctrl);
int srnic_wqe_inline_add(struct srnic_qp *qp, struct srnic_wqe_ctrl *ctrl,
			 const void *addr, size_t len);

/* READ and the fetching atomics: their answer lands in the list, nothing to inline. */
static inline bool srnic_op_lands_answer(unsigned int op)
{
	return op == IBV_WR_RDMA_READ || op == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

void srnic_sq_ring(struct srnic_qp *qp);
int srnic_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr);
int srnic_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad_wr);
int srnic_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr);
int srnic_post_ring_recv(struct srnic_wq *wq, uint32_t *head, uint32_t max_sge,
			 struct srnic_srq_db *db, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
int srnic_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw,
		  struct ibv_mw_bind *mw_bind);

/* srnic_queues.c: queue memory, shared with srnic_srq.c */
void *srnic_dbrec_alloc(struct srnic_context *ctx);
void srnic_dbrec_free(struct srnic_context *ctx, void *rec);
void *srnic_ring_alloc(struct ibv_pd *pd, uint64_t type, uint32_t log,
		       size_t *len, struct srnic_pd **owner);
void srnic_ring_free(void *ring, struct srnic_pd *owner, uint64_t type);
uint32_t srnic_log2_ceil(uint32_t v);
struct ibv_qp *srnic_queueless_qp(struct srnic_qp *qp, int err);

/* srnic_raw.c: raw packet RSS QPs, receive WQs, flows */
struct ibv_qp *srnic_create_rss_qp(struct ibv_context *ibctx,
				   struct ibv_qp_init_attr_ex *attr);
extern const struct verbs_context_ops srnic_raw_ops;

/* srnic_srq.c */
int srnic_recv_ring_alloc(struct ibv_pd *pd, uint64_t type, uint32_t max_wr,
			  uint32_t max_sge, struct srnic_wq *wq);
struct ibv_srq *srnic_create_srq(struct ibv_pd *pd,
				 struct ibv_srq_init_attr *attr);
struct ibv_srq *srnic_create_srq_ex(struct ibv_context *ibctx,
				    struct ibv_srq_init_attr_ex *attr);
int srnic_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num);
int srnic_post_srq_ops(struct ibv_srq *ibsrq, struct ibv_ops_wr *wr,
		       struct ibv_ops_wr **bad_wr);
struct ibv_xrcd *srnic_open_xrcd(struct ibv_context *ctx,
				 struct ibv_xrcd_init_attr *attr);
int srnic_close_xrcd(struct ibv_xrcd *ibxrcd);
struct ibv_qp *srnic_open_qp(struct ibv_context *ctx,
			     struct ibv_qp_open_attr *attr);

/* srnic_qpex.c: the ibv_wr_* API */
uint64_t srnic_send_ops(enum ibv_qp_type type);
int srnic_qpex_check(const struct ibv_qp_init_attr_ex *attr);
void srnic_qpex_init(struct srnic_qp *qp, const struct ibv_qp_init_attr_ex *attr);

/* srnic_cqex.c: ibv_cq_ex polling and the device clock */
int srnic_cqex_check(const struct ibv_cq_init_attr_ex *attr);
void srnic_cqex_init(struct srnic_cq *cq, uint64_t wc_flags);
int srnic_query_rt_values(struct ibv_context *ibctx,
			  struct ibv_values_ex *values);

/* srnic_queues.c */
int srnic_queues_init(struct srnic_context *ctx, uint64_t uar0_offset,
		      void *uar0);
void srnic_queues_cleanup(struct srnic_context *ctx);
extern const struct verbs_context_ops srnic_queue_ops;

static inline struct srnic_context *to_sctx(struct ibv_context *ibctx)
{
	return (struct srnic_context *)((char *)ibctx -
					offsetof(struct srnic_context,
						 vctx.context));
}

/* Owner value of a valid CQE at free-running index n (see srnic-abi.h). */
static inline uint8_t srnic_cqe_owner(uint32_t n, uint32_t log)
{
	return ((n >> log) & 1) ^ 1;
}

/*
 * The CQE at the consumer counter if the engine has handed it over, else
 * NULL.  Called with cq->lock held.
 */
static inline const struct srnic_cqe *srnic_cqe_peek(struct srnic_cq *cq)
{
	const struct srnic_cqe *cqe =
		&cq->ring[cq->consumer & ((1u << cq->log_entries) - 1)];

	/* Pairs with the engine's release store of owner. */
	if (atomic_load_explicit((_Atomic uint8_t *)&cqe->owner,
				 memory_order_acquire) !=
	    srnic_cqe_owner(cq->consumer, cq->log_entries))
		return NULL;
	return cqe;
}

/* Publishes the consumer counter: the engine may reuse the polled entries. */
static inline void srnic_cq_publish(struct srnic_cq *cq)
{
	atomic_store_explicit((_Atomic uint32_t *)&cq->db->consumer,
			      cq->consumer, memory_order_release);
}

static inline unsigned int srnic_wc_flags(uint8_t f)
{
	return (f & SRNIC_CQE_GRH ? IBV_WC_GRH : 0) |
	       (f & SRNIC_CQE_WITH_IMM ? IBV_WC_WITH_IMM : 0) |
	       (f & SRNIC_CQE_WITH_INV ? IBV_WC_WITH_INV : 0) |
	       (f & SRNIC_CQE_TM_SYNC_REQ ? IBV_WC_TM_SYNC_REQ : 0) |
	       (f & SRNIC_CQE_TM_MATCH ? IBV_WC_TM_MATCH : 0) |
	       (f & SRNIC_CQE_TM_DATA_VALID ? IBV_WC_TM_DATA_VALID : 0);
}

/*
 * On Ethernet, mlx5's provider reports a receive's network header type in sl
 * (bits 2:0: 1 IPv6, 2 IPv4); UCX's UD transport reads it there to know which
 * bytes of the GRH slot hold the destination address.  srnic reports it the
 * same way for every receive that carries a GRH.
 */
enum srnic_wc_sl_l3 {
	SRNIC_WC_SL_L3_IPV6 = 1,
	SRNIC_WC_SL_L3_IPV4 = 2,
};

static inline uint8_t srnic_wc_sl(uint8_t sl, uint8_t f)
{
	if (!(f & SRNIC_CQE_GRH))
		return sl;
	return f & SRNIC_CQE_GRH_IPV4 ? SRNIC_WC_SL_L3_IPV4 : SRNIC_WC_SL_L3_IPV6;
}

static inline struct srnic_pd *to_spd(struct ibv_pd *ibpd)
{
	return (struct srnic_pd *)((char *)ibpd - offsetof(struct srnic_pd, ibpd));
}

#endif /* SRNIC_USER_H */
