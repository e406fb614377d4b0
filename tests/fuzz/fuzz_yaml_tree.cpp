// Fuzz target: the YAML tree reader (core/yaml_tree.h) under every Bridge YAML the workbench reads.
// Properties: never throws or crashes, and stays within its depth bound (a deep input is an
// error, not a stack overflow); an error names a line inside the text and says what to do; a tree
// has every node on a line and column inside the text, as many keys as values in each mapping,
// and no key twice in one mapping.
#include "core/yaml_tree.h"
#include "tests/fuzz/fuzz_check.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

namespace {

void checkNode(const wb::core::YamlNode& n, int lines, int depth)
{
    wb::fuzz::check(depth <= 257, "a tree deeper than the depth bound");
    wb::fuzz::check(n.line >= 1 && n.line <= lines && n.column >= 1, "a node outside the text", std::to_string(n.line));
    if (n.isMapping()) {
        wb::fuzz::check(n.keys.size() == n.items.size(), "a mapping with keys and values out of step");
        std::set<std::string> seen;
        for (const wb::core::YamlKey& k : n.keys) {
            wb::fuzz::check(seen.insert(k.text).second, "a key twice in one mapping", k.text);
            wb::fuzz::check(k.line >= 1 && k.line <= lines && k.column >= 1, "a key outside the text", k.text);
        }
    } else if (n.isScalar()) {
        wb::fuzz::check(n.items.empty() && n.keys.empty(), "a scalar with children");
    }
    for (const wb::core::YamlNode& item : n.items)
        checkNode(item, lines, depth + 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const int lines = static_cast<int>(std::count(text.begin(), text.end(), '\n')) + 1;
    const auto tree = wb::core::parseYamlTree(text);
    if (!tree) {
        const wb::core::YamlErrorParts e = wb::core::yamlErrorParts(tree.error());
        wb::fuzz::check(e.line >= 1 && e.line <= lines && e.column >= 1, "an error outside the text", tree.error().message);
        wb::fuzz::check(!e.what.empty() && !e.fix.empty(), "an error that does not say what to do", tree.error().message);
        return 0;
    }
    checkNode(*tree, lines, 0);
    return 0;
}
