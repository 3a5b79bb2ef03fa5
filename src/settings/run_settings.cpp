// The rules of the settings every run shares (settings/run_settings.h), in one place.
#include <ibdkit/settings/run_settings.h>
#include <ibdkit/threads.h>

#include <string>

namespace ibdkit {

std::optional<Error> CheckRunSettings(const RunSettings& settings)
{
    if (settings.threads > MAX_THREADS) {
        return Error{Errc::InvalidValue, "threads must be 0 (every core) to " + std::to_string(MAX_THREADS) + ", got " +
                                             std::to_string(settings.threads)};
    }
    if (settings.dbcache_mib > MAX_DBCACHE_MIB) {
        return Error{Errc::InvalidValue, "dbcache must be 0 (the least) to " + std::to_string(MAX_DBCACHE_MIB) + " MiB, got " +
                                             std::to_string(settings.dbcache_mib)};
    }
    if (settings.skip_scripts && settings.assumevalid) {
        return Error{Errc::InvalidValue, "skip-scripts trusts every script: drop assumevalid, or drop skip-scripts to let "
                                         "Core's assumevalid rule choose"};
    }
    return std::nullopt;
}

Result<uint256> ParseMinimumChainWork(std::string_view hex)
{
    const std::string_view given = hex;
    if (hex.starts_with("0x") || hex.starts_with("0X")) hex.remove_prefix(2);
    const bool digits = !hex.empty() && hex.size() <= 64 && hex.find_first_not_of("0123456789abcdefABCDEF") == std::string_view::npos;
    auto work = digits ? uint256::FromHex(std::string(64 - hex.size(), '0') + std::string(hex)) : std::nullopt;
    if (!work) {
        return Error{Errc::InvalidValue, "minimum chain work must be a hex number of at most 64 digits, as Core's "
                                         "-minimumchainwork takes it, got '" + std::string(given) + "'"};
    }
    return *work;
}

} // namespace ibdkit
