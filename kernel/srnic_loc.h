/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/* Prototypes shared between srnic's source files. */
#ifndef SRNIC_LOC_H
#define SRNIC_LOC_H

#include "srnic.h"

/*
 * Allocations inside srnic_engine_srcu (docs/design.md, "Rules that keep
 * the engine safe"): never direct reclaim, which may run an ODP
 * invalidation that waits for that very section.
 */
#define SRNIC_ENGINE_GFP	(GFP_NOWAIT | __GFP_NOWARN)

/* Checks that the udata bytes past what we understand are zero. */
int srnic_udata_in(struct ib_udata *udata, void *req, size_t len);

/* srnic_verbs.c */
extern const struct ib_device_ops srnic_dev_ops;
extern unsigned int srnic_max_mr;
void srnic_init_device_attr(struct srnic_dev *sdev, struct ib_device_attr *attr);
enum ib_port_state srnic_netdev_port_state(const struct net_device *ndev);

/* srnic_stats.c */
struct rdma_hw_stats *srnic_alloc_hw_port_stats(struct ib_device *ibdev,
						u32 port_num);
int srnic_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		       u32 port_num, int index);

/* srnic_mmap.c */
struct srnic_mmap_entry *srnic_mmap_insert(struct srnic_ucontext *suc,
					   enum srnic_mmap_type type,
					   struct page *page, bool owns_page,
					   u64 *offset);
int srnic_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma);
struct srnic_mmap_entry *srnic_mmap_insert_at(struct srnic_ucontext *suc,
					      enum srnic_mmap_type type,
					      struct page *page,
					      unsigned int order, size_t len,
					      u32 pgoff);
void srnic_mmap_free(struct rdma_user_mmap_entry *rdma);

/* srnic_uar.c */
int srnic_uar_init(struct srnic_ucontext *suc);
void srnic_uar_cleanup(struct srnic_ucontext *suc);
int srnic_uar0_offset(struct srnic_ucontext *suc, u64 *offset);
int srnic_db_name_qp(struct srnic_db_ref *ref, struct srnic_qp *qp,
		     u64 *bells_offset);
void srnic_db_unname_qp(struct srnic_db_ref *ref);
unsigned int srnic_bells_take(struct srnic_thread *t);
int srnic_db_alloc(struct srnic_ucontext *suc, struct srnic_db_ref *ref,
		   struct srnic_db_loc *loc);
void srnic_db_free(struct srnic_db_ref *ref);

/* srnic_cq.c */
int srnic_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    SRNIC_CREATE_CQ_ARGS);
int srnic_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int srnic_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);

/* srnic_qp.c */
int srnic_qp_init(struct srnic_qp *qp, bool receives);
void srnic_qp_release(struct srnic_dev *sdev, struct srnic_qp *qp);
int srnic_qp_publish(struct srnic_dev *sdev, struct srnic_qp *qp,
		     struct ib_qp_init_attr *init);

int srnic_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata);
int srnic_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata);
int srnic_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init);
int srnic_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
void srnic_qp_set_active(struct srnic_dev *sdev, u32 qpn, bool active);
void srnic_qp_unpublish(struct srnic_dev *sdev, u32 qpn);
void srnic_qp_put(struct srnic_qp *qp);
struct srnic_qp *srnic_qp_get(struct srnic_dev *sdev, u32 qpn);

/* srnic_srq.c */
int srnic_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata);
int srnic_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata);
int srnic_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int srnic_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int srnic_recv_ring_pin(struct srnic_dev *sdev, u32 max_wr, u32 max_sge,
			u32 max_entries, u64 buf_addr, u64 db_addr,
			u32 log_entries, u32 log_stride, struct srnic_wq *wq,
			struct srnic_umem *db, u32 *sge_room);
struct srnic_srq *srnic_xrc_srq_get(struct srnic_dev *sdev, u32 srqn);
void srnic_srq_put(struct srnic_srq *srq);
int srnic_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);
int srnic_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);

/* srnic_tm.c: tag matching SRQs */
int srnic_tm_create(struct srnic_srq *srq, u32 num_tags);
void srnic_tm_destroy(struct srnic_srq *srq);
int srnic_tm_post(struct srnic_srq *srq, int mask, struct ib_udata *udata);
bool srnic_tm_recv(struct srnic_engine *eng, struct srnic_qp *dst,
		   struct srnic_srq *srq, struct srnic_msg *m,
		   enum srnic_resp *r);
void srnic_tm_unexpected(struct srnic_srq *srq);
void srnic_tm_fin(struct srnic_engine *eng, struct srnic_qp *qp, u64 tag);
void srnic_tm_cqe_match(struct srnic_cqe *cqe, const struct srnic_tm_piece *tm);
struct srnic_rndv *srnic_tm_rndv_head(struct srnic_qp *qp);
int srnic_tm_rndv_dest(struct srnic_qp *qp, const struct srnic_rndv *rv,
		       u64 off, u32 len, struct srnic_sg *sg);
void srnic_tm_rndv_done(struct srnic_qp *qp, struct srnic_rndv *rv,
			u8 status);
void srnic_tm_rndv_flush(struct srnic_qp *qp);

/* srnic_raw.c: raw packet QPs, flow steering, receive WQs and RSS */
void srnic_raw_init(struct srnic_dev *sdev);
void srnic_raw_debugfs(struct srnic_dev *sdev);
void srnic_raw_cleanup(struct srnic_dev *sdev);
int srnic_create_rss_qp(struct srnic_dev *sdev, struct srnic_qp *qp,
			struct ib_qp_init_attr *init, struct ib_udata *udata);
enum ib_wc_status srnic_raw_send(struct srnic_dev *sdev,
				 struct srnic_engine *eng,
				 const struct srnic_sg *frame);
struct ib_flow *srnic_create_flow(struct ib_qp *ibqp,
				  struct ib_flow_attr *attr,
				  struct ib_udata *udata);
int srnic_destroy_flow(struct ib_flow *ibflow);
struct ib_wq *srnic_create_wq(struct ib_pd *ibpd, struct ib_wq_init_attr *init,
			      struct ib_udata *udata);
int srnic_modify_wq(struct ib_wq *ibwq, struct ib_wq_attr *attr, u32 mask,
		    struct ib_udata *udata);
int srnic_destroy_wq(struct ib_wq *ibwq, struct ib_udata *udata);
int srnic_create_rwq_ind_table(struct ib_rwq_ind_table *ibtbl,
			       struct ib_rwq_ind_table_init_attr *init,
			       struct ib_udata *udata);
int srnic_destroy_rwq_ind_table(struct ib_rwq_ind_table *ibtbl);

/* srnic_ah.c */
int srnic_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
			 struct ib_udata *udata);
int srnic_destroy_ah(struct ib_ah *ibah, u32 flags);

/* srnic_engine.c */
int srnic_engine_start(struct srnic_dev *sdev, const char *name);
void srnic_engine_stop(struct srnic_dev *sdev);
void srnic_engine_kick(struct srnic_qp *qp);
bool srnic_qp_ready(struct srnic_qp *qp);
void srnic_qp_unready(struct srnic_qp *qp);

/* The engine's earliest timer, @timer (0: none), made @at if that is sooner. */
static inline void srnic_timer_min(unsigned long *timer, unsigned long at)
{
	if (!*timer || time_before(at, *timer))
		*timer = at;
}

/*
 * Where the engine may sleep it offers the CPU, once it has held it for
 * SRNIC_CPU_HOLD since *@since: a pass over busy QPs, or a window sent by a
 * doorbell call, lasts seconds on a debug kernel (a soft lockup), while
 * giving way at every piece left a one-CPU guest's WRITE stream 0.73 of its
 * rate beside the poller that spins for its completions (docs/bench.md).
 */
static inline void srnic_offer_cpu(unsigned long *since)
{
	if (time_before(jiffies, *since + SRNIC_CPU_HOLD))
		return;
	cond_resched();
	*since = jiffies;
}

struct srnic_thread *srnic_qp_thread(struct srnic_qp *qp);
void srnic_thread_kick(struct srnic_thread *t);

/* srnic_net.c: RoCEv2 on the wire */
int srnic_net_init(void);
void srnic_net_cleanup(void);
void srnic_zc_cleanup(void);
int srnic_net_rx(struct srnic_thread *t, unsigned long *timer);
void srnic_engine_sync(struct srnic_dev *sdev);
void srnic_engine_doorbell(struct srnic_dev *sdev, struct srnic_qp *qp);

/* srnic_req.c */
int srnic_qp_process(struct srnic_dev *sdev, struct srnic_engine *eng,
		     struct srnic_qp *qp, int budget, u64 max_bytes,
		     unsigned long *timer);

/* srnic_resp.c */
u32 srnic_resp_rnr_usec(const struct srnic_qp *dst);
u32 srnic_rnr_code_usec(u8 code);
int srnic_resp_xrc_srq(struct srnic_qp *dst, u32 srqn, struct srnic_msg *m);
int srnic_ring_take(const struct srnic_wq *wq, u32 *cons, const u32 *prod_p,
		    u32 *cons_p, void *rwqe);
bool srnic_recv_available(struct srnic_qp *qp, const struct srnic_msg *m);
bool srnic_recv_hold(struct srnic_qp *qp, struct srnic_srq *srq,
		     const void *rwqe, u32 max_sge, const struct srnic_msg *m);
void srnic_recv_wait(struct srnic_qp *qp);
void srnic_recv_fail_held(struct srnic_qp *qp, const struct srnic_msg *m,
			  enum ib_wc_status status);
enum srnic_resp srnic_resp_recv(struct srnic_engine *eng, struct srnic_qp *dst,
				struct srnic_msg *m, bool place_data);
enum srnic_resp srnic_resp_target(struct srnic_qp *dst,
				  const struct srnic_msg *m, int access,
				  struct srnic_sg *sg);
enum srnic_resp srnic_resp_write(struct srnic_engine *eng, struct srnic_qp *dst,
				 struct srnic_msg *m);
enum srnic_resp srnic_resp_read(struct srnic_engine *eng, struct srnic_qp *dst,
				struct srnic_msg *m);
enum srnic_resp srnic_resp_atomic(struct srnic_engine *eng, struct srnic_qp *dst,
				  struct srnic_msg *m, u64 *orig);
enum srnic_resp srnic_resp_flush(struct srnic_qp *dst,
				 const struct srnic_msg *m);

/* srnic_comp.c */
void srnic_cq_event_init(struct srnic_cq *cq, u32 vector);
void srnic_cq_event_sync(struct srnic_cq *cq);
bool srnic_cq_post(struct srnic_cq *cq, const struct srnic_cqe *src,
		   bool solicited);
void srnic_qp_send_cqe(struct srnic_qp *qp, const struct srnic_cqe *cqe);
void srnic_qp_recv_cqe(struct srnic_qp *qp, struct srnic_srq *srq,
		       const struct srnic_cqe *cqe, bool solicited);
void srnic_qp_event(struct srnic_qp *qp, enum ib_event_type type);
void srnic_qp_set_error(struct srnic_qp *qp);
void srnic_send_complete(struct srnic_qp *qp, const struct srnic_wqe_ctrl *ctrl,
			 enum ib_wc_status status, u32 byte_len);
int srnic_qp_flush(struct srnic_qp *qp);
struct srnic_reply;
int srnic_comp_retry(struct srnic_qp *qp, const struct srnic_msg *m,
		     const struct srnic_reply *rep, enum ib_wc_status *status);

/*
 * The responder's checks and accounting that every message passes, inline:
 * under TCG a call and its return cost about as much as what they do.
 */
/*
 * Is @m from the QP @dst is connected to: of the matching type, and the
 * path of @dst names the requester's QPN, its device and its source GID?
 * A QPN alone is not enough: a QP elsewhere with the same number would be
 * taken for the peer (IB spec 9.6.1.5: a packet from another source is not
 * the connection's).  @type is the requester's QP type.
 */
static inline bool srnic_resp_accepts(const struct srnic_qp *dst,
				      enum ib_qp_type type,
				      const struct srnic_msg *m)
{
	const struct ib_global_route *grh = rdma_ah_read_grh(&dst->attr.ah_attr);

	return dst->ibqp.qp_type == (type == IB_QPT_XRC_INI ?
				     IB_QPT_XRC_TGT : type) &&
	       READ_ONCE(dst->attr.dest_qp_num) == m->src_qpn &&
	       READ_ONCE(dst->peer_dev) == m->src_dev &&
	       !memcmp(grh->dgid.raw, m->sgid, 16);
}

/*
 * The responder's side of an RC/XRC answer: an access or invalid-request
 * NAK moves its own QP to error (UC answers nothing, and stays).
 */
static inline void srnic_resp_nak(struct srnic_qp *dst, enum srnic_resp r)
{
	if ((r == SRNIC_RESP_NAK_ACCESS || r == SRNIC_RESP_NAK_INV) &&
	    dst->ibqp.qp_type != IB_QPT_UC)
		srnic_qp_set_error(dst);
}

/* Counts what @dst's device received and answered (@m's piece, @r). */
static inline void srnic_resp_account(struct srnic_qp *dst,
				      const struct srnic_msg *m,
				      enum srnic_resp r)
{
	struct srnic_dev *ddev = to_sdev(dst->ibqp.device);

	switch (r) {
	case SRNIC_RESP_OK:
		srnic_count_n(ddev, SRNIC_PC_RX_BYTES, m->plen);
		srnic_qp_count_resp(dst, SRNIC_QC_RX_BYTES, m->plen);
		if (m->whole || m->off + m->plen >= m->len) {
			srnic_count(ddev, SRNIC_PC_RX_MSGS);
			srnic_qp_count_resp(dst, SRNIC_QC_RX_MSGS, 1);
		}
		break;
	case SRNIC_RESP_RNR:
		srnic_count(ddev, SRNIC_PC_RNR_NAKS_SENT);
		srnic_qp_count_resp(dst, SRNIC_QC_RNR_NAKS_SENT, 1);
		break;
	case SRNIC_RESP_NAK_INV:
	case SRNIC_RESP_NAK_ACCESS:
	case SRNIC_RESP_NAK_OP:
		srnic_count(ddev, SRNIC_PC_NAKS_SENT);
		srnic_qp_count_resp(dst, SRNIC_QC_NAKS_SENT, 1);
		break;
	default:
		break;
	}
}


/*
 * Byte @off of @skb's data, in its linear part or a page fragment (the
 * caller has made sure it has no frag_list), and in *@contig how many
 * bytes follow it there; NULL past the end.
 */
static inline const u8 *srnic_skb_ptr(const struct sk_buff *skb, u32 off,
				      size_t *contig)
{
	u32 i, head = skb_headlen(skb);

	if (off < head) {
		*contig = head - off;
		return skb->data + off;
	}
	off -= head;
	for (i = 0; i < skb_shinfo(skb)->nr_frags; i++) {
		const skb_frag_t *f = &skb_shinfo(skb)->frags[i];

		if (off < skb_frag_size(f)) {
			*contig = skb_frag_size(f) - off;
			return (const u8 *)skb_frag_address(f) + off;
		}
		off -= skb_frag_size(f);
	}
	*contig = 0;
	return NULL;
}

/* @sg over the @len bytes at @off of a received packet's data: no MR. */
static inline void srnic_sg_init_skb(struct srnic_sg *sg,
				     const struct sk_buff *skb, u32 off,
				     u32 len)
{
	srnic_sg_init(sg, NULL, len);
	sg->skb = skb;
	sg->skb_off = off;
}

/* srnic_sg.c; the helpers every WQE runs are inline (see srnic_mr.h) */
static inline void srnic_sg_release(struct srnic_sg *sg)
{
	u32 i;

	for (i = 0; i < sg->n; i++)
		if (sg->e[i].mr && !sg->e[i].borrowed)
			srnic_mr_put(sg->e[i].mr);
	sg->n = 0;
}

/* An ODP fault of @sg's that nothing waits for: its MR's reference goes. */
static inline void srnic_sg_drop_fault(struct srnic_sg *sg)
{
	srnic_mr_put(sg->fault.mr);
	sg->fault.mr = NULL;
}

int srnic_sg_odp_fault(struct srnic_sg *sg, u32 i, bool write, u64 woff,
		       u64 wlen);

/*
 * The ODP entries of a resolved @sg: is every page there (writable if
 * @write)?  If not, -EAGAIN: @sg is released, its fault names the range
 * (with a reference to its MR).  Under srnic_engine_srcu.
 */
static inline int srnic_sg_odp_check(struct srnic_sg *sg, bool write)
{
	u32 i;

	for (i = 0; i < sg->n; i++)
		if (sg->e[i].mr->odp)
			return srnic_sg_odp_fault(sg, i, write, 0, U64_MAX);
	return 0;
}

/*
 * One range of one MR: for the remote side of WRITE, READ and atomics.
 * @cache: the requester's cache for the key (NULL: none).
 */
static inline int srnic_sg_range(struct srnic_dev *sdev, struct srnic_pd *pd,
				 u32 key, u64 iova, u64 len, int access,
				 struct srnic_sg *sg, struct srnic_mr_cache *cache)
{
	struct srnic_mr *mr;
	bool borrowed;

	srnic_sg_init(sg, NULL, 0);
	if (!len)
		return 0;
	mr = srnic_mr_get_cached(sdev, key, cache, &borrowed);
	if (!mr)
		return -EACCES;
	if (srnic_mr_check(mr, pd, access, iova, len)) {
		if (!borrowed)
			srnic_mr_put(mr);
		return -EACCES;
	}
	sg->e[0] = (struct srnic_sge_ref){
		.mr = mr, .borrowed = borrowed, .iova = iova, .len = len,
	};
	sg->n = 1;
	sg->total = len;
	return 0;
}

int srnic_sg_resolve(struct srnic_dev *sdev, struct srnic_pd *pd,
		     const struct srnic_wqe_data *sge, u32 n, int access,
		     struct srnic_sg *sg, struct srnic_mr_cache *cache);
int srnic_sg_resolve_window(struct srnic_dev *sdev, struct srnic_pd *pd,
			    const struct srnic_wqe_data *sge, u32 n,
			    int access, struct srnic_sg *sg,
			    struct srnic_mr_cache *cache, u64 woff, u64 wlen);
void srnic_sg_copy(const struct srnic_sg *dst, u64 doff,
		   const struct srnic_sg *src, u64 soff, u64 len);
void srnic_sg_read(const struct srnic_sg *src, u64 soff, void *buf, u64 len);
void srnic_sg_write(const struct srnic_sg *dst, u64 doff, const void *buf,
		    u64 len);
void srnic_sg_put_u64(const struct srnic_sg *dst, u64 val);

/* One piece of a payload within one page, for zero-copy transmit. */
struct srnic_page_ref {
	struct page *page;
	const u8 *kva;
	u32 off, len;
};

u32 srnic_sg_pages(const struct srnic_sg *src, u64 soff, u32 len,
		   struct srnic_page_ref *f, u32 max);

/* srnic_loop.c: the host-wide device registry of the loopback transport */
int srnic_registry_add(struct srnic_dev *sdev);
void srnic_registry_del(struct srnic_dev *sdev);
int srnic_dev_by_gid(const u8 *gid, const struct srnic_dev *from);
struct srnic_qp *srnic_peer_get(int dev_id, u32 qpn);
struct srnic_dev *srnic_dev_by_netdev_rcu(const struct net_device *ndev);
bool srnic_gid_is_ours(struct srnic_dev *sdev, const u8 *gid);
/*
 * Bumped whenever a QP leaves its device's table: a connected QP's cached
 * peer (srnic_loop_peer) is good only while this has not changed.
 */
extern atomic_t srnic_peer_gen;
static inline u32 srnic_peer_generation(void)
{
	return atomic_read(&srnic_peer_gen);
}

/* srnic_sysfs.c */
extern const struct attribute_group srnic_attr_group;

/* srnic_umem.c: pinned user memory for rings and doorbell records */
void srnic_pinned_add(struct srnic_dev *sdev, long npages);
int srnic_umem_pin(struct srnic_dev *sdev, u64 addr, size_t len, bool ring,
		   struct srnic_umem *out);
void srnic_umem_release(struct srnic_dev *sdev, struct srnic_umem *um);
int srnic_kmem_alloc(size_t len, struct srnic_umem *out);

/* Kernel consumers' queues (srnic_kcq.c, srnic_kqp.c). */
int srnic_kdb_alloc(struct srnic_umem *db, struct srnic_db_ref *dbr);
int srnic_kcq_create(struct srnic_dev *sdev, struct srnic_cq *cq,
		     const struct ib_cq_init_attr *attr);
int srnic_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc);
int srnic_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
void srnic_kcq_forget_qp(struct srnic_cq *cq, u32 qpn);
int srnic_kqp_create(struct srnic_dev *sdev, struct srnic_qp *qp,
		     struct ib_qp_init_attr *init);
void srnic_kqp_reset(struct srnic_qp *qp);
int srnic_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr);
int srnic_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr);
int srnic_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr);
struct srnic_mr *srnic_mr_alloc_kernel(int access);
int srnic_mr_publish(struct srnic_dev *sdev, struct srnic_mr *mr,
		     struct ib_pd *ibpd, u64 iova, u64 length, int access);
/* Kernel consumers' MRs (srnic_kmr.c). */
struct ib_mr *srnic_get_dma_mr(struct ib_pd *ibpd, int access);
void srnic_dma_mr_init(struct srnic_dev *sdev);
/* UD multicast (srnic_mcast.c). */
bool srnic_gid_is_mcast(const u8 *gid);
int srnic_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
int srnic_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
void srnic_mcast_cleanup(struct srnic_dev *sdev);
void srnic_mcast_deliver(struct srnic_engine *eng, struct srnic_dev *sdev,
			 struct srnic_msg *m, u32 skip);
struct ib_mr *srnic_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			     u32 max_num_sg);
int srnic_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset);
int srnic_fr_register(struct srnic_qp *qp, const struct srnic_kwqe_reg *reg);
int srnic_invalidate(struct srnic_qp *qp, u32 key, bool remote);

/* srnic_mr.c */
int srnic_mr_table_init(struct srnic_dev *sdev);
void srnic_mr_table_destroy(struct srnic_dev *sdev);
struct ib_mr *srnic_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata);
struct ib_mr *srnic_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 iova, int access,
				  struct ib_pd *ibpd, struct ib_udata *udata);
int srnic_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct ib_mr *srnic_reg_kernel_mr(struct ib_pd *ibpd, void *kva, u64 length,
				  int access);

/* srnic_odp.c */
int srnic_odp_init(void);
bool srnic_odp_is_implicit(const struct srnic_mr *mr);
void srnic_odp_cleanup(void);
int srnic_advise_mr(struct ib_pd *ibpd, enum ib_uverbs_advise_mr_advice advice,
		    u32 flags, struct ib_sge *sg_list, u32 num_sge,
		    struct uverbs_attr_bundle *attrs);
void srnic_qp_fault_init(struct srnic_qp *qp);
bool srnic_qp_fault(struct srnic_qp *qp, struct srnic_fault *f);
void srnic_odp_fault_async(struct srnic_fault *f, bool write);

/* srnic_dm.c */
struct ib_dm *srnic_alloc_dm(struct ib_device *ibdev,
			     struct ib_ucontext *ibuc,
			     struct ib_dm_alloc_attr *attr,
			     struct uverbs_attr_bundle *attrs);
int srnic_dealloc_dm(struct ib_dm *ibdm, struct uverbs_attr_bundle *attrs);
struct ib_mr *srnic_reg_dm_mr(struct ib_pd *ibpd, struct ib_dm *ibdm,
			      struct ib_dm_mr_attr *attr,
			      struct uverbs_attr_bundle *attrs);

/* srnic_mw.c */
int srnic_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int srnic_dealloc_mw(struct ib_mw *ibmw);
int srnic_mw_bind(struct srnic_qp *qp, const struct srnic_wqe_ctrl *ctrl,
		  const struct srnic_wqe_bind *b);
int srnic_mw_invalidate(struct srnic_qp *qp, u32 rkey, bool remote);
int srnic_mw_range(struct srnic_qp *qp, u32 rkey, u64 va, u64 len,
		   int access, struct srnic_sg *sg);

/* srnic_debugfs.c */
void srnic_debugfs_init(void);
void srnic_debugfs_cleanup(void);
void srnic_debugfs_add_dev(struct srnic_dev *sdev, const char *name);
void srnic_debugfs_remove_dev(struct srnic_dev *sdev);

/* srnic_restrack.c: rdma resource show */
int srnic_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp);
int srnic_fill_res_qp_entry_raw(struct sk_buff *msg, struct ib_qp *ibqp);
int srnic_fill_res_cq_entry(struct sk_buff *msg, struct ib_cq *ibcq);
int srnic_fill_res_mr_entry(struct sk_buff *msg, struct ib_mr *ibmr);
int srnic_fill_res_srq_entry(struct sk_buff *msg, struct ib_srq *ibsrq);

/* srnic_stats.c: port counters and `rdma statistic qp` */
void srnic_port_counters_sum(struct srnic_dev *sdev, u64 *v);
struct rdma_hw_stats *srnic_counter_alloc_stats(struct rdma_counter *counter);
int srnic_counter_bind_qp(struct rdma_counter *counter, struct ib_qp *ibqp);
int srnic_counter_unbind_qp(struct ib_qp *ibqp);
int srnic_counter_update_stats(struct rdma_counter *counter);
int srnic_counter_dealloc(struct rdma_counter *counter);

/* srnic_fault.c: fault injection */
void srnic_fault_init(struct srnic_dev *sdev);
void srnic_fault_debugfs(struct srnic_dev *sdev);
bool __srnic_should_fail(struct srnic_dev *sdev, enum srnic_fault_kind k,
			 u32 qpn);

/* Whether to inject a fault of kind @k here: one load while none is set. */
static inline bool srnic_should_fail(struct srnic_dev *sdev,
				     enum srnic_fault_kind k, u32 qpn)
{
	return unlikely(test_bit(k, &sdev->faults.armed)) &&
	       __srnic_should_fail(sdev, k, qpn);
}

#endif /* SRNIC_LOC_H */
