# srnic top-level build.  `make` builds the module, the provider and the tests;
# `make check` runs the host tests, then every VM suite in one boot, then two guests on one wire,
# with the short tier's budgets (what CI runs); `make check-full` runs the same with the long
# budgets and the repeated suites (docs/testing.md).
KVER ?= $(shell scripts/kver.sh)
KDIR ?= /lib/modules/$(KVER)/build
BUILD ?= $(CURDIR)/build
CMAKE_BUILD := $(BUILD)/cmake
# The kselftest tree the VM suites are built in (scripts/ksft-tree.sh).
KSFT_TREE := $(BUILD)/ksft/linux
KSFT := $(KSFT_TREE)/tools/testing/selftests
VM_TIMEOUT ?= 2400

.PHONY: all deps kernel user ksft module check check-full check-debug check-debug-report check-host \
	check-vm run bench \
	install uninstall clean

all: kernel user ksft module

deps:
	@scripts/deps.sh

kernel:
	$(MAKE) -C $(KDIR) M=$(CURDIR)/kernel modules
	$(MAKE) -C $(KDIR) M=$(CURDIR)/tests/vm/kverbs modules

# srnic.ko for the running kernel too, when it is not the guest's and its headers are installed
# (build/module/$(uname -r)/srnic.ko either way); says which module is for which kernel.
module: kernel
	@KVER=$(KVER) scripts/module-running.sh $(BUILD)

# The VM suites, a kselftest target (tests/vm/Makefile), built as the kernel builds its own:
# placed in Debian's linux-source-6.12 selftests, then `make TARGETS=...` there.
ksft:
	scripts/ksft-tree.sh $(KSFT_TREE)
	$(MAKE) -C $(KSFT) -j2 TARGETS=drivers/infiniband/srnic

user:
	cmake -S . -B $(CMAKE_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(CMAKE_BUILD) -j2

check: deps all
	SRNIC_TIER=short scripts/check.sh

check-full: deps all
	SRNIC_TIER=full scripts/check.sh

# Every VM suite on a debug guest kernel (KASAN, lockdep, UBSAN, kmemleak), built once and
# cached under build/kdebug (15-30 minutes on 2 cores the first time), in the seven parts of
# scripts/lib/debug-parts.sh: PART=K/7 runs one, and records its result with the commit
# (check-debug-report prints them).
check-debug: deps all
	PART=$(PART) scripts/check-debug.sh

check-debug-report:
	@scripts/check-debug-report.sh

check-host: user
	cd $(CMAKE_BUILD) && ctest --output-on-failure

check-vm: all
	qemu/run --timeout $(VM_TIMEOUT) --module kernel/srnic.ko --nic alone -- tests/vm/run-all.sh

# The main job: boot, create a device, show the standard tools on it.
run: deps all
	qemu/run --timeout 600 --module kernel/srnic.ko -- scripts/demo.sh

# srnic vs rxe, and the guest's limits, in one boot (docs/bench.md).  SMP=N sets the vCPUs;
# BASE=PATH.ko adds an A/B of this build's srnic against that module.
bench: deps all
	SMP=$(SMP) BASE=$(BASE) scripts/bench-host.sh

# The provider and srnic.ko for the running kernel (through DKMS when it is installed;
# DKMS=no installs the module built here instead).
install: user
	DKMS=$(DKMS) scripts/install.sh $(BUILD)

uninstall:
	scripts/uninstall.sh $(BUILD)

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR)/kernel clean
	-$(MAKE) -C $(KDIR) M=$(CURDIR)/tests/vm/kverbs clean
	rm -rf $(BUILD)
