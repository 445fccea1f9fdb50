#include "kubestat/apimachinery/label_selector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "kubestat/testing/allocation_counter.h"

namespace kubestat {
namespace {

using ::testing::HasSubstr;
using Labels = std::map<std::string, std::string>;

LabelSelector MustParse(std::string_view text) {
  absl::StatusOr<LabelSelector> s = LabelSelector::Parse(text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status();
  return s.ok() ? *std::move(s) : LabelSelector();
}

std::string ParseError(std::string_view text) {
  absl::StatusOr<LabelSelector> s = LabelSelector::Parse(text);
  EXPECT_FALSE(s.ok()) << text << " parsed as " << s->String();
  if (s.ok()) return "";
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << text;
  return std::string(s.status().message());
}

constexpr char kLabelKeyRegexError[] =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
constexpr char kLabelValueRegexError[] =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

TEST(LabelSelectorTest, ParsesEveryOperatorIntoRequirementsSortedByKey) {
  LabelSelector s = MustParse("i in (b,a,b),h notin (c),g=v,f==v,e!=v,d>5,c<0,!b,a");
  ASSERT_EQ(s.requirements().size(), 9u);
  const std::vector<std::pair<std::string, LabelOperator>> expected = {
      {"a", LabelOperator::kExists},    {"b", LabelOperator::kDoesNotExist},
      {"c", LabelOperator::kLessThan},  {"d", LabelOperator::kGreaterThan},
      {"e", LabelOperator::kNotEquals}, {"f", LabelOperator::kDoubleEquals},
      {"g", LabelOperator::kEquals},    {"h", LabelOperator::kNotIn},
      {"i", LabelOperator::kIn}};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(s.requirements()[i].key(), expected[i].first);
    EXPECT_EQ(s.requirements()[i].op(), expected[i].second) << s.requirements()[i].String();
  }
  EXPECT_THAT(s.requirements()[8].values(), ::testing::ElementsAre("a", "b"));
  EXPECT_THAT(s.requirements()[0].values(), ::testing::IsEmpty());
  EXPECT_EQ(s.String(), "a,!b,c<0,d>5,e!=v,f==v,g=v,h notin (c),i in (a,b)");
}

TEST(LabelSelectorTest, ComparisonBoundMustAlsoBeAValidLabelValue) {
  // strconv.ParseInt accepts "-0", but a label value may not start with '-'.
  EXPECT_THAT(ParseError("c<-0"), HasSubstr("values[0][c]: Invalid value: \"-0\""));
}

TEST(LabelSelectorTest, WhitespaceBetweenTokensIsIgnored) {
  LabelSelector s = MustParse(" \tx\r\n=\ny ,\tz  in\t( a ,\rb ) , ! w ");
  EXPECT_EQ(s.String(), "!w,x=y,z in (a,b)");
}

TEST(LabelSelectorTest, InAndNotinAreOrdinaryWordsAsKeysAndValues) {
  LabelSelector s = MustParse("in in (notin,in),notin=in");
  EXPECT_EQ(s.String(), "in in (in,notin),notin=in");
  EXPECT_TRUE(s.Matches(Labels{{"in", "notin"}, {"notin", "in"}}));
}

TEST(LabelSelectorTest, EmptySelectorMatchesEverything) {
  LabelSelector s = MustParse("");
  EXPECT_TRUE(s.Empty());
  EXPECT_EQ(s.String(), "");
  EXPECT_TRUE(s.Matches(Labels{}));
  EXPECT_TRUE(LabelSelector().Matches(Labels{{"a", "b"}}));
  EXPECT_TRUE(MustParse("  \t ").Empty());
}

TEST(LabelSelectorTest, MissingKeyMatchesOnlyNegativeOperators) {
  const Labels none;
  EXPECT_TRUE(MustParse("x!=a").Matches(none));
  EXPECT_TRUE(MustParse("x notin (a)").Matches(none));
  EXPECT_TRUE(MustParse("!x").Matches(none));
  EXPECT_FALSE(MustParse("x=a").Matches(none));
  EXPECT_FALSE(MustParse("x==a").Matches(none));
  EXPECT_FALSE(MustParse("x in (a)").Matches(none));
  EXPECT_FALSE(MustParse("x>1").Matches(none));
  EXPECT_FALSE(MustParse("x<1").Matches(none));
  EXPECT_FALSE(MustParse("x").Matches(none));
  // An empty value is still a value: "x=" needs the key.
  EXPECT_FALSE(MustParse("x=").Matches(none));
  EXPECT_TRUE(MustParse("x=").Matches(Labels{{"x", ""}}));
}

TEST(LabelSelectorTest, SetOperatorsCompareAgainstEveryValue) {
  LabelSelector in = MustParse("tier in (web,db,cache)");
  EXPECT_TRUE(in.Matches(Labels{{"tier", "db"}}));
  EXPECT_FALSE(in.Matches(Labels{{"tier", "queue"}}));
  LabelSelector notin = MustParse("tier notin (web,db)");
  EXPECT_FALSE(notin.Matches(Labels{{"tier", "web"}}));
  EXPECT_TRUE(notin.Matches(Labels{{"tier", "queue"}}));
  // A large set (binary search path).
  std::string text = "k in (";
  for (int i = 0; i < 40; ++i) text += (i ? "," : "") + ("v" + std::to_string(i));
  text += ")";
  LabelSelector big = MustParse(text);
  EXPECT_TRUE(big.Matches(Labels{{"k", "v0"}}));
  EXPECT_TRUE(big.Matches(Labels{{"k", "v39"}}));
  EXPECT_TRUE(big.Matches(Labels{{"k", "v17"}}));
  EXPECT_FALSE(big.Matches(Labels{{"k", "v40"}}));
  EXPECT_FALSE(big.Matches(Labels{{"k", "v"}}));
}

TEST(LabelSelectorTest, IntegerComparisonsParseTheLabelAsGoDoes) {
  LabelSelector gt = MustParse("x>10");
  EXPECT_TRUE(gt.Matches(Labels{{"x", "11"}}));
  EXPECT_FALSE(gt.Matches(Labels{{"x", "10"}}));
  EXPECT_TRUE(gt.Matches(Labels{{"x", "+11"}}));  // strconv.ParseInt accepts a sign
  EXPECT_TRUE(gt.Matches(Labels{{"x", "0011"}}));
  EXPECT_FALSE(gt.Matches(Labels{{"x", "11.0"}}));
  EXPECT_FALSE(gt.Matches(Labels{{"x", "1_1"}}));
  EXPECT_FALSE(gt.Matches(Labels{{"x", ""}}));
  EXPECT_FALSE(gt.Matches(Labels{{"x", "99999999999999999999"}}));  // out of range
  LabelSelector lt = MustParse("x<0");
  EXPECT_TRUE(lt.Matches(Labels{{"x", "-9223372036854775808"}}));
  EXPECT_FALSE(lt.Matches(Labels{{"x", "-9223372036854775809"}}));
  EXPECT_TRUE(MustParse("x>9223372036854775806").Matches(Labels{{"x", "9223372036854775807"}}));
  EXPECT_THAT(ParseError("x>9223372036854775808"),
              HasSubstr("for 'Gt', 'Lt' operators, the value must be an integer"));
}

TEST(LabelSelectorTest, KeyLengthLimits) {
  const std::string name63(63, 'a');
  const std::string prefix253 = std::string(126, 'b') + "." + std::string(126, 'c');
  ASSERT_EQ(prefix253.size(), 253u);
  EXPECT_EQ(MustParse(name63).String(), name63);
  EXPECT_EQ(MustParse(prefix253 + "/" + name63).String(), prefix253 + "/" + name63);
  EXPECT_EQ(ParseError(name63 + "a"), "unable to parse requirement: <nil>: Invalid value: \"" +
                                          name63 + "a\": name part must be no more than 63 bytes");
  EXPECT_EQ(ParseError("d" + prefix253 + "/a"),
            "unable to parse requirement: <nil>: Invalid value: \"d" + prefix253 +
                "/a\": prefix part must be no more than 253 bytes");
}

TEST(LabelSelectorTest, KeyCharacterRules) {
  for (const char* ok :
       {"a", "A", "0", "a.b_c-D9", "example.com/MyName", "k8s.io/a", "a-b.c/x", "1.2.3/4"}) {
    EXPECT_TRUE(LabelSelector::Parse(ok).ok()) << ok;
  }
  EXPECT_EQ(ParseError("-a"), std::string("unable to parse requirement: <nil>: Invalid value: "
                                          "\"-a\": name part ") +
                                  kLabelKeyRegexError);
  EXPECT_THAT(ParseError("a_"), HasSubstr("name part must consist of"));
  EXPECT_THAT(ParseError(".a"), HasSubstr("name part must consist of"));
  EXPECT_THAT(ParseError("a@b"), HasSubstr("name part must consist of"));
  EXPECT_EQ(ParseError("/a"),
            "unable to parse requirement: <nil>: Invalid value: \"/a\": prefix part must be "
            "non-empty");
  EXPECT_EQ(ParseError("a/"), std::string("unable to parse requirement: <nil>: Invalid value: "
                                          "\"a/\": name part must be non-empty; name part ") +
                                  kLabelKeyRegexError);
  EXPECT_THAT(ParseError("Example.com/a"),
              HasSubstr("prefix part a lowercase RFC 1123 subdomain must consist of lower case "
                        "alphanumeric characters, '-' or '.', and must start and end with an "
                        "alphanumeric character (e.g. 'example.com', regex used for validation "
                        "is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"));
  EXPECT_THAT(ParseError("a..b/c"), HasSubstr("prefix part a lowercase RFC 1123 subdomain"));
  EXPECT_THAT(ParseError("a_b/c"), HasSubstr("prefix part a lowercase RFC 1123 subdomain"));
  EXPECT_EQ(ParseError("a/b/c"),
            std::string("unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a valid "
                        "label key ") +
                kLabelKeyRegexError +
                " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
}

TEST(LabelSelectorTest, ValueRules) {
  const std::string value63 = "v" + std::string(61, '-') + "v";
  EXPECT_EQ(MustParse("x=" + value63).String(), "x=" + value63);
  EXPECT_EQ(ParseError("x=" + value63 + "v"),
            "unable to parse requirement: values[0][x]: Invalid value: \"" + value63 +
                "v\": must be no more than 63 bytes");
  EXPECT_EQ(ParseError("x=-a"),
            std::string("unable to parse requirement: values[0][x]: Invalid value: \"-a\": ") +
                kLabelValueRegexError);
  // Several bad values: every one is reported, indexed in sorted order.
  EXPECT_EQ(ParseError("x in (ok,b_,a.)"),
            std::string("unable to parse requirement: [values[0][x]: Invalid value: \"a.\": ") +
                kLabelValueRegexError +
                ", values[1][x]: Invalid value: \"b_\": " + kLabelValueRegexError + "]");
  // Go's %q quoting of odd bytes.
  EXPECT_THAT(ParseError("x=a\"b"), HasSubstr("Invalid value: \"a\\\"b\""));
  EXPECT_THAT(ParseError("x=a\xff"), HasSubstr("Invalid value: \"a\\xff\""));
  EXPECT_THAT(ParseError("x=\x01"), HasSubstr("Invalid value: \"\\x01\""));
  EXPECT_THAT(ParseError("x=\xc3\xa9"), HasSubstr("Invalid value: \"\xc3\xa9\""));
}

TEST(LabelSelectorTest, SyntaxErrorsNameTheTokenAndWhatWasExpected) {
  EXPECT_EQ(ParseError("x=a b"), "found 'b', expected: ',' or 'end of string'");
  EXPECT_EQ(ParseError("x y"),
            "unable to parse requirement: found 'y', expected: in, notin, =, ==, !=, gt, lt");
  EXPECT_EQ(ParseError("x in"), "unable to parse requirement: found '' expected: '('");
  EXPECT_EQ(ParseError("x in a"), "unable to parse requirement: found 'a' expected: '('");
  EXPECT_EQ(ParseError("x in (="),
            "unable to parse requirement: found '=', expected: ',', ')' or identifier");
  EXPECT_EQ(ParseError("x in (a b)"),
            "unable to parse requirement: found 'b', expected: ',' or ')'");
  EXPECT_EQ(ParseError("x in (a,="),
            "unable to parse requirement: found '=', expected: ',', or identifier");
  EXPECT_EQ(ParseError("x in (a"), "unable to parse requirement: found '', expected: ',' or ')'");
  EXPECT_EQ(ParseError("x=("), "unable to parse requirement: found '(', expected: identifier");
  EXPECT_EQ(ParseError("x,"), "found '', expected: identifier after ','");
  EXPECT_EQ(ParseError("x,=a"), "found '=', expected: identifier after ','");
  EXPECT_EQ(ParseError("=a"), "found '=', expected: !, identifier, or 'end of string'");
  EXPECT_EQ(ParseError("!"), "unable to parse requirement: found '', expected: identifier");
  EXPECT_EQ(ParseError("!=a"), "found '!=', expected: !, identifier, or 'end of string'");
  EXPECT_EQ(ParseError("!x=a"), "found '=', expected: ',' or 'end of string'");
  EXPECT_EQ(ParseError("!x in (a)"), "found 'in', expected: ',' or 'end of string'");
  EXPECT_EQ(ParseError("x===a"), "unable to parse requirement: found '=', expected: identifier");
  EXPECT_EQ(ParseError("x<a"),
            "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' "
            "operators, the value must be an integer");
  EXPECT_EQ(ParseError("x>"),
            "unable to parse requirement: values[0]: Invalid value: \"\": for 'Gt', 'Lt' "
            "operators, the value must be an integer");
}

TEST(LabelSelectorTest, ParseErrorsAreCounted) {
  const uint64_t before = LabelSelector::ParseErrorCount();
  EXPECT_FALSE(LabelSelector::Parse("x in (").ok());
  EXPECT_FALSE(LabelSelector::Parse("-x").ok());
  EXPECT_TRUE(LabelSelector::Parse("x").ok());
  EXPECT_EQ(LabelSelector::ParseErrorCount() - before, 2u);
}

TEST(LabelSelectorTest, NulByteBetweenTokensEndsTheInputAsUpstream) {
  EXPECT_EQ(MustParse(std::string("a \0b c d", 8)).String(), "a");
  // Inside a word the NUL also ends the word, and the rest is lexed on.
  EXPECT_EQ(ParseError(std::string("a\0b", 3)),
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt");
}

TEST(LabelSelectorTest, RequiresExactMatchReportsSingleValuedEqualityOnly) {
  LabelSelector s = MustParse("app=web,tier in (db),zone in (a,b),env!=prod,x");
  EXPECT_EQ(s.RequiresExactMatch("app"), "web");
  EXPECT_EQ(s.RequiresExactMatch("tier"), "db");
  EXPECT_EQ(s.RequiresExactMatch("zone"), std::nullopt);
  EXPECT_EQ(s.RequiresExactMatch("env"), std::nullopt);
  EXPECT_EQ(s.RequiresExactMatch("x"), std::nullopt);
  EXPECT_EQ(s.RequiresExactMatch("missing"), std::nullopt);
}

TEST(LabelSelectorTest, EqualKeysKeepTheirOrderInTheCanonicalText) {
  EXPECT_EQ(MustParse("b,a!=x,b=1,a").String(), "a!=x,a,b,b=1");
  EXPECT_EQ(MustParse("a!=x,a,b,b=1").String(), "a!=x,a,b,b=1");
}

TEST(LabelRequirementTest, CreateChecksValueCountsLikeNewRequirement) {
  auto err = [](const absl::StatusOr<LabelRequirement>& r) {
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : std::string(r.status().message());
  };
  EXPECT_EQ(err(LabelRequirement::Create("x", LabelOperator::kIn, {})),
            "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty");
  EXPECT_EQ(err(LabelRequirement::Create("x", LabelOperator::kEquals, {"a", "b"})),
            "values: Invalid value: [\"a\",\"b\"]: exact-match compatibility requires one single "
            "value");
  EXPECT_EQ(err(LabelRequirement::Create("x", LabelOperator::kExists, {"a"})),
            "values: Invalid value: [\"a\"]: values set must be empty for exists and does not "
            "exist");
  EXPECT_EQ(err(LabelRequirement::Create("x", LabelOperator::kGreaterThan, {})),
            "values: Invalid value: []: for 'Gt', 'Lt' operators, exactly one value is required");
  EXPECT_THAT(err(LabelRequirement::Create("-x", LabelOperator::kExists, {})),
              HasSubstr("key: Invalid value: \"-x\": name part must consist of"));

  absl::StatusOr<LabelRequirement> r =
      LabelRequirement::Create("x", LabelOperator::kNotIn, {"c", "a", "c", ""});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->values(), ::testing::ElementsAre("", "a", "c"));
  EXPECT_EQ(r->String(), "x notin (,a,c)");
  EXPECT_EQ(LabelOperatorName(r->op()), "notin");
}

TEST(LabelSelectorTest, FromRequirementsSortsByKey) {
  std::vector<LabelRequirement> reqs;
  reqs.push_back(*LabelRequirement::Create("b", LabelOperator::kExists, {}));
  reqs.push_back(*LabelRequirement::Create("a", LabelOperator::kEquals, {"1"}));
  LabelSelector s = LabelSelector::FromRequirements(std::move(reqs));
  EXPECT_EQ(s.String(), "a=1,b");
  EXPECT_EQ(s, MustParse("b,a=1"));
}

TEST(LabelSelectorTest, MatchesAnyMapTypeAndALookupFunction) {
  LabelSelector s = MustParse("app=web,!canary");
  std::unordered_map<std::string, std::string> unordered = {{"app", "web"}};
  EXPECT_TRUE(s.Matches(unordered));
  std::map<std::string, std::string, std::less<>> transparent = {{"app", "web"}, {"canary", ""}};
  EXPECT_FALSE(s.Matches(transparent));
  int lookups = 0;
  EXPECT_TRUE(s.Matches([&](const std::string& key) -> std::optional<std::string_view> {
    ++lookups;
    if (key == "app") return "web";
    return std::nullopt;
  }));
  EXPECT_EQ(lookups, 2);
}

TEST(LabelSelectorTest, MatchingDoesNotAllocate) {
  LabelSelector s = MustParse(
      "app in (api,web,worker),tier notin (db),env!=prod,team=a,!canary,version>2,shard<100,zone");
  const Labels labels = {{"app", "web"},    {"tier", "front"}, {"env", "staging"}, {"team", "a"},
                         {"version", "10"}, {"shard", "7"},    {"zone", "west-1"}, {"extra", "x"}};
  bool matched = false;
  int allocations = 0;
  {
    const ::kubestat::testing::CountedAllocations counted;
    for (int i = 0; i < 100; ++i) matched = s.Matches(labels);
    allocations = counted.count();
  }
  EXPECT_TRUE(matched);
  EXPECT_EQ(allocations, 0);
}

// Random selectors from the grammar: the canonical text is a fixed point and matching is
// unchanged by the round trip.
TEST(LabelSelectorTest, RandomSelectorsRoundTripThroughCanonicalText) {
  std::mt19937 rng(20261121);
  auto pick = [&](size_t n) -> size_t { return rng() % n; };
  const std::vector<std::string> keys = {"a", "app", "k8s.io/name", "x-y", "in", "notin", "Z9"};
  const std::vector<std::string> values = {"", "a", "web", "in", "notin", "1", "42", "x.y_z"};
  const std::vector<std::string> spaces = {"", " ", "\t", "  ", "\n"};
  for (int round = 0; round < 500; ++round) {
    std::string text;
    const size_t n = pick(5);
    for (size_t i = 0; i < n; ++i) {
      if (i > 0) text += spaces[pick(5)] + "," + spaces[pick(5)];
      const std::string& key = keys[pick(keys.size())];
      switch (pick(8)) {
        case 0:
          text += key;
          break;
        case 1:
          text += "!" + spaces[pick(5)] + key;
          break;
        case 2:
          text += key + spaces[pick(5)] + "=" + values[pick(values.size())];
          break;
        case 3:
          text += key + "==" + spaces[pick(5)] + values[pick(values.size())];
          break;
        case 4:
          text += key + "!=" + values[pick(values.size())];
          break;
        case 5:
        case 6: {
          text += key + " " + (pick(2) ? "in" : "notin") + spaces[pick(5)] + "(";
          const size_t m = pick(4);
          for (size_t j = 0; j < m; ++j) {
            if (j > 0) text += ",";
            text += values[pick(values.size())];
          }
          text += ")";
          break;
        }
        default:
          text += key + (pick(2) ? ">" : "<") + std::to_string(pick(200));
      }
    }
    absl::StatusOr<LabelSelector> s = LabelSelector::Parse(text);
    ASSERT_TRUE(s.ok()) << text << ": " << s.status();
    const std::string canonical = s->String();
    absl::StatusOr<LabelSelector> again = LabelSelector::Parse(canonical);
    ASSERT_TRUE(again.ok()) << canonical << ": " << again.status();
    EXPECT_EQ(again->String(), canonical) << text;
    EXPECT_EQ(*again, *s) << text;
    Labels labels;
    for (const std::string& key : keys) {
      if (pick(2)) labels[key] = values[pick(values.size())];
    }
    EXPECT_EQ(again->Matches(labels), s->Matches(labels)) << text;
  }
}

}  // namespace
}  // namespace kubestat
