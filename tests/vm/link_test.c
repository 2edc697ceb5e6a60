// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * "rdma link add/del" for srnic: good and bad input, coexistence with rxe,
 * and the device following its netdev away.  Every test makes its own veth
 * pair, so it never disturbs the suite's main device.
 */
#include "kselftest_harness.h"
#include "srnic_test.h"
#include "provider_of.h"

FIXTURE(link) {
	char ifa[16], ifb[16];
};

FIXTURE_SETUP(link)
{
	snprintf(self->ifa, sizeof(self->ifa), "lt%da", getpid() % 10000);
	snprintf(self->ifb, sizeof(self->ifb), "lt%db", getpid() % 10000);
	ASSERT_EQ(0, sh("ip link add %s type veth peer name %s", self->ifa,
			self->ifb));
	ASSERT_EQ(0, sh("ip link set %s up && ip link set %s up", self->ifa,
			self->ifb));
}

FIXTURE_TEARDOWN(link)
{
	sh("ip link del %s 2>/dev/null", self->ifa);
}

TEST_F(link, add_del_any_name)
{
	const char *names[] = { "alpha", "x", "srnic_with_a_long_name_0123" };
	char prov[32];

	for (unsigned int i = 0; i < ARRAY_SIZE(names); i++) {
		ASSERT_EQ(0, sh("rdma link add %s type srnic netdev %s", names[i],
				self->ifa));
		EXPECT_TRUE(ibdev_exists(names[i]));
		EXPECT_STREQ("srnic", provider_name(names[i], prov, sizeof(prov)));
		struct ibv_context *ctx = open_named(names[i]);

		EXPECT_NE(NULL, ctx);
		if (ctx)
			ibv_close_device(ctx);
		EXPECT_EQ(0, sh("rdma link del %s", names[i]));
		EXPECT_FALSE(ibdev_exists(names[i]));
	}
}

TEST_F(link, shown_by_rdma_link)
{
	char out[256];

	ASSERT_EQ(0, sh("rdma link add ltshow type srnic netdev %s", self->ifa));
	EXPECT_EQ(0, sh("rdma link show ltshow/1 | grep -q 'state ACTIVE.*netdev %s'",
			self->ifa));
	EXPECT_EQ(0, sh("rdma dev show ltshow | grep -q 'node_type ca'"));
	EXPECT_EQ(0, sh_err(out, sizeof(out), "rdma link del ltshow"));
}

TEST_F(link, missing_netdev_refused)
{
	char err[512];

	EXPECT_NE(0, sh_err(err, sizeof(err),
			    "rdma link add ltnone type srnic netdev nosuchif0"));
	EXPECT_FALSE(ibdev_exists("ltnone"));
	/* Without a netdev the rdma tool refuses before asking the kernel. */
	sh_err(err, sizeof(err), "rdma link add ltnone type srnic");
	EXPECT_FALSE(ibdev_exists("ltnone"));
}

TEST_F(link, down_netdev_refused)
{
	char err[512];

	ASSERT_EQ(0, sh("ip link set %s down", self->ifa));
	EXPECT_NE(0, sh_err(err, sizeof(err),
			    "rdma link add ltdown type srnic netdev %s", self->ifa));
	EXPECT_NE(NULL, strstr(err, "Network is down")) TH_LOG("got: %s", err);
	EXPECT_FALSE(ibdev_exists("ltdown"));
}

TEST_F(link, non_ethernet_netdev_refused)
{
	char err[512];

	EXPECT_NE(0, sh_err(err, sizeof(err),
			    "rdma link add ltlo type srnic netdev lo"));
	EXPECT_FALSE(ibdev_exists("ltlo"));
}

TEST_F(link, duplicate_name_refused)
{
	char err[512];

	/* The core refuses a name in use; the device keeps working. */
	EXPECT_NE(0, sh_err(err, sizeof(err), "rdma link add %s type srnic netdev %s",
			    srnic_test_dev(), self->ifa));
	EXPECT_NE(NULL, strstr(err, "File exists")) TH_LOG("got: %s", err);
	struct ibv_context *ctx = open_named(srnic_test_dev());

	ASSERT_NE(NULL, ctx);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);

	EXPECT_NE(NULL, pd);
	if (pd)
		ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
}

TEST_F(link, percent_name_refused)
{
	char err[512];

	EXPECT_NE(0, sh_err(err, sizeof(err),
			    "rdma link add 'lt%%d' type srnic netdev %s", self->ifa));
	EXPECT_FALSE(ibdev_exists("lt%d"));
	EXPECT_FALSE(ibdev_exists("lt0"));
}

TEST_F(link, one_device_per_netdev)
{
	char err[512];

	ASSERT_EQ(0, sh("rdma link add ltone type srnic netdev %s", self->ifa));
	EXPECT_NE(0, sh_err(err, sizeof(err),
			    "rdma link add lttwo type srnic netdev %s", self->ifa));
	EXPECT_NE(NULL, strstr(err, "exists")) TH_LOG("got: %s", err);
	EXPECT_FALSE(ibdev_exists("lttwo"));
	EXPECT_TRUE(ibdev_exists("ltone"));
	EXPECT_EQ(0, sh("rdma link del ltone"));
}

TEST_F(link, del_unknown_refused)
{
	char err[512];

	EXPECT_NE(0, sh_err(err, sizeof(err), "rdma link del nosuchdev0"));
}

TEST_F(link, unknown_type_refused)
{
	char err[512];

	EXPECT_NE(0, sh_err(err, sizeof(err),
			    "rdma link add ltbad type nosuchtype netdev %s",
			    self->ifa));
	EXPECT_FALSE(ibdev_exists("ltbad"));
}

/* Deleting the netdev removes its srnic device, also with a context open. */
TEST_F(link, netdev_removal_removes_device)
{
	struct ibv_context *ctx;

	ASSERT_EQ(0, sh("rdma link add ltgone type srnic netdev %s", self->ifa));
	ctx = open_named("ltgone");
	ASSERT_NE(NULL, ctx);
	ASSERT_EQ(0, sh("ip link del %s", self->ifa));
	EXPECT_TRUE(wait_async_event(ctx, IBV_EVENT_DEVICE_FATAL, 10000));
	EXPECT_TRUE(wait_until(ibdev_exists, "ltgone", 0, 10000));
	ibv_close_device(ctx);
}

/* rxe and srnic in one VM: each device is bound to its own provider. */
TEST_F(link, coexists_with_rxe)
{
	char prov[32];

	if (sh("modprobe rdma_rxe"))
		SKIP(return, "rdma_rxe is not available");
	ASSERT_EQ(0, sh("rdma link add ltrxe type rxe netdev %s", self->ifa));
	ASSERT_EQ(0, sh("rdma link add ltsrnic type srnic netdev %s", self->ifb));
	EXPECT_STREQ("rxe", provider_name("ltrxe", prov, sizeof(prov)));
	EXPECT_STREQ("srnic", provider_name("ltsrnic", prov, sizeof(prov)));
	/* An srnic device named like nothing srnic-ish is still ours. */
	EXPECT_EQ(0, sh("rdma link del ltsrnic"));
	ASSERT_EQ(0, sh("rdma link add beta type srnic netdev %s", self->ifb));
	EXPECT_STREQ("srnic", provider_name("beta", prov, sizeof(prov)));
	EXPECT_STREQ("rxe", provider_name("ltrxe", prov, sizeof(prov)));
	EXPECT_EQ(0, sh("rdma link del beta"));
	EXPECT_EQ(0, sh("rdma link del ltrxe"));
}

TEST_HARNESS_MAIN
