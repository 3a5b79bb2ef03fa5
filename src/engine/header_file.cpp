#include "header_file.h"

#include <ibdkit/primitives/block.h>

#include <algorithm>
#include <array>
#include <fstream>

namespace ibdkit::engine {

Result<int> LoadHeaders(HeaderChain& chain, const std::filesystem::path& file)
{
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) return 0;
    std::ifstream in(file, std::ios::binary);
    if (!in) return Error{Errc::Corrupt, "cannot read " + file.string()};
    int loaded = 0;
    std::array<uint8_t, 80> buf;
    while (in.read(reinterpret_cast<char*>(buf.data()), 80)) {
        if (chain.Append(HeaderFromBytes(buf))) break;
        ++loaded;
    }
    in.close();
    const auto want = uintmax_t(loaded) * 80;
    if (std::filesystem::file_size(file, ec) != want) {
        std::filesystem::resize_file(file, want, ec);
        if (ec) return Error{Errc::Corrupt, "cannot truncate " + file.string() + ": " + ec.message()};
    }
    return loaded;
}

std::optional<std::string> PersistHeaders(const HeaderChain& chain, const std::filesystem::path& file, int from)
{
    from = std::max(from, 1);
    std::error_code ec;
    const auto keep = uintmax_t(from - 1) * 80;
    if (std::filesystem::exists(file, ec) && std::filesystem::file_size(file, ec) != keep) {
        std::filesystem::resize_file(file, keep, ec);
        if (ec) return "cannot truncate " + file.string() + ": " + ec.message();
    }
    std::ofstream out(file, std::ios::binary | std::ios::app);
    for (int h = from; h <= chain.Height(); ++h) {
        const auto bytes = HeaderToBytes(chain.Header(h));
        out.write(reinterpret_cast<const char*>(bytes.data()), 80);
    }
    out.flush();
    if (!out) return "cannot write " + file.string();
    return std::nullopt;
}

} // namespace ibdkit::engine
