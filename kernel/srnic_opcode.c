// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The RoCEv2 opcodes srnic sends and receives (IBTA vol. 1 table 38), as a
 * table: which extension headers follow the BTH, in wire order (hdr_len:
 * all of them, an XRC request's XRCETH included), and where the packet
 * sits in its message.  A received opcode without
 * SRNIC_OPF_VALID is dropped; everything else reads the table rather than
 * testing opcodes one by one.
 */
#include "srnic_hdr.h"

#define RETH	(SRNIC_OPF_RETH)
#define AETH	(SRNIC_OPF_AETH)
#define IMM	(SRNIC_OPF_IMM)
#define PAY	(SRNIC_OPF_PAYLOAD)
#define FIRST	(SRNIC_OPF_FIRST)
#define LAST	(SRNIC_OPF_LAST)
#define ONLY	(SRNIC_OPF_FIRST | SRNIC_OPF_LAST)
#define REQ	(SRNIC_OPF_REQ | SRNIC_OPF_VALID)
#define SEND	(REQ | SRNIC_OPF_SEND | PAY)
#define WRITE	(REQ | SRNIC_OPF_WRITE | PAY)
#define RESP	(SRNIC_OPF_VALID)

#define OP(op, nm, fl, len) [op] = { .name = nm, .flags = (fl), .hdr_len = (len) }
/*
 * The connected requests and their responses, for RC (@base 0x00) or UC
 * (0x20); XRC's (0xa0) are RC's with the XRCETH first (@x its flag, @xl
 * its length) in the requests.
 */
#define SEND_OPS(base, svc, x, xl)					\
	OP(base | SRNIC_OP_SEND_FIRST, svc "_SEND_FIRST",		\
	   SEND | FIRST | x, xl),						\
	OP(base | SRNIC_OP_SEND_MIDDLE, svc "_SEND_MIDDLE", SEND | x, xl),	\
	OP(base | SRNIC_OP_SEND_LAST, svc "_SEND_LAST", SEND | LAST | x, xl), \
	OP(base | SRNIC_OP_SEND_LAST_IMM, svc "_SEND_LAST_IMM",		\
	   SEND | LAST | IMM | x, xl + 4),				\
	OP(base | SRNIC_OP_SEND_ONLY, svc "_SEND_ONLY", SEND | ONLY | x, xl), \
	OP(base | SRNIC_OP_SEND_ONLY_IMM, svc "_SEND_ONLY_IMM",		\
	   SEND | ONLY | IMM | x, xl + 4),				\
	OP(base | SRNIC_OP_WRITE_FIRST, svc "_WRITE_FIRST",		\
	   WRITE | FIRST | RETH | x, xl + 16),				\
	OP(base | SRNIC_OP_WRITE_MIDDLE, svc "_WRITE_MIDDLE", WRITE | x, xl), \
	OP(base | SRNIC_OP_WRITE_LAST, svc "_WRITE_LAST", WRITE | LAST | x, xl), \
	OP(base | SRNIC_OP_WRITE_LAST_IMM, svc "_WRITE_LAST_IMM",	\
	   WRITE | LAST | IMM | x, xl + 4),				\
	OP(base | SRNIC_OP_WRITE_ONLY, svc "_WRITE_ONLY",			\
	   WRITE | ONLY | RETH | x, xl + 16),				\
	OP(base | SRNIC_OP_WRITE_ONLY_IMM, svc "_WRITE_ONLY_IMM",		\
	   WRITE | ONLY | RETH | IMM | x, xl + 20)

/* What RC and XRC have beyond UC: READ, atomics, acknowledgements, IETH. */
#define ACKED_OPS(base, svc, x, xl)					\
	OP(base | SRNIC_OP_READ_REQUEST, svc "_READ_REQUEST",		\
	   REQ | SRNIC_OPF_READ | ONLY | RETH | x, xl + 16),		\
	OP(base | SRNIC_OP_READ_RESP_FIRST, svc "_READ_RESPONSE_FIRST",	\
	   RESP | SRNIC_OPF_READ | PAY | FIRST | AETH, 4),		\
	OP(base | SRNIC_OP_READ_RESP_MIDDLE, svc "_READ_RESPONSE_MIDDLE", \
	   RESP | SRNIC_OPF_READ | PAY, 0),				\
	OP(base | SRNIC_OP_READ_RESP_LAST, svc "_READ_RESPONSE_LAST",	\
	   RESP | SRNIC_OPF_READ | PAY | LAST | AETH, 4),		\
	OP(base | SRNIC_OP_READ_RESP_ONLY, svc "_READ_RESPONSE_ONLY",	\
	   RESP | SRNIC_OPF_READ | PAY | ONLY | AETH, 4),		\
	OP(base | SRNIC_OP_ACK, svc "_ACKNOWLEDGE", RESP | ONLY | AETH, 4), \
	OP(base | SRNIC_OP_ATOMIC_ACK, svc "_ATOMIC_ACKNOWLEDGE",	\
	   RESP | SRNIC_OPF_ATOMIC | ONLY | AETH | SRNIC_OPF_ATMACK, 12), \
	OP(base | SRNIC_OP_CMP_SWAP, svc "_COMPARE_SWAP",		\
	   REQ | SRNIC_OPF_ATOMIC | ONLY | SRNIC_OPF_ATMETH | x, xl + 28), \
	OP(base | SRNIC_OP_FETCH_ADD, svc "_FETCH_ADD",			\
	   REQ | SRNIC_OPF_ATOMIC | ONLY | SRNIC_OPF_ATMETH | x, xl + 28), \
	OP(base | SRNIC_OP_SEND_LAST_INV, svc "_SEND_LAST_INV",		\
	   SEND | LAST | SRNIC_OPF_IETH | x, xl + 4),			\
	OP(base | SRNIC_OP_SEND_ONLY_INV, svc "_SEND_ONLY_INV",		\
	   SEND | ONLY | SRNIC_OPF_IETH | x, xl + 4),			\
	/* ATOMIC WRITE: a RETH, then its 8 bytes as payload (as rxe sends it). */ \
	OP(base | SRNIC_OP_ATOMIC_WRITE, svc "_ATOMIC_WRITE",		\
	   REQ | SRNIC_OPF_ATOMIC | ONLY | RETH | PAY | x, xl + 16),	\
	/* FLUSH: a FETH, then a RETH naming the range; no payload. */	\
	OP(base | SRNIC_OP_FLUSH, svc "_FLUSH",				\
	   REQ | ONLY | SRNIC_OPF_FETH | RETH | x, xl + 20)

#define XRC	SRNIC_OPF_XRCETH

const struct srnic_opcode_info srnic_opcode[256] = {
	SEND_OPS(SRNIC_OP_RC, "RC", 0, 0),
	ACKED_OPS(SRNIC_OP_RC, "RC", 0, 0),
	SEND_OPS(SRNIC_OP_UC, "UC", 0, 0),
	SEND_OPS(SRNIC_OP_XRC, "XRC", XRC, 4),
	ACKED_OPS(SRNIC_OP_XRC, "XRC", XRC, 4),
	OP(SRNIC_OP_UD_SEND_ONLY, "UD_SEND_ONLY",
	   SEND | ONLY | SRNIC_OPF_DETH, 8),
	OP(SRNIC_OP_UD_SEND_ONLY_IMM, "UD_SEND_ONLY_IMM",
	   SEND | ONLY | SRNIC_OPF_DETH | IMM, 12),
};
