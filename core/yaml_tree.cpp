// The YAML subset reader (yaml_tree.h). A recursive descent over lines: block structure is read
// line by line from each line's indentation; scalars and flow collections are read character by
// character from a (row, column) cursor, crossing lines where YAML lets them. Every node records
// the row and column it starts at, so a caller can point a finding at its line.
#include "core/yaml_tree.h"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <unordered_map>

namespace wb::core {
namespace {

struct Line {
    std::string_view text;  // without the line break (and a CR before it)
    int indent = 0;         // leading spaces; after "- " the column the item's content starts at
};

bool isBlank(char c) { return c == ' ' || c == '\t'; }

// A parse error: every one ends the parse, from any depth of the recursion, so it unwinds as an
// exception to parseYamlTree (and no further: the public API returns Result).
struct Failure {
    int row, col;  // 0-based
    std::string what;
};

std::string excerpt(std::string_view s)
{
    std::string out(s.substr(0, 40));
    if (s.size() > 40)
        out += "...";
    return out;
}

void appendUtf8(std::string& out, unsigned long cp)
{
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

class Parser {
public:
    Parser(std::string_view text, const YamlLimits& limits) : m_limits(limits) { splitLines(text); }

    YamlNode document()
    {
        const int first = nextContentRow();
        if (first < 0) {
            YamlNode empty;
            empty.line = 1, empty.column = 1;
            return empty;
        }
        YamlNode root = nodeAt(first, m_lines[first].indent, -1);
        if (const int rest = nextContentRow(); rest >= 0)
            fail(rest, m_lines[rest].indent, "found '" + excerpt(content(rest)) + "' after the document's top-level value",
                 "a document has one top-level value: make the file a mapping of `key: value` lines");
        return root;
    }

private:
    YamlLimits m_limits;
    std::vector<Line> m_lines;
    int m_end = 0;    // rows [0, m_end) are the document
    int m_row = 0;    // the first row not read yet
    int m_depth = 0;  // collections open around the cursor
    int m_flowIndent = -1;  // the indentation of the block around the flow collection being read

    [[noreturn]] void fail(int row, int col, const std::string& what, const std::string& fix) const
    {
        throw Failure{row, col, what + "; " + fix};
    }

    struct DepthGuard {
        Parser& p;
        DepthGuard(Parser& parser, int row, int col) : p(parser)
        {
            if (++p.m_depth > p.m_limits.maxDepth)
                p.fail(row, col, "collections nested deeper than " + std::to_string(p.m_limits.maxDepth) + " levels",
                       "flatten the file (a resolved Megatron-Bridge config nests 3 or 4 levels)");
        }
        ~DepthGuard() { --p.m_depth; }
    };

    // --- lines ---------------------------------------------------------------------------

    void splitLines(std::string_view text)
    {
        if (text.substr(0, 3) == "\xEF\xBB\xBF")
            text.remove_prefix(3);  // a UTF-8 byte order mark
        for (size_t at = 0; at <= text.size();) {
            size_t nl = text.find('\n', at);
            if (nl == std::string_view::npos)
                nl = text.size();
            std::string_view line = text.substr(at, nl - at);
            if (!line.empty() && line.back() == '\r')
                line.remove_suffix(1);
            Line l{line, 0};
            while (l.indent < static_cast<int>(line.size()) && line[l.indent] == ' ')
                ++l.indent;
            m_lines.push_back(l);
            if (nl == text.size())
                break;
            at = nl + 1;
        }
        findDocument();
    }

    static bool marker(std::string_view line, std::string_view m)
    {
        return line.substr(0, 3) == m && (line.size() == 3 || isBlank(line[3]));
    }

    // `%` directives and a `---` open the document; `...` ends it; a second `---` is refused.
    void findDocument()
    {
        const int rows = static_cast<int>(m_lines.size());
        int start = 0;
        for (int r = 0; r < rows; ++r) {
            const std::string_view t = m_lines[r].text;
            if (marker(t, "---")) {
                if (!restIsComment(r, 3))
                    fail(r, 4, "a value on the '---' line", "put the document's content on the lines after '---'");
                start = r + 1;
                break;
            }
            if (!t.empty() && t[0] == '%')
                continue;
            if (!isBlankOrComment(r))
                break;
        }
        m_row = start;
        m_end = rows;
        for (int r = start; r < rows; ++r) {
            const std::string_view t = m_lines[r].text;
            if (marker(t, "---"))
                fail(r, 0, "a second document ('---')", "only one document per file is read: split the file");
            if (marker(t, "...")) {
                m_end = r;
                for (int after = r + 1; after < rows; ++after)
                    if (!isBlankOrComment(after) && !marker(m_lines[after].text, "..."))
                        fail(after, m_lines[after].indent, "content after the end of the document ('...')",
                             "only one document per file is read: remove it or split the file");
                break;
            }
        }
    }

    bool isBlankOrComment(int row) const
    {
        const std::string_view t = m_lines[row].text;
        const size_t at = t.find_first_not_of(" \t");
        return at == std::string_view::npos || t[at] == '#';
    }

    bool restIsComment(int row, size_t col) const
    {
        const std::string_view t = m_lines[row].text;
        while (col < t.size() && isBlank(t[col]))
            ++col;
        return col >= t.size() || t[col] == '#';
    }

    std::string_view content(int row) const { return m_lines[row].text.substr(m_lines[row].indent); }

    // A tab where the indentation is: YAML forbids it, and guessing its width would misplace keys.
    void checkTabs(int row) const
    {
        const std::string_view t = m_lines[row].text;
        const size_t at = t.find_first_not_of(' ');
        if (at != std::string_view::npos && t[at] == '\t')
            fail(row, static_cast<int>(at), "a tab in the indentation",
                 "YAML indents with spaces only: replace the tab with spaces");
    }

    // Skips blank and comment lines for good (nothing reads them again); -1 at the end.
    int nextContentRow()
    {
        while (m_row < m_end && isBlankOrComment(m_row))
            ++m_row;
        if (m_row >= m_end)
            return -1;
        checkTabs(m_row);
        return m_row;
    }

    static bool isItem(std::string_view s) { return !s.empty() && s[0] == '-' && (s.size() == 1 || isBlank(s[1])); }

    // Where a block key's ':' is on a line whose content starts at `col` (npos: not a key line).
    size_t keyColon(int row, size_t col) const
    {
        const std::string_view t = m_lines[row].text;
        if (col >= t.size())
            return std::string_view::npos;
        const char q = t[col];
        size_t i = col;
        if (q == '"' || q == '\'') {
            for (i = col + 1; i < t.size(); ++i) {
                if (q == '"' && t[i] == '\\') {
                    ++i;
                } else if (t[i] == q) {
                    if (q == '\'' && i + 1 < t.size() && t[i + 1] == '\'') {
                        ++i;
                        continue;
                    }
                    break;
                }
            }
            if (i >= t.size())
                return std::string_view::npos;
            ++i;
            while (i < t.size() && isBlank(t[i]))
                ++i;
            return i < t.size() && t[i] == ':' && (i + 1 == t.size() || isBlank(t[i + 1])) ? i : std::string_view::npos;
        }
        if (q == '[' || q == '{' || q == '#' || q == '|' || q == '>')
            return std::string_view::npos;
        for (; i < t.size(); ++i) {
            if (t[i] == ':' && (i + 1 == t.size() || isBlank(t[i + 1])))
                return i;
            if (t[i] == '#' && i > col && isBlank(t[i - 1]))
                break;
        }
        return std::string_view::npos;
    }

    // --- block structure -----------------------------------------------------------------

    // The node whose first line is `row`, its content starting at `col`, inside a collection
    // at indentation `parent` (-1: the top level).
    YamlNode nodeAt(int row, int col, int parent)
    {
        const std::string_view s = m_lines[row].text.substr(col);
        if (isItem(s))
            return sequence(col, parent);
        if (s[0] == '?' && (s.size() == 1 || isBlank(s[1])))
            fail(row, col, "a complex key ('? ')", "complex keys are not supported: write `key: value`");
        if (keyColon(row, col) != std::string_view::npos)
            return mapping(col, parent);
        return inlineValue(row, col, parent, false);
    }

    // The value of `key:` or `-` with nothing after it: the lines below, more indented than
    // `indent` (or, for a key, a sequence at the key's own indentation, as PyYAML writes them);
    // none: null at (row, col).
    YamlNode blockBelow(int indent, bool sequenceAtIndent, int row, int col)
    {
        m_row = row + 1;
        const int next = nextContentRow();
        if (next >= 0) {
            const Line& l = m_lines[next];
            if (l.indent > indent)
                return nodeAt(next, l.indent, indent);
            if (sequenceAtIndent && l.indent == indent && isItem(content(next)))
                return sequence(indent, indent);
        }
        YamlNode null;
        null.line = row + 1, null.column = col + 1;
        return null;
    }

    YamlNode mapping(int indent, int parent)
    {
        const int firstRow = m_row;
        DepthGuard depth(*this, firstRow, indent);
        YamlNode map;
        map.kind = YamlNode::Kind::Mapping;
        map.line = firstRow + 1, map.column = indent + 1;
        std::unordered_map<std::string, int> seen;  // key -> row
        for (int row; (row = nextContentRow()) >= 0;) {
            const int at = m_lines[row].indent;
            if (at < indent && at <= parent)
                break;
            if (at != indent)
                fail(row, at, "a key at indentation " + std::to_string(at) + " inside a mapping at indentation " + std::to_string(indent),
                     "indent it like its siblings");
            const std::string_view s = content(row);
            const size_t colon = keyColon(row, at);
            if (colon == std::string_view::npos) {
                if (isItem(s))
                    fail(row, at, "a sequence item ('-') where the mapping at indentation " + std::to_string(indent) + " expects a key",
                         "put the items under a key of their own (`key:`, then `- item` lines)");
                fail(row, at, "found '" + excerpt(s) + "' where the mapping at indentation " + std::to_string(indent) + " expects `key: value`",
                     "write `key: value` (with a space after the colon)");
            }
            YamlKey key = readKey(row, at, colon);
            if (const auto [it, fresh] = seen.emplace(key.text, row); !fresh)
                fail(row, at, "the key '" + key.text + "' appears twice in one mapping (first on line " + std::to_string(it->second + 1) + ")",
                     "keep one of them");
            YamlNode value = restIsComment(row, colon + 1) ? blockBelow(indent, true, row, static_cast<int>(colon) + 1)
                                                           : inlineValue(row, static_cast<int>(colon) + 1, indent, true);
            map.keys.push_back(std::move(key));
            map.items.push_back(std::move(value));
        }
        return map;
    }

    YamlKey readKey(int row, int col, size_t colon)
    {
        const std::string_view t = m_lines[row].text;
        YamlKey key;
        key.line = row + 1, key.column = col + 1;
        const char c = t[col];
        if (c == '"' || c == '\'') {
            int r = row, at = col;
            key.text = quoted(r, at);
            return key;
        }
        if (c == '&' || c == '*')
            fail(row, col, c == '&' ? "an anchor ('&')" : "an alias ('*')", "anchors are not supported: write the value out");
        if (c == '!')
            fail(row, col, "a tag on a key", "tags on keys are not supported: remove it");
        std::string_view text = t.substr(col, colon - col);
        while (!text.empty() && isBlank(text.back()))
            text.remove_suffix(1);
        if (text.empty())
            fail(row, col, "a ':' with no key before it", "write `key: value`");
        key.text = std::string(text);
        return key;
    }

    YamlNode sequence(int indent, int parent)
    {
        const int firstRow = m_row;
        DepthGuard depth(*this, firstRow, indent);
        YamlNode seq;
        seq.kind = YamlNode::Kind::Sequence;
        seq.line = firstRow + 1, seq.column = indent + 1;
        for (int row; (row = nextContentRow()) >= 0;) {
            const int at = m_lines[row].indent;
            if (at < indent && at <= parent)
                break;
            if (at != indent)
                fail(row, at, "a line at indentation " + std::to_string(at) + " inside a sequence at indentation " + std::to_string(indent),
                     "indent each '-' like the first one");
            if (!isItem(content(row))) {
                if (parent == indent)
                    break;  // the next key of the mapping this sequence is a value of
                fail(row, at, "found '" + excerpt(content(row)) + "' where the sequence at indentation " + std::to_string(indent) + " expects a '- ' item",
                     "start the line with '- ', or indent it less if it belongs to the mapping above");
            }
            const std::string_view t = m_lines[row].text;
            int col = at + 1;
            while (col < static_cast<int>(t.size()) && isBlank(t[col]))
                ++col;
            if (restIsComment(row, col)) {
                seq.items.push_back(blockBelow(indent, false, row, at + 1));
                continue;
            }
            m_lines[row].indent = col;  // "- key: v" opens a mapping at the key's column
            seq.items.push_back(nodeAt(row, col, indent));
        }
        return seq;
    }

    // --- scalars and flow collections on a line ------------------------------------------

    // The value that starts at (row, col) on a line: a scalar, a flow collection or a block
    // scalar. Continuation lines must be more indented than `indent`. `ofKey`: the value of a
    // mapping key (a tag alone may then be followed by a sequence at the key's indentation).
    YamlNode inlineValue(int row, int col, int indent, bool ofKey)
    {
        const std::string_view t = m_lines[row].text;
        while (col < static_cast<int>(t.size()) && isBlank(t[col]))
            ++col;
        std::string tag;
        std::optional<DepthGuard> tagDepth;  // a tag alone can open another value below it
        if (t[col] == '!') {
            tagDepth.emplace(*this, row, col);
            const size_t end = t.find_first_of(" \t", col);
            tag = std::string(t.substr(col, end == std::string_view::npos ? std::string_view::npos : end - col));
            col += static_cast<int>(tag.size());
            if (restIsComment(row, col)) {
                YamlNode below = blockBelow(indent, ofKey, row, col);
                below.tag = tag;
                return below;
            }
            while (isBlank(t[col]))
                ++col;
        }
        YamlNode node = untaggedValue(row, col, indent, ofKey);
        node.tag = tag;
        return node;
    }

    YamlNode untaggedValue(int row, int col, int indent, bool ofKey)
    {
        const std::string_view t = m_lines[row].text;
        const char c = t[col];
        if (c == '&' || c == '*')
            fail(row, col, c == '&' ? "an anchor ('&')" : "an alias ('*')", "anchors are not supported: write the value out");
        if (c == '|' || c == '>')
            return blockScalar(row, col, indent);
        if (c == '-' && isItem(t.substr(col)))
            fail(row, col, "a sequence item on the line of its key", "start the sequence on the next line (`key:`, then `- item`)");
        if (c == '!')
            fail(row, col, "a second tag on one value", "give a value at most one tag");
        if (c == '@' || c == '`' || c == '%')
            fail(row, col, std::string("a plain value starting with '") + c + "' (reserved in YAML)", "quote the value");
        YamlNode node;
        node.line = row + 1, node.column = col + 1;
        int r = row, at = col;
        if (c == '[' || c == '{') {
            m_flowIndent = indent;
            node = flowNode(r, at);
        } else if (c == '"' || c == '\'') {
            node.text = quoted(r, at);
            node.quoted = true;
        } else {
            return plainBlock(row, col, indent, ofKey);
        }
        while (at < static_cast<int>(m_lines[r].text.size()) && isBlank(m_lines[r].text[at]))
            ++at;
        if (!restIsComment(r, at))
            fail(r, at, "found '" + excerpt(m_lines[r].text.substr(at)) + "' after the value",
                 "end the line after the value (quote the whole value if it holds quotes or brackets)");
        m_row = r + 1;
        return node;
    }

    // A plain scalar in block context: to the end of the line or a comment, folded with the
    // more-indented lines below it (PyYAML wraps long values at 80 columns that way).
    YamlNode plainBlock(int row, int col, int indent, bool ofKey)
    {
        YamlNode node;
        node.line = row + 1, node.column = col + 1;
        bool comment = false;
        node.text = plainLine(row, col, comment);
        if (const size_t colon = keyColon(row, col); colon != std::string_view::npos)
            fail(row, static_cast<int>(colon), "a ':' inside the value '" + excerpt(m_lines[row].text.substr(col)) + "'",
                 "a value cannot hold `key: value` on the same line: quote it, or put the mapping on the lines below");
        int r = row + 1, blankLines = 0;
        for (; !comment && r < m_end; ++r) {
            if (m_lines[r].text.find_first_not_of(" \t") == std::string_view::npos) {
                ++blankLines;
                continue;
            }
            if (isBlankOrComment(r) || m_lines[r].indent <= indent)
                break;
            checkTabs(r);
            const int at = m_lines[r].indent;
            if (keyColon(r, at) != std::string_view::npos) {
                if (!ofKey)
                    fail(r, at, "a key at indentation " + std::to_string(at) + " continues the value '" + excerpt(node.text) + "' above it",
                         "a value and a mapping cannot share a node: quote the value, or indent the key as its own entry");
                fail(r, at, "a key at indentation " + std::to_string(at) + " inside a mapping at indentation " + std::to_string(indent),
                     "indent it like its siblings");
            }
            node.text += blankLines == 0 ? std::string(" ") : std::string(blankLines, '\n');
            node.text += plainLine(r, at, comment);
            blankLines = 0;
        }
        m_row = r;
        return node;
    }

    std::string plainLine(int row, int col, bool& comment) const
    {
        const std::string_view t = m_lines[row].text;
        size_t end = t.size();
        for (size_t i = col + 1; i < t.size(); ++i)
            if (t[i] == '#' && isBlank(t[i - 1])) {
                end = i;
                comment = true;
                break;
            }
        std::string_view s = t.substr(col, end - col);
        while (!s.empty() && isBlank(s.back()))
            s.remove_suffix(1);
        return std::string(s);
    }

    // `|` or `>` with optional chomping (+/-) and indentation (1-9) indicators.
    YamlNode blockScalar(int row, int col, int indent)
    {
        const std::string_view t = m_lines[row].text;
        YamlNode node;
        node.line = row + 1, node.column = col + 1;
        node.quoted = true;
        const bool folded = t[col] == '>';
        char chomp = ' ';
        int explicitIndent = 0;
        size_t i = col + 1;
        for (; i < t.size() && !isBlank(t[i]); ++i) {
            if ((t[i] == '+' || t[i] == '-') && chomp == ' ')
                chomp = t[i];
            else if (t[i] >= '1' && t[i] <= '9' && explicitIndent == 0)
                explicitIndent = t[i] - '0';
            else
                fail(row, static_cast<int>(i), std::string("'") + t[i] + "' after the block scalar's '" + t[col] + "'",
                     "write | or > with at most a chomping indicator (+ or -) and an indentation digit, then the text on the lines below");
        }
        if (!restIsComment(row, i))
            fail(row, static_cast<int>(i), "text after the block scalar's indicator", "put the text on the lines below, indented");
        int bodyIndent = explicitIndent > 0 ? std::max(indent, 0) + explicitIndent : -1;
        std::vector<std::string_view> lines;
        int r = row + 1;
        for (; r < m_end; ++r) {
            const std::string_view l = m_lines[r].text;
            const int spaces = m_lines[r].indent;
            const bool empty = l.find_first_not_of(' ') == std::string_view::npos;
            if (!empty && bodyIndent < 0) {
                if (spaces <= indent)
                    break;
                bodyIndent = spaces;
            }
            if (empty) {
                lines.push_back(bodyIndent >= 0 && static_cast<int>(l.size()) > bodyIndent ? l.substr(bodyIndent) : std::string_view{});
                continue;
            }
            if (spaces < bodyIndent)
                break;
            if (bodyIndent <= indent)
                break;
            lines.push_back(l.substr(bodyIndent));
        }
        size_t trailing = 0;
        while (!lines.empty() && lines.back().empty()) {
            lines.pop_back();
            ++trailing;
        }
        // Trailing blank rows after the body belong to whatever follows, not the scalar: r stops
        // at the first row that is not the scalar's; blank rows are skipped there anyway.
        node.text = folded ? foldLines(lines) : joinLines(lines);
        if (chomp == '+')
            node.text += std::string(lines.empty() ? trailing : trailing + 1, '\n');
        else if (chomp == ' ' && !lines.empty())
            node.text += '\n';
        m_row = r;
        return node;
    }

    static std::string joinLines(const std::vector<std::string_view>& lines)
    {
        std::string out;
        for (size_t i = 0; i < lines.size(); ++i)
            (out += i ? "\n" : "") += lines[i];
        return out;
    }

    // `>`: a break between two lines of text becomes a space; empty lines become breaks; lines
    // indented beyond the body (and the breaks around them) are kept as they are.
    static std::string foldLines(const std::vector<std::string_view>& lines)
    {
        std::string out;
        bool started = false, previousText = false;
        size_t empties = 0;
        for (const std::string_view l : lines) {
            if (l.empty()) {
                ++empties;
                continue;
            }
            const bool text = !isBlank(l[0]);
            if (!started)
                out += std::string(empties, '\n');
            else if (previousText && text)
                out += empties == 0 ? std::string(" ") : std::string(empties, '\n');
            else
                out += std::string(empties + 1, '\n');
            out += l;
            started = true, previousText = text, empties = 0;
        }
        return out;
    }

    // A 'single' or "double" quoted scalar starting at (row, col); leaves (row, col) after the
    // closing quote. Line breaks inside fold: one break is a space, n empty lines are n breaks;
    // in double quotes a '\' at the end of a line joins the lines without a space.
    std::string quoted(int& row, int& col)
    {
        const int openRow = row, openCol = col;
        const char q = m_lines[row].text[col];
        std::string out;
        size_t hard = 0;            // out[0, hard) is not trailing white space to drop at a break
        bool escapedBreak = false;  // the line ended in '\\'
        ++col;
        for (;;) {
            const std::string_view t = m_lines[row].text;
            if (col >= static_cast<int>(t.size())) {
                while (out.size() > hard && isBlank(out.back()))
                    out.pop_back();
                size_t breaks = 0;
                for (;;) {
                    if (++row >= m_end)
                        fail(openRow, openCol, std::string(q == '"' ? "a double" : "a single") + "-quoted value that never closes",
                             std::string("end it with a matching ") + q);
                    col = 0;
                    const std::string_view next = m_lines[row].text;
                    while (col < static_cast<int>(next.size()) && isBlank(next[col]))
                        ++col;
                    if (col < static_cast<int>(next.size()))
                        break;
                    ++breaks;
                }
                if (breaks > 0)
                    out += std::string(breaks, '\n');
                else if (!escapedBreak)
                    out += ' ';
                hard = out.size();
                escapedBreak = false;
                continue;
            }
            const char c = t[col];
            if (c == q) {
                if (q == '\'' && col + 1 < static_cast<int>(t.size()) && t[col + 1] == '\'') {
                    out += '\'';
                    col += 2;
                    hard = out.size();
                    continue;
                }
                ++col;
                return out;
            }
            if (q == '"' && c == '\\') {
                if (col + 1 >= static_cast<int>(t.size())) {
                    escapedBreak = true;  // the white space before it stays
                    hard = out.size();
                    ++col;
                    continue;
                }
                escape(row, col, out);
                hard = out.size();
                continue;
            }
            out += c;
            ++col;
            if (!isBlank(c))
                hard = out.size();
        }
    }

    void escape(int row, int& col, std::string& out) const
    {
        const std::string_view t = m_lines[row].text;
        const char e = t[col + 1];
        static const std::string_view simple = "0abtnvfre \"/\\\t";
        static const char* values = "\0\a\b\t\n\v\f\r\x1b \"/\\\t";
        if (const size_t at = simple.find(e); at != std::string_view::npos) {
            out += values[at];
            col += 2;
            return;
        }
        const int digits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
        unsigned long cp = 0;
        if (e == 'N')
            cp = 0x85;
        else if (e == '_')
            cp = 0xA0;
        else if (e == 'L')
            cp = 0x2028;
        else if (e == 'P')
            cp = 0x2029;
        else if (digits > 0 && col + 2 + digits <= static_cast<int>(t.size())) {
            const std::string_view hex = t.substr(col + 2, digits);
            const auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), cp, 16);
            if (ec != std::errc() || end != hex.data() + hex.size() || cp > 0x10FFFF)
                fail(row, col, "the escape '\\" + std::string(t.substr(col + 1, digits + 1)) + "' is not a valid code point",
                     "write \\x with 2, \\u with 4 or \\U with 8 hex digits");
            col += digits;
        } else {
            fail(row, col, "the escape '\\" + std::string(1, e) + "' in a double-quoted value",
                 "write \\\\ for a backslash, or use single quotes, where '\\' is literal");
        }
        appendUtf8(out, cp);
        col += 2;
    }

    // --- flow collections ----------------------------------------------------------------

    // The character at (row, col); '\n' past a line's end; '\0' past the document's end.
    char peek(int row, int col) const
    {
        if (row >= m_end)
            return '\0';
        const std::string_view t = m_lines[row].text;
        return col < static_cast<int>(t.size()) ? t[col] : '\n';
    }

    void skipFlowSpace(int& row, int& col) const
    {
        for (;;) {
            const char c = peek(row, col);
            if (c == '\n') {
                ++row, col = 0;
                // A flow collection's lines are indented beyond the block it is in; a line that
                // is not is the block's next entry, so the collection was never closed.
                if (row < m_end && !isBlankOrComment(row) && m_lines[row].indent <= m_flowIndent)
                    row = m_end;
            } else if (isBlank(c)) {
                ++col;
            } else if (c == '#' && (col == 0 || isBlank(m_lines[row].text[col - 1]))) {
                col = static_cast<int>(m_lines[row].text.size());
            } else {
                return;
            }
        }
    }

    static bool flowEnd(char c) { return c == ',' || c == ']' || c == '}' || c == '[' || c == '{'; }

    YamlNode flowNode(int& row, int& col)
    {
        skipFlowSpace(row, col);
        YamlNode node;
        node.line = row + 1, node.column = col + 1;
        const char c = peek(row, col);
        if (c == '\0')
            fail(m_end - 1, 0, "the file ends inside a flow collection", "close every '[' with ']' and every '{' with '}'");
        if (c == '[' || c == '{')
            return flowCollection(row, col);
        if (c == '&' || c == '*')
            fail(row, col, c == '&' ? "an anchor ('&')" : "an alias ('*')", "anchors are not supported: write the value out");
        if (c == '"' || c == '\'') {
            node.text = quoted(row, col);
            node.quoted = true;
            return node;
        }
        if (c == '!') {
            DepthGuard tagDepth(*this, row, col);  // `!a !b !c ...` recurses once per tag
            std::string tag;
            while (!isBlank(peek(row, col)) && peek(row, col) != '\n' && peek(row, col) != '\0' && !flowEnd(peek(row, col)))
                tag += m_lines[row].text[col++];
            skipFlowSpace(row, col);
            if (flowEnd(peek(row, col)) && peek(row, col) != '[' && peek(row, col) != '{') {
                node.tag = tag;  // a tagged empty value
                return node;
            }
            YamlNode tagged = flowNode(row, col);
            tagged.tag = tag;
            return tagged;
        }
        // A plain scalar: up to , [ ] { }, ": " or a comment; folded across lines with spaces.
        for (bool first = true;; first = false) {
            const std::string_view t = m_lines[row].text;
            size_t i = col;
            for (; i < t.size(); ++i) {
                if (flowEnd(t[i]) || (t[i] == '#' && i > 0 && isBlank(t[i - 1])))
                    break;
                if (t[i] == ':' && (i + 1 == t.size() || isBlank(t[i + 1]) || flowEnd(t[i + 1])))
                    break;
            }
            std::string_view piece = t.substr(col, i - col);
            while (!piece.empty() && isBlank(piece.back()))
                piece.remove_suffix(1);
            if (!piece.empty())
                (node.text += (first || node.text.empty()) ? "" : " ") += piece;
            col = static_cast<int>(i);
            if (i < t.size())
                break;
            int r = row, at = static_cast<int>(t.size());
            skipFlowSpace(r, at);
            const char next = peek(r, at);
            if (next == '\0' || flowEnd(next) || next == ':' || next == '#')
                break;
            row = r, col = at;
        }
        if (node.text.empty())
            fail(row, col, "an empty entry in a flow collection", "remove the extra ',' or write null");
        return node;
    }

    YamlNode flowCollection(int& row, int& col)
    {
        const int openRow = row, openCol = col;
        DepthGuard depth(*this, row, col);
        const bool isMap = m_lines[row].text[col] == '{';
        const char close = isMap ? '}' : ']';
        YamlNode node;
        node.kind = isMap ? YamlNode::Kind::Mapping : YamlNode::Kind::Sequence;
        node.line = row + 1, node.column = col + 1;
        std::unordered_map<std::string, int> seen;
        ++col;
        for (;;) {
            skipFlowSpace(row, col);
            char c = peek(row, col);
            if (c == '\0')
                fail(openRow, openCol, std::string("a '") + (isMap ? '{' : '[') + "' that never closes", std::string("close it with '") + close + "'");
            if (c == close) {
                ++col;
                return node;
            }
            const int itemRow = row, itemCol = col;
            YamlNode item = flowNode(row, col);
            skipFlowSpace(row, col);
            c = peek(row, col);
            if (isMap) {
                if (!item.isScalar())
                    fail(itemRow, itemCol, "a collection as a key", "keys are scalars: write {key: value}");
                if (const auto [it, fresh] = seen.emplace(item.text, itemRow); !fresh)
                    fail(itemRow, itemCol, "the key '" + item.text + "' appears twice in one mapping (first on line " + std::to_string(it->second + 1) + ")",
                         "keep one of them");
                node.keys.push_back({item.text, itemRow + 1, itemCol + 1});
                YamlNode value;
                value.line = row + 1, value.column = col + 1;
                if (c == ':') {
                    ++col;
                    skipFlowSpace(row, col);
                    c = peek(row, col);
                    if (c != ',' && c != '}')
                        value = flowNode(row, col);
                    skipFlowSpace(row, col);
                    c = peek(row, col);
                }
                node.items.push_back(std::move(value));
            } else {
                if (c == ':')
                    fail(row, col, "a `key: value` inside [ ]", "write the pair as a mapping: [{key: value}]");
                node.items.push_back(std::move(item));
            }
            if (c == ',') {
                ++col;
            } else if (c != close) {
                if (c == '\0')
                    continue;  // reported as the unclosed bracket above
                fail(row, col, std::string("found '") + (c == '\n' ? std::string("the end of the line") : std::string(1, c)) + "' after an entry",
                     std::string("separate entries with ',' and close with '") + close + "'");
            }
        }
    }
};

}  // namespace

bool YamlNode::isNull() const
{
    return kind == Kind::Scalar && !quoted && (text.empty() || text == "null" || text == "Null" || text == "NULL" || text == "~");
}

const YamlNode* YamlNode::find(std::string_view key) const
{
    for (size_t i = 0; i < keys.size(); ++i)
        if (keys[i].text == key)
            return &items[i];
    return nullptr;
}

Result<YamlNode> parseYamlTree(std::string_view text, const YamlLimits& limits)
{
    if (text.size() > limits.maxBytes)
        return makeError(ErrorCode::Corrupt,
                         "line 1, column 1: the file is " + std::to_string(text.size()) + " bytes, more than the " +
                             (limits.maxBytes >= (1u << 20) ? std::to_string(limits.maxBytes >> 20) + " MiB"
                                                            : std::to_string(limits.maxBytes) + " bytes") +
                             " a YAML file may be; check that it is the right file");
    try {
        Parser parser(text, limits);
        return parser.document();
    } catch (const Failure& f) {
        return makeError(ErrorCode::Corrupt,
                         "line " + std::to_string(f.row + 1) + ", column " + std::to_string(f.col + 1) + ": " + f.what);
    }
}

YamlErrorParts yamlErrorParts(const Error& error)
{
    YamlErrorParts parts;
    std::string_view m = error.message;
    if (std::sscanf(error.message.c_str(), "line %d, column %d: ", &parts.line, &parts.column) == 2)
        m.remove_prefix(std::min(m.size(), m.find(": ") + 2));
    else
        parts.line = parts.column = 0;
    const size_t split = m.rfind("; ");
    parts.what = std::string(m.substr(0, split));
    parts.fix = split == std::string_view::npos ? std::string() : std::string(m.substr(split + 2));
    return parts;
}

std::optional<double> yamlDouble(const YamlNode& node)
{
    if (!node.isScalar() || node.quoted)
        return std::nullopt;
    std::string_view s = node.text;
    const bool negative = !s.empty() && s[0] == '-';
    if (!s.empty() && (s[0] == '-' || s[0] == '+'))
        s.remove_prefix(1);
    if (s == ".inf" || s == ".Inf" || s == ".INF")
        return negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    if (s == ".nan" || s == ".NaN" || s == ".NAN")
        return node.text.size() == s.size() ? std::optional<double>(std::numeric_limits<double>::quiet_NaN()) : std::nullopt;
    // Digits, an optional fraction, an optional exponent: what PyYAML writes (1.0e-05, 4096).
    // from_chars would also take "inf", "nan" and hex floats, which YAML does not.
    size_t i = 0, digits = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])))
        ++i, ++digits;
    if (i < s.size() && s[i] == '.')
        for (++i; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i)
            ++digits;
    if (digits == 0)
        return std::nullopt;
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        ++i;
        if (i < s.size() && (s[i] == '+' || s[i] == '-'))
            ++i;
        const size_t exponentStart = i;
        while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])))
            ++i;
        if (i == exponentStart)
            return std::nullopt;
    }
    if (i != s.size())
        return std::nullopt;
    double value = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc() || end != s.data() + s.size())
        return std::nullopt;  // beyond double range
    return negative ? -value : value;
}

std::optional<bool> yamlBool(const YamlNode& node)
{
    if (!node.isScalar() || node.quoted)
        return std::nullopt;
    const std::string& t = node.text;
    if (t == "true" || t == "True" || t == "TRUE")
        return true;
    if (t == "false" || t == "False" || t == "FALSE")
        return false;
    return std::nullopt;
}

}  // namespace wb::core
