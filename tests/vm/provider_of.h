/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/* Which provider libibverbs bound to a device: through its private ABI. */
#ifndef SRNIC_PROVIDER_OF_H
#define SRNIC_PROVIDER_OF_H

#include "srnic_test.h"
#include "verbs_provider.h"

/* The provider libibverbs bound to @dev ("srnic", "rxe", ...), or NULL. */
static inline const char *provider_name(const char *dev, char *out, size_t len)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device *d = find_ibv_device(list, dev);
	const char *ret = NULL;

	if (d) {
		snprintf(out, len, "%s", verbs_get_device(d)->ops->name);
		ret = out;
	}
	ibv_free_device_list(list);
	return ret;
}

/* Whether libibverbs bound @dev to srnic's provider. */
static inline int is_srnic(const char *dev)
{
	char name[32];

	return provider_name(dev, name, sizeof(name)) && !strcmp(name, "srnic");
}

#endif /* SRNIC_PROVIDER_OF_H */
