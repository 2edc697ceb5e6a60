// srnic-bench-report RAW OUTDIR: reads the key=value lines the guest wrote
// (scripts/bench.sh, srnic-bench-limits) and writes the benchmark's table
// (stdout and OUTDIR/table.md), OUTDIR/results.csv, OUTDIR/results.json and
// OUTDIR/chart.svg.  Keys: srnic.<fig>, rxe.<fig>, limit.<probe>, meta.<x>,
// <dev>.sweep.<bytes> (ib_write_bw -a, CSV and JSON only), wire.<pair>.<fig> and
// wire.tcp_iperf3, wire.udp_* (two guests on one wire: scripts/bench-wire.sh, srnic-bench-udp),
// scale.<dev>.<idle>.<fig> (srnic-bench-scale).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Opt = std::optional<double>;

struct Figure {
	std::string key, name, unit;
	bool lower_better;
	std::string limit;	// limit.<key>, or "" for none
	double limit_scale;	// the limit is limit_scale * limit.<key> ...
	bool limit_inverse;	// ... or limit_scale / limit.<key>
};

// The figures, in table order.  A bandwidth's limit is one kernel-style copy
// (8-byte moves, 64 KiB: limits.cpp); the message rate's one shared-memory hand-off per
// message (1 / one way of the ping-pong).  A latency's limit is the
// shared-memory ping-pong: one way for the *_lat programs that report half a round trip
// (write, send), a round trip for read and atomic.
const std::vector<Figure> kFigures = {
	{"write_bw_64k", "ib_write_bw -s 65536", "MB/s", false, "copy64_64k_mbs", 1, false},
	{"read_bw_64k", "ib_read_bw -s 65536", "MB/s", false, "copy64_64k_mbs", 1, false},
	{"write_bw_8qp_64k", "ib_write_bw -q 8 -s 65536", "MB/s", false, "copy64_64k_mbs", 1, false},
	{"msg_rate_8b", "ib_write_bw -s 8 -l 16 -Q 16", "Mpps", false, "shm_oneway_us", 1, true},
	{"write_lat_typ", "ib_write_lat -s 8 typical", "us", true, "shm_oneway_us", 1, false},
	{"write_lat_99", "ib_write_lat -s 8 99%", "us", true, "shm_oneway_us", 1, false},
	{"send_lat_typ", "ib_send_lat -s 8 typical", "us", true, "shm_oneway_us", 1, false},
	{"send_lat_99", "ib_send_lat -s 8 99%", "us", true, "shm_oneway_us", 1, false},
	{"read_lat_typ", "ib_read_lat -s 8 typical", "us", true, "shm_oneway_us", 2, false},
	{"read_lat_99", "ib_read_lat -s 8 99%", "us", true, "shm_oneway_us", 2, false},
	{"atomic_lat_typ", "ib_atomic_lat typical", "us", true, "shm_oneway_us", 2, false},
	{"atomic_lat_99", "ib_atomic_lat 99%", "us", true, "shm_oneway_us", 2, false},
	{"write_bw_8qp_64k_1eng", "ib_write_bw -q 8 -s 65536, 1 engine thread", "MB/s", false,
	 "copy64_64k_mbs", 1, false},
	{"fair_victim_p50", "8 B WRITE beside 128 MiB SENDs, median", "us", true, "", 1, false},
	{"fair_victim_p99", "8 B WRITE beside 128 MiB SENDs, 99%", "us", true, "", 1, false},
	{"idle_cpu_pct", "engine CPU, idle 5 s, QP open", "% CPU", true, "", 1, false},
};

// The wire's figures (scripts/bench-wire.sh), for each pair of devices across it.  Their limits
// are what the link carries without RDMA: TCP for bandwidth (iperf3), 8-byte UDP datagrams for
// the message rate, and a UDP ping-pong with both sides spinning for latency (one way; a round
// trip for READ).  The limit keys are wire.<key>.
const std::vector<Figure> kWireFigures = {
	{"write_bw_64k", "ib_write_bw -s 65536", "MB/s", false, "tcp_iperf3", 1, false},
	{"read_bw_64k", "ib_read_bw -s 65536", "MB/s", false, "tcp_iperf3", 1, false},
	{"write_bw_8qp_64k", "ib_write_bw -q 8 -s 65536", "MB/s", false, "tcp_iperf3", 1, false},
	{"msg_rate_8b", "ib_write_bw -s 8 -l 16 -Q 16", "Mpps", false, "udp_rate_mpps", 1, false},
	{"write_lat_typ", "ib_write_lat -s 8 typical", "us", true, "udp_lat_typ", 1, false},
	{"write_lat_99", "ib_write_lat -s 8 99%", "us", true, "udp_lat_99", 1, false},
	{"send_lat_typ", "ib_send_lat -s 8 typical", "us", true, "udp_lat_typ", 1, false},
	{"send_lat_99", "ib_send_lat -s 8 99%", "us", true, "udp_lat_99", 1, false},
	{"read_lat_typ", "ib_read_lat -s 8 typical", "us", true, "udp_lat_typ", 2, false},
	{"read_lat_99", "ib_read_lat -s 8 99%", "us", true, "udp_lat_99", 2, false},
};
const char *const kWirePairs[] = {"rxe_rxe", "srnic_rxe", "srnic_srnic"};

struct Row {
	const Figure *f;
	Opt srnic, rxe, ratio, limit, fraction;
};

std::map<std::string, std::string> raw;

Opt get(const std::string &key) {
	auto it = raw.find(key);
	if (it == raw.end() || it->second.empty())
		return std::nullopt;
	char *end;
	double v = strtod(it->second.c_str(), &end);
	if (*end != '\0' || !std::isfinite(v))
		return std::nullopt;
	return v;
}

std::string fmt(Opt v, int prec = -1) {
	if (!v)
		return "n/a";
	double a = std::fabs(*v);
	if (prec < 0)
		prec = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3;
	char buf[64];
	snprintf(buf, sizeof buf, "%.*f", prec, *v);
	return buf;
}

// A fraction with three significant digits (0.000260 rather than 0.00).
std::string frac(Opt v) {
	if (!v)
		return "n/a";
	char buf[64];
	snprintf(buf, sizeof buf, "%.3g", *v);
	return buf;
}

std::string json_num(Opt v) {
	if (!v)
		return "null";
	char buf[64];
	snprintf(buf, sizeof buf, "%.6g", *v);
	return buf;
}

std::string json_str(const std::string &s) {
	std::string o = "\"";
	for (char c : s) {
		if (c == '"' || c == '\\')
			o += '\\';
		if (static_cast<unsigned char>(c) < 0x20)
			continue;
		o += c;
	}
	return o + "\"";
}

std::string xml(const std::string &s) {
	std::string o;
	for (char c : s)
		o += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
	return o;
}

Row make_row(const Figure &f) {
	Row r{&f, get("srnic." + f.key), get("rxe." + f.key), {}, {}, {}};
	if (r.srnic && r.rxe && *r.rxe != 0)
		r.ratio = *r.srnic / *r.rxe;
	if (!f.limit.empty()) {
		Opt l = get("limit." + f.limit);
		if (l && *l > 0)
			r.limit = f.limit_inverse ? f.limit_scale / *l : f.limit_scale * *l;
	}
	// The fraction of the limit reached: 1 is at the limit.
	if (r.limit && r.srnic && *r.srnic > 0)
		r.fraction = f.lower_better ? *r.limit / *r.srnic : *r.srnic / *r.limit;
	return r;
}

void write_svg(const std::string &path, const std::vector<Row> &rows, const std::string &title) {
	const int label_w = 300, bar_w = 420, row_h = 34, top = 50;
	int h = top + row_h * int(rows.size()) + 20;
	std::ofstream o(path);
	o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << label_w + bar_w + 120
	  << "\" height=\"" << h << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
	  << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
	  << "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">" << xml(title) << "</text>\n"
	  << "<rect x=\"" << label_w << "\" y=\"30\" width=\"12\" height=\"10\" fill=\"#1f77b4\"/>"
	  << "<text x=\"" << label_w + 16 << "\" y=\"39\">srnic</text>\n"
	  << "<rect x=\"" << label_w + 70 << "\" y=\"30\" width=\"12\" height=\"10\" fill=\"#ff7f0e\"/>"
	  << "<text x=\"" << label_w + 86 << "\" y=\"39\">rxe</text>"
	  << "<text x=\"" << label_w + 130 << "\" y=\"39\" fill=\"#555\">(bars scaled per figure)</text>\n";
	for (size_t i = 0; i < rows.size(); i++) {
		const Row &r = rows[i];
		int y = top + row_h * int(i);
		double mx = std::max(r.srnic.value_or(0), r.rxe.value_or(0));
		o << "<text x=\"10\" y=\"" << y + 18 << "\">" << xml(r.f->name + " (" + r.f->unit + ")")
		  << "</text>\n";
		const Opt vals[2] = {r.srnic, r.rxe};
		const char *colors[2] = {"#1f77b4", "#ff7f0e"};
		for (int k = 0; k < 2; k++) {
			int by = y + 4 + k * 13;
			double w = vals[k] && mx > 0 ? bar_w * *vals[k] / mx : 0;
			o << "<rect x=\"" << label_w << "\" y=\"" << by << "\" width=\"" << fmt(w, 1)
			  << "\" height=\"12\" fill=\"" << colors[k] << "\"/>"
			  << "<text x=\"" << label_w + w + 4 << "\" y=\"" << by + 10 << "\" font-size=\"10\">"
			  << fmt(vals[k]) << "</text>\n";
		}
	}
	o << "</svg>\n";
}

// The median of <pre><round>.<side>.<key> over the rounds that have it: one round disturbed by
// the shared host moves a mean by more than the 5 % the A/B is read for.
Opt ab_median(const std::vector<std::string> &order, const std::string &pre,
	      const std::string &side, const std::string &key) {
	std::vector<double> v;
	for (const auto &k : order) {
		auto dot = k.find('.', pre.size());
		if (k.rfind(pre, 0) != 0 || dot == std::string::npos ||
		    k.substr(dot + 1) != side + "." + key)
			continue;
		if (Opt x = get(k))
			v.push_back(*x);
	}
	if (v.empty())
		return std::nullopt;
	std::sort(v.begin(), v.end());
	size_t m = v.size() / 2;
	return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// make bench BASE=...: this build against the base module, each the median of its rounds
// (keys <pre><round>.<side>.<figure>, figures of @figs); the change is signed so that negative
// is worse, whichever way the figure improves.
std::string ab_table(const std::vector<std::string> &order, const std::string &pre,
		     const std::vector<Figure> &figs, const std::string &what) {
	std::ostringstream t;
	int rounds = 0;
	for (const auto &k : order)
		if (k.rfind(pre, 0) == 0)
			rounds = std::max(rounds, atoi(k.c_str() + pre.size()));
	if (!rounds)
		return "";
	t << "\nA/B" << what << ": this build (new) against BASE, same boot, alternating, median of "
	  << rounds << " rounds\n\n| figure | unit | new | base | change |\n|---|---|---:|---:|---:|\n";
	for (const Figure &f : figs) {
		Opt a = ab_median(order, pre, "new", f.key), b = ab_median(order, pre, "base", f.key), ch;
		if (!a && !b)
			continue;
		if (a && b && *b != 0)
			ch = (f.lower_better ? *b / *a - 1 : *a / *b - 1) * 100;
		char pct[32] = "n/a";
		if (ch)
			snprintf(pct, sizeof pct, "%+.1f %%", *ch);
		t << "| " << f.name << " | " << f.unit << " | " << fmt(a) << " | " << fmt(b) << " | "
		  << pct << " |\n";
	}
	return t.str();
}

// The scale table (srnic-bench-scale): the ping-pong's one-way latency and the 8-byte WRITE rate
// beside idle connected QPs, srnic and rxe, and the kernel memory per idle QP.  Empty when it
// did not run.
std::string scale_table() {
	static const char *kIdle[][2] = {{"0", "none"},      {"1024", "1,024"},
					 {"4096", "4,096"},  {"16384", "16,384"},
					 {"p32x512", "16,384 in 32 processes of 512"}};
	static const char *kFig[] = {"lat_p50_us", "lat_p99_us", "write_rate", "kmem_per_qp_b"};
	std::ostringstream t;
	bool any = false;

	t << "\nScale: an 8 B WRITE WITH IMM ping-pong (one way) and a 16-deep 8 B WRITE stream beside"
	     " idle connected QPs\n\n| idle QPs | srnic latency µs, median (p99) | srnic WRITEs/s"
	     " | rxe latency µs, median (p99) | rxe WRITEs/s | kernel B per idle QP, srnic / rxe |\n"
	     "|---|---:|---:|---:|---:|---:|\n";
	for (const auto &idle : kIdle) {
		Opt v[2][4];
		for (int d = 0; d < 2; d++)
			for (int f = 0; f < 4; f++) {
				v[d][f] = get(std::string("scale.") + (d ? "rxe." : "srnic.") + idle[0] + "." +
					      kFig[f]);
				any |= v[d][f].has_value();
			}
		t << "| " << idle[1];
		for (int d = 0; d < 2; d++)
			t << " | " << fmt(v[d][0]) << " (" << fmt(v[d][1]) << ") | " << fmt(v[d][2]);
		t << " | " << fmt(v[0][3]) << " / " << fmt(v[1][3]) << " |\n";
	}
	return any ? t.str() : "";
}

// The wire's table: each figure for rxe with rxe, srnic (requester) with rxe, srnic with srnic,
// and srnic's with srnic against rxe's with rxe.  Empty when the wire did not run.
std::string wire_table() {
	std::ostringstream t;
	bool any = false;
	t << "\nAcross the wire (two guests, a the requester; link MTU "
	  << fmt(get("wire.link_mtu")) << " B, path MTU " << fmt(get("wire.path_mtu"))
	  << " B; iperf3 TCP " << fmt(get("wire.tcp_iperf3")) << " MB/s)\n\n"
	  << "| figure | unit | rxe-rxe | srnic-rxe | srnic-srnic | srnic-srnic/rxe-rxe"
	  << " | wire limit | srnic-srnic/limit |\n"
	  << "|---|---|---:|---:|---:|---:|---:|---:|\n";
	for (const Figure &f : kWireFigures) {
		Opt v[3], ratio, limit = get("wire." + f.limit), fraction;
		for (int i = 0; i < 3; i++) {
			v[i] = get(std::string("wire.") + kWirePairs[i] + "." + f.key);
			any = any || v[i];
		}
		if (v[0] && v[2] && *v[0] != 0)
			ratio = *v[2] / *v[0];
		if (limit)
			limit = *limit * f.limit_scale;
		if (limit && v[2] && *limit != 0 && *v[2] != 0)
			fraction = f.lower_better ? *limit / *v[2] : *v[2] / *limit;
		t << "| " << f.name << " | " << f.unit << " | " << fmt(v[0]) << " | " << fmt(v[1])
		  << " | " << fmt(v[2]) << " | " << fmt(ratio, 2) << " | " << fmt(limit) << " | "
		  << frac(fraction) << " |\n";
	}
	return any || get("wire.tcp_iperf3") ? t.str() : "";
}

}  // namespace

int main(int argc, char **argv) {
	if (argc != 3) {
		std::cerr << "usage: srnic-bench-report RAW OUTDIR\n";
		return 2;
	}
	std::ifstream in(argv[1]);
	if (!in) {
		std::cerr << "srnic-bench-report: cannot read " << argv[1] << "\n";
		return 1;
	}
	std::vector<std::string> order;
	for (std::string line; std::getline(in, line);) {
		auto eq = line.find('=');
		if (eq == std::string::npos || eq == 0)
			continue;
		std::string k = line.substr(0, eq);
		if (!raw.count(k))
			order.push_back(k);
		raw[k] = line.substr(eq + 1);
	}
	const std::string out = argv[2];

	std::vector<Row> rows;
	for (const Figure &f : kFigures)
		rows.push_back(make_row(f));

	// ib_write_bw -a: sizes present for either device.
	std::map<long, std::pair<Opt, Opt>> sweep;
	for (const auto &k : order)
		for (int d = 0; d < 2; d++) {
			std::string pre = d ? "rxe.sweep." : "srnic.sweep.";
			if (k.rfind(pre, 0) == 0) {
				long size = atol(k.c_str() + pre.size());
				(d ? sweep[size].second : sweep[size].first) = get(k);
			}
		}

	// The table (Markdown).
	std::ostringstream t;
	std::string meta;
	for (const char *m : {"kernel", "smp", "date", "cpuinfo_mhz"})
		if (raw.count(std::string("meta.") + m))
			meta += std::string(meta.empty() ? "" : ", ") + m + " " + raw[std::string("meta.") + m];
	t << "srnic vs rxe (" << meta << ")\n\n";
	t << "| figure | unit | srnic | rxe | srnic/rxe | limit | srnic/limit |\n"
	  << "|---|---|---:|---:|---:|---:|---:|\n";
	for (const Row &r : rows)
		t << "| " << r.f->name << " | " << r.f->unit << " | " << fmt(r.srnic) << " | "
		  << fmt(r.rxe) << " | " << fmt(r.ratio, 2) << " | " << (r.limit ? fmt(r.limit) : "-")
		  << " | " << (r.limit ? frac(r.fraction) : "-") << " |\n";
	t << "\nlimits:";
	for (const auto &k : order)
		if (k.rfind("limit.", 0) == 0)
			t << " " << k.substr(6) << "=" << raw[k];
	t << "\n";
	t << ab_table(order, "ab.", kFigures, "");
	t << scale_table();
	t << wire_table();
	t << ab_table(order, "wire.ab.", kWireFigures, " across the wire, srnic with srnic");
	std::cout << t.str();
	std::ofstream(out + "/table.md") << t.str();

	std::ofstream csv(out + "/results.csv");
	csv << "figure,unit,srnic,rxe,ratio_srnic_rxe,limit,fraction_of_limit\n";
	auto c = [](Opt v) { return v ? json_num(v) : std::string(); };
	for (const Row &r : rows)
		csv << "\"" << r.f->name << "\"," << r.f->unit << "," << c(r.srnic) << "," << c(r.rxe) << ","
		    << c(r.ratio) << "," << c(r.limit) << "," << c(r.fraction) << "\n";
	for (const auto &[size, v] : sweep) {
		Opt ratio;
		if (v.first && v.second && *v.second != 0)
			ratio = *v.first / *v.second;
		csv << "\"ib_write_bw -a " << size << " B\",MB/s," << c(v.first) << "," << c(v.second)
		    << "," << c(ratio) << ",,\n";
	}
	for (const auto &k : order)
		if (k.rfind("limit.", 0) == 0)
			csv << "\"" << k << "\",," << c(get(k)) << ",,,,\n";
	for (const auto &k : order)
		if (k.rfind("wire.", 0) == 0)
			csv << "\"" << k << "\",," << c(get(k)) << ",,,,\n";

	std::ofstream js(out + "/results.json");
	js << "{\n  \"meta\": {";
	bool first = true;
	for (const auto &k : order)
		if (k.rfind("meta.", 0) == 0) {
			js << (first ? "" : ", ") << json_str(k.substr(5)) << ": " << json_str(raw[k]);
			first = false;
		}
	js << "},\n  \"limits\": {";
	first = true;
	for (const auto &k : order)
		if (k.rfind("limit.", 0) == 0) {
			js << (first ? "" : ", ") << json_str(k.substr(6)) << ": " << json_num(get(k));
			first = false;
		}
	js << "},\n  \"figures\": [\n";
	for (size_t i = 0; i < rows.size(); i++) {
		const Row &r = rows[i];
		js << "    {\"key\": " << json_str(r.f->key) << ", \"name\": " << json_str(r.f->name)
		   << ", \"unit\": " << json_str(r.f->unit) << ", \"srnic\": " << json_num(r.srnic)
		   << ", \"rxe\": " << json_num(r.rxe) << ", \"ratio\": " << json_num(r.ratio)
		   << ", \"limit\": " << json_num(r.limit) << ", \"fraction_of_limit\": "
		   << json_num(r.fraction) << "}" << (i + 1 < rows.size() ? "," : "") << "\n";
	}
	js << "  ],\n  \"write_bw_sweep\": [\n";
	size_t i = 0;
	for (const auto &[size, v] : sweep)
		js << "    {\"bytes\": " << size << ", \"srnic\": " << json_num(v.first)
		   << ", \"rxe\": " << json_num(v.second) << "}" << (++i < sweep.size() ? "," : "") << "\n";
	js << "  ],\n  \"wire\": {";
	first = true;
	for (const auto &k : order)
		if (k.rfind("wire.", 0) == 0) {
			js << (first ? "" : ", ") << json_str(k.substr(5)) << ": " << json_num(get(k));
			first = false;
		}
	js << "}\n}\n";

	write_svg(out + "/chart.svg", rows, "srnic vs rxe" + (meta.empty() ? "" : " (" + meta + ")"));
	return 0;
}
