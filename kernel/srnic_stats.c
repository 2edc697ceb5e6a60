// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Port counters through the core's hw-stats ops (`rdma statistic show`,
 * /sys/class/infiniband/<dev>/ports/1/hw_counters).  They are read from the
 * same fields debugfs shows, so there is one source of truth for each.
 */
#include "srnic_loc.h"

enum srnic_counter {
	SRNIC_CNT_WQES,
	SRNIC_CNT_INLINE_WQES,
	SRNIC_CNT_DOORBELLS,
	SRNIC_CNT_WAKEUPS,
	SRNIC_CNT_SLEEPS,
	SRNIC_CNT_YIELDS,
	SRNIC_CNT_ODP_FAULTS,
	SRNIC_CNT_ODP_PAGES_FAULTED,
	SRNIC_CNT_ODP_INVALIDATIONS,
	SRNIC_CNT_ODP_PAGES_INVALIDATED,
	SRNIC_CNT_ODP_PREFETCHES,
	SRNIC_CNT_RAW_TX,
	SRNIC_CNT_RAW_TX_DROPPED,
	SRNIC_CNT_RAW_DELIVERED,
	SRNIC_CNT_RAW_NO_FLOW,
	SRNIC_CNT_RAW_NO_WQE,
	SRNIC_CNT_PORT,		/* then enum srnic_port_counter, in order */
	SRNIC_CNT_NUM = SRNIC_CNT_PORT + SRNIC_PC_NUM
};

static const struct rdma_stat_desc srnic_counter_descs[SRNIC_CNT_NUM] = {
	[SRNIC_CNT_WQES] = { .name = "wqes" },
	[SRNIC_CNT_INLINE_WQES] = { .name = "inline_wqes" },
	[SRNIC_CNT_DOORBELLS] = { .name = "doorbell_calls" },
	[SRNIC_CNT_WAKEUPS] = { .name = "engine_wakeups" },
	[SRNIC_CNT_SLEEPS] = { .name = "engine_sleeps" },
	[SRNIC_CNT_YIELDS] = { .name = "engine_yields" },
	[SRNIC_CNT_ODP_FAULTS] = { .name = "odp_page_faults" },
	[SRNIC_CNT_ODP_PAGES_FAULTED] = { .name = "odp_pages_faulted" },
	[SRNIC_CNT_ODP_INVALIDATIONS] = { .name = "odp_invalidations" },
	[SRNIC_CNT_ODP_PAGES_INVALIDATED] = { .name = "odp_pages_invalidated" },
	[SRNIC_CNT_ODP_PREFETCHES] = { .name = "odp_prefetches" },
	[SRNIC_CNT_RAW_TX] = { .name = "raw_tx" },
	[SRNIC_CNT_RAW_TX_DROPPED] = { .name = "raw_tx_dropped" },
	[SRNIC_CNT_RAW_DELIVERED] = { .name = "raw_delivered" },
	[SRNIC_CNT_RAW_NO_FLOW] = { .name = "raw_no_flow" },
	[SRNIC_CNT_RAW_NO_WQE] = { .name = "raw_no_wqe" },
	[SRNIC_CNT_PORT + SRNIC_PC_TX_MSGS] = { .name = "tx_msgs" },
	[SRNIC_CNT_PORT + SRNIC_PC_TX_BYTES] = { .name = "tx_bytes" },
	[SRNIC_CNT_PORT + SRNIC_PC_RX_MSGS] = { .name = "rx_msgs" },
	[SRNIC_CNT_PORT + SRNIC_PC_RX_BYTES] = { .name = "rx_bytes" },
	[SRNIC_CNT_PORT + SRNIC_PC_RNR_NAKS_SENT] = { .name = "rnr_naks_sent" },
	[SRNIC_CNT_PORT + SRNIC_PC_RNR_NAKS_RCVD] = { .name = "rnr_naks_rcvd" },
	[SRNIC_CNT_PORT + SRNIC_PC_NAKS_SENT] = { .name = "naks_sent" },
	[SRNIC_CNT_PORT + SRNIC_PC_NAKS_RCVD] = { .name = "naks_rcvd" },
	[SRNIC_CNT_PORT + SRNIC_PC_RETRANSMITS] = { .name = "retransmits" },
	[SRNIC_CNT_PORT + SRNIC_PC_RNR_RETRIES] = { .name = "rnr_retries" },
	[SRNIC_CNT_PORT + SRNIC_PC_RETRY_EXCEEDED] = { .name = "retry_exceeded" },
	[SRNIC_CNT_PORT + SRNIC_PC_RNR_RETRY_EXCEEDED] = { .name = "rnr_retry_exceeded" },
	[SRNIC_CNT_PORT + SRNIC_PC_CQ_OVERRUNS] = { .name = "cq_overruns" },
	[SRNIC_CNT_PORT + SRNIC_PC_LINK_DOWNED] = { .name = "link_downed" },
	[SRNIC_CNT_PORT + SRNIC_PC_DUP_REQUESTS] = { .name = "duplicate_request" },
	[SRNIC_CNT_PORT + SRNIC_PC_ICRC_ERRORS] = { .name = "rx_icrc_errors" },
	[SRNIC_CNT_PORT + SRNIC_PC_TX_PACKETS] = { .name = "tx_packets" },
	[SRNIC_CNT_PORT + SRNIC_PC_TX_DROPPED] = { .name = "tx_dropped" },
	[SRNIC_CNT_PORT + SRNIC_PC_RX_DROPPED] = { .name = "rx_dropped" },
	[SRNIC_CNT_PORT + SRNIC_PC_SEQ_NAKS_SENT] = { .name = "seq_naks_sent" },
	[SRNIC_CNT_PORT + SRNIC_PC_IMPLIED_NAKS] = { .name = "implied_nak_seq_err" },
	[SRNIC_CNT_PORT + SRNIC_PC_TX_ZCOPY] = { .name = "tx_zcopy_packets" },
	[SRNIC_CNT_PORT + SRNIC_PC_RX_FRAGS] = { .name = "rx_frag_packets" },
	[SRNIC_CNT_PORT + SRNIC_PC_RX_READ_STAGED] = { .name = "rx_read_staged_packets" },
	[SRNIC_CNT_PORT + SRNIC_PC_RESP_LEN_ERRORS] = { .name = "resp_local_length_error" },
	[SRNIC_CNT_PORT + SRNIC_PC_RX_BAD_PKEY] = { .name = "rx_bad_pkey" },
};

void srnic_port_counters_sum(struct srnic_dev *sdev, u64 *v)
{
	int cpu, i;

	memset(v, 0, SRNIC_PC_NUM * sizeof(*v));
	for_each_possible_cpu(cpu)
		for (i = 0; i < SRNIC_PC_NUM; i++)
			v[i] += READ_ONCE(per_cpu_ptr(sdev->pcnt, cpu)->v[i]);
}

static void srnic_port_counters_unbound(struct srnic_dev *sdev, u64 *pv);

struct rdma_hw_stats *srnic_alloc_hw_port_stats(struct ib_device *ibdev,
						u32 port_num)
{
	return rdma_alloc_hw_stats_struct(srnic_counter_descs, SRNIC_CNT_NUM,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

int srnic_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		       u32 port_num, int index)
{
	struct srnic_dev *sdev = to_sdev(ibdev);
	struct srnic_sched *s = &sdev->sched;
	u64 *v = stats->value;
	unsigned int i;

	v[SRNIC_CNT_WQES] = 0;
	v[SRNIC_CNT_WAKEUPS] = 0;
	v[SRNIC_CNT_SLEEPS] = 0;
	v[SRNIC_CNT_YIELDS] = 0;
	for (i = 0; i < s->nthreads; i++) {
		v[SRNIC_CNT_WQES] += READ_ONCE(s->threads[i].eng.wqes);
		v[SRNIC_CNT_WAKEUPS] += READ_ONCE(s->threads[i].wakeups);
		v[SRNIC_CNT_SLEEPS] += READ_ONCE(s->threads[i].sleeps);
		v[SRNIC_CNT_YIELDS] += READ_ONCE(s->threads[i].yields);
	}
	v[SRNIC_CNT_INLINE_WQES] = 0;
	for (i = 0; i < s->pool_size; i++)
		v[SRNIC_CNT_INLINE_WQES] += READ_ONCE(s->pool[i].wqes);
	v[SRNIC_CNT_DOORBELLS] = atomic64_read(&s->doorbells);
	v[SRNIC_CNT_ODP_FAULTS] = atomic64_read(&sdev->odp_stats.page_faults);
	v[SRNIC_CNT_ODP_PAGES_FAULTED] =
		atomic64_read(&sdev->odp_stats.pages_faulted);
	v[SRNIC_CNT_ODP_INVALIDATIONS] =
		atomic64_read(&sdev->odp_stats.invalidations);
	v[SRNIC_CNT_ODP_PAGES_INVALIDATED] =
		atomic64_read(&sdev->odp_stats.pages_invalidated);
	v[SRNIC_CNT_ODP_PREFETCHES] = atomic64_read(&sdev->odp_stats.prefetches);
	v[SRNIC_CNT_RAW_TX] = atomic64_read(&sdev->raw_stats.tx);
	v[SRNIC_CNT_RAW_TX_DROPPED] = atomic64_read(&sdev->raw_stats.tx_dropped);
	v[SRNIC_CNT_RAW_DELIVERED] = atomic64_read(&sdev->raw_stats.delivered);
	v[SRNIC_CNT_RAW_NO_FLOW] = atomic64_read(&sdev->raw_stats.no_flow);
	v[SRNIC_CNT_RAW_NO_WQE] = atomic64_read(&sdev->raw_stats.no_wqe);
	srnic_port_counters_unbound(sdev, v + SRNIC_CNT_PORT);
	return SRNIC_CNT_NUM;
}

/* ---- per-QP counters: `rdma statistic qp` ---- */

/*
 * The core reads a port counter as what get_hw_stats says plus what every
 * rdma counter of the port has counted (as a hardware NIC's default counter
 * set counts only the QPs bound to no other).  So a counter's stats use the
 * port's table, each QP counter at its port counter's index, and the port
 * reports its total less what the counters took.
 */
static const u8 srnic_qc_port[SRNIC_QC_NUM] = {
	[SRNIC_QC_TX_MSGS] = SRNIC_PC_TX_MSGS,
	[SRNIC_QC_TX_BYTES] = SRNIC_PC_TX_BYTES,
	[SRNIC_QC_RNR_NAKS_RCVD] = SRNIC_PC_RNR_NAKS_RCVD,
	[SRNIC_QC_NAKS_RCVD] = SRNIC_PC_NAKS_RCVD,
	[SRNIC_QC_RETRANSMITS] = SRNIC_PC_RETRANSMITS,
	[SRNIC_QC_RNR_RETRIES] = SRNIC_PC_RNR_RETRIES,
	[SRNIC_QC_RX_MSGS] = SRNIC_PC_RX_MSGS,
	[SRNIC_QC_RX_BYTES] = SRNIC_PC_RX_BYTES,
	[SRNIC_QC_RNR_NAKS_SENT] = SRNIC_PC_RNR_NAKS_SENT,
	[SRNIC_QC_NAKS_SENT] = SRNIC_PC_NAKS_SENT,
};

/* A counter's QPs and what QPs that left it had counted. */
struct srnic_qp_counter_set {
	struct list_head qps;		/* struct srnic_qp_counters.node */
	u64 retired[SRNIC_QC_NUM];
};

static u64 srnic_qp_counter_read(struct srnic_qp *qp, int i)
{
	return i < SRNIC_QC_REQ_NUM ? READ_ONCE(qp->cnt.req[i]) :
		atomic64_read(&qp->cnt.resp[i - SRNIC_QC_REQ_NUM]);
}

/* Adds what @set's QPs counted since they were bound to @v. */
static void srnic_counter_set_live(struct srnic_qp_counter_set *set, u64 *v)
{
	struct srnic_qp_counters *qc;
	int i;

	list_for_each_entry(qc, &set->qps, node) {
		struct srnic_qp *qp = container_of(qc, struct srnic_qp, cnt);

		for (i = 0; i < SRNIC_QC_NUM; i++)
			v[i] += srnic_qp_counter_read(qp, i) - qc->base[i];
	}
}

/*
 * What the port's counters total, less what rdma counters took.  The QPs
 * are read first: each event reaches its port counter before its QP's, so
 * the difference cannot go below zero.
 */
static void srnic_port_counters_unbound(struct srnic_dev *sdev, u64 *pv)
{
	struct srnic_qp_counter_set *set;
	u64 taken[SRNIC_QC_NUM];
	unsigned long id;
	int i;

	mutex_lock(&sdev->counter_lock);
	memcpy(taken, sdev->counted, sizeof(taken));
	xa_for_each(&sdev->counters, id, set)
		srnic_counter_set_live(set, taken);
	mutex_unlock(&sdev->counter_lock);
	srnic_port_counters_sum(sdev, pv);
	for (i = 0; i < SRNIC_QC_NUM; i++)
		pv[srnic_qc_port[i]] -= min(taken[i], pv[srnic_qc_port[i]]);
}

struct rdma_hw_stats *srnic_counter_alloc_stats(struct rdma_counter *counter)
{
	return rdma_alloc_hw_stats_struct(srnic_counter_descs, SRNIC_CNT_NUM,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

int srnic_counter_bind_qp(struct rdma_counter *counter, struct ib_qp *ibqp)
{
	struct srnic_dev *sdev = to_sdev(ibqp->device);
	struct srnic_qp *qp = to_sqp(ibqp);
	struct srnic_qp_counter_set *set;
	int i, err = 0;
	u32 id;

	mutex_lock(&sdev->counter_lock);
	if (!counter->id) {
		set = kzalloc(sizeof(*set), GFP_KERNEL);
		if (!set) {
			err = -ENOMEM;
			goto out;
		}
		INIT_LIST_HEAD(&set->qps);
		err = xa_alloc(&sdev->counters, &id, set, xa_limit_31b,
			       GFP_KERNEL);
		if (err) {
			kfree(set);
			goto out;
		}
		counter->id = id;
	}
	set = xa_load(&sdev->counters, counter->id);
	if (WARN_ON(!set)) {
		err = -EINVAL;
		goto out;
	}
	for (i = 0; i < SRNIC_QC_NUM; i++)
		qp->cnt.base[i] = srnic_qp_counter_read(qp, i);
	list_add_tail(&qp->cnt.node, &set->qps);
	ibqp->counter = counter;
out:
	mutex_unlock(&sdev->counter_lock);
	return err;
}

int srnic_counter_unbind_qp(struct ib_qp *ibqp)
{
	struct srnic_dev *sdev = to_sdev(ibqp->device);
	struct srnic_qp *qp = to_sqp(ibqp);
	struct srnic_qp_counter_set *set;
	int i;

	mutex_lock(&sdev->counter_lock);
	set = xa_load(&sdev->counters, ibqp->counter->id);
	if (WARN_ON(!set)) {
		mutex_unlock(&sdev->counter_lock);
		return -EINVAL;
	}
	for (i = 0; i < SRNIC_QC_NUM; i++) {
		u64 d = srnic_qp_counter_read(qp, i) - qp->cnt.base[i];

		set->retired[i] += d;
		sdev->counted[i] += d;
	}
	list_del_init(&qp->cnt.node);
	ibqp->counter = NULL;
	mutex_unlock(&sdev->counter_lock);
	return 0;
}

int srnic_counter_update_stats(struct rdma_counter *counter)
{
	struct srnic_dev *sdev = to_sdev(counter->device);
	struct srnic_qp_counter_set *set;
	u64 v[SRNIC_QC_NUM] = {};
	int i;

	mutex_lock(&sdev->counter_lock);
	set = xa_load(&sdev->counters, counter->id);
	if (set) {
		memcpy(v, set->retired, sizeof(v));
		srnic_counter_set_live(set, v);
	}
	mutex_unlock(&sdev->counter_lock);
	memset(counter->stats->value, 0,
	       counter->stats->num_counters * sizeof(counter->stats->value[0]));
	for (i = 0; i < SRNIC_QC_NUM; i++)
		counter->stats->value[SRNIC_CNT_PORT + srnic_qc_port[i]] = v[i];
	return 0;
}

int srnic_counter_dealloc(struct rdma_counter *counter)
{
	struct srnic_dev *sdev = to_sdev(counter->device);

	mutex_lock(&sdev->counter_lock);
	if (counter->id)
		kfree(xa_erase(&sdev->counters, counter->id));
	mutex_unlock(&sdev->counter_lock);
	return 0;
}
