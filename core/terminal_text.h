// Text from a run (its name, target, run directory: anyone who can start a run chooses them) as
// the CLI prints it to a terminal: control characters — newlines that would forge table rows,
// ESC sequences and BEL that the terminal would execute — become visible escapes (\n, \t, \e,
// \xHH); UTF-8 text stays as it is, C1 controls (U+0080–U+009F) are escaped too. Pure.
#pragma once

#include <string>
#include <string_view>

namespace wb::core {

std::string terminalSafe(std::string_view text);

}  // namespace wb::core
