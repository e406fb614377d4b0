#include "core/text_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace wb::core {

namespace {

const char* kindOf(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO (named pipe)";
    if (S_ISCHR(mode) || S_ISBLK(mode))
        return "a device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a regular file";
}

}  // namespace

Result<std::string> readTextFile(const std::string& path, const std::string& what, std::uint64_t maxBytes)
{
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)  // follows symlinks: a link to a regular file is fine
        return makeError(ErrorCode::NotFound,
                         "cannot read the " + what + " (" + std::strerror(errno) + "); check the path", path);
    if (!S_ISREG(st.st_mode))
        return makeError(ErrorCode::InvalidArgument,
                         "the " + what + " is " + kindOf(st.st_mode) + ", not a regular file; give the path of a file",
                         path);
    if (static_cast<std::uint64_t>(st.st_size) > maxBytes)
        return makeError(ErrorCode::InvalidArgument,
                         "the " + what + " is " + std::to_string(st.st_size >> 20) + " MiB, more than the " +
                             std::to_string(maxBytes >> 20) + " MiB a " + what + " may have; is this the right file?",
                         path);
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return makeError(ErrorCode::NotFound, "cannot read the " + what + "; check the path and its permissions",
                         path);
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad())
        return makeError(ErrorCode::IoError, "reading the " + what + " failed", path);
    return text.str();
}

}  // namespace wb::core
