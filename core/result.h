// Result<T>: the return type of every expected failure in core/ and remote/ (I/O, SQLite busy,
// bad config, auth). Bugs assert instead. Any thread.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace wb::core {

enum class ErrorCode {
    InvalidArgument,  ///< the caller's input is wrong (bad config, bad id)
    NotFound,         ///< a file, run or record does not exist
    IoError,          ///< read/write/spawn failed
    Busy,             ///< a lock is held by someone else (SQLite busy, run dir in use)
    Incompatible,     ///< a file written by a newer/older version we cannot handle
    Corrupt,          ///< data that cannot be parsed
    Failed,           ///< a child process or remote operation failed
};

const char* errorCodeName(ErrorCode code);

/// An expected failure: what went wrong and what to do about it (`message`), plus where (`context`,
/// e.g. a path or run id). Messages are written for the user, not the developer.
struct Error {
    ErrorCode code = ErrorCode::Failed;
    std::string message;
    std::string context;

    std::string toString() const
    {
        return context.empty() ? message : context + ": " + message;
    }
};

template <typename T>
class [[nodiscard]] Result {
public:
    Result(T value) : m_v(std::move(value)) {}           // NOLINT(google-explicit-constructor)
    Result(Error error) : m_v(std::move(error)) {}       // NOLINT(google-explicit-constructor)

    bool ok() const { return std::holds_alternative<T>(m_v); }
    explicit operator bool() const { return ok(); }

    T& value() & { assert(ok()); return std::get<T>(m_v); }
    const T& value() const& { assert(ok()); return std::get<T>(m_v); }
    T&& value() && { assert(ok()); return std::get<T>(std::move(m_v)); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }

    const Error& error() const { assert(!ok()); return std::get<Error>(m_v); }

private:
    std::variant<T, Error> m_v;
};

/// Result for operations that return nothing on success.
template <>
class [[nodiscard]] Result<void> {
public:
    Result() = default;
    Result(Error error) : m_error(std::move(error)), m_ok(false) {}  // NOLINT(google-explicit-constructor)

    bool ok() const { return m_ok; }
    explicit operator bool() const { return ok(); }
    const Error& error() const { assert(!ok()); return m_error; }

private:
    Error m_error;
    bool m_ok = true;
};

inline Error makeError(ErrorCode code, std::string message, std::string context = {})
{
    return Error{code, std::move(message), std::move(context)};
}

}  // namespace wb::core
