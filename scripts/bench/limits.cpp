// srnic-bench-limits: what this machine (the TCG guest) can do at best, as
// key=value lines on stdout, for `make bench` (docs/bench.md):
//   limit.pvr_64k_mbs   process_vm_readv of 64 KiB from another process, MB/s
//   limit.pvr_8b_us     process_vm_readv of 8 B, microseconds per call
//   limit.memcpy_64k_mbs, limit.memcpy_64m_mbs   user-space memcpy, MB/s
//   limit.movsb_64k_mbs "rep movsb" of 64 KiB, the kernel's memcpy/copy_to_user; under TCG
//                       it is one helper call and far faster than glibc's vector memcpy: the
//                       bound for an engine copying between pinned pages
//   limit.copy64_64k_mbs  64 KiB copied 8 bytes at a time, 4 per iteration: the shape of the
//                       kernel's memcpy without ERMS/FSRM (QEMU's default CPU models), which
//                       TCG translates to plain host moves; often the fastest copy in the guest
//   limit.shm_oneway_us shared-memory ping-pong between two processes, one way
//   limit.syscall_us    a null system call (getppid)
//   limit.tsc_mhz       the TSC's rate against CLOCK_MONOTONIC: perftest times with the TSC and
//                       divides by /proc/cpuinfo's "cpu MHz"; under TCG the two can disagree
// Each probe runs for about PROBE_SECONDS of wall time.
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr double kProbeSeconds = 0.5;

double now() {
	return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Runs fn(n) with growing n until it takes kProbeSeconds; returns seconds per unit.
template <typename F> double per_op(F fn) {
	for (uint64_t n = 1;; n *= 2) {
		double t0 = now();
		fn(n);
		double dt = now() - t0;
		if (dt >= kProbeSeconds || n >= (1ull << 40))
			return dt / double(n);
	}
}

// A child process that holds a buffer and waits; the parent reads it.
struct Peer {
	pid_t pid = -1;
	int pipe_w = -1;
	explicit Peer(void *buf, size_t len) {
		int fds[2];
		if (pipe(fds))
			std::exit(1);
		memset(buf, 0x5a, len);
		pid = fork();
		if (pid == 0) {
			close(fds[1]);
			char c;
			while (read(fds[0], &c, 1) > 0) {
			}
			_exit(0);
		}
		close(fds[0]);
		pipe_w = fds[1];
	}
	~Peer() {
		close(pipe_w);
		waitpid(pid, nullptr, 0);
	}
};

double pvr_seconds(size_t len) {
	std::vector<char> src(len), dst(len);
	Peer peer(src.data(), len);
	return per_op([&](uint64_t n) {
		for (uint64_t i = 0; i < n; i++) {
			iovec l{dst.data(), len}, r{src.data(), len};
			if (process_vm_readv(peer.pid, &l, 1, &r, 1, 0) != ssize_t(len)) {
				perror("process_vm_readv");
				std::exit(1);
			}
		}
	});
}

double memcpy_seconds(size_t len) {
	std::vector<char> src(len, 1), dst(len);
	return per_op([&](uint64_t n) {
		for (uint64_t i = 0; i < n; i++) {
			memcpy(dst.data(), src.data(), len);
			asm volatile("" : : "r"(dst.data()) : "memory");
		}
	});
}

double movsb_seconds(size_t len) {
	std::vector<char> src(len, 1), dst(len);
	return per_op([&](uint64_t n) {
		for (uint64_t i = 0; i < n; i++) {
			void *d = dst.data();
			const void *sp = src.data();
			size_t c = len;
			asm volatile("rep movsb" : "+D"(d), "+S"(sp), "+c"(c) : : "memory");
		}
	});
}

__attribute__((noinline, optimize("no-tree-vectorize", "no-tree-loop-distribute-patterns")))
void copy64(uint64_t *d, const uint64_t *s, size_t words) {
	for (size_t i = 0; i < words; i += 4) {
		uint64_t a = s[i], b = s[i + 1], c = s[i + 2], e = s[i + 3];
		d[i] = a;
		d[i + 1] = b;
		d[i + 2] = c;
		d[i + 3] = e;
	}
}

double copy64_seconds(size_t len) {
	std::vector<uint64_t> src(len / 8, 1), dst(len / 8);
	return per_op([&](uint64_t n) {
		for (uint64_t i = 0; i < n; i++) {
			copy64(dst.data(), src.data(), len / 8);
			asm volatile("" : : "r"(dst.data()) : "memory");
		}
	});
}

// One way of a ping-pong through a MAP_SHARED page, both sides spinning.
double shm_oneway_seconds() {
	void *p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		std::exit(1);
	auto *flag = new (p) std::atomic<uint64_t>(0);
	constexpr uint64_t kStop = ~0ull;
	pid_t pid = fork();
	if (pid == 0) {
		uint64_t seen = 0;
		for (;;) {
			uint64_t v;
			while ((v = flag->load(std::memory_order_acquire)) == seen || (v & 1) == 0) {
				if (v == kStop)
					_exit(0);
			}
			if (v == kStop)
				_exit(0);
			seen = v + 1;
			flag->store(seen, std::memory_order_release);
		}
	}
	uint64_t v = 0;
	double s = per_op([&](uint64_t n) {
		for (uint64_t i = 0; i < n; i++) {
			flag->store(++v, std::memory_order_release);	// odd: ping
			++v;
			while (flag->load(std::memory_order_acquire) != v) {
			}
		}
	});
	flag->store(kStop, std::memory_order_release);
	waitpid(pid, nullptr, 0);
	munmap(p, 4096);
	return s / 2;
}

double syscall_seconds() {
	return per_op([](uint64_t n) {
		for (uint64_t i = 0; i < n; i++)
			syscall(SYS_getppid);
	});
}

double tsc_mhz() {
	unsigned lo, hi;
	asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
	uint64_t c0 = (uint64_t(hi) << 32) | lo;
	double t0 = now();
	while (now() - t0 < kProbeSeconds) {
	}
	asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
	uint64_t c1 = (uint64_t(hi) << 32) | lo;
	return double(c1 - c0) / (now() - t0) / 1e6;
}

}  // namespace

int main() {
	const double mb = 1048576;	// MB as perftest counts it (2^20 B)
	printf("limit.pvr_64k_mbs=%.1f\n", 65536 / pvr_seconds(65536) / mb);
	printf("limit.pvr_8b_us=%.3f\n", pvr_seconds(8) * 1e6);
	printf("limit.memcpy_64k_mbs=%.1f\n", 65536 / memcpy_seconds(65536) / mb);
	printf("limit.memcpy_64m_mbs=%.1f\n", double(64 << 20) / memcpy_seconds(64 << 20) / mb);
	printf("limit.movsb_64k_mbs=%.1f\n", 65536 / movsb_seconds(65536) / mb);
	printf("limit.copy64_64k_mbs=%.1f\n", 65536 / copy64_seconds(65536) / mb);
	printf("limit.shm_oneway_us=%.3f\n", shm_oneway_seconds() * 1e6);
	printf("limit.syscall_us=%.3f\n", syscall_seconds() * 1e6);
	printf("limit.tsc_mhz=%.1f\n", tsc_mhz());
	return 0;
}
