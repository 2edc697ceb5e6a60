// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The invariant CRC of a RoCEv2 packet (IBTA Annex A17.3.3): CRC-32 over
 * a masked LRH, the IP header and the UDP header with the fields routers
 * may change set to ones, the BTH with its reserved byte set to ones, then
 * everything after the BTH up to the ICRC: the other headers, the payload
 * and the pad.  Carried little end first, as an InfiniBand ICRC is.
 */
#include <linux/crc32.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>

#include "srnic_hdr.h"

/* The CRC-32 state after the 8 bytes of ones that stand for the LRH. */
#define SRNIC_ICRC_LRH_SEED	0xdebb20e3

/*
 * The ICRC of the packet whose IP header is at @l3 (IPv4 without options,
 * or IPv6) and whose UDP header and payload, ICRC included, are the @l4_len
 * bytes after it.  The caller has checked that @l4_len holds a UDP header,
 * a BTH and the ICRC.
 */
u32 srnic_icrc(const u8 *l3, bool ipv4, u32 l4_len)
{
	u8 masked[sizeof(struct ipv6hdr) + sizeof(struct udphdr) +
		  sizeof(struct srnic_bth)];
	u32 l3_len = ipv4 ? sizeof(struct iphdr) : sizeof(struct ipv6hdr);
	u32 n = l3_len + sizeof(struct udphdr) + sizeof(struct srnic_bth);
	struct udphdr *udp;
	u32 crc;

	memcpy(masked, l3, n);
	if (ipv4) {
		struct iphdr *ip = (struct iphdr *)masked;

		ip->tos = 0xff;
		ip->ttl = 0xff;
		ip->check = htons(0xffff);
	} else {
		struct ipv6hdr *ip6 = (struct ipv6hdr *)masked;

		ip6->priority = 0xf;
		memset(ip6->flow_lbl, 0xff, sizeof(ip6->flow_lbl));
		ip6->hop_limit = 0xff;
	}
	udp = (struct udphdr *)(masked + l3_len);
	udp->check = htons(0xffff);
	/* BTH byte 4: FECN, BECN and the reserved bits. */
	masked[l3_len + sizeof(struct udphdr) + 4] = 0xff;

	crc = crc32_le(SRNIC_ICRC_LRH_SEED, masked, n);
	crc = crc32_le(crc, l3 + n, l4_len - sizeof(struct udphdr) -
			sizeof(struct srnic_bth) - SRNIC_ICRC_BYTES);
	return ~crc;
}
