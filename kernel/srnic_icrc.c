// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The invariant CRC of a RoCEv2 packet (IBTA Annex A17.3.3): CRC-32 over
 * a masked LRH, the IP header and the UDP header with the fields routers
 * may change set to ones, the BTH with its reserved byte set to ones, then
 * everything after the BTH up to the ICRC: the other headers, the payload
 * and the pad.  Carried little end first, as an InfiniBand ICRC is.
 *
 * Kernel-independent, for the host tests: the headers are masked by byte
 * offset (srnic_hdr.h; srnic_net.c checks those against the kernel's
 * structs), and a packet in an skb is srnic_net.c's.
 */
#include <linux/types.h>
#include <linux/string.h>
#include <linux/crc32.h>

#include "srnic_hdr.h"

/* The CRC-32 state after the 8 bytes of ones that stand for the LRH. */
#define SRNIC_ICRC_LRH_SEED	0xdebb20e3

/*
 * The CRC-32 state, not yet inverted, after the masked headers of the
 * packet whose IP header is at @l3 (IPv4 without options, or IPv6) and the
 * @after bytes that follow its BTH there.  The caller has checked that the
 * packet holds them.
 */
u32 srnic_icrc_headers(const u8 *l3, bool ipv4, u32 after)
{
	u8 masked[SRNIC_IPV6_HLEN + SRNIC_UDP_HLEN + sizeof(struct srnic_bth)];
	u32 l3_len = ipv4 ? SRNIC_IPV4_HLEN : SRNIC_IPV6_HLEN;
	u32 n = l3_len + SRNIC_UDP_HLEN + sizeof(struct srnic_bth);
	u32 crc;

	memcpy(masked, l3, n);
	if (ipv4) {
		masked[SRNIC_IPV4_TOS] = 0xff;
		masked[SRNIC_IPV4_TTL] = 0xff;
		masked[SRNIC_IPV4_CHECK] = 0xff;
		masked[SRNIC_IPV4_CHECK + 1] = 0xff;
	} else {
		/* Traffic class (the low half of byte 0 on), flow label. */
		masked[0] |= 0x0f;
		memset(masked + 1, 0xff, 3);
		masked[SRNIC_IPV6_HOP_LIMIT] = 0xff;
	}
	masked[l3_len + SRNIC_UDP_CHECK] = 0xff;
	masked[l3_len + SRNIC_UDP_CHECK + 1] = 0xff;
	/* BTH byte 4: FECN, BECN and the reserved bits. */
	masked[l3_len + SRNIC_UDP_HLEN + 4] = 0xff;

	crc = crc32_le(SRNIC_ICRC_LRH_SEED, masked, n);
	return crc32_le(crc, l3 + n, after);
}

/*
 * The same after everything up to the ICRC, the packet's UDP header and
 * what follows, ICRC included, being the @l4_len bytes after its IP header.
 */
static u32 srnic_icrc_crc(const u8 *l3, bool ipv4, u32 l4_len)
{
	return srnic_icrc_headers(l3, ipv4, l4_len - SRNIC_UDP_HLEN -
				  sizeof(struct srnic_bth) - SRNIC_ICRC_BYTES);
}

/* The ICRC of a packet, as srnic_icrc_crc() describes it. */
u32 srnic_icrc(const u8 *l3, bool ipv4, u32 l4_len)
{
	return ~srnic_icrc_crc(l3, ipv4, l4_len);
}

/*
 * The ICRC rxe gives a FLUSH (Linux 6.12): its opcode table has no payload
 * offset for FLUSH, so after the headers rxe runs the CRC again over the
 * packet from its BTH on (BTH, FETH and RETH, the BTH not masked), as if
 * they were payload.  rxe sends only that and accepts only that, which no
 * other FLUSH has (srnic_net.c accepts either; srnic_net_req.c sends it
 * when the spec's went unanswered).
 */
u32 srnic_icrc_rxe_flush(const u8 *l3, bool ipv4, u32 l4_len)
{
	u32 l3_len = ipv4 ? SRNIC_IPV4_HLEN : SRNIC_IPV6_HLEN;

	return ~crc32_le(srnic_icrc_crc(l3, ipv4, l4_len),
			 l3 + l3_len + SRNIC_UDP_HLEN,
			 l4_len - SRNIC_UDP_HLEN - SRNIC_ICRC_BYTES);
}
