# srnic top-level build.  `make` builds the module, the provider and the tests;
# `make check` runs the host tests, then every VM suite in one boot.
KVER ?= $(shell scripts/kver.sh)
KDIR ?= /lib/modules/$(KVER)/build
BUILD ?= $(CURDIR)/build
CMAKE_BUILD := $(BUILD)/cmake
KSFT_INC := $(BUILD)/ksft/include
VM_TIMEOUT ?= 2400

.PHONY: all deps kernel user ksft-headers check check-debug check-host check-vm run bench \
	install uninstall clean

all: kernel user

deps:
	@scripts/deps.sh

kernel:
	$(MAKE) -C $(KDIR) M=$(CURDIR)/kernel modules

# kselftest_harness.h and its companions, from Debian's linux-source-6.12.
ksft-headers: $(KSFT_INC)/kselftest_harness.h
$(KSFT_INC)/kselftest_harness.h: scripts/ksft-headers.sh
	scripts/ksft-headers.sh $(KSFT_INC)

user: ksft-headers
	cmake -S . -B $(CMAKE_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DKSFT_INCLUDE_DIR=$(KSFT_INC) >/dev/null
	cmake --build $(CMAKE_BUILD) -j2

check: deps all
	scripts/check.sh

# Every VM suite on a debug guest kernel (KASAN, lockdep, UBSAN, kmemleak), built once and
# cached under build/kdebug (about 30-40 minutes on 2 cores the first time).
check-debug: deps all
	scripts/check-debug.sh

check-host: user
	cd $(CMAKE_BUILD) && ctest --output-on-failure

check-vm: all
	qemu/run --timeout $(VM_TIMEOUT) --module kernel/srnic.ko -- tests/vm/run-all.sh

# The main job: boot, create a device, show the standard tools on it.
run: deps all
	qemu/run --timeout 600 --module kernel/srnic.ko -- scripts/demo.sh

# srnic vs rxe, and the guest's limits, in one boot (docs/bench.md).  SMP=N sets the vCPUs.
bench: deps all
	SMP=$(SMP) scripts/bench-host.sh

install: user
	cmake --install $(CMAKE_BUILD)

uninstall:
	scripts/uninstall-provider.sh $(CMAKE_BUILD)

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR)/kernel clean
	rm -rf $(BUILD)
