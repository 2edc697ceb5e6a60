/* The host's uapi types, then the kernel-only names (srnic_kshim.h). */
#include_next <linux/types.h>
#include "../srnic_kshim.h"
