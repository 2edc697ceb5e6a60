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
	SRNIC_CNT_NUM
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
};

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

	v[SRNIC_CNT_WQES] = READ_ONCE(s->thread.wqes);
	v[SRNIC_CNT_INLINE_WQES] = 0;
	for (i = 0; i < s->pool_size; i++)
		v[SRNIC_CNT_INLINE_WQES] += READ_ONCE(s->pool[i].wqes);
	v[SRNIC_CNT_DOORBELLS] = atomic64_read(&s->doorbells);
	v[SRNIC_CNT_WAKEUPS] = READ_ONCE(s->wakeups);
	v[SRNIC_CNT_SLEEPS] = READ_ONCE(s->sleeps);
	v[SRNIC_CNT_YIELDS] = READ_ONCE(s->yields);
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
	return SRNIC_CNT_NUM;
}
