// `ibdkit serve`: a read-only P2P server over a Bitcoin Core data directory (serve/serve.h).
#include "commands.h"
#include "json_output.h"
#include "interrupt.h"

#include <ibdkit/serve/serve.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace ibdkit::cli {
namespace {

std::atomic<bool> g_interrupt{false};

/// `--listen`: "ADDR", "ADDR:PORT", "[V6]" or "[V6]:PORT" (a bare IPv6 address is all address);
/// the port nullopt when not given. nullopt when malformed.
std::optional<std::pair<std::string, std::optional<uint16_t>>> ParseListen(const std::string& s)
{
    std::string host = s, port;
    if (!s.empty() && s.front() == '[') {
        const auto close = s.find(']');
        if (close == std::string::npos) return std::nullopt;
        host = s.substr(1, close - 1);
        const std::string rest = s.substr(close + 1);
        if (!rest.empty() && (rest.front() != ':' || rest.size() == 1)) return std::nullopt;
        if (!rest.empty()) port = rest.substr(1);
    } else if (std::count(s.begin(), s.end(), ':') == 1) {
        host = s.substr(0, s.find(':'));
        port = s.substr(s.find(':') + 1);
        if (port.empty()) return std::nullopt;
    }
    if (host.empty()) return std::nullopt;
    if (port.empty()) return std::make_pair(host, std::optional<uint16_t>());
    if (port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
    const unsigned long n = std::stoul(port);
    if (n > 65535) return std::nullopt;
    return std::make_pair(host, std::optional<uint16_t>(uint16_t(n)));
}

/// The bounds of `--max-upload-rate` besides 0 (no limit), bytes per second.
constexpr double MIN_UPLOAD_RATE = 1e3, MAX_UPLOAD_RATE = 1e12;

/// `--max-upload-rate`: bytes per second, a plain whole number or a number with a decimal suffix
/// (k = 1,000, M = 10^6, G = 10^9, T = 10^12: "500k", "110M", "1.5G"); 0 is no limit. nullopt
/// when malformed or outside [MIN_UPLOAD_RATE, MAX_UPLOAD_RATE].
std::optional<uint64_t> ParseUploadRate(const std::string& s)
{
    std::string number = s;
    double unit = 1;
    if (!number.empty()) {
        const std::string suffixes = "kKMGT";
        if (const auto i = suffixes.find(number.back()); i != std::string::npos) {
            unit = i <= 1 ? 1e3 : i == 2 ? 1e6 : i == 3 ? 1e9 : 1e12;
            number.pop_back();
        }
    }
    // Digits with at most one '.' between two of them: no sign, exponent, space, hex or infinity.
    const bool plain = !number.empty() && number.size() <= 20 && number.find_first_not_of("0123456789.") == std::string::npos &&
                       std::count(number.begin(), number.end(), '.') <= 1 && number.front() != '.' && number.back() != '.';
    if (!plain) return std::nullopt;
    const double rate = std::strtod(number.c_str(), nullptr) * unit;
    if (rate == 0) return 0;
    if (!(rate >= MIN_UPLOAD_RATE && rate <= MAX_UPLOAD_RATE)) return std::nullopt;
    return uint64_t(rate + 0.5);
}

CLI::Validator UploadRate()
{
    return CLI::Validator(
        [](std::string& value) -> std::string {
            if (ParseUploadRate(value)) return {};
            return "expected bytes per second such as 500k, 110M or 1G (decimal: k = 1000), from 1k to 1T, or 0 for no "
                   "limit, got '" + value + "'";
        },
        "RATE", "UploadRate");
}

const CommandRegistrar serve_cmd([](CLI::App& app) {
    auto* cmd = app.add_subcommand("serve",
        "Serve a Bitcoin Core data directory's blocks to other nodes over P2P (v1), read-only: version/verack,\n"
        "ping/pong, getheaders, getblocks, getdata (blocks with or without witness), and SwiftSync's spent\n"
        "coins from the rev files (BIP 455 getbspent/bspent, announced with BIP 434's feature). Also beside a\n"
        "running bitcoind (from a snapshot of its block index). Ctrl-C stops it.");
    struct Args {
        std::string datadir, blocks_dir, network, listen{"127.0.0.1"};
        unsigned max_peers{32};
        double peer_timeout{120};
        std::string max_upload_rate{"0"};
        bool json{false}, quiet{false};
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("--datadir", a->datadir, "Bitcoin Core data directory whose blocks to serve (read-only)");
    cmd->add_option("--blocks-dir", a->blocks_dir, "Or a blocks directory (blkNNNNN.dat, xor.dat) or one blk file");
    AddNetworkOption(cmd, a->network, "from the datadir layout or the files' magic");
    cmd->add_option("--listen", a->listen,
                    "ADDR[:PORT] to listen on: an IPv4 or [IPv6] address; the port defaults to the network's (8333,\n"
                    "18444 on regtest, ...), 0 picks a free one")
        ->capture_default_str();
    cmd->add_option("--max-peers", a->max_peers, "Peers served at once; more are closed at once")->check(IntegerIn(1, 1024))->capture_default_str();
    cmd->add_option("--peer-timeout", a->peer_timeout, "Seconds a peer may stay silent (or not take our bytes) before it is dropped")
        ->check(NumberIn(1, 86400))
        ->capture_default_str();
    cmd->add_option("--max-upload-rate", a->max_upload_rate,
                    "Bytes per second sent to all peers together: a whole number, or with a decimal suffix\n"
                    "(k = 1000, M = 10^6, G = 10^9, T = 10^12: 500k, 110M, 1.5G), from 1k to 1T; 0 is no limit")
        ->check(UploadRate())
        ->capture_default_str();
    cmd->add_flag("--json", a->json, "On exit, print the counters as JSON");
    AddQuietOption(cmd, a->quiet);
    cmd->callback([a] {
        RequireOneBlockSource(a->datadir, a->blocks_dir);
        ServeOptions o;
        o.source = {.datadir = a->datadir, .blocks_dir = a->blocks_dir, .chain = ParseNetworkOption(a->network)};
        auto listen = ParseListen(a->listen);
        if (!listen) throw UsageError("--listen '" + a->listen + "' is not ADDR, ADDR:PORT, [IPV6] or [IPV6]:PORT (a port is 0..65535)");
        o.listen_host = listen->first;
        o.port = listen->second;
        o.max_peers = a->max_peers;
        o.peer_timeout = std::chrono::milliseconds(int64_t(a->peer_timeout * 1000));
        o.max_upload_rate = *ParseUploadRate(a->max_upload_rate);
        InstallInterruptFlag(&g_interrupt);
        o.interrupt = &g_interrupt;
        o.on_listening = [](const std::string& host, uint16_t port) {
            // The address on stdout, flushed: a script (or a test) reads it to connect.
            const bool v6 = host.find(':') != std::string::npos;
            std::printf("listening on %s%s%s:%u\n", v6 ? "[" : "", host.c_str(), v6 ? "]" : "", unsigned(port));
            std::fflush(stdout);
        };
        if (!a->quiet) o.on_event = [](const std::string& line) { std::fprintf(stderr, "ibdkit serve: %s\n", line.c_str()); };
        auto r = Serve(o);
        if (!r) {
            PrintError(r.error().message);
            ExitCode() = r.error().code == Errc::InvalidValue ? EXIT_USAGE : EXIT_FAILED;
            return;
        }
        if (a->json) {
            const nlohmann::json j{{"height", r->height},           {"connections", r->connections}, {"refused", r->refused},
                                   {"dropped", r->dropped},         {"blocks_sent", r->blocks_sent}, {"headers_sent", r->headers_sent},
                                   {"bspent_sent", r->bspent_sent}, {"spent_coins", r->spent_coins},
                                   {"bytes_sent", r->bytes_sent}, {"bytes_received", r->bytes_received},
                                   {"max_upload_rate", r->max_upload_rate}, {"upload_wait_seconds", r->upload_wait_seconds}};
            PrintJsonResult(j);
        } else if (!a->quiet) {
            std::printf("served height %d to %llu peers: %llu blocks, %llu headers, %llu bspent, %.1f MB sent; %llu dropped, %llu refused\n",
                        r->height, (unsigned long long)r->connections, (unsigned long long)r->blocks_sent,
                        (unsigned long long)r->headers_sent, (unsigned long long)r->bspent_sent, double(r->bytes_sent) / 1e6,
                        (unsigned long long)r->dropped, (unsigned long long)r->refused);
        }
    });
});

} // namespace
} // namespace ibdkit::cli
