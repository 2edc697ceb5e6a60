// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * UD multicast: groups of the device's UD QPs by multicast GID
 * (ibv_attach_mcast, rdma_join_multicast).  A datagram sent to a group's
 * GID reaches every QP of the device attached to it (the NIC's internal
 * loopback, unless its sender blocks that) and goes onto the wire, where
 * other hosts' devices deliver it to theirs.  The IP-level join (IGMP/MLD)
 * is rdma_cm's, as for any RoCE device; attaching adds the group's MAC to
 * the netdev's filter so its frames are received.
 *
 * Groups are read by engines under RCU: each is an array of QPNs, replaced
 * whole (copy on write) by attach and detach, which take the device's
 * mcast_lock.  A QP may be attached to a group several times: the core
 * keeps one attachment per (GID, LID) it was given, and RoCE ignores the
 * LID, so the group counts them and the QP leaves at the last detach (were
 * the second one refused, the core would keep its entry, and the QP could
 * never be destroyed).
 */
#include <net/ip.h>
#include <net/addrconf.h>
#include <rdma/ib_addr.h>

#include "srnic_loc.h"

struct srnic_mcg {
	struct list_head list;		/* srnic_dev.mcgs, RCU */
	struct rcu_head rcu;
	u8 mgid[16];
	u32 nqp;
	u32 qpn[];			/* nqp QPNs, then their attachments */
};

/* How many times each QP of @g is attached (under mcast_lock). */
static u32 *srnic_mcg_refs(struct srnic_mcg *g)
{
	return g->qpn + g->nqp;
}

/* Whether @gid is a multicast GID (the core's test, which takes no const). */
bool srnic_gid_is_mcast(const u8 *gid)
{
	return rdma_is_multicast_addr((struct in6_addr *)gid);
}

/* The Ethernet address frames to @mgid are sent to. */
static void srnic_mcast_mac(const u8 *mgid, u8 *mac)
{
	const struct in6_addr *a = (const struct in6_addr *)mgid;

	if (ipv6_addr_v4mapped(a))
		ip_eth_mc_map(a->s6_addr32[3], mac);
	else
		ipv6_eth_mc_map(a, mac);
}

static struct srnic_mcg *srnic_mcg_find(struct srnic_dev *sdev,
					const u8 *mgid)
{
	struct srnic_mcg *g;

	list_for_each_entry_rcu(g, &sdev->mcgs, list,
				lockdep_is_held(&sdev->mcast_lock))
		if (!memcmp(g->mgid, mgid, 16))
			return g;
	return NULL;
}

/*
 * @old's QPNs with @qpn added (@add: a new member, attached once) or taken
 * out (a member); NULL on no memory.
 */
static struct srnic_mcg *srnic_mcg_copy(struct srnic_mcg *old,
					const u8 *mgid, u32 qpn, bool add)
{
	u32 n = old ? old->nqp : 0, i, j = 0;
	struct srnic_mcg *g;

	g = kzalloc(struct_size(g, qpn, 2 * (add ? n + 1 : n - 1)),
		    GFP_KERNEL);
	if (!g)
		return NULL;
	memcpy(g->mgid, mgid, 16);
	g->nqp = add ? n + 1 : n - 1;
	for (i = 0; i < n; i++) {
		if (old->qpn[i] == qpn)
			continue;
		g->qpn[j] = old->qpn[i];
		srnic_mcg_refs(g)[j++] = srnic_mcg_refs(old)[i];
	}
	if (add) {
		g->qpn[j] = qpn;
		srnic_mcg_refs(g)[j] = 1;
	}
	return g;
}

int srnic_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct srnic_dev *sdev = to_sdev(ibqp->device);
	struct srnic_qp *qp = to_sqp(ibqp);
	struct srnic_mcg *old, *g;
	u8 mac[ETH_ALEN];
	int err = 0;
	u32 i;

	if (!srnic_qpt_ud(ibqp->qp_type) || !srnic_gid_is_mcast(gid->raw))
		return -EINVAL;
	mutex_lock(&sdev->mcast_lock);
	old = srnic_mcg_find(sdev, gid->raw);
	for (i = 0; old && i < old->nqp; i++)
		if (old->qpn[i] == qp->qpn) {
			srnic_mcg_refs(old)[i]++;	/* attached already */
			goto out;
		}
	if ((!old && sdev->num_mcg >= SRNIC_MAX_MCAST_GRP) ||
	    (old && old->nqp >= SRNIC_MAX_MCAST_QP_ATTACH)) {
		err = -ENOMEM;
		goto out;
	}
	g = srnic_mcg_copy(old, gid->raw, qp->qpn, true);
	if (!g) {
		err = -ENOMEM;
		goto out;
	}
	if (old) {
		list_replace_rcu(&old->list, &g->list);
		kfree_rcu(old, rcu);
	} else {
		srnic_mcast_mac(gid->raw, mac);
		err = dev_mc_add(sdev->ndev, mac);
		if (err) {
			kfree(g);
			goto out;
		}
		list_add_rcu(&g->list, &sdev->mcgs);
		sdev->num_mcg++;
	}
out:
	mutex_unlock(&sdev->mcast_lock);
	return err;
}

/* Takes @qpn out of the group @g (the last QP: the group goes). */
static int srnic_mcg_remove(struct srnic_dev *sdev, struct srnic_mcg *g,
			    u32 qpn)
{
	struct srnic_mcg *n;
	u8 mac[ETH_ALEN];

	if (g->nqp == 1) {
		srnic_mcast_mac(g->mgid, mac);
		dev_mc_del(sdev->ndev, mac);
		list_del_rcu(&g->list);
		sdev->num_mcg--;
	} else {
		n = srnic_mcg_copy(g, g->mgid, qpn, false);
		if (!n)
			return -ENOMEM;
		list_replace_rcu(&g->list, &n->list);
	}
	kfree_rcu(g, rcu);
	return 0;
}

int srnic_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct srnic_dev *sdev = to_sdev(ibqp->device);
	struct srnic_qp *qp = to_sqp(ibqp);
	struct srnic_mcg *g;
	int err = -EINVAL;
	u32 i;

	mutex_lock(&sdev->mcast_lock);
	g = srnic_mcg_find(sdev, gid->raw);
	for (i = 0; g && i < g->nqp; i++)
		if (g->qpn[i] == qp->qpn) {
			if (srnic_mcg_refs(g)[i] > 1) {
				srnic_mcg_refs(g)[i]--;
				err = 0;
			} else {
				err = srnic_mcg_remove(sdev, g, qp->qpn);
			}
			break;
		}
	mutex_unlock(&sdev->mcast_lock);
	return err;
}

/*
 * Every group goes with the device: none is left by then, since the core
 * refuses to destroy an attached QP (EBUSY, its usecnt) and detaches a
 * process's QPs before destroying them at its exit or the device's removal.
 */
void srnic_mcast_cleanup(struct srnic_dev *sdev)
{
	struct srnic_mcg *g, *next;

	list_for_each_entry_safe(g, next, &sdev->mcgs, list) {
		list_del(&g->list);
		kfree(g);
	}
}

/*
 * Delivers the datagram @m to every QP of @sdev attached to its DGID
 * (@skip: the sending QP's number, which never receives its own, or 0).
 * The QPNs are copied out of RCU first: delivery may take an ODP fault's
 * path and does not run under rcu_read_lock.
 */
void srnic_mcast_deliver(struct srnic_engine *eng, struct srnic_dev *sdev,
			 struct srnic_msg *m, u32 skip)
{
	u32 qpn[SRNIC_MAX_MCAST_QP_ATTACH], n = 0, i;
	struct srnic_mcg *g;
	struct srnic_qp *dst;
	enum srnic_resp r;

	rcu_read_lock();
	g = srnic_mcg_find(sdev, m->dgid);
	if (g) {
		n = min_t(u32, g->nqp, SRNIC_MAX_MCAST_QP_ATTACH);
		memcpy(qpn, g->qpn, n * sizeof(qpn[0]));
	}
	rcu_read_unlock();
	for (i = 0; i < n; i++) {
		if (qpn[i] == skip)
			continue;
		dst = srnic_qp_get(sdev, qpn[i]);
		if (!dst)
			continue;
		r = SRNIC_RESP_DROP;
		if (READ_ONCE(dst->attr.qkey) == m->qkey) {
			r = srnic_resp_recv(eng, dst, m, true);
			/* A datagram does not wait for a page: lost. */
			if (r == SRNIC_RESP_FAULT) {
				srnic_odp_fault_async(&eng->remote.fault, true);
				r = SRNIC_RESP_DROP;
			}
		}
		srnic_resp_account(dst, m, r);
		srnic_qp_put(dst);
	}
}
