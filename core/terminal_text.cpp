// Terminal-safe text (see terminal_text.h).
#include "core/terminal_text.h"

#include <cstdio>

namespace wb::core {

std::string terminalSafe(std::string_view text)
{
    std::string out;
    out.reserve(text.size());
    auto hex = [&](unsigned char c) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", c);
        out += buf;
    };
    for (size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == '\n')
            out += "\\n";
        else if (c == '\t')
            out += "\\t";
        else if (c == '\r')
            out += "\\r";
        else if (c == 0x1b)
            out += "\\e";
        else if (c < 0x20 || c == 0x7f)
            hex(c);
        else if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
                 static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
            hex(c);  // a C1 control in UTF-8 (0xC2 0x80-0x9F): CSI and friends on some terminals
            hex(static_cast<unsigned char>(text[++i]));
        } else
            out += static_cast<char>(c);
    }
    return out;
}

}  // namespace wb::core
