// Pins the layout of the user/kernel ABI (include/srnic-abi.h): the kernel and
// the provider are built by different compilers at different times, so any
// change of size or offset here is an ABI break and must bump the version.
#include <cstddef>

#include <gtest/gtest.h>

extern "C" {
#include "srnic-abi.h"
}

TEST(AbiLayout, Version) { EXPECT_EQ(SRNIC_ABI_VERSION, 1); }

TEST(AbiLayout, UarPage) {
	EXPECT_EQ(SRNIC_PAGE_SIZE, 4096u);
	EXPECT_EQ(sizeof(srnic_db_slot), SRNIC_DB_SLOT_SIZE);
	EXPECT_EQ(SRNIC_DBS_PER_UAR * sizeof(srnic_db_slot), SRNIC_PAGE_SIZE);
	EXPECT_EQ(offsetof(srnic_db_slot, value), 0u);
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
