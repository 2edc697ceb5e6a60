// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The sysfs attribute by which user space recognises an srnic device: the
 * driver id is RDMA_DRIVER_UNKNOWN, shared with other drivers, and the device
 * name is the user's choice, so neither can identify us.
 */
#include <linux/sysfs.h>

#include "srnic_loc.h"

static ssize_t srnic_abi_version_show(struct device *dev,
				      struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", SRNIC_ABI_VERSION);
}
static struct device_attribute dev_attr_srnic_abi_version =
	__ATTR(srnic_abi_version, 0444, srnic_abi_version_show, NULL);

static struct attribute *srnic_attrs[] = {
	&dev_attr_srnic_abi_version.attr,
	NULL,
};

const struct attribute_group srnic_attr_group = {
	.attrs = srnic_attrs,
};
