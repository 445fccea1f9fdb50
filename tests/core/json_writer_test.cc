#include "kubestat/core/json_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kubestat/apimachinery/object_meta.h"

// The round trip through an independent parser needs simdjson linked to this test; the
// build defines KUBESTAT_TEST_WITH_SIMDJSON when it does.
#ifdef KUBESTAT_TEST_WITH_SIMDJSON
#include <simdjson.h>
#endif

namespace kubestat {
namespace {

std::string Quoted(std::string_view s) {
  std::string out;
  JsonWriter::AppendQuoted(out, s);
  return out;
}

TEST(JsonWriterTest, WritesCompactDocumentsWithCommas) {
  JsonWriter w;
  w.BeginObject()
      .Member("kind", "PodMetrics")
      .Key("metadata")
      .BeginObject()
      .Member("name", "web-1")
      .EndObject()
      .Key("containers")
      .BeginArray()
      .Int(1)
      .Uint(18446744073709551615u)
      .Double(0.5)
      .Bool(true)
      .Bool(false)
      .Null()
      .String("x")
      .EndArray()
      .Member("count", int64_t{-42})
      .Member("ok", true)
      .EndObject();
  EXPECT_EQ(w.str(), R"({"kind":"PodMetrics","metadata":{"name":"web-1"},)"
                     R"("containers":[1,18446744073709551615,0.5,true,false,null,"x"],)"
                     R"("count":-42,"ok":true})");
}

TEST(JsonWriterTest, PlainKeyAndStringWriteWhatKeyAndStringWriteForPlainText) {
  for (int indent : {0, 2}) {
    JsonWriter plain(indent);
    JsonWriter escaped(indent);
    plain.BeginObject().PlainKey("window").PlainString("1m0s").PlainKey("cpu");
    plain.BeginObject().PlainKey("95th").PlainString("1234567n").EndObject();
    plain.PlainKey("list").BeginArray().PlainString("2026-11-21T10:00:00Z").PlainString("");
    plain.EndArray().PlainKey("count").Uint(7).EndObject();
    escaped.BeginObject().Key("window").String("1m0s").Key("cpu");
    escaped.BeginObject().Key("95th").String("1234567n").EndObject();
    escaped.Key("list").BeginArray().String("2026-11-21T10:00:00Z").String("");
    escaped.EndArray().Key("count").Uint(7).EndObject();
    EXPECT_EQ(plain.str(), escaped.str()) << "indent " << indent;
  }
  JsonWriter w;
  w.BeginObject().PlainKey("a").PlainString("b").Key("c").String("d").EndObject();
  EXPECT_EQ(w.str(), R"({"a":"b","c":"d"})");
}

TEST(JsonWriterTest, WritesEmptyContainersCompactly) {
  JsonWriter w;
  w.BeginObject().Key("a").BeginObject().EndObject().Key("b").BeginArray().EndArray().EndObject();
  EXPECT_EQ(w.str(), R"({"a":{},"b":[]})");
}

TEST(JsonWriterTest, WritesTopLevelScalarsAndArrays) {
  EXPECT_EQ(JsonWriter().String("a").str(), R"("a")");
  EXPECT_EQ(JsonWriter().Int(7).str(), "7");
  EXPECT_EQ(JsonWriter().BeginArray().BeginArray().EndArray().Int(1).EndArray().str(), "[[],1]");
}

TEST(JsonWriterTest, PrettyModeIndentsLikeGoMarshalIndent) {
  JsonWriter w(2);
  w.BeginObject()
      .Member("kind", "Status")
      .Key("metadata")
      .BeginObject()
      .EndObject()
      .Key("items")
      .BeginArray()
      .BeginObject()
      .Member("name", "a")
      .Key("tags")
      .BeginArray()
      .EndArray()
      .EndObject()
      .Int(2)
      .EndArray()
      .Key("nested")
      .BeginObject()
      .Key("deep")
      .BeginArray()
      .Null()
      .EndArray()
      .EndObject()
      .EndObject();
  EXPECT_EQ(w.str(),
            "{\n"
            "  \"kind\": \"Status\",\n"
            "  \"metadata\": {},\n"
            "  \"items\": [\n"
            "    {\n"
            "      \"name\": \"a\",\n"
            "      \"tags\": []\n"
            "    },\n"
            "    2\n"
            "  ],\n"
            "  \"nested\": {\n"
            "    \"deep\": [\n"
            "      null\n"
            "    ]\n"
            "  }\n"
            "}");
}

TEST(JsonWriterTest, PrettyModeUsesTheGivenIndentWidth) {
  JsonWriter w(4);
  w.BeginArray().Int(1).BeginObject().Member("k", "v").EndObject().EndArray();
  EXPECT_EQ(w.str(), "[\n    1,\n    {\n        \"k\": \"v\"\n    }\n]");
}

TEST(JsonWriterTest, RawInsertsSerializedJsonAsOneValue) {
  JsonWriter w;
  w.BeginObject().Key("a").Raw(R"({"x":1})").Key("b").Raw("[1,2]").EndObject();
  EXPECT_EQ(w.str(), R"({"a":{"x":1},"b":[1,2]})");
  JsonWriter arr;
  arr.BeginArray().Raw("1").Raw("\"s\"").EndArray();
  EXPECT_EQ(arr.str(), R"([1,"s"])");
}

TEST(JsonWriterTest, TakeMovesTheDocumentOut) {
  JsonWriter w;
  w.BeginArray().EndArray();
  EXPECT_EQ(w.Take(), "[]");
}

TEST(JsonWriterTest, DoubleWritesTheShortestRoundTripForm) {
  auto d = [](double v) { return JsonWriter().Double(v).str(); };
  EXPECT_EQ(d(0.1), "0.1");
  EXPECT_EQ(d(1.0), "1");
  EXPECT_EQ(d(-2.5), "-2.5");
  EXPECT_EQ(d(1e21), "1e+21");
  EXPECT_EQ(d(123456.789), "123456.789");
  EXPECT_EQ(d(5e-324), "5e-324");
  EXPECT_EQ(d(1.7976931348623157e308), "1.7976931348623157e+308");
  EXPECT_EQ(d(0.30000000000000004), "0.30000000000000004");
  EXPECT_EQ(d(-0.0), "-0");
}

TEST(JsonWriterTest, DoubleWritesNullForNanAndInfinities) {
  JsonWriter w;
  w.BeginArray()
      .Double(std::numeric_limits<double>::quiet_NaN())
      .Double(std::numeric_limits<double>::infinity())
      .Double(-std::numeric_limits<double>::infinity())
      .EndArray();
  EXPECT_EQ(w.str(), "[null,null,null]");
}

TEST(JsonWriterTest, IntegersAtTheirLimits) {
  JsonWriter w;
  w.BeginArray()
      .Int(std::numeric_limits<int64_t>::min())
      .Int(std::numeric_limits<int64_t>::max())
      .Uint(0)
      .EndArray();
  EXPECT_EQ(w.str(), "[-9223372036854775808,9223372036854775807,0]");
}

TEST(JsonWriterEscapeTest, EscapesQuoteAndBackslash) {
  EXPECT_EQ(Quoted(R"(say "hi" \ bye)"), R"("say \"hi\" \\ bye")");
  EXPECT_EQ(Quoted("/"), R"("/")");  // solidus needs no escape
  EXPECT_EQ(Quoted(""), R"("")");
}

TEST(JsonWriterEscapeTest, EscapesEveryControlCharacter) {
  for (int c = 0; c < 0x20; ++c) {
    std::string expected;
    switch (c) {
      case '\b':
        expected = R"("\b")";
        break;
      case '\f':
        expected = R"("\f")";
        break;
      case '\n':
        expected = R"("\n")";
        break;
      case '\r':
        expected = R"("\r")";
        break;
      case '\t':
        expected = R"("\t")";
        break;
      default: {
        char buf[16];
        std::snprintf(buf, sizeof(buf), "\"\\u%04x\"", c);
        expected = buf;
      }
    }
    EXPECT_EQ(Quoted(std::string(1, static_cast<char>(c))), expected) << "byte " << c;
  }
  EXPECT_EQ(Quoted("a\x1f"
                   "b\x7f"),
            "\"a\\u001fb\x7f\"");  // DEL is not a control here
}

TEST(JsonWriterEscapeTest, KeepsValidUtf8AsIs) {
  const std::string valid =
      "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xef\xbf\xbf \xf4\x8f\xbf\xbf \xed\x9f\xbf "
      "\xee\x80\x80";
  EXPECT_EQ(Quoted(valid), "\"" + valid + "\"");
}

constexpr std::string_view kFffd = "\xef\xbf\xbd";

struct InvalidCase {
  const char* name;
  std::string input;
  std::string expected;  // content between the quotes
};

TEST(JsonWriterEscapeTest, ReplacesInvalidUtf8WithReplacementCharacter) {
  const std::string r(kFffd);
  const std::vector<InvalidCase> cases = {
      {"lone continuation", "a\x80z", "a" + r + "z"},
      {"two continuations", "\x80\xbf", r + r},
      {"overlong slash C0", "\xc0\xaf", r + r},
      {"overlong C1", "\xc1\xbf", r + r},
      {"overlong 3-byte", "\xe0\x80\xaf", r + r + r},
      {"overlong 4-byte", "\xf0\x80\x80\xaf", r + r + r + r},
      {"surrogate high", "\xed\xa0\x80", r + r + r},
      {"surrogate low", "\xed\xbf\xbf", r + r + r},
      {"above U+10FFFF", "\xf4\x90\x80\x80", r + r + r + r},
      {"F5 lead", "\xf5\x80\x80\x80", r + r + r + r},
      {"FF byte", "\xff", r},
      {"truncated 2-byte at end", "ab\xc3", "ab" + r},
      {"truncated 3-byte at end", "\xe2\x82", r},
      {"truncated 4-byte at end", "\xf0\x9f\x98", r},
      {"truncated 3-byte before ASCII", "\xe2\x82z", r + "z"},
      {"truncated 4-byte before quote", "\xf0\x9f\"", r + "\\\""},
      {"truncated before a valid char", "\xe2\xc3\xa9", r + "\xc3\xa9"},
  };
  for (const InvalidCase& c : cases) {
    EXPECT_EQ(Quoted(c.input), "\"" + c.expected + "\"") << c.name;
  }
}

TEST(JsonWriterEscapeTest, KeysAreEscapedToo) {
  JsonWriter w;
  w.BeginObject().Member("a\"b\n\xff", "v").EndObject();
  EXPECT_EQ(w.str(), "{\"a\\\"b\\n\xef\xbf\xbd\":\"v\"}");
}

// A random document, built as a tree so the test can compare what a parser reads back.
struct Node {
  enum Kind { kNull, kBool, kInt, kUint, kDouble, kString, kArray, kObject } kind = kNull;
  bool b = false;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  std::string s;
  // children[k] has the key keys[k] (unused in arrays). Two vectors, because a pair holding
  // the incomplete Node is not allowed where a vector of Node is.
  std::vector<std::string> keys;
  std::vector<Node> children;
};

class RandomDocuments {
 public:
  explicit RandomDocuments(uint64_t seed) : rng_(seed) {}

  Node Make(int depth) {
    const int kind = Uniform(0, depth >= 4 ? 5 : 7);
    Node n;
    n.kind = static_cast<Node::Kind>(kind);
    switch (n.kind) {
      case Node::kNull:
        break;
      case Node::kBool:
        n.b = Uniform(0, 1) == 1;
        break;
      case Node::kInt:
        n.i = static_cast<int64_t>(rng_());
        break;
      case Node::kUint:
        n.u = rng_() | (uint64_t{1} << 63);  // above int64, so it stays unsigned
        break;
      case Node::kDouble: {
        const uint64_t bits = rng_();
        std::memcpy(&n.d, &bits, sizeof(bits));
        if (!std::isfinite(n.d)) n.d = 0.25;
        break;
      }
      case Node::kString:
        n.s = ValidString();
        break;
      case Node::kArray:
      case Node::kObject: {
        const int count = Uniform(0, 5);
        for (int k = 0; k < count; ++k) {
          n.keys.push_back(ValidString());
          n.children.push_back(Make(depth + 1));
        }
        break;
      }
    }
    return n;
  }

  // Valid UTF-8 with a mix of ASCII, control characters, quotes and multi-byte characters.
  std::string ValidString() {
    std::string s;
    const int len = Uniform(0, 12);
    for (int k = 0; k < len; ++k) {
      switch (Uniform(0, 5)) {
        case 0:
          s.push_back(static_cast<char>(Uniform(0, 0x1f)));
          break;
        case 1:
          s.push_back("\"\\/"[Uniform(0, 2)]);
          break;
        case 2:
          s += "\xc3\xa9";
          break;
        case 3:
          s += "\xf0\x9f\x98\x80";
          break;
        default:
          s.push_back(static_cast<char>(Uniform(0x20, 0x7e)));
      }
    }
    return s;
  }

  std::string AnyBytes() {
    std::string s;
    const int len = Uniform(0, 16);
    for (int k = 0; k < len; ++k) s.push_back(static_cast<char>(Uniform(0, 255)));
    return s;
  }

 private:
  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  std::mt19937_64 rng_;
};

void Write(JsonWriter& w, const Node& n) {
  switch (n.kind) {
    case Node::kNull:
      w.Null();
      break;
    case Node::kBool:
      w.Bool(n.b);
      break;
    case Node::kInt:
      w.Int(n.i);
      break;
    case Node::kUint:
      w.Uint(n.u);
      break;
    case Node::kDouble:
      w.Double(n.d);
      break;
    case Node::kString:
      w.String(n.s);
      break;
    case Node::kArray:
      w.BeginArray();
      for (const Node& child : n.children) Write(w, child);
      w.EndArray();
      break;
    case Node::kObject:
      w.BeginObject();
      for (size_t k = 0; k < n.children.size(); ++k) {
        w.Key(n.keys[k]);
        Write(w, n.children[k]);
      }
      w.EndObject();
      break;
  }
}

TEST(JsonWriterTest, PrettyAndCompactFormsDifferOnlyInWhitespaceOutsideStrings) {
  RandomDocuments gen(7);
  for (int i = 0; i < 200; ++i) {
    const Node doc = gen.Make(0);
    JsonWriter compact, pretty(3);
    Write(compact, doc);
    Write(pretty, doc);
    std::string stripped;
    bool in_string = false, escaped = false;
    for (char c : pretty.str()) {
      if (in_string) {
        stripped.push_back(c);
        if (escaped) {
          escaped = false;
        } else if (c == '\\') {
          escaped = true;
        } else if (c == '"') {
          in_string = false;
        }
      } else if (c == '"') {
        in_string = true;
        stripped.push_back(c);
      } else if (c != ' ' && c != '\n') {
        stripped.push_back(c);
      }
    }
    ASSERT_EQ(stripped, compact.str());
  }
}

TEST(ObjectMetaTest, WritesKubernetesFieldNamesInOrder) {
  ObjectMeta meta;
  meta.name = "web-1";
  meta.namespace_name = "shop";
  meta.uid = "0b6c0f0e-1b7c-4b4a-9d55-6d7e2b9f3a11";
  meta.resource_version = "42";
  meta.creation_timestamp =
      Timestamp(std::chrono::seconds(1795255210) + std::chrono::milliseconds(900));
  meta.labels = {{"tier", "front"}, {"app", "web"}};
  JsonWriter w;
  w.BeginObject().Member("kind", "PodMetrics");
  WriteObjectMeta(w, meta);
  w.EndObject();
  EXPECT_EQ(w.str(), R"({"kind":"PodMetrics","metadata":{"name":"web-1","namespace":"shop",)"
                     R"("uid":"0b6c0f0e-1b7c-4b4a-9d55-6d7e2b9f3a11","resourceVersion":"42",)"
                     R"("creationTimestamp":"2026-11-21T10:00:10Z",)"
                     R"("labels":{"app":"web","tier":"front"}}})");
}

TEST(ObjectMetaTest, LeavesOutEmptyFieldsAndWritesNullForAnUnsetTime) {
  ObjectMeta meta;
  meta.name = "node-1";
  JsonWriter w;
  WriteObjectMetaValue(w, meta);
  EXPECT_EQ(w.str(), R"({"name":"node-1","creationTimestamp":null})");
}

TEST(ObjectMetaTest, PrettyForm) {
  ObjectMeta meta;
  meta.name = "app";
  meta.labels = {{"a", "b"}};
  JsonWriter w(2);
  w.BeginObject();
  WriteObjectMeta(w, meta);
  w.EndObject();
  EXPECT_EQ(w.str(),
            "{\n  \"metadata\": {\n    \"name\": \"app\",\n    \"creationTimestamp\": null,\n"
            "    \"labels\": {\n      \"a\": \"b\"\n    }\n  }\n}");
}

#ifdef KUBESTAT_TEST_WITH_SIMDJSON

// Compares a parsed simdjson element with the tree it was written from.
void ExpectSame(simdjson::dom::element e, const Node& n, const std::string& path) {
  switch (n.kind) {
    case Node::kNull:
      ASSERT_TRUE(e.is_null()) << path;
      break;
    case Node::kBool:
      ASSERT_EQ(e.get_bool().value(), n.b) << path;
      break;
    case Node::kInt:
      ASSERT_EQ(e.get_int64().value(), n.i) << path;
      break;
    case Node::kUint:
      ASSERT_EQ(e.get_uint64().value(), n.u) << path;
      break;
    case Node::kDouble: {
      double got = 0;
      if (e.is_int64()) {
        got = static_cast<double>(e.get_int64().value());
      } else if (e.is_uint64()) {
        got = static_cast<double>(e.get_uint64().value());
      } else {
        got = e.get_double().value();
      }
      // Bit-exact; -0 reads back as 0 through the integer path, which compares equal.
      ASSERT_EQ(got, n.d) << path;
      break;
    }
    case Node::kString:
      ASSERT_EQ(std::string(e.get_string().value()), n.s) << path;
      break;
    case Node::kArray: {
      simdjson::dom::array arr = e.get_array().value();
      ASSERT_EQ(arr.size(), n.children.size()) << path;
      size_t k = 0;
      for (simdjson::dom::element child : arr) {
        ExpectSame(child, n.children[k], path + "/" + std::to_string(k));
        ++k;
      }
      break;
    }
    case Node::kObject: {
      simdjson::dom::object obj = e.get_object().value();
      ASSERT_EQ(obj.size(), n.children.size()) << path;
      size_t k = 0;
      for (simdjson::dom::key_value_pair field : obj) {
        ASSERT_EQ(std::string(field.key), n.keys[k]) << path;
        ExpectSame(field.value, n.children[k], path + "/" + n.keys[k]);
        ++k;
      }
      break;
    }
  }
}

TEST(JsonWriterRoundTripTest, SeededRandomDocumentsReadBackThroughSimdjson) {
  RandomDocuments gen(20261121);
  simdjson::dom::parser parser;
  for (int i = 0; i < 500; ++i) {
    const Node doc = gen.Make(0);
    for (int indent : {0, 2}) {
      JsonWriter w(indent);
      Write(w, doc);
      simdjson::dom::element root;
      const auto error = parser.parse(w.str()).get(root);
      ASSERT_EQ(error, simdjson::SUCCESS) << simdjson::error_message(error) << "\n" << w.str();
      ExpectSame(root, doc, "");
    }
  }
}

TEST(JsonWriterRoundTripTest, ArbitraryBytesAlwaysGiveValidJson) {
  RandomDocuments gen(99);
  simdjson::dom::parser parser;
  for (int i = 0; i < 5000; ++i) {
    const std::string bytes = gen.AnyBytes();
    JsonWriter w;
    w.BeginObject().Member(bytes, bytes).EndObject();
    simdjson::dom::element root;
    ASSERT_EQ(parser.parse(w.str()).get(root), simdjson::SUCCESS) << w.str();
    // Valid UTF-8 input reads back unchanged.
    simdjson::dom::object obj = root.get_object().value();
    if (simdjson::validate_utf8(bytes.data(), bytes.size())) {
      ASSERT_EQ(std::string(obj.begin().key()), bytes);
    }
  }
}

#endif  // KUBESTAT_TEST_WITH_SIMDJSON

}  // namespace
}  // namespace kubestat
