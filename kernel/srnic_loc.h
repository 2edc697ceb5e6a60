/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/* Prototypes shared between srnic's source files. */
#ifndef SRNIC_LOC_H
#define SRNIC_LOC_H

#include "srnic.h"

/* srnic_verbs.c */
extern const struct ib_device_ops srnic_dev_ops;
void srnic_init_device_attr(struct srnic_dev *sdev, struct ib_device_attr *attr);
enum ib_port_state srnic_netdev_port_state(const struct net_device *ndev);

/* srnic_mmap.c */
struct srnic_mmap_entry *srnic_mmap_insert(struct srnic_ucontext *suc,
					   enum srnic_mmap_type type,
					   struct page *page, bool owns_page,
					   u64 *offset);
int srnic_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma);
void srnic_mmap_free(struct rdma_user_mmap_entry *rdma);

/* srnic_sysfs.c */
extern const struct attribute_group srnic_attr_group;

#endif /* SRNIC_LOC_H */
