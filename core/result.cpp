#include "core/result.h"

namespace wb::core {

const char* errorCodeName(ErrorCode code)
{
    switch (code) {
    case ErrorCode::InvalidArgument: return "invalid argument";
    case ErrorCode::NotFound: return "not found";
    case ErrorCode::IoError: return "I/O error";
    case ErrorCode::Busy: return "busy";
    case ErrorCode::Incompatible: return "incompatible";
    case ErrorCode::Corrupt: return "corrupt";
    case ErrorCode::Failed: return "failed";
    }
    return "failed";
}

}  // namespace wb::core
