// ProxyJump (see the header for what libssh 0.10 does and what we change).
#include "remote/proxy_jump.h"

#include "core/log.h"
#include "core/shell_quote.h"

#include <libssh/libssh.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <vector>

namespace wb::remote {

using core::ErrorCode;
using core::makeError;

namespace {

// The last `maxBytes` of a file ("" when it cannot be read).
std::string readTail(const std::string& path, size_t maxBytes)
{
    std::ifstream in(path, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return text.size() > maxBytes ? text.substr(text.size() - maxBytes) : text;
}

// A word for libssh's ProxyCommand: shell-quoted, and '%' doubled because libssh expands %h/%p
// (and %%) in the whole command before the shell sees it.
std::string proxyCommandWord(const std::string& word)
{
    std::string escaped;
    for (char c : core::shellQuote(word)) {
        escaped += c;
        if (c == '%')
            escaped += '%';
    }
    return escaped;
}

// A word for a command shown to the user: quoted only when the shell needs it.
std::string readableWord(const std::string& word)
{
    const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("@%+=:,./_-", c) != nullptr;
    });
    return plain ? word : core::shellQuote(word);
}

// One ProxyJump hop, [user@]host[:port], IPv6 hosts in brackets as in ssh_config(5).
struct JumpHop {
    std::string user, host, port;

    static JumpHop parse(const std::string& text)
    {
        JumpHop hop;
        std::string rest = text;
        if (const auto at = rest.rfind('@'); at != std::string::npos) {
            hop.user = rest.substr(0, at);
            rest = rest.substr(at + 1);
        }
        const auto close = rest.find(']');
        const auto colon = rest.rfind(':');
        if (!rest.empty() && rest.front() == '[' && close != std::string::npos) {
            hop.host = rest.substr(1, close - 1);
            if (close + 1 < rest.size() && rest[close + 1] == ':')
                hop.port = rest.substr(close + 2);
        } else if (colon != std::string::npos && rest.find(':') == colon) {
            hop.host = rest.substr(0, colon);
            hop.port = rest.substr(colon + 1);
        } else {
            hop.host = rest;  // a name, or a bare IPv6 address (no port possible)
        }
        return hop;
    }

    std::string text() const
    {
        const bool v6 = host.find(':') != std::string::npos;
        return (user.empty() ? "" : user + "@") + (v6 && !port.empty() ? "[" + host + "]" : host) +
               (port.empty() ? "" : ":" + port);
    }
};

// The hops of libssh's "ssh [-l U] [-p P] [-J MORE] -W '[%h]:%p' HOST", first hop first; empty
// when the command has another shape (a ProxyCommand the user wrote).
std::vector<JumpHop> libsshJumpHops(const std::string& command)
{
    std::istringstream words(command);
    std::vector<std::string> w{std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
    // libssh before 0.10.5 wrote the -W argument unquoted (zsh globbed it).
    if (w.size() < 4 || w[0] != "ssh" || w[w.size() - 3] != "-W" ||
        (w[w.size() - 2] != "'[%h]:%p'" && w[w.size() - 2] != "[%h]:%p"))
        return {};
    JumpHop first;
    first.host = w.back();
    std::string more;
    for (size_t i = 1; i + 3 < w.size(); i += 2) {
        if (i + 1 > w.size() - 4)  // an option without its value
            return {};
        if (w[i] == "-l")
            first.user = w[i + 1];
        else if (w[i] == "-p")
            first.port = w[i + 1];
        else if (w[i] == "-J")
            more = w[i + 1];
        else
            return {};
    }
    std::vector<JumpHop> hops{first};
    std::istringstream rest(more);
    for (std::string hop; std::getline(rest, hop, ',');)
        if (!hop.empty())
            hops.push_back(JumpHop::parse(hop));
    return hops;
}

}  // namespace

std::optional<ProxyJump::Rewrite> ProxyJump::rewrite(const std::string& libsshCommand,
                                                     const std::string& configFile,
                                                     const std::string& stderrPath)
{
    const std::vector<JumpHop> hops = libsshJumpHops(libsshCommand);
    if (hops.empty())
        return std::nullopt;
    std::string earlierHops;
    for (size_t i = 0; i + 1 < hops.size(); ++i) {
        if (i > 0)
            earlierHops += ',';
        earlierHops += hops[i].text();
    }
    Rewrite result;
    result.hops = earlierHops;
    if (!result.hops.empty())
        result.hops += ',';
    result.hops += hops.back().text();

    // OpenSSH's own ProxyJump command (ssh.c): ssh [-F] [-l] [-p] [-J HOP1,...] -W ... LASTHOP.
    // Built twice: for libssh (%-escaped) and for the user to paste into a terminal.
    const JumpHop& last = hops.back();
    const auto build = [&](const std::function<std::string(const std::string&)>& word) {
        std::string line = "ssh";
        if (!configFile.empty())
            line += " -F " + word(configFile);
        if (!last.user.empty())
            line += " -l " + word(last.user);
        if (!last.port.empty())
            line += " -p " + word(last.port);
        if (!earlierHops.empty())
            line += " -J " + word(earlierHops);
        return line;
    };
    result.command = build(proxyCommandWord) + " -W '[%h]:%p' " + proxyCommandWord(last.host) + " 2>" +
                     proxyCommandWord(stderrPath);
    result.byHand = build(readableWord) + " " + readableWord(last.host);
    return result;
}

ProxyJump::ProxyJump(Rewrite rewrite, std::string stderrPath)
    : m_rewrite(std::move(rewrite)), m_stderrPath(std::move(stderrPath))
{
}

ProxyJump::~ProxyJump() { ::unlink(m_stderrPath.c_str()); }

core::Result<std::unique_ptr<ProxyJump>> ProxyJump::prepare(ssh_session_struct* session, const std::string& configFile)
{
    char* raw = nullptr;
    if (ssh_options_get(session, SSH_OPTIONS_PROXYCOMMAND, &raw) != SSH_OK || raw == nullptr)
        return std::unique_ptr<ProxyJump>();
    const std::string libsshCommand = raw;
    ssh_string_free_char(raw);
    if (libsshJumpHops(libsshCommand).empty())
        return std::unique_ptr<ProxyJump>();  // no ProxyCommand, or one the user wrote

    std::string stderrPath = (std::filesystem::temp_directory_path() / "wb-proxyjump-XXXXXX").string();
    const int fd = ::mkstemp(stderrPath.data());
    if (fd < 0)
        return makeError(ErrorCode::IoError,
                         std::string("cannot create a temp file for the ProxyJump ssh's messages: ") +
                             std::strerror(errno) + " (is TMPDIR writable?)",
                         stderrPath);
    ::close(fd);
    std::unique_ptr<ProxyJump> jump(new ProxyJump(*rewrite(libsshCommand, configFile, stderrPath), stderrPath));
    if (ssh_options_set(session, SSH_OPTIONS_PROXYCOMMAND, jump->m_rewrite.command.c_str()) != SSH_OK)
        return makeError(ErrorCode::InvalidArgument,
                         std::string("cannot set the ProxyJump command: ") + ssh_get_error(session), jump->hops());
    wb::log::get("remote")->debug("ProxyJump {}: ProxyCommand {}", jump->hops(), jump->m_rewrite.command);
    return jump;
}

std::string ProxyJump::failure(const std::string& libsshError) const
{
    // ssh's last lines say why; the first ones are often warnings ("Permanently added ...").
    std::string said;
    std::istringstream lines(readTail(m_stderrPath, 1024));
    for (std::string line; std::getline(lines, line);) {
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '.'))
            line.pop_back();
        if (!line.empty())
            said += (said.empty() ? "" : "; ") + line;
    }
    const bool several = hops().find(',') != std::string::npos;
    std::string message = std::string("cannot connect through the jump ") + (several ? "hosts " : "host ") +
                          hops() + " (ProxyJump, run by OpenSSH's ssh): ";
    if (said.empty())
        message += libsshError + " (ssh printed nothing)";
    else
        message += "ssh said: " + said;
    if (said.find("not found") != std::string::npos)
        message += ". The OpenSSH client must be on PATH (apt-get install openssh-client)";
    message += ". Check that `" + m_rewrite.byHand +
               "` works in a terminal without asking anything (its key in an agent or named by "
               "IdentityFile, its host key in known_hosts)";
    return message;
}

}  // namespace wb::remote
