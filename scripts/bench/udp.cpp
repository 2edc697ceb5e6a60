// srnic-bench-udp: what the wire between the two guests of `make bench` carries for small
// messages without RDMA, the limits of its 8-byte latency and message-rate figures
// (docs/bench.md).  UDP on the same link as RoCEv2, from user space through the kernel's stack:
//   srnic-bench-udp serve PORT             echoes pings, counts datagrams, until told to stop
//   srnic-bench-udp client PORT N S HOST   N ping-pongs of 8 B, both sides spinning on a
//                                          non-blocking socket as perftest's latency programs
//                                          spin on their memory or CQ; N more with blocking
//                                          receives; 8-B datagrams for S seconds, as fast as
//                                          they go; then stops the server
// The client prints key=value lines: udp_lat_typ, udp_lat_99 (spinning) and udp_lat_block_typ,
// udp_lat_block_99 in microseconds, half a round trip as perftest reports latency (typical is
// the median); udp_rate_mpps, the datagrams the server received a second, in millions.
#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

enum : char { kPing = 'P', kData = 'D', kCount = 'C', kStop = 'S' };

struct Msg {
	char type;
	char pad[7];
	uint64_t value;
};

double now() {
	return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

[[noreturn]] void die(const char *what) {
	perror(what);
	std::exit(1);
}

int udp_socket(const char *host, const char *port, bool bind_it) {
	addrinfo hints{}, *ai;
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_DGRAM;
	hints.ai_flags = bind_it ? AI_PASSIVE : 0;
	if (getaddrinfo(host, port, &hints, &ai))
		die("getaddrinfo");
	int fd = socket(ai->ai_family, SOCK_DGRAM, 0);
	if (fd < 0 || (bind_it ? bind(fd, ai->ai_addr, ai->ai_addrlen) :
				 connect(fd, ai->ai_addr, ai->ai_addrlen)))
		die(bind_it ? "bind" : "connect");
	freeaddrinfo(ai);
	return fd;
}

// The next message, spinning on a non-blocking receive or blocking; false after @timeout s.
bool receive(int fd, Msg *m, bool spin, double timeout) {
	double end = now() + timeout;
	for (;;) {
		ssize_t n = recv(fd, m, sizeof(*m), spin ? MSG_DONTWAIT : 0);
		if (n == ssize_t(sizeof(*m)))
			return true;
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			die("recv");
		if (now() > end)
			return false;
	}
}

void send_msg(int fd, char type, uint64_t value, char token = 0) {
	Msg m{};
	m.type = type;
	m.pad[0] = token;
	m.value = value;
	while (send(fd, &m, sizeof(m), 0) < 0)
		if (errno != ENOBUFS && errno != EAGAIN && errno != EINTR)
			die("send");
}

int serve(const char *port) {
	int fd = udp_socket(nullptr, port, true);
	uint64_t data = 0;
	for (;;) {
		Msg m;
		sockaddr_storage from;
		socklen_t len = sizeof(from);
		ssize_t n = recvfrom(fd, &m, sizeof(m), MSG_DONTWAIT, (sockaddr *)&from, &len);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n != ssize_t(sizeof(m)))
			die("recvfrom");
		if (m.type == kData) {
			data++;
			continue;
		}
		if (m.type == kCount) {
			m.value = data;
			data = 0;
		}
		sendto(fd, &m, sizeof(m), 0, (sockaddr *)&from, len);
		if (m.type == kStop)
			return 0;
	}
}

// N ping-pongs; prints the median and 99th percentile of half their round trips.
void latency(int fd, int n, bool spin, const char *key) {
	std::vector<double> half;
	for (uint64_t i = 0; half.size() < size_t(n); i++) {
		Msg m{};
		double t0 = now();
		m.value = ~i;
		send_msg(fd, kPing, i);
		// A lost ping or pong is sent again; only clean round trips count.
		while (receive(fd, &m, spin, 1.0) && m.value != i) {
		}
		if (m.value == i)
			half.push_back((now() - t0) / 2);
	}
	std::sort(half.begin(), half.end());
	printf("%s_typ=%.2f\n", key, half[half.size() / 2] * 1e6);
	printf("%s_99=%.2f\n", key, half[half.size() * 99 / 100] * 1e6);
}

void rate(int fd, double seconds) {
	Msg m;
	// Asking for the count zeroes it; the token tells the answers to the two questions apart.
	do
		send_msg(fd, kCount, 0, 1);
	while (!receive(fd, &m, true, 1.0) || m.type != kCount || m.pad[0] != 1);
	double t0 = now();
	while (now() - t0 < seconds)
		for (int i = 0; i < 64; i++)
			send_msg(fd, kData, 0);
	double dt = now() - t0;
	do
		send_msg(fd, kCount, 0, 2);
	while (!receive(fd, &m, true, 1.0) || m.type != kCount || m.pad[0] != 2);
	printf("udp_rate_mpps=%.4f\n", double(m.value) / dt / 1e6);
}

}  // namespace

int main(int argc, char **argv) {
	if (argc == 3 && !strcmp(argv[1], "serve"))
		return serve(argv[2]);
	if (argc != 6 || strcmp(argv[1], "client")) {
		fprintf(stderr, "usage: %s serve PORT | client PORT N SECONDS HOST\n", argv[0]);
		return 2;
	}
	int fd = udp_socket(argv[5], argv[2], false), n = atoi(argv[3]);
	latency(fd, n, true, "udp_lat");
	latency(fd, n, false, "udp_lat_block");
	rate(fd, atof(argv[4]));
	Msg m;
	do
		send_msg(fd, kStop, 0);
	while (!receive(fd, &m, true, 1.0) || m.type != kStop);
	return 0;
}
