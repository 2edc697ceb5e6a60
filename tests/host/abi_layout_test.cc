// Pins the layout of the user/kernel ABI (include/srnic-abi.h): the kernel and
// the provider are built by different compilers at different times, so any
// change of size or offset here is an ABI break and must bump the version.
#include <cstddef>

#include <gtest/gtest.h>

#include <infiniband/tm_types.h>
#include <infiniband/verbs.h>

extern "C" {
#include "srnic-abi.h"
}

TEST(AbiLayout, Version) { EXPECT_EQ(SRNIC_ABI_VERSION, 2); }

TEST(AbiLayout, UarPage) {
	EXPECT_EQ(SRNIC_PAGE_SIZE, 4096u);
	EXPECT_EQ(sizeof(srnic_db_slot), SRNIC_DB_SLOT_SIZE);
	EXPECT_EQ(SRNIC_DBS_PER_UAR, 63u);
	EXPECT_EQ(sizeof(srnic_uar_summary), 64u);
	EXPECT_EQ(SRNIC_UAR_SUMMARY_OFFSET + sizeof(srnic_uar_summary), SRNIC_PAGE_SIZE);
	EXPECT_EQ(offsetof(srnic_db_slot, value), 0u);
}

// A bell page: the top word alone on its line, then a bit per UAR page.
TEST(AbiLayout, BellPage) {
	EXPECT_EQ(sizeof(srnic_bells), SRNIC_PAGE_SIZE);
	EXPECT_EQ(offsetof(srnic_bells, top), 0u);
	EXPECT_EQ(offsetof(srnic_bells, pages), 64u);
	EXPECT_EQ(sizeof(((srnic_bells *)nullptr)->pages) * 8, SRNIC_MAX_UARS);
	// Each bit of top names one word of pages.
	EXPECT_LE(SRNIC_MAX_UARS / 64, 64u);
}

TEST(AbiLayout, EngineStatusPage) {
	EXPECT_EQ(sizeof(srnic_engine_status), 64u);
	EXPECT_EQ(SRNIC_MAX_ENGINES * sizeof(srnic_engine_status), SRNIC_PAGE_SIZE);
	EXPECT_EQ(offsetof(srnic_engine_status, flags), 0u);
	EXPECT_EQ(SRNIC_ENGINE_NEED_WAKEUP, 1u);
}

TEST(AbiLayout, AllocUcontext) {
	EXPECT_EQ(sizeof(srnic_alloc_ucontext_req), 8u);
	EXPECT_EQ(offsetof(srnic_alloc_ucontext_req, comp_mask), 0u);
	EXPECT_EQ(sizeof(srnic_alloc_ucontext_resp), 40u);
	EXPECT_EQ(offsetof(srnic_alloc_ucontext_resp, abi_version), 0u);
	EXPECT_EQ(offsetof(srnic_alloc_ucontext_resp, page_size), 4u);
	EXPECT_EQ(offsetof(srnic_alloc_ucontext_resp, num_uars), 8u);
	EXPECT_EQ(offsetof(srnic_alloc_ucontext_resp, dbs_per_uar), 12u);
	EXPECT_EQ(offsetof(srnic_alloc_ucontext_resp, uar_mmap_offset), 16u);
	EXPECT_EQ(offsetof(srnic_alloc_ucontext_resp, status_mmap_offset), 24u);
	EXPECT_EQ(offsetof(srnic_alloc_ucontext_resp, num_engines), 32u);
}

TEST(AbiLayout, AllocPd) {
	EXPECT_EQ(sizeof(srnic_alloc_pd_resp), 8u);
	EXPECT_EQ(offsetof(srnic_alloc_pd_resp, pdn), 0u);
}

// Every struct is a whole number of 8-byte words, so that a 32-bit and a
// 64-bit build agree on the size of the udata they exchange.
TEST(AbiLayout, EightByteMultiples) {
	EXPECT_EQ(sizeof(srnic_alloc_ucontext_req) % 8, 0u);
	EXPECT_EQ(sizeof(srnic_alloc_ucontext_resp) % 8, 0u);
	EXPECT_EQ(sizeof(srnic_alloc_pd_resp) % 8, 0u);
	EXPECT_EQ(alignof(srnic_alloc_ucontext_resp), 8u);
}

TEST(AbiLayout, DoorbellLocation) {
	EXPECT_EQ(sizeof(srnic_db_loc), 16u);
	EXPECT_EQ(offsetof(srnic_db_loc, uar_mmap_offset), 0u);
	EXPECT_EQ(offsetof(srnic_db_loc, slot), 8u);
	EXPECT_EQ(offsetof(srnic_db_loc, uar_index), 12u);
}

TEST(AbiLayout, Cqe) {
	EXPECT_EQ(sizeof(srnic_cqe), SRNIC_CQE_SIZE);
	EXPECT_EQ(offsetof(srnic_cqe, wr_id), 0u);
	EXPECT_EQ(offsetof(srnic_cqe, timestamp), 8u);
	EXPECT_EQ(offsetof(srnic_cqe, byte_len), 16u);
	EXPECT_EQ(offsetof(srnic_cqe, imm_data), 20u);
	EXPECT_EQ(offsetof(srnic_cqe, qp_num), 24u);
	EXPECT_EQ(offsetof(srnic_cqe, src_qp), 28u);
	EXPECT_EQ(offsetof(srnic_cqe, vendor_err), 32u);
	EXPECT_EQ(offsetof(srnic_cqe, pkey_index), 36u);
	EXPECT_EQ(offsetof(srnic_cqe, opcode), 38u);
	EXPECT_EQ(offsetof(srnic_cqe, status), 39u);
	EXPECT_EQ(offsetof(srnic_cqe, wc_flags), 40u);
	EXPECT_EQ(offsetof(srnic_cqe, tm_tag_lo), 44u);
	EXPECT_EQ(offsetof(srnic_cqe, tm_tag_hi), 48u);
	EXPECT_EQ(offsetof(srnic_cqe, tm_priv), 52u);
	EXPECT_EQ(offsetof(srnic_cqe, reserved1), 56u);
	// The owner byte is the last one, written last.
	EXPECT_EQ(offsetof(srnic_cqe, owner), SRNIC_CQE_SIZE - 1);
}

TEST(AbiLayout, CqCommands) {
	EXPECT_EQ(sizeof(srnic_cq_db), 8u);
	EXPECT_EQ(offsetof(srnic_cq_db, arm), 4u);
	EXPECT_EQ(sizeof(srnic_create_cq_req), 24u);
	EXPECT_EQ(offsetof(srnic_create_cq_req, db_addr), 8u);
	EXPECT_EQ(offsetof(srnic_create_cq_req, log_entries), 16u);
	EXPECT_EQ(offsetof(srnic_create_cq_req, flags), 20u);
	EXPECT_EQ(SRNIC_CQ_FLAG_TIMESTAMP, 1u);
	EXPECT_EQ(sizeof(srnic_create_cq_resp), 24u);
	EXPECT_EQ(offsetof(srnic_create_cq_resp, cqn), 16u);
	EXPECT_EQ(sizeof(srnic_resize_cq_req), 16u);
	EXPECT_EQ(sizeof(srnic_resize_cq_resp), 8u);
}

TEST(AbiLayout, SendWqeSegments) {
	EXPECT_EQ(sizeof(srnic_wqe_ctrl), 32u);
	EXPECT_EQ(offsetof(srnic_wqe_ctrl, opcode), 8u);
	EXPECT_EQ(offsetof(srnic_wqe_ctrl, flags), 9u);
	EXPECT_EQ(offsetof(srnic_wqe_ctrl, num_sge), 10u);
	EXPECT_EQ(offsetof(srnic_wqe_ctrl, imm_data), 12u);
	EXPECT_EQ(offsetof(srnic_wqe_ctrl, inline_len), 16u);
	EXPECT_EQ(offsetof(srnic_wqe_ctrl, xrc_srqn), 20u);
	EXPECT_EQ(sizeof(srnic_wqe_raddr), 16u);
	EXPECT_EQ(sizeof(srnic_wqe_atomic), 16u);
	EXPECT_EQ(sizeof(srnic_av), 32u);
	EXPECT_EQ(offsetof(srnic_av, dmac), 16u);
	EXPECT_EQ(offsetof(srnic_av, flow_label), 24u);
	EXPECT_EQ(sizeof(srnic_wqe_ud), 48u);
	EXPECT_EQ(offsetof(srnic_wqe_ud, remote_qpn), 32u);
	EXPECT_EQ(sizeof(srnic_wqe_data), 16u);
	EXPECT_EQ(offsetof(srnic_wqe_data, addr), 8u);
	// The header sizes the capacity rules use.
	EXPECT_EQ(SRNIC_SEND_HDR_RC, sizeof(srnic_wqe_ctrl) +
		  sizeof(srnic_wqe_raddr) + sizeof(srnic_wqe_atomic));
	EXPECT_EQ(SRNIC_SEND_HDR_UD, sizeof(srnic_wqe_ctrl) + sizeof(srnic_wqe_ud));
	// A bind takes the place of the remote-address and atomic segments.
	EXPECT_EQ(sizeof(srnic_wqe_bind), 32u);
	EXPECT_EQ(offsetof(srnic_wqe_bind, length), 8u);
	EXPECT_EQ(offsetof(srnic_wqe_bind, mw_rkey), 16u);
	EXPECT_EQ(offsetof(srnic_wqe_bind, new_rkey), 20u);
	EXPECT_EQ(offsetof(srnic_wqe_bind, mr_lkey), 24u);
	EXPECT_EQ(offsetof(srnic_wqe_bind, access), 28u);
	EXPECT_EQ(SRNIC_SEND_HDR_RC, sizeof(srnic_wqe_ctrl) + sizeof(srnic_wqe_bind));
	// A FLUSH's segment takes the place of the atomic one, with uapi's values.
	EXPECT_EQ(sizeof(srnic_wqe_flush), sizeof(srnic_wqe_atomic));
	EXPECT_EQ(offsetof(srnic_wqe_flush, type), 4u);
	EXPECT_EQ(offsetof(srnic_wqe_flush, level), 5u);
	EXPECT_EQ(SRNIC_WR_FLUSH, 14u);
	EXPECT_EQ(SRNIC_WC_FLUSH, 8u);
	EXPECT_LE(SRNIC_SEND_HDR_UD + SRNIC_MAX_INLINE_DATA, SRNIC_SEND_WQE_MAX);
	// Both sides size headers by type with the ABI's function, which takes
	// the uverbs values: libibverbs' enum must agree with them.
	EXPECT_EQ(srnic_send_hdr(IBV_QPT_RC), SRNIC_SEND_HDR_RC);
	EXPECT_EQ(srnic_send_hdr(IBV_QPT_UC), SRNIC_SEND_HDR_RC);
	EXPECT_EQ(srnic_send_hdr(IBV_QPT_XRC_SEND), SRNIC_SEND_HDR_RC);
	EXPECT_EQ(srnic_send_hdr(IBV_QPT_UD), SRNIC_SEND_HDR_UD);
	EXPECT_EQ(srnic_send_hdr(IBV_QPT_RAW_PACKET), SRNIC_SEND_HDR_RAW);
}

TEST(AbiLayout, QueueCommands) {
	EXPECT_EQ(sizeof(srnic_recv_wqe_hdr), 16u);
	EXPECT_EQ(sizeof(srnic_qp_db), 24u);
	EXPECT_EQ(offsetof(srnic_qp_db, error), 16u);
	EXPECT_EQ(offsetof(srnic_qp_db, rq_producer), 4u);
	EXPECT_EQ(offsetof(srnic_qp_db, sq_consumer), 8u);
	EXPECT_EQ(offsetof(srnic_qp_db, rq_consumer), 12u);
	EXPECT_EQ(offsetof(srnic_srq_db, consumer), 4u);
	EXPECT_EQ(sizeof(srnic_srq_db), 8u);
	EXPECT_EQ(sizeof(srnic_create_qp_req), 40u);
	EXPECT_EQ(offsetof(srnic_create_qp_req, rq_buf_addr), 8u);
	EXPECT_EQ(offsetof(srnic_create_qp_req, db_addr), 16u);
	EXPECT_EQ(offsetof(srnic_create_qp_req, sq_log_entries), 24u);
	EXPECT_EQ(offsetof(srnic_create_qp_req, rq_log_stride), 36u);
	EXPECT_EQ(sizeof(srnic_create_qp_resp), 32u);
	EXPECT_EQ(offsetof(srnic_create_qp_resp, qpn), 16u);
	EXPECT_EQ(offsetof(srnic_create_qp_resp, max_inline_data), 20u);
	EXPECT_EQ(offsetof(srnic_create_qp_resp, bells_mmap_offset), 24u);
	EXPECT_EQ(sizeof(srnic_create_srq_req), 24u);
	EXPECT_EQ(sizeof(srnic_create_srq_resp), 8u);
	// Follows the 4-byte core create_ah response: 4-byte fields only.
	EXPECT_EQ(sizeof(srnic_create_ah_resp), 8u);
	EXPECT_EQ(alignof(srnic_create_ah_resp), 1u);
}

// The engine writes libibverbs' values and parses its header layouts.
TEST(AbiLayout, TagMatching) {
	EXPECT_EQ(SRNIC_WC_TM_ADD, IBV_WC_TM_ADD);
	EXPECT_EQ(SRNIC_WC_TM_DEL, IBV_WC_TM_DEL);
	EXPECT_EQ(SRNIC_WC_TM_SYNC, IBV_WC_TM_SYNC);
	EXPECT_EQ(SRNIC_WC_TM_RECV, IBV_WC_TM_RECV);
	EXPECT_EQ(SRNIC_WC_TM_NO_TAG, IBV_WC_TM_NO_TAG);
	EXPECT_EQ(SRNIC_WC_TM_ERR, IBV_WC_TM_ERR);
	EXPECT_EQ(SRNIC_WC_TM_RNDV_INCOMPLETE, IBV_WC_TM_RNDV_INCOMPLETE);
	EXPECT_EQ(SRNIC_TMH_SIZE, sizeof(ibv_tmh));
	EXPECT_EQ(SRNIC_RVH_SIZE, sizeof(ibv_rvh));
	EXPECT_EQ(offsetof(ibv_tmh, app_ctx), 4u);
	EXPECT_EQ(offsetof(ibv_tmh, tag), 8u);
	EXPECT_EQ(offsetof(ibv_rvh, rkey), 8u);
	EXPECT_EQ(offsetof(ibv_rvh, len), 12u);
	EXPECT_EQ(SRNIC_TMH_EAGER, IBV_TMH_EAGER);
	EXPECT_EQ(SRNIC_TMH_RNDV, IBV_TMH_RNDV);
	EXPECT_EQ(SRNIC_TMH_FIN, IBV_TMH_FIN);
	EXPECT_EQ(SRNIC_TMH_NO_TAG, IBV_TMH_NO_TAG);
	EXPECT_EQ(SRNIC_TM_OP_SIGNALED, IBV_OPS_SIGNALED);
	EXPECT_EQ(SRNIC_TM_OP_TM_SYNC, IBV_OPS_TM_SYNC);
	EXPECT_EQ(sizeof(srnic_tm_op), 72u);
	EXPECT_EQ(offsetof(srnic_tm_op, handle_addr), 32u);
	EXPECT_EQ(offsetof(srnic_tm_op, sge), 40u);
	EXPECT_EQ(offsetof(srnic_tm_op, unexpected_cnt), 56u);
	EXPECT_EQ(offsetof(srnic_tm_op, handle), 60u);
	EXPECT_EQ(offsetof(srnic_tm_op, opcode), 64u);
	EXPECT_EQ(offsetof(srnic_tm_op, num_sge), 66u);
}

TEST(AbiLayout, RawPacketCommands) {
	// A raw packet WQE is the control segment, then the frame's data.
	EXPECT_EQ(SRNIC_SEND_HDR_RAW, sizeof(srnic_wqe_ctrl));
	EXPECT_EQ(sizeof(srnic_create_wq_req), 32u);
	EXPECT_EQ(offsetof(srnic_create_wq_req, db_addr), 8u);
	EXPECT_EQ(offsetof(srnic_create_wq_req, log_entries), 16u);
	EXPECT_EQ(offsetof(srnic_create_wq_req, log_stride), 20u);
	EXPECT_EQ(offsetof(srnic_create_wq_req, comp_mask), 24u);
	EXPECT_EQ(sizeof(srnic_create_qp_rss_req), 64u);
	EXPECT_EQ(offsetof(srnic_create_qp_rss_req, rx_hash_function), 8u);
	EXPECT_EQ(offsetof(srnic_create_qp_rss_req, rx_hash_key_len), 9u);
	EXPECT_EQ(offsetof(srnic_create_qp_rss_req, rx_hash_key), 16u);
	EXPECT_EQ(offsetof(srnic_create_qp_rss_req, comp_mask), 56u);
	// Extended commands: whole 8-byte words.
	EXPECT_EQ(sizeof(srnic_create_wq_req) % 8, 0u);
	EXPECT_EQ(sizeof(srnic_create_qp_rss_req) % 8, 0u);
}

TEST(AbiLayout, FirmwareVersionPacking) {
	const unsigned long long v = (2ull << 32) | (3u << 16) | 4u;

	EXPECT_EQ(SRNIC_FW_VER_MAJOR(v), 2u);
	EXPECT_EQ(SRNIC_FW_VER_MINOR(v), 3u);
	EXPECT_EQ(SRNIC_FW_VER_SUB(v), 4u);
}
