// Every row of shared/fixtures/selector-vectors.tsv (Kubernetes' own label and field selector
// test cases) as its own test, named by its line number in the file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "kubestat/apimachinery/field_selector.h"
#include "kubestat/apimachinery/label_selector.h"
#include "kubestat/testing/fixtures.h"

namespace kubestat {
namespace {

constexpr char kVectorsFile[] = "selector-vectors.tsv";

struct VectorRow {
  int line = 0;  // 1-based line of the file; line 1 is the header.
  std::string kind;
  std::string selector_json;
  std::string valid;
  std::string labels_json;
  std::string matches;
  std::string canonical_json;
  std::string source;
  std::string note;
};

// How gtest shows a row when a test fails.
void PrintTo(const VectorRow& row, std::ostream* os) {
  *os << kVectorsFile << ":" << row.line << " [" << row.kind << " " << row.selector_json << "]";
}

// ------------------------------------------------------------------------------------------
// A reader for the simple JSON the file holds: strings and flat objects of strings.

class JsonReader {
 public:
  explicit JsonReader(std::string_view text) : s_(text) {}

  std::optional<std::string> String() {
    SkipSpace();
    if (!Eat('"')) return std::nullopt;
    std::string out;
    while (pos_ < s_.size()) {
      const char c = s_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos_ >= s_.size()) return std::nullopt;
      const char e = s_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out.push_back(e);
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'u': {
          std::optional<unsigned> cp = Hex4();
          if (!cp) return std::nullopt;
          unsigned code = *cp;
          if (code >= 0xD800 && code <= 0xDBFF) {
            if (!Eat('\\') || !Eat('u')) return std::nullopt;
            std::optional<unsigned> low = Hex4();
            if (!low || *low < 0xDC00 || *low > 0xDFFF) return std::nullopt;
            code = 0x10000 + ((code - 0xD800) << 10) + (*low - 0xDC00);
          }
          AppendUtf8(code, out);
          break;
        }
        default:
          return std::nullopt;
      }
    }
    return std::nullopt;
  }

  std::optional<std::map<std::string, std::string>> Object() {
    std::map<std::string, std::string> out;
    SkipSpace();
    if (!Eat('{')) return std::nullopt;
    SkipSpace();
    if (Eat('}')) return out;
    while (true) {
      std::optional<std::string> key = String();
      SkipSpace();
      if (!key || !Eat(':')) return std::nullopt;
      std::optional<std::string> value = String();
      if (!value) return std::nullopt;
      out[*key] = *value;
      SkipSpace();
      if (Eat('}')) return out;
      if (!Eat(',')) return std::nullopt;
    }
  }

  bool AtEnd() {
    SkipSpace();
    return pos_ == s_.size();
  }

 private:
  void SkipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
  }
  bool Eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  std::optional<unsigned> Hex4() {
    if (s_.size() - pos_ < 4) return std::nullopt;
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= c - '0';
      } else if (c >= 'a' && c <= 'f') {
        v |= c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        v |= c - 'A' + 10;
      } else {
        return std::nullopt;
      }
    }
    return v;
  }
  static void AppendUtf8(unsigned cp, std::string& out) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
};

std::string JsonString(const std::string& cell) {
  JsonReader reader(cell);
  std::optional<std::string> s = reader.String();
  EXPECT_TRUE(s.has_value() && reader.AtEnd()) << "not a JSON string: " << cell;
  return s.value_or("");
}

std::map<std::string, std::string> JsonObject(const std::string& cell) {
  JsonReader reader(cell);
  std::optional<std::map<std::string, std::string>> m = reader.Object();
  EXPECT_TRUE(m.has_value() && reader.AtEnd()) << "not a flat JSON object: " << cell;
  return m.value_or(std::map<std::string, std::string>{});
}

// ------------------------------------------------------------------------------------------
// Loading. Runs while gtest registers tests, so it must not use test assertions: an absent
// file gives no rows (SelectorVectorsFileTest then skips or fails with the reason).

std::vector<std::string> SplitTabs(const std::string& line) {
  std::vector<std::string> cells;
  size_t start = 0;
  while (true) {
    const size_t tab = line.find('\t', start);
    if (tab == std::string::npos) {
      cells.push_back(line.substr(start));
      return cells;
    }
    cells.push_back(line.substr(start, tab - start));
    start = tab + 1;
  }
}

std::optional<std::string> ReadVectorsFile() {
  std::optional<std::filesystem::path> dir = testing::FixturesDir();
  if (!dir) return std::nullopt;
  std::ifstream in(*dir / kVectorsFile, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::vector<VectorRow> LoadRows() {
  std::vector<VectorRow> rows;
  std::optional<std::string> text = ReadVectorsFile();
  if (!text) return rows;
  std::istringstream lines(*text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    if (number == 1 || line.empty()) continue;  // header
    if (line.back() == '\r') line.pop_back();
    std::vector<std::string> c = SplitTabs(line);
    c.resize(8);
    rows.push_back(VectorRow{number, c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]});
  }
  return rows;
}

const std::vector<VectorRow>& Rows() {
  static const std::vector<VectorRow>* rows = new std::vector<VectorRow>(LoadRows());
  return *rows;
}

// ------------------------------------------------------------------------------------------
// The parsed requirements a TestSetSelectorParser row asserts, e.g.
// "x NotIn ['abc', '', 'def']; z In ['']" or "bar Exists".

struct ExpectedRequirement {
  std::string key;
  LabelOperator op;
  std::set<std::string> values;
};

std::optional<LabelOperator> OperatorFromGoName(std::string_view name) {
  if (name == "Exists") return LabelOperator::kExists;
  if (name == "DoesNotExist") return LabelOperator::kDoesNotExist;
  if (name == "Equals") return LabelOperator::kEquals;
  if (name == "DoubleEquals") return LabelOperator::kDoubleEquals;
  if (name == "NotEquals") return LabelOperator::kNotEquals;
  if (name == "In") return LabelOperator::kIn;
  if (name == "NotIn") return LabelOperator::kNotIn;
  if (name == "GreaterThan") return LabelOperator::kGreaterThan;
  if (name == "LessThan") return LabelOperator::kLessThan;
  return std::nullopt;
}

std::optional<std::vector<ExpectedRequirement>> ExpectedRequirements(const std::string& note) {
  constexpr std::string_view kMarker = "sorted by key): ";
  const size_t at = note.find(kMarker);
  if (at == std::string::npos) return std::nullopt;
  std::vector<ExpectedRequirement> out;
  std::string_view rest = std::string_view(note).substr(at + kMarker.size());
  while (!rest.empty()) {
    const size_t end = rest.find("; ");
    std::string_view item = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 2);
    const size_t sp1 = item.find(' ');
    if (sp1 == std::string_view::npos) return std::nullopt;
    ExpectedRequirement r;
    r.key = std::string(item.substr(0, sp1));
    std::string_view after = item.substr(sp1 + 1);
    const size_t sp2 = after.find(' ');
    std::optional<LabelOperator> op = OperatorFromGoName(after.substr(0, sp2));
    if (!op) return std::nullopt;
    r.op = *op;
    if (sp2 != std::string_view::npos) {
      std::string_view list = after.substr(sp2 + 1);  // ['a', '']
      size_t q = 0;
      while ((q = list.find('\'', q)) != std::string_view::npos) {
        const size_t close = list.find('\'', q + 1);
        if (close == std::string_view::npos) return std::nullopt;
        r.values.insert(std::string(list.substr(q + 1, close - q - 1)));
        q = close + 1;
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

// ------------------------------------------------------------------------------------------

class SelectorVectorTest : public ::testing::TestWithParam<VectorRow> {};

void CheckLabelRow(const VectorRow& row) {
  const std::string text = JsonString(row.selector_json);
  absl::StatusOr<LabelSelector> selector = LabelSelector::Parse(text);
  if (row.valid == "false") {
    ASSERT_FALSE(selector.ok()) << "parsed as " << selector->String();
    EXPECT_EQ(selector.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_FALSE(selector.status().message().empty());
    return;
  }
  ASSERT_EQ(row.valid, "true");
  ASSERT_TRUE(selector.ok()) << selector.status();
  if (row.canonical_json != "-") {
    EXPECT_EQ(selector->String(), JsonString(row.canonical_json));
  }
  if (row.labels_json != "-" && !row.matches.empty()) {
    const std::map<std::string, std::string> labels = JsonObject(row.labels_json);
    EXPECT_EQ(selector->Matches(labels), row.matches == "true");
  }
  if (std::optional<std::vector<ExpectedRequirement>> expected = ExpectedRequirements(row.note)) {
    const std::vector<LabelRequirement>& got = selector->requirements();
    ASSERT_EQ(got.size(), expected->size()) << selector->String();
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].key(), (*expected)[i].key);
      EXPECT_EQ(got[i].op(), (*expected)[i].op) << got[i].String();
      EXPECT_EQ(std::set<std::string>(got[i].values().begin(), got[i].values().end()),
                (*expected)[i].values)
          << got[i].String();
    }
  }
  // The canonical text reads back as the same selector.
  absl::StatusOr<LabelSelector> again = LabelSelector::Parse(selector->String());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *selector);
}

void CheckFieldRow(const VectorRow& row) {
  const std::string text = JsonString(row.selector_json);
  absl::StatusOr<FieldSelector> selector = FieldSelector::Parse(text);
  if (row.valid == "false") {
    ASSERT_FALSE(selector.ok()) << "parsed as " << selector->String();
    EXPECT_EQ(selector.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_FALSE(selector.status().message().empty());
    return;
  }
  ASSERT_EQ(row.valid, "true");
  ASSERT_TRUE(selector.ok()) << selector.status();
  if (row.canonical_json != "-") {
    EXPECT_EQ(selector->String(), JsonString(row.canonical_json));
  }
  if (row.labels_json != "-" && !row.matches.empty()) {
    const std::map<std::string, std::string> fields = JsonObject(row.labels_json);
    EXPECT_EQ(selector->Matches(fields), row.matches == "true");
  }
  absl::StatusOr<FieldSelector> again = FieldSelector::Parse(selector->String());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *selector);
}

TEST_P(SelectorVectorTest, BehavesAsKubernetes) {
  const VectorRow& row = GetParam();
  SCOPED_TRACE(::testing::Message() << kVectorsFile << ":" << row.line << " " << row.kind << " "
                                    << row.selector_json << " (" << row.source << ")");
  if (row.kind == "label") {
    CheckLabelRow(row);
  } else if (row.kind == "field") {
    CheckFieldRow(row);
  } else if (row.kind == "field-escape") {
    const std::string raw = JsonString(row.selector_json);
    const std::string escaped = JsonString(row.canonical_json);
    EXPECT_EQ(EscapeFieldValue(raw), escaped);
    absl::StatusOr<std::string> unescaped = UnescapeFieldValue(escaped);
    ASSERT_TRUE(unescaped.ok()) << unescaped.status();
    EXPECT_EQ(*unescaped, raw);
  } else if (row.kind == "field-unescape") {
    ASSERT_EQ(row.valid, "false");
    absl::StatusOr<std::string> unescaped = UnescapeFieldValue(JsonString(row.selector_json));
    ASSERT_FALSE(unescaped.ok()) << "unescaped to " << *unescaped;
    EXPECT_EQ(unescaped.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(unescaped.status().message()),
                ::testing::HasSubstr("invalid escape sequence"));
  } else {
    FAIL() << "unknown kind " << row.kind;
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, SelectorVectorTest, ::testing::ValuesIn(Rows()),
                         [](const ::testing::TestParamInfo<VectorRow>& info) {
                           return std::to_string(info.param.line);
                         });
// Without the fixtures there are no rows; SelectorVectorsFileTest reports the skip.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SelectorVectorTest);

TEST(SelectorVectorsFileTest, LoadsEveryRowOfEveryKind) {
  KUBESTAT_REQUIRE_FIXTURES();
  const std::string text = testing::ReadFixture(kVectorsFile);
  const auto lines = std::count(text.begin(), text.end(), '\n');
  EXPECT_EQ(static_cast<long>(Rows().size()), lines - 1);  // all but the header
  std::set<std::string> kinds;
  for (const VectorRow& row : Rows()) kinds.insert(row.kind);
  EXPECT_THAT(kinds,
              ::testing::UnorderedElementsAre("label", "field", "field-escape", "field-unescape"));
}

}  // namespace
}  // namespace kubestat
