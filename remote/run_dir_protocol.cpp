#include "remote/run_dir_protocol.h"

#include <cctype>
#include <sstream>

namespace wb::remote {

StatusReply parseStatusReply(const std::string& out)
{
    StatusReply reply;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line) && line != "---";) {
        const auto eq = line.find('=');
        reply.fields[line.substr(0, eq)] = eq == std::string::npos ? std::string() : line.substr(eq + 1);
    }
    for (std::string rest; std::getline(lines, rest);)
        reply.statusJson += rest + "\n";
    return reply;
}

std::string trimmed(std::string text)
{
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
        text.pop_back();
    size_t start = 0;
    while (start < text.size() && std::isspace(static_cast<unsigned char>(text[start])))
        ++start;
    return text.substr(start);
}

}  // namespace wb::remote
