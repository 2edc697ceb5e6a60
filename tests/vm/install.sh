# `make install` and `make uninstall` as README documents them, in a fresh root: the host root
# mounted again (9p, read-only) under an overlay of its own, so nothing this VM did is in it
# (qemu/run's copy of srnic.ko included) and all the install writes lands in one upper directory.
# The module is built there by DKMS, loaded with modprobe, and a device made on it is used
# through the installed provider (no RDMAV_DRIVERS).  Sourced after tests/vm/lib.sh; defines
# run_install.  It unloads srnic first and leaves it unloaded.
INST=/tmp/inst
INST_ROOT=$INST/root
INST_UPPER=$INST/rw/upper

inst_mount() {
	mkdir -p $INST/host $INST/rw $INST_ROOT &&
	mount -t 9p -o ro,trans=virtio,version=9p2000.L,msize=512000,cache=loose hostroot2 $INST/host &&
	mount -t tmpfs tmpfs $INST/rw && mkdir $INST_UPPER $INST/rw/work &&
	mount -t overlay -o lowerdir=$INST/host,upperdir=$INST_UPPER,workdir=$INST/rw/work \
		overlay $INST_ROOT || return 1
	local m
	for m in proc sys dev dev/pts run; do mount --bind /$m $INST_ROOT/$m || return 1; done
	mount -t tmpfs tmpfs $INST_ROOT/tmp
}

inst_umount() {
	local m
	for m in tmp run dev/pts dev sys proc; do umount $INST_ROOT/$m 2>/dev/null; done
	umount $INST_ROOT $INST/rw $INST/host 2>/dev/null
}

# In the fresh root, with the environment a user's shell has (no RDMAV_DRIVERS).
inst_sh() { chroot $INST_ROOT env -u RDMAV_DRIVERS sh -c "cd $top && $1"; }

# ibv_rc_pingpong on device $1 in the fresh root: the server, then the client once it listens.
inst_pingpong() {
	local port=18515 spid i
	inst_sh "exec timeout 60 ibv_rc_pingpong -d $1 -g 0 -n 20 -p $port" >$INST/server.txt 2>&1 &
	spid=$!
	for i in $(seq 1 300); do
		_tools_listening $port && break
		kill -0 $spid 2>/dev/null || break
		sleep 0.1
	done
	inst_sh "timeout 60 ibv_rc_pingpong -d $1 -g 0 -n 20 -p $port 127.0.0.1" >$INST/client.txt 2>&1
	wait $spid && grep -q '20 iters' $INST/server.txt && grep -q '20 iters' $INST/client.txt ||
		{ sed 's/^/#   /' $INST/server.txt $INST/client.txt; return 1; }
}

# The module loaded is the file DKMS installed, and a device on it works through the provider.
inst_use() {
	local d=srnic_inst n=srinst0
	local where=/updates/srnic.ko
	[ "$INST_DKMS" = no ] || where=/updates/dkms/srnic.ko
	inst_sh "modinfo -n srnic" | grep -q "$where" &&
	[ "$(cat /sys/module/srnic/version)" = "$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$top/dkms.conf")" ] &&
	[ -n "$(cat /sys/module/srnic/srcversion)" ] &&
	[ "$(cat /sys/module/srnic/srcversion)" = "$(inst_sh 'modinfo -F srcversion srnic')" ] &&
	ip link add $n type veth peer name srinst1 && ip link set $n up && ip link set srinst1 up &&
	inst_sh "rdma link add $d type srnic netdev $n" && wait_gid $d &&
	inst_sh "ibv_devinfo -v -d $d" | grep -q 'state:.*PORT_ACTIVE' &&
	inst_pingpong $d
	local st=$?
	inst_sh "rdma link del $d"
	ip link del $n 2>/dev/null
	return $st
}

# After uninstall: no file of srnic's left in the root, and no module the system can load.
inst_clean() {
	local left
	left=$(find $INST_UPPER -path "$INST_UPPER$top" -prune -o -path "$INST_UPPER/tmp" -prune \
		-o -name '*srnic*' -print)
	[ -z "$left" ] || { echo "# left after make uninstall: $left"; return 1; }
	! inst_sh "modinfo srnic" >/dev/null 2>&1 &&
	! inst_sh "dkms status" | grep -q srnic
}

# DKMS registers the source make install would give it (scripts/install.sh), and forgets it.
inst_dkms_add() {
	local v src
	v=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$top/dkms.conf")
	src=/usr/src/srnic-$v
	inst_sh "mkdir -p $src/kernel $src/include && cp dkms.conf $src/ &&
		 cp kernel/Kbuild kernel/*.[ch] $src/kernel/ && cp include/srnic-abi.h $src/include/ &&
		 dkms add -m srnic -v $v >/tmp/dkms.log 2>&1 &&
		 dkms status -m srnic -v $v | grep -q 'srnic/$v: added' &&
		 dkms remove -m srnic -v $v --all >>/tmp/dkms.log 2>&1 && rm -rf $src" ||
		{ inst_sh "cat /tmp/dkms.log" | sed 's/^/#   /'; return 1; }
}

run_install() {
	local start=$SECONDS
	run_check "a fresh root for the install (the host root again, under its own overlay)" inst_mount ||
		{ inst_umount; return; }
	# It has headers only for Debian's kernels (not for make check-debug's).
	if [ ! -e "$INST_ROOT/lib/modules/$(uname -r)/build" ]; then
		echo "ok - make install / make uninstall # SKIP no headers for $(uname -r) in the host root"
		SKIPPED=$((SKIPPED + 1))
		inst_umount
		return
	fi
	if [ -d /sys/module/srnic ]; then
		rdma link del "$SRNIC_DEV" 2>/dev/null
		run_check "srnic unloads before the install" rmmod srnic || { inst_umount; return; }
	fi
	# README's "Use" without installing: make's module for the running kernel.
	run_check "insmod build/module/\$(uname -r)/srnic.ko, as make leaves it for this kernel" \
		sh -c "KVER=$(uname -r) $top/scripts/module-running.sh /tmp/modb >/dev/null &&
		       insmod /tmp/modb/module/$(uname -r)/srnic.ko && rmmod srnic"
	# DKMS builds the module from its source under emulation (about ten minutes): the full tier.
	# The short tier installs the module the tree built (DKMS=no) and checks that DKMS takes
	# dkms.conf and the source as make install lays them out.
	if [ "$SRNIC_TIER" = full ]; then
		INST_DKMS=yes
		run_check "make install: the provider, and srnic.ko built by DKMS for the running kernel" \
			inst_sh "make install >/tmp/install.log 2>&1 || { tail -n 40 /tmp/install.log; false; }"
	else
		INST_DKMS=no
		run_check "dkms add takes dkms.conf and the source as make install lays them out" inst_dkms_add
		run_check "make install DKMS=no: the provider, and the tree's srnic.ko for the running kernel" \
			inst_sh "make install DKMS=no >/tmp/install.log 2>&1 || { tail -n 40 /tmp/install.log; false; }"
	fi
	run_check "modprobe srnic loads the installed module" inst_sh "modprobe srnic"
	run_check "rdma link add, ibv_devinfo and ibv_rc_pingpong through the installed provider" inst_use
	run_check "make uninstall (srnic unloaded first)" \
		inst_sh "modprobe -r srnic && make uninstall >/tmp/uninstall.log 2>&1 ||
			 { cat /tmp/uninstall.log; false; }"
	run_check "make uninstall leaves no srnic file and no loadable module" inst_clean
	inst_umount
	echo "# install test: $((SECONDS - start)) s"
}
