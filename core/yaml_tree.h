// A small YAML reader: the block-style subset PyYAML's safe_dump writes (what Megatron-Bridge's
// `cfg.to_yaml()` saves as the resolved ConfigContainer) plus what people write by hand in
// override files. Reads into a tree of mappings (keys in file order), sequences and scalars, each
// node with its 1-based line and column. Honest about the rest: anchors, aliases, complex keys
// and multiple documents are refused with a message that says so. Pure; any thread.
//
// Understood: block mappings and sequences (a sequence may sit at its parent key's indentation,
// as PyYAML writes it), `- key: value` items, flow collections ([a, b], {a: 1}, also across lines),
// plain scalars folded across more-indented continuation lines, 'single' and "double" quoted
// scalars (escapes, folding, an escaped line break), `|` and `>` block scalars with chomping and
// indentation indicators, comments, `---` / `...` document markers, `%` directives, and tags
// (`!!python/tuple`, `!!binary`, `!foo`), which are kept on the node and otherwise ignored.
#pragma once

#include "core/result.h"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wb::core {

struct YamlKey {
    std::string text;  ///< unquoted, unescaped
    int line = 0;      ///< 1-based
    int column = 0;    ///< 1-based, counted in bytes
};

struct YamlNode {
    enum class Kind { Scalar, Sequence, Mapping };
    Kind kind = Kind::Scalar;
    int line = 0;    ///< 1-based; where the node starts (a block collection: its first key or '-')
    int column = 0;  ///< 1-based, in bytes
    /// Scalar: the value as the document means it (quotes removed, escapes applied, continuation
    /// lines folded). A plain scalar keeps its text as written: `null`, `1.0e-05`, `.inf`.
    std::string text;
    bool quoted = false;  ///< Scalar: written quoted or as a `|` / `>` block (so never null)
    std::string tag;      ///< `!!python/tuple`, `!!binary`, ... as written; "" when none
    std::vector<YamlNode> items;  ///< Sequence: its items. Mapping: the values, keys[i] names items[i]
    std::vector<YamlKey> keys;    ///< Mapping only

    bool isScalar() const { return kind == Kind::Scalar; }
    bool isSequence() const { return kind == Kind::Sequence; }
    bool isMapping() const { return kind == Kind::Mapping; }
    /// A plain `null`, `Null`, `NULL`, `~` or nothing at all.
    bool isNull() const;
    /// The value under `key` of a mapping; nullptr when absent or not a mapping.
    const YamlNode* find(std::string_view key) const;
};

/// Bounds that keep hostile input (a fuzzer's) from exhausting the stack or memory.
struct YamlLimits {
    int maxDepth = 256;                  ///< nested collections, block and flow together
    std::size_t maxBytes = 64u << 20;    ///< 64 MiB
};

/// Parses one YAML document. An empty document (only blanks and comments) is a null scalar.
/// Errors (ErrorCode::Corrupt) have the message "line L, column C: <what was found>; <what to
/// do>", e.g. "line 12, column 5: a key at indentation 4 inside a mapping at indentation 2;
/// indent it like its siblings". The part after the last "; " is the fix (no fix holds "; ").
Result<YamlNode> parseYamlTree(std::string_view text, const YamlLimits& limits = {});

/// A parseYamlTree error taken apart (line and column 0 when the message names none).
struct YamlErrorParts {
    int line = 0;
    int column = 0;
    std::string what;  ///< what was found and where it is wrong
    std::string fix;   ///< what to do about it
};
YamlErrorParts yamlErrorParts(const Error& error);

/// A plain scalar as YAML 1.1 reads numbers: ints, floats (1.0e-05, 5e6), .inf, -.inf, .nan.
std::optional<double> yamlDouble(const YamlNode& node);
/// A plain true/false (also True/False/TRUE/FALSE, as PyYAML reads them).
std::optional<bool> yamlBool(const YamlNode& node);

}  // namespace wb::core
