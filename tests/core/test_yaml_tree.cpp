// The YAML subset reader (core/yaml_tree.h): every construct PyYAML's safe_dump writes (the style
// of Megatron-Bridge's resolved config), what people write by hand, the errors with their line,
// column and wording, and the depth and size bounds.
#include "core/yaml_tree.h"

#include <QtTest/QtTest>

#include <cmath>
#include <string>

using namespace wb::core;

namespace {

// The tree in one line: scalars as 'text' (plain) or "text" (quoted), {k: v, ...}, [a, ...].
std::string shape(const YamlNode& n)
{
    if (n.isScalar())
        return n.quoted ? "\"" + n.text + "\"" : "'" + n.text + "'";
    std::string out = n.isMapping() ? "{" : "[";
    for (size_t i = 0; i < n.items.size(); ++i) {
        out += i ? ", " : "";
        if (n.isMapping())
            out += n.keys[i].text + ": ";
        out += shape(n.items[i]);
    }
    return out + (n.isMapping() ? "}" : "]");
}

YamlNode parsed(const std::string& text)
{
    auto r = parseYamlTree(text);
    if (!r)
        qWarning("%s", r.error().message.c_str());
    return r ? *r : YamlNode{};
}

}  // namespace

class TestYamlTree : public QObject {
    Q_OBJECT
private slots:
    void constructs_data();
    void constructs();
    void linesAndColumns();
    void foldedAndBlockScalars_data();
    void foldedAndBlockScalars();
    void numbersAndBooleans();
    void tagsAreKeptAndIgnored();
    void errors_data();
    void errors();
    void depthAndSizeLimits();
};

void TestYamlTree::constructs_data()
{
    QTest::addColumn<QString>("yaml");
    QTest::addColumn<QString>("tree");
    QTest::newRow("nested mappings") << "model:\n  vision_config:\n    num_layers: 27\n  hidden_size: 2048\ntrain: {}\n"
                                     << "{model: {vision_config: {num_layers: '27'}, hidden_size: '2048'}, train: {}}";
    QTest::newRow("sequence at its key's indentation (PyYAML)")
        << "cuda_graph_scope:\n- moe_router\n- moe_preprocess\nnext: 1\n"
        << "{cuda_graph_scope: ['moe_router', 'moe_preprocess'], next: '1'}";
    QTest::newRow("indented sequence") << "a:\n  - 1\n  - 2\nb: 3\n" << "{a: ['1', '2'], b: '3'}";
    QTest::newRow("sequence of mappings")
        << "patterns:\n- _target_: x.Rule\n  pattern: '*.bias'\n- _target_: y\nafter: 1\n"
        << "{patterns: [{_target_: 'x.Rule', pattern: \"*.bias\"}, {_target_: 'y'}], after: '1'}";
    QTest::newRow("nested sequences") << "- - a\n  - b\n- c\n-\n  - d\n" << "[['a', 'b'], 'c', ['d']]";
    QTest::newRow("nulls") << "a: null\nb: ~\nc:\nd: None\n" << "{a: 'null', b: '~', c: '', d: 'None'}";
    QTest::newRow("empty collections") << "a: {}\nb: []\n" << "{a: {}, b: []}";
    QTest::newRow("flow collections")
        << "a: [256, 256]\nb: {x: 1, y: [p, 'q, r']}\nc: [1,\n  2]  # over two lines\n"
        << "{a: ['256', '256'], b: {x: '1', y: ['p', \"q, r\"]}, c: ['1', '2']}";
    QTest::newRow("single quotes") << "a: 'it''s'\nb: ''\n" << "{a: \"it's\", b: \"\"}";
    QTest::newRow("double-quote escapes")
        << "a: \"tab\\tq\\\"b\\\\s\\u00e9\\x41\"\n" << "{a: \"tab\tq\"b\\s\xc3\xa9" "A\"}";
    QTest::newRow("comments") << "# head\na: 1  # one\n# between\nb: x#y\nc: '# not a comment'\n"
                              << "{a: '1', b: 'x#y', c: \"# not a comment\"}";
    QTest::newRow("document markers") << "%YAML 1.1\n---\na: 1\n...\n# after\n" << "{a: '1'}";
    QTest::newRow("quoted keys and colons in values")
        << "\"a.b\": 1\n'c': http://host:80/x\n" << "{a.b: '1', c: 'http://host:80/x'}";
    QTest::newRow("CRLF line ends") << "a: 1\r\nb:\r\n- x\r\n" << "{a: '1', b: ['x']}";
    QTest::newRow("empty document") << "# only a comment\n\n" << "''";
    QTest::newRow("top-level scalar") << "just text\n" << "'just text'";
}

void TestYamlTree::constructs()
{
    QFETCH(QString, yaml);
    QFETCH(QString, tree);
    auto r = parseYamlTree(yaml.toStdString());
    QVERIFY2(r.ok(), r.ok() ? "" : r.error().message.c_str());
    QCOMPARE(QString::fromStdString(shape(*r)), tree);
}

void TestYamlTree::linesAndColumns()
{
    const YamlNode root = parsed("_target_: C\nmodel:\n  vision_config:\n    num_layers: 27\n  scope:\n  - attn\n  -   mlp\n"
                                 "data: [a,\n   b]\n");
    QCOMPARE(root.keys.size(), size_t(3));
    QCOMPARE(root.keys[1].text, std::string("model"));
    QCOMPARE(root.keys[1].line, 2);
    QCOMPARE(root.keys[1].column, 1);
    const YamlNode* model = root.find("model");
    QVERIFY(model && model->isMapping());
    QCOMPARE(model->line, 3);
    QCOMPARE(model->column, 3);
    const YamlNode* vision = model->find("vision_config");
    QCOMPARE(vision->keys[0].line, 4);
    QCOMPARE(vision->keys[0].column, 5);
    QCOMPARE(vision->items[0].line, 4);
    QCOMPARE(vision->items[0].column, 17);
    const YamlNode* scope = model->find("scope");
    QVERIFY(scope && scope->isSequence());
    QCOMPARE(scope->line, 6);
    QCOMPARE(scope->column, 3);
    QCOMPARE(scope->items[1].line, 7);
    QCOMPARE(scope->items[1].column, 7);
    const YamlNode* data = root.find("data");
    QCOMPARE(data->items[1].line, 9);
    QCOMPARE(data->items[1].column, 4);
    QVERIFY(!root.find("nope"));
    QVERIFY(!scope->find("attn"));  // a sequence has no keys
}

void TestYamlTree::foldedAndBlockScalars_data()
{
    QTest::addColumn<QString>("yaml");
    QTest::addColumn<QString>("text");
    QTest::addColumn<bool>("quoted");
    // PyYAML wraps at 80 columns: continuation lines more indented, joined with one space.
    QTest::newRow("plain folded") << "prompt: Describe this image. Answer in one sentence\n    and name the colours.\nnext: 1\n"
                                  << "Describe this image. Answer in one sentence and name the colours." << false;
    QTest::newRow("plain, an empty line is a break") << "a: one\n  two\n\n  three\n" << "one two\nthree" << false;
    QTest::newRow("single-quoted folded") << "a: 'it''s a long\n  value'\n" << "it's a long value" << true;
    QTest::newRow("double-quoted escaped break") << "a: \"abc\\\n  def\\\n  \\ ghi\"\n" << "abcdef ghi" << true;
    QTest::newRow("double-quoted trailing spaces dropped") << "a: \"x   \n  y\"\n" << "x y" << true;
    QTest::newRow("double-quoted space before an escaped break kept") << "a: \"x \\\n  y\"\n" << "x y" << true;
    QTest::newRow("literal") << "a: |\n  line 1\n    indented\n\n  line 3\nb: 1\n" << "line 1\n  indented\n\nline 3\n" << true;
    QTest::newRow("literal strip") << "a: |-\n  x\n  y\n\n" << "x\ny" << true;
    QTest::newRow("literal keep") << "a: |+\n  x\n\n\nb: 1\n" << "x\n\n\n" << true;
    QTest::newRow("literal with indentation indicator") << "a: |2\n    lead\n  x\n" << "  lead\nx\n" << true;
    QTest::newRow("literal holds a #") << "a: |\n  # not a comment\n" << "# not a comment\n" << true;
    QTest::newRow("folded") << "a: >\n  one\n  two\n\n  para\n    kept\n  end\n" << "one two\npara\n  kept\nend\n" << true;
    QTest::newRow("folded strip in a sequence") << "- >-\n  a\n  b\n- c\n" << "a b" << true;
}

void TestYamlTree::foldedAndBlockScalars()
{
    QFETCH(QString, yaml);
    QFETCH(QString, text);
    QFETCH(bool, quoted);
    const YamlNode root = parsed(yaml.toStdString());
    const YamlNode& value = root.items.at(0);  // the first key's value, or the first item
    QCOMPARE(QString::fromStdString(value.text), text);
    QCOMPARE(value.quoted, quoted);
}

void TestYamlTree::numbersAndBooleans()
{
    const YamlNode root = parsed("eps: 1.0e-05\nbig: 5e6\nn: -3\ninf: .inf\nninf: -.inf\nnan: .nan\nq: '1.5'\n"
                                 "t: true\nf: False\nword: yes\nhex: 0x10\nnull: null\n");
    QCOMPARE(yamlDouble(*root.find("eps")), std::optional<double>(1.0e-05));
    QCOMPARE(yamlDouble(*root.find("big")), std::optional<double>(5e6));
    QCOMPARE(yamlDouble(*root.find("n")), std::optional<double>(-3));
    QVERIFY(std::isinf(*yamlDouble(*root.find("inf"))) && *yamlDouble(*root.find("inf")) > 0);
    QVERIFY(std::isinf(*yamlDouble(*root.find("ninf"))) && *yamlDouble(*root.find("ninf")) < 0);
    QVERIFY(std::isnan(*yamlDouble(*root.find("nan"))));
    QVERIFY(!yamlDouble(*root.find("q")));    // quoted: a string
    QVERIFY(!yamlDouble(*root.find("hex")));  // not what PyYAML's safe_dump writes
    QCOMPARE(yamlBool(*root.find("t")), std::optional<bool>(true));
    QCOMPARE(yamlBool(*root.find("f")), std::optional<bool>(false));
    QVERIFY(!yamlBool(*root.find("word")));
    QVERIFY(root.find("null")->isNull());
    QVERIFY(!root.find("q")->isNull());
    QVERIFY(!parsed("a: 'null'\n").items[0].isNull());
}

void TestYamlTree::tagsAreKeptAndIgnored()
{
    const YamlNode root = parsed("image_size: !!python/tuple\n- 256\n- 320\nblob: !!binary |\n  AAEC\nname: !str x\n"
                                 "flow: [!!int 1, 2]\n");
    const YamlNode* size = root.find("image_size");
    QVERIFY(size && size->isSequence());
    QCOMPARE(size->tag, std::string("!!python/tuple"));
    QCOMPARE(shape(*size), std::string("['256', '320']"));
    QCOMPARE(root.find("blob")->text, std::string("AAEC\n"));
    QCOMPARE(root.find("blob")->tag, std::string("!!binary"));
    QCOMPARE(root.find("name")->text, std::string("x"));
    QCOMPARE(root.find("flow")->items[0].text, std::string("1"));
    QCOMPARE(root.find("flow")->items[0].tag, std::string("!!int"));
}

void TestYamlTree::errors_data()
{
    QTest::addColumn<QString>("yaml");
    QTest::addColumn<int>("line");
    QTest::addColumn<int>("column");
    QTest::addColumn<QString>("says");
    QTest::newRow("key indented less than its siblings")
        << "model:\n  a: 1\n b: 2\n" << 3 << 2 << "a key at indentation 1 inside a mapping at indentation 2; indent it like its siblings";
    QTest::newRow("key indented more than its siblings")
        << "model:\n  a: 1\n    b: 2\n" << 3 << 5 << "a key at indentation 4 inside a mapping at indentation 2; indent it like its siblings";
    QTest::newRow("key indented more after a quoted value")
        << "model:\n  a: 'x'\n     b: 2\n" << 3 << 6 << "a key at indentation 5 inside a mapping at indentation 2";
    QTest::newRow("tab indentation") << "model:\n\ta: 1\n" << 2 << 1 << "a tab in the indentation; YAML indents with spaces only";
    QTest::newRow("duplicate key") << "model:\n  tp: 1\n  pp: 2\n  tp: 4\n" << 4 << 3
                                   << "the key 'tp' appears twice in one mapping (first on line 2); keep one of them";
    QTest::newRow("duplicate flow key") << "a: {x: 1, x: 2}\n" << 1 << 11 << "the key 'x' appears twice";
    QTest::newRow("anchor") << "a: &shared 1\n" << 1 << 4 << "an anchor ('&'); anchors are not supported";
    QTest::newRow("alias") << "a: 1\nb: *shared\n" << 2 << 4 << "an alias ('*'); anchors are not supported";
    QTest::newRow("two documents") << "a: 1\n---\nb: 2\n" << 2 << 1 << "a second document ('---')";
    QTest::newRow("unclosed flow") << "a: [1, 2\nb: 3\n" << 1 << 4 << "a '[' that never closes; close it with ']'";
    QTest::newRow("unclosed flow at the end") << "a:\n  b: {x: 1,\n    y: 2\n" << 2 << 6 << "a '{' that never closes";
    QTest::newRow("unclosed quote") << "a: \"abc\nb: 1\n" << 1 << 4 << "a double-quoted value that never closes";
    QTest::newRow("mapping inside a plain value") << "a: b: c\n" << 1 << 5 << "a ':' inside the value 'b: c'";
    QTest::newRow("not key: value") << "model:\n  tp: 1\n  pp 2\n" << 3 << 3 << "found 'pp 2' where the mapping at indentation 2 expects `key: value`";
    QTest::newRow("item inside a mapping") << "a: 1\n- b\n" << 2 << 1 << "a sequence item ('-') where the mapping at indentation 0 expects a key";
    QTest::newRow("key inside an indented sequence") << "a:\n  - x\n  y: 1\n" << 3 << 3 << "where the sequence at indentation 2 expects a '- ' item";
    QTest::newRow("text after a quote") << "a: 'x' y\n" << 1 << 8 << "found 'y' after the value";
    QTest::newRow("bad escape") << "a: \"\\q\"\n" << 1 << 5 << "the escape '\\q'";
    QTest::newRow("complex key") << "? a\n: b\n" << 1 << 1 << "complex keys are not supported";
    QTest::newRow("item after a key on its line") << "a: - b\n" << 1 << 4 << "a sequence item on the line of its key";
    QTest::newRow("flow pair in a sequence") << "a: [x: 1]\n" << 1 << 6 << "a `key: value` inside [ ]";
    QTest::newRow("reserved character") << "a: @x\n" << 1 << 4 << "reserved in YAML); quote the value";
    QTest::newRow("block scalar header") << "a: |x\n  t\n" << 1 << 5 << "'x' after the block scalar's '|'";
}

void TestYamlTree::errors()
{
    QFETCH(QString, yaml);
    QFETCH(int, line);
    QFETCH(int, column);
    QFETCH(QString, says);
    const auto r = parseYamlTree(yaml.toStdString());
    QVERIFY(!r.ok());
    QCOMPARE(r.error().code, ErrorCode::Corrupt);
    const QString message = QString::fromStdString(r.error().message);
    QVERIFY2(message.startsWith(QStringLiteral("line %1, column %2: ").arg(line).arg(column)), qPrintable(message));
    QVERIFY2(message.contains(says), qPrintable(message));
    const YamlErrorParts parts = yamlErrorParts(r.error());
    QCOMPARE(parts.line, line);
    QCOMPARE(parts.column, column);
    QVERIFY2(!parts.what.empty() && !parts.fix.empty(), qPrintable(message));  // every error says what to do
}

void TestYamlTree::depthAndSizeLimits()
{
    // Flow, block mappings and compact sequences each stop at the bound with an error, not a crash.
    std::string flow(100000, '[');
    std::string block;
    for (int i = 0; i < 300; ++i)
        block += std::string(i, ' ') + "k:\n";
    std::string items;
    for (int i = 0; i < 1000; ++i)
        items += "- ";
    items += "x\n";
    for (const std::string& deep : {flow, block, items}) {
        const auto r = parseYamlTree(deep);
        QVERIFY(!r.ok());
        QVERIFY2(r.error().message.find("nested deeper than 256 levels") != std::string::npos, r.error().message.c_str());
    }
    // At the bound itself it still reads.
    std::string ok;
    for (int i = 0; i < 255; ++i)
        ok += std::string(i, ' ') + "k:\n";
    QVERIFY(parseYamlTree(ok).ok());
    YamlLimits small;
    small.maxDepth = 3;
    QVERIFY(parseYamlTree("a:\n  b:\n    c: 1\n", small).ok());
    QVERIFY(!parseYamlTree("a:\n  b:\n    c:\n      d: 1\n", small).ok());
    small.maxBytes = 16;
    const auto big = parseYamlTree("a: 0123456789abcdef\n", small);
    QVERIFY(!big.ok());
    QVERIFY2(big.error().message.find("more than the 16 bytes a YAML file may be") != std::string::npos, big.error().message.c_str());
    QCOMPARE(YamlLimits{}.maxBytes, size_t(64) << 20);
}

QTEST_GUILESS_MAIN(TestYamlTree)
#include "test_yaml_tree.moc"
