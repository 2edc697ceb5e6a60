/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * srnic tracepoints (/sys/kernel/tracing/events/srnic/, perf trace -e
 * 'srnic:*', trace-cmd).  Each costs one static-key test while disabled.
 * The device is named in every event: several srnic devices share the
 * module.  Opcodes are IB_UVERBS_WR_* for work requests and messages,
 * enum ib_wc_opcode for completions.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM srnic

#if !defined(SRNIC_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define SRNIC_TRACE_H

#include <linux/tracepoint.h>
#include "srnic.h"

/* __assign_str() takes the source again before 6.10. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0)
#define srnic_assign_str(dst, src) __assign_str(dst)
#else
#define srnic_assign_str(dst, src) __assign_str(dst, src)
#endif

/* A doorbell system call: software asked for its QP to be run now. */
TRACE_EVENT(srnic_doorbell,
	TP_PROTO(struct srnic_dev *sdev, u32 qpn),
	TP_ARGS(sdev, qpn),
	TP_STRUCT__entry(
		__string(dev, dev_name(&sdev->ibdev.dev))
		__field(u32, qpn)
	),
	TP_fast_assign(
		srnic_assign_str(dev, dev_name(&sdev->ibdev.dev));
		__entry->qpn = qpn;
	),
	TP_printk("%s qpn=%u", __get_str(dev), __entry->qpn)
);

/* A send WQE copied out of the ring, before it is validated. */
TRACE_EVENT(srnic_wqe,
	TP_PROTO(struct srnic_qp *qp, u32 index, u8 opcode, u8 flags,
		 u32 num_sge),
	TP_ARGS(qp, index, opcode, flags, num_sge),
	TP_STRUCT__entry(
		__string(dev, dev_name(&qp->ibqp.device->dev))
		__field(u32, qpn)
		__field(u32, index)
		__field(u8, opcode)
		__field(u8, flags)
		__field(u32, num_sge)
	),
	TP_fast_assign(
		srnic_assign_str(dev, dev_name(&qp->ibqp.device->dev));
		__entry->qpn = qp->qpn;
		__entry->index = index;
		__entry->opcode = opcode;
		__entry->flags = flags;
		__entry->num_sge = num_sge;
	),
	TP_printk("%s qpn=%u index=%u opcode=%u flags=0x%x num_sge=%u",
		  __get_str(dev), __entry->qpn, __entry->index,
		  __entry->opcode, __entry->flags, __entry->num_sge)
);

/*
 * A message from @qp to the QP numbered @dqpn, and the responder's answer
 * (enum srnic_resp: 0 ack, 1 RNR NAK, 2 no answer, 3 page fault, 4-6 NAK).
 */
TRACE_EVENT(srnic_msg,
	TP_PROTO(struct srnic_qp *qp, u32 dqpn, u8 opcode, u64 len, int resp),
	TP_ARGS(qp, dqpn, opcode, len, resp),
	TP_STRUCT__entry(
		__string(dev, dev_name(&qp->ibqp.device->dev))
		__field(u32, qpn)
		__field(u32, dqpn)
		__field(u64, len)
		__field(u8, opcode)
		__field(int, resp)
	),
	TP_fast_assign(
		srnic_assign_str(dev, dev_name(&qp->ibqp.device->dev));
		__entry->qpn = qp->qpn;
		__entry->dqpn = dqpn;
		__entry->len = len;
		__entry->opcode = opcode;
		__entry->resp = resp;
	),
	TP_printk("%s qpn=%u dqpn=%u opcode=%u len=%llu resp=%d",
		  __get_str(dev), __entry->qpn, __entry->dqpn,
		  __entry->opcode, __entry->len, __entry->resp)
);

/* A request to be sent again: after an RNR NAK (@rnr) or no answer. */
TRACE_EVENT(srnic_retry,
	TP_PROTO(struct srnic_qp *qp, bool rnr, u8 left, unsigned int usec),
	TP_ARGS(qp, rnr, left, usec),
	TP_STRUCT__entry(
		__string(dev, dev_name(&qp->ibqp.device->dev))
		__field(u32, qpn)
		__field(bool, rnr)
		__field(u8, left)
		__field(unsigned int, usec)
	),
	TP_fast_assign(
		srnic_assign_str(dev, dev_name(&qp->ibqp.device->dev));
		__entry->qpn = qp->qpn;
		__entry->rnr = rnr;
		__entry->left = left;
		__entry->usec = usec;
	),
	TP_printk("%s qpn=%u %s retries_left=%u after_us=%u", __get_str(dev),
		  __entry->qpn, __entry->rnr ? "rnr" : "timeout",
		  __entry->left, __entry->usec)
);

/* A completion written to a CQ (or lost to an overrun: @ok false). */
TRACE_EVENT(srnic_cqe,
	TP_PROTO(struct srnic_cq *cq, const struct srnic_cqe *cqe, bool ok),
	TP_ARGS(cq, cqe, ok),
	TP_STRUCT__entry(
		__string(dev, dev_name(&cq->ibcq.device->dev))
		__field(u32, cqn)
		__field(u32, qpn)
		__field(u64, wr_id)
		__field(u32, byte_len)
		__field(u8, opcode)
		__field(u8, status)
		__field(bool, ok)
	),
	TP_fast_assign(
		srnic_assign_str(dev, dev_name(&cq->ibcq.device->dev));
		__entry->cqn = cq->cqn;
		__entry->qpn = cqe->qp_num;
		__entry->wr_id = cqe->wr_id;
		__entry->byte_len = cqe->byte_len;
		__entry->opcode = cqe->opcode;
		__entry->status = cqe->status;
		__entry->ok = ok;
	),
	TP_printk("%s cqn=%u qpn=%u wr_id=0x%llx opcode=%u status=%u len=%u%s",
		  __get_str(dev), __entry->cqn, __entry->qpn, __entry->wr_id,
		  __entry->opcode, __entry->status, __entry->byte_len,
		  __entry->ok ? "" : " overrun")
);

/* An ODP page fault (or prefetch) resolved: @ret pages mapped or -errno. */
TRACE_EVENT(srnic_odp_fault,
	TP_PROTO(struct srnic_mr *mr, u64 iova, u64 len, bool prefetch,
		 int ret),
	TP_ARGS(mr, iova, len, prefetch, ret),
	TP_STRUCT__entry(
		__string(dev, dev_name(&mr->ibmr.device->dev))
		__field(u32, lkey)
		__field(u64, iova)
		__field(u64, len)
		__field(bool, prefetch)
		__field(int, ret)
	),
	TP_fast_assign(
		srnic_assign_str(dev, dev_name(&mr->ibmr.device->dev));
		__entry->lkey = mr->ibmr.lkey;
		__entry->iova = iova;
		__entry->len = len;
		__entry->prefetch = prefetch;
		__entry->ret = ret;
	),
	TP_printk("%s lkey=0x%x iova=0x%llx len=%llu%s ret=%d",
		  __get_str(dev), __entry->lkey, __entry->iova, __entry->len,
		  __entry->prefetch ? " prefetch" : "", __entry->ret)
);

/* An ODP range unmapped because its memory changed. */
TRACE_EVENT(srnic_odp_invalidate,
	TP_PROTO(struct srnic_mr *mr, u64 start, u64 end),
	TP_ARGS(mr, start, end),
	TP_STRUCT__entry(
		__string(dev, dev_name(&mr->ibmr.device->dev))
		__field(u32, lkey)
		__field(u64, start)
		__field(u64, end)
	),
	TP_fast_assign(
		srnic_assign_str(dev, dev_name(&mr->ibmr.device->dev));
		__entry->lkey = mr->ibmr.lkey;
		__entry->start = start;
		__entry->end = end;
	),
	TP_printk("%s lkey=0x%x va=0x%llx-0x%llx", __get_str(dev),
		  __entry->lkey, __entry->start, __entry->end)
);

/* The engine thread goes to sleep (enum srnic_sleep_reason) ... */
TRACE_EVENT(srnic_engine_sleep,
	TP_PROTO(struct srnic_dev *sdev, int reason),
	TP_ARGS(sdev, reason),
	TP_STRUCT__entry(
		__string(dev, dev_name(&sdev->ibdev.dev))
		__field(int, reason)
	),
	TP_fast_assign(
		srnic_assign_str(dev, dev_name(&sdev->ibdev.dev));
		__entry->reason = reason;
	),
	TP_printk("%s %s", __get_str(dev),
		  __entry->reason ? "yield" : "idle")
);

/* ... and wakes, kicked by a waker or not (a timer). */
TRACE_EVENT(srnic_engine_wake,
	TP_PROTO(struct srnic_dev *sdev, bool kicked),
	TP_ARGS(sdev, kicked),
	TP_STRUCT__entry(
		__string(dev, dev_name(&sdev->ibdev.dev))
		__field(bool, kicked)
	),
	TP_fast_assign(
		srnic_assign_str(dev, dev_name(&sdev->ibdev.dev));
		__entry->kicked = kicked;
	),
	TP_printk("%s %s", __get_str(dev),
		  __entry->kicked ? "kicked" : "timer")
);

#endif /* SRNIC_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE srnic_trace
#include <trace/define_trace.h>
