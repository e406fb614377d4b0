// Byte-level tokenizer: ids 0..255 are the UTF-8 bytes of the text, then four special ids.
// Any thread (stateless).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace wb::rt {

inline constexpr int64_t kPadId = 256;
inline constexpr int64_t kBosId = 257;
inline constexpr int64_t kEosId = 258;
inline constexpr int64_t kImageId = 259;   ///< placeholder replaced by projected image features
inline constexpr int64_t kMinVocabSize = 260;
inline constexpr int64_t kIgnoreLabel = -100;

/// The bytes of `text`, at most `maxTokens` of them (no specials added).
std::vector<int64_t> tokenize(std::string_view text, int maxTokens);

}  // namespace wb::rt
