// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The RoCEv2 opcodes srnic sends and receives (IBTA vol. 1 table 38), as a
 * table: which extension headers follow the BTH, in wire order, and where
 * the packet sits in its message.  A received opcode without
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
/* The connected opcodes, for RC (@base 0x00) or UC (0x20). */
#define SEND_OPS(base, svc)						\
	OP(base | SRNIC_OP_SEND_FIRST, svc "_SEND_FIRST", SEND | FIRST, 0),	\
	OP(base | SRNIC_OP_SEND_MIDDLE, svc "_SEND_MIDDLE", SEND, 0),	\
	OP(base | SRNIC_OP_SEND_LAST, svc "_SEND_LAST", SEND | LAST, 0),	\
	OP(base | SRNIC_OP_SEND_LAST_IMM, svc "_SEND_LAST_IMM",		\
	   SEND | LAST | IMM, 4),						\
	OP(base | SRNIC_OP_SEND_ONLY, svc "_SEND_ONLY", SEND | ONLY, 0),	\
	OP(base | SRNIC_OP_SEND_ONLY_IMM, svc "_SEND_ONLY_IMM",		\
	   SEND | ONLY | IMM, 4),						\
	OP(base | SRNIC_OP_WRITE_FIRST, svc "_WRITE_FIRST",		\
	   WRITE | FIRST | RETH, 16),					\
	OP(base | SRNIC_OP_WRITE_MIDDLE, svc "_WRITE_MIDDLE", WRITE, 0),	\
	OP(base | SRNIC_OP_WRITE_LAST, svc "_WRITE_LAST", WRITE | LAST, 0),	\
	OP(base | SRNIC_OP_WRITE_LAST_IMM, svc "_WRITE_LAST_IMM",	\
	   WRITE | LAST | IMM, 4),						\
	OP(base | SRNIC_OP_WRITE_ONLY, svc "_WRITE_ONLY",			\
	   WRITE | ONLY | RETH, 16),					\
	OP(base | SRNIC_OP_WRITE_ONLY_IMM, svc "_WRITE_ONLY_IMM",		\
	   WRITE | ONLY | RETH | IMM, 20)

const struct srnic_opcode_info srnic_opcode[256] = {
	SEND_OPS(SRNIC_OP_RC, "RC"),
	OP(SRNIC_OP_READ_REQUEST, "RC_READ_REQUEST",
	   REQ | SRNIC_OPF_READ | ONLY | RETH, 16),
	OP(SRNIC_OP_READ_RESP_FIRST, "RC_READ_RESPONSE_FIRST",
	   RESP | SRNIC_OPF_READ | PAY | FIRST | AETH, 4),
	OP(SRNIC_OP_READ_RESP_MIDDLE, "RC_READ_RESPONSE_MIDDLE",
	   RESP | SRNIC_OPF_READ | PAY, 0),
	OP(SRNIC_OP_READ_RESP_LAST, "RC_READ_RESPONSE_LAST",
	   RESP | SRNIC_OPF_READ | PAY | LAST | AETH, 4),
	OP(SRNIC_OP_READ_RESP_ONLY, "RC_READ_RESPONSE_ONLY",
	   RESP | SRNIC_OPF_READ | PAY | ONLY | AETH, 4),
	OP(SRNIC_OP_ACK, "RC_ACKNOWLEDGE", RESP | ONLY | AETH, 4),
	OP(SRNIC_OP_ATOMIC_ACK, "RC_ATOMIC_ACKNOWLEDGE",
	   RESP | SRNIC_OPF_ATOMIC | ONLY | AETH | SRNIC_OPF_ATMACK, 12),
	OP(SRNIC_OP_CMP_SWAP, "RC_COMPARE_SWAP",
	   REQ | SRNIC_OPF_ATOMIC | ONLY | SRNIC_OPF_ATMETH, 28),
	OP(SRNIC_OP_FETCH_ADD, "RC_FETCH_ADD",
	   REQ | SRNIC_OPF_ATOMIC | ONLY | SRNIC_OPF_ATMETH, 28),
	OP(SRNIC_OP_SEND_LAST_INV, "RC_SEND_LAST_INV",
	   SEND | LAST | SRNIC_OPF_IETH, 4),
	OP(SRNIC_OP_SEND_ONLY_INV, "RC_SEND_ONLY_INV",
	   SEND | ONLY | SRNIC_OPF_IETH, 4),
	/* ATOMIC WRITE: a RETH, then its 8 bytes as payload (as rxe sends it). */
	OP(SRNIC_OP_ATOMIC_WRITE, "RC_ATOMIC_WRITE",
	   REQ | SRNIC_OPF_ATOMIC | ONLY | RETH | PAY, 16),
	SEND_OPS(SRNIC_OP_UC, "UC"),
	OP(SRNIC_OP_UD_SEND_ONLY, "UD_SEND_ONLY",
	   SEND | ONLY | SRNIC_OPF_DETH, 8),
	OP(SRNIC_OP_UD_SEND_ONLY_IMM, "UD_SEND_ONLY_IMM",
	   SEND | ONLY | SRNIC_OPF_DETH | IMM, 12),
};
