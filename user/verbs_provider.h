/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * verbs_provider.h - the libibverbs provider ABI, as srnic's provider uses it
 *
 * A provider plugin (lib<name>-rdmav34.so) is loaded by libibverbs and calls
 * back into it through a private interface: the symbols of version
 * IBVERBS_PRIVATE_34 and a handful of structures whose layout both sides must
 * agree on.  rdma-core keeps that interface in internal headers that
 * distributions do not install, so this file is our own declaration of the
 * subset we need, for rdma-core v44 (Debian 12, libibverbs 1.14.44) on x86-64.
 *
 * Nothing here is checked by the linker except symbol names and versions,
 * so every structure that crosses the boundary is pinned below with
 * static_assert on its size and on the offset of every field we touch.
 * If libibverbs is upgraded the build must stop here rather than produce a
 * provider that corrupts memory at run time.
 *
 * The public headers <infiniband/verbs.h> and <rdma/ib_user_verbs.h> supply
 * the object types (ibv_pd, ibv_qp_ex, verbs_context, ...) and the kernel's
 * uverbs command payloads; this file adds only what they lack.
 */
#ifndef SRNIC_USER_VERBS_PROVIDER_H
#define SRNIC_USER_VERBS_PROVIDER_H

#if defined(__cplusplus)
#error "verbs_provider.h is C11 only (<stdatomic.h>, _Static_assert, GNU C layouts); C++ tests must not include it"
#endif

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

/*
 * ---------------------------------------------------------------------------
 * Version guard
 * ---------------------------------------------------------------------------
 *
 * The private ABI number is part of the symbol name verbs_register_driver_34
 * and of the plugin file name.  The build system detects which number the
 * installed libibverbs exports and passes it in SRNIC_IBVERBS_PABI_VERSION;
 * anything but 34 means this file describes the wrong library.
 *
 * The public header carries no preprocessor-visible version, so the second
 * line of defence is the static_asserts further down on public structures
 * that our private ones embed (ibv_qp_ex grew in v44 and again in v45).
 */
#define VERBS_PROVIDER_PABI_VERSION	34
#define VERBS_PROVIDER_PLUGIN_SUFFIX	"-rdmav34.so"

#if !defined(__x86_64__) || !defined(__LP64__)
#error "verbs_provider.h pins rdma-core v44 layouts for x86-64 only; re-derive and re-check them before building for another ABI"
#endif

#if defined(SRNIC_IBVERBS_PABI_VERSION) && \
	SRNIC_IBVERBS_PABI_VERSION != VERBS_PROVIDER_PABI_VERSION
#error "installed libibverbs exports a private provider ABI other than IBVERBS_PRIVATE_34; verbs_provider.h declares rdma-core v44 (PABI 34) and must be updated"
#endif

/* The installed verbs.h must be v44's: v43 lacks this member, v45 grows the struct. */
static_assert(offsetof(struct ibv_qp_ex, wr_atomic_write) == 344,
	      "<infiniband/verbs.h> is not rdma-core v44 (ibv_qp_ex.wr_atomic_write)");
static_assert(sizeof(struct ibv_qp_ex) == 352,
	      "<infiniband/verbs.h> is not rdma-core v44 (sizeof ibv_qp_ex); verbs_qp would be misplaced");
static_assert(sizeof(struct ibv_cq_ex) == 288,
	      "<infiniband/verbs.h> is not rdma-core v44 (sizeof ibv_cq_ex)");
static_assert(sizeof(struct ibv_device) == 664,
	      "<infiniband/verbs.h> is not rdma-core v44 (sizeof ibv_device)");
static_assert(sizeof(struct verbs_context) == 648,
	      "<infiniband/verbs.h> is not rdma-core v44 (sizeof verbs_context)");
static_assert(sizeof(struct ibv_mr) == 48 && sizeof(struct ibv_srq) == 128 &&
	      sizeof(struct ibv_xrcd) == 8 && sizeof(struct ibv_dm) == 32 &&
	      sizeof(struct ibv_flow_action) == 8,
	      "<infiniband/verbs.h> is not rdma-core v44 (object sizes)");
static_assert(IBV_SYSFS_NAME_MAX == 64 && IBV_SYSFS_PATH_MAX == 256,
	      "<infiniband/verbs.h> sysfs name limits changed");
static_assert(sizeof(atomic_int) == 4 && sizeof(dev_t) == 8 &&
	      sizeof(struct timespec) == 16,
	      "unexpected C library type sizes");

/* Shorthand for the pins below. */
#define VP_SIZE(type, bytes) \
	static_assert(sizeof(type) == (bytes), "v44 size of " #type)
#define VP_AT(type, member, off) \
	static_assert(offsetof(type, member) == (off), \
		      "v44 offset of " #type "." #member)

/*
 * ---------------------------------------------------------------------------
 * Logging (__verbs_log is exported; the macros are our own)
 * ---------------------------------------------------------------------------
 *
 * libibverbs filters by VERBS_LOG_LEVEL and writes to VERBS_LOG_FILE.
 */
enum {
	VERBS_LOG_LEVEL_NONE	= 0,
	VERBS_LOG_ERR		= 1,
	VERBS_LOG_WARN		= 2,
	VERBS_LOG_INFO		= 3,
	VERBS_LOG_DEBUG		= 4,
};

void __verbs_log(struct verbs_context *ctx, uint32_t level,
		 const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * Prefix every message with device, function and line, and never clobber
 * the errno a verb is about to return.  Formatting happens before the
 * library's level filter, so keep these off the data path.  Messages are
 * single lines without a trailing newline; one is added here.
 */
static inline void __attribute__((format(printf, 5, 6)))
verbs_log_at_(struct verbs_context *vctx, uint32_t level, const char *func,
	      int line, const char *fmt, ...)
{
	int saved_errno = errno;
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	__verbs_log(vctx, level, "%s: %s:%d: %s\n",
		    vctx->context.device->name, func, line, msg);
	errno = saved_errno;
}
#define verbs_log(vctx, level, ...) \
	verbs_log_at_((vctx), (level), __func__, __LINE__, __VA_ARGS__)
#define verbs_err(vctx, ...)	verbs_log(vctx, VERBS_LOG_ERR, __VA_ARGS__)
#define verbs_warn(vctx, ...)	verbs_log(vctx, VERBS_LOG_WARN, __VA_ARGS__)
#define verbs_info(vctx, ...)	verbs_log(vctx, VERBS_LOG_INFO, __VA_ARGS__)
#define verbs_debug(vctx, ...)	verbs_log(vctx, VERBS_LOG_DEBUG, __VA_ARGS__)

/*
 * ---------------------------------------------------------------------------
 * Private object wrappers
 * ---------------------------------------------------------------------------
 *
 * These are not in verbs.h but libibverbs reads and writes their extra
 * fields (the ibv_cmd_* helpers fill them in; ibv_rereg_mr, ibv_dereg_mr
 * and ibv_qp_to_qp_ex read them), so a provider object must embed the wrapper, not the bare
 * public object.  verbs_context, ibv_cq_ex, ibv_qp_ex and ibv_mw are public.
 */

enum verbs_xrcd_mask {
	VERBS_XRCD_HANDLE	= 1 << 0,
	VERBS_XRCD_RESERVED	= 1 << 1,
};

struct verbs_xrcd {
	struct ibv_xrcd		xrcd;
	uint32_t		comp_mask;	/* enum verbs_xrcd_mask */
	uint32_t		handle;
};
VP_SIZE(struct verbs_xrcd, 16);
VP_AT(struct verbs_xrcd, comp_mask, 8);
VP_AT(struct verbs_xrcd, handle, 12);

struct verbs_srq {
	struct ibv_srq		srq;
	enum ibv_srq_type	srq_type;
	struct verbs_xrcd	*xrcd;
	struct ibv_cq		*cq;
	uint32_t		srq_num;
};
VP_SIZE(struct verbs_srq, 160);
VP_AT(struct verbs_srq, srq, 0);
VP_AT(struct verbs_srq, srq_type, 128);
VP_AT(struct verbs_srq, xrcd, 136);
VP_AT(struct verbs_srq, cq, 144);
VP_AT(struct verbs_srq, srq_num, 152);

/* How an MR came to be; the core dereg path branches on it. */
enum ibv_mr_type {
	IBV_MR_TYPE_MR		= 0,
	IBV_MR_TYPE_NULL_MR	= 1,
	IBV_MR_TYPE_IMPORTED_MR	= 2,
	IBV_MR_TYPE_DMABUF_MR	= 3,
};

struct verbs_mr {
	struct ibv_mr		ibv_mr;
	enum ibv_mr_type	mr_type;
	int			access;
};
VP_SIZE(struct verbs_mr, 56);
VP_AT(struct verbs_mr, ibv_mr, 0);
VP_AT(struct verbs_mr, mr_type, 48);
VP_AT(struct verbs_mr, access, 52);

static inline struct verbs_mr *verbs_get_mr(struct ibv_mr *mr)
{
	return (struct verbs_mr *)((uintptr_t)mr - offsetof(struct verbs_mr, ibv_mr));
}

enum verbs_qp_mask {
	VERBS_QP_XRCD	= 1 << 0,
	VERBS_QP_EX	= 1 << 1,
};

/*
 * comp_mask sits right after the union, so its offset follows the size of
 * the public ibv_qp_ex (352 in v44, larger from v45).  The pins below and the
 * ibv_qp_ex check at the top keep it at v44's place.  ibv_qp_to_qp_ex()
 * returns NULL unless the provider sets VERBS_QP_EX here itself after
 * creating a QP that supports the wr_* send API.
 */
struct verbs_qp {
	union {
		struct ibv_qp		qp;
		struct ibv_qp_ex	qp_ex;
	};
	uint32_t		comp_mask;	/* enum verbs_qp_mask */
	struct verbs_xrcd	*xrcd;
};
VP_SIZE(struct verbs_qp, 368);
VP_AT(struct verbs_qp, qp, 0);
VP_AT(struct verbs_qp, qp_ex, 0);
VP_AT(struct verbs_qp, comp_mask, 352);
VP_AT(struct verbs_qp, xrcd, 360);
VP_AT(struct ibv_qp_ex, qp_base, 0);

struct verbs_cq {
	union {
		struct ibv_cq		cq;
		struct ibv_cq_ex	cq_ex;
	};
};
VP_SIZE(struct verbs_cq, 288);
VP_AT(struct verbs_cq, cq, 0);
VP_AT(struct verbs_cq, cq_ex, 0);

enum ibv_flow_action_type {
	IBV_FLOW_ACTION_UNSPECIFIED	= 0,
	IBV_FLOW_ACTION_ESP		= 1,
};

struct verbs_flow_action {
	struct ibv_flow_action		action;
	uint32_t			handle;
	enum ibv_flow_action_type	type;
};
VP_SIZE(struct verbs_flow_action, 16);
VP_AT(struct verbs_flow_action, handle, 8);
VP_AT(struct verbs_flow_action, type, 12);

struct verbs_dm {
	struct ibv_dm		dm;
	uint32_t		handle;
};
VP_SIZE(struct verbs_dm, 40);
VP_AT(struct verbs_dm, handle, 32);

/* GID type as reported by the ports/N/gid_attrs/types sysfs file. */
enum ibv_gid_type_sysfs {
	IBV_GID_TYPE_SYSFS_IB_ROCE_V1	= 0,
	IBV_GID_TYPE_SYSFS_ROCE_V2	= 1,
};

/* cmd_flags of ibv_cmd_create_cq_ex() */
enum create_cq_cmd_flags {
	CREATE_CQ_CMD_FLAGS_TS_IGNORED_EX = 1 << 0,
};

/*
 * ---------------------------------------------------------------------------
 * Device discovery: match table, sysfs record, device ops, device
 * ---------------------------------------------------------------------------
 */

/* Kinds of match-table entry; a zero kind ends the table. */
enum {
	VERBS_MATCH_SENTINEL	= 0,
	VERBS_MATCH_PCI		= 1,
	VERBS_MATCH_MODALIAS	= 2,	/* fnmatch() pattern on device/modalias */
	VERBS_MATCH_DRIVER_ID	= 3,	/* enum rdma_driver_id from netlink */
};

struct verbs_match_ent {
	void			*driver_data;
	union {
		const char	*modalias;
		uint64_t	driver_id;
	} u;
	uint16_t		vendor;
	uint16_t		device;
	uint8_t			kind;
};
VP_SIZE(struct verbs_match_ent, 24);
VP_AT(struct verbs_match_ent, driver_data, 0);
VP_AT(struct verbs_match_ent, u.modalias, 8);
VP_AT(struct verbs_match_ent, u.driver_id, 8);
VP_AT(struct verbs_match_ent, vendor, 16);
VP_AT(struct verbs_match_ent, device, 18);
VP_AT(struct verbs_match_ent, kind, 20);

#define VERBS_DRIVER_ID(id) \
	{ .u.driver_id = (id), .kind = VERBS_MATCH_DRIVER_ID }
#define VERBS_MODALIAS_MATCH(pattern, data) \
	{ .driver_data = (void *)(data), .u.modalias = (pattern), \
	  .kind = VERBS_MATCH_MODALIAS }
/*
 * Every table must end with this, and a provider must supply a table even if
 * it matches only through match_device: libibverbs walks match_table without
 * a NULL check whenever a device reports a known driver id.
 */
#define VERBS_MATCH_END \
	{ .kind = VERBS_MATCH_SENTINEL }

/* Two-pointer list link owned by libibverbs (ccan list layout). */
struct verbs_list_node {
	struct verbs_list_node	*next;
	struct verbs_list_node	*prev;
};

/* Bits of verbs_sysfs_dev.flags: which lazily-read fields are valid. */
enum {
	VSYSFS_READ_MODALIAS	= 1 << 0,
	VSYSFS_READ_NODE_GUID	= 1 << 1,
};

/*
 * One uverbs device found by libibverbs (netlink first, sysfs as fallback),
 * handed to match_device and alloc_device.  Read-only for providers except
 * provider_data.  ibdev_path is "<sysfs>/class/infiniband/<ibdev_name>", the
 * base for ibv_read_ibdev_sysfs_file().
 */
struct verbs_sysfs_dev {
	struct verbs_list_node		entry;
	void				*provider_data;
	const struct verbs_match_ent	*match;		/* table hit or NULL */
	unsigned int			flags;
	char				sysfs_name[IBV_SYSFS_NAME_MAX];	/* uverbsN */
	dev_t				sysfs_cdev;
	char				ibdev_name[IBV_SYSFS_NAME_MAX];
	char				ibdev_path[IBV_SYSFS_PATH_MAX];
	char				modalias[512];
	uint64_t			node_guid;
	uint32_t			driver_id;	/* RDMA_DRIVER_* */
	enum ibv_node_type		node_type;
	int				ibdev_idx;	/* -1 if found via sysfs */
	uint32_t			num_ports;
	uint32_t			abi_ver;	/* kernel ops.uverbs_abi_ver */
	struct timespec			time_created;
};
VP_SIZE(struct verbs_sysfs_dev, 992);
VP_AT(struct verbs_sysfs_dev, entry, 0);
VP_AT(struct verbs_sysfs_dev, provider_data, 16);
VP_AT(struct verbs_sysfs_dev, match, 24);
VP_AT(struct verbs_sysfs_dev, flags, 32);
VP_AT(struct verbs_sysfs_dev, sysfs_name, 36);
VP_AT(struct verbs_sysfs_dev, sysfs_cdev, 104);
VP_AT(struct verbs_sysfs_dev, ibdev_name, 112);
VP_AT(struct verbs_sysfs_dev, ibdev_path, 176);
VP_AT(struct verbs_sysfs_dev, modalias, 432);
VP_AT(struct verbs_sysfs_dev, node_guid, 944);
VP_AT(struct verbs_sysfs_dev, driver_id, 952);
VP_AT(struct verbs_sysfs_dev, node_type, 956);
VP_AT(struct verbs_sysfs_dev, ibdev_idx, 960);
VP_AT(struct verbs_sysfs_dev, num_ports, 964);
VP_AT(struct verbs_sysfs_dev, abi_ver, 968);
VP_AT(struct verbs_sysfs_dev, time_created, 976);

struct verbs_device;

/*
 * What a provider registers.  libibverbs keeps the pointer for the life of
 * the process, so the instance must have static storage duration.
 */
struct verbs_device_ops {
	const char			*name;
	/* sysfs_dev->abi_ver must lie in [min, max] or the device is refused */
	uint32_t			match_min_abi_version;
	uint32_t			match_max_abi_version;
	const struct verbs_match_ent	*match_table;
	const struct verbs_device_ops	**static_providers;	/* NULL for plugins */

	/* Optional; when set it has the final word on every device offered. */
	bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);

	struct verbs_context *(*alloc_context)(struct ibv_device *device,
					       int cmd_fd, void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device,
						int cmd_fd);

	struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct verbs_device *device);
};
VP_SIZE(struct verbs_device_ops, 72);
VP_AT(struct verbs_device_ops, name, 0);
VP_AT(struct verbs_device_ops, match_min_abi_version, 8);
VP_AT(struct verbs_device_ops, match_max_abi_version, 12);
VP_AT(struct verbs_device_ops, match_table, 16);
VP_AT(struct verbs_device_ops, static_providers, 24);
VP_AT(struct verbs_device_ops, match_device, 32);
VP_AT(struct verbs_device_ops, alloc_context, 40);
VP_AT(struct verbs_device_ops, import_context, 48);
VP_AT(struct verbs_device_ops, alloc_device, 56);
VP_AT(struct verbs_device_ops, uninit_device, 64);

/*
 * alloc_device returns a zeroed allocation that starts with this; libibverbs
 * then fills ops, refcount, names and sysfs itself, and calls uninit_device
 * when the last reference goes (after freeing sysfs).
 */
struct verbs_device {
	struct ibv_device		device;		/* must stay first */
	const struct verbs_device_ops	*ops;
	atomic_int			refcount;
	struct verbs_list_node		entry;
	struct verbs_sysfs_dev		*sysfs;
	uint64_t			core_support;
};
VP_SIZE(struct verbs_device, 712);
VP_AT(struct verbs_device, device, 0);
VP_AT(struct verbs_device, ops, 664);
VP_AT(struct verbs_device, refcount, 672);
VP_AT(struct verbs_device, entry, 680);
VP_AT(struct verbs_device, sysfs, 696);
VP_AT(struct verbs_device, core_support, 704);

static inline struct verbs_device *verbs_get_device(const struct ibv_device *dev)
{
	return (struct verbs_device *)((uintptr_t)dev -
				       offsetof(struct verbs_device, device));
}

/*
 * ---------------------------------------------------------------------------
 * Context operations
 * ---------------------------------------------------------------------------
 *
 * The full v44 table, alphabetical as upstream keeps it.  verbs_set_ops()
 * copies the non-NULL entries into the context; NULL entries keep the
 * library's stubs, which fail with EOPNOTSUPP.
 */
struct verbs_context_ops {
	int (*advise_mr)(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			 uint32_t flags, struct ibv_sge *sg_list,
			 uint32_t num_sges);
	struct ibv_dm *(*alloc_dm)(struct ibv_context *context,
				   struct ibv_alloc_dm_attr *attr);
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
	struct ibv_mr *(*alloc_null_mr)(struct ibv_pd *pd);
	struct ibv_pd *(*alloc_parent_domain)(struct ibv_context *context,
					      struct ibv_parent_domain_init_attr *attr);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	struct ibv_td *(*alloc_td)(struct ibv_context *context,
				   struct ibv_td_init_attr *init_attr);
	void (*async_event)(struct ibv_context *context,
			    struct ibv_async_event *event);
	int (*attach_counters_point_flow)(struct ibv_counters *counters,
					  struct ibv_counter_attach_attr *attr,
					  struct ibv_flow *flow);
	int (*attach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw,
		       struct ibv_mw_bind *mw_bind);
	int (*close_xrcd)(struct ibv_xrcd *xrcd);
	void (*cq_event)(struct ibv_cq *cq);
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd, struct ibv_ah_attr *attr);
	struct ibv_counters *(*create_counters)(struct ibv_context *context,
						struct ibv_counters_init_attr *init_attr);
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
				    struct ibv_comp_channel *channel,
				    int comp_vector);
	struct ibv_cq_ex *(*create_cq_ex)(struct ibv_context *context,
					  struct ibv_cq_init_attr_ex *init_attr);
	struct ibv_flow *(*create_flow)(struct ibv_qp *qp,
					struct ibv_flow_attr *flow_attr);
	struct ibv_flow_action *(*create_flow_action_esp)(struct ibv_context *context,
							  struct ibv_flow_action_esp_attr *attr);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
				    struct ibv_qp_init_attr *attr);
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *context,
				       struct ibv_qp_init_attr_ex *qp_init_attr_ex);
	struct ibv_rwq_ind_table *(*create_rwq_ind_table)(struct ibv_context *context,
							  struct ibv_rwq_ind_table_init_attr *init_attr);
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd,
				      struct ibv_srq_init_attr *srq_init_attr);
	struct ibv_srq *(*create_srq_ex)(struct ibv_context *context,
					 struct ibv_srq_init_attr_ex *srq_init_attr_ex);
	struct ibv_wq *(*create_wq)(struct ibv_context *context,
				    struct ibv_wq_init_attr *wq_init_attr);
	int (*dealloc_mw)(struct ibv_mw *mw);
	int (*dealloc_pd)(struct ibv_pd *pd);
	int (*dealloc_td)(struct ibv_td *td);
	int (*dereg_mr)(struct verbs_mr *vmr);
	int (*destroy_ah)(struct ibv_ah *ah);
	int (*destroy_counters)(struct ibv_counters *counters);
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*destroy_flow)(struct ibv_flow *flow);
	int (*destroy_flow_action)(struct ibv_flow_action *action);
	int (*destroy_qp)(struct ibv_qp *qp);
	int (*destroy_rwq_ind_table)(struct ibv_rwq_ind_table *rwq_ind_table);
	int (*destroy_srq)(struct ibv_srq *srq);
	int (*destroy_wq)(struct ibv_wq *wq);
	int (*detach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	void (*free_context)(struct ibv_context *context);
	int (*free_dm)(struct ibv_dm *dm);
	int (*get_srq_num)(struct ibv_srq *srq, uint32_t *srq_num);
	struct ibv_dm *(*import_dm)(struct ibv_context *context,
				    uint32_t dm_handle);
	struct ibv_mr *(*import_mr)(struct ibv_pd *pd, uint32_t mr_handle);
	struct ibv_pd *(*import_pd)(struct ibv_context *context,
				    uint32_t pd_handle);
	int (*modify_cq)(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr);
	int (*modify_flow_action_esp)(struct ibv_flow_action *action,
				      struct ibv_flow_action_esp_attr *attr);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask);
	int (*modify_qp_rate_limit)(struct ibv_qp *qp,
				    struct ibv_qp_rate_limit_attr *attr);
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
			  int srq_attr_mask);
	int (*modify_wq)(struct ibv_wq *wq, struct ibv_wq_attr *wq_attr);
	struct ibv_qp *(*open_qp)(struct ibv_context *context,
				  struct ibv_qp_open_attr *attr);
	struct ibv_xrcd *(*open_xrcd)(struct ibv_context *context,
				      struct ibv_xrcd_init_attr *xrcd_init_attr);
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	int (*post_srq_ops)(struct ibv_srq *srq, struct ibv_ops_wr *op,
			    struct ibv_ops_wr **bad_op);
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *recv_wr,
			     struct ibv_recv_wr **bad_recv_wr);
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr,
			       size_t attr_size);
	int (*query_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			int attr_mask, struct ibv_qp_init_attr *init_attr);
	int (*query_qp_data_in_order)(struct ibv_qp *qp, enum ibv_wr_opcode op,
				      uint32_t flags);
	int (*query_rt_values)(struct ibv_context *context,
			       struct ibv_values_ex *values);
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr);
	int (*read_counters)(struct ibv_counters *counters,
			     uint64_t *counters_value, uint32_t ncounters,
			     uint32_t flags);
	struct ibv_mr *(*reg_dm_mr)(struct ibv_pd *pd, struct ibv_dm *dm,
				    uint64_t dm_offset, size_t length,
				    unsigned int access);
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset,
					size_t length, uint64_t iova, int fd,
					int access);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*rereg_mr)(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			void *addr, size_t length, int access);
	int (*resize_cq)(struct ibv_cq *cq, int cqe);
	int (*set_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	void (*unimport_dm)(struct ibv_dm *dm);
	void (*unimport_mr)(struct ibv_mr *mr);
	void (*unimport_pd)(struct ibv_pd *pd);
};
VP_SIZE(struct verbs_context_ops, 76 * 8);
/* Pin every slot: a single missing or swapped entry shifts all that follow. */
#define VP_OP(member, slot) VP_AT(struct verbs_context_ops, member, (slot) * 8)
VP_OP(advise_mr, 0);			VP_OP(alloc_dm, 1);
VP_OP(alloc_mw, 2);			VP_OP(alloc_null_mr, 3);
VP_OP(alloc_parent_domain, 4);		VP_OP(alloc_pd, 5);
VP_OP(alloc_td, 6);			VP_OP(async_event, 7);
VP_OP(attach_counters_point_flow, 8);	VP_OP(attach_mcast, 9);
VP_OP(bind_mw, 10);			VP_OP(close_xrcd, 11);
VP_OP(cq_event, 12);			VP_OP(create_ah, 13);
VP_OP(create_counters, 14);		VP_OP(create_cq, 15);
VP_OP(create_cq_ex, 16);		VP_OP(create_flow, 17);
VP_OP(create_flow_action_esp, 18);	VP_OP(create_qp, 19);
VP_OP(create_qp_ex, 20);		VP_OP(create_rwq_ind_table, 21);
VP_OP(create_srq, 22);			VP_OP(create_srq_ex, 23);
VP_OP(create_wq, 24);			VP_OP(dealloc_mw, 25);
VP_OP(dealloc_pd, 26);			VP_OP(dealloc_td, 27);
VP_OP(dereg_mr, 28);			VP_OP(destroy_ah, 29);
VP_OP(destroy_counters, 30);		VP_OP(destroy_cq, 31);
VP_OP(destroy_flow, 32);		VP_OP(destroy_flow_action, 33);
VP_OP(destroy_qp, 34);			VP_OP(destroy_rwq_ind_table, 35);
VP_OP(destroy_srq, 36);			VP_OP(destroy_wq, 37);
VP_OP(detach_mcast, 38);		VP_OP(free_context, 39);
VP_OP(free_dm, 40);			VP_OP(get_srq_num, 41);
VP_OP(import_dm, 42);			VP_OP(import_mr, 43);
VP_OP(import_pd, 44);			VP_OP(modify_cq, 45);
VP_OP(modify_flow_action_esp, 46);	VP_OP(modify_qp, 47);
VP_OP(modify_qp_rate_limit, 48);	VP_OP(modify_srq, 49);
VP_OP(modify_wq, 50);			VP_OP(open_qp, 51);
VP_OP(open_xrcd, 52);			VP_OP(poll_cq, 53);
VP_OP(post_recv, 54);			VP_OP(post_send, 55);
VP_OP(post_srq_ops, 56);		VP_OP(post_srq_recv, 57);
VP_OP(query_device_ex, 58);		VP_OP(query_ece, 59);
VP_OP(query_port, 60);			VP_OP(query_qp, 61);
VP_OP(query_qp_data_in_order, 62);	VP_OP(query_rt_values, 63);
VP_OP(query_srq, 64);			VP_OP(read_counters, 65);
VP_OP(reg_dm_mr, 66);			VP_OP(reg_dmabuf_mr, 67);
VP_OP(reg_mr, 68);			VP_OP(req_notify_cq, 69);
VP_OP(rereg_mr, 70);			VP_OP(resize_cq, 71);
VP_OP(set_ece, 72);			VP_OP(unimport_dm, 73);
VP_OP(unimport_mr, 74);			VP_OP(unimport_pd, 75);
#undef VP_OP

/*
 * ---------------------------------------------------------------------------
 * uverbs command buffers
 * ---------------------------------------------------------------------------
 *
 * The ibv_cmd_* helpers take a buffer laid out as the write() ABI: a command
 * header, the kernel's core payload (from <rdma/ib_user_verbs.h>), then any
 * driver-private request bytes.  The helpers fill the header and core payload
 * themselves; cmd_size tells them where the driver bytes end.  Responses are
 * the kernel's ib_uverbs_*_resp followed by driver-private response bytes.
 * Extended commands use the longer header below and must stay 8-byte sized.
 */
struct verbs_ex_hdr {
	struct ib_uverbs_cmd_hdr	hdr;
	struct ib_uverbs_ex_cmd_hdr	ex_hdr;
};
VP_SIZE(struct verbs_ex_hdr, 24);

/*
 * The kernel payloads end in flexible arrays (the driver data), so nesting
 * them is a GNU extension that -Wpedantic reports; the layout is what the
 * ABI wants, hence the local suppression.
 */
#if defined(__clang__)
#define VP_PEDANTIC_OFF_						\
	_Pragma("GCC diagnostic push")					\
	_Pragma("GCC diagnostic ignored \"-Wpedantic\"")			\
	_Pragma("GCC diagnostic ignored \"-Wgnu-variable-sized-type-not-at-end\"")
#else
#define VP_PEDANTIC_OFF_						\
	_Pragma("GCC diagnostic push")					\
	_Pragma("GCC diagnostic ignored \"-Wpedantic\"")
#endif
#define VP_PEDANTIC_ON_ _Pragma("GCC diagnostic pop")

#define VERBS_CORE_CMD(name, payload)				\
	VP_PEDANTIC_OFF_					\
	struct name {						\
		struct ib_uverbs_cmd_hdr	hdr;		\
		struct payload			core_payload;	\
	};							\
	VP_PEDANTIC_ON_
#define VERBS_CORE_CMD_EX(name, payload)			\
	VP_PEDANTIC_OFF_					\
	struct name {						\
		struct verbs_ex_hdr		hdr;		\
		struct payload			core_payload;	\
	};							\
	VP_PEDANTIC_ON_

VERBS_CORE_CMD(ibv_get_context, ib_uverbs_get_context)
VERBS_CORE_CMD(ibv_query_port, ib_uverbs_query_port)
VERBS_CORE_CMD(ibv_alloc_pd, ib_uverbs_alloc_pd)
VERBS_CORE_CMD(ibv_reg_mr, ib_uverbs_reg_mr)
VERBS_CORE_CMD(ibv_rereg_mr, ib_uverbs_rereg_mr)
VERBS_CORE_CMD(ibv_alloc_mw, ib_uverbs_alloc_mw)
VERBS_CORE_CMD(ibv_create_cq, ib_uverbs_create_cq)
VERBS_CORE_CMD(ibv_resize_cq, ib_uverbs_resize_cq)
VERBS_CORE_CMD(ibv_create_qp, ib_uverbs_create_qp)
VERBS_CORE_CMD(ibv_open_qp, ib_uverbs_open_qp)
VERBS_CORE_CMD(ibv_modify_qp, ib_uverbs_modify_qp)
VERBS_CORE_CMD(ibv_query_qp, ib_uverbs_query_qp)
VERBS_CORE_CMD(ibv_create_srq, ib_uverbs_create_srq)
VERBS_CORE_CMD(ibv_create_xsrq, ib_uverbs_create_xsrq)
VERBS_CORE_CMD(ibv_modify_srq, ib_uverbs_modify_srq)
VERBS_CORE_CMD(ibv_query_srq, ib_uverbs_query_srq)
VERBS_CORE_CMD(ibv_open_xrcd, ib_uverbs_open_xrcd)
VERBS_CORE_CMD_EX(ibv_create_cq_ex, ib_uverbs_ex_create_cq)
VERBS_CORE_CMD_EX(ibv_create_qp_ex, ib_uverbs_ex_create_qp)
VERBS_CORE_CMD_EX(ibv_modify_qp_ex, ib_uverbs_ex_modify_qp)
VERBS_CORE_CMD_EX(ibv_modify_cq, ib_uverbs_ex_modify_cq)
VERBS_CORE_CMD_EX(ibv_create_wq, ib_uverbs_ex_create_wq)
VERBS_CORE_CMD_EX(ibv_modify_wq, ib_uverbs_ex_modify_wq)

#define VP_CMD(name, bytes) VP_SIZE(struct name, bytes); VP_AT(struct name, core_payload, 8)
#define VP_CMD_EX(name, bytes) VP_SIZE(struct name, bytes); VP_AT(struct name, core_payload, 24)
VP_CMD(ibv_get_context, 16);
VP_CMD(ibv_query_port, 24);
VP_CMD(ibv_alloc_pd, 16);
VP_CMD(ibv_reg_mr, 48);
VP_CMD(ibv_rereg_mr, 56);
VP_CMD(ibv_alloc_mw, 24);
VP_CMD(ibv_create_cq, 40);
VP_CMD(ibv_resize_cq, 24);
VP_CMD(ibv_create_qp, 64);
VP_CMD(ibv_open_qp, 40);
VP_CMD(ibv_modify_qp, 120);
VP_CMD(ibv_query_qp, 24);
VP_CMD(ibv_create_srq, 40);
VP_CMD(ibv_create_xsrq, 56);
VP_CMD(ibv_modify_srq, 24);
VP_CMD(ibv_query_srq, 24);
VP_CMD(ibv_open_xrcd, 24);
VP_CMD_EX(ibv_create_cq_ex, 56);
VP_CMD_EX(ibv_create_qp_ex, 88);
VP_CMD_EX(ibv_modify_qp_ex, 144);
VP_CMD_EX(ibv_modify_cq, 40);
VP_CMD_EX(ibv_create_wq, 64);
VP_CMD_EX(ibv_modify_wq, 48);
#undef VP_CMD
#undef VP_CMD_EX

/* Core responses whose size decides where our driver response starts. */
VP_SIZE(struct ib_uverbs_get_context_resp, 8);
VP_SIZE(struct ib_uverbs_alloc_pd_resp, 4);
VP_SIZE(struct ib_uverbs_reg_mr_resp, 12);
VP_SIZE(struct ib_uverbs_rereg_mr_resp, 8);
VP_SIZE(struct ib_uverbs_alloc_mw_resp, 8);
VP_SIZE(struct ib_uverbs_create_cq_resp, 8);
VP_SIZE(struct ib_uverbs_resize_cq_resp, 8);
VP_SIZE(struct ib_uverbs_create_qp_resp, 32);
VP_SIZE(struct ib_uverbs_create_srq_resp, 16);
VP_SIZE(struct ib_uverbs_create_ah_resp, 4);
VP_SIZE(struct ib_uverbs_open_xrcd_resp, 4);
VP_SIZE(struct ib_uverbs_ex_create_cq_resp, 16);
VP_SIZE(struct ib_uverbs_ex_create_qp_resp, 40);
VP_SIZE(struct ib_uverbs_ex_modify_qp_resp, 8);
VP_SIZE(struct ib_uverbs_ex_query_device_resp, 304);
VP_SIZE(struct ib_uverbs_ex_create_wq_resp, 24);
VP_SIZE(struct ib_uverbs_ex_create_rwq_ind_table_resp, 16);

/*
 * Core command + driver data, the way a provider passes its own request and
 * receives its own response: declares struct <name> (core command, then
 * drv_payload) and struct <name>_resp (core response, then drv_payload).
 * The asserts reject implicit padding between or after the two halves, which
 * would otherwise shift where the kernel finds our data.  Use the _EX variant
 * for extended commands (8-byte granularity instead of 4).
 *
 *	struct srnic_create_cq { __aligned_u64 buf_addr; ... };
 *	struct srnic_create_cq_resp { __u32 cqn; ... };
 *	VERBS_DRV_CMD(srnic_ucreate_cq, ibv_create_cq, ib_uverbs_create_cq_resp,
 *		      srnic_create_cq, srnic_create_cq_resp);
 *	...
 *	struct srnic_ucreate_cq cmd = {};
 *	struct srnic_ucreate_cq_resp resp = {};
 *	ibv_cmd_create_cq(ctx, cqe, ch, vec, &cq->vcq.cq, &cmd.ibv_cmd,
 *			  sizeof(cmd), &resp.ibv_resp, sizeof(resp));
 */
#define VERBS_DRV_CMD_(name, core_cmd, core_resp, drv_req, drv_resp, gran)	\
	VP_PEDANTIC_OFF_							\
	struct name {								\
		struct core_cmd		ibv_cmd;				\
		struct drv_req		drv_payload;				\
	};									\
	struct name##_resp {							\
		struct core_resp	ibv_resp;				\
		struct drv_resp		drv_payload;				\
	};									\
	VP_PEDANTIC_ON_								\
	static_assert(sizeof(struct name) ==					\
		      sizeof(struct core_cmd) + sizeof(struct drv_req),		\
		      #name ": padding between core command and driver data");	\
	static_assert(sizeof(struct name) % (gran) == 0,			\
		      #name ": request size not a multiple of " #gran);		\
	static_assert(sizeof(struct name##_resp) ==				\
		      sizeof(struct core_resp) + sizeof(struct drv_resp),	\
		      #name ": padding between core response and driver data");	\
	static_assert(sizeof(struct name##_resp) % (gran) == 0,			\
		      #name ": response size not a multiple of " #gran)
#define VERBS_DRV_CMD(name, core_cmd, core_resp, drv_req, drv_resp) \
	VERBS_DRV_CMD_(name, core_cmd, core_resp, drv_req, drv_resp, 4)
#define VERBS_DRV_CMD_EX(name, core_cmd, core_resp, drv_req, drv_resp) \
	VERBS_DRV_CMD_(name, core_cmd, core_resp, drv_req, drv_resp, 8)

/*
 * Commands whose driver data travels as ioctl attributes take this; we never
 * add any and always pass NULL, so it stays an incomplete type.
 */
struct ibv_command_buffer;

/*
 * ---------------------------------------------------------------------------
 * Exported functions (all IBVERBS_PRIVATE_34 unless noted)
 * ---------------------------------------------------------------------------
 */

/*
 * The ABI number is part of the name so that a provider built for another
 * libibverbs fails to load instead of misbehaving.
 */
void verbs_register_driver_34(const struct verbs_device_ops *ops);
#define verbs_register_driver(ops) verbs_register_driver_34(ops)

/*
 * Registers ops when the plugin is dlopen()ed.  ops must be a static object;
 * libibverbs keeps the pointer.
 */
#define VERBS_PROVIDER_REGISTER(ops)					\
	static void __attribute__((constructor))			\
	verbs_provider_register_ctor_(void)				\
	{								\
		verbs_register_driver_34(&(ops));			\
	}

/*
 * Allocates alloc_size zeroed bytes, initialises the verbs_context found at
 * byte offset (uintptr_t)context_offset inside them, and returns the start.
 * On failure cmd_fd is closed and NULL returned with errno set.  driver_id is
 * stamped into every ioctl header and must equal the kernel device's
 * ops.driver_id (RDMA_DRIVER_UNKNOWN for srnic) or the kernel rejects ioctls.
 */
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size,
				    struct verbs_context *context_offset,
				    uint32_t driver_id);
#define verbs_init_and_alloc_context(ibdev, cmd_fd, drv_ctx_ptr, ctx_member,	\
				     driver_id)					\
	((__typeof__(drv_ctx_ptr))_verbs_init_and_alloc_context(		\
		(ibdev), (cmd_fd), sizeof(*(drv_ctx_ptr)),			\
		(struct verbs_context *)offsetof(__typeof__(*(drv_ctx_ptr)),	\
						 ctx_member),			\
		(driver_id)))

void verbs_uninit_context(struct verbs_context *context);
void verbs_set_ops(struct verbs_context *vctx,
		   const struct verbs_context_ops *ops);
/* Initialises the lock/cond/event counters of a CQ not made by ibv_cmd_*. */
void verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context,
		   struct ibv_comp_channel *channel, void *cq_context);

/* Context and device */
int ibv_cmd_get_context(struct verbs_context *context,
			struct ibv_get_context *cmd, size_t cmd_size,
			struct ib_uverbs_get_context_resp *resp,
			size_t resp_size);
int ibv_cmd_query_context(struct ibv_context *context,
			  struct ibv_command_buffer *driver);
int ibv_cmd_query_device_any(struct ibv_context *context,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size,
			     struct ib_uverbs_ex_query_device_resp *resp,
			     size_t *resp_size);
int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num,
		       struct ibv_port_attr *port_attr,
		       struct ibv_query_port *cmd, size_t cmd_size);
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
		       unsigned int index, enum ibv_gid_type_sysfs *type);

/* PD, XRCD */
int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd,
		     struct ibv_alloc_pd *cmd, size_t cmd_size,
		     struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_pd(struct ibv_pd *pd);
int ibv_cmd_open_xrcd(struct ibv_context *context, struct verbs_xrcd *xrcd,
		      int vxrcd_size, struct ibv_xrcd_init_attr *attr,
		      struct ibv_open_xrcd *cmd, size_t cmd_size,
		      struct ib_uverbs_open_xrcd_resp *resp, size_t resp_size);
int ibv_cmd_close_xrcd(struct verbs_xrcd *xrcd);

/* MR, MW, DM */
int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
		   uint64_t hca_va, int access, struct verbs_mr *vmr,
		   struct ibv_reg_mr *cmd, size_t cmd_size,
		   struct ib_uverbs_reg_mr_resp *resp, size_t resp_size);
int ibv_cmd_rereg_mr(struct verbs_mr *vmr, uint32_t flags, void *addr,
		     size_t length, uint64_t hca_va, int access,
		     struct ibv_pd *pd, struct ibv_rereg_mr *cmd,
		     size_t cmd_size, struct ib_uverbs_rereg_mr_resp *resp,
		     size_t resp_size);
int ibv_cmd_dereg_mr(struct verbs_mr *vmr);
int ibv_cmd_query_mr(struct ibv_pd *pd, struct verbs_mr *vmr,
		     uint32_t mr_handle);
int ibv_cmd_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
			  uint64_t iova, int fd, int access,
			  struct verbs_mr *vmr);
int ibv_cmd_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		      uint32_t flags, struct ibv_sge *sg_list,
		      uint32_t num_sge);
int ibv_cmd_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		      uint32_t flags, struct ibv_sge *sg_list,
		      uint32_t num_sge);
int ibv_cmd_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type,
		     struct ibv_mw *mw, struct ibv_alloc_mw *cmd,
		     size_t cmd_size, struct ib_uverbs_alloc_mw_resp *resp,
		     size_t resp_size);
int ibv_cmd_dealloc_mw(struct ibv_mw *mw);
int ibv_cmd_alloc_dm(struct ibv_context *context,
		     const struct ibv_alloc_dm_attr *dm_attr,
		     struct verbs_dm *dm, struct ibv_command_buffer *link);
int ibv_cmd_free_dm(struct verbs_dm *dm);
int ibv_cmd_reg_dm_mr(struct ibv_pd *pd, struct verbs_dm *dm,
		      uint64_t offset, size_t length, unsigned int access,
		      struct verbs_mr *vmr, struct ibv_command_buffer *link);

/* CQ */
int ibv_cmd_create_cq(struct ibv_context *context, int cqe,
		      struct ibv_comp_channel *channel, int comp_vector,
		      struct ibv_cq *cq, struct ibv_create_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_create_cq_resp *resp,
		      size_t resp_size);
int ibv_cmd_create_cq_ex(struct ibv_context *context,
			 const struct ibv_cq_init_attr_ex *cq_attr,
			 struct verbs_cq *cq, struct ibv_create_cq_ex *cmd,
			 size_t cmd_size,
			 struct ib_uverbs_ex_create_cq_resp *resp,
			 size_t resp_size, uint32_t cmd_flags);
int ibv_cmd_resize_cq(struct ibv_cq *cq, int cqe,
		      struct ibv_resize_cq *cmd, size_t cmd_size,
		      struct ib_uverbs_resize_cq_resp *resp, size_t resp_size);
int ibv_cmd_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr,
		      struct ibv_modify_cq *cmd, size_t cmd_size);
int ibv_cmd_destroy_cq(struct ibv_cq *cq);
int ibv_cmd_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc);
int ibv_cmd_req_notify_cq(struct ibv_cq *cq, int solicited_only);

/* QP */
int ibv_cmd_create_qp(struct ibv_pd *pd, struct ibv_qp *qp,
		      struct ibv_qp_init_attr *attr,
		      struct ibv_create_qp *cmd, size_t cmd_size,
		      struct ib_uverbs_create_qp_resp *resp, size_t resp_size);
int ibv_cmd_create_qp_ex(struct ibv_context *context, struct verbs_qp *qp,
			 struct ibv_qp_init_attr_ex *attr_ex,
			 struct ibv_create_qp *cmd, size_t cmd_size,
			 struct ib_uverbs_create_qp_resp *resp,
			 size_t resp_size);
int ibv_cmd_create_qp_ex2(struct ibv_context *context, struct verbs_qp *qp,
			  struct ibv_qp_init_attr_ex *attr_ex,
			  struct ibv_create_qp_ex *cmd, size_t cmd_size,
			  struct ib_uverbs_ex_create_qp_resp *resp,
			  size_t resp_size);
int ibv_cmd_open_qp(struct ibv_context *context, struct verbs_qp *qp,
		    int vqp_size, struct ibv_qp_open_attr *attr,
		    struct ibv_open_qp *cmd, size_t cmd_size,
		    struct ib_uverbs_create_qp_resp *resp, size_t resp_size);
int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		      int attr_mask, struct ibv_modify_qp *cmd,
		      size_t cmd_size);
int ibv_cmd_modify_qp_ex(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask, struct ibv_modify_qp_ex *cmd,
			 size_t cmd_size,
			 struct ib_uverbs_ex_modify_qp_resp *resp,
			 size_t resp_size);
int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		     int attr_mask, struct ibv_qp_init_attr *init_attr,
		     struct ibv_query_qp *cmd, size_t cmd_size);
int ibv_cmd_destroy_qp(struct ibv_qp *qp);
/*
 * Marshals the WR list into a POST_SEND write().  With wr == NULL it sends
 * wr_count 0 and the kernel calls the driver's post_send with a NULL list:
 * our doorbell wake-up system call.
 */
int ibv_cmd_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		      struct ibv_send_wr **bad_wr);
int ibv_cmd_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr);
int ibv_cmd_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			 uint16_t lid);
int ibv_cmd_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			 uint16_t lid);

/* SRQ */
int ibv_cmd_create_srq(struct ibv_pd *pd, struct ibv_srq *srq,
		       struct ibv_srq_init_attr *attr,
		       struct ibv_create_srq *cmd, size_t cmd_size,
		       struct ib_uverbs_create_srq_resp *resp,
		       size_t resp_size);
int ibv_cmd_create_srq_ex(struct ibv_context *context, struct verbs_srq *srq,
			  struct ibv_srq_init_attr_ex *attr_ex,
			  struct ibv_create_xsrq *cmd, size_t cmd_size,
			  struct ib_uverbs_create_srq_resp *resp,
			  size_t resp_size);
int ibv_cmd_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		       int srq_attr_mask, struct ibv_modify_srq *cmd,
		       size_t cmd_size);
int ibv_cmd_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		      struct ibv_query_srq *cmd, size_t cmd_size);
int ibv_cmd_destroy_srq(struct ibv_srq *srq);
int ibv_cmd_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad_wr);

/* Receive WQs, indirection tables and flows (raw packet QPs) */
int ibv_cmd_create_wq(struct ibv_context *context,
		      struct ibv_wq_init_attr *wq_init_attr, struct ibv_wq *wq,
		      struct ibv_create_wq *cmd, size_t cmd_size,
		      struct ib_uverbs_ex_create_wq_resp *resp,
		      size_t resp_size);
int ibv_cmd_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *attr,
		      struct ibv_modify_wq *cmd, size_t cmd_size);
int ibv_cmd_destroy_wq(struct ibv_wq *wq);
int ibv_cmd_create_rwq_ind_table(struct ibv_context *context,
				 struct ibv_rwq_ind_table_init_attr *init_attr,
				 struct ibv_rwq_ind_table *rwq_ind_table,
				 struct ib_uverbs_ex_create_rwq_ind_table_resp *resp,
				 size_t resp_size);
int ibv_cmd_destroy_rwq_ind_table(struct ibv_rwq_ind_table *rwq_ind_table);
/* Serialises @flow_attr's specs; @ucmd (driver data) may be NULL. */
int ibv_cmd_create_flow(struct ibv_qp *qp, struct ibv_flow *flow_id,
			struct ibv_flow_attr *flow_attr, void *ucmd,
			size_t ucmd_size);
int ibv_cmd_destroy_flow(struct ibv_flow *flow_id);

/* AH */
int ibv_cmd_create_ah(struct ibv_pd *pd, struct ibv_ah *ah,
		      struct ibv_ah_attr *attr,
		      struct ib_uverbs_create_ah_resp *resp, size_t resp_size);
int ibv_cmd_destroy_ah(struct ibv_ah *ah);

/*
 * sysfs helpers.  ibv_read_ibdev_sysfs_file() reads
 * <sysfs_dev->ibdev_path>/<formatted name>, strips one trailing newline and
 * returns the byte count, or -1 (also when the value fills buf exactly).
 */
int ibv_read_ibdev_sysfs_file(char *buf, size_t size,
			      struct verbs_sysfs_dev *sysfs_dev,
			      const char *fnfmt, ...)
	__attribute__((format(printf, 4, 5)));
/* These two are exported at IBVERBS_1.0 but declared in no public header. */
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
			size_t size);

#undef VP_SIZE
#undef VP_AT

#endif /* SRNIC_USER_VERBS_PROVIDER_H */
