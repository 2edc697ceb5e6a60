/* Stands in for the kernel header of this name: see srnic_kshim.h. */
#include "../srnic_kshim.h"
