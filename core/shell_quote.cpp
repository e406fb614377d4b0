#include "core/shell_quote.h"

#include <algorithm>

namespace wb::core {

std::string shellQuote(std::string_view word)
{
    std::string quoted = "'";
    for (char c : word) {
        if (c == '\'')
            quoted += "'\\''";
        else
            quoted += c;
    }
    quoted += '\'';
    return quoted;
}

std::string shellWord(std::string_view word)
{
    const bool bare = !word.empty() && std::all_of(word.begin(), word.end(), [](char ch) {
        return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
               std::string_view("_-.,/:=+@%").find(ch) != std::string_view::npos;
    });
    return bare ? std::string(word) : shellQuote(word);
}

std::string shellQuotePath(std::string_view path)
{
    if (path == "~")
        return "\"$HOME\"";
    if (path.substr(0, 2) == "~/")
        return "\"$HOME\"/" + shellQuote(path.substr(2));
    return shellQuote(path);
}

}  // namespace wb::core
