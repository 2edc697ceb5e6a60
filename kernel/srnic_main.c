// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Module entry points, device creation through "rdma link add", the list of
 * srnic devices, and following the bound netdev (state, removal).
 */
#include <linux/if_arp.h>
#include <linux/if_vlan.h>
#include <linux/etherdevice.h>
#include <net/addrconf.h>
#include <rdma/rdma_netlink.h>

#include "srnic_loc.h"

MODULE_DESCRIPTION("srnic: software RDMA NIC with user-mapped queues and doorbells");
MODULE_LICENSE("Dual BSD/GPL");
MODULE_VERSION(SRNIC_VERSION);
MODULE_ALIAS_RDMA_LINK(SRNIC_LINK_TYPE);

/*
 * The memory regions a device holds.  A smaller table keeps tests that fill
 * it affordable on a debug kernel, where each registration costs milliseconds.
 */
unsigned int srnic_max_mr = SRNIC_MAX_MR;
module_param_named(max_mr, srnic_max_mr, uint, 0444);
MODULE_PARM_DESC(max_mr, "memory regions per device, 1024 to 262144 (default 262144)");

/*
 * Every srnic device from just before ib_register_device() until its
 * dealloc_driver callback.  The RDMA core identifies drivers by driver_id,
 * and ours is RDMA_DRIVER_UNKNOWN, shared with other drivers: this list, not
 * ib_unregister_driver(), is how module unload finds the devices to remove.
 * Lock order: RTNL (netdev notifier) before srnic_devices_lock; the lock is
 * never held across a call into the RDMA core.
 */
static LIST_HEAD(srnic_devices);
static DEFINE_MUTEX(srnic_devices_lock);

static struct srnic_dev *srnic_find_by_netdev_locked(struct net_device *ndev)
{
	struct srnic_dev *sdev;

	lockdep_assert_held(&srnic_devices_lock);
	list_for_each_entry(sdev, &srnic_devices, dev_list)
		if (sdev->ndev == ndev)
			return sdev;
	return NULL;
}

/*
 * Called by the core after unregistration, and by ib_dealloc_device() on
 * every newlink failure path, so it copes with a half-built device.
 */
static void srnic_dealloc_driver(struct ib_device *ibdev)
{
	struct srnic_dev *sdev = to_sdev(ibdev);

	mutex_lock(&srnic_devices_lock);
	list_del_init(&sdev->dev_list);
	mutex_unlock(&srnic_devices_lock);

	srnic_registry_del(sdev);
	/* No packet hook still holds the device: it queues nothing more. */
	synchronize_net();
	/* Its files read the engine threads: gone (readers waited for) first. */
	srnic_debugfs_remove_dev(sdev);
	srnic_engine_stop(sdev);
	srnic_mcast_cleanup(sdev);
	/* Deregistered MRs may still wait for their batch's grace period. */
	srnic_mr_flush_released(sdev);
	WARN_ON(atomic_read(&sdev->num_pd));
	WARN_ON(atomic_read(&sdev->num_ucontext));
	WARN_ON(atomic_read(&sdev->num_ah));
	WARN_ON(!xa_empty(&sdev->qps));
	WARN_ON(!xa_empty(&sdev->cqs));
	WARN_ON(!xa_empty(&sdev->srqs));
	WARN_ON(atomic64_read(&sdev->pinned_pages));
	srnic_mr_table_destroy(sdev);
	xa_destroy(&sdev->qps);
	xa_destroy(&sdev->cqs);
	xa_destroy(&sdev->srqs);
	ida_destroy(&sdev->pd_ida);
	srnic_raw_cleanup(sdev);
	if (sdev->status_page)
		__free_page(sdev->status_page);
	WARN_ON(!xa_empty(&sdev->counters));
	xa_destroy(&sdev->counters);
	free_percpu(sdev->pcnt);
	free_percpu(sdev->cq_events);
}

/*
 * Listed for the packet hook and the loopback once the core has the GID
 * table (registration made it): before that a lookup would find none, and
 * a packet arriving on the netdev meanwhile would crash the hook.
 */
static int srnic_enable_driver(struct ib_device *ibdev)
{
	return srnic_registry_add(to_sdev(ibdev));
}

static const struct ib_device_ops srnic_link_dev_ops = {
	.dealloc_driver = srnic_dealloc_driver,
	.enable_driver = srnic_enable_driver,
};

static int srnic_check_netdev(struct net_device *ndev)
{
	if (ndev->type != ARPHRD_ETHER || ndev->addr_len != ETH_ALEN) {
		pr_err("srnic: %s is not an Ethernet device\n", ndev->name);
		return -EINVAL;
	}
	if (is_vlan_dev(ndev)) {
		/* RoCE GIDs of VLAN uppers come from the real device. */
		pr_err("srnic: %s is a VLAN device; bind the real device\n",
		       ndev->name);
		return -EINVAL;
	}
	if (!netif_running(ndev)) {
		pr_err("srnic: %s is down; bring it up first\n", ndev->name);
		return -ENETDOWN;
	}
	return 0;
}

static int srnic_newlink(const char *ibdev_name, struct net_device *ndev)
{
	struct ib_device *other;
	struct srnic_dev *sdev;
	int err;

	err = srnic_check_netdev(ndev);
	if (err)
		return err;

	/*
	 * Registration would refuse a name in use too, but with ENFILE; say
	 * EEXIST.  (A race with another newlink still ends in ENFILE.)
	 */
	other = ib_device_get_by_name(ibdev_name, RDMA_DRIVER_UNKNOWN);
	if (other) {
		ib_device_put(other);
		pr_err("srnic: an RDMA device named %s exists\n", ibdev_name);
		return -EEXIST;
	}

	sdev = ib_alloc_device(srnic_dev, ibdev);
	if (!sdev)
		return -ENOMEM;
	INIT_LIST_HEAD(&sdev->dev_list);
	ida_init(&sdev->pd_ida);
	sdev->id = U32_MAX;
	xa_init_flags(&sdev->qps, XA_FLAGS_ALLOC);
	mutex_init(&sdev->mcast_lock);
	INIT_LIST_HEAD(&sdev->mcgs);
	xa_init_flags(&sdev->cqs, XA_FLAGS_ALLOC);
	xa_init_flags(&sdev->srqs, XA_FLAGS_ALLOC);
	xa_init_flags(&sdev->counters, XA_FLAGS_ALLOC1);
	mutex_init(&sdev->counter_lock);
	srnic_fault_init(sdev);
	srnic_raw_init(sdev);
	/* From here on, srnic_dealloc_driver() undoes whatever was done. */
	ib_set_device_ops(&sdev->ibdev, &srnic_link_dev_ops);
	/* Leaves a table srnic_mr_table_destroy() accepts, even on failure. */
	err = srnic_mr_table_init(sdev);
	if (err)
		goto err_dealloc;

	sdev->pcnt = alloc_percpu(struct srnic_port_counters);
	sdev->cq_events = alloc_percpu(u64);
	sdev->status_page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!sdev->status_page || !sdev->pcnt || !sdev->cq_events) {
		err = -ENOMEM;
		goto err_dealloc;
	}
	atomic_set(&sdev->num_ucontext, 0);
	atomic_set(&sdev->num_pd, 0);
	atomic_set(&sdev->num_ah, 0);
	atomic64_set(&sdev->pinned_pages, 0);
	sdev->ndev = ndev;
	sdev->port_state = srnic_netdev_port_state(ndev);

	ib_set_device_ops(&sdev->ibdev, &srnic_dev_ops);
	srnic_init_device_attr(sdev, &sdev->attr);
	sdev->ibdev.node_type = RDMA_NODE_IB_CA;
	sdev->ibdev.phys_port_cnt = 1;
	sdev->ibdev.local_dma_lkey = SRNIC_LOCAL_DMA_LKEY;
	srnic_dma_mr_init(sdev);
	sdev->ibdev.node_guid = sdev->attr.sys_image_guid;
	strscpy(sdev->ibdev.node_desc, "srnic", sizeof(sdev->ibdev.node_desc));
	/* The zero-WR post_send is the doorbell wake-up call (srnic_engine.c). */
	sdev->ibdev.uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND);

	err = ib_device_set_netdev(&sdev->ibdev, ndev, SRNIC_PORT);
	if (err)
		goto err_dealloc;

	/*
	 * Listed before registering: a "rdma link del" may unregister the
	 * device, and run dealloc_driver, as soon as registration succeeds.
	 * Only one srnic device per netdev, as the GID table is the netdev's.
	 */
	mutex_lock(&srnic_devices_lock);
	if (srnic_find_by_netdev_locked(ndev)) {
		mutex_unlock(&srnic_devices_lock);
		pr_err("srnic: %s already has an srnic device\n", ndev->name);
		err = -EEXIST;
		goto err_dealloc;
	}
	list_add_tail(&sdev->dev_list, &srnic_devices);
	mutex_unlock(&srnic_devices_lock);

	/* Before registering, so that an early unregistration removes them. */
	srnic_debugfs_add_dev(sdev, ibdev_name);
	srnic_raw_debugfs(sdev);
	err = srnic_engine_start(sdev, ibdev_name);
	if (err)
		goto err_dealloc;
	/* One per CPU, as rxe and siw: a CQ's vector is the CPU of its events. */
	sdev->ibdev.num_comp_vectors = num_possible_cpus();

	/*
	 * Parented as a hardware RNIC is, by the netdev's own parent (a PCI
	 * or virtio NIC; a veth has none): tools that look for a device's
	 * netdev under /sys/class/infiniband/<dev>/device/net/ find it.
	 */
	sdev->ibdev.dev.parent = ndev->dev.parent;
	err = ib_register_device(&sdev->ibdev, ibdev_name, NULL);
	if (err) {
		pr_err("srnic: registering %s on %s failed: %d\n", ibdev_name,
		       ndev->name, err);
		goto err_dealloc;
	}
	/* What a user of the device needs next, where README sends them. */
	srnic_info(sdev, "created on %s; verbs programs find it through the srnic provider of libibverbs (make install, or RDMAV_DRIVERS=<tree>/build/cmake/libsrnic)\n",
		   ndev->name);
	return 0;

err_dealloc:
	ib_dealloc_device(&sdev->ibdev);
	return err;
}

static struct rdma_link_ops srnic_link_ops = {
	.type = SRNIC_LINK_TYPE,
	.newlink = srnic_newlink,
};

static void srnic_port_event(struct srnic_dev *sdev)
{
	enum ib_port_state state = srnic_netdev_port_state(sdev->ndev);
	struct ib_event ev = {
		.device = &sdev->ibdev,
		.element.port_num = SRNIC_PORT,
	};

	ASSERT_RTNL();
	if (state == sdev->port_state)
		return;
	sdev->port_state = state;
	ev.event = state == IB_PORT_ACTIVE ? IB_EVENT_PORT_ACTIVE :
					     IB_EVENT_PORT_ERR;
	if (state != IB_PORT_ACTIVE)
		srnic_count(sdev, SRNIC_PC_LINK_DOWNED);
	ib_dispatch_event(&ev);
	srnic_dbg(sdev, "port %s\n", state == IB_PORT_ACTIVE ? "active" : "down");
}

static int srnic_netdev_event(struct notifier_block *nb, unsigned long event,
			      void *ptr)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(ptr);
	struct srnic_dev *sdev;

	mutex_lock(&srnic_devices_lock);
	sdev = srnic_find_by_netdev_locked(ndev);
	if (!sdev)
		goto out;

	switch (event) {
	case NETDEV_UNREGISTER:
		/* Not under RTNL: unregistration takes it. */
		ib_unregister_device_queued(&sdev->ibdev);
		break;
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
		srnic_port_event(sdev);
		break;
	default:
		break;
	}
out:
	mutex_unlock(&srnic_devices_lock);
	return NOTIFY_OK;
}

static struct notifier_block srnic_netdev_notifier = {
	.notifier_call = srnic_netdev_event,
};

static int __init srnic_init(void)
{
	int err;

	srnic_max_mr = clamp_t(unsigned int, srnic_max_mr, 1024, SRNIC_MAX_MR);
	err = srnic_odp_init();
	if (err)
		return err;
	srnic_debugfs_init();
	err = srnic_net_init();
	if (err)
		goto err_debugfs;
	err = register_netdevice_notifier(&srnic_netdev_notifier);
	if (err)
		goto err_net;
	rdma_link_register(&srnic_link_ops);
	return 0;

err_net:
	srnic_net_cleanup();
err_debugfs:
	srnic_debugfs_cleanup();
	srnic_odp_cleanup();
	return err;
}

/*
 * Remove every device, including any that are being removed concurrently by
 * "rdma link del" or by their netdev going away: ib_unregister_device()
 * returns only once the device's unregistration, by whichever caller, has
 * finished, and dealloc_driver has then taken it off the list.
 */
static void srnic_remove_all(void)
{
	struct srnic_dev *sdev;

	for (;;) {
		mutex_lock(&srnic_devices_lock);
		sdev = list_first_entry_or_null(&srnic_devices,
						struct srnic_dev, dev_list);
		if (sdev)
			get_device(&sdev->ibdev.dev);
		mutex_unlock(&srnic_devices_lock);
		if (!sdev)
			break;
		ib_unregister_device(&sdev->ibdev);
		put_device(&sdev->ibdev.dev);
	}
}

static void __exit srnic_exit(void)
{
	/* No newlink runs or starts after this returns. */
	rdma_link_unregister(&srnic_link_ops);
	srnic_remove_all();
	unregister_netdevice_notifier(&srnic_netdev_notifier);
	srnic_net_cleanup();
	srnic_zc_cleanup();
	srnic_debugfs_cleanup();
	srnic_odp_cleanup();
}

/* After the RDMA core and the network stack are up when built in. */
late_initcall(srnic_init);
module_exit(srnic_exit);
