#include <ibdkit/error.h>

#include <cstdio>
#include <cstdlib>

namespace ibdkit {

std::string_view ErrcName(Errc e) noexcept
{
    switch (e) {
    case Errc::Ok: return "Ok";
    case Errc::EndOfData: return "EndOfData";
    case Errc::NonCanonicalCompactSize: return "NonCanonicalCompactSize";
    case Errc::SizeTooLarge: return "SizeTooLarge";
    case Errc::VarIntOverflow: return "VarIntOverflow";
    case Errc::SuperfluousWitness: return "SuperfluousWitness";
    case Errc::UnknownOptionalData: return "UnknownOptionalData";
    case Errc::TrailingData: return "TrailingData";
    case Errc::BadMagic: return "BadMagic";
    case Errc::BadChecksum: return "BadChecksum";
    case Errc::BadCommand: return "BadCommand";
    case Errc::OversizedMessage: return "OversizedMessage";
    case Errc::InvalidValue: return "InvalidValue";
    case Errc::Corrupt: return "Corrupt";
    case Errc::Refused: return "Refused";
    case Errc::NotFound: return "NotFound";
    case Errc::Locked: return "Locked";
    case Errc::Io: return "Io";
    }
    return "Unknown";
}

DecodeError::DecodeError(Errc code, const char* what)
    : std::runtime_error(what ? what : std::string(ErrcName(code))), m_code(code)
{
}

void PreconditionFailed(const char* what, const char* file, int line) noexcept
{
    std::fprintf(stderr, "ibdkit: precondition failed at %s:%d: %s\n", file, line, what);
    std::abort();
}

} // namespace ibdkit
