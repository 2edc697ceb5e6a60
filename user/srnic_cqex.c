// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * libsrnic: ibv_cq_ex polling and the device clock.  The same CQE ring and
 * owner protocol as ibv_poll_cq (srnic_queues.c): start_poll takes the CQ's
 * lock and the first entry, next_poll the following ones, end_poll
 * publishes the consumer counter (only then may the engine reuse the
 * entries) and drops the lock.
 *
 * The device clock of completion timestamps is CLOCK_MONOTONIC in ns
 * (hca_core_clock 1 GHz), so user space reads it without a system call.
 */
#include <errno.h>
#include <time.h>

#include "srnic.h"

enum {
	SRNIC_CQEX_WC_FLAGS = IBV_WC_STANDARD_FLAGS |
			      IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
			      IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK |
			      IBV_WC_EX_WITH_TM_INFO,
};

/*
 * What ibv_create_cq_ex() may ask: EOPNOTSUPP for fields srnic does not
 * offer (CVLAN, flow tag, parent domains, ignoring overrun),
 * EINVAL for unknown bits.
 */
int srnic_cqex_check(const struct ibv_cq_init_attr_ex *attr)
{
	if (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS |
					  IBV_CQ_INIT_ATTR_MASK_PD))
		return EINVAL;
	/* A parent domain gives the ring its allocator; a plain PD no sense. */
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
	    (!attr->parent_domain || !to_spd(attr->parent_domain)->protection))
		return EINVAL;
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) {
		if (attr->flags & ~(uint32_t)(IBV_CREATE_CQ_ATTR_SINGLE_THREADED |
					      IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN))
			return EINVAL;
		/* SINGLE_THREADED is a hint; the lock stays. */
		if (attr->flags & IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)
			return EOPNOTSUPP;
	}
	return attr->wc_flags & ~(uint64_t)SRNIC_CQEX_WC_FLAGS ? EOPNOTSUPP : 0;
}

static inline struct srnic_cq *to_scqx(struct ibv_cq_ex *cqx)
{
	return (struct srnic_cq *)cqx;
}

/* Takes the next entry, if the engine has handed it over. */
static int srnic_cqex_take(struct srnic_cq *cq)
{
	const struct srnic_cqe *cqe = srnic_cqe_peek(cq);

	if (!cqe)
		return ENOENT;
	cq->cur = cqe;
	cq->vcq.cq_ex.wr_id = cqe->wr_id;
	cq->vcq.cq_ex.status = cqe->status;
	cq->consumer++;
	return 0;
}

static int srnic_start_poll(struct ibv_cq_ex *cqx, struct ibv_poll_cq_attr *attr)
{
	struct srnic_cq *cq = to_scqx(cqx);
	int err;

	if (attr->comp_mask)
		return EINVAL;
	srnic_lock(&cq->lock);
	err = srnic_cqex_take(cq);
	/* Nothing polled: the caller does not call end_poll. */
	if (err)
		srnic_unlock(&cq->lock);
	return err;
}

static int srnic_next_poll(struct ibv_cq_ex *cqx)
{
	return srnic_cqex_take(to_scqx(cqx));
}

static void srnic_end_poll(struct ibv_cq_ex *cqx)
{
	struct srnic_cq *cq = to_scqx(cqx);

	cq->cur = NULL;
	srnic_cq_publish(cq);
	srnic_unlock(&cq->lock);
}

static enum ibv_wc_opcode srnic_read_opcode(struct ibv_cq_ex *cqx)
{
	return to_scqx(cqx)->cur->opcode;
}

static uint32_t srnic_read_vendor_err(struct ibv_cq_ex *cqx)
{
	return to_scqx(cqx)->cur->vendor_err;
}

static uint32_t srnic_read_byte_len(struct ibv_cq_ex *cqx)
{
	return to_scqx(cqx)->cur->byte_len;
}

/* Immediate data, or with IBV_WC_WITH_INV the invalidated rkey. */
static __be32 srnic_read_imm_data(struct ibv_cq_ex *cqx)
{
	return to_scqx(cqx)->cur->imm_data;
}

static uint32_t srnic_read_qp_num(struct ibv_cq_ex *cqx)
{
	return to_scqx(cqx)->cur->qp_num;
}

static uint32_t srnic_read_src_qp(struct ibv_cq_ex *cqx)
{
	return to_scqx(cqx)->cur->src_qp;
}

static unsigned int srnic_read_wc_flags(struct ibv_cq_ex *cqx)
{
	return srnic_wc_flags(to_scqx(cqx)->cur->wc_flags);
}

/* RoCE has no LIDs: the SLID and path bits of every completion are 0. */
static uint32_t srnic_read_slid(struct ibv_cq_ex *cqx)
{
	(void)cqx;
	return 0;
}

static uint8_t srnic_read_dlid_path_bits(struct ibv_cq_ex *cqx)
{
	(void)cqx;
	return 0;
}

static uint8_t srnic_read_sl(struct ibv_cq_ex *cqx)
{
	const struct srnic_cqe *cqe = to_scqx(cqx)->cur;

	return srnic_wc_sl(cqe->sl, cqe->wc_flags);
}

static uint64_t srnic_read_completion_ts(struct ibv_cq_ex *cqx)
{
	return to_scqx(cqx)->cur->timestamp;
}

static uint64_t srnic_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/*
 * The device clock is CLOCK_MONOTONIC: its wall-clock time is the
 * timestamp shifted by the current offset between the two clocks.
 */
static uint64_t srnic_read_completion_wallclock_ns(struct ibv_cq_ex *cqx)
{
	uint64_t mono = srnic_ns(CLOCK_MONOTONIC);
	uint64_t real = srnic_ns(CLOCK_REALTIME);

	return to_scqx(cqx)->cur->timestamp + (real - mono);
}

/* The TMH of a completion flagged IBV_WC_TM_MATCH; zero on others. */
static void srnic_read_tm_info(struct ibv_cq_ex *cqx,
			       struct ibv_wc_tm_info *info)
{
	const struct srnic_cqe *cqe = to_scqx(cqx)->cur;

	info->tag = (uint64_t)cqe->tm_tag_hi << 32 | cqe->tm_tag_lo;
	info->priv = cqe->tm_priv;
}

/* The accessors of the fields @wc_flags asked for (already checked). */
void srnic_cqex_init(struct srnic_cq *cq, uint64_t wc_flags)
{
	struct ibv_cq_ex *cqx = &cq->vcq.cq_ex;

	cqx->start_poll = srnic_start_poll;
	cqx->next_poll = srnic_next_poll;
	cqx->end_poll = srnic_end_poll;
	cqx->read_opcode = srnic_read_opcode;
	cqx->read_vendor_err = srnic_read_vendor_err;
	cqx->read_wc_flags = srnic_read_wc_flags;
	if (wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		cqx->read_byte_len = srnic_read_byte_len;
	if (wc_flags & IBV_WC_EX_WITH_IMM)
		cqx->read_imm_data = srnic_read_imm_data;
	if (wc_flags & IBV_WC_EX_WITH_QP_NUM)
		cqx->read_qp_num = srnic_read_qp_num;
	if (wc_flags & IBV_WC_EX_WITH_SRC_QP)
		cqx->read_src_qp = srnic_read_src_qp;
	if (wc_flags & IBV_WC_EX_WITH_SLID)
		cqx->read_slid = srnic_read_slid;
	if (wc_flags & IBV_WC_EX_WITH_SL)
		cqx->read_sl = srnic_read_sl;
	if (wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		cqx->read_dlid_path_bits = srnic_read_dlid_path_bits;
	if (wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
		cqx->read_completion_ts = srnic_read_completion_ts;
	if (wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
		cqx->read_completion_wallclock_ns =
			srnic_read_completion_wallclock_ns;
	if (wc_flags & IBV_WC_EX_WITH_TM_INFO)
		cqx->read_tm_info = srnic_read_tm_info;
}

/*
 * ibv_query_rt_values_ex: the device clock, read here with no system call.
 * Like other providers, raw_clock carries the whole count in tv_nsec (so
 * tv_sec * 10^9 + tv_nsec is the same value).
 */
int srnic_query_rt_values(struct ibv_context *ibctx,
			  struct ibv_values_ex *values)
{
	uint32_t asked = values->comp_mask;

	(void)ibctx;
	values->comp_mask = 0;
	if (asked & IBV_VALUES_MASK_RAW_CLOCK) {
		values->raw_clock.tv_sec = 0;
		values->raw_clock.tv_nsec = srnic_ns(CLOCK_MONOTONIC);
		values->comp_mask |= IBV_VALUES_MASK_RAW_CLOCK;
	}
	return 0;
}
