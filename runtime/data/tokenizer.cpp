// Byte-level tokenizer (see tokenizer.h).
#include "runtime/data/tokenizer.h"

#include <algorithm>

namespace wb::rt {

std::vector<int64_t> tokenize(std::string_view text, int maxTokens)
{
    const size_t n = std::min(text.size(), static_cast<size_t>(std::max(0, maxTokens)));
    std::vector<int64_t> ids(n);
    for (size_t i = 0; i < n; ++i)
        ids[i] = static_cast<unsigned char>(text[i]);
    return ids;
}

}  // namespace wb::rt
