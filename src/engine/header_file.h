// src/engine/header_file.h (internal to sync) — a peer's header chain kept next to the coins
// (HEADERS_FILE, engine/sync.h): 80 bytes per header from height 1, appended, checked again when
// loaded, so a resumed sync knows the height and median time past of the chainstate's best block.
#pragma once

#include <ibdkit/consensus/header_chain.h>
#include <ibdkit/error.h>

#include <filesystem>
#include <optional>
#include <string>

namespace ibdkit::engine {

/// Appends the headers of `file` to `chain` (which holds only the genesis), keeping the valid
/// prefix: a bad or partial tail is dropped and the file truncated to match. Returns the number of
/// headers loaded.
Result<int> LoadHeaders(HeaderChain& chain, const std::filesystem::path& file);
/// Writes headers [from, chain.Height()] to the file (rewriting it from `from` on).
/// Precondition: chain.HasFullHeaders().
std::optional<std::string> PersistHeaders(const HeaderChain& chain, const std::filesystem::path& file, int from);

} // namespace ibdkit::engine
