// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/* The tracepoints' definitions: the events are in srnic_trace.h. */
#define CREATE_TRACE_POINTS
#include "srnic_trace.h"
