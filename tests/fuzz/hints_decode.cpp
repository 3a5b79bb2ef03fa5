// Fuzz: BIP 456 hintsfiles and their Elias-Fano lists. Malformed input must give a typed error —
// never a crash, a hang or an allocation sized by a lying count or height. A list that decodes is
// strictly increasing and re-encodes to exactly its bytes (the decoder accepts only the canonical
// form); a file that parses re-encodes list by list to exactly its bytes.
#include <ibdkit/swiftsync/hints.h>

#include <cstdlib>
#include <vector>

using namespace ibdkit;
using namespace ibdkit::swiftsync;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::span<const uint8_t> in(data, size);

    std::size_t used = 0;
    auto list = DecodeEliasFano(in, &used);
    if (list) {
        if (used > size) std::abort();
        for (std::size_t i = 1; i < list->size(); ++i) {
            if ((*list)[i] <= (*list)[i - 1]) std::abort();
        }
        const auto again = EncodeEliasFano(*list);
        if (again.size() != used || !std::equal(again.begin(), again.end(), in.begin())) std::abort();
    }

    // As a whole file, and as the lists of a file whose header the fuzzer's first byte sizes.
    auto file = Hints::Parse(std::vector<uint8_t>(in.begin(), in.end()));
    std::vector<uint8_t> framed(HINTS_MAGIC.begin(), HINTS_MAGIC.end());
    framed.push_back(HINTS_VERSION);
    const uint32_t height = size > 0 ? data[0] % 8 : 0;
    for (int i = 0; i < 4; ++i) framed.push_back(uint8_t(height >> (8 * i)));
    framed.insert(framed.end(), in.begin() + (size > 0 ? 1 : 0), in.end());
    auto file2 = Hints::Parse(framed);
    for (const auto* f : {&file, &file2}) {
        if (!f->ok()) continue;
        const Hints& h = f->value();
        std::vector<uint8_t> rebuilt(h.bytes().begin(), h.bytes().begin() + HINTS_HEADER_SIZE);
        uint64_t total = 0;
        for (uint32_t b = 1; b <= h.height(); ++b) {
            const auto indices = h.Indices(b);
            total += indices.size();
            AppendEliasFano(rebuilt, indices);
        }
        if (rebuilt != h.bytes() || total != h.total()) std::abort();
    }
    return 0;
}
