// The module's kernel-independent headers, as the host tests see them (C
// linkage for what srnic_opcode.c and srnic_icrc.c define).
#ifndef SRNIC_TESTS_KERNEL_PURE_H
#define SRNIC_TESTS_KERNEL_PURE_H

extern "C" {
#include "srnic_hdr.h"
#include "srnic_psn.h"
#include "srnic_toeplitz.h"
#include "srnic_mtt.h"
#include "srnic_fault.h"
}

#endif
