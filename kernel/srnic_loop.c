// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The internal loopback transport (srnic_transport.h): what a NIC does for a
 * destination on itself, for any srnic device of this host.  Every srnic
 * device is in a host-wide registry, a destination GID names the device
 * whose GID table holds it, and a QPN on that device names the destination
 * QP; the request is handed to that QP's responder at once, in the
 * requester's engine, and its answer comes back.  The faults a wire makes
 * (debugfs fault/: drop, corrupt, duplicate, rnr) are injected here.  A
 * RoCEv2 wire transport takes over where no local device owns the GID.
 */
#include <rdma/ib_cache.h>

#include "srnic_loc.h"
#include "srnic_transport.h"

static DEFINE_XARRAY_ALLOC(srnic_registry);

int srnic_registry_add(struct srnic_dev *sdev)
{
	return xa_alloc(&srnic_registry, &sdev->id, sdev, xa_limit_31b,
			GFP_KERNEL);
}

void srnic_registry_del(struct srnic_dev *sdev)
{
	if (sdev->id != U32_MAX)
		xa_erase(&srnic_registry, sdev->id);
}

/*
 * The registry id of the srnic device owning RoCEv2 GID @gid whose netdev
 * is in @from's network namespace, or -1.  A device in another namespace
 * is another host as far as routing goes: the way to it is the wire (a
 * veth pair between the namespaces), where tc, netem and tcpdump see it.
 */
int srnic_dev_by_gid(const u8 *gid, const struct srnic_dev *from)
{
	const struct net *net = dev_net(READ_ONCE(from->ndev));
	const struct ib_gid_attr *attr;
	struct srnic_dev *sdev;
	unsigned long id;
	int found = -1;

	xa_lock(&srnic_registry);
	xa_for_each(&srnic_registry, id, sdev) {
		if (!net_eq(dev_net(READ_ONCE(sdev->ndev)), net))
			continue;
		attr = rdma_find_gid_by_port(&sdev->ibdev, (const union ib_gid *)gid,
					     IB_GID_TYPE_ROCE_UDP_ENCAP,
					     SRNIC_PORT, NULL);
		if (!IS_ERR(attr)) {
			rdma_put_gid_attr(attr);
			found = id;
			break;
		}
	}
	xa_unlock(&srnic_registry);
	return found;
}

atomic_t srnic_peer_gen = ATOMIC_INIT(0);

/* QP @qpn of registry device @dev_id, referenced, or NULL. */
struct srnic_qp *srnic_peer_get(int dev_id, u32 qpn)
{
	struct srnic_qp *qp = NULL;
	struct srnic_dev *sdev;

	if (dev_id < 0)
		return NULL;
	xa_lock(&srnic_registry);
	sdev = xa_load(&srnic_registry, dev_id);
	if (sdev)
		qp = srnic_qp_get(sdev, qpn);
	xa_unlock(&srnic_registry);
	return qp;
}

/*
 * The srnic device bound to @ndev, or NULL.  For the packet hook, under
 * RCU: a device leaves the registry, then waits for the hooks in flight
 * (srnic_dealloc_driver), before its queues go.
 */
struct srnic_dev *srnic_dev_by_netdev_rcu(const struct net_device *ndev)
{
	struct srnic_dev *sdev;
	unsigned long id;

	xa_for_each(&srnic_registry, id, sdev)
		if (READ_ONCE(sdev->ndev) == ndev)
			return sdev;
	return NULL;
}

/* Whether @gid is one of @sdev's RoCEv2 GIDs. */
bool srnic_gid_is_ours(struct srnic_dev *sdev, const u8 *gid)
{
	const struct ib_gid_attr *attr;

	attr = rdma_find_gid_by_port(&sdev->ibdev, (const union ib_gid *)gid,
				     IB_GID_TYPE_ROCE_UDP_ENCAP, SRNIC_PORT,
				     NULL);
	if (IS_ERR(attr))
		return false;
	rdma_put_gid_attr(attr);
	return true;
}

/*
 * The connected peer of @qp, or NULL, found once per batch.  Usually the
 * QP's cached pointer, used without a reference: the lookup takes the
 * registry's and the peer device's locks, which the engine thread and
 * doorbell calls of every QP contend for, and costs as much as the rest of
 * a short WQE.  The cached pointer is good because the batch runs inside
 * srnic_engine_srcu and a QP leaving its table bumps the generation, then
 * waits for such sections (srnic_qp_unpublish) before it drops its own
 * reference; so a peer that the generation says is still there cannot be
 * destroyed before the batch ends.  After a generation change the batch
 * looks the peer up and holds that reference until the batch ends.  The
 * batch holds @qp's lock, so its destination cannot change meanwhile
 * (modify_qp clears the cache).
 */
static struct srnic_qp *srnic_loop_peer(struct srnic_engine *eng,
					struct srnic_qp *qp)
{
	u32 gen;

	if (eng->peer_known)
		return eng->peer;
	eng->peer_known = true;
	gen = srnic_peer_generation();
	if (qp->peer_cache && qp->peer_cache_gen == gen) {
		eng->peer = qp->peer_cache;
		return eng->peer;
	}
	eng->peer = srnic_peer_get(qp->peer_dev, qp->attr.dest_qp_num);
	eng->peer_held = eng->peer;
	qp->peer_cache = eng->peer;
	qp->peer_cache_gen = gen;
	return eng->peer;
}

void srnic_loop_batch_end(struct srnic_engine *eng)
{
	if (eng->peer_held)
		srnic_qp_put(eng->peer_held);
	eng->peer_held = NULL;
	eng->peer = NULL;
	eng->peer_known = false;
}

static bool srnic_opcode_is_send(u8 op)
{
	return op == IB_UVERBS_WR_SEND || op == IB_UVERBS_WR_SEND_WITH_IMM ||
	       op == IB_UVERBS_WR_SEND_WITH_INV;
}

/*
 * An injected RNR NAK (debugfs fault/rnr), for the requests that take a
 * receive WQE at the responder: a SEND's first piece, a WRITE with
 * immediate's last.  The one case where RNR is an answer.
 */
static bool srnic_fault_rnr(struct srnic_qp *dst, const struct srnic_msg *m)
{
	u8 op = m->opcode;

	return ((srnic_opcode_is_send(op) && !m->off) ||
		(op == IB_UVERBS_WR_RDMA_WRITE_WITH_IMM && srnic_msg_last(m))) &&
	       srnic_should_fail(to_sdev(dst->ibqp.device), SRNIC_FAULT_RNR,
				 dst->qpn);
}

/* A corrupted request fails @dst's ICRC check: dropped there, counted. */
static bool srnic_fault_corrupt(struct srnic_dev *sdev, struct srnic_qp *qp,
				struct srnic_qp *dst)
{
	if (!srnic_should_fail(sdev, SRNIC_FAULT_CORRUPT, qp->qpn))
		return false;
	srnic_count(to_sdev(dst->ibqp.device), SRNIC_PC_ICRC_ERRORS);
	return true;
}

/*
 * A request @dst accepted (@r) arrives a second time.  RC and UC responders
 * know the copy by its PSN (RC acknowledges it again, UC drops it) and
 * execute nothing; UD has no PSN, so the copy is one more message, received
 * if a receive WQE is there and otherwise lost.
 */
static enum srnic_resp srnic_fault_duplicate(struct srnic_engine *eng,
					     struct srnic_qp *qp,
					     struct srnic_qp *dst,
					     struct srnic_msg *m,
					     enum srnic_resp r)
{
	struct srnic_dev *sdev = to_sdev(qp->ibqp.device);

	if (r != SRNIC_RESP_OK ||
	    !srnic_should_fail(sdev, SRNIC_FAULT_DUPLICATE, qp->qpn))
		return r;
	if (!srnic_qpt_ud(qp->ibqp.qp_type)) {
		srnic_count(to_sdev(dst->ibqp.device), SRNIC_PC_DUP_REQUESTS);
		return r;
	}
	return srnic_resp_recv(eng, dst, m, true) == SRNIC_RESP_FAULT ?
		       SRNIC_RESP_FAULT : r;
}

/*
 * The responder's page is not mapped.  On one host the requester can wait
 * for it (its fault worker maps the responder's MR): FAULT.  If it cannot,
 * the responder fails the request as a bad access: a receive completes in
 * error, an RDMA access is refused.
 */
static enum srnic_resp srnic_loop_fault(struct srnic_engine *eng,
					struct srnic_qp *qp,
					struct srnic_qp *dst,
					struct srnic_msg *m)
{
	if (srnic_qp_fault(qp, &eng->remote.fault))
		return SRNIC_RESP_FAULT;
	if (!srnic_opcode_is_send(m->opcode))
		return SRNIC_RESP_NAK_ACCESS;
	srnic_recv_fail_held(dst, m, IB_WC_LOC_PROT_ERR);
	return SRNIC_RESP_NAK_OP;
}

/*
 * UD: the destination comes from the message's address vector.  Whatever
 * does not arrive (unreachable, wrong Q_Key, not receiving) is lost, as on
 * a wire; the answer is only for the requester's own use (FAULT: it waits
 * for the receiver's page rather than lose the datagram).
 */
static void srnic_loop_datagram(struct srnic_engine *eng, struct srnic_qp *qp,
				struct srnic_msg *m, struct srnic_reply *rep)
{
	struct srnic_dev *sdev = to_sdev(qp->ibqp.device);
	int dev = srnic_dev_by_gid(m->dgid, sdev);
	enum srnic_resp r = SRNIC_RESP_DROP;
	struct srnic_qp *dst;

	/*
	 * A multicast: the device's attached QPs get it (the NIC's own
	 * loopback), and the wire, for other hosts' devices.
	 */
	if (m->dqpn == SRNIC_MCAST_QPN && srnic_gid_is_mcast(m->dgid)) {
		srnic_mcast_deliver(eng, sdev, m,
				    qp->block_mcast_lb ? qp->qpn : 0);
		srnic_wire.request(eng, qp, m, rep);
		return;
	}
	/* No device of this host owns the address: the wire's. */
	if (dev < 0) {
		srnic_wire.request(eng, qp, m, rep);
		return;
	}
	dst = srnic_peer_get(dev, m->dqpn);
	if (dst && srnic_qpt_ud(dst->ibqp.qp_type) &&
	    READ_ONCE(dst->attr.qkey) == m->qkey &&
	    !srnic_should_fail(sdev, SRNIC_FAULT_DROP, qp->qpn) &&
	    !srnic_fault_corrupt(sdev, qp, dst))
		r = srnic_fault_duplicate(eng, qp, dst, m,
					  srnic_resp_recv(eng, dst, m, true));
	if (r == SRNIC_RESP_FAULT && !srnic_qp_fault(qp, &eng->remote.fault)) {
		srnic_recv_fail_held(dst, m, IB_WC_LOC_PROT_ERR);
		r = SRNIC_RESP_DROP;
	}
	if (dst) {
		srnic_resp_account(dst, m, r);
		srnic_qp_put(dst);
	}
	rep->r = r;
}

void srnic_loop_request(struct srnic_engine *eng, struct srnic_qp *qp,
			struct srnic_msg *m, struct srnic_reply *rep)
{
	struct srnic_dev *sdev = to_sdev(qp->ibqp.device);
	enum ib_qp_type type = qp->ibqp.qp_type;
	struct srnic_qp *dst;
	enum srnic_resp r;

	rep->data = NULL;
	if (srnic_qpt_ud(type)) {
		srnic_loop_datagram(eng, qp, m, rep);
		return;
	}
	/* The connection's state the responder may use. */
	m->src = qp;
	m->rkey_cache = &qp->rkey_cache;
	dst = srnic_loop_peer(eng, qp);
	if (!dst || !srnic_resp_accepts(dst, type, m) ||
	    srnic_should_fail(sdev, SRNIC_FAULT_DROP, qp->qpn) ||
	    srnic_fault_corrupt(sdev, qp, dst)) {
		rep->r = SRNIC_RESP_DROP;	/* not connected to us, or lost */
		return;
	}
	if (type != IB_QPT_UC && srnic_fault_rnr(dst, m))
		r = SRNIC_RESP_RNR;
	else if (type == IB_QPT_XRC_INI &&
		 srnic_resp_xrc_srq(dst, m->xrc_srqn, m))
		r = SRNIC_RESP_NAK_INV;	/* no such XRC SRQ there */
	else
		r = srnic_resp_execute(eng, dst, m, rep);
	/* Faults are rare: not even a call for them per message. */
	if (unlikely(READ_ONCE(sdev->faults.armed)))
		r = srnic_fault_duplicate(eng, qp, dst, m, r);
	if (r == SRNIC_RESP_FAULT)
		r = srnic_loop_fault(eng, qp, dst, m);
	srnic_resp_account(dst, m, r);
	srnic_resp_nak(dst, r);
	if (r == SRNIC_RESP_RNR)
		rep->rnr_usec = srnic_resp_rnr_usec(dst);
	if (m->xrc_srq)
		srnic_srq_put(m->xrc_srq);
	m->xrc_srq = NULL;
	rep->r = r;
}

/* READ: the responder's range goes once the requester has its bytes. */
void srnic_loop_reply_done(struct srnic_engine *eng, struct srnic_reply *rep)
{
	if (rep->data)
		srnic_sg_release(&eng->remote);
	rep->data = NULL;
}

const struct srnic_transport srnic_loopback = {
	.name = "loopback",
	.request = srnic_loop_request,
	.reply_done = srnic_loop_reply_done,
	.batch_end = srnic_loop_batch_end,
};
