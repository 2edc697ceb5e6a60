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

#include "srnic_loc.h"
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
	return crc32_le(crc, l3 + n, after);
}

/*
 * The same after everything up to the ICRC, the packet's UDP header and
 * what follows, ICRC included, being the @l4_len bytes after its IP header.
 */
static u32 srnic_icrc_crc(const u8 *l3, bool ipv4, u32 l4_len)
{
	return srnic_icrc_headers(l3, ipv4, l4_len - sizeof(struct udphdr) -
				  sizeof(struct srnic_bth) - SRNIC_ICRC_BYTES);
}

/* The ICRC of a packet, as srnic_icrc_crc() describes it. */
u32 srnic_icrc(const u8 *l3, bool ipv4, u32 l4_len)
{
	return ~srnic_icrc_crc(l3, ipv4, l4_len);
}

/*
 * The ICRC of a received packet at @skb's data, whose headers are linear
 * and whose payload may be in page fragments (srnic_skb_ptr); @l4_len as
 * for srnic_icrc(), checked against the skb's length.
 */
u32 srnic_icrc_skb(const struct sk_buff *skb, bool ipv4, u32 l4_len)
{
	u32 hdrs = (ipv4 ? sizeof(struct iphdr) : sizeof(struct ipv6hdr)) +
		   sizeof(struct udphdr) + sizeof(struct srnic_bth);
	const u8 *l3 = skb_network_header(skb);
	u32 crc = srnic_icrc_headers(l3, ipv4, 0);
	u32 off = l3 - skb->data + hdrs;
	u32 len = l4_len - sizeof(struct udphdr) - sizeof(struct srnic_bth) -
		  SRNIC_ICRC_BYTES;

	while (len) {
		size_t c;
		const u8 *s = srnic_skb_ptr(skb, off, &c);

		if (!s)
			break;
		c = min_t(size_t, c, len);
		crc = crc32_le(crc, s, c);
		off += c;
		len -= c;
	}
	return ~crc;
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
	u32 l3_len = ipv4 ? sizeof(struct iphdr) : sizeof(struct ipv6hdr);

	return ~crc32_le(srnic_icrc_crc(l3, ipv4, l4_len),
			 l3 + l3_len + sizeof(struct udphdr),
			 l4_len - sizeof(struct udphdr) - SRNIC_ICRC_BYTES);
}
