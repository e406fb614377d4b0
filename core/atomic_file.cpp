#include "core/atomic_file.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace wb::core {

Result<void> writeFileAtomically(const std::string& path, std::string_view content, FileMode mode)
{
    // mkstemp: a name no other writer of the same file (two CLI processes, a retry) can share.
    std::string temp = path + ".tmp-XXXXXX";
    const int fd = ::mkstemp(temp.data());
    const auto fail = [&](const char* what, int err) {
        if (fd >= 0)
            ::unlink(temp.c_str());
        return makeError(ErrorCode::IoError,
                         std::string(what) + ": " + std::strerror(err) + "; check that the folder exists and is writable",
                         path);
    };
    if (fd < 0)
        return fail("cannot create a temporary file beside it", errno);
    size_t done = 0;
    while (done < content.size()) {
        const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            const int err = n < 0 ? errno : EIO;
            ::close(fd);
            return fail("cannot write the file (disk full?)", err);
        }
        done += static_cast<size_t>(n);
    }
    // mkstemp makes 0600; the file gets the usual mode, less the user's umask.
    const mode_t umask = ::umask(0);
    ::umask(umask);
    const mode_t wanted = (mode == FileMode::Executable ? 0755 : 0644) & ~umask;
    if (::fchmod(fd, wanted) != 0 || ::fsync(fd) != 0) {
        const int err = errno;
        ::close(fd);
        return fail("cannot write the file", err);
    }
    if (::close(fd) != 0)
        return fail("cannot write the file", errno);
    if (::rename(temp.c_str(), path.c_str()) != 0)
        return fail("cannot put the file in place", errno);
    return {};
}

}  // namespace wb::core
